"""Facts from set AN (twelfth session), each executed under torch 2.13: the left operand of a chained product
(``2 * x * cheb[k - 1]``) requires grad when what it was made from does, so the row it saves makes a later write
to its buffer raise at backward; and a callable that ``__init__`` built with another library's factory and that
is called with no input (``alpha = self.alpha()``, a sampler) is no evidence of grad."""
from __future__ import annotations

import textwrap

import pytest

from inplace_lint.analysis import analyze_source

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


def _load(src: str) -> dict:
    namespace: dict = {}
    exec(compile(src, "<case>", "exec"), namespace)
    return namespace


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
