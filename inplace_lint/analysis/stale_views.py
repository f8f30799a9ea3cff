"""A write to the base of a multi-output view that is read again afterwards (IPV003's second form).

``c, u = z.split([3, 3], dim=1)`` makes two views of ``z`` that autograd cannot track through an in-place change:
once ``z`` (or another view of it: ``z[:, 3:] = v``) is written in place while ``z`` requires grad, using ``u`` in
an op with grad on raises "Output 1 of SplitWithSizesBackward0 is a view and its base or another view of its base
has been modified inplace. This view is the output of a function that returns multiple views." (executed on torch
2.13 for ``split``, ``chunk`` and ``unbind``; reading ``u.shape`` or ``u.detach()`` does not raise, nor does a use
under ``no_grad``). scmidas' batch correction (set CR, labelled): ``c, u = z.split(...)``, then
``z[:, dim_c:] = centroid``, then ``self.s_decoder(u)``. Only what one function does is followed: the split, the
write and the read in its own body.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Optional, Tuple

from ..findings import Origin, StepKind
from ..rules import Write
from .astutil import dotted_name
from .holders import binds, statement_of
from .rereads import following

#: what reading a view for does not use its values through autograd
_NOT_A_USE = frozenset({"shape", "dtype", "device", "size", "ndim", "dim", "numel", "detach", "requires_grad",
                        "is_cuda", "data", "element_size", "stride", "storage_offset", "is_contiguous"})


def _base_name(target: ast.expr) -> Optional[str]:
    """The local name a write reaches: ``z`` for ``z``, ``z[:, 3:]``, ``z.view(-1)``."""
    while True:
        if isinstance(target, ast.Subscript):
            target = target.value
        elif isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute):
            target = target.func.value
        else:
            return target.id if isinstance(target, ast.Name) else None


class StaleViewsMixin:
    """A part of :class:`~.dataflow.Scope`, asked by :meth:`~.reporting.ReportingMixin.report` when the written
    tensor's own origins match no rule."""

    def stale_multi_view(self, node: ast.AST, target: ast.expr, write: Write) -> Optional[Tuple[Origin, Write]]:
        """The origin of a local name bound to one output of ``split``/``chunk``/``unbind`` of the written tensor
        (or of a view of it), which the function reads again after ``node`` with its values; and ``write`` with
        that read (:attr:`.rules.Write.base_of`). None where there is none, where grad is off at the write, or where
        nothing shows that the written tensor requires grad."""
        base = _base_name(target)
        if base is None or self.no_grad or self.func is None or isinstance(self.func, ast.Module):
            return None
        bases = [b for b in self.env.get(base, ()) if b.is_tensor and b.grad_evidence]
        if not bases:
            return None
        facts = self.facts()
        for name in sorted(self.env):
            if name == base or "." in name or "[" in name:
                continue
            views = [v for v in self.env[name] if v.is_tensor and v.has(StepKind.ELEMENT) and any(
                v.derived_from(b) and any(s.kind is StepKind.MULTI_VIEW for s in v.steps[len(b.steps):])
                for b in bases)]
            if not views:
                continue
            stmt = statement_of(facts, node)
            found = following(facts, stmt, name) if stmt is not None and not binds(stmt, name) else None
            if found is None:
                continue
            parent = facts.parent(found)
            if isinstance(parent, ast.Attribute) and parent.attr in _NOT_A_USE or isinstance(parent, ast.Call) \
                    and dotted_name(parent.func) in ("len", "isinstance", "print", "type", "id"):
                continue
            return min(views, key=lambda o: (o.root_line, o.root_text, len(o.steps))), replace(
                write, base_of=(name, found.lineno))
        return None
