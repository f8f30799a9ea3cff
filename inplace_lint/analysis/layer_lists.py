"""What a list of layers ends with, where ``nn.Sequential(*layers)`` is built from it.

An MLP builder writes its stack as a list and drops the last activation::

    layers = []
    for h1, h2 in zip(l1, l2):
        layers += [nn.Linear(h1, h2), act_fn]
    layers.pop()
    self.net = nn.Sequential(*layers)

``self.net(x)`` returns what the list's last layer returns (``nn.Sequential.forward`` calls its modules in
order and returns the last one's output: https://pytorch.org/docs/stable/generated/torch.nn.Sequential.html),
so when that layer is one of torch's own, ``self.net`` is torch's code and no unknown head (a custom autograd
``Function``) can have made its output. :func:`list_tail` follows the list through the statements of the
function that builds it, on every path, and gives the layers it may end with; anything else done with the list
(passed to a call, an item assigned, bound again otherwise, used in ``try``) leaves it unknown.
"""
from __future__ import annotations

import ast
from typing import Callable, List, Optional, Sequence, Tuple

#: a state of the list: its last elements known, in order, and whether they are the whole list
_State = Tuple[Tuple[ast.expr, ...], bool]
_MAX_STATES = 8


class _Unknown(Exception):
    """The list's end cannot be told on some path."""


def list_tail(func: ast.AST, name: str, at: ast.stmt) -> Optional[List[Tuple[ast.expr, ...]]]:
    """The last elements (in order) the list bound to the local ``name`` of ``func`` may hold when ``at`` (a
    statement of ``func``) runs, one tuple per path (loops run once or more; a path where ``pop()`` empties an
    empty list raises there and is dropped); None when any path leaves them unknown."""
    try:
        states, reached = _run(func.body, [((), False)], name, at)
    except _Unknown:
        return None
    if not reached or not states:
        return None
    return [elements for elements, _ in states]


def _run(body: Sequence[ast.stmt], states: List[_State], name: str, at: ast.stmt) -> Tuple[List[_State], bool]:
    for stmt in body:
        if stmt is at:
            return states, True
        if not _mentions(stmt, name):
            if _contains(stmt, at):
                raise _Unknown  # `at` is inside a block that does not touch the list: keep it simple
            continue
        states = _step(stmt, states, name, at)
        if isinstance(states, tuple):
            return states
        if len(states) > _MAX_STATES:
            raise _Unknown
    return states, False


