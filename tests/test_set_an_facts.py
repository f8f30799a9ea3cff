"""Facts from set AN (twelfth session), each executed under torch 2.13: the left operand of a chained product
(``2 * x * cheb[k - 1]``) requires grad when what it was made from does, so the row it saves makes a later write
to its buffer raise at backward; and a callable that ``__init__`` built with another library's factory and that
is called with no input (``alpha = self.alpha()``, a sampler) is no evidence of grad."""
from __future__ import annotations

import textwrap

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load as _load

torch = pytest.importorskip("torch")

CHEBYSHEV = """
import torch
from torch import nn


class Cheb(nn.Module):
    def __init__(self):
        super().__init__()
        self.log_pre_gain = nn.Parameter(torch.zeros(1))

    def forward(self, inp):
        x = inp * self.log_pre_gain.exp()
        cheb = torch.zeros(5, *x.shape)
        cheb[0] = torch.ones_like(x)
        cheb[1] = x
        for k in range(2, 5):
            cheb[k] = 2 * x * cheb[k - 1] - cheb[k - 2]
        return cheb.sum(0)
"""


def test_a_row_saved_by_a_chained_product_makes_the_write_to_its_buffer_a_finding():
    src = textwrap.dedent(CHEBYSHEV)
    [finding] = analyze_source(src)
    assert (finding.code, finding.line, finding.col) == ("IPV006", 17, 12)
    assert "which `2 * x * cheb[k - 1]` (line 17) saved for backward" in finding.message
    model = _load(src)["Cheb"]()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        model(torch.ones(3)).sum().backward()


def test_a_chained_product_of_tensors_needing_no_grad_is_no_finding():
    src = textwrap.dedent(CHEBYSHEV).replace("inp * self.log_pre_gain.exp()", "inp * torch.ones(1).exp()")
    assert analyze_source(src) == []
    _load(src)["Cheb"]()(torch.ones(3)).sum()  # (nothing requires grad: there is no backward to raise)


SAMPLED = """
import torch
from torch import nn
import samplers


class Blender(nn.Module):
    def __init__(self, alpha=0.5):
        super().__init__()
        self.alpha = samplers.Uniform.make(alpha)

    def forward(self, background, mask):
        alpha = self.alpha()
        out = torch.ones(background.shape)
        out[mask] = background[mask] * (1 - alpha) + out[0, 0] * alpha
        return out
"""


def test_a_sampler_built_by_another_library_and_called_with_no_input_is_no_evidence_of_grad():
    assert analyze_source(textwrap.dedent(SAMPLED)) == []


def test_a_project_module_called_with_no_input_still_returns_what_requires_grad():
    src = textwrap.dedent(SAMPLED).replace("import samplers\n", "").replace(
        "self.alpha = samplers.Uniform.make(alpha)", "self.alpha = Gain()").replace(
        "class Blender", "class Gain(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.g = nn.Parameter(torch.full((1,), 0.5))\n\n    def forward(self):\n"
        "        return self.g * 1.0\n\n\nclass Blender")
    found = [(f.code, f.line, f.col) for f in analyze_source(src)]
    assert found == [("IPV006", 23, 8)], found
    blender = _load(src)["Blender"]()
    out = blender(torch.zeros(2, 3), torch.tensor([[True, False, True], [False, True, True]]))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


BEAM = """
import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 6)

    def step(self, h, banned):
        scores = torch.log_softmax(self.head(h), dim=-1)
        for row, token in banned:
            scores[row, token] = -10000.0
        values, indices = torch.topk(scores, k=2)
        return [(indices[i, 0].item(), values[i, 0].item()) for i in range(values.shape[0])]
"""


def test_a_saved_output_read_only_through_an_unpacked_topk_and_item_is_no_finding():
    # (cogdl's beam search: the scores feed `topk`, whose values and indices become Python numbers)
    src = textwrap.dedent(BEAM)
    assert analyze_source(src) == []
    decoder = _load(src)["Decoder"]()
    assert len(decoder.step(torch.ones(2, 4), [(0, 1)])) == 2  # no backward can reach the log_softmax


def test_an_unpacked_topk_value_that_reaches_a_backward_keeps_the_finding():
    src = textwrap.dedent(BEAM).replace(
        "        return [(indices[i, 0].item(), values[i, 0].item()) for i in range(values.shape[0])]\n",
        "        return values.sum()\n")
    found = [(f.code, f.line, f.col) for f in analyze_source(src)]
    assert found == [("IPV006", 14, 12)], found
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _load(src)["Decoder"]().step(torch.ones(2, 4), [(0, 1)]).backward()


EAGER = """
import eagerpy as ep
import torch


def shifted(logits: ep.Tensor, shift):
    logits += shift
    return logits


def run(model, x):
    return shifted(model(x), 1.0)
"""


def test_an_augmented_write_to_another_librarys_tensor_is_no_finding():
    # (foolbox: `logits: ep.Tensor`; an eagerpy tensor defines `__add__` and no `__iadd__`, so `+=` makes a new
    # object and the model's output is never written)
    assert analyze_source(textwrap.dedent(EAGER)) == []
    torch_src = textwrap.dedent(EAGER).replace("logits: ep.Tensor", "logits: torch.Tensor")
    found = [(f.code, f.line, f.col) for f in analyze_source(torch_src)]
    assert found == [("IPV001", 7, 4)], found  # at the write, passed by the call at line 12

    class Wrapped:  # what eagerpy's tensor does with `+=`
        def __init__(self, raw):
            self.raw = raw

        def __add__(self, other):
            return Wrapped(self.raw + other)

    raw = torch.zeros(2)
    original = Wrapped(raw)
    alias = original
    alias += 1.0
    assert alias is not original and torch.equal(original.raw, torch.zeros(2))


