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
from .astutil import rebound_between, walk_ast
from .env import EMPTY
from .param_guesses import guessed_params
from .summaries import CallSite

#: ops whose output has no gradient: ``out=`` with an input that requires grad does not raise (torch 2.13, executed)
#: (and every ``logical_*``, ``bitwise_*``, ``arg*`` and ``is*`` op: :meth:`OutCallsMixin.note_out_call`)
_GRADLESS_OUT = frozenset({"eq", "ne", "gt", "ge", "lt", "le", "greater", "greater_equal", "less", "less_equal",
                           "not_equal", "equal", "bucketize", "searchsorted", "count_nonzero", "nonzero"})
#: statements whose body runs whenever they are reached (a ``for`` loop's, on each of its passes)
_STRAIGHT = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.For, ast.AsyncFor, ast.With,
             ast.AsyncWith)


#: the rules whose hazard needs the written tensor, or what a guess is about, to require grad: past an ``out=`` call
#: that consumed it on every path, the write runs only when it does not (IPV001 is also about other readers, who see
#: the write with grad off too; IPV004 and IPV007 need no grad)
NEEDS_GRAD = ("IPV002", "IPV003", "IPV005", "IPV006")


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
        if self.no_grad or getattr(stmt, "value", None) is not call or not isinstance(stmt, (ast.Expr, ast.Assign)) \
                or name in _GRADLESS_OUT or name.startswith(("logical_", "bitwise_", "arg", "is")) \
                or not all(isinstance(s, _STRAIGHT) for s in self.stmt_stack):
            return
        loop = next((s for s in reversed(self.stmt_stack) if isinstance(s, (ast.For, ast.AsyncFor))), None)
        for arg, origins in zip(call.args, args):
            for g in self.guesses_of(arg, origins):
                self.out_guesses.setdefault(g, []).append(loop)
            for o in origins:
                self.out_roots.setdefault(_root(o), []).append(loop)

    def past_out_call(self, guesses) -> bool:
        """Every one of ``guesses`` was consumed by an ``out=`` call whose body this statement is in
        (:meth:`note_out_call`)."""
        return bool(guesses) and set(guesses) <= self.out_consumed()

    def past_out_call_of(self, origins: Sequence[Origin]) -> bool:
        """Each of ``origins`` (their roots) went into an ``out=`` call on every path to here (:meth:`note_out_call`):
        with it requiring grad, that call raised in the forward."""
        return bool(origins) and all(any(loop is None or loop in self.stmt_stack or self._same_loop_ran(loop)
                                         for loop in self.out_roots.get(_root(o), ())) for o in origins)

    def out_consumed(self) -> Set[int]:
        """The parameters (guesses) an ``out=`` call consumed on every path to the statement being walked
        (:meth:`note_out_call`): at the function's level, in a loop body this statement is in, or in an earlier
        loop over the same iterable (``for nid in part.neighbors:`` twice, nothing rebound between: the second
        body runs only where the first ran)."""
        return {g for g, loops in self.out_guesses.items()
                if any(loop is None or loop in self.stmt_stack or self._same_loop_ran(loop) for loop in loops)}

    def _same_loop_ran(self, loop) -> bool:
        key = ast.dump(loop.iter)
        for s in self.stmt_stack:
            if isinstance(s, (ast.For, ast.AsyncFor)) and s is not loop and s.lineno > loop.end_lineno \
                    and ast.dump(s.iter) == key:
                return not rebound_between(self.func, loop.iter, loop.end_lineno, s.lineno) and not any(
                    isinstance(n, (ast.Break, ast.Continue, ast.Return, ast.Raise)) for n in walk_ast(loop))
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
