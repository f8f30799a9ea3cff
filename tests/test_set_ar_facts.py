"""Facts from set AR (thirteenth session), each executed under torch 2.13.

- An op that reads a tensor for the gradient of another input computed from a parameter annotated ``Tensor``
  (``p * tree[j]``) saves it when a caller passes one that requires grad: the write to ``tree`` is a finding
  whose callers decide (quantorch's option-pricing trees, which its greeks differentiate).
- A torch function of such a parameter (``torch.maximum(spot - strike, 0)``) is a tensor that requires grad
  when the parameter does, as arithmetic on it is.
- An op that reads a view for its own gradient (``tree[0].pow(2)``, ``v.pow(2)`` with ``v = tree[0]``) saves
  the storage of the view's base: a write to the base fails the backward.
"""
from __future__ import annotations

import textwrap

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import import_source, load as _load

torch = pytest.importorskip("torch")

TREE = """
import torch
from torch import Tensor


def tree(spot: Tensor, strike: Tensor, p: Tensor, steps: int) -> Tensor:
    values = torch.maximum(spot * torch.ones(steps + 1) - strike, torch.tensor(0.0))
    for i in range(steps - 1, -1, -1):
        for j in range(i + 1):
            values[j] = p * values[j] + (1 - p) * values[j + 1]
    return values[0]
"""


