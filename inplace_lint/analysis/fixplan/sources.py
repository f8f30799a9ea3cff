"""What a binding of the written name may hold that the walk does not know of (a part of fix safety).

The walk follows a name's value through views, calls it can resolve and torch's ops. Where it gives a binding no
value at all (``beta = next(iter([x]))``, ``beta = typing.cast(Tensor, x)``, ``beta = d["a"]`` with ``d = {"a":
x}``, ``with nullcontext(x) as beta``), a fix may not assume the name holds only what it held before: such a binding
may hand back any local its expression names, through items, attributes, containers, comprehensions, lambdas and
calls, unless the route passes through an op known to make a new tensor or a number (torch's arithmetic and
reductions, ``len``, a comparison). Each such local (and what its own bindings may hand back, two levels deep) is
an observer of the write: a rebinding would leave it unchanged (docs/fixes.md, the nineteenth session's reviews).
"""
from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Sequence, Set, Tuple

from ...torch_facts import ops
from ..astutil import dotted_name, walk_ast
from .bindings import values_bound_to
from .facts import _TORCH_PREFIXES, NON_ALIAS_ATTRS, FunctionFacts, _call_role

_STOPS = (ast.Compare, ast.JoinedStr, ast.FormattedValue)
#: statements and calls that bind or fill a name other than by assignment
_OTHER_BINDINGS = (ast.With, ast.AsyncWith, ast.Call) + ((ast.Match,) if hasattr(ast, "Match") else ())
#: container methods that return an item (``d.get(k)``, ``xs.pop()``)
_ITEM_METHODS = frozenset({"get", "pop", "popleft", "setdefault", "popitem", "values", "items", "copy",
                           "__getitem__"})
#: methods that return their receiver, a view of its storage (a tensor's, a NumPy array's), or the tensors it holds
#: (a module's parameters and buffers)
_RECEIVER_METHODS = ops.VIEW_METHODS | ops.MAY_ALIAS_METHODS | ops.EXPAND_METHODS | ops.TENSOR_INPLACE_METHODS \
    | frozenset({"numpy", "__enter__", "parameters", "buffers", "named_parameters", "named_buffers", "state_dict"})
#: container methods that put their arguments in the container
_FILLS = frozenset({"append", "appendleft", "extend", "extendleft", "insert", "add", "update", "setdefault", "put",
                    "push"})


_HOLDERS = (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
            ast.Lambda, ast.keyword)


