"""Small helpers on stdlib ``ast`` names, shared by the engine and fix planning."""
from __future__ import annotations

import ast
from collections import deque
from typing import Dict, Iterator, Optional

from ..torch_facts import ops


#: fields that never hold a node worth walking: names and numbers, and the ``ctx``/operator singletons
#: (``ast.Load()``, ``ast.Add()``) that every ``Name``, ``BinOp`` and ``Compare`` shares
_LEAF_FIELDS = frozenset(("ctx", "op", "ops", "id", "attr", "arg", "name", "module", "level", "kind",
                          "type_comment", "is_async", "conversion", "simple", "tag"))
_CHILD_FIELDS: dict = {ast.Constant: ()}


def _child_fields(cls: type) -> tuple:
    fields = _CHILD_FIELDS[cls] = tuple(f for f in cls._fields  # (3.12's ``type X = ...`` names a Name node)
                                        if f not in _LEAF_FIELDS or (f == "name" and cls.__name__ == "TypeAlias"))
    return fields


def walk_ast(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes :func:`ast.walk` gives, in its order (breadth first, ``node`` first), but for the ``ctx`` and
    operator singletons (``ast.Load()``, ``ast.Add()``: read them from their parent's ``ctx``/``op``/``ops``).
    About 2.5x faster than ``ast.walk``: it reads each class's child fields once instead of going through
    ``iter_child_nodes``/``iter_fields`` generators, and skips a third of the nodes (the analysis walks about half
    of every class and function this way; ``benchmarks/bench_check.py``)."""
    todo = deque((node,))
    pop, push, child_fields, AST = todo.popleft, todo.append, _CHILD_FIELDS.get, ast.AST
    while todo:
        node = pop()
        fields = child_fields(node.__class__)
        if fields is None:
            fields = _child_fields(node.__class__)
        for name in fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, AST):
                        push(item)
            elif isinstance(value, AST):
                push(value)
        yield node


def child_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes :func:`walk_ast` goes on to from ``node`` (its children, but for the ``ctx`` and operator
    singletons): for a walk that carries something from a node to its children (a flag test, the enclosing def)."""
    fields = _CHILD_FIELDS.get(node.__class__)
    if fields is None:
        fields = _child_fields(node.__class__)
    for name in fields:
        value = getattr(node, name, None)
        if value.__class__ is list:
            for item in value:
                if isinstance(item, ast.AST):
                    yield item
        elif isinstance(value, ast.AST):
            yield value


_STATEMENT_FIELDS = ("body", "handlers", "orelse", "finalbody", "cases")


def walk_statements(node: ast.AST) -> Iterator[ast.stmt]:
    """The statements under ``node`` (nested functions and classes included), in the order ``ast.walk`` visits
    them (breadth first), without visiting a single expression: for facts that only statements state
    (``global``/``nonlocal``, a class's ``__init__`` assignments)."""
    todo = deque([node])
    while todo:
        node = todo.popleft()
        if isinstance(node, ast.stmt):
            yield node
        for name in node._fields:
            if name in _STATEMENT_FIELDS:
                todo.extend(getattr(node, name))


def dotted_name(node: ast.AST) -> Optional[str]:
    """``torch.nn.functional`` for the matching Attribute chain of Names, else None."""
    kind = type(node)  # the hot path: ``x`` and ``self.x``
    if kind is ast.Name:
        return node.id
    if kind is ast.Attribute and type(node.value) is ast.Name:
        return f"{node.value.id}.{node.attr}"
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def last_name(node: ast.AST) -> Optional[str]:
    """``relu`` for ``F.relu`` or ``relu``; None for anything else."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def short(node: ast.AST, limit: int = 60) -> str:
    """Source text of ``node``, elided past ``limit`` characters (for messages). Kept on the node: a loop's
    second pass, a file walked again and a chain ``a + b + c`` (each level's text holds the ones below) ask for
    the same node's text again."""
    text = node.__dict__.get("_short_text") if limit == 60 else None
    if text is None:
        text = ast.unparse(node)
        text = text if len(text) <= limit else text[: limit - 3] + "..."
        if limit == 60:
            node._short_text = text
    return text


def call_text(node: ast.Call, method: str) -> str:
    """``.squeeze(0)``; long argument lists are elided. A call of another name that amounts to ``method`` (einops'
    ``repeat(x, "b f -> b f i", i=n)`` for ``expand``) is shown as written: ``repeat(...)``."""
    args = ", ".join([ast.unparse(a) for a in node.args] + [ast.unparse(k) for k in node.keywords])
    if len(args) > 30:
        args = "..."
    called = last_name(node.func) or method
    return f".{method}({args})" if called == method else f"{called}({args})"


def defaults(args: ast.arguments) -> Dict[str, ast.expr]:
    """Each parameter with a default -> its default's node (positional ones aligned from the end, keyword-only ones
    that have one)."""
    positional = args.posonlyargs + args.args
    out = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]], args.defaults))
    out.update((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)
    return out


def kw(node: ast.Call, name: str) -> Optional[ast.expr]:
    """The value of keyword argument ``name`` of a call, or None."""
    for k in node.keywords:
        if k.arg == name:
            return k.value
    return None


def is_zero(node: Optional[ast.AST]) -> bool:
    """A literal ``0`` or ``0.0`` (not ``False``)."""
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value == 0


def is_str_constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def is_true(node: Optional[ast.AST]) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def is_false(node: Optional[ast.AST]) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def is_int_literal(node: ast.AST) -> bool:
    """``1``, ``-1`` (not ``True``)."""
    return int_literal(node) is not None


def int_literal(node: ast.AST) -> Optional[int]:
    """The value of ``1`` or ``-1`` (not ``True``), else None."""
    negative = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    if negative:
        node = node.operand
    if not (isinstance(node, ast.Constant) and type(node.value) is int):
        return None
    return -node.value if negative else node.value


def expr_base(node: ast.AST) -> ast.AST:
    """The innermost receiver of a chain: ``(a != b)`` for ``(a != b).view(...).expand(...)``."""
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        else:
            return node


def inplace_flag_arg(call: ast.Call, name: str) -> Optional[ast.expr]:
    """What ``call`` of the ``torch.nn.functional`` op ``name`` passes for ``inplace``, by keyword or by position
    (:func:`~inplace_lint.torch_facts.ops.inplace_argument`): ``True`` of ``F.relu(x, True)``, ``self.inplace`` of
    ``F.relu(x, inplace=self.inplace)``; None when it passes none."""
    where = ops.inplace_argument(name, len(call.args), [k.arg for k in call.keywords])
    return kw(call, "inplace") if where == "inplace" else None if where is None else call.args[where]


def values_bound(node: ast.AST, name: str) -> list:
    """What an ``=``, ``x: T = v`` or ``:=`` binds to the local ``name``, where the statement says it: the value of
    ``name = v``, the matching item of ``lo, hi = float(a), float(b)``; None for a name among several targets
    (``a = b = v``). Nothing for an unpacking of something else (``q, r = torch.linalg.qr(a)``: its items)."""
    if isinstance(node, ast.NamedExpr):
        return [node.value] if node.target.id == name else []
    if isinstance(node, ast.AnnAssign):
        return [node.value] if node.value is not None and isinstance(node.target, ast.Name) \
            and node.target.id == name else []
    out = []
    for target in node.targets:
        if isinstance(target, ast.Name) and target.id == name:
            out.append(node.value if len(node.targets) == 1 else None)
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(node.value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(node.value.elts):
            out.extend(v for t, v in zip(target.elts, node.value.elts) if isinstance(t, ast.Name) and t.id == name)
    return out


def sliced_name(node: ast.expr) -> bool:
    """``x[:k]``, ``x[..., :k, :]``, ``x[:, 0]``: a name indexed with a slice or ``...`` (alone or in a tuple with
    slices, integer literals and ``None``: basic indexing, a view), which only a sequence or an array takes; handed to
    an op that takes only a tensor there (a layer's input), ``x`` is a tensor (an item, ``x[-1]``, may be a list's;
    ``x[:, idx]`` may be advanced indexing, a copy)."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)):
        return False
    index = node.slice
    return isinstance(index, ast.Slice) or isinstance(index, ast.Tuple) and any(
        isinstance(e, ast.Slice) or isinstance(e, ast.Constant) and e.value is Ellipsis for e in index.elts) and all(
        isinstance(e, ast.Slice) or isinstance(e, ast.Constant) and (e.value is None or e.value is Ellipsis or type(
            e.value) is int) for e in index.elts)


def rebound_between(func: Optional[ast.AST], expr: ast.expr, after: int, before: int) -> bool:
    """A name ``expr`` reads, or ``expr`` itself (an attribute chain), may be bound again, or changed by a method
    (``nbrs.append(0)``) or a call it is handed to, in ``func`` on the lines strictly between ``after`` and
    ``before``; always True outside a function (module code is not scanned)."""
    if func is None:
        return True
    names = {n.id for n in walk_ast(expr) if isinstance(n, ast.Name)}
    text = dotted_name(expr)
    for node in walk_ast(func):
        line = getattr(node, "lineno", 0)
        if not after < line < before:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)) and node.id in names:
            return True
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store) \
                and text is not None and dotted_name(node) == text:
            return True
        if isinstance(node, (ast.Global, ast.Nonlocal)) and names & set(node.names):
            return True
        if isinstance(node, ast.Call) and (
                isinstance(node.func, ast.Attribute) and (dotted_name(node.func.value) or "").partition(".")[0] in names
                or any(isinstance(a, ast.Name) and a.id in names for a in node.args)):
            return True
    return False


def method_key(node: ast.AST) -> str:
    """The name a ``def`` is known by in its class: its own, or ``name.setter`` / ``name.deleter`` for a property's
    ``@name.setter`` (a second ``def`` of the name that must not stand for the getter: callers read ``self.name``
    through the ``@property`` ``def``)."""
    for dec in getattr(node, "decorator_list", ()):
        if isinstance(dec, ast.Attribute) and dec.attr in ("setter", "deleter") and isinstance(dec.value, ast.Name) \
                and dec.value.id == node.name:
            return f"{node.name}.{dec.attr}"
    return node.name
