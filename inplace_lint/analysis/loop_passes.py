"""A loop's last pass (:func:`last_pass_body`): the arms a counter test rules out on the last pass.

``for n, layer in enumerate(self.layers): x = layer(x); if n < len(self.layers) - 1: x = F.relu(x)`` applies the
activation on every pass but the last, so after the loop (once it ran a pass) ``x`` is the last layer's output, not
the activation's: what the walk holds for ``x`` past the loop comes from the passes before and the last one, whose
body skips that arm (a multilayer perceptron with no activation after its output layer; TALENT's HyperFast network,
set BX, wrote that output in place after the loop: no ``relu`` output is written).
"""
from __future__ import annotations

import ast
from typing import List, Optional

from .astutil import dotted_name
from .env import merge


def _counter_and_sequence(loop: ast.For) -> Optional[tuple]:
    """``(counter, sequence text)`` of ``for i, v in enumerate(S)`` or ``for i in range(len(S))``, else None."""
    it = loop.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and len(it.args) == 1 and not it.keywords):
        return None
    if it.func.id == "enumerate" and isinstance(loop.target, ast.Tuple) and len(loop.target.elts) == 2 \
            and isinstance(loop.target.elts[0], ast.Name):
        seq = dotted_name(it.args[0])
        return (loop.target.elts[0].id, seq) if seq else None
    inner = it.args[0]
    if it.func.id == "range" and isinstance(loop.target, ast.Name) and isinstance(inner, ast.Call) \
            and isinstance(inner.func, ast.Name) and inner.func.id == "len" and len(inner.args) == 1:
        seq = dotted_name(inner.args[0])
        return (loop.target.id, seq) if seq else None
    return None


def _len_minus_one(node: ast.expr, seq: str) -> bool:
    """``len(S) - 1``."""
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and isinstance(node.right, ast.Constant) \
        and node.right.value == 1 and _len_of(node.left, seq)


def _len_of(node: ast.expr, seq: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" \
        and len(node.args) == 1 and dotted_name(node.args[0]) == seq


def _last_index(node: ast.expr, counter: str, seq: str) -> Optional[str]:
    """How ``node`` compares the counter with the last index: ``"counter"`` for ``i`` (the other side must then be
    ``len(S) - 1``), ``"plus"`` for ``i + 1`` (against ``len(S)``), None for anything else."""
    if isinstance(node, ast.Name) and node.id == counter:
        return "counter"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and isinstance(node.left, ast.Name) \
            and node.left.id == counter and isinstance(node.right, ast.Constant) and node.right.value == 1:
        return "plus"
    return None


def _last_test(test: ast.expr, counter: str, seq: str) -> Optional[str]:
    """``"before"`` when ``test`` is false on the last pass only (``i < len(S) - 1``, ``i != len(S) - 1``, ``i + 1 <
    len(S)``, or written the other way round: ``len(S) - 1 > i``), ``"last"`` when true on it only (``i == len(S) -
    1``, ``i + 1 == len(S)``), None otherwise."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    flipped = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.NotEq: ast.NotEq, ast.Eq: ast.Eq}
    side = _last_index(left, counter, seq)
    if side is None and type(op) in flipped:
        left, right, side = right, left, _last_index(right, counter, seq)
        op = flipped[type(op)]()
    if side is None:
        return None
    bound = _len_minus_one(right, seq) if side == "counter" else _len_of(right, seq)
    if not bound:
        return None
    return "before" if isinstance(op, (ast.Lt, ast.NotEq)) else "last" if isinstance(op, ast.Eq) else None


def last_pass_body(loop: ast.stmt) -> Optional[List[ast.stmt]]:
    """The body of ``loop``'s last pass when a top-level ``if`` of it tests the counter against the last index
    (:func:`_last_test`): that ``if`` replaced by the arm that runs on the last pass; None for any other loop."""
    if not isinstance(loop, ast.For):
        return None
    found = _counter_and_sequence(loop)
    if found is None:
        return None
    counter, seq = found
    body, changed = [], False
    for stmt in loop.body:
        kind = _last_test(stmt.test, counter, seq) if isinstance(stmt, ast.If) else None
        if kind is not None:  # (`if i == len(S) - 1: ... else: x = act(x)`: the body runs on the last pass)
            body.extend(stmt.orelse if kind == "before" else stmt.body)
            changed = True
        else:
            body.append(stmt)
    return body if changed else None


class LoopPassesMixin:
    """``last_pass`` (a part of :class:`~.dataflow.Scope`)."""

    def last_pass(self, loop: ast.For, head, body: List[ast.stmt], before: dict) -> None:
        """After ``loop`` was walked (its passes merged into ``env``): walk its last pass's ``body``
        (:func:`last_pass_body`) once more, recording nothing, from what any pass starts with, and hold past the loop
        what no pass (``before``) or that last pass leaves."""
        recording, conds = self.recording, (self.path_conds, self.local_conds)
        self.recording = False
        self.loop_stack.append(loop)
        try:
            head()
            self.run_body(body)
            last = self.env
        finally:
            self.loop_stack.pop()
            self.recording = recording
            self.path_conds, self.local_conds = conds
        self.env = merge([before, last], self.big)
