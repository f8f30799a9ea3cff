"""Tests of a local name that a later test repeats: the paths they rule out (a part of :class:`~.dataflow.Scope`).

``if strategy == "relax": x = optimize(...).expand(q, d)`` and, further on, ``if strategy == "spaced": x[i] = v``
with ``strategy`` not bound again in between: the expanded ``x`` never reaches the write, since one value is not
equal to both strings. The same holds for a flag copied to another local (``applied = force``) and for what an
``if`` without ``else`` leaves (``if force: delta = pinv(s) @ m``: the older ``delta`` is there only where
``force`` is false). Conditions on the function's parameters, not bound again, are :mod:`.conditions`'s; this
module adds the locals and decides when two tests on one value cannot both hold (:func:`conflict`).

A local's test is about one binding of the name (an *ident*, renewed at each binding in the walk's order, shared
by a plain copy ``a = b``): a binding between two tests makes them tests of different values. Tests are recorded
only where they stay true while the name is unbound:

- an equality or membership test against a string constant, and ``is None``/``is True``/``is False`` (a value
  that equals a string is a string; identity does not change without a binding);
- a truth or order test only on a name that holds an immutable value: a literal, a comparison, ``not``,
  ``isinstance``, a parameter whose default is a bool, number or string, or a copy of such a name (a list's
  truth changes when it is appended to);
- never on a name bound inside a loop that encloses the test (the test on the next pass is about another value),
  nor on one declared ``nonlocal`` or ``global`` in the function (a call may bind it).
"""
from __future__ import annotations

import ast
import itertools
import re
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from . import conditions
from .astutil import defaults, walk_ast, walk_statements
from .env import EMPTY, negate
from .summaries import derived_any

#: conditions on locals use a string index of their own (never a parameter index nor an ``init:`` flag)
LOCAL = "local:"
_ORDERED = frozenset({"<", "<=", ">", ">="})
_BUILTIN_BOOLS = frozenset({"isinstance", "issubclass", "hasattr", "callable", "bool", "len", "int", "float", "str"})
_IMMUTABLE = (bool, int, float, str, bytes, type(None))


class _Other:
    """A value equal to no constant (and true): what a name may hold besides the constants a test names."""

    def __eq__(self, other):
        return self is other

    __hash__ = object.__hash__


_OTHER = _Other()


def conflict(a: tuple, b: tuple) -> bool:
    """Two conditions on one value (same index) that no value meets both of: ``x`` and ``not x``, ``x == 'a'``
    and ``x == 'b'``, ``x is None`` and ``x``. Order tests decide only against their own negation."""
    if a[0] != b[0]:
        return False
    if a[3:] == b[3:]:
        return a[1] != b[1]
    if a[3] in _ORDERED or b[3] in _ORDERED:
        return False
    candidates = [a[4], b[4], None, True, False, 0, "", _OTHER]
    for c in (a, b):
        if c[3] == "in" and isinstance(c[4], tuple):
            candidates.extend(c[4])
    return not any(conditions.holds(a, (v,)) is not False and conditions.holds(b, (v,)) is not False
                   for v in candidates)


def conflicts(made: Sequence[tuple], now: Sequence[tuple]) -> bool:
    return any(conflict(a, b) for a in made for b in now)


def merge_reach(states: List[Dict[str, list]], envs: List[Dict[str, frozenset]]) -> Dict[str, list]:
    """The :attr:`~.dataflow.Scope.reach_conds` where paths join: an entry ``(origin, condition)`` of a name
    stays when every path on which the name holds the origin (or a view of it) has it."""
    if not any(states):
        return {}
    out: Dict[str, list] = {}
    for key in {k for s in states for k in s}:
        kept = []
        for entry in {e for s in states for e in s.get(key, ())}:
            held, _ = entry
            if all(entry in s.get(key, ()) for s, env in zip(states, envs)
                   if any(o.derived_from(held) for o in env.get(key, EMPTY))):
                kept.append(entry)
        if kept:
            out[key] = sorted(kept, key=repr)
    return out


def copy_reach(state: Dict[str, list]) -> Dict[str, list]:
    return {k: list(v) for k, v in state.items()} if state else {}


