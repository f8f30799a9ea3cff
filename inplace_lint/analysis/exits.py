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

from .env import merge
from .local_conds import copy_reach, merge_reach

#: statements that cannot raise (a name bound to a name or a literal, a jump): no handler starts before them
_QUIET = (ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal)


def may_raise(stmt: ast.stmt) -> bool:
    """``stmt`` may raise before it completes (anything but a jump, ``pass``, or names bound to a name or a literal)."""
    if isinstance(stmt, _QUIET):
        return False
    if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
        return not isinstance(stmt.value, (ast.Name, ast.Constant))
    return True


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
        if isinstance(last, (ast.Return, ast.Raise)):
            return "function"
        if not self.loop_exits:
            return None
        if isinstance(last, (ast.Break, ast.Continue)):
            kind = "exit" if isinstance(last, ast.Break) else "next"
        elif self._ends_while(last):
            kind = "flag"
        else:
            return None
        self.loop_exits[-1][kind].append((dict(self.env), copy_reach(self.reach_conds)))
        return kind

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
        at = next((i for i, s in enumerate(self.stmt_stack) if s is loop), None)
        return inside and at is not None and not any(
            isinstance(s, (ast.Try, ast.For, ast.AsyncFor, ast.While)) and (getattr(s, "finalbody", None)
                                                                             or s.orelse)
            for s in self.stmt_stack[at + 1:])

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

    def note_try_point(self, stmt: ast.stmt) -> None:
        """Called before each statement: inside a ``try`` body, what a handler sees if ``stmt`` raises."""
        if may_raise(stmt):
            point = (dict(self.env), copy_reach(self.reach_conds))
            for points in self.try_points:
                points.append(point)

    def next_pass(self, body, before: dict, reach_before, exits: dict) -> None:
        """After a pass over a loop's ``body``: the values the next pass starts with (those before the loop, at the
        end of this pass unless it always leaves, at each ``continue``)."""
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
