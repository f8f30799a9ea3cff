"""A review of the sixteenth session's facts (/work/notes/rev16.md; cases in /work/pkgs/REV16): each fact held where
it should not. A name rebound after the floating-point test, a generator's early `return`, an op whose result
is an index, a cast to a dtype not known here, a local made under `torch.no_grad()`, and an element of a module
list changed after it was built. Each case executed under torch 2.13: the hazards raise, the rest run."""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

MISSES = """import torch
from torch import nn


def clipped(t, w):
    if not t.is_floating_point():
        t = torch.tanh(t.float() * w)
        t.clamp_(-0.5, 0.5)
        return t
    return t * w


def pieces(h, n):
    if n <= 0:
        return
    for i in range(n):
        yield h * (i + 1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, h):
        total = torch.exp(next(pieces(self.fc(h), 2)))
        total /= 2.0
        return total.sum()
"""


def test_a_name_rebound_after_the_test_and_a_generator_keep_their_findings():
    assert [(f.code, f.line) for f in analyze_source(MISSES)] == [("IPV006", 8), ("IPV006", 27)]
    mod = load(MISSES)
    weights = torch.ones(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        mod["clipped"](torch.arange(4), weights).sum().backward()  # `t` holds the saved tanh output there
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        mod["Net"]()(torch.randn(2, 4)).backward()


NOT_COMPUTED = """import torch
from torch import nn


def bins(x, edges):
    return torch.bucketize(x, edges) + 1


def cast_like(x, ref):
    return (x * 4).round().to(ref.dtype)


def centered(x, t):
    with torch.no_grad():
        z = x / t
    return z - z.mean()


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, edges, ref):
        binned = bins(self.fc(x), edges)
        a = torch.exp(binned.float())
        a /= a.sum()
        cast = cast_like(self.fc(x), ref)
        b = torch.exp(cast.float())
        b /= b.sum()
        shifted = centered(self.fc(x), 2.0)
        c = torch.exp(shifted)
        c /= c.sum()
        return a, b, c
"""


def test_an_index_a_cast_to_an_unknown_dtype_and_a_local_made_with_grad_off_are_no_computed_return():
    assert analyze_source(NOT_COMPUTED) == []
    a, b, c = load(NOT_COMPUTED)["Head"]()(torch.randn(3, 4), torch.tensor([-1.0, 0.0, 1.0]), torch.arange(3))
    assert not (a.requires_grad or b.requires_grad or c.requires_grad)  # no backward reaches the writes


CHANGED_ELEMENTS = """import torch
from torch import nn


class Deleted(nn.Module):
    def __init__(self, c, n):
        super().__init__()
        self.ups = nn.ModuleList([nn.Sequential(nn.Conv2d(c, c, 1), nn.ReLU()) for _ in range(n)])
        del self.ups[-1][-1]

    def forward(self, x, skip):
        for up in self.ups:
            x = up(x)
        x *= skip
        return x


class Appended(nn.Module):
    def __init__(self, c, n):
        super().__init__()
        self.ups = nn.ModuleList([nn.Sequential(nn.Conv2d(c, c, 1), nn.ReLU()) for _ in range(n)])
        self.ups[-1].append(nn.Conv2d(c, c, 1))

    def forward(self, x, skip):
        for up in self.ups:
            x = up(x)
        x *= skip
        return x
"""


def test_a_module_list_whose_elements_are_changed_after_they_are_built_is_no_stack():
    assert analyze_source(CHANGED_ELEMENTS) == []
    mod = load(CHANGED_ELEMENTS)
    for name in ("Deleted", "Appended"):
        model = mod[name](3, 2)
        model(torch.randn(1, 3, 2, 2), torch.randn(1, 3, 2, 2)).sum().backward()  # the last layer is a conv: legal
        assert model.ups[0][0].weight.grad is not None
