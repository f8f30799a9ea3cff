"""The temperature idiom becomes a call of ``scale_logits`` in the runtime style (issue 21 item 4).

``fixtures/scale/verl080_engine.py`` is our small extract of verl 0.8.0's FSDP engine (both seed sites,
and the one caller that makes the fix safe). A plain ``fix --style runtime`` of it, as a project, rewrites
both sites to ``scale_logits(..., inplace="auto")``; the rewritten code gives the original's values, dtype
and gradients on a plain head (bit for bit, fp32 and bf16, and stays in place: no logits-sized copy) and
runs where the original raises (a custom-Function head). Forms that ``scale_logits`` would not reproduce
keep today's ``out_of_place``; the inline style keeps plain torch.
"""
from __future__ import annotations

import importlib.util
import pathlib
import shutil
import textwrap

import pytest

from inplace_lint.adapters.cli import main
from inplace_lint.fixing import fix_code

FIXTURE = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "scale" / "verl080_engine.py"
RMPAD = "            logits_rmpad.div_(temperature_rmpad.clamp(min=1e-8).unsqueeze(-1).to(logits_rmpad.dtype))\n"
PADDED = "            logits.div_(temperature.clamp(min=1e-8).to(logits.dtype))\n"
RMPAD_FIXED = ('            logits_rmpad = scale_logits(logits_rmpad, temperature_rmpad.unsqueeze(-1), eps=1e-8, '
               'broadcast="trailing", inplace="auto")\n')
PADDED_FIXED = ('            logits = scale_logits(logits, temperature, eps=1e-8, broadcast="trailing", '
                'inplace="auto")\n')


def _fork(tmp_path: pathlib.Path) -> pathlib.Path:
    """The extract inside a project (as in a fork: the caller is found across the project)."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "fork"\ndependencies = ["torch==2.4.0"]\n')
    package = tmp_path / "fork"
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copy(FIXTURE, package / "fsdp_engine.py")
    return package / "fsdp_engine.py"


@pytest.fixture(scope="module")
def rewritten(tmp_path_factory):
    path = _fork(tmp_path_factory.mktemp("fork"))
    assert main(["fix", "-q", "-j", "1", "--no-cache", "--style", "runtime", str(path)]) == 0
    text = path.read_text()
    assert main(["fix", "-q", "-j", "1", "--no-cache", "--style", "runtime", str(path)]) == 0
    assert path.read_text() == text  # a second run changes nothing
    return path


def test_plain_fix_rewrites_both_seed_sites(rewritten):
    original = FIXTURE.read_text()
    assert RMPAD in original and PADDED in original
    expected = original.replace(RMPAD, RMPAD_FIXED).replace(PADDED, PADDED_FIXED).replace(
        "import torch\n", "import torch\nfrom inplace_lint.runtime import scale_logits\n", 1)
    assert rewritten.read_text() == expected


# --------------------------------------------------------------------------- under torch

torch = pytest.importorskip("torch")
from tests.torch_models import CF_MSG, ViewFn  # noqa: E402

V, H = 11, 6


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Head(torch.nn.Module):
    def __init__(self, dtype, custom):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.lm_head = torch.nn.Linear(H, V, bias=False, dtype=dtype)
        with torch.no_grad():
            self.lm_head.weight.copy_(torch.randn(V, H, generator=g))
        self.custom = custom

    def forward(self, h):
        logits = self.lm_head(h)
        return type("Out", (), {"logits": ViewFn.apply(logits) if self.custom else logits})


def _inputs(rmpad, dtype):
    g = torch.Generator().manual_seed(1)
    if rmpad:  # (1, total_nnz, H), a per-token temperature with a padding row at 0
        h, t = torch.randn(1, 5, H, generator=g), torch.tensor([0.5, 0.0, 1.5, 2.0, 0.7])
    else:  # (B, S, H), a per-sample temperature
        h, t = torch.randn(2, 3, H, generator=g), torch.tensor([0.6, 1.3])
    labels = torch.randint(0, V, h.shape[1:2] if rmpad else h.shape[:2], generator=g)
    return h.to(dtype), t, labels


def _step(module, rmpad, dtype, custom):
    head = Head(dtype, custom)
    engine = module.FSDPEngine(head)
    h, t, labels = _inputs(rmpad, dtype)
    h = h.requires_grad_()
    out = engine.forward_step(h, t, labels, use_remove_padding=rmpad)
    weights = torch.linspace(-1, 1, out["logits"].numel()).reshape(out["logits"].shape).to(dtype)
    (out["log_probs"].sum() + (out["logits"] * weights).sum()).backward()
    return out, h.grad, head.lm_head.weight.grad


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("rmpad", [True, False])
def test_same_values_dtype_and_gradients_on_a_plain_head(rewritten, rmpad, dtype):
    original = _load(FIXTURE, "verl080_original")
    fixed = _load(rewritten, "verl080_fixed")
    got, ref = _step(fixed, rmpad, dtype, custom=False), _step(original, rmpad, dtype, custom=False)
    for g, r in [(got[0]["logits"], ref[0]["logits"]), (got[0]["log_probs"], ref[0]["log_probs"]),
                 (got[1], ref[1]), (got[2], ref[2])]:
        assert g.dtype == r.dtype
        torch.testing.assert_close(g, r, rtol=0, atol=0)
    assert got[0]["logits"].dtype == dtype


@pytest.mark.parametrize("rmpad", [True, False])
def test_plain_head_stays_in_place(rewritten, rmpad):
    """``inplace="auto"``: nothing else reads the logits (the fix is safe) and autograd allows it, so the
    division writes the model's logits as the original did: no logits-sized copy."""
    fixed = _load(rewritten, "verl080_fixed_inplace")
    seen = {}

    class Spy(Head):
        def forward(self, h):
            out = super().forward(h)
            seen["logits"] = out.logits
            return out

    engine = fixed.FSDPEngine(Spy(torch.float32, custom=False))
    h, t, labels = _inputs(rmpad, torch.float32)
    out = engine.forward_step(h.requires_grad_(), t, labels, use_remove_padding=rmpad)
    assert out["logits"].untyped_storage().data_ptr() == seen["logits"].untyped_storage().data_ptr()


