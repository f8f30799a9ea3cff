"""A test of ``self.<attr>`` that holds one immutable value all through a method (:func:`inplace_lint.analysis.
local_conds.steady_attributes`): two tests of it in one loop pick the same arm on every pass, so what one arm
binds on one pass never meets a write in the other arm on the next (set BJ's false finding, buctoolkit's
Lanczos loop with ``if not self._hold_samples:`` twice). The attribute decides nothing when the method may change
it: it assigns it, calls a method that does, or the class gives it a mutable value (a list's truth changes when it
is appended to). Executed under torch 2.13."""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from inplace_lint.analysis.local_conds import steady_attributes
from inplace_lint.analysis.model_outputs import class_nodes
from tests.executed import load

torch = pytest.importorskip("torch")

SOURCE = """import torch
from torch import nn


def toggle(m):
    m._hold = not m._hold


class Lanczos(nn.Module):
    def __init__(self, hold: bool = False):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self._hold = hold

    def set_update(self, method):
        self._update = method
        self._hold = False

    def forward(self, x):
        beta = torch.zeros(4)
        out = torch.zeros(4)
        for _ in range(3):
            beta_ = torch.sqrt_(self.lin(x) ** 2 + 1)
            if not self._hold:
                beta.index_copy_(0, torch.tensor([0]), beta_[:1])
            if self._hold:
                beta = beta_
            out = out + beta
        return out
"""


def _findings(src):
    return [(f.code, f.line, f.col) for f in analyze_source(src)]


def _backward(src, hold, attribute=None):
    model = load(src)["Lanczos"](hold)
    if attribute is not None:
        model._hold = attribute
    model(torch.randn(4)).sum().backward()


def test_two_tests_of_a_steady_flag_in_a_loop_never_meet_across_passes():
    assert _findings(SOURCE) == []
    for hold in (False, True):
        _backward(SOURCE, hold)  # runs either way


def test_the_binding_under_the_same_test_as_the_write_is_still_a_finding():
    src = SOURCE.replace("            if self._hold:\n                beta = beta_",
                         "            if not self._hold:\n                beta = beta_")
    assert _findings(src) == [("IPV006", 25, 16)]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _backward(src, False)


def test_a_method_that_assigns_the_flag_makes_its_tests_decide_nothing():
    src = SOURCE.replace("            beta_ = torch.sqrt_",
                         "            self._hold = not self._hold\n            beta_ = torch.sqrt_")
    assert _findings(src) == [("IPV006", 26, 16)]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _backward(src, True)


@pytest.mark.parametrize("old, new", [
    # a call of a method that assigns the flag, inside the loop
    ("            beta_ = torch.sqrt_", "            self.set_update(None)\n            beta_ = torch.sqrt_"),
    # a list: its truth changes without an assignment
    ("self._hold = hold", "self._hold = []"),
    # `+=` may change it
    ("        self._hold = False", "        self._hold += 1"),
    # `self` handed to other code, which may assign it
    ("            beta_ = torch.sqrt_", "            toggle(self)\n            beta_ = torch.sqrt_"),
    ("            beta_ = torch.sqrt_", "            me = self\n            beta_ = torch.sqrt_"),
    # a method that calls the method that assigns it
    ("    def forward(self, x):", "    def step(self):\n        self.set_update(None)\n\n    def forward(self, x):"
                                 "\n        self.step()"),
    # a base class's method may assign it
    ("            beta_ = torch.sqrt_", "            super().train()\n            beta_ = torch.sqrt_"),
])
def test_a_flag_the_method_may_change_decides_nothing(old, new):
    src = SOURCE.replace(old, new)
    assert len(_findings(src)) == 1


def test_which_attributes_are_steady():
    import ast
    cls = ast.parse(SOURCE).body[3]
    assert steady_attributes(cls, class_nodes(cls)) == {"_hold": frozenset({"set_update"})}
    for old, new in [("self._hold = hold", "self._hold = []"), ("self._hold = False", "del self._hold"),
                     ("self._hold = False", "self._hold, self.n = 1, 2"), ("def __init__(self, hold: bool = False)",
                                                                            "def __init__(self, hold)")]:
        cls = ast.parse(SOURCE.replace(old, new)).body[3]
        assert "_hold" not in steady_attributes(cls, class_nodes(cls)), new
    cls = ast.parse(SOURCE.replace("self._hold = False", "setattr(self, '_hold', False)")).body[3]
    assert steady_attributes(cls, class_nodes(cls)) == {}


LOCAL_COPY = """import torch
from torch import nn


class Lanczos(nn.Module):
    def __init__(self, hold: bool = False):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.hold = hold

    def forward(self, x, hold: bool = False):
        beta = torch.zeros(4)
        out = torch.zeros(4)
        h = hold
        for _ in range(3):
            beta_ = torch.sqrt_(self.lin(x) ** 2 + 1)
            if not h:
                beta.index_copy_(0, torch.tensor([0]), beta_[:1])
            if h:
                beta = beta_
            out = out + beta
        return out
"""


def test_a_local_copy_of_a_flag_parameter_is_the_same_test_on_every_pass():
    assert _findings(LOCAL_COPY) == []
    model = load(LOCAL_COPY)["Lanczos"]()
    for hold in (False, True):
        model(torch.randn(4), hold).sum().backward()
    src = LOCAL_COPY.replace("            if h:\n", "            if not h:\n")
    assert _findings(src) == [("IPV006", 18, 16)]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        load(src)["Lanczos"]()(torch.randn(4), False).sum().backward()
