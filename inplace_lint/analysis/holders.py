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

from .astutil import last_name, walk_ast
from .fixplan.bindings import shared_base
from .consumers import exclusive, flows_into
from .fixplan.facts import LOOPS, FunctionFacts
from .layer_elements import loop_targets

#: list and deque methods that store their argument (the element's position among the arguments)
_STORING = {"append": 0, "appendleft": 0, "insert": 1}
#: list and deque methods that store the elements of their (literal) argument
_STORING_ALL = frozenset({"extend", "extendleft"})
#: methods of a container that store or drop elements without reading them (no tensor has one of these names)
CONTAINER_MUTATORS = frozenset(_STORING) | _STORING_ALL | {"clear"}


def _stored(facts: FunctionFacts, load: ast.Name) -> ast.expr:
    """The expression around ``load`` that shares its storage (``x``, ``x[:, :1]``, ``x.detach()``,
    ``x.view(n, -1)``: :func:`~.fixplan.bindings.shared_base`): what a container stores when it stores that."""
    node: ast.expr = load
    while True:
        parent = facts.parent(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            call = facts.parent(parent)  # (`x.detach()`: the method's call, not its attribute)
            parent = call if isinstance(call, ast.Call) and call.func is parent else parent
        if not isinstance(parent, ast.expr) or shared_base(parent) is not load:
            return node
        node = parent


def list_or_dict(facts: FunctionFacts, name: str) -> bool:
    """Every binding of the local ``name`` in the function is a list or dict (``[]``, ``{}``, ``[None] * n``,
    ``list()``, ``dict()``, ``OrderedDict()``, ``defaultdict(list)``, a comprehension), so ``name[k] = x`` stores a
    reference; a tensor's item assignment copies the values instead."""
    values = [a.value for a in facts.assigns if isinstance(a, (ast.Assign, ast.AnnAssign)) and a.value is not None
              and any(isinstance(t, ast.Name) and t.id == name
                      for t in (a.targets if isinstance(a, ast.Assign) else [a.target]))]
    bound = [a for a in facts.assigns if a.__class__ is not ast.Assign and a.__class__ is not ast.AnnAssign
             or a.__class__ is ast.Assign and any(not isinstance(t, ast.Name) for t in a.targets)]
    if not values or any(assign_binds(a, name) for a in bound):
        return False  # (`for feats in ...`, `feats := ...`)
    return all(isinstance(v, (ast.List, ast.Dict, ast.ListComp, ast.DictComp))
               or isinstance(v, ast.BinOp) and isinstance(v.op, ast.Mult) and isinstance(v.left, ast.List)
               or isinstance(v, ast.Call) and last_name(v.func) in _CONTAINER_TYPES for v in values)


#: statements whose body may not run on a path through them
_BRANCHING = (ast.If, ast.Try, ast.While, ast.For, ast.AsyncFor, ast.Match)
#: constructors of the containers whose item assignment stores a reference
_CONTAINER_TYPES = frozenset({"list", "dict", "OrderedDict", "defaultdict"})


def _holding(facts: FunctionFacts, load: ast.Name) -> Optional[str]:
    """The local container name that ``load`` (a load of the tensor's name) stores its tensor, or a view of it,
    into, if any."""
    stored = _stored(facts, load)
    parent = facts.parent(stored)
    if isinstance(parent, (ast.List, ast.Tuple)) or isinstance(parent, ast.Dict) and any(
            v is stored for v in parent.values):
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
        if len(parent.args) == position + 1 and parent.args[position] is stored and not parent.keywords:
            return parent.func.value.id  # `feats.append(x)`
        return None
    if isinstance(parent, ast.Assign) and parent.value is stored and len(parent.targets) == 1:
        target = parent.targets[0]
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                and list_or_dict(facts, target.value.id):
            return target.value.id  # `feats[k] = x` (not `buf[t] = x` into a tensor: a copy of the values)
    return None


def binds(stmt: ast.stmt, name: str) -> bool:
    """``stmt`` (a simple statement) binds ``name`` again or deletes it."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        targets = [stmt.target]
    elif isinstance(stmt, ast.Delete):
        targets = stmt.targets
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.split(".")[0]) == name for a in stmt.names)
    else:
        return False
    return any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)
               if not isinstance(t, (ast.Attribute, ast.Subscript)))


def assign_binds(node: ast.AST, name: str) -> bool:
    """A binding node of :attr:`FunctionFacts.assigns` (``=``, annotated ``=``, ``for``, ``:=``) binds ``name``."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        return binds(node, name)
    target = node.target if isinstance(node, (ast.For, ast.AsyncFor, ast.NamedExpr)) else None
    return target is not None and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target))