def _may_flow(facts: FunctionFacts, load: ast.Name, top: ast.AST, held: bool = False, walked: bool = True) -> bool:
    """``top`` may be the object ``load`` names (or one sharing its storage). ``held``: only by being put in a
    container, a comprehension, a lambda or a call's keyword (``d = {"a": x}``, ``ns = SimpleNamespace(t=x)``), a
    holder the walk does not read items back from. ``walked``: the walk has met the binding (else every call in it
    counts as one it could not resolve)."""
    current: ast.AST = load
    through_holder = False
    while current is not top:
        parent = facts.parent(current)
        if parent is None or isinstance(parent, _STOPS):
            return False
        if isinstance(parent, ast.Subscript):
            if parent.value is not current:
                return False  # an index
        elif isinstance(parent, ast.Attribute):
            if parent.attr in NON_ALIAS_ATTRS:
                return False
        elif isinstance(parent, ast.IfExp):
            if parent.test is current:
                return False
        elif isinstance(parent, ast.Dict):
            if not any(v is current for v in parent.values):
                return False  # a key
        elif isinstance(parent, ast.BinOp):
            others = parent.right if parent.left is current else parent.left
            if not isinstance(current, (ast.List, ast.Tuple)) and not isinstance(others, (ast.List, ast.Tuple)):
                return False  # arithmetic makes a new tensor (`[x] * 2` repeats the list's items)
        elif isinstance(parent, ast.UnaryOp):
            if not isinstance(parent.op, ast.UAdd):
                return False  # (`+x` is `x` itself)
        elif isinstance(parent, ast.comprehension):
            comp = facts.parent(parent)
            if parent.iter is not current or not _yields_item(facts, parent, comp):
                return False  # (`[t.exp() for t in [x]]` gives new tensors)
            through_holder = True
            current = comp  # the comprehension gives its items back
            continue
        elif isinstance(parent, (ast.Call, ast.keyword)):
            call = parent if isinstance(parent, ast.Call) else facts.parent(parent)
            if not isinstance(call, ast.Call):
                return False
            if call.func is current and isinstance(current, ast.Name) and not (
                    facts.is_local(current.id) and (call.lineno, call.col_offset) in facts.unresolved):
                return False  # `f(x)`: what `f` returns is the walk's, not `f` (a local callable it cannot follow
                #               may hand back what it closes over: `get = lambda: x; get()`)
            if call.func is current and isinstance(current, ast.Attribute) and current.attr not in _ITEM_METHODS \
                    and current.attr not in _RECEIVER_METHODS:
                return False  # `self.proj(x)`, `obj.get_tensor()`: a method's result, not its receiver
            torch_op = (dotted_name(call.func) or "").startswith(_TORCH_PREFIXES)
            if walked and not torch_op and call.func is not current \
                    and (call.lineno, call.col_offset) not in facts.unresolved:
                return False  # a call the walk resolved (a project function): its summary decides
            if _call_role(call, current, facts) == "fresh":
                return False  # torch's arithmetic and reductions, `len(x)`, `x.sum()`
            if isinstance(parent, ast.keyword):
                through_holder = True
                current = call
                continue
        through_holder = through_holder or isinstance(parent, _HOLDERS)
        current = parent
    return through_holder or not held


def _yields_item(facts: FunctionFacts, generator: ast.comprehension, comp: ast.AST) -> bool:
    """The comprehension ``comp`` may give back an item of ``generator``'s iterable: its element (a dict
    comprehension's value) is, or may hand back, a name ``generator`` binds."""
    element = getattr(comp, "elt", None) or getattr(comp, "value", None)
    if element is None:
        return True
    bound = {n.id for n in walk_ast(generator.target) if isinstance(n, ast.Name)}
    return any(isinstance(n, ast.Name) and n.id in bound and isinstance(n.ctx, ast.Load)
               and (n is element or _may_flow(facts, n, element)) for n in walk_ast(element))


def _rebinds(stmt: ast.AST, name: str) -> bool:
    """``stmt`` is ``name = ...`` (or ``name: T = ...``), which replaces whatever ``name`` held."""
    if isinstance(stmt, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets)
    return isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, ast.Name) \
        and stmt.target.id == name


def _replaced(facts: FunctionFacts, stmt: ast.AST, name: str, write: ast.AST) -> bool:
    """A later statement of ``stmt``'s own block binds ``name`` again, and the write does not run between the two:
    what ``stmt`` bound never reaches it (``h = x`` before a loop that starts with ``h = self.norm(h)``)."""
    placed = facts.siblings(stmt) if isinstance(stmt, ast.stmt) else None
    if placed is None:
        return False
    block, index = placed
    at = (write.lineno, write.col_offset)
    end = (getattr(stmt, "end_lineno", stmt.lineno), getattr(stmt, "end_col_offset", 0))
    for later in block[index + 1:]:
        if _rebinds(later, name):
            return not (end <= at < (later.lineno, later.col_offset))
    return False


def _last_rebind(facts: FunctionFacts, name: str, write: ast.AST) -> Optional[ast.AST]:
    """The nearest ``name = ...`` before the write in the write's own block or a block around it: every pass that
    reaches the write ran it, so only what is bound from it on reaches the write."""
    for node in reversed(facts.path_to(write)):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            return None  # (a binding later in the loop reaches the write on the next pass)
        placed = facts.siblings(node) if isinstance(node, ast.stmt) else None
        if placed is not None:
            block, index = placed
            for earlier in reversed(block[:index]):
                if _rebinds(earlier, name):
                    return earlier
    return None


