"""What a call's arguments say, read from its text: whether an in-place flag or dropout writes, a dtype
conversion or an integer dtype, a tensor split's sizes, an expand to the receiver's own shape, literal
arguments only (a part of :mod:`.calls`).
"""
from __future__ import annotations

import ast
from typing import Optional, Tuple

from ..torch_facts import ops
from .astutil import dotted_name, inplace_flag_arg, int_literal, is_false, is_true, kw, last_name, short
from .call_grad import is_literal


_DTYPE_CASTS = frozenset({"float", "half", "double", "bfloat16", "long", "int", "short", "bool", "byte", "char"})


DROPOUTS = ("dropout", "alpha_dropout", "feature_alpha_dropout")



def dropout_condition(node: ast.Call, name: str) -> Tuple[bool, Optional[str]]:
    """Whether ``F.<name>(x, p, training, inplace=True)`` may write at all, and the run-time condition
    under which it does, when the call leaves one: dropout writes only in training mode with ``p``
    above 0 (``p=0`` or ``training=False`` return the input untouched; docs/pytorch-facts.md#dropout).
    ``training`` defaults to True for ``dropout``/``dropout1d``/..., to False for the alpha dropouts. Out of
    place, a call that would write nothing returns ``x`` itself (torch 2.13)."""
    position = ops.INPLACE_POSITION.get(name, -1)
    training = kw(node, "training")
    if training is None and len(node.args) > position - 1 >= 1:
        training = node.args[position - 1]
    p = kw(node, "p")
    if p is None and len(node.args) > position - 2 >= 1:
        p = node.args[position - 2]
    parts = []
    if training is None:
        if name.startswith(("alpha_dropout", "feature_alpha_dropout")):
            return False, None
    elif is_false(training):
        return False, None
    elif not is_true(training):
        parts.append(f"`{short(training)}` is true")
    if p is not None:
        value = p.value if isinstance(p, ast.Constant) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if value == 0:
                return False, None
        else:
            parts.append(f"the dropout probability `{short(p)}` is above 0")
    return True, " and ".join(parts) or None



def module_condition(module: str, name: Optional[str]) -> Optional[str]:
    """A dropout module built with ``inplace=True`` and applied through a name (``self.drop(x)``)
    writes only while that module is in training mode (``model.eval()`` turns it off)."""
    if name and "Dropout" in module.rpartition(".")[2]:
        return f"`{name}` is in training mode"
    return None



def inplace_flag(node: ast.Call, name: str) -> bool:
    """``F.relu(x, inplace=True)`` or ``F.relu(x, True)`` (by the parameter's position)."""
    return is_true(inplace_flag_arg(node, name))



def unknown_inplace_flag(node: ast.Call, name: str) -> bool:
    """``F.relu(x, self.inplace)``, ``F.relu(x, inplace=flag)``: an ``inplace`` flag that is not a literal, so
    the result may be ``x`` itself (torchvision's blocks pass their constructor's ``inplace``)."""
    flag = inplace_flag_arg(node, name)
    return flag is not None and not isinstance(flag, ast.Constant)


def tensor_split_args(node: ast.Call) -> bool:
    """``x.split(3)``, ``x.split([2, 1], dim=-1)``: tensor-style arguments, not ``str.split(sep)``."""
    if kw(node, "dim") is not None or kw(node, "split_size") is not None or kw(node, "split_size_or_sections") is not None:
        return True
    if not node.args:
        return False
    first = node.args[0]
    if isinstance(first, ast.Constant):
        return isinstance(first.value, int) and not isinstance(first.value, bool)
    return isinstance(first, (ast.List, ast.Tuple, ast.BinOp))



def is_dtype_conversion(node: ast.Call, name: str) -> bool:
    if name in _DTYPE_CASTS:
        return True
    if name == "to":
        if kw(node, "dtype") is not None:
            return True
        return any((dotted_name(a) or "").startswith("torch.") for a in node.args)
    return False


def to_integer_dtype(node: ast.Call, name: str) -> bool:
    """``x.to(torch.long)``, ``x.to(dtype=torch.bool)``, ``x.type(torch.int64)``: an integer or bool result."""
    if name not in ("to", "type"):
        return False
    given = [kw(node, "dtype")] + list(node.args[:2])
    return any(a is not None and (dotted_name(a) or "").startswith("torch.")
               and (dotted_name(a) or "").rsplit(".", 1)[1] in ops.INTEGER_DTYPES for a in given)