def statement_of(facts: FunctionFacts, node: ast.AST) -> Optional[ast.stmt]:
    while node is not None and not isinstance(node, ast.stmt):
        node = facts.parent(node)
    return node


def unpacked_apart(facts: FunctionFacts, stmt: ast.stmt, a: str, b: str) -> bool:
    """The last bindings of ``a`` and ``b`` before ``stmt`` in source order are one unpacking, at different positions,
    of a value that is no tuple literal (``x_v, x_e = self.block(x)``): two elements of what a call returned, not one
    tensor, whatever origins the analysis gave them (a project module's forward returning ``self.a(x), self.a(x) * 2``
    gives both the call's origin; dhg-bench's EHNN layers, set CR, a false IPV007)."""
    start = (stmt.lineno, stmt.col_offset)

    def last(name: str) -> Optional[ast.AST]:
        found = [n for n in facts.assigns if (n.lineno, n.col_offset) < start and assign_binds(n, name)]
        return max(found, key=lambda n: (n.lineno, n.col_offset)) if found else None

    unpacking = last(a)
    if not (isinstance(unpacking, ast.Assign) and unpacking is last(b) and len(unpacking.targets) == 1
            and isinstance(unpacking.targets[0], (ast.Tuple, ast.List))
            and not isinstance(unpacking.value, (ast.Tuple, ast.List))):
        return False
    names = [e.id if isinstance(e, ast.Name) else None for e in unpacking.targets[0].elts]
    return a in names and b in names and names.index(a) != names.index(b)


def _self_view(node: ast.AST, name: str) -> bool:
    """``name = name.contiguous()``, ``name = name.view(n, -1)``: the name bound again to its own storage."""
    base = shared_base(node.value) if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None \
        else None
    return isinstance(base, ast.Name) and base.id == name


def _must_bind(stmt: ast.stmt, name: str) -> bool:
    """``stmt`` binds ``name`` to other storage on every path through it (both arms of an ``if``, a ``with``
    body, a ``try`` body and each handler, or its ``finally:``); a loop may run no pass."""
    def block(stmts) -> bool:
        return any(_must_bind(s, name) for s in stmts)
    if isinstance(stmt, ast.If):
        return block(stmt.body) and block(stmt.orelse)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return block(stmt.body)
    if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
        return block(stmt.body) and all(block(h.body) for h in stmt.handlers) or block(stmt.finalbody)
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        return binds(stmt, name) and not _self_view(stmt, name)
    return False


def _between(facts: FunctionFacts, held: ast.stmt, stmt: ast.stmt) -> List[ast.stmt]:
    """The statements that run on every path from ``held`` to ``stmt`` (``held`` before it in one pass): those after
    ``held`` in each block around it, and those before ``stmt`` in each block around it, up to the block that holds
    both (exits aside)."""
    held_path, path = facts.path_to(held), facts.path_to(stmt)
    common = 0
    while common < min(len(held_path), len(path)) and held_path[common] is path[common]:
        common += 1
    out: List[ast.stmt] = []
    for chain, after in ((held_path, True), (path, False)):
        for parent, child in zip(chain[common - 1:], chain[common:]):
            block = next((b for b in (getattr(parent, f, None) for f in ("body", "orelse", "finalbody"))
                          if isinstance(b, list) and any(s is child for s in b)), None)
            if block is None:
                continue  # (a handler, a case: what runs around it is not every path's)
            index = next(i for i, s in enumerate(block) if s is child)
            if parent is chain[common - 1] and common < min(len(held_path), len(path)):
                other = (path if after else held_path)[common]
                if any(s is other for s in block):  # the shared block: only what stands between the two
                    lo, hi = sorted((index, next(i for i, s in enumerate(block) if s is other)))
                    out.extend(block[lo + 1:hi] if after else [])
                    continue
            out.extend(block[index + 1:] if after else block[:index])
    return out


