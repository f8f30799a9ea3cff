"""``nn.Sequential(*layers)`` from a list built in ``__init__`` (:mod:`inplace_lint.analysis.layer_lists`),
executed under torch 2.13: the stack's output is its last layer's, on every path the list can take."""
from __future__ import annotations

import ast

import pytest

from inplace_lint.analysis import analyze_source
from inplace_lint.analysis.layer_lists import list_tail
from tests.executed import load

torch = pytest.importorskip("torch")

FIXTURE = "fixtures/detect/IPV006/sequential_from_layer_list.py"


def _source() -> str:
    with open(FIXTURE, encoding="utf-8") as f:
        return f.read()


def test_a_list_that_drops_its_last_activation_ends_in_torch_linear_and_a_sigmoid_end_is_saved():
    findings = analyze_source(_source())
    assert [(f.code, f.line, f.col + 1) for f in findings] == [("IPV006", 59, 9), ("IPV001", 61, 9)]
    assert "`self.gate(...)`, whose output autograd saves for backward (raises when `gate` is `Gate`" \
        in findings[0].message
    mod = load(_source())
    torch.manual_seed(0)
    x = torch.randn(2, 4)
    h = mod["MLP"]([4, 5, 3], torch.nn.Tanh())(x)
    h[:, 0].clamp_(min=-3)
    h.sum().backward()  # the popped list ends in nn.Linear: a plain activation, the write is legal
    g = mod["Gate"]([4, 5, 3])(x)
    g.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        g.sum().backward()


def _tails(src: str):
    func = ast.parse(src).body[0]
    return [[ast.unparse(e) for e in t] for t in list_tail(func, "layers", func.body[-1])] \
        if list_tail(func, "layers", func.body[-1]) is not None else None


@pytest.mark.parametrize("body, expected", [
    # a pass of the loop may be the last: it ends the list (an empty list's pop raises, so no path keeps it)
    ("layers = []\nfor a in s:\n    layers += [A(a), B()]\nlayers.pop()", [["A(a)"]]),
    # no pass at all keeps what was there before
    ("layers = [C()]\nfor a in s:\n    layers.append(A(a))", [["C()"], ["A(a)"]]),
    ("layers = [C()]\nif f:\n    layers.append(A())\nelse:\n    layers.extend([B(), D()])",
     [["C()", "A()"], ["C()", "B()", "D()"]]),
    ("layers = [*base, A()]\nlayers.pop(-1)\nlayers.pop()", None),  # past what is known
    ("layers = [A()]\nhelper(layers)", None),  # handed to a call that may change it
    ("layers = [A()]\nlayers[-1] = B()", None),
    ("layers = [A()]\nlayers.insert(0, B())", None),
    ("layers = [A()]\ntry:\n    layers.append(B())\nexcept E:\n    pass", None),
    ("layers = [A()]\nfor a in s:\n    if a:\n        layers.append(B())", None),  # a pass may append nothing
    # a pass that may stop early does not run to its end (a review's case: `Head()` may be the last layer)
    ("layers = []\nfor a in s:\n    layers.append(A(a))\n    if a == 3:\n        break\n    layers.append(B())", None),
    ("layers = []\nfor a in s:\n    layers.append(A(a))\n    if a == 3:\n        continue\n    layers.append(B())", None),
])
def test_the_tails_each_path_leaves(body, expected):
    src = "def f(s, f, base, helper, E):\n" + "".join(f"    {line}\n" for line in body.splitlines()) \
        + "    net = nn.Sequential(*layers)\n"
    assert _tails(src) == expected
