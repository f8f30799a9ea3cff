"""A parameter that an op of its own function saved, then written in place there, with no call deciding its grad
(:meth:`SavedHereMixin.saved_here_finding`; a part of :class:`~.across_calls.AcrossCalls`).

``def forward(self, z): z.div_(torch.sqrt(1 + z ** 2)); return z``: ``z ** 2`` saved ``z``, and the write makes the
backward raise whenever ``z`` requires grad, which an activation does in training (PyTorch docs, "Autograd
mechanics", in-place correctness checks). What a caller passes decides it (``FunctionSummary.writes`` matched
against each call's origins); where no in-project call passes anything for it and the function's guesses stay (a
module's ``forward``, a free function: :meth:`~.across_calls.AcrossCalls._no_call_passes_grad`), the write is
reported under the guess, with its condition ("it does when `z` requires grad"): torch-activation's
``_forward_inplace`` methods and torchonn-pyutils' activations with ``inplace=True`` (set BY).
"""
from __future__ import annotations

from typing import Optional

from ..findings import Finding, Origin, RootKind, StepKind, WriteKind
from ..rules import Write
from .reporting import match
from .summaries import param_index, with_steps


class SavedHereMixin:
    """``saved_here_finding`` (a part of :class:`~.across_calls.AcrossCalls`)."""

    def saved_here_finding(self, path: str, w, qual: str, incoming, grad_off, calls_to) -> Optional[Finding]:
        """The finding for parameter write ``w`` of ``qual`` when an op of ``qual`` itself saved the parameter (a step
        of ``w``), the write is surely on a tensor (an in-place method or function, or a parameter known as one),
        nothing any call passes is known (``incoming`` empty, or only the callers' own parameters and guesses about
        them) and the callers do not decide it needs no grad; else None."""
        if any(param_index(o) is None and not o.guessed and o.guess_param < 0 for o in incoming or ()) \
                or w.no_grad or w.via is not None or not w.kept \
                or self._grad_off(grad_off, w.func) or self.settings.report_in_no_grad:
            return None  # (a call passing its own parameter on leaves it to that caller's calls, below)
        saved = next((s for s in w.steps if s.kind is StepKind.SAVED_INPUT), None)  # (read for its own gradient)
        if saved is None or any(s.text == ".data" for s in w.steps):
            # (`x.data.copy_(polar(mag, y.angle()))`: a write past autograd, whose only effect is on a backward through
            # the op that saved it, which the guess alone does not show runs: torchonn-pyutils' complex clipping)
            return None
        if not (w.kind in (WriteKind.METHOD, WriteKind.FUNCTION) or w.on_tensor):
            return None
        if self._no_call_passes_grad(calls_to, qual, w.index):
            return None
        summary = self.summaries.get(qual)
        name = summary.params[w.index] if summary is not None and w.index < len(summary.params) else w.target
        condition = f"it does when `{name}` requires grad"
        # (made where the op saved it: `y = torch.log(z)` lines before `z.neg_()`, not only `z.div_(f(z ** 2))`)
        origin = Origin(RootKind.TENSOR, name, saved.line, guessed=True, guess_param=w.index, condition=condition)
        write = Write(w.op, w.op_name, w.kind, w.target, w.point_index, w.condition)
        rule, shown = match([with_steps(origin, w.steps)], write, False, False)
        if rule is None:
            return None
        message = f"{rule.message(write, shown)} ({condition})"
        related = tuple(shown.related())
        return Finding(code=rule.code, line=w.line, col=w.col, end_line=w.end_line, end_col=w.end_col,
                       message=message, op=w.op, write_kind=w.kind, target=w.target, origin=shown, fix=w.fix,
                       related=related)

