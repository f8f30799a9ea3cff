"""What an ``out=`` call proves about the code past it (a part of :class:`~.dataflow.Scope`, and
:func:`out_raised_first` for a helper's write reported through its callers).

``torch.<op>(..., out=buf)`` raises in the forward when one of its inputs requires grad ("functions with out=...
arguments don't support automatic differentiation, but one of the arguments requires grad"; torch 2.13, executed in
``tests/test_set_bz_facts.py`` and ``tests/test_set_cd_facts.py``; docs/pytorch-facts.md#leaf-requires-grad). Code that
runs only past such a call, on every path, therefore runs only when those inputs do not require grad: a write whose
hazard needs them to (a saved tensor's backward, a custom Function's view) cannot break anything there.
"""
from __future__ import annotations

import ast
from typing import Sequence, Set

from ..findings import Origin, StepKind
from .astutil import dotted_name, last_name, rebound_between, walk_ast
from .env import EMPTY
from .grad import GRAD_MODE_SETTERS
from .param_guesses import (_INDEX_OPERAND, _KNOWN_OPS, _NOT_VALUE_CALLS, _TENSOR_ATTRS, _factory_form,
                            _number_or_gradless, guessed_params)
from .summaries import CallSite, param_index

#: ops whose output has no gradient: ``out=`` with an input that requires grad does not raise (torch 2.13, executed
#: in tests/test_set_cd_facts.py) (and every ``logical_*``, ``bitwise_*``, ``arg*`` and ``is*`` op:
#: :meth:`OutCallsMixin.note_out_call`)
_GRADLESS_OUT = frozenset({"eq", "ne", "gt", "ge", "lt", "le", "greater", "greater_equal", "less", "less_equal",
                           "not_equal", "equal", "bucketize", "searchsorted", "count_nonzero", "nonzero", "histc",
                           "histogram", "histogramdd", "bincount", "floor_divide", "heaviside", "multinomial",
                           "signbit", "gcd", "lcm"})
#: statements whose body runs whenever they are reached (a ``for`` loop's, on each of its passes; not its ``else:``,
#: :func:`_in_body`). Not ``with``: a context manager may swallow the error (``contextlib.suppress``)
_STRAIGHT = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.For, ast.AsyncFor)
#: calls in an iterable that give the same sequence again for the same arguments (a second loop over it runs its body
#: only where the first ran: :meth:`OutCallsMixin._same_loop_ran`)
_STEADY_ITER_CALLS = frozenset({"range", "len", "enumerate", "zip", "reversed", "sorted", "list", "tuple", "items",
                                "keys", "values"})


#: the rules whose hazard needs the written tensor, or what a guess is about, to require grad: past an ``out=`` call
#: that consumed it on every path, the write runs only when it does not (IPV001 is also about other readers, who see
#: the write with grad off too; IPV004 and IPV007 need no grad)
NEEDS_GRAD = ("IPV002", "IPV003", "IPV005", "IPV006")


#: how many nodes :meth:`OutCallsMixin._must_from` visits for one ``out=`` input at most
_MUST_BUDGET = 400
#: every parameter, the neutral element of :meth:`OutCallsMixin._must_from`'s intersections: what a local met again
#: while it is followed stands for (compared by identity)
_EVERY: Set[int] = {-1}


def _union(a: Set[int], b: Set[int]) -> Set[int]:
    """What an op on two operands requires grad with: either's (everything, with a local met again)."""
    if a is _EVERY or b is _EVERY:
        return _EVERY
    return a | b


def _meet(alternatives) -> Set[int]:
    """What every alternative requires grad with (:data:`_EVERY` leaves the others as they are); nothing when no
    alternative says anything."""
    found = None
    for deps in alternatives:
        found = deps if found is None or found is _EVERY else found if deps is _EVERY else found & deps
    return set() if found is None or found is _EVERY else found


def _in_body(stmt: ast.stmt, stack) -> bool:
    """``stack`` (the statements being walked from ``stmt`` in) goes on into ``stmt``'s body, not its ``else:`` (a
    loop's ``else:`` runs when it ran no pass too); True for a statement with no body, or the last of the stack."""
    at = next((i for i, s in enumerate(stack) if s is stmt), len(stack))
    inner = stack[at + 1] if at + 1 < len(stack) else None
    if inner is None or not hasattr(stmt, "orelse"):
        return True
    return any(inner is s for s in stmt.body)


def _same_tensor(arg: ast.expr) -> bool:
    """An ``out=`` call's input that is the tensor a name holds, or an item or slice of it (which requires grad when
    it does): not ``y.detach()``, ``y.data`` or another call's result."""
    while isinstance(arg, ast.Subscript):
        arg = arg.value
    return isinstance(arg, ast.Name)


def _steady_iterable(node: ast.expr) -> bool:
    """Names, attributes, items, constants, and calls of :data:`_STEADY_ITER_CALLS` only."""
    for n in walk_ast(node):
        if isinstance(n, ast.Call) and last_name(n.func) not in _STEADY_ITER_CALLS:
            return False
        if isinstance(n, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom, ast.GeneratorExp)):
            return False
    return True


