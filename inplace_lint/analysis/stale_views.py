"""A write to the base of a multi-output view that is used again afterwards (IPV003's second form).

``c, u = z.split([3, 3], dim=1)`` makes two views of ``z`` that autograd cannot track through an in-place change:
once ``z`` (or a view of it: ``z[:, 3:] = v``, ``flat = z.view(-1); flat.mul_(2)``) is written in place while ``z``
requires grad, using ``u`` in an op that autograd records raises "Output 1 of SplitWithSizesBackward0 is a view and
its base or another view of its base has been modified inplace. This view is the output of a function that returns
multiple views." (executed on torch 2.13 for ``split``, ``chunk`` and ``unbind``, with the write under ``no_grad``
too; reading ``u.shape``, ``u.detach()``, ``u.item()``, ``u.tolist()``, ``u > 0``, ``f"{u}"`` does not raise, nor does
a use under ``no_grad``, nor a split of a copy: ``z.double().split(...)``). scmidas' batch correction (set CR,
labelled): ``c, u = z.split(...)``, then ``z[:, dim_c:] = centroid``, then ``self.s_decoder(u)``. Only what one
function does is followed: the split, the write and the use in its own body, the view held by a plain name.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Optional, Tuple

from ..findings import Origin, StepKind
from ..rules import Write
from .fixplan.facts import FunctionFacts
from .grad import grad_mode_of
from .holders import binds, rebound_without_grad, statement_of
from .rereads import following

#: a view's attributes and methods that make no autograd node of it (its metadata, a copy out of autograd, integer
#: results): reading the view so does not raise
_NOT_A_USE = frozenset({"shape", "dtype", "device", "size", "ndim", "dim", "numel", "detach", "requires_grad",
                        "is_cuda", "data", "element_size", "stride", "storage_offset", "is_contiguous", "item",
                        "tolist", "argmax", "argmin", "argsort", "nonzero", "any", "all", "eq", "ne", "gt", "lt",
                        "ge", "le", "isnan", "isinf", "isfinite"})
#: builtins that read a tensor's values (or none) without autograd
_NOT_A_USE_CALLS = frozenset({"str", "repr", "bool", "float", "int", "len", "print", "format", "isinstance", "type",
                              "id", "hash"})


def _not_a_use(facts, load: ast.Name) -> bool:
    """``load`` (of a view) feeds nothing autograd records: ``u.shape``, ``u.detach()``, ``u.item()``, ``u > 0``,
    ``f"{u}"``, ``print(u)``. ``u.sum() > 0`` records the sum: a use."""
    parent = facts.parent(load)
    return isinstance(parent, ast.Attribute) and parent.attr in _NOT_A_USE or isinstance(
        parent, (ast.Compare, ast.FormattedValue)) or isinstance(parent, ast.Call) and isinstance(
        parent.func, ast.Name) and parent.func.id in _NOT_A_USE_CALLS


def _storage_root(origin: Origin) -> Origin:
    """``origin`` without the view steps it ends with: the tensor whose storage a view of it writes."""
    steps = origin.steps
    while steps and steps[-1].kind is StepKind.VIEW:
        steps = steps[:-1]
    return replace(origin, steps=steps)


class StaleViewsMixin:
    """A part of :class:`~.dataflow.Scope`, asked by :meth:`~.reporting.ReportingMixin.report` when the written
    tensor's own origins match no rule."""

    def read_after_rebinding(self, facts: FunctionFacts, held: ast.stmt, load: ast.Name) -> bool:
        """``load`` reads ``load.id`` after a binding, on every path from ``held``, to a value no gradient passes into
        from the one ``held`` left there (``times = torch.ceil(times).long()``: :func:`.holders.rebound_without_grad`):
        it reads another tensor (asked by :meth:`~.grad_reads.GradReadsMixin._output_read_without_grad`)."""
        at = statement_of(facts, load)
        return at is not None and rebound_without_grad(facts, held, at, load.id)

    def stale_multi_view(self, node: ast.AST, base: Optional[str], write: Write) -> Optional[Tuple[Origin, Write]]:
        """The origin of a local name bound to one output of ``split``/``chunk``/``unbind`` of the tensor whose
        storage the write reaches (through views only: not a copy made by ``.double()`` or ``.contiguous()``), which
        the function uses again after ``node`` in an op that autograd records (not under a grad-off block, not a
        comparison, ``.item()``, ``.tolist()``, a shape); and ``write`` with that use (:attr:`.rules.Write.base_of`).
        None where there is none, in a function that runs with grad off, or where nothing shows that the written
        tensor requires grad. A write under ``no_grad`` counts: the version counter moves all the same. ``base``: the
        local name the write reaches (``z`` of ``z[:, 3:] = v``; a dotted name is none)."""
        func = self.func
        if base is None or "." in base or func is None or isinstance(func, ast.Module) or any(
                grad_mode_of(d) is False for d in getattr(func, "decorator_list", ())):
            return None
        bases = [_storage_root(b) for b in self.env.get(base, ()) if b.is_tensor and b.grad_evidence]
        if not bases:
            return None
        facts = self.facts()
        stmt = statement_of(facts, node)
        if stmt is None:
            return None
        for name in sorted(self.env):
            if name == base or "." in name or "[" in name:
                continue
            views = [v for v in self.env[name] if v.is_tensor and any(_split_of(v, b) for b in bases)]
            use = self._use_after(facts, stmt, name) if views else None
            if use is not None:
                return min(views, key=lambda o: (o.root_line, o.root_text, len(o.steps))), replace(
                    write, base_of=(name, use.lineno))
        return None

    def _use_after(self, facts, stmt: ast.stmt, name: str) -> Optional[ast.Name]:
        """The first load of ``name`` after ``stmt`` on some path (:func:`.rereads.following`: branches, loops,
        ``return`` and bindings followed) whose value goes into an op autograd records; past loads that do not
        (``u.detach()``, ``u.item()``, ``u > 0``, ``f"{u}"``, a read in a grad-off block), to the next."""
        seen = set()
        while len(seen) < 12:
            seen.add(id(stmt))
            load = following(facts, stmt, name)
            if load is None:
                return None
            if not _not_a_use(facts, load) and not self.in_grad_off_block(load):
                return load
            stmt = statement_of(facts, load)
            if stmt is None or id(stmt) in seen or binds(stmt, name):
                return None
        return None


def _split_of(view: Origin, base: Origin) -> bool:
    """``view`` is one output of a multi-output view op of ``base`` or of a view of it (view steps only before)."""
    if not view.has(StepKind.ELEMENT) or not view.derived_from(base):
        return False
    for step in view.steps[len(base.steps):]:
        if step.kind is StepKind.MULTI_VIEW:
            return True
        if step.kind is not StepKind.VIEW:
            return False
    return False
