"""Attach edits: turn the planned fixes of one file into :class:`~inplace_lint.findings.Edit` lists
(``Fix.edits``), once per file, with the text printer where it covers the statement and libcst elsewhere.

The analysis decides which findings have a fix, how it is written and whether it is safe
(:mod:`inplace_lint.analysis.fixplan`: the :class:`~inplace_lint.findings.Recipe` on each fix);
:func:`attach_edits` only prints it. ``fix``, JSON ``fix.edits``, SARIF ``fixes`` and the language
server's quick fixes all apply those same edits (:func:`inplace_lint.fix.edits.apply_edits`), so what is
advertised is what is applied. A plan the printers cannot write loses its fix there (``fix`` None).

Only the statements that carry a fix are parsed with libcst, all of one file in one small module
(each wrapped in ``if True:`` at its own indentation, so their text, comments and continuation
lines come back byte for byte); the file itself is never parsed with libcst, and no analysis runs
again. Every other byte of the file (comments, blank lines, quotes, CRLF, a BOM, an encoding
cookie) is kept. An edit replaces whole lines; an import is inserted where libcst's
``AddImportsVisitor`` would put it.

Styles (``--style``, names in :data:`inplace_lint.config.FIX_STYLES`):

- ``inline`` (default): plain torch, no dependency, with the DTensor guard of the upstream verl fix
  (PR 6935), decided at run time on the actual operands (an operand that is an expression is held in a
  temporary first)::

      if isinstance(x, DTensor) and not isinstance(t, DTensor) and getattr(t, "ndim", 0) > 0:
          x = x.full_tensor()
      x = x.clone().div_(t)

  The op runs in place on a copy: same kernel, so the same values, dtype, and the same error where
  the original raises (``int64 /= 2``, a broadcast that would grow ``x``), which ``(x / t).to(x.dtype)``
  would hide. The guard gathers ``x`` only when no operand is itself a DTensor (a DTensor op with a
  DTensor operand needs no gather; gathering one side would mix them).
- ``runtime``: one readable line that calls :func:`inplace_lint.runtime.out_of_place`, which keeps the
  in-place op's dtype, raises where the in-place op raises (a result dtype that cannot be cast back, a
  shape that would grow) and gathers a ``DTensor`` operand mix: ``x = out_of_place(x, "div_", t)``; the
  temperature idiom becomes ``scale_logits(...)``, with ``inplace="auto"`` where the fix is safe.
  ``--memory-aware`` adds ``inplace="auto"`` to the other calls too.

Ops with no out-of-place twin (``copy_``, ``zero_``, ``fill_``, random fills) and item assignment
get ``x = x.clone()`` first: correct, at the cost of one copy. ``torch.relu_(x)`` becomes
``x = torch.relu_(x.clone())``; ``out=x`` becomes ``out=torch.empty_like(x)`` (the same dtype check
and resize rules); ``F.relu(x, inplace=True)`` loses its flag.
"""
from __future__ import annotations

import ast
import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

from .. import config, textpos
from ..findings import Applicability, Edit, Finding
from .forms import scaling_text
from .imports import Imports, ImportNames, dtensor_import_form
from .statements import groups as _groups, indent_unit, newline_of
from .text_printer import print_text

STYLES = config.FIX_STYLES


def attach_edits(source: str, tree: ast.Module, findings: Sequence[Finding], style: str = STYLES[0],
                 memory_aware: bool = False, torch_floor: Optional[Tuple[int, int]] = None) -> List[Finding]:
    """``findings`` with ``fix.edits`` filled for ``style``; a planned fix the codemod cannot write
    loses its ``fix``. One libcst parse for all the file's fixable statements, no analysis.

    ``tree`` is ``ast.parse(source)``; ``torch_floor`` is the oldest torch the file's project runs on
    (:mod:`inplace_lint.floor`; None: not stated), which decides how the inline DTensor guard imports
    ``DTensor`` (:func:`dtensor_import_form`). Raises ``ValueError`` for an unknown style.
    """
    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, got {style!r}")
    todo = [f for f in findings if f.fix is not None]
    if not todo:
        return list(findings)
    lines = textpos.split_lines(source)
    groups = _groups(tree, lines, todo)
    newline = newline_of(lines)
    unit = indent_unit(tree, lines)
    names = ImportNames(source, tree, dtensor_import_form(torch_floor), unit)
    for g in groups:
        g.indent = g.indent.replace("\0", unit)
        g.scalings = {id(f): scaling_text(lines, f.fix.scaling) for f in g.findings if f.fix.scaling is not None}
    slow = [g for g in groups if not print_text(g, lines, newline, style, memory_aware, unit, names)]
    if slow:
        from .cst_printer import render  # libcst: only for statements the text path does not cover

        render(slow, newline, unit, style, memory_aware, names)
    importer = Imports(tree, lines, newline, names)
    edits: Dict[int, Tuple[Edit, ...]] = {}
    fixes: Dict[int, object] = {}
    for group in groups:
        if group.text is None or not group.done:
            continue
        end = (group.last + 1, 0) if group.last < len(lines) or lines[-1].endswith(("\n", "\r")) else \
            (group.last, len(textpos.line_text(lines, group.last)))
        text = group.text
        if end[1] != 0 and text.endswith(newline):  # the last line had no newline: keep it that way
            text = text[: -len(newline)]
        statement_edit = Edit(group.first, 0, end[0], end[1], text)
        done = [f for f in group.findings if id(f) in group.done]
        # findings that share a statement share its edit: they are applied together, so they carry the
        # weakest applicability of the group (what is advertised stays what is applied)
        unsafe = [f for f in done if f.fix.applicability is not Applicability.SAFE]
        for f in done:
            needed = set().union(*(group.imports.get(id(g), set()) for g in done))
            extra = importer.edit(needed)
            edits[id(f)] = tuple(([extra] if extra else []) + [statement_edit])
            fix = f.fix
            if unsafe and fix.applicability is Applicability.SAFE:
                fix = dataclasses.replace(fix, applicability=unsafe[0].fix.applicability, reason=unsafe[0].fix.reason)
            fixes[id(f)] = fix
    out = []
    for f in findings:
        if f.fix is None:
            out.append(f)
        elif id(f) in edits:
            out.append(dataclasses.replace(f, fix=dataclasses.replace(fixes[id(f)], edits=edits[id(f)])))
        else:
            out.append(dataclasses.replace(f, fix=None))
    return out