def _root(origin: Origin) -> tuple:
    """What names an origin's tensor across the views taken of it: its root."""
    return origin.root, origin.root_line, origin.root_text



class OutCallsMixin:
    """The ``out=`` calls on every path so far (:attr:`~.dataflow.Scope.out_guesses`, ``out_roots``)."""

    def note_out_call(self, call: ast.Call, name: str, args) -> None:
        """``torch.<name>(..., out=buf)`` run with grad on: when it is a statement of its own (or an assignment's value)
        on every path of the function so far (no ``if``/``try``/``while`` around it; in a ``for`` body, for the rest of
        that body), the guesses its inputs carry are false past it: the call raises in the forward otherwise
        (docs/pytorch-facts.md#leaf-requires-grad). Not for ops whose output has no gradient (``torch.gt``, ``argmax``:
        they take ``out=`` with grad on)."""
        stmt = self.stmt_stack[-1] if self.stmt_stack else None
        out = next((k.value for k in call.keywords if k.arg == "out"), None)
        if self.no_grad or getattr(stmt, "value", None) is not call or not isinstance(stmt, (ast.Expr, ast.Assign)) \
                or name in _GRADLESS_OUT or name.startswith(("logical_", "bitwise_", "arg", "is")) \
                or isinstance(out, ast.Constant) and out.value is None \
                or not all(isinstance(s, _STRAIGHT) and _in_body(s, self.stmt_stack) for s in self.stmt_stack) \
                or self._grad_mode_set():
            return
        loop = next((s for s in reversed(self.stmt_stack) if isinstance(s, (ast.For, ast.AsyncFor))), None)
        where = (loop, tuple(self.stmt_stack[:self.stmt_stack.index(loop)]) if loop is not None else ())
        for arg, origins in zip(call.args, args):
            if not _same_tensor(arg):
                continue  # (`y.detach()`, `y.data`, a call's result: not the tensor whose grad the write needs)
            for g in self._must_guesses(arg, origins):
                self.out_guesses.setdefault(g, []).append(where)
            if len(origins) == 1:  # (`y = w if c else z`: y holds one of them, maybe the one that needs no grad)
                self.out_roots.setdefault(_root(next(iter(origins))), []).append(where)

    def _must_guesses(self, arg: ast.expr, origins) -> Set[int]:
        """The parameters whose requiring grad makes ``arg`` require grad whatever path made it: of each origin
        ``arg`` may hold, the guess or parameter it is (nothing for one made without grad), those all share; untracked,
        :meth:`_must_from` of the expression."""
        if origins:
            sets = [set() if o.root_no_grad else {i for i in (param_index(o), self.guessed_param(o))
                                                   if i is not None and i >= 0} for o in origins]
            return set.intersection(*sets) & set(self.guesses_of(arg, origins))
        return self._must_from(arg, 0, set(), [_MUST_BUDGET])

    def _must_from(self, node: ast.expr, depth: int, seen: Set[str], budget: list) -> Set[int]:
        """The parameters ``node`` requires grad with on every path: a parameter itself; of an op, a method or
        arithmetic, what any operand requires grad with (not an index operand, and nothing of a result without a
        gradient: ``x.detach()``, ``x.argmax()``, a comparison, a number); of a conditional expression or a local,
        what every alternative (every binding of the local in the function) requires grad with; nothing for what
        another callable returns, a factory's tensor or an attribute of an object. ``seen``: locals being followed (a
        loop's ``r = r + d`` adds no alternative). ``budget``: how many more nodes one question may visit (locals bound
        several ways, each reading several such locals, would be followed along every path): past it, nothing."""
        kind = node.__class__
        budget[0] -= 1
        if depth > 12 or budget[0] < 0:
            return set()
        if kind is ast.Name:
            if node.id in self.params:
                return {list(self.params).index(node.id)} if node.id not in self.number_parameters() else set()
            if node.id in seen:
                return _EVERY
            values = self._bindings().get(node.id)  # (every binding in the function, those below this line too)
            if not values:
                return set()
            return _meet(self._must_from(value, depth + 1, seen | {node.id}, budget) for value in values)
        if kind is ast.IfExp or kind is ast.BoolOp:
            parts = [node.body, node.orelse] if kind is ast.IfExp else node.values
            return _meet(self._must_from(part, depth + 1, seen, budget) for part in parts)
        if kind is ast.BinOp:
            return _union(self._must_from(node.left, depth + 1, seen, budget),
                          self._must_from(node.right, depth + 1, seen, budget))
        if kind is ast.UnaryOp:
            return set() if isinstance(node.op, ast.Not) else self._must_from(node.operand, depth + 1, seen, budget)
        if kind is ast.Subscript:
            return self._must_from(node.value, depth + 1, seen, budget)
        if kind is ast.Attribute:
            return self._must_from(node.value, depth + 1, seen, budget) if node.attr in _TENSOR_ATTRS else set()
        if kind is ast.Call:
            name = last_name(node.func) or ""
            torch_op = (dotted_name(node.func) or "").startswith(("torch.", "F.")) or self.torch_op_call(node)
            method = isinstance(node.func, ast.Attribute) and not torch_op
            if name in _NOT_VALUE_CALLS or _number_or_gradless(node) or _factory_form(node) \
                    or not torch_op and not (method and name in _KNOWN_OPS | {"clone"}) or self._own_method_call(node):
                return set()
            skip = _INDEX_OPERAND.get(name, -1) - (1 if method else 0)
            found: Set[int] = set()
            for i, a in enumerate(node.args):
                if i != skip and not isinstance(a, ast.Starred):
                    found = _union(found, self._must_from(a, depth + 1, seen, budget))
            if method:
                found = _union(found, self._must_from(node.func.value, depth + 1, seen, budget))
            return found
        return set()

    def _grad_mode_set(self) -> bool:
        """The function calls ``torch.set_grad_enabled(...)`` (or the like) as a statement: grad mode past it is not
        what the walk tracks."""
        got = self.local_cond_cache.get("grad_mode_set")
        if got is None:
            got = self.local_cond_cache["grad_mode_set"] = self.func is not None and any(
                isinstance(n, ast.Call) and last_name(n.func) in GRAD_MODE_SETTERS for n in walk_ast(self.func))
        return got

    def past_out_call(self, guesses) -> bool:
        """Every one of ``guesses`` was consumed by an ``out=`` call whose body this statement is in
        (:meth:`note_out_call`)."""
        return bool(guesses) and set(guesses) <= self.out_consumed()

    def past_out_call_of(self, origins: Sequence[Origin]) -> bool:
        """Each of ``origins`` (their roots) went into an ``out=`` call on every path to here (:meth:`note_out_call`):
        with it requiring grad, that call raised in the forward."""
        return bool(origins) and all(any(self._ran(where) for where in self.out_roots.get(_root(o), ()))
                                     for o in origins)

    def out_consumed(self) -> Set[int]:
        """The parameters (guesses) an ``out=`` call consumed on every path to the statement being walked
        (:meth:`note_out_call`): at the function's level, in a loop body this statement is in, or in an earlier
        loop over the same iterable (``for nid in part.neighbors:`` twice, nothing rebound between: the second
        body runs only where the first ran)."""
        return {g for g, places in self.out_guesses.items() if any(self._ran(where) for where in places)}

    def _ran(self, where) -> bool:
        """The ``out=`` call noted at ``where`` (its innermost loop, and the statements around that loop) ran on every
        path to the statement being walked: at the function's level, in the body of a loop this statement is in, or in
        an earlier loop over the same iterable."""
        loop, around = where
        if loop is None:
            return True
        if not all(any(s is a for s in self.stmt_stack) for a in around):
            return False  # (a loop nested in another, or in an arm, that this statement is not in)
        index = next((i for i, s in enumerate(self.stmt_stack) if s is loop), None)
        if index is not None:
            return _in_body(loop, self.stmt_stack[index:])
        return self._same_loop_ran(loop)

    def _same_loop_ran(self, loop) -> bool:
        """A loop this statement is in (in its body) iterates over what ``loop``, earlier, did: the same names and
        attributes, nothing rebound, mutated by a method or handed to a call between them, no call in the iterable
        but ``range``, ``len``, ``zip``... (:data:`_STEADY_ITER_CALLS`), and nothing in ``loop`` that leaves a pass
        early: the second body runs only where the first ran."""
        memo = self.local_cond_cache.setdefault("same loop", {})
        steady = memo.get(id(loop))
        if steady is None:
            steady = memo[id(loop)] = _steady_iterable(loop.iter) and not any(
                isinstance(n, (ast.Break, ast.Continue, ast.Return, ast.Raise)) for n in walk_ast(loop))
        if not steady:
            return False
        key = ast.dump(loop.iter)
        for i, s in enumerate(self.stmt_stack):
            if isinstance(s, (ast.For, ast.AsyncFor)) and s is not loop and s.lineno > loop.end_lineno \
                    and ast.dump(s.iter) == key and _in_body(s, self.stmt_stack[i:]):
                pair = (id(loop), id(s))
                if pair not in memo:
                    memo[pair] = not rebound_between(self.func, loop.iter, loop.end_lineno, s.lineno)
                return memo[pair]
        return False


def out_raised_first(w, rule, shown: Origin, site: CallSite) -> bool:
    """An ``out=`` call on every path to the callee's write consumed what the hazard needs to require grad, so with
    it requiring grad the callee raised before the write ("functions with out=... arguments don't support automatic
    differentiation"; torch-sla's halo exchange and CG helper): the written parameter itself (unless the hazard is
    its saving for another input's gradient), or an argument computed from the caller's parameter the hazard is a
    guess about."""
    if not w.past_out or rule.code not in NEEDS_GRAD:
        return False
    if w.index in w.past_out and not any(s.kind is StepKind.SAVED_FOR_OTHER for s in shown.steps):
        return True
    if shown.guess_param < 0:
        return False
    args = dict(site.args)
    return any(shown.guess_param in guessed_params(args.get(k, EMPTY)) for k in w.past_out)