def _bindings(facts: FunctionFacts, name: str, reaches, write: ast.AST) -> Iterator[Tuple[ast.AST, ast.AST]]:
    """(statement, value) of each binding of ``name`` that ``reaches`` (an assignment, annotated assignment, walrus,
    or ``with ... as`` target) and that no later binding in its block replaces before the write."""
    last = _last_rebind(facts, name, write)
    if last is not None:  # only bindings from `last` on, before the write, reach it
        start, at = (last.lineno, last.col_offset), (write.lineno, write.col_offset)
        reached = reaches

        def reaches(node: ast.AST) -> bool:
            return reached(node) and start <= (node.lineno, node.col_offset) < at
    for stmt, value in values_bound_to(facts, name):
        if reaches(stmt) and not _replaced(facts, stmt, name, write):
            yield stmt, value
    for node in walk_ast(facts.func):
        if not isinstance(node, _OTHER_BINDINGS) or not reaches(node):
            continue
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None and any(isinstance(n, ast.Name) and n.id == name
                                                          for n in walk_ast(item.optional_vars)):
                    yield node, item.context_expr
        elif isinstance(node, getattr(ast, "Match", ())):  # `match x: case beta:` (or a pattern capturing a part)
            if any(getattr(p, "name", None) == name or getattr(p, "rest", None) == name
                   for case in node.cases for p in walk_ast(case.pattern)):
                yield node, node.subject
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _FILLS \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == name:
            for arg in node.args:  # `xs.append(x)`: `xs` now holds `x`
                yield node, arg


def held_sources(facts: FunctionFacts, name: str, write: ast.AST, loops: Sequence[ast.AST]) -> Iterator[Tuple[str, int]]:
    """(source, line): each other local or parameter that a binding of ``name`` which may reach ``write`` (before it,
    or anywhere in a loop around it) may hold without the walk knowing (:attr:`FunctionFacts.untracked`), and what
    the bindings of those names before the write may hold in turn (two levels)."""
    start = (write.lineno, write.col_offset)
    spans = [(loop.lineno, loop.end_lineno or loop.lineno) for loop in loops]

    def reaches(node: ast.AST) -> bool:
        return (node.lineno, node.col_offset) < start or any(lo <= node.lineno <= hi for lo, hi in spans)

    def named(value: ast.AST, skip: str) -> Iterator[ast.Name]:
        inner = {n.id for n in walk_ast(value) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        inner |= {a.arg for n in walk_ast(value) if isinstance(n, ast.Lambda) for a in n.args.args}
        for load in walk_ast(value):
            if isinstance(load, ast.Name) and isinstance(load.ctx, ast.Load) and load.id != skip \
                    and load.id not in inner and (facts.is_local(load.id) or facts.is_param(load.id)):
                yield load

    seen: Set[str] = {name}
    todo: List[Tuple[str, int, bool]] = [(name, 0, True)]
    while todo:
        held, depth, only_untracked = todo.pop()
        for stmt, value in _bindings(facts, held, reaches, write):
            position = (value.lineno, value.col_offset)
            walked = position in facts.tracked or position in facts.untracked
            if only_untracked and isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) \
                    and position in facts.tracked and position not in facts.untracked:
                continue  # the walk knows what it holds (its origins decide); one not walked yet may hold anything
            assigned = isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.NamedExpr))
            filled = isinstance(stmt, ast.Call)  # `xs.append(x)`: the container is the holder
            for load in named(value, held):
                if load.id not in seen and _may_flow(facts, load, value, held=not (only_untracked or filled),
                                                     walked=walked and assigned):
                    seen.add(load.id)
                    yield load.id, getattr(stmt, "lineno", 0)
                    if depth < 2:
                        todo.append((load.id, depth + 1, False))