SPIKING = """
import torch
from torch import nn


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.weights = nn.Parameter(torch.randn(4, 6))
        self.velocity = nn.Parameter(torch.full((1,), 0.5))

    def forward(self, x):
        gamma = 1 / torch.sqrt(1 - self.velocity ** 2)
        post = torch.matmul(x, (self.weights * gamma).t())
        with torch.no_grad():
            self.weights.add_(torch.ones(4, 6))
        return post
"""


def test_a_parameter_saved_for_another_inputs_gradient_and_then_written_is_a_finding():
    # (torch-relativistic's STDP update, set AO: grad off does not protect what a graph built with grad on saved)
    src = textwrap.dedent(SPIKING)
    found = [(f.code, f.line, f.col) for f in analyze_source(src)]
    assert found == [("IPV006", 16, 12)], found
    assert "`self.weights * gamma` (line 14) saved for backward" in analyze_source(src)[0].message
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _load(src)["Layer"]()(torch.ones(2, 6)).sum().backward()


def test_a_parameter_written_before_the_op_that_saves_it_is_no_finding():
    src = textwrap.dedent(SPIKING).replace(
        "        post = torch.matmul(x, (self.weights * gamma).t())\n        with torch.no_grad():\n"
        "            self.weights.add_(torch.ones(4, 6))\n",
        "        with torch.no_grad():\n            self.weights.add_(torch.ones(4, 6))\n"
        "        post = torch.matmul(x, (self.weights * gamma).t())\n")
    assert analyze_source(src) == []
    _load(src)["Layer"]()(torch.ones(2, 6)).sum().backward()


NO_INPUT = """
import functools

import torch
from torch import nn


class Alpha(nn.Module):
    def __init__(self):
        super().__init__()
        self.log_alpha = nn.Parameter(torch.zeros(3))

    def forward(self):
        return self.log_alpha * 1.0


def make_alpha():
    return Alpha()


class Net(nn.Module):
    def __init__(self, alpha=None, learn=True):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.log_alpha = nn.Parameter(torch.zeros(3))
        self.alpha = {built}

    def forward(self, inp):
        a = self.alpha()
        e = torch.exp(a)
        e.mul_(2)
        return (self.lin(inp) * e).sum()
"""

#: callables that are no other library's factory: each returns a tensor that requires grad (the exp saves its
#: output, and the write makes the backward raise)
NO_INPUT_BUILT = {
    "a lambda": "lambda: self.log_alpha * 1.0",
    "a module handed in": "alpha if alpha is not None else Alpha()",
    "a project factory": "make_alpha()",
    "one of two project modules": "Alpha() if learn else Alpha()",
    "functools.partial of a torch factory": "functools.partial(torch.zeros, 3, requires_grad=True)",
}


@pytest.mark.parametrize("built", list(NO_INPUT_BUILT.values()), ids=list(NO_INPUT_BUILT))
def test_a_callable_that_is_no_other_librarys_factory_called_with_no_input_is_still_evidence(built):
    src = textwrap.dedent(NO_INPUT).replace("{built}", built)
    found = [(f.code, f.line, f.col) for f in analyze_source(src)]
    assert found == [("IPV006", 31, 8)], found
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _load(src)["Net"]()(torch.ones(2, 3)).backward()


def test_a_comparison_in_a_chained_product_requires_no_grad():
    # (`x.ge(0)` is a bool tensor: the product saves the row only for the gradient of what requires grad, and
    # the bool factor does not; a review's false finding, executed)
    src = textwrap.dedent(CHEBYSHEV).replace("2 * x * cheb[k - 1]", "2 * x.ge(0) * cheb[k - 1]")
    assert analyze_source(src) == []
    _load(src)["Cheb"]()(torch.ones(3)).sum().backward()


def test_tensor_re_exported_by_a_project_module_is_torchs(tmp_path, capsys):
    # (`from .types import Tensor`: a project name, not another library's tensor; a review's lost finding)
    from inplace_lint import workspace
    from inplace_lint.adapters.cli import main

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "types.py").write_text("from torch import Tensor\n")
    (tmp_path / "pkg" / "m.py").write_text(textwrap.dedent(EAGER).replace("import eagerpy as ep\n", "").replace(
        "logits: ep.Tensor", "logits: Tensor").replace("import torch\n", "import torch\n\nfrom .types import Tensor\n"))
    workspace._PROJECTS.clear()
    main(["check", "--no-cache", "-j", "1", str(tmp_path)])
    out = capsys.readouterr().out
    assert "m.py:8:5: IPV001 `+=` writes in place to `logits`" in out, out


def test_a_shape_change_of_a_model_output_written_in_place_is_a_finding():
    # (tsai's TweedieLoss, set AQ: `inp.flatten()` of the model's output, then `torch.clamp_min_`: with a head whose
    # last op saves its output, the backward raises; `.to(device)` of an output object stays unfollowed)
    src = textwrap.dedent("""
        import torch


        def loss(model, x):
            y = model(x).{shape}
            y.clamp_min_(0.1)
            return y.sum()
        """)
    for shape in ("flatten()", "reshape(-1)", "contiguous()"):
        found = [(f.code, f.line, f.col) for f in analyze_source(src.replace("{shape}", shape))]
        assert found == [("IPV001", 7, 4)], (shape, found)
    assert analyze_source(src.replace("{shape}", "to('cpu')")) == []

    class Head(torch.nn.Module):
        def forward(self, x):
            return torch.exp(x)

    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _load(src.replace("{shape}", "flatten()"))["loss"](Head(), torch.ones(2, 2, requires_grad=True)).backward()
