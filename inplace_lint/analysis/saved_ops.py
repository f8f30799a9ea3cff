"""What an op saves for backward for the arguments of one call: the saved table's answer
(:mod:`inplace_lint.torch_facts.ops`, generated from torch's derivative formulas) corrected for the ops whose
output is saved only for some arguments, and which ops return a tuple in the form called."""
from __future__ import annotations

import ast
from typing import Optional

from ..torch_facts import ops
from .astutil import is_int_literal, is_str_constant, is_true, kw


def _argument(node: ast.Call, namespace: str, position: int, keyword: str) -> Optional[ast.expr]:
    """The argument at ``position`` after the input (the receiver of a method form), or the keyword."""
    given = kw(node, keyword)
    if given is not None:
        return given
    args = node.args[position - 1:] if namespace == ops.TENSOR_METHOD else node.args[position:]
    return args[0] if args else None


def output_saved_here(node: ast.Call, namespace: str, name: str) -> bool:
    """The op's backward reads its output, for these arguments: the saved table's answer
    (:func:`ops.saves_output`, true only when every argument pattern saves it), corrected for the ops whose
    output is saved only for some arguments, executed under torch 2.13: a full reduction ``h.max()`` /
    ``torch.min(h)`` saves it (the ``dim`` and two-tensor forms do not); ``matrix_power(x, n)`` saves it only
    for ``n < 0`` (an inverse; ``n >= 0`` is matmuls, which save their inputs); ``gumbel_softmax(hard=True)``
    returns ``y_hard - y_soft.detach() + y_soft`` (an add); ``matrix_norm``/``linalg.norm`` with ``ord="nuc"``
    (``torch.norm``/``Tensor.norm`` with ``p="nuc"``) is a sum of singular values."""
    if name in ("max", "min") and namespace in ("torch", ops.TENSOR_METHOD):
        return not node.keywords and len(node.args) == (1 if namespace == "torch" else 0)
    if not ops.saves_output(namespace, name):
        return False
    if name == "matrix_power":
        power = _argument(node, namespace, 1, "n")
        return not (power is not None and is_int_literal(power) and not isinstance(power, ast.UnaryOp))
    if name == "gumbel_softmax":
        return not is_true(kw(node, "hard"))
    if name in ("matrix_norm", "norm") and namespace == "torch.linalg":
        order = _argument(node, namespace, 1, "ord")
        return not (is_str_constant(order) and order.value == "nuc")
    if name == "norm" and namespace in ("torch", ops.TENSOR_METHOD):  # `torch.norm(h, p="nuc")`, `h.norm(p="nuc")`
        order = _argument(node, namespace, 1, "p")
        return not (is_str_constant(order) and order.value == "nuc")
    return True


def returns_tuple(node: ast.Call, namespace: str, name: str) -> bool:
    """A tuple-returning op (:func:`ops.saved_outputs`) called in its tuple form: an op that also returns one
    tensor without a dimension (`x.max()`, `torch.max(a, b)`, `x.median()`) returns a tuple with one
    (`x.max(-1)`, `torch.max(x, dim=1)`, `x.median(dim=0)`)."""
    if not ops.saved_outputs(namespace, name):
        return False
    entry = ops.saved_for_backward(namespace, name)
    if entry[1] or entry[2] or entry[3]:
        extra = node.args[0 if namespace == ops.TENSOR_METHOD else 1:]
        return kw(node, "dim") is not None or bool(extra and is_int_literal(extra[0]))
    return True


def einsum_operands_kept(equation: ast.expr) -> bool:
    """An einsum equation with an output (``"ij,jk->ik"``) in which no label of either operand is summed away
    before the product (one in neither the other operand nor the output: ``"ij,k->"`` sums each operand first, and
    the product then reads the sums, not the operands)."""
    if not is_str_constant(equation) or "->" not in equation.value:
        return False
    lhs, out = equation.value.replace(" ", "").split("->", 1)
    sides = lhs.split(",")
    return len(sides) == 2 and all(set(a) <= set(b) | set(out) for a, b in (sides, sides[::-1]))


#: torch functions that only reorder their input's elements (a copy, computed from it alone)
REORDERING = frozenset({"flip", "fliplr", "flipud", "roll", "rot90"})
#: ``torch.<name>(x)`` that returns ``x`` itself when it is a tensor
TENSOR_IS_RETURNED = frozenset({"as_tensor", "asarray"})
