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


def not_on_last_pass(test: ast.expr, counter: str, seq: str) -> bool:
    """``i < len(S) - 1``, ``i != len(S) - 1``, ``i + 1 < len(S)``: false on the last pass only."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(left, ast.Name) and left.id == counter:
        return isinstance(op, (ast.Lt, ast.NotEq)) and _len_minus_one(right, seq)
    return isinstance(left, ast.BinOp) and isinstance(left.op, ast.Add) and isinstance(left.left, ast.Name) \
        and left.left.id == counter and isinstance(left.right, ast.Constant) and left.right.value == 1 \
        and isinstance(op, (ast.Lt, ast.NotEq)) and _len_of(right, seq)


def last_pass_body(loop: ast.stmt) -> Optional[List[ast.stmt]]:
    """The body of ``loop``'s last pass when a top-level ``if`` of it tests the counter so that its body does not run
    then (:func:`not_on_last_pass`): that ``if`` replaced by its ``else``; None for any other loop."""
    if not isinstance(loop, ast.For):
        return None
    found = _counter_and_sequence(loop)
    if found is None:
        return None
    counter, seq = found
    body, changed = [], False
    for stmt in loop.body:
        if isinstance(stmt, ast.If) and not_on_last_pass(stmt.test, counter, seq):
            body.extend(stmt.orelse)
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
