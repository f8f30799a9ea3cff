"""An adversarial review of the fourteenth session's facts (/work/notes/rev14.md), executed under torch 2.13.

- A parameter read only through something that takes no gradient (``argmax``, a comparison, ``.item()``,
  ``float(...)``, ``.detach()``) makes no guess: a saved output of it never needs grad.
- ``fn(x)`` of a callable parameter is a guess about the callable, decided by what the callers pass for it.
- ``s = x.shape`` before a loop that binds ``x`` again makes ``x.expand([1, s[0]])`` inside it an expand of another
  tensor on the next pass, which can repeat elements.
- The parameters named in a torch-made local's saved-input message are all of them, in order.
"""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

GRADLESS = """import torch
from torch import nn


def by_index(table, logits):
    w = table[logits.argmax(-1)].exp()
    w *= 2
    return w


def by_mask(table, logits):
    w = (table * (logits > 0).float()).sigmoid()
    w += 1
    return w


def by_number(table, logits):
    w = torch.sqrt(table * float(logits.mean()))
    w /= 2
    return w


def by_detached(table, logits):
    w = (table + logits.detach()).exp()
    w -= 1
    return w


def through(fn, x):
    y = fn(x).exp()
    y *= 2
    return y


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        logits = self.lin(x)
        table = torch.rand(3)
        return (by_index(table, logits), by_mask(table, logits), by_number(table, logits),
                by_detached(table, logits), through(lambda t: t.detach(), logits))
"""


def test_a_parameter_read_only_without_gradient_makes_no_guess():
    assert analyze_source(GRADLESS) == []
    out = load(GRADLESS)["Head"]()(torch.randn(4, 3))
    assert [t.requires_grad for t in out] == [False] * 5


LOOP = """import torch


def grow(x, n):
    s = x.shape
    for _ in range(n):
        y = x.expand([1, s[0]])
        y += 1
        x = torch.zeros(1)
    return x
"""


def test_a_shape_taken_before_a_loop_that_binds_the_tensor_again_is_not_its_shape():
    assert [(f.code, f.line) for f in analyze_source(LOOP)] == [("IPV004", 8)]
    with pytest.raises(RuntimeError, match="single memory location"):
        load(LOOP)["grow"](torch.zeros(3), 2)


WEIGHTED = """import torch
import torch.nn.functional as F


def slices(x, w):
    h = torch.add(F.unfold(x, 2).transpose(1, 2), w)
    s = h.var(-1)
    h -= 1
    return s
"""


def test_the_message_names_every_parameter_the_local_was_made_from():
    findings = analyze_source(WEIGHTED)
    assert [(f.code, f.line) for f in findings] == [("IPV006", 8)]
    assert "(it does when `x` or `w` requires grad)" in findings[0].message
    w = torch.ones(4, requires_grad=True)
    s = load(WEIGHTED)["slices"](torch.randn(1, 1, 3, 3), w)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        s.sum().backward()


VARIANTS = """import torch


def by_name(x, pos):
    n = x.shape[0]
    y = x.expand(1, n)
    y += pos
    return y


def starred(x, pos):
    s = x.shape
    y = x.expand(1, *s)
    y += pos
    return y


def from_the_end(x, pos):
    s = x.shape
    y = x.expand(1, 1, s[-2], s[-1])
    y += pos
    return y


def kept(x, pos):
    y = x.expand(1, -1)
    y += pos
    return y


def repeated(x, pos, n):
    s = x.shape
    y = x.expand(n, *s)
    y += pos
    return y
"""


def test_expands_that_add_only_unit_dimensions_in_other_spellings_are_plain_views():
    assert [(f.code, f.line) for f in analyze_source(VARIANTS)] == [("IPV004", 34)]
    module = load(VARIANTS)
    for name, x in (("by_name", torch.zeros(3)), ("starred", torch.zeros(2, 3)), ("from_the_end", torch.zeros(2, 3)),
                    ("kept", torch.zeros(3))):
        out = module[name](x, 1.0)
        assert out.sum().item() == x.numel() and x.sum().item() == x.numel()  # the write reached `x`, legally
    with pytest.raises(RuntimeError, match="single memory location"):
        module["repeated"](torch.zeros(3), 1.0, 2)
