"""Containers that hold the tensor a local name holds, for IPV007's later reads (:func:`containers_holding`).

``feats.append(x)`` keeps a reference to the tensor ``x`` holds, not a copy (Python's list stores the object:
https://docs.python.org/3/tutorial/datastructures.html). An in-place layer applied to ``x`` afterwards
(``x = self.relu(x)`` with ``nn.ReLU(inplace=True)``) changes the element too, so a later read of ``feats``
sees the layer's output where the code meant the value before it (a feature pyramid that keeps each stage's
pre-activation output). The same holds for ``feats = [x, y]``, ``feats += [x]``, ``feats.extend([x])``,
``feats.insert(0, x)``, ``feats[k] = x`` and ``outs = {"a": x}``.

In a loop the element may be written on the next pass: ``for blk in blocks: x = self.act(x); x = blk(x);
outs.append(x)`` stores ``blk``'s output, which the next pass's ``self.act`` writes.
"""
from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from .fixplan.facts import LOOPS, FunctionFacts

#: list and deque methods that store their argument (the element's position among the arguments)
_STORING = {"append": 0, "appendleft": 0, "insert": 1}
#: list and deque methods that store the elements of their (literal) argument
_STORING_ALL = frozenset({"extend", "extendleft"})
#: methods of a container that store or drop elements without reading them (no tensor has one of these names)
CONTAINER_MUTATORS = frozenset(_STORING) | _STORING_ALL | {"clear"}


def _holding(facts: FunctionFacts, load: ast.Name) -> Optional[str]:
    """The local container name that ``load`` (a load of the tensor's name) stores its tensor into, if any."""
    parent = facts.parent(load)
    if isinstance(parent, (ast.List, ast.Tuple)) or isinstance(parent, ast.Dict) and any(
            v is load for v in parent.values):
        literal, parent = parent, facts.parent(parent)
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            return parent.targets[0].id  # `feats = [x, y]`
        if isinstance(parent, ast.AugAssign) and isinstance(parent.target, ast.Name) and isinstance(parent.op, ast.Add):
            return parent.target.id  # `feats += [x]`
        if isinstance(parent, ast.Call) and literal in parent.args and isinstance(parent.func, ast.Attribute) \
                and parent.func.attr in _STORING_ALL and isinstance(parent.func.value, ast.Name):
            return parent.func.value.id  # `feats.extend([x])`
        return None
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) \
            and isinstance(parent.func.value, ast.Name) and parent.func.attr in _STORING:
        position = _STORING[parent.func.attr]
        if len(parent.args) == position + 1 and parent.args[position] is load and not parent.keywords:
            return parent.func.value.id  # `feats.append(x)`
        return None
    if isinstance(parent, ast.Assign) and parent.value is load and len(parent.targets) == 1:
        target = parent.targets[0]
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            return target.value.id  # `feats[k] = x`
    return None


def _statement(facts: FunctionFacts, node: ast.AST) -> Optional[ast.stmt]:
    while node is not None and not isinstance(node, ast.stmt):
        node = facts.parent(node)
    return node


def _exclusive(facts: FunctionFacts, a: ast.stmt, b: ast.stmt) -> bool:
    """``a`` and ``b`` stand in different arms of one ``if``/``try``/``match`` (no path runs both)."""
    path_a, path_b = facts.path_to(a), facts.path_to(b)
    common = 0
    while common < min(len(path_a), len(path_b)) and path_a[common] is path_b[common]:
        common += 1
    if common == 0 or common >= min(len(path_a), len(path_b)):
        return False
    parent, arm_a, arm_b = path_a[common - 1], path_a[common], path_b[common]
    if not isinstance(parent, (ast.If, ast.Try, ast.Match)) and type(parent).__name__ != "TryStar":
        return False
    fields = [f for f in parent._fields if isinstance(getattr(parent, f, None), list)]
    field_a = next(f for f in fields if any(n is arm_a for n in getattr(parent, f)))
    field_b = next(f for f in fields if any(n is arm_b for n in getattr(parent, f)))
    if isinstance(parent, ast.If):
        return field_a != field_b
    # a `try` body runs before its handlers and `else:`, but a handler never runs with `else:` or another handler
    return field_a != field_b and "body" not in (field_a, field_b) and "finalbody" not in (field_a, field_b) \
        or field_a == field_b == "handlers" and arm_a is not arm_b or isinstance(parent, ast.Match) and arm_a is not arm_b


def _binds(facts: FunctionFacts, name: str, binds) -> List[Tuple[int, int]]:
    """The positions of the statements of the function that bind ``name``."""
    return [(a.lineno, a.col_offset) for a in facts.assigns if binds(a, name)]


def containers_holding(facts: FunctionFacts, stmt: ast.stmt, name: str, binds) -> List[Tuple[str, bool]]:
    """The local containers that hold, when ``stmt`` runs, the tensor ``name`` holds then (each with whether only on
    some paths): stored before ``stmt`` with no binding of ``name`` or of the container in between, or stored after
    ``stmt`` in a loop around both, so that the loop's next pass reaches ``stmt`` with the stored tensor (no binding
    of ``name`` in the loop before ``stmt`` or after the store, and the loop's own target is not ``name``).
    ``binds(assign, name)``: whether a binding statement of :attr:`FunctionFacts.assigns` binds ``name``."""
    start = (stmt.lineno, stmt.col_offset)
    path = facts.path_to(stmt)
    ancestors = {id(n) for n in path}
    loop = next((n for n in reversed(path[:-1]) if isinstance(n, LOOPS)), None)
    stores = _binds(facts, name, binds)
    out: List[Tuple[str, bool]] = []
    for load in facts.by_name.get(name, ((), []))[1]:
        if id(load) in facts.captured_loads:
            continue  # (a nested function or lambda stores it when, and if, it runs)
        container = _holding(facts, load)
        if container is None or container == name or any(c == container for c, _ in out):
            continue
        held = _statement(facts, load)
        if held is None or held is stmt:
            continue
        at = (held.lineno, held.col_offset)
        rebound = _binds(facts, container, binds)
        if at < start:
            if _exclusive(facts, held, stmt):
                continue
            between = [p for p in stores if at < p < start]
            if any(at < p < start for p in rebound if p != at):
                continue
            if any(id(facts.parent(a)) in ancestors for a in facts.assigns
                   if at < (a.lineno, a.col_offset) < start and binds(a, name)):
                continue  # `name` bound again, on every path to `stmt`, after the store
            out.append((container, bool(between)))
        elif loop is not None and any(n is loop for n in facts.path_to(held)):
            if isinstance(loop, (ast.For, ast.AsyncFor)) and any(
                    isinstance(n, ast.Name) and n.id in (name, container) for n in ast.walk(loop.target)):
                continue
            first, last = (loop.lineno, loop.col_offset), (loop.end_lineno or loop.lineno, loop.end_col_offset or 0)
            if any(first <= p < start or at < p <= last for p in stores):
                continue
            if any(first <= p <= last for p in rebound if p != at):
                continue  # a new container each pass
            conditional = any(isinstance(n, (ast.If, ast.Try, ast.While, ast.For, ast.AsyncFor, ast.With))
                              for n in facts.path_to(held)[facts.path_to(held).index(loop) + 1:-1])
            out.append((container, conditional))
    return out