def test_a_row_read_for_the_gradient_of_a_tensor_parameter_makes_the_write_a_finding():
    src = textwrap.dedent(TREE)
    [finding] = analyze_source(src)
    assert (finding.code, finding.line, finding.col) == ("IPV006", 10, 12)
    assert finding.message == (
        "item assignment writes in place to `values`, which `(1 - p) * values[j + 1]` (line 10) saved for backward to "
        "compute "
        "the gradient of another input: the backward raises when that input requires grad, whether or not `values` "
        "itself requires grad (it does when `p` requires grad)")
    tree = _load(src)["tree"]
    p = torch.tensor(0.4, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tree(torch.tensor(2.0), torch.tensor(1.0), p, 3).backward()
    tree(torch.tensor(2.0), torch.tensor(1.0), torch.tensor(0.4), 3)  # (no grad: nothing raises)


@pytest.mark.parametrize("annotation", ["float", ""])
def test_a_parameter_that_may_be_a_number_is_no_guess(annotation):
    src = textwrap.dedent(TREE).replace("p: Tensor", f"p: {annotation}" if annotation else "p")
    assert analyze_source(src) == []
    tree = _load(src)["tree"]
    spot = torch.tensor(2.0)
    assert float(tree(spot, torch.tensor(1.0), 0.4, 3)) == pytest.approx(1.0)


def test_the_callers_decide_the_guess():
    src = textwrap.dedent(TREE).replace("def tree(", "def _tree(").replace("return values[0]", """return values[0]


def price():
    return _tree(torch.tensor(2.0), torch.tensor(1.0), torch.tensor(0.4), 3)""")
    assert analyze_source(src) == []  # the one caller passes tensors that need no grad
    assert float(_load(src)["price"]()) == pytest.approx(1.0)
    with_grad = src.replace("torch.tensor(0.4), 3)", "torch.tensor(0.4, requires_grad=True), 3)")
    [finding] = analyze_source(with_grad)
    assert (finding.code, finding.line) == ("IPV006", 10)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _load(with_grad)["price"]().backward()


def test_a_torch_function_of_a_tensor_parameter_is_a_guess_the_saved_row_is_found_through():
    src = textwrap.dedent("""
    import torch
    from torch import Tensor


    def american(spot: Tensor, strike: Tensor, steps: int) -> Tensor:
        values = torch.maximum(spot * torch.ones(steps + 1) - strike, torch.tensor(0.0))
        for j in range(steps):
            values[j] = torch.maximum(values[j], spot - strike)
        return values[0]
    """)
    [finding] = analyze_source(src)
    assert (finding.code, finding.line, finding.col) == ("IPV006", 9, 8)
    assert "which `torch.maximum` (line 9) saved for backward" in finding.message
    spot = torch.tensor(2.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _load(src)["american"](spot, torch.tensor(1.0), 3).backward()


@pytest.mark.parametrize("read, line", [("y = values[0].pow(2)", 9), ("v = values[0]\n    y = v.pow(2)", 10)])
def test_a_view_read_for_its_own_gradient_saves_its_base(read, line):
    src = textwrap.dedent("""
    import torch


    def f():
        spot = torch.tensor(2.0, requires_grad=True)
        values = spot * torch.ones(4)
        READ
        values[1] = 0.0
        return y
    """).replace("READ", read)
    [finding] = analyze_source(src)
    assert (finding.code, finding.line, finding.col) == ("IPV006", line, 4)
    assert "saved for backward as its input: the backward raises" in finding.message
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _load(src)["f"]().backward()


def test_a_view_read_for_its_own_gradient_of_a_tensor_needing_no_grad_is_no_finding():
    src = textwrap.dedent("""
    import torch


    def f():
        values = torch.ones(4)
        y = values[0].pow(2)
        values[1] = 0.0
        return y
    """)
    assert analyze_source(src) == []
    assert float(_load(src)["f"]()) == 1.0


RECURRENCE = """
import torch
from torch import Tensor


def _recur(r: Tensor) -> Tensor:
    e = torch.ones(4)
    for i in range(1, 4):
        e[i] = r * e[i - 1]
    return e


_recur_jit = torch.jit.trace(_recur, (torch.rand(()),))


def recur(r: Tensor) -> Tensor:
    return _recur_jit(r)
"""


def test_a_call_of_a_traced_function_is_a_call_of_the_function(tmp_path):
    src = textwrap.dedent(RECURRENCE)
    [finding] = analyze_source(src)
    assert (finding.code, finding.line, finding.col) == ("IPV006", 9, 8)
    r = torch.tensor(0.5, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        import_source(src, tmp_path, "traced_grad").recur(r).sum().backward()


def test_a_traced_function_called_only_with_grad_off_saves_nothing(tmp_path):
    src = textwrap.dedent(RECURRENCE).replace("    return _recur_jit(r)", "    with torch.no_grad():\n"
                                              "        return _recur_jit(r)")
    assert analyze_source(src) == []
    module = import_source(src, tmp_path, "traced_no_grad")
    assert module.recur(torch.tensor(0.5, requires_grad=True)).tolist() == [1.0, 0.5, 0.25, 0.125]


def test_calls_with_grad_off_or_of_a_detached_tensor_back_no_guess():
    # lerobot's TD-MPC policy: the noisy branch runs only from `@torch.no_grad()` planning; training passes `z.detach()`
    src = textwrap.dedent("""
    import torch
    from torch import Tensor, nn


    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(3, 3)

        def pi(self, z: Tensor, std: float = 0.0) -> Tensor:
            a = torch.tanh(self.net(z))
            if std > 0:
                a += torch.randn_like(a) * std
            return a

        @torch.no_grad()
        def plan(self, z: Tensor, std: float) -> Tensor:
            return self.pi(z, std)

        def forward(self, z: Tensor) -> Tensor:
            return self.pi(z.detach())
    """)
    assert analyze_source(src) == []
    policy = _load(src)["Policy"]()
    policy(torch.ones(2, 3, requires_grad=True)).sum().backward()
    assert not policy.plan(torch.ones(2, 3), 0.5).requires_grad


def test_an_attribute_built_from_a_plain_project_class_is_no_submodule():
    # gromo's tensor statistics: `self.stat()` runs `Stat.__call__`, which averages a buffer without grad
    src = textwrap.dedent("""
    import torch
    from torch import nn


    class Stat:
        def __init__(self):
            self._t = torch.zeros(3)
            self.n = 1

        def __call__(self):
            return self._t / self.n


    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.stat = Stat()

        def forward(self, x):
            y = self.stat().exp()
            y.mul_(2)
            return x + y
    """)
    assert analyze_source(src) == []
    x = torch.ones(3, requires_grad=True)
    _load(src)["Layer"]()(x).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


def test_a_function_torch_differentiates_keeps_its_guess_whatever_its_other_calls(tmp_path):
    # a review's case: the one visible call runs with grad off, and `jacobian` calls the traced copy with grad on
    src = textwrap.dedent(RECURRENCE).replace("    return _recur_jit(r)", """    with torch.no_grad():
        return _recur_jit(r)


def jac(r: Tensor) -> Tensor:
    return torch.autograd.functional.jacobian(_recur_jit, r)""")
    [finding] = analyze_source(src)
    assert (finding.code, finding.line) == ("IPV006", 9)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        import_source(src, tmp_path, "traced_jacobian").jac(torch.tensor(0.5))


def test_a_plain_class_holding_a_parameter_returns_what_requires_grad():
    # a review's case: `self.gate = Scale()` is no module, but its `__call__` multiplies by an `nn.Parameter`
    src = textwrap.dedent("""
    import torch
    from torch import nn


    class Scale:
        def __init__(self):
            self.w = nn.Parameter(torch.ones(3))

        def __call__(self, x):
            return x * self.w


    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = Scale()

        def forward(self, inp):
            g = self.gate(inp).sigmoid()
            g.mul_(2)
            return g
    """)
    [finding] = analyze_source(src)
    assert (finding.code, finding.line, finding.col) == ("IPV006", 21, 8)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _load(src)["M"]()(torch.ones(2, 3)).sum().backward()


def test_a_list_from_torch_jit_annotate_is_no_tensor():
    src = textwrap.dedent("""
    from typing import List

    import torch
    from torch import Tensor


    def rows(p: Tensor) -> List[Tensor]:
        vals = torch.jit.annotate(List[Tensor], [torch.ones(()), torch.ones(())])
        for j in range(1):
            vals[j] = p * vals[j] + vals[j + 1]
        return vals
    """)
    assert analyze_source(src) == []
    p = torch.tensor(0.5, requires_grad=True)
    _load(src)["rows"](p)[0].backward()
    assert float(p.grad) == 1.0


def test_a_row_read_through_a_mask_is_a_copy():
    src = textwrap.dedent("""
    import torch


    def f():
        h = torch.ones(2, 3, requires_grad=True) * 2
        keep = h.detach() > 0
        pos = h[keep].pow(2)
        h[0] = 0.0
        return pos.sum() + h.sum()
    """)
    assert analyze_source(src) == []
    _load(src)["f"]().backward()