class LocalConditionsMixin:
    """Conditions on locals (a part of :class:`~.dataflow.Scope`; see the module's text)."""

    def local_condition(self, test: ast.expr) -> Optional[tuple]:
        """What ``test`` asks of one local (or a parameter bound again) as a condition, or None."""
        truth = True
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            truth, test = not truth, test.operand
        compared = conditions.comparison(test, attributes=True)
        if compared is not None:
            name, sense, op, constant = compared
            truth = truth == sense
            stable_test = (op in ("==", "in") and (isinstance(constant, str) or isinstance(constant, tuple)
                                                  and all(isinstance(c, str) for c in constant))) \
                or (op == "is" and constant in (None, True, False))
        elif isinstance(test, ast.Name):
            name, op, constant, stable_test = test.id, "", None, False
        elif isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name):
            name, op, constant, stable_test = f"{test.value.id}.{test.attr}", "", None, False
        else:
            return None
        if "." in name:
            return self._attribute_condition(name, truth, op, constant)
        if name in self.params and name not in self.assigned:
            return None  # a parameter's test is :meth:`param_condition`'s
        ident = self.cond_ids.get(name)
        if ident is None and name in self.params:
            ident = self._param_ident(name)
        if ident is None or not (stable_test or ident in self.stable_idents) or name in self._unsteady_names():
            return None
        return f"{LOCAL}{ident}", truth, (), op, constant

    def _attribute_condition(self, name: str, truth: bool, op: str, constant) -> Optional[tuple]:
        """A test of ``self.<attr>`` as a condition on a local, when the attribute holds the same immutable value
        all through this method (:func:`steady_attributes`, :meth:`_steady_in_function`): ``if not
        self._hold_samples:`` twice in one loop picks the same arm on every pass."""
        owner, _, attr = name.partition(".")
        if owner != self.self_name or not self._steady_in_function(attr):
            return None
        ident = self.cond_ids.get(name)
        if ident is None:
            ident = self.cond_ids[name] = next(_IDENTS)
            self.stable_idents.add(ident)
        return f"{LOCAL}{ident}", truth, (), op, constant

    def _steady_in_function(self, attr: str) -> bool:
        """``self.<attr>`` cannot change while this method runs: every assignment in the class gives it an
        immutable value, and this method neither assigns it nor calls (on ``self``) a method that does."""
        key = ("attribute", attr)
        got = self.local_cond_cache.get(key)
        if got is None:
            setters = self.steady_attrs.get(attr)
            got = setters is not None and self.func is not None and _keeps_attribute(self.func, self.self_name, attr,
                                                                                     setters)
            self.local_cond_cache[key] = got
        return got

    def carried_unread(self, node, before: Dict[str, frozenset]) -> bool:
        """Every name (or dotted key) whose value the first pass changed at the loop's head is bound again
        before any read of it on each pass (:func:`exposed_reads`): a second pass would read the same values."""
        exposed = self.local_cond_cache.get(("exposed", id(node)))
        if exposed is None:
            exposed = self.local_cond_cache[("exposed", id(node))] = exposed_reads(node)
        env = self.env
        return all(_KEY_ROOT.match(k).group(0) not in exposed
                   for k in env.keys() | before.keys() if env.get(k) != before.get(k))

    def _unsteady_names(self) -> FrozenSet[str]:
        """Names bound in a loop that encloses the statement walked, or shared with nested functions."""
        shared = self.local_cond_cache.get(None)
        if shared is None:
            shared = self.local_cond_cache[None] = frozenset(
                n for node in walk_statements(self.func) if isinstance(node, (ast.Nonlocal, ast.Global)) for n in node.names) \
                if self.func is not None else frozenset()
        if not self.loop_stack:
            return shared
        out = set(shared)
        for loop in self.loop_stack:
            bound = self.local_cond_cache.get(id(loop))
            if bound is None:
                bound = self.local_cond_cache[id(loop)] = frozenset(
                    n.id for n in walk_ast(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)))
            out |= bound
        return frozenset(out)

    def _param_ident(self, name: str) -> int:
        """The ident of parameter ``name``'s value on entry (stable when its default is immutable)."""
        ident = self.cond_ids[name] = next(_IDENTS)
        if self.param_default(name) and isinstance(self.param_default(name)[0], _IMMUTABLE):
            self.stable_idents.add(ident)
        return ident

    def new_ident(self, key: str, value: Optional[ast.expr]) -> None:
        """``key`` (a plain name) was bound to ``value``: a new ident, or a copy's (``a = b``)."""
        if isinstance(value, ast.Name) and value.id not in self.cond_ids and value.id in self.params:
            self._param_ident(value.id)  # `h = hold`, a copy of a parameter not tested yet
        if isinstance(value, ast.Name) and value.id in self.cond_ids:
            self.cond_ids[key] = self.cond_ids[value.id]
            return
        ident = self.cond_ids[key] = next(_IDENTS)
        if value is not None and _immutable(value, self.cond_ids, self.stable_idents):
            self.stable_idents.add(ident)

    def made_under_locals(self, origins: frozenset, first: int, last: int) -> None:
        """The steps and roots the statement walked (lines ``first``..``last``) made are made under
        :attr:`local_conds` (the first record stays)."""
        made = self.local_made
        for o in origins:
            for step in o.steps:
                if first <= step.line <= last and step.path is None and step not in made:
                    made[step] = self.local_conds
            if first <= o.root_line <= last and o.path is None:
                made.setdefault((o.root, o.root_text, o.root_line), self.local_conds)

    def made_contradicted(self, origin, now: Tuple[tuple, ...]) -> bool:
        """``origin`` was made (a step or its root) under conditions that those walked now rule out."""
        for table in (self.made_conds, self.local_made):
            if not table:
                continue
            for step in origin.steps:
                made = table.get(step)
                if made and conflicts(made, now):
                    return True
            made = table.get((origin.root, origin.root_text, origin.root_line))
            if made and conflicts(made, now):
                return True
        return False

    def _reach_under(self, node: ast.If, arms: List[Dict[str, frozenset]], mark: int) -> Dict[str, list]:
        """After ``if flag: ids = ids.clone()`` (a test on a parameter; both arms go on): what each arm alone
        bound is held only when the test is true (false for the other arm), :attr:`reach_conds`."""
        cond = self.param_condition(node.test) or self.local_condition(node.test)
        reach: Dict[str, list] = {}
        if cond is None:
            return reach
        body, other = arms
        for key in {k for k, _ in self.bindings[mark:]}:
            b, e = body.get(key, EMPTY), other.get(key, EMPTY)
            if b != e and not derived_any(b, e) and not derived_any(e, b):
                entries = [(o, cond) for o in b - e] + [(o, negate(cond)) for o in e - b]
                if entries:
                    reach[key] = entries
        return reach