def rebound_between(facts: FunctionFacts, held: ast.stmt, stmt: ast.stmt, name: str) -> Optional[bool]:
    """How ``name`` is bound again to other storage between ``held`` and ``stmt`` (``held`` before it): True on
    every path (a statement that runs on each path from one to the other binds it: :func:`_must_bind`), False on
    some paths (a binding in between that may run on the way: not in another arm of an ``if`` around ``stmt``),
    None on none."""
    if any(_must_bind(s, name) for s in _between(facts, held, stmt)):
        return True
    at, start = (held.lineno, held.col_offset), (stmt.lineno, stmt.col_offset)
    if any(at < (a.lineno, a.col_offset) < start and assign_binds(a, name) and not _self_view(a, name)
           and not exclusive(a, stmt, facts.parents) for a in facts.assigns):
        return False
    return None


def rebound_without_grad(facts: FunctionFacts, held: ast.stmt, stmt: ast.stmt, name: str) -> bool:
    """A plain assignment that runs on every path from ``held`` to ``stmt`` (``held`` before it) binds ``name`` to
    a value no gradient passes into from the old one (each read of ``name`` in it ends without one:
    ``times = torch.ceil(times).long()``, ``a = a.detach()``: the same storage, out of autograd), so ``stmt``'s reads of
    ``name`` cannot reach what ``held`` left there."""
    if (stmt.lineno, stmt.col_offset) <= (held.lineno, held.col_offset):
        return False
    return any(isinstance(s, ast.Assign) and binds(s, name) and all(
        flows_into(n, facts.parents) == set() for n in walk_ast(s.value)
        if isinstance(n, ast.Name) and n.id == name) for s in _between(facts, held, stmt))


def _leaves_loop(facts: FunctionFacts, held: ast.stmt, loop: ast.AST) -> bool:
    """A ``break``, ``return`` or ``raise`` follows ``held`` on every path to the end of the loop's pass."""
    node: ast.AST = held
    while node is not loop:
        parent = facts.parent(node)
        block = next((b for b in (getattr(parent, f, None) for f in ("body", "orelse", "finalbody"))
                      if isinstance(b, list) and any(s is node for s in b)), [])
        index = next((i for i, s in enumerate(block) if s is node), len(block))
        if any(isinstance(s, (ast.Break, ast.Return, ast.Raise)) for s in block[index + 1:]):
            return True
        node = parent
    return False


def _positions(facts: FunctionFacts, name: str) -> List[Tuple[int, int]]:
    """The positions of the statements of the function that bind ``name`` to other storage."""
    return [(a.lineno, a.col_offset) for a in facts.assigns if assign_binds(a, name) and not _self_view(a, name)]