def _is_own_shape(node: ast.expr, recv: ast.expr, own) -> bool:
    """``recv.shape``, ``recv.size()``, or a name bound to one (``own(s) == "shape"``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size" \
            and not node.args:
        return ast.dump(node.func.value) == ast.dump(recv)
    return isinstance(node, ast.Attribute) and node.attr == "shape" and ast.dump(node.value) == ast.dump(recv) \
        or isinstance(node, ast.Name) and own(node) == "shape"


def _own_size_index(size: ast.expr, recv: ast.expr, own) -> Optional[int]:
    """Which size of ``recv`` the expression is: ``s[k]`` (``s`` the shape: :func:`_is_own_shape`),
    ``recv.size(k)``, or a name bound to one (``own(n) == k``); None otherwise."""
    if isinstance(size, ast.Subscript):
        k = int_literal(size.slice)
        return k if k is not None and not isinstance(size.value, ast.Call) \
            and _is_own_shape(size.value, recv, own) else None
    if isinstance(size, ast.Call) and isinstance(size.func, ast.Attribute) and size.func.attr == "size" \
            and len(size.args) == 1 and ast.dump(size.func.value) == ast.dump(recv):
        return int_literal(size.args[0])
    if isinstance(size, ast.Name):
        k = own(size)
        return k if isinstance(k, int) else None
    return None


def _adds_only_unit_dims(args, recv: ast.expr, own) -> bool:
    """``x.expand(1, s[0], s[1])``, ``x.expand([1, 1, x.size(0)])``, ``x.expand(1, *s)``, ``x.expand(1, -1)``,
    ``x.expand(1, s[-2], s[-1])``, ``n = x.shape[0]; x.expand(1, n)``: new leading dimensions of size 1, then, for
    each remaining position ``j`` of ``m``, ``-1`` or ``x``'s own size ``j`` (or ``j - m``, counted from the end)
    (``own(name)``: ``"shape"`` for a name bound to ``x.shape``, ``k`` for one bound to ``x.shape[k]``). The call
    succeeds only when those positions are ``x``'s own dimensions (a leading 1 against a larger size, or an index
    past the shape, raises), and then no element is repeated: a view with the same memory per element (the
    PyTorch docs of ``Tensor.expand``: only a size-1 dimension, or a new one, is broadcast, with stride 0)."""
    if len(args) == 1 and isinstance(args[0], (ast.List, ast.Tuple)):
        args = args[0].elts
    i = 0
    while i < len(args) and int_literal(args[i]) == 1:
        i += 1
    sizes = args[i:]
    if not sizes:
        return False
    if len(sizes) == 1 and isinstance(sizes[0], ast.Starred):  # `x.expand(1, *s)`, `x.expand(1, *x.shape)`
        return _is_own_shape(sizes[0].value, recv, own)
    m = len(sizes)
    for j, size in enumerate(sizes):
        if int_literal(size) == -1:
            continue  # (kept: a size of `x`, or an error where it would be a new dimension)
        if _own_size_index(size, recv, own) not in (j, j - m):
            return False
    return True


def expands_to_itself(node: ast.Call, recv: ast.expr, own_shape=None) -> bool:
    """``x.expand_as(x)``, ``x.expand(x.shape)``, ``x.expand(*x.shape)``, ``x.expand(x.size())``: the target
    shape is the receiver's own, so no dimension is broadcast (a plain view); also called as a function
    (``torch.broadcast_to(x, x.shape)``, ``broadcast_to(x, s)`` imported by name), whose first argument is ``recv``.
    With ``own_shape`` (whether a name holds ``recv``'s shape): ``x.expand([1, s[0]])``, new size-1 dimensions
    only (:func:`_adds_only_unit_dims`)."""
    name = last_name(node.func)
    args = node.args if isinstance(node.func, ast.Attribute) and node.func.value is recv else node.args[1:]
    if name == "expand" and args and not node.keywords and all(
            isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.USub) and isinstance(a.operand, ast.Constant)
            and a.operand.value == 1 for a in args):
        return True  # `x.expand(-1, -1)`: every dimension kept (a new leading one would need a size)
    if name == "expand" and not node.keywords and own_shape is not None and args \
            and _adds_only_unit_dims(args, recv, own_shape):
        return True
    if len(args) != 1 or node.keywords:
        return False
    arg = args[0].value if isinstance(args[0], ast.Starred) else args[0]
    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "size" and not arg.args:
        arg = arg.func.value
    elif isinstance(arg, ast.Attribute) and arg.attr == "shape":
        arg = arg.value
    elif name != "expand_as":  # (`x.expand_as(y)` takes a tensor)
        return False
    return ast.dump(arg) == ast.dump(recv)



def literal_args(node: ast.Call) -> bool:
    """Every positional argument is a literal (``x.norm(2, -1)``, ``x.std()``): a module called on its input
    (``self.norm(h)``, ``ln.norm(h)``) passes a tensor."""
    return all(is_literal(a) for a in node.args)
