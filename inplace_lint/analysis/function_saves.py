"""What a custom autograd ``Function`` saves of its inputs (``ctx.save_for_backward``), and so what ``Fn.apply(...)``
saves of what a call passes (a part of :class:`~.dataflow.Scope`).

``ctx.save_for_backward(a, b)`` in ``forward(ctx, a, b)`` keeps the input tensors themselves (or views of them) for
``backward``; autograd checks their version counters when it unpacks them (PyTorch docs: "Extending torch.autograd",
``ctx.save_for_backward``; "Saved tensors"). A call ``Fn.apply(x, w)`` whose output goes on to a backward
therefore fails at that backward when ``x`` was written in place in between, whichever input required grad (the
backward runs when one does). Set BX's torchbvh: ``mls_interpolate(points, queries, features)`` then
``queries.add_(...)``.
"""
from __future__ import annotations

import ast
from typing import Optional

from ..torch_facts import ops
from .astutil import dotted_name
from .names import qualify

#: the ``inner`` text a summary's ``saves`` entry carries for what ``ctx.save_for_backward`` kept
SAVED_BY_CTX = "ctx.save_for_backward"


class FunctionSavesMixin:
    """``note_ctx_saves`` (in a ``Function``'s ``forward``) and ``note_apply_saves`` (at ``Fn.apply(...)``)."""

    def note_ctx_saves(self, node: ast.Call, recv_node: ast.expr) -> None:
        """``ctx.save_for_backward(...)`` with ``ctx`` this function's first parameter: each argument that is one
        of its parameters (or a view of one: ``x.view(-1)``, ``x[:, 0]``, ``x.contiguous()``) is kept for backward;
        the summary says so (``FunctionSummary.saves``, with :data:`SAVED_BY_CTX`)."""
        params = list(self.params)
        if not params or not isinstance(recv_node, ast.Name) or recv_node.id != params[0]:
            return
        for arg in node.args:
            base = arg
            while True:
                if isinstance(base, ast.Subscript):
                    base = base.value
                elif isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) and (
                        base.func.attr in ops.VIEW_METHODS or base.func.attr == "contiguous"):
                    base = base.func.value
                else:
                    break
            if isinstance(base, ast.Name) and base.id in params[1:] and base.id not in self.rebound_params \
                    and base.id not in self.assigned:
                self.saved_params.setdefault(params.index(base.id), (SAVED_BY_CTX, node.lineno))

    def note_apply_saves(self, node: ast.Call, cls_node: ast.expr) -> None:
        """``Fn.apply(a, b, ...)`` of an in-project ``Function`` whose ``forward`` saves its inputs
        (:meth:`note_ctx_saves`), with grad on: when another argument requires grad by evidence, what the call
        passes for a saved input is marked saved (a later write makes the backward raise); when another is a guess
        about one of this function's parameters (annotated ``Tensor``), it is marked under that guess, for the
        callers to decide."""
        summary = self._forward_summary(cls_node)
        if summary is None or self.no_grad or any(isinstance(a, ast.Starred) for a in node.args):
            return
        saved = [i - 1 for i, inner, _ in summary.saves if inner == SAVED_BY_CTX and 0 < i <= len(node.args)]
        for position in saved:
            others = [a for j, a in enumerate(node.args) if j != position]
            text = f"{dotted_name(cls_node) or 'Function'}.apply"
            if any(self.needs_grad(a, None) for a in others):
                self.mark_saved_for_other(node.args[position], text, node.lineno, node, surely_tensor=True)
                continue
            guesses = [g for g in (self.tensor_param_guess(a, None) for a in others) if g >= 0]
            if guesses:
                self.mark_saved_for_other(node.args[position], text, node.lineno, node, surely_tensor=True,
                                          guess=guesses[0])

    def _forward_summary(self, cls_node: ast.expr) -> Optional[object]:
        """The summary of ``forward`` of the in-project class ``cls_node`` names, or None."""
        ctx = self.ctx
        if ctx is None or not isinstance(cls_node, (ast.Name, ast.Attribute)):
            return None
        qual, imported = qualify(cls_node, self.names, self.is_local_name)
        found = ctx.resolve(qual if imported else f"{ctx.module}.{dotted_name(cls_node)}")
        if not found or found[0] != "class":
            return None
        forward = ctx.method(found[1], "forward")
        return ctx.summary(forward[0]) if forward else None