def containers_holding(facts: FunctionFacts, stmt: ast.stmt, name: str,
                       within: Optional[ast.AST] = None) -> List[Tuple[str, bool]]:
    """The local containers that hold, when ``stmt`` runs, the tensor ``name`` holds then (each with whether only on
    some paths): stored before ``stmt`` with no binding of ``name`` (to other storage) or of the container on every
    path in between, or stored after ``stmt`` in a loop around both, so that the loop's next pass reaches ``stmt``
    with the stored tensor (no binding of ``name`` in the loop before ``stmt`` or after the store, the loop's own
    target is not ``name``, and the pass does not leave the loop after the store). A container whose item is
    assigned after ``stmt`` (``feats[-1] = x``: the element may be replaced) is left out.
    ``within`` (a loop around ``stmt``): only stores inside it, and not one an ``if`` that reads the loop's own
    names guards (``if i in self.taps: feats.append(x)``: which passes store is the data's to say)."""
    start = (stmt.lineno, stmt.col_offset)
    path = facts.path_to(stmt)
    ancestors = {id(n) for n in path}
    loop = next((n for n in reversed(path[:-1]) if isinstance(n, LOOPS)), None)
    stores = _positions(facts, name)
    out: List[Tuple[str, bool]] = []
    for load in facts.by_name.get(name, ((), []))[1]:
        if id(load) in facts.captured_loads:
            continue  # (a nested function or lambda stores it when, and if, it runs)
        container = _holding(facts, load)
        held = statement_of(facts, load)
        if within is not None and held is not None and not _stored_by_the_loop(facts, held, within):
            continue
        if container is None or container == name or held is None or held is stmt \
                or _item_assigned_after(facts, container, start, held):
            continue
        at = (held.lineno, held.col_offset)
        if at < start:
            replaced = rebound_between(facts, held, stmt, container)
            if exclusive(held, stmt, facts.parents) or replaced is True:
                continue
            again = rebound_between(facts, held, stmt, name)
            guarded = any(isinstance(n, _BRANCHING) and id(n) not in ancestors for n in facts.path_to(held)[:-1])
            if again is not True:  # (`if keep: feats.append(x)`, or `x` or `feats` bound again on some paths)
                _add(out, container, again is False or guarded or replaced is False)
        elif loop is not None and any(n is loop for n in facts.path_to(held)):
            if isinstance(loop, (ast.For, ast.AsyncFor)) and any(
                    isinstance(n, ast.Name) and n.id in (name, container) for n in ast.walk(loop.target)):
                continue
            first, last = (loop.lineno, loop.col_offset), (loop.end_lineno or loop.lineno, loop.end_col_offset or 0)
            if any(first <= p < start or at < p <= last for p in stores) or _leaves_loop(facts, held, loop):
                continue
            if any(first <= (a.lineno, a.col_offset) <= last and (a.lineno, a.col_offset) != at
                   for a in facts.assigns if assign_binds(a, container)):
                continue  # a new container each pass
            inside = facts.path_to(held)
            _add(out, container, any(isinstance(n, _BRANCHING) for n in inside[inside.index(loop) + 1:-1]))
    return out


def _add(out: List[Tuple[str, bool]], container: str, may: bool) -> None:
    """One entry per container: held on every path wins over held on some (the wording of the finding)."""
    for i, (known, known_may) in enumerate(out):
        if known == container:
            out[i] = (known, known_may and may)
            return
    out.append((container, may))


def _item_assigned_after(facts: FunctionFacts, container: str, start: Tuple[int, int], held: ast.stmt) -> bool:
    """An item of ``container`` is assigned after ``start`` where it may replace what ``held`` stored
    (``feats[-1] = x``); another string key than those ``held`` stored under (``outs["post"] = x`` after
    ``outs = {"pre": x}``) replaces nothing."""
    keys = {k.value for k in getattr(held.value, "keys", ()) if isinstance(k, ast.Constant)} \
        if isinstance(held, ast.Assign) and isinstance(held.value, ast.Dict) else None
    if isinstance(held, ast.Assign) and isinstance(held.targets[0], ast.Subscript):
        key = held.targets[0].slice
        keys = {key.value} if isinstance(key, ast.Constant) else None
    for a in facts.assigns:
        if isinstance(a, ast.Assign) and (a.lineno, a.col_offset) > start:
            for t in a.targets:
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == container and not (
                        keys is not None and isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str)
                        and t.slice.value not in keys):
                    return True
    return False


def _stored_by_the_loop(facts: FunctionFacts, held: ast.stmt, loop: ast.AST) -> bool:
    """``held`` is inside ``loop`` and no ``if`` between them tests a name the loop binds on each pass."""
    path = facts.path_to(held)
    if not any(n is loop for n in path):
        return False
    names = loop_targets(loop)
    return not any(isinstance(n, ast.If) and any(isinstance(m, ast.Name) and m.id in names for m in ast.walk(n.test))
                   for n in path[path.index(loop) + 1:-1])