_KEY_ROOT = re.compile(r"[^.\[]*")


def exposed_reads(loop) -> FrozenSet[str]:
    """The names a pass of ``loop`` may read before binding them in that pass: those its head reads, and those a
    statement of its body reads that no plain assignment earlier in the body (at its top level) has bound. A
    name bound only inside a compound statement (an ``if`` arm, an inner loop, a ``with``) counts as not bound."""
    head = loop.iter if isinstance(loop, (ast.For, ast.AsyncFor)) else loop.test
    exposed = {n.id for n in walk_ast(head) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    bound = {n.id for n in walk_ast(loop.target) if isinstance(n, ast.Name)} \
        if isinstance(loop, (ast.For, ast.AsyncFor)) else set()
    for statement in loop.body:
        exposed.update(n.id for n in walk_ast(statement)
                       if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in bound)
        # `beta *= 0.5` reads `beta` (its target is a store only in the tree)
        exposed.update(n.target.id for n in walk_ast(statement)
                       if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id not in bound)
        if isinstance(statement, ast.Assign):
            bound.update(n.id for t in statement.targets for n in walk_ast(t)
                         if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None \
                and isinstance(statement.target, ast.Name):
            bound.add(statement.target.id)
    return frozenset(exposed)


_IDENTS = itertools.count(1)
_IMMUTABLE_ANNOTATIONS = frozenset({"bool", "int", "float", "str"})


def _keeps_attribute(func: ast.AST, me: str, attr: str, setters: FrozenSet[str]) -> bool:
    """``func`` neither assigns ``me.<attr>`` nor calls a method in ``setters``, nor hands ``me`` itself to other
    code (``toggle(self)``, ``m = self``, ``vars(self)``) or calls ``super()`` (a base class's method may assign
    it)."""
    viewed = set()
    for n in walk_ast(func):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == me:
            viewed.add(id(n.value))
            if n.attr == attr and not isinstance(n.ctx, ast.Load) or n.attr in setters or n.attr == "__dict__":
                return False
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super":
            return False
    return all(id(n) in viewed for n in walk_ast(func) if isinstance(n, ast.Name) and n.id == me
               and isinstance(n.ctx, ast.Load))


def steady_attributes(cls: ast.ClassDef, nodes: Sequence[ast.AST]) -> Dict[str, FrozenSet[str]]:
    """``self.<attr>`` that each assignment in the class's methods makes an immutable value -> the methods other
    than ``__init__`` that assign it (``nodes``: the class's assignments, calls and loops,
    :func:`~.model_outputs.class_nodes`). An immutable value is a literal, a comparison, ``not``, ``bool(...)``,
    or a parameter of the method annotated ``bool``/``int``/``float``/``str`` or with such a literal default. An
    attribute assigned otherwise (another value, a tuple target, ``del``, ``+=``, a loop target) has no entry;
    a class with ``setattr(self, ...)`` has none at all."""
    methods = [(m.lineno, m.end_lineno or m.lineno, m) for m in cls.body
               if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.args.args]
    kinds: Dict[int, FrozenSet[str]] = {}
    found: Dict[str, set] = {}
    bad: set = set()
    calls: Dict[str, set] = {}  # method -> the methods it calls on its `self`
    for node in nodes:
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                method = next((m for first, last, m in methods if first <= node.lineno <= last), None)
                if method is not None and node.func.value.id == method.args.args[0].arg:
                    calls.setdefault(method.name, set()).add(node.func.attr)
                continue
            if not (isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") and node.args
                    and isinstance(node.args[0], ast.Name)):
                continue
        else:
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            if all(isinstance(t, ast.Name) for t in targets):
                continue
        method = next((m for first, last, m in methods if first <= node.lineno <= last), None)
        if method is None:
            continue
        me = method.args.args[0].arg
        if isinstance(node, ast.Call):
            if node.args[0].id == me:
                return {}
            continue
        plain = isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None
        for target in targets:
            if plain and isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                    and target.value.id == me:
                if id(method) not in kinds:
                    kinds[id(method)] = _immutable_params(method.args)
                value = node.value
                if isinstance(value, ast.Name) and value.id in kinds[id(method)] or _immutable(value, {}, set()):
                    found.setdefault(target.attr, set())
                    if method.name != "__init__":
                        found[target.attr].add(method.name)
                    continue
            bad.update(n.attr for n in walk_ast(target) if isinstance(n, ast.Attribute)
                       and isinstance(n.value, ast.Name) and n.value.id == me)
    out = {}
    for attr, setters in found.items():
        if attr in bad:
            continue
        grown = True
        while grown:  # `self.step()` that calls `self.flip()`, which assigns it
            more = {m for m, called in calls.items() if m not in setters and m != "__init__" and called & setters}
            setters |= more
            grown = bool(more)
        out[attr] = frozenset(setters)
    return out


def _immutable_params(args: ast.arguments) -> FrozenSet[str]:
    """The parameters annotated ``bool``/``int``/``float``/``str`` or with such a literal default."""
    given = defaults(args)
    out = set()
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        default = given.get(a.arg)
        if isinstance(a.annotation, ast.Name) and a.annotation.id in _IMMUTABLE_ANNOTATIONS \
                or isinstance(default, ast.Constant) and isinstance(default.value, (bool, int, float, str)):
            out.add(a.arg)
    return frozenset(out)


def _immutable(value: ast.expr, idents: Dict[str, int], stable: set) -> bool:
    """``value`` makes an immutable object: a literal, an identity or membership test, ``not``, ``isinstance(...)``,
    a copy of a name holding one."""
    if isinstance(value, ast.Constant):
        return isinstance(value.value, _IMMUTABLE)
    if isinstance(value, ast.Compare):
        # `a is None`, `k in d`: a bool; `a == b`, `a > 0` of tensors is a tensor, which an in-place op may change
        return all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in value.ops)
    if isinstance(value, ast.JoinedStr):
        return True
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        return True
    if isinstance(value, ast.BoolOp):
        return all(_immutable(v, idents, stable) for v in value.values)
    if isinstance(value, ast.Name):
        return idents.get(value.id) in stable
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in _BUILTIN_BOOLS
