"""Issue 20: the facts behind the rules, as the messages and fixes state them (the detection fixtures
check code, line and column; these check what a finding says and whether it offers a fix)."""
import pathlib

from inplace_lint.config import DEFAULT_SETTINGS
from inplace_lint.pipeline import check_file

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "detect"


def _findings(relative):
    result = check_file(str(FIXTURES / relative), DEFAULT_SETTINGS, [], [])
    assert result.error is None
    return {f.line: f for f in result.findings}


def test_saved_input_message_names_the_op_and_its_line():
    found = _findings("IPV006/saved_by_derivatives.py")
    assert found[15].message == (
        "`/=` writes in place to `h` (`model(ids).last_hidden_state * 2`), which `torch.linalg.norm` (line 15) "
        "saved for backward as its input: the backward raises")
    assert found[29].message.startswith("`mul_` writes in place to `h` (`model(ids).logits * 1.0`), which "
                                        "`F.normalize` (line 28) saved for backward")
    # through a helper: the caller's tensor decides, and the message names the call
    assert found[42].message.endswith("which `x.norm` (line 42) saved for backward as its input: the backward "
                                      "raises, passed by the call at line 47")
    assert found[9].message == ("`clamp_` writes in place to `d`, `torch.cdist(h, centers)`, whose output "
                                "autograd saves for backward")


def test_saved_output_written_under_no_grad_is_reported_without_a_fix():
    found = _findings("IPV006/saved_by_derivatives.py")
    assert found[37].code == "IPV006" and found[37].fix is None
    assert found[9].fix is not None  # with grad on, the out-of-place form is the fix


def test_may_path_finding_names_the_path():
    found = _findings("IPV004/constant_arguments.py")
    assert "fresh tensor `batched_eye(..., copy=False)`" in found[15].message
    assert "fresh tensor `batched_eye(..., copy=False)`" in found[21].message


def test_a_write_through_data_to_a_saved_output_is_reported_without_a_fix_and_corrupts_silently():
    """`.data` has its own version counter: the backward does not raise, it uses the written values."""
    import pytest

    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    found = _findings("IPV006/data_writes.py")
    assert found[18].message.endswith("through `.data` the backward does not raise but silently uses the "
                                      "written values") and found[18].fix is None
    import importlib.util

    spec = importlib.util.spec_from_file_location("data_writes", FIXTURES / "IPV006" / "data_writes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    attn = module.Attn()
    x, mask = torch.randn(2, 4), torch.tensor([[True, False, True, True], [True, True, False, True]])
    weights = torch.randn(2, 4)
    (attn(x, mask) * weights).sum().backward()  # no error
    written = attn.q.weight.grad.clone()
    attn.zero_grad()
    (F.softmax(attn.q(x), dim=-1).masked_fill(~mask, 1e-8) * weights).sum().backward()  # what the values say
    assert not torch.allclose(written, attn.q.weight.grad)


def test_a_chained_assignment_with_a_subscript_target_in_init_is_read_not_crashed_on():
    """`self.bos = self.table["<s>"] = BOS` in `__init__` (a released package's line) once raised
    AttributeError in the walk of `__init__`'s container elements and stopped the whole check."""
    from inplace_lint.analysis import analyze_source

    src = (
        "import torch\nfrom torch import nn\n\n\n"
        "class Enc(nn.Module):\n"
        "    def __init__(self, table):\n"
        "        super().__init__()\n"
        "        self.table = table\n"
        "        self.bos = self.table['<s>'] = 0\n"
        "        self.proj = nn.Linear(4, 4)\n\n"
        "    def forward(self, x):\n"
        "        h = torch.sigmoid(self.proj(x))\n"
        "        h.mul_(2)\n"
        "        return h\n"
    )
    [finding] = analyze_source(src)
    assert (finding.code, finding.line, finding.col) == ("IPV006", 14, 8)
