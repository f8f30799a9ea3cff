"""Where a block's values go when it does not fall through: ``break``, ``continue``, a ``while`` flag made false, and
the statements a ``try``'s handlers may start after.

Values bound on a path that leaves a loop's pass reach the code after the loop (``break``, or the ``while`` test made
false as the pass's last act) or the next pass (``continue``), not the statement after the block. A handler starts
where a statement of the ``try`` body raised: with the values bound before that statement, not those the statement
(or one that cannot raise, ``H = H1``, ``err = False``) would have bound. Together they read the retry idiom exactly::

    while err:
        try:
            H1 = torch.linalg.cholesky(H)
            H = H1
            err = False
        except RuntimeError:
            H[idx] = torch.eye(n)   # always the `H` that was given: the factor never reaches here

(zetascale's GPTQ quantizer, set CI: the handler's write was taken for a write to the saved Cholesky factor).
"""
from __future__ import annotations

import ast
from typing import List, Optional

from . import grad
from .env import merge
from .local_conds import copy_reach, merge_reach

#: statements that cannot raise (a name bound to a name or a literal, a jump): no handler starts before them
_QUIET = (ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal)
#: statements with no parts that run after others (a handler starting after one sees what it bound only if the next
#: statement raises)
_SIMPLE = _QUIET + (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return, ast.Raise, ast.Delete,
                    ast.Import, ast.ImportFrom, ast.Assert)


def may_raise(stmt: ast.stmt) -> bool:
    """``stmt`` may raise before it completes (anything but a jump, ``pass``, or names bound to a name or a literal)."""
    if isinstance(stmt, _QUIET):
        return False
    if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
        return not isinstance(stmt.value, (ast.Name, ast.Constant))
    return True


def _binds_then_raises(stmt: ast.stmt) -> bool:
    """``h = cache[0] = v``, ``a, b[0] = v``: a name is bound before a store that may raise (targets are assigned left
    to right, a tuple's items in order)."""
    if not isinstance(stmt, ast.Assign):
        return False
    leaves = [n for t in stmt.targets for n in ast.walk(t) if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript))
              and isinstance(getattr(n, "ctx", None), ast.Store)]
    first_name = next((i for i, n in enumerate(leaves) if isinstance(n, ast.Name)), None)
    return first_name is not None and any(not isinstance(n, ast.Name) for n in leaves[first_name + 1:])


def _while_flag(test: ast.expr):
    """``while err:`` -> ("err", False): the loop ends once ``err`` is bound to a false literal; ``while not done:``
    -> ("done", True); None for any other test."""
    if isinstance(test, ast.Name):
        return test.id, False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Name):
        return test.operand.id, True
    return None


class ExitsMixin:
    """Loop exits and handler entries (a part of :class:`~.dataflow.Scope`)."""

    def leaves_block(self, body) -> Optional[str]:
        """How ``body``, just walked, never reaches the statement after it: "function" (``return``/``raise``), "exit"
        (``break``), "flag" (the innermost ``while``'s test made false as the pass's last act), "next" (``continue``);
        None when it falls through. The values it holds now go where it leaves to (:meth:`_loop`'s lists)."""
        if not body:
            return None
        last = body[-1]
        if grad.leaves_function(body):
            return "function"
        if not self.loop_exits:
            return None
        if grad.ends_flow(body):  # (`break`, `continue`: the rest of `ends_flow`)
            kind = "exit" if isinstance(last, ast.Break) else "next"
        elif self._ends_while(last):
            kind = "flag"
        else:
            return None
        if self._finally_inside_loop():
            return None  # (a `finally` runs first, on what the block holds: the values go on to it)
        self.loop_exits[-1][kind].append((dict(self.env), copy_reach(self.reach_conds)))
        return kind

    def _after_loop(self) -> list:
        """The statements being walked inside the innermost loop (outermost first)."""
        loop = self.loop_stack[-1]
        at = next((i for i, s in enumerate(self.stmt_stack) if s is loop), -1)
        return self.stmt_stack[at + 1:]

    def _finally_inside_loop(self) -> bool:
        """A ``try`` with a ``finally`` encloses the statement being walked, inside the innermost loop."""
        return any(isinstance(s, ast.Try) and s.finalbody for s in self._after_loop())

    def _ends_while(self, stmt: ast.stmt) -> bool:
        """``err = False`` in ``while err:``, with nothing after it on the way to the end of the loop's body (each
        block around it ends there; no ``finally``/``else`` of a ``try`` runs after it)."""
        loop = self.loop_stack[-1]
        flag = _while_flag(loop.test) if isinstance(loop, ast.While) else None
        if flag is None or not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                                and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == flag[0]
                                and isinstance(stmt.value, ast.Constant) and bool(stmt.value.value) == flag[1]):
            return False
        inside = False
        for frame_body, index in self.blocks:
            if frame_body is loop.body:
                inside = True
            if inside and index != len(frame_body) - 1:
                return False
        return inside and any(s is loop for s in self.stmt_stack) and not any(
            isinstance(s, (ast.Try, ast.For, ast.AsyncFor, ast.While)) and (getattr(s, "finalbody", None) or s.orelse)
            for s in self._after_loop())

    def run_try_body(self, body) -> List[tuple]:
        """Walk a ``try`` body; return the values (and reach conditions) a handler may start with: those before
        each statement that may raise, at any depth (a loop or an ``if`` in the body)."""
        points: List[tuple] = []
        self.try_points.append(points)
        try:
            self.run_body(body)
        finally:
            self.try_points.pop()
        return points

    def note_try_point(self, stmt: ast.stmt, before: bool) -> None:
        """Called before and after each statement inside a ``try`` body: what a handler sees if ``stmt`` raises
        before it binds anything, or after some of its parts ran (a compound statement: a ``with``'s exit, a loop's
        iterator; ``h = cache[0] = v``, which binds ``h`` before the store raises)."""
        if before and may_raise(stmt) or not before and (not isinstance(stmt, _SIMPLE) or _binds_then_raises(stmt)):
            point = (dict(self.env), copy_reach(self.reach_conds))
            for points in self.try_points:
                points.append(point)

    def next_pass(self, body, before: dict, reach_before, exits: dict) -> None:
        """After a pass over a loop's ``body``: the values the next pass starts with (those before the loop, at the
        end of this pass unless it always leaves, at each ``continue``)."""
        if self.try_points:
            self.note_try_point(self.loop_stack[-1], before=False)  # (the iterator's next step may raise)
        ended = self.leaves_block(body)
        envs = [before] + ([] if ended else [self.env]) + [e for e, _ in exits["next"]]
        reaches = [reach_before] + ([] if ended else [self.reach_conds]) + [r for _, r in exits["next"]]
        self.reach_conds = merge_reach(reaches, envs)
        self.env = merge(envs, self.big)

    def leave_loop(self, exits: dict, kind: str) -> None:
        """Join the values that left the loop as ``kind`` ("flag": before its ``else``; "exit": after it)."""
        if exits[kind]:
            envs = [self.env] + [e for e, _ in exits[kind]]
            self.reach_conds = merge_reach([self.reach_conds] + [r for _, r in exits[kind]], envs)
            self.env = merge(envs, self.big)