def _step(stmt: ast.stmt, states: List[_State], name: str, at: ast.stmt):
    """The states after ``stmt`` (a statement that names the list), or ``(states, True)`` when ``at`` is in it."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and _is(stmt.targets[0], name):
        if not isinstance(stmt.value, (ast.List, ast.Tuple)) or _mentions(stmt.value, name):
            raise _Unknown
        return [_literal(stmt.value)]
    if isinstance(stmt, ast.AugAssign) and _is(stmt.target, name) and isinstance(stmt.op, ast.Add):
        return [_extend(s, stmt.value, name) for s in states]
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute) \
            and _is(stmt.value.func.value, name) and not stmt.value.keywords:
        call, method = stmt.value, stmt.value.func.attr
        if method == "append" and len(call.args) == 1 and not _mentions(call.args[0], name):
            return [(elements + (call.args[0],), whole) for elements, whole in states]
        if method == "extend" and len(call.args) == 1:
            return [_extend(s, call.args[0], name) for s in states]
        if method == "pop" and (not call.args or _minus_one(call.args[0])):
            out = []
            for elements, whole in states:
                if elements:
                    out.append((elements[:-1], whole))
                elif not whole:
                    raise _Unknown
            return out  # (a whole list that is empty: `pop()` raises on that path, which ends there)
        raise _Unknown
    if isinstance(stmt, (ast.For, ast.While)) and not stmt.orelse and not _mentions(
            stmt.iter if isinstance(stmt, ast.For) else stmt.test, name) \
            and not any(isinstance(n, (ast.Break, ast.Continue, ast.Return, ast.Raise)) for n in ast.walk(stmt)):
        # (a pass that may stop early, `if i == n - 1: break`, does not run to its end)
        # once or more: the last pass appends to whatever the earlier passes left (an unknown prefix)
        after, reached = _run(stmt.body, [((), False)], name, at)
        if reached or any(not elements for elements, _ in after):
            raise _Unknown
        return states + [(elements, False) for elements, _ in after]
    if isinstance(stmt, ast.If) and not _mentions(stmt.test, name):
        arms = []
        for arm in (stmt.body, stmt.orelse):
            got, reached = _run(arm, list(states), name, at)
            if reached:
                return got, True
            arms.extend(got)
        return arms
    if isinstance(stmt, ast.With) and not any(_mentions(item, name) for item in stmt.items):
        got, reached = _run(stmt.body, states, name, at)
        return (got, True) if reached else got
    raise _Unknown


def _extend(state: _State, value: ast.expr, name: str) -> _State:
    if not isinstance(value, (ast.List, ast.Tuple)) or _mentions(value, name):
        raise _Unknown
    added, whole = _literal(value)
    return (added, False) if not whole else (state[0] + added, state[1])


def _literal(value: ast.expr) -> _State:
    """A list or tuple display: the elements after its last ``*starred`` one, whole when there is none."""
    elements = list(value.elts)
    starred = [i for i, e in enumerate(elements) if isinstance(e, ast.Starred)]
    return (tuple(elements[starred[-1] + 1:]), False) if starred else (tuple(elements), True)


def _minus_one(node: ast.expr) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
        and isinstance(node.operand, ast.Constant) and node.operand.value == 1


def _is(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _contains(node: ast.AST, inner: ast.AST) -> bool:
    return any(n is inner for n in ast.walk(node))


#: a list's first element, as far as the code shows it: the element, None for an empty list, or :data:`UNKNOWN_HEAD`
UNKNOWN_HEAD = ast.Constant(value=Ellipsis)
#: (first element, how many elements the list holds at least)
_Head = Tuple[Optional[ast.expr], int]


def list_heads(func: ast.AST, name: str, at: ast.stmt, depth: int = 0) -> Optional[List[Optional[ast.expr]]]:
    """The first element the list bound to the local ``name`` of ``func`` may hold when ``at`` runs, one per path
    (None for an empty list, :data:`UNKNOWN_HEAD` where the code does not show it: after ``rep = rep[1:]``); None
    when anything else is done with the list. Xception's block builds ``rep`` with ``rep.append(self.relu)`` first,
    then drops it (``rep = rep[1:]``) or replaces it (``rep[0] = nn.ReLU(inplace=False)``) by a flag."""
    try:
        states, reached = _run_heads(func.body, [(None, 0)], name, at, (func, depth))
    except _Unknown:
        return None
    return [head for head, _ in states] if reached and states else None


def _run_heads(body: Sequence[ast.stmt], states: List[_Head], name: str, at: ast.stmt, where) -> Tuple[List[_Head], bool]:
    for stmt in body:
        if stmt is at:
            return states, True
        if not _mentions(stmt, name):
            if _contains(stmt, at):
                raise _Unknown
            continue
        states = _head_step(stmt, states, name, at, where)
        if isinstance(states, tuple):
            return states
        states = list(dict.fromkeys(states))[:_MAX_STATES * 2]
    return states, False


def _head_step(stmt: ast.stmt, states: List[_Head], name: str, at: ast.stmt, where):
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target, value = stmt.targets[0], stmt.value
        if _is(target, name) and isinstance(value, ast.BinOp) and not _mentions(value, name):
            return _concatenated(value, stmt, where)  # `model = down + [submodule] + up`
        if _is(target, name) and isinstance(value, (ast.List, ast.Tuple)) and not _mentions(value, name):
            elements = list(value.elts)
            if elements and isinstance(elements[0], ast.Starred):
                return [(UNKNOWN_HEAD, 0)]
            return [(elements[0] if elements else None, len(elements))]
        if _is(target, name) and isinstance(value, ast.Subscript) and _is(value.value, name):
            return [(UNKNOWN_HEAD, 0) for _ in states[:1]]  # `rep = rep[1:]`: the head is another element
        if isinstance(target, ast.Subscript) and _is(target.value, name) and isinstance(target.slice, ast.Constant) \
                and target.slice.value == 0 and not _mentions(value, name):
            return [(value, max(n, 1)) for _, n in states]  # `rep[0] = nn.ReLU(inplace=False)`
        raise _Unknown
    if isinstance(stmt, ast.AugAssign) and _is(stmt.target, name) and isinstance(stmt.op, ast.Add) \
            and isinstance(stmt.value, (ast.List, ast.Tuple)) and not _mentions(stmt.value, name):
        return [_add_heads(s, list(stmt.value.elts)) for s in states]
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute) \
            and _is(stmt.value.func.value, name) and not stmt.value.keywords \
            and not any(_mentions(a, name) for a in stmt.value.args):
        call, method = stmt.value, stmt.value.func.attr
        if method == "append" and len(call.args) == 1:
            return [_add_heads(s, [call.args[0]]) for s in states]
        if method == "extend" and len(call.args) == 1 and isinstance(call.args[0], (ast.List, ast.Tuple)):
            return [_add_heads(s, list(call.args[0].elts)) for s in states]
        if method == "insert" and len(call.args) == 2 and isinstance(call.args[0], ast.Constant) \
                and call.args[0].value == 0:
            return [(call.args[1], n + 1) for _, n in states]
        raise _Unknown
    if isinstance(stmt, (ast.For, ast.While)) and not stmt.orelse and not _mentions(
            stmt.iter if isinstance(stmt, ast.For) else stmt.test, name) \
            and not any(isinstance(n, (ast.Break, ast.Return, ast.Raise)) for n in ast.walk(stmt)):
        after, reached = _run_heads(stmt.body, list(states), name, at, where)  # (no pass, or one: no second head)
        if reached:
            raise _Unknown
        return states + after
    if isinstance(stmt, ast.If) and not _mentions(stmt.test, name):
        arms = []
        for arm in (stmt.body, stmt.orelse):
            got, reached = _run_heads(arm, list(states), name, at, where)
            if reached:
                return got, True
            arms.extend(got)
        return arms
    raise _Unknown


def _concatenated(value: ast.BinOp, stmt: ast.stmt, where) -> List[_Head]:
    """The heads of ``a + b + ...``: of the first operand that is not empty, each a list display or another local
    list (its heads where ``stmt`` runs)."""
    func, depth = where
    operands = []
    while isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        operands.insert(0, value.right)
        value = value.left
    operands.insert(0, value)
    states: List[_Head] = [(None, 0)]
    for operand in operands:
        if isinstance(operand, (ast.List, ast.Tuple)):
            heads = [_literal_head(operand)]
        elif isinstance(operand, ast.Name) and depth < 3:
            found = list_heads(func, operand.id, stmt, depth + 1)
            if found is None:
                raise _Unknown
            heads = [(h, 1 if h is not None else 0) for h in found]
        else:
            raise _Unknown
        states = [(h, n) if n or h is not None else (h2, n2) for h, n in states for h2, n2 in heads]
    return states


def _literal_head(value: ast.expr) -> _Head:
    elements = list(value.elts)
    if elements and isinstance(elements[0], ast.Starred):
        return UNKNOWN_HEAD, 0
    return (elements[0] if elements else None), len(elements)


def _add_heads(state: _Head, added: List[ast.expr]) -> _Head:
    head, n = state
    if any(isinstance(e, ast.Starred) for e in added[:1]) and head is None:
        return UNKNOWN_HEAD, n
    if head is None and added:
        return added[0], n + len(added)
    return head, n + len(added)


def added_heads(func: ast.AST, stack: Callable[[ast.expr], bool], built: ast.stmt) -> List[ast.expr]:
    """The layers that may come first in a stack built empty by ``built`` (``nn.Sequential()``, a statement of
    ``func``'s own body) and then filled by ``<stack>.add_module(name, layer)``, ``<stack>.append(layer)`` or
    ``<stack>.extend([...])`` (``stack`` says which receiver is the stack): each appends to ``_modules``, which
    ``Sequential.forward`` runs in order. On
    each path the first call after ``built`` is the first layer: a call in a loop may be the first (the loop's own
    first call), a loop may run no pass, a branch without a call leaves it to what follows, and a call every path
    makes ends the search (CAM++'s ``get_nonlinear`` adds "relu" first for a config string that starts with it). A
    layer added under a name that another call adds again is replaced where it stands: not known. Whether the stack
    is changed otherwise is the caller's to check."""
    calls = [n for n in ast.walk(func) if adds_layers(n) and stack(n.func.value)]
    body = getattr(func, "body", [])
    after = next((i for i, stmt in enumerate(body) if stmt is built), None)
    if after is None:
        return []
    heads, _ = _first_calls(body[after + 1:], {id(c) for c in calls})
    return [_added_layer(h) for h in heads if not _replaced(h, calls, body)]


def adds_layers(node: ast.AST) -> bool:
    """``node`` is ``<stack>.add_module(name, layer)``, ``<stack>.append(layer)`` or ``<stack>.extend(layers)``: it adds
    layers at the end of a stack (``<stack>`` is ``node.func.value``)."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords \
        and (node.func.attr == "add_module" and len(node.args) == 2
             or node.func.attr in ("append", "extend") and len(node.args) == 1)


def _added_layer(call: ast.Call) -> ast.expr:
    """The layer ``call`` adds first (``extend([a, b])``: ``a``; a list not written out: unknown, a ``None``)."""
    if call.func.attr != "extend":
        return call.args[-1]
    given = call.args[0]
    return given.elts[0] if isinstance(given, (ast.List, ast.Tuple)) and given.elts else ast.Constant(None)


def _replaced(call: ast.Call, calls: List[ast.Call], body: Sequence[ast.stmt]) -> bool:
    """``call`` adds a layer under a name that another call, which may run after it, adds again (the layer is then
    replaced where it stands); not one in the other arm of an ``if`` that holds both."""
    if call.func.attr != "add_module" or not isinstance(call.args[0], ast.Constant):
        return False
    others = [c for c in calls if c is not call and c.func.attr == "add_module" and isinstance(c.args[0], ast.Constant)
              and c.args[0].value == call.args[0].value]
    return any(not _exclusive(call, other, body) for other in others)


def _exclusive(a: ast.AST, b: ast.AST, body: Sequence[ast.stmt]) -> bool:
    """``a`` and ``b`` sit in the two arms of one ``if`` (only one of them runs each time it is reached)."""
    for node in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(node, ast.If):
            inside = [any(x is n for part in arm for n in ast.walk(part)) for arm in (node.body, node.orelse)
                      for x in (a, b)]
            if inside[0] and inside[3] or inside[1] and inside[2]:
                return True
    return False


def _first_calls(stmts: Sequence[ast.stmt], calls: set, counter: Optional[str] = None) -> Tuple[List[ast.Call], bool]:
    """The calls among ``calls`` (ids) that may run first in ``stmts``, and whether one surely runs. ``counter``: the
    name a ``for ... in range(n)`` binds, 0 on the first pass, so ``if i > 0:`` skips its body there (a pre-activation
    stack adds its activation from the second layer on)."""
    found: List[ast.Call] = []
    for stmt in stmts:
        if isinstance(stmt, ast.Expr) and id(stmt.value) in calls:
            return found + [stmt.value], True
        if isinstance(stmt, ast.If):
            test = _at_zero(stmt.test, counter)
            body, surely = _first_calls(stmt.body, calls, counter) if test is not False else ([], False)
            orelse, surely_else = _first_calls(stmt.orelse, calls, counter) if test is not True else ([], False)
            found += body + orelse
            if (surely or test is False) and (surely_else or test is True):
                return found, True
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            # (a pass runs the body's first; there may be none)
            found += _first_calls(stmt.body, calls, _range_from_zero(stmt))[0]
        elif isinstance(stmt, ast.Try):  # (the body's first, or a handler's after the body added nothing)
            arms = [_first_calls(stmt.body, calls, counter)] + [_first_calls(h.body, calls, counter)
                                                                for h in stmt.handlers]
            found += [c for heads, _ in arms for c in heads]
            if all(surely for _, surely in arms):
                return found, True
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            body, surely = _first_calls(stmt.body, calls, counter)
            found += body
            if surely:
                return found, True
        else:
            found += [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and id(n) in calls]
    return found, False


def _range_from_zero(loop: ast.stmt) -> Optional[str]:
    """The name ``for i in range(n)`` (or ``range(0, n)``) binds: 0 on the first pass."""
    if not isinstance(loop, ast.For) or not isinstance(loop.target, ast.Name) or not isinstance(loop.iter, ast.Call) \
            or not (isinstance(loop.iter.func, ast.Name) and loop.iter.func.id == "range") or loop.iter.keywords:
        return None
    args = loop.iter.args
    if len(args) == 1 or len(args) in (2, 3) and isinstance(args[0], ast.Constant) and args[0].value == 0:
        return loop.target.id
    return None


def _at_zero(test: ast.expr, counter: Optional[str]) -> Optional[bool]:
    """``test`` with ``counter`` 0: True, False, or None when it does not tell (``if i > 0:`` is False)."""
    if counter is None:
        return None
    if isinstance(test, ast.Name) and test.id == counter:
        return False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _at_zero(test.operand, counter)
        return None if inner is None else not inner
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name) \
            and test.left.id == counter and isinstance(test.comparators[0], ast.Constant) \
            and type(test.comparators[0].value) is int:
        k = test.comparators[0].value
        compare = {ast.Gt: 0 > k, ast.GtE: 0 >= k, ast.Lt: 0 < k, ast.LtE: 0 <= k, ast.Eq: 0 == k, ast.NotEq: 0 != k}
        return compare.get(type(test.ops[0]))
    return None