@pytest.mark.parametrize("rmpad", [True, False])
def test_no_error_on_a_custom_function_head(rewritten, rmpad):
    original = _load(FIXTURE, "verl080_original_cf")
    fixed = _load(rewritten, "verl080_fixed_cf")
    with pytest.raises(RuntimeError, match=CF_MSG):
        _step(original, rmpad, torch.float32, custom=True)
    got = _step(fixed, rmpad, torch.float32, custom=True)
    ref = _step(original, rmpad, torch.float32, custom=False)  # the same values where the original runs
    for g, r in [(got[0]["logits"], ref[0]["logits"]), (got[1], ref[1]), (got[2], ref[2])]:
        torch.testing.assert_close(g, r, rtol=0, atol=0)


def test_inline_style_keeps_plain_torch(tmp_path):
    path = _fork(tmp_path)
    assert main(["fix", "-q", "-j", "1", "--no-cache", str(path)]) == 0
    text = path.read_text()
    assert "inplace_lint" not in text and "scale_logits(" not in text
    assert "            logits_rmpad = logits_rmpad.clone().div_(_logits_rmpad_operand)\n" in text
    fixed = _load(path, "verl080_inline")
    got = _step(fixed, True, torch.float32, custom=True)
    ref = _step(_load(FIXTURE, "verl080_ref"), True, torch.float32, custom=False)
    torch.testing.assert_close(got[0]["logits"], ref[0]["logits"], rtol=0, atol=0)


# --------------------------------------------------------------------------- which forms


def _runtime(body, params="model, h, t"):
    src = f"def f({params}):\n    x = model(h).logits.squeeze(0)\n{textwrap.indent(body, '    ')}    return x\n"
    new = fix_code(src, "m.py", style="runtime", unsafe_fixes=True).new_source
    return new.split("x = model(h).logits.squeeze(0)\n", 1)[1].rsplit("    return x\n", 1)[0]


