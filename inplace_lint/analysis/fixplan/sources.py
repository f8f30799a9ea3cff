"""What a binding of the written name may hold by routes the walk does not follow (a part of fix safety).

The walk follows a name's value through views, calls it can resolve and torch's ops. Some bindings it cannot
follow hand back one of the objects their expression names, unchanged: an item of a display taken at once
(``[x][0]``, ``{"a": x}.get("a")``, ``[x].pop()``), a comprehension or generator over them (``[x for _ in r][0]``,
``next(t for t in (x,))``), a lambda called at once (``(lambda: x)()``), builtins that return an argument or one of
its items (``next``, ``iter``, ``max``, ``min``, ``sorted``, ``getattr``, ``list``, ``tuple``, ``dict``,
``functools.reduce``, ``operator.itemgetter``), ``copy.copy`` (a tensor's shallow copy shares its storage), and a
``with ... as`` target (``nullcontext(x)`` returns ``x``; any ``__enter__`` may return an argument). Such a binding
that reaches the write makes the named object an observer of it: a rebinding would leave it unchanged
(docs/fixes.md, the nineteenth session's second review).
"""
from __future__ import annotations

import ast
from typing import Iterator, Optional, Sequence, Tuple

from ..astutil import dotted_name, walk_ast
from .facts import NON_ALIAS_ATTRS, FunctionFacts

#: callables that may return one of their arguments, or an item of one, itself
_HANDS_BACK = frozenset({"next", "iter", "reversed", "sorted", "max", "min", "getattr", "list", "tuple", "dict", "set",
                         "frozenset", "copy", "copy.copy", "nullcontext", "contextlib.nullcontext", "reduce",
                         "functools.reduce", "itemgetter", "operator.itemgetter", "attrgetter", "operator.attrgetter",
                         "SimpleNamespace", "types.SimpleNamespace"})
#: container methods that return an item (``d.get(k)``, ``xs.pop()``)
_ITEM_METHODS = frozenset({"get", "pop", "setdefault", "popitem", "values", "items", "__getitem__"})
_DISPLAYS = (ast.List, ast.Tuple, ast.Set, ast.Starred, ast.NamedExpr, ast.Lambda, ast.keyword,
             ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def _handed_back(facts: FunctionFacts, load: ast.Name, top: ast.AST) -> bool:
    """``top`` may be the object ``load`` names (or one sharing its storage), by a route of the module's text."""
    current: ast.AST = load
    while current is not top:
        parent = facts.parent(current)
        if parent is None:
            return False
        if isinstance(parent, ast.Subscript):
            if parent.value is not current:
                return False  # an index
        elif isinstance(parent, ast.Attribute):
            call = facts.parent(parent)
            if parent.value is not current or parent.attr in NON_ALIAS_ATTRS or not (
                    isinstance(call, ast.Call) and call.func is parent and parent.attr in _ITEM_METHODS
                    or isinstance(current, ast.Call)):  # `SimpleNamespace(t=x).t`: a field of a record built here
                return False
        elif isinstance(parent, ast.IfExp) or isinstance(parent, ast.BoolOp):
            if isinstance(parent, ast.IfExp) and parent.test is current:
                return False
        elif isinstance(parent, ast.Dict):
            if not any(v is current for v in parent.values):
                return False  # a key
        elif isinstance(parent, ast.comprehension):
            if parent.iter is not current:
                return False
            current = facts.parent(parent)  # the comprehension may give its items back
            continue
        elif isinstance(parent, ast.Call):
            func = parent.func.func if isinstance(parent.func, ast.Call) else parent.func  # `itemgetter(0)([x])`
            if parent.func is current:
                if isinstance(current, ast.Name):
                    return False  # `f(x)`: what `f` returns is the walk's (its summary), not `f` itself
            elif (dotted_name(func) or "") not in _HANDS_BACK:
                return False
        elif not isinstance(parent, _DISPLAYS):
            return False
        current = parent
    return True


def held_sources(facts: FunctionFacts, name: str, write: ast.AST, loops: Sequence[ast.AST]) -> Iterator[Tuple[str, int]]:
    """(source, line): each other plain name a binding of ``name`` that may reach ``write`` (before it, or anywhere in
    a loop around it) may hand back unchanged (the module's text)."""
    start = (write.lineno, write.col_offset)
    spans = [(loop.lineno, loop.end_lineno or loop.lineno) for loop in loops]

    def reaches(node: ast.AST) -> bool:
        return (node.lineno, node.col_offset) < start or any(lo <= node.lineno <= hi for lo, hi in spans)

    def named(value: ast.AST) -> Iterator[ast.Name]:
        """The loads in ``value`` of the function's own names (not a builtin such as ``id``, nor a name the
        expression binds itself: a comprehension's target, a lambda's parameter)."""
        inner = {n.id for n in walk_ast(value) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        inner |= {a.arg for n in walk_ast(value) if isinstance(n, ast.Lambda) for a in n.args.args}
        for load in walk_ast(value):
            if isinstance(load, ast.Name) and isinstance(load.ctx, ast.Load) and load.id != name \
                    and load.id not in inner and (facts.is_local(load.id) or facts.is_param(load.id)):
                yield load

    for stmt in facts.assigns:
        value: Optional[ast.AST] = getattr(stmt, "value", None)
        if value is None or isinstance(stmt, (ast.For, ast.AsyncFor)) or not reaches(stmt):
            continue
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if not any(isinstance(n, ast.Name) and n.id == name for t in targets for n in walk_ast(t)):
            continue
        for load in named(value):
            if _handed_back(facts, load, value):
                yield load.id, stmt.lineno
    for node in walk_ast(facts.func):
        if not isinstance(node, (ast.With, ast.AsyncWith)) or not reaches(node):
            continue
        for item in node.items:
            if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == name:
                call = item.context_expr
                for load in named(call):
                    if facts.parent(load) is call and isinstance(call, ast.Call) and load is not call.func \
                            or _handed_back(facts, load, call):
                        yield load.id, node.lineno
