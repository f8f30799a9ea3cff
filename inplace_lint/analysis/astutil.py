"""Small helpers on stdlib ``ast`` names, shared by the engine and fix planning."""
from __future__ import annotations

import ast
from collections import deque
from typing import Iterator, Optional


def walk_ast(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes :func:`ast.walk` gives, in its order (breadth first, ``node`` first), about 1.7x faster: it reads
    each node's ``_fields`` itself instead of going through ``iter_child_nodes``/``iter_fields`` generators (the
    analysis walks about half of every class and function this way; ``benchmarks/bench_check.py``)."""
    todo = deque((node,))
    pop, push = todo.popleft, todo.append
    while todo:
        node = pop()
        for name in node._fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        push(item)
            elif isinstance(value, ast.AST):
                push(value)
        yield node


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
    """``.squeeze(0)``; long argument lists are elided."""
    args = ", ".join([ast.unparse(a) for a in node.args] + [ast.unparse(k) for k in node.keywords])
    if len(args) > 30:
        args = "..."
    return f".{method}({args})"


def kw(node: ast.Call, name: str) -> Optional[ast.expr]:
    """The value of keyword argument ``name`` of a call, or None."""
    for k in node.keywords:
        if k.arg == name:
            return k.value
    return None


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
