"""``q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=h), (q, k, v))``: a map of a one-argument lambda
over a literal tuple, unpacked into as many names, binds each name to the lambda's body applied to the matching item.

The idiom is everywhere in attention code; read as an unknown call it lost every fact about ``q``, ``k`` and ``v`` (a
saved ``k.softmax(dim=-2)`` written by ``masked_fill_`` went unseen: perceiver-pytorch's linear attention, set CI).
The body is copied with the lambda's parameter replaced by each item's expression, so the walk evaluates exactly
what Python computes (``map`` is lazy, but unpacking consumes it at once, in order, before any name is bound).
"""
from __future__ import annotations

import ast
import copy
from typing import Dict, List, Optional

_CACHE: Dict[int, tuple] = {}


class _Substitute(ast.NodeTransformer):
    def __init__(self, name: str, item: ast.expr):
        self.name, self.item = name, item

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == self.name and isinstance(node.ctx, ast.Load):
            return ast.copy_location(copy.deepcopy(self.item), node)
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        return node  # (an inner lambda binding the same name shadows it; never rewritten)


def mapped_items(value: ast.expr, targets: List[ast.expr]) -> Optional[List[ast.expr]]:
    """The expressions ``map(lambda p: body, (a, b, ...))`` gives, in order, when unpacked into one tuple of as many
    plain ``targets``: ``body`` with ``p`` replaced by ``a``, by ``b``, ...; None for anything else (another callable,
    a lambda with more or other parameters, an iterable that is not a literal tuple or list of plain items, a
    comprehension in the body, whose own scope the copy would not keep)."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "map"
            and len(value.args) == 2 and not value.keywords and len(targets) == 1
            and isinstance(targets[0], (ast.Tuple, ast.List))
            and not any(isinstance(t, ast.Starred) for t in targets[0].elts)):
        return None
    count = len(targets[0].elts)
    func, items = value.args
    if not isinstance(func, ast.Lambda) or not isinstance(items, (ast.Tuple, ast.List)) or len(items.elts) != count:
        return None
    args = func.args
    if len(args.args) != 1 or args.posonlyargs or args.kwonlyargs or args.vararg or args.kwarg or args.defaults:
        return None
    if any(isinstance(e, ast.Starred) for e in items.elts) or any(
            isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.NamedExpr))
            for n in ast.walk(func.body)):
        return None
    cached = _CACHE.get(id(value))
    if cached is not None and cached[0] is value:
        return cached[1]
    name = args.args[0].arg
    out = [_Substitute(name, item).visit(copy.deepcopy(func.body)) for item in items.elts]
    for expr in out:
        ast.fix_missing_locations(expr)
    if len(_CACHE) > 4096:
        _CACHE.clear()
    _CACHE[id(value)] = (value, out)
    return out