@pytest.mark.parametrize("body, expected", [
    # the seed chain, the clamp anywhere among the shape ops, clamp_min, a positional bound
    ("x.div_(t.clamp(min=1e-8).unsqueeze(-1).to(x.dtype))\n",
     'x = scale_logits(x, t.unsqueeze(-1), eps=1e-8, broadcast="trailing", inplace="auto")\n'),
    ("x.div_(t.unsqueeze(-1).clamp_min(1e-6).to(x.dtype))\n",
     'x = scale_logits(x, t.unsqueeze(-1), eps=1e-6, broadcast="trailing", inplace="auto")\n'),
    ("x /= t.view(-1, 1).clamp(1e-8).to(x.dtype)\n",
     'x = scale_logits(x, t.view(-1, 1), eps=1e-8, broadcast="trailing", inplace="auto")\n'),
    # the divisor cast, no clamp: eps=None
    ("x.div_(t.to(x.dtype))\n", 'x = scale_logits(x, t, eps=None, broadcast="trailing", inplace="auto")\n'),
    # a Python number: a literal, no broadcast to keep
    ("x /= 0.7\n", 'x = scale_logits(x, 0.7, inplace="auto")\n'),
    # not the idiom (scale_logits would not give the same values or dtype): today's form
    ("x.div_(t)\n", 'x = out_of_place(x, "div_", t)\n'),  # unknown dtype: no cast to the logits dtype
    ("x.mul_(1 / t)\n", 'x = out_of_place(x, "mul_", 1 / t)\n'),  # x * (1/t) rounds differently
    ("x.div_(t.clamp(min=1e-8, max=5.0).to(x.dtype))\n",
     'x = out_of_place(x, "div_", t.clamp(min=1e-8, max=5.0).to(x.dtype))\n'),
    ("x.div_(t.clamp(min=1e-8).to(torch.float16))\n",
     'x = out_of_place(x, "div_", t.clamp(min=1e-8).to(torch.float16))\n'),
    ("x.div_(x.sum(-1, keepdim=True).to(x.dtype))\n",
     'x = out_of_place(x, "div_", x.sum(-1, keepdim=True).to(x.dtype))\n'),
    ("x.div_(t.to(x.dtype), rounding_mode='floor')\n",
     "x = out_of_place(x, \"div_\", t.to(x.dtype), rounding_mode='floor')\n"),
])
def test_which_writes_become_scale_logits(body, expected):
    assert _runtime(body) == "    " + expected


def test_a_number_parameter_and_an_unsafe_fix():
    assert _runtime("x /= t\n", "model, h, t: float") == '    x = scale_logits(x, t, eps=None, inplace="auto")\n'
    assert _runtime("x /= t\n", "model, h, t") == '    x = out_of_place(x, "div_", t)\n'  # t may be a tensor
    # unsafe (the caller sees output.logits): out of place, no inplace="auto"
    src = "def f(output, t):\n    x = output.logits.squeeze(0)\n    x.div_(t.clamp(min=1e-8).to(x.dtype))\n    return x\n"
    new = fix_code(src, "m.py", style="runtime", unsafe_fixes=True).new_source
    assert '    x = scale_logits(x, t, eps=1e-8, broadcast="trailing")\n' in new


@pytest.mark.parametrize("temperature, logits_shape", [
    (torch.tensor([0.5, 0.0, 2.0]), (3, 4)),  # per-token (N,), unsqueezed
    (torch.tensor([[0.5], [2.0]]), (2, 3, 4)),  # (B, 1): trailing broadcast is per position, not per row
])
def test_trailing_broadcast_is_the_in_place_division(temperature, logits_shape):
    from inplace_lint.runtime import scale_logits

    logits = torch.randn(*logits_shape)
    t = temperature.unsqueeze(-1)
    try:
        expected = logits.clone().div_(t.clamp(min=1e-8).to(logits.dtype))
    except RuntimeError:
        with pytest.raises(RuntimeError):
            scale_logits(logits, t, eps=1e-8, broadcast="trailing")
    else:
        torch.testing.assert_close(scale_logits(logits, t, eps=1e-8, broadcast="trailing"), expected, rtol=0, atol=0)


def test_trailing_broadcast_raises_where_the_division_raises():
    from inplace_lint.runtime import scale_logits

    logits, t = torch.randn(1, 6), torch.ones(3, 1, 6)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        logits.clone().div_(t)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        scale_logits(logits, t, eps=None, broadcast="trailing")
    with pytest.raises(TypeError, match="takes a tensor temperature"):
        scale_logits(logits, 2.0, broadcast="trailing")
    with pytest.raises(RuntimeError):  # int logits: the in-place division raises, and so does scale_logits
        scale_logits(torch.arange(6).reshape(1, 6), 2)
