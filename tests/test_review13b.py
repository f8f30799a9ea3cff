"""A review of the thirteenth session's late facts (executed under torch 2.13): an identity or ``data_ptr()`` test
proves a copy only for a conditional copy of the compared name itself that returns its receiver when it copies
nothing (not ``reshape``, not a view's ``contiguous``, not another name); a parameter built frozen positionally or
by a flag is no evidence of grad; forward-mode transforms save nothing for backward; ``tensor: Tensor = None``
may be ``None``."""
from __future__ import annotations

import textwrap

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load as _load

torch = pytest.importorskip("torch")

ALIASED = """
import torch


def f(x, c):
    b = x.exp()
    COPY
    if TEST:
        a.mul_(2)
    return b
"""


@pytest.mark.parametrize("copy, test", [
    ("a = b.reshape(-1)", "a is not b"),
    ("a = b[1:].contiguous()", "a.data_ptr() != b.data_ptr()"),
    ("a = b.float()", "a is not c"),
])
def test_an_identity_test_that_does_not_prove_a_copy(copy, test):
    src = textwrap.dedent(ALIASED).replace("COPY", copy).replace("TEST", test)
    line = next(n for n, text in enumerate(src.splitlines(), 1) if "a.mul_(2)" in text)
    assert [(f.code, f.line) for f in analyze_source(src)] == [("IPV006", line)]
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _load(src)["f"](x, torch.zeros(3)).sum().backward()


def test_a_copy_of_the_name_compared_itself_is_proven():
    src = textwrap.dedent(ALIASED).replace("COPY", "a = b.double()").replace("TEST", "a is not b")
    assert analyze_source(src) == []
    _load(src)["f"](torch.ones(3, requires_grad=True), torch.zeros(3)).sum().backward()


@pytest.mark.parametrize("build", ["nn.Parameter(torch.ones(3), False)",
                                   "nn.Parameter(torch.ones(3), requires_grad=trainable)"])
def test_a_parameter_built_frozen_is_no_evidence(build):
    src = textwrap.dedent("""
    import torch
    from torch import nn


    class M(nn.Module):
        def __init__(self, trainable: bool = False):
            super().__init__()
            self.p = BUILD

        def forward(self, x):
            p = self.p
            y = p.exp()
            y.mul_(2)
            return (y * x).sum()
    """).replace("BUILD", build)
    assert analyze_source(src) == []
    _load(src)["M"]()(torch.ones(3, requires_grad=True)).backward()


def test_forward_mode_transforms_save_nothing_for_backward():
    src = textwrap.dedent("""
    import torch


    def _f(x):
        y = x.exp()
        y.mul_(2)
        return y


    def run(x):
        with torch.no_grad():
            a = _f(x)
        _, t = torch.func.jvp(_f, (x,), (torch.ones_like(x),))
        return a, t
    """)
    assert analyze_source(src) == []
    a, t = _load(src)["run"](torch.ones(3))
    assert torch.equal(a, t)


def test_a_tensor_parameter_defaulting_to_none_may_be_none():
    src = textwrap.dedent("""
    import torch


    def scale(x, tensor: torch.Tensor = None, out=None):
        y = x.exp()
        if out is tensor:
            y.mul_(2)
        return y


    def main(x):
        return scale(x).sum()
    """)
    [finding] = analyze_source(src)
    assert (finding.code, finding.line) == ("IPV006", 8)
    assert "out is not None" not in finding.message
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _load(src)["main"](torch.ones(3, requires_grad=True)).backward()
