"""Small helpers on stdlib ``ast`` names, shared by the engine and fix planning."""
from __future__ import annotations

import ast
from typing import Optional


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
    """Source text of ``node``, elided past ``limit`` characters (for messages)."""
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def expr_base(node: ast.AST) -> ast.AST:
    """The innermost receiver of a chain: ``(a != b)`` for ``(a != b).view(...).expand(...)``."""
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        else:
            return node
