"""The codemod: turn the analysis's fix plans into text edits, once per file (libcst).

The analysis decides which findings have a fix and whether it is safe
(:mod:`inplace_lint.analysis.fixplan`). :func:`attach_edits` turns the plans of one file into
:class:`~inplace_lint.findings.Edit` lists, stored in ``Finding.fix.edits``; ``fix``, JSON
``fix.edits``, SARIF ``fixes`` and the language server's quick fixes all apply those same edits
(:func:`apply_edits`), so what is advertised is what is applied. A plan the codemod cannot write
loses its fix there (``fix`` None), so it is not advertised either.

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

Also runnable as ``python -m libcst.tool codemod -x inplace_lint.fix.codemod.InplaceToOutOfPlace PATH``.
"""
from __future__ import annotations

import ast
import bisect
import dataclasses
import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from .. import config, textpos
from ..torch_facts import ops
from ..config import DEFAULT_SETTINGS, Settings
from ..findings import Applicability, Edit, Finding, FixKind, WriteKind

STYLES = config.FIX_STYLES
RUNTIME_MODULE = "inplace_lint.runtime"
DTENSOR_MODULE = "torch.distributed.tensor"
#: where torch before 2.5 keeps ``DTensor`` (2.0 to 2.4; later versions keep it as an alias)
DTENSOR_OLD_MODULE = "torch.distributed._tensor"
#: modules whose ``DTensor`` is the real class (an existing import of it is reused)
DTENSOR_MODULES = (DTENSOR_MODULE, DTENSOR_OLD_MODULE)


def dtensor_import_form(torch_floor: Optional[Tuple[int, int]]) -> str:
    """How the inline style gets ``DTensor`` on a project whose oldest torch is ``torch_floor``:
    ``"none"`` below 2.0 (no DTensor exists: no guard is written), ``"public"`` from 2.5
    (``from torch.distributed.tensor import DTensor``), else ``"guarded"`` (2.0 to 2.4, or a floor the
    project does not state): ``torch.distributed.tensor`` with a fallback to ``torch.distributed._tensor``
    on ``ImportError`` (docs/pytorch-facts.md#dtensor-module)."""
    if torch_floor is None:
        return "guarded"
    if torch_floor < (2, 0):
        return "none"
    return "public" if torch_floor >= (2, 5) else "guarded"


@dataclass
class FixResult:
    """What ``fix`` did to one file. ``new_source`` is None when nothing changed."""

    path: str
    applied: List[Finding] = field(default_factory=list)
    unsafe_skipped: List[Finding] = field(default_factory=list)
    #: findings with no correct out-of-place form (or one this file's layout does not allow)
    unfixed: List[Finding] = field(default_factory=list)
    new_source: Optional[str] = None
    old_source: Optional[str] = None
    error: Optional[str] = None
    written: bool = False
    #: the edits applied (merged, in source order)
    edits: List[Edit] = field(default_factory=list)
    #: the rewrite adds the file's first import of ``inplace_lint.runtime`` (a new dependency)
    adds_runtime_import: bool = False
    #: the floor the rewrite was written for (:mod:`inplace_lint.floor`)
    floor: Optional[object] = None

    @property
    def remaining(self) -> List[Finding]:
        return self.unsafe_skipped + self.unfixed


# --------------------------------------------------------------------------- edits


def apply_edits(source: str, edits: Iterable[Edit]) -> str:
    """``source`` with ``edits`` applied (lines 1-based, character columns 0-based).

    Identical edits (two findings sharing an import or a statement) count once; insertions at one
    point (imports) are merged into one import block (:func:`merge_edits`). Overlapping
    replacements raise ``ValueError``.
    """
    lines = textpos.split_lines(source)
    starts = textpos.offsets(lines)

    def offset(line: int, col: int) -> int:
        if line > len(lines):
            return len(source)
        return starts[line - 1] + col

    out: List[str] = []
    pos = 0
    for edit in merge_edits(edits):
        start, end = offset(edit.line, edit.col), offset(edit.end_line, edit.end_col)
        if start < pos:
            raise ValueError(f"overlapping edits at line {edit.line}")
        out.append(source[pos:start])
        out.append(edit.content)
        pos = end
    out.append(source[pos:])
    return "".join(out)


def merge_edits(edits: Iterable[Edit]) -> List[Edit]:
    """Edits in source order, duplicates dropped, insertions at one point merged into one import
    block: the import lines of all of them, sorted, then the widest separator."""
    unique = sorted(set(edits), key=lambda e: (e.line, e.col, e.end_line, e.end_col, e.content))
    merged: List[Edit] = []
    for edit in unique:
        prev = merged[-1] if merged else None
        if prev is not None and _is_insertion(prev) and _is_insertion(edit) and \
                (prev.line, prev.col) == (edit.line, edit.col):
            merged[-1] = _merge_imports(prev, edit)
        else:
            merged.append(edit)
    return merged


_FROM_IMPORT = re.compile(r"^from ([\w.]+) import ([\w, ]+)$")


def _join_from_imports(lines: List[str]) -> List[str]:
    """``from m import a`` and ``from m import b`` as one ``from m import a, b`` (as libcst's
    ``AddImportsVisitor`` writes them); other statements unchanged. Sorted."""
    names: Dict[str, Set[str]] = {}
    other: List[str] = []
    for line in lines:
        match = _FROM_IMPORT.match(line)
        if match is None:
            other.append(line)
        else:
            names.setdefault(match.group(1), set()).update(n.strip() for n in match.group(2).split(","))
    joined = [f"from {module} import {', '.join(sorted(found, key=lambda n: n.split(' as ')[0]))}"
              for module, found in names.items()]
    return sorted(joined + other)


def _is_insertion(edit: Edit) -> bool:
    return (edit.line, edit.col) == (edit.end_line, edit.end_col)


def _merge_imports(a: Edit, b: Edit) -> Edit:
    def parts(content: str) -> Tuple[str, List[str], str, str]:
        nl = "\r\n" if "\r\n" in content else ("\r" if "\r" in content and "\n" not in content else "\n")
        lead = nl if content.startswith(nl) else ""
        body = content[len(lead):]
        lines: List[str] = []  # one entry per statement: a `try:` import block stays whole
        for ln in body.split(nl):
            if not ln.strip():
                continue
            if lines and (ln[:1] in " \t" or ln.startswith(("except", "else:", "finally:"))):
                lines[-1] += nl + ln
            else:
                lines.append(ln)
        tail = body[len(body.rstrip("\r\n")):]
        return lead, lines, tail, nl

    lead_a, lines_a, tail_a, nl = parts(a.content)
    lead_b, lines_b, tail_b, _ = parts(b.content)
    lines = _join_from_imports(sorted(set(lines_a) | set(lines_b)))
    tail = max(tail_a, tail_b, key=len)
    return dataclasses.replace(a, content=(lead_a or lead_b) + nl.join(lines) + tail)


# --------------------------------------------------------------------------- planning edits


@dataclass
class _Group:
    """One statement that carries fixes, and how its whole lines are rebuilt."""

    stmt: ast.stmt
    findings: List[Finding]
    first: int  # first replaced line (1-based)
    last: int  # last replaced line
    indent: str  # the statement's indentation in the output ("" at module level)
    prefix: str = ""  # one-line suite: the header (``if T != 1:``), which stays on its line
    snippet: str = ""  # the statement's text, from its first character
    #: per hoisted finding: the source text of its write (to find it again in the libcst tree)
    segments: Dict[int, str] = field(default_factory=dict)
    #: per finding: the imports it needs, (module, name)
    imports: Dict[int, Set[Tuple[str, str]]] = field(default_factory=dict)
    done: Set[int] = field(default_factory=set)
    text: Optional[str] = None  # the rebuilt lines
    #: per finding with a planned ``scaling``: its (temperature, eps) source text
    scalings: Dict[int, Tuple[str, str]] = field(default_factory=dict)


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
    newline = _newline(lines)
    unit = _indent_unit(tree, lines)
    names = _ImportNames(source, tree, dtensor_import_form(torch_floor), unit)
    for g in groups:
        g.indent = g.indent.replace("\0", unit)
        g.scalings = {id(f): scaling_text(lines, f.fix.scaling) for f in g.findings if f.fix.scaling is not None}
    slow = [g for g in groups if not _fast(g, lines, newline, style, memory_aware, unit, names)]
    if slow:
        from .render import render  # libcst: only for statements the text path does not cover

        render(slow, newline, unit, style, memory_aware, names)
    importer = _Imports(tree, lines, newline, names)
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


def _fast(group: _Group, lines: List[str], newline: str, style: str, memory_aware: bool, unit: str,
          names: "_ImportNames") -> bool:
    """The rewrite of a one-line ``x.op_(args)`` / ``x op= v`` statement (alone on its line or in a
    one-line suite), written from its text without libcst: byte for byte what :mod:`.render` writes
    (a test compares the two over the generated family). Returns False, leaving the group to libcst,
    for any other shape."""
    if group.first != group.last or len(group.findings) != 1:
        return False
    finding = group.findings[0]
    stmt = group.stmt
    if finding.fix.kind is not FixKind.STATEMENT:
        return False
    line = textpos.line_text(lines, group.first)
    start = textpos.char_column(line, stmt.col_offset)
    end = textpos.char_column(line, stmt.end_col_offset or 0)
    text, tail = line[start:end], lines[group.first - 1][end:]
    if "#" in text or "\\" in text:
        return False
    name = finding.target
    if finding.write_kind is WriteKind.METHOD and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == name):
            return False
        head = f"{name}.{func.attr}("
        if not (text.startswith(head) and text.endswith(")")):
            return False
        method, args = func.attr, text[len(head):-1]
        if args != args.strip() or (memory_aware and args.endswith(",")):
            return False
        operands = [a.value if isinstance(a, ast.Starred) else a for a in stmt.value.args] + \
            [k.value for k in stmt.value.keywords]
        operands.sort(key=lambda n: (n.lineno, n.col_offset))
    elif finding.write_kind is WriteKind.AUGMENTED and isinstance(stmt, ast.AugAssign) and \
            isinstance(stmt.target, ast.Name) and stmt.target.id == name:
        symbol = ops.AST_AUGMENTED.get(type(stmt.op).__name__)
        method = ops.AUGMENTED_INPLACE.get(symbol or "")
        rest = text[len(name):].lstrip()
        if method is None or not rest.startswith(symbol):
            return False
        args = rest[len(symbol):].strip()
        operands = [stmt.value]
    else:
        return False
    indent = group.indent
    out: List[str] = []
    if style == "runtime" and finding.fix.scaling is not None:
        local, _ = names.get(RUNTIME_MODULE, "scale_logits")
        call = scale_call(local, name, finding.fix, memory_aware, group.scalings[id(finding)])
        out.append(f"{indent}{name} = {call}{tail}")
        group.imports[id(finding)] = {(RUNTIME_MODULE, "scale_logits")}
    elif style == "runtime":
        local, _ = names.get(RUNTIME_MODULE, "out_of_place")
        call = [name, f'"{method}"'] + ([args] if args else []) + (['inplace="auto"'] if memory_aware else [])
        out.append(f"{indent}{name} = {local}({', '.join(call)}){tail}")
        group.imports[id(finding)] = {(RUNTIME_MODULE, "out_of_place")}
    else:
        loose = [o for o in operands if not _ast_constant(o)]
        if names.dtensor_form != "none" and any(not isinstance(o, ast.Name) for o in loose):
            # operands to hold in temporaries first (render.py's ``hold``, the same text)
            held = _hold_from_text(line, start + len(text) - len(args) - (1 if text.endswith(")") and
                                   finding.write_kind is WriteKind.METHOD else 0), args, operands, name, names)
            if held is None:
                return False
            temps, args = held
            out += [f"{indent}{temp} = {value}{newline}" for temp, value in temps]
            held_names = iter(temp for temp, _ in temps)  # the operands, in order, as the guard sees them
            loose = [o if isinstance(o, ast.Name) else ast.Name(id=next(held_names), ctx=ast.Load()) for o in loose]
            if method not in ops.OUT_OF_PLACE_TWINS:
                text = f"{name}.{method}({args})"
        bare = [o.id for o in loose if o.id != name] if names.dtensor_form != "none" else []
        if bare:
            dt, _ = names.get(DTENSOR_MODULE, "DTensor")
            condition = guard_condition(name, dt, [], list(dict.fromkeys(bare)))
            out += [f"{indent}if {condition}:{newline}", f"{indent}{unit}{name} = {name}.full_tensor(){newline}"]
            group.imports[id(finding)] = {(DTENSOR_MODULE, "DTensor")}
        if method not in ops.OUT_OF_PLACE_TWINS:
            out += [f"{indent}{name} = {name}.clone(){newline}", f"{indent}{text}{tail}"]
        else:
            out.append(f"{indent}{name} = {name}.clone().{method}({args}){tail}")
    text = "".join(out)
    if not text.endswith(("\n", "\r")):
        text += newline
    group.text = (group.prefix + newline if group.prefix else "") + text
    group.done.add(id(finding))
    return True


def scaling_text(lines: List[str], scaling) -> Tuple[str, str]:
    """(temperature, eps) source text of a planned :class:`~inplace_lint.findings.Scaling`."""
    def text(span: Tuple[int, int, int, int]) -> str:
        line, col, end_line, end_col = span
        head, tail = textpos.line_text(lines, line), textpos.line_text(lines, end_line)
        start, end = textpos.char_column(head, col), textpos.char_column(tail, end_col)
        if line == end_line:
            return head[start:end]
        return head[start:] + lines[line - 1][len(head):] + "".join(lines[line:end_line - 1]) + tail[:end]

    eps = scaling.eps if isinstance(scaling.eps, str) else text(scaling.eps)
    return "".join(text(s) for s in scaling.temperature), eps


def scale_call(func: str, name: str, fix, memory_aware: bool, texts: Tuple[str, str]) -> str:
    """The runtime style's call for the temperature idiom (``fix.scaling``, planned by the analysis):
    ``scale_logits(logits, T.unsqueeze(-1), eps=1e-8, broadcast="trailing", inplace="auto")``.
    ``inplace="auto"`` (in place wherever autograd allows it: no logits-sized copy, as the original) is
    written where the fix is safe (nothing else reads the tensor afterwards, so writing it in place
    cannot be seen) or with ``--memory-aware``; an unsafe fix divides out of place."""
    scale = fix.scaling
    temperature, eps = texts
    args = [name, temperature]
    if eps:
        args.append(f"eps={eps}")
    if scale.trailing:
        args.append('broadcast="trailing"')
    if memory_aware or fix.applicability is Applicability.SAFE:
        args.append('inplace="auto"')
    return f"{func}({', '.join(args)})"


def guard_condition(name: str, dt: str, roots: Sequence[str], bare_names: Optional[Sequence[str]]) -> str:
    """The DTensor guard's test, decided at run time on the operands themselves: gather ``name`` when it
    is a DTensor, no operand is one, and one operand (``bare_names``: each non-literal operand, held in a
    name, a temporary when it was an expression) is a tensor with ndim > 0. A DTensor mixes fine with a
    Python number, a 0-dim tensor or another DTensor (docs/pytorch-facts.md#dtensor-mixing), so gathering
    there would turn working DTensor code into a plain tensor next to DTensors (the MoE router's
    ``rw /= rw.sum(-1, keepdim=True)``). ``roots`` (names an operand expression is computed from) is only
    used where an operand could not be held in a name (a ``*args`` call)."""
    condition = f"isinstance({name}, {dt})" + "".join(f" and not isinstance({r}, {dt})" for r in roots)
    if bare_names:
        condition += "".join(f" and not isinstance({n}, {dt})" for n in bare_names if n not in roots)
        sized = " or ".join(f'getattr({n}, "ndim", 0) > 0' for n in bare_names)
        condition += f" and ({sized})" if len(bare_names) > 1 else f" and {sized}"
    return condition


def _ast_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is not Ellipsis


def _ast_constant(node: ast.expr) -> bool:
    """A literal, ``...`` or a unary operator on a literal (``-1``): never a tensor, never held."""
    if isinstance(node, ast.UnaryOp) and _ast_literal(node.operand):
        return True
    return isinstance(node, ast.Constant)


_GAP_FIRST = re.compile(r"\s*(?:\w+\s*=\s*)?")
_GAP = re.compile(r"\s*,\s*(?:\w+\s*=\s*)?")
_GAP_LAST = re.compile(r"\s*,?\s*")


def _hold_from_text(line: str, args_start: int, args: str, operands: Sequence[ast.expr], name: str,
                    names: "_ImportNames") -> Optional[Tuple[List[Tuple[str, str]], str]]:
    """The temporaries of :meth:`inplace_lint.fix.render._Rewriter.hold`, from the text of a one-line call's
    arguments (``args``, starting at character ``args_start`` of ``line``): ``[(temp, operand text)]`` and the
    arguments with each held operand replaced by its temporary. None where the text is not plain
    ``operand, key=operand`` (a bracketed operand, a ``*`` argument): libcst writes those."""
    spans = []
    for o in operands:
        lo = textpos.char_column(line, o.col_offset) - args_start
        hi = textpos.char_column(line, o.end_col_offset or 0) - args_start
        if lo < 0 or hi > len(args):
            return None
        spans.append((lo, hi, o))
    pos = 0
    for i, (lo, hi, o) in enumerate(spans):
        gap = args[pos:lo]
        if not (_GAP_FIRST if i == 0 else _GAP).fullmatch(gap):
            return None
        pos = hi
    if not _GAP_LAST.fullmatch(args[pos:]):
        return None
    temps: List[Tuple[str, str]] = []
    pieces: List[str] = []
    pos = 0
    for lo, hi, o in spans:
        pieces.append(args[pos:lo])
        if _ast_constant(o) or isinstance(o, ast.Name):
            pieces.append(args[lo:hi])
        else:
            temp = names.temp(name, len(temps) + 1)
            temps.append((temp, args[lo:hi]))
            pieces.append(temp)
        pos = hi
    pieces.append(args[pos:])
    return temps, "".join(pieces)


def _ast_dotted(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _ast_dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def _ast_operand_roots(node: ast.expr, skip: Set[str]) -> List[str]:
    """:func:`inplace_lint.fix.render._operand_roots` on an ``ast`` node (the same rule, same order)."""
    if _ast_literal(node):
        return []
    if isinstance(node, ast.BinOp):
        return _ast_operand_roots(node.left, skip) + _ast_operand_roots(node.right, skip)
    if isinstance(node, ast.BoolOp):
        return [r for v in node.values for r in _ast_operand_roots(v, skip)]
    if isinstance(node, ast.UnaryOp):
        return _ast_operand_roots(node.operand, skip)
    if isinstance(node, ast.Compare):
        return _ast_operand_roots(node.left, skip)
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _ast_dotted(node.func.value) is None:
            node = node.func.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                (_ast_dotted(node.func.value) or "").split(".")[0] not in skip:
            node = node.func.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            break
    dotted = _ast_dotted(node)
    if dotted is None or dotted.split(".")[0] in skip:
        return []
    return [dotted]


def _newline(lines: List[str]) -> str:
    for text in lines:
        if text.endswith("\r\n"):
            return "\r\n"
        if text.endswith("\n"):
            return "\n"
        if text.endswith("\r"):
            return "\r"
    return "\n"


def _leading_ws(text: str) -> str:
    return text[: len(text) - len(text.lstrip(" \t\f"))]


def _indent_unit(tree: ast.Module, lines: List[str]) -> str:
    """The file's indentation step, as libcst infers it: the first indented block's indentation."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.stmt, ast.ExceptHandler)) and isinstance(body, list) and body and \
                isinstance(body[0], ast.stmt) and body[0].lineno > node.lineno:
            outer = _leading_ws(textpos.line_text(lines, node.lineno))
            inner = _leading_ws(textpos.line_text(lines, body[0].lineno))
            if inner.startswith(outer) and len(inner) > len(outer):
                return inner[len(outer):]
    return "    "


_COMPOUND_BODIES = ("body", "orelse", "finalbody")


def _groups(tree: ast.Module, lines: List[str], todo: Sequence[Finding]) -> List[_Group]:
    """The simple statements that hold the findings in ``todo``, each with the lines to rebuild."""
    pending = sorted(todo, key=lambda f: (f.line, f.col))
    keys = [(f.line, f.col) for f in pending]
    groups: List[_Group] = []
    _visit_statements(tree.body, None, lines, pending, keys, groups)
    return groups


def _visit_statements(body: List[ast.stmt], owner: Optional[ast.AST], lines: List[str],
                      pending: List[Finding], keys: List[Tuple[int, int]], groups: List[_Group]) -> None:
    for stmt in body:
        end = (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0)
        lo = bisect.bisect_left(keys, (stmt.lineno, stmt.col_offset))
        hi = bisect.bisect_right(keys, end)
        if lo == hi:
            continue
        blocks: List[Tuple[List[ast.stmt], ast.AST]] = []
        for name in _COMPOUND_BODIES:
            value = getattr(stmt, name, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                blocks.append((value, stmt))
        for handler in getattr(stmt, "handlers", []) or []:
            blocks.append((handler.body, handler))
        for case in getattr(stmt, "cases", []) or []:
            blocks.append((case.body, case.pattern))
        if blocks:
            for block, block_owner in blocks:
                _visit_statements(block, block_owner, lines, pending, keys, groups)
            continue
        group = _group(stmt, body, owner, lines, pending[lo:hi])
        if group is not None:
            groups.append(group)


def _group(stmt: ast.stmt, siblings: List[ast.stmt], owner: Optional[ast.AST], lines: List[str],
           findings: List[Finding]) -> Optional[_Group]:
    """Where ``stmt``'s lines are and how they are re-parsed; None when its layout has no whole-line rewrite."""
    first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
    head = textpos.line_text(lines, first)
    col = textpos.char_column(head, stmt.col_offset)
    tail = textpos.line_text(lines, last)[textpos.char_column(textpos.line_text(lines, last), stmt.end_col_offset or 0):]
    if tail.strip() and not tail.strip().startswith("#"):
        return None  # `x.div_(t); y = 1`
    before = head[:col]
    body = "".join(lines[first - 1:last])
    segments = {id(f): _segment(lines, f) for f in findings if f.fix.kind is FixKind.HOIST}
    if not before.strip():
        return _Group(stmt, findings, first, last, before, "", body[len(before):], segments)
    if not before.rstrip().endswith(":") or owner is None or len(siblings) != 1:
        return None  # after a semicolon, or one of several statements in a one-line suite
    owner_line = getattr(owner, "lineno", first)
    indent = _leading_ws(textpos.line_text(lines, owner_line)) + "\0"  # + the unit, filled in by _render
    return _Group(stmt, findings, first, last, indent, before.rstrip(), body[col:], segments)


def _segment(lines: List[str], f: Finding) -> str:
    """The source text of finding ``f``'s node."""
    head, tail = textpos.line_text(lines, f.line), textpos.line_text(lines, f.end_line)
    start, end = textpos.char_column(head, f.col), textpos.char_column(tail, f.end_col)
    if f.line == f.end_line:
        return head[start:end]
    return head[start:] + lines[f.line - 1][len(head):] + "".join(lines[f.line:f.end_line - 1]) + tail[:end]


class _ImportNames:
    """The names the rewrite uses for ``out_of_place``, ``scale_logits`` and ``DTensor`` in one file: an
    existing top-level import of the real object (also one inside a top-level ``try``, as in
    ``try: from torch.distributed.tensor import DTensor`` / ``except ImportError: from
    torch.distributed._tensor import DTensor``) is reused; otherwise the plain name when the file never
    uses it, else a fresh one (``DTensor = None`` must not turn the guard into a TypeError).

    ``dtensor_form`` (:func:`dtensor_import_form`) says how a new ``DTensor`` import is written; ``unit``
    is the file's indentation step (for the guarded import's ``try`` block)."""

    def __init__(self, source: str, tree: ast.Module, dtensor_form: str = "guarded", unit: str = "    ") -> None:
        self.source = source
        self.tree = tree
        self.dtensor_form = dtensor_form
        self.unit = unit
        self._cache: Dict[Tuple[str, str], Tuple[str, bool]] = {}
        self._words: Optional[Set[str]] = None

    def get(self, module: str, name: str) -> Tuple[str, bool]:
        """(local name, already imported)."""
        key = (module, name)
        if key not in self._cache:
            self._cache[key] = self._decide(module, name)
        return self._cache[key]

    def temp(self, target: str, index: int) -> str:
        """The name of the ``index``-th (from 1) temporary that holds an operand of a write to ``target``
        (``_logits_operand``, ``_logits_operand2``): a name the file never uses, the same in every path."""
        if self._words is None:
            self._words = set(re.findall(r"\w+", self.source))
        base = f"_{target}_operand"
        candidates = [base + (str(index) if index > 1 else "")] + [f"{base}{index}_{i}" for i in range(2, 100)]
        return next(c for c in candidates if c not in self._words)

    def _top_level_imports(self):
        for stmt in self.tree.body:
            if isinstance(stmt, ast.ImportFrom):
                yield stmt
            elif isinstance(stmt, ast.Try):
                for inner in stmt.body + [s for h in stmt.handlers for s in h.body]:
                    if isinstance(inner, ast.ImportFrom):
                        yield inner

    def _decide(self, module: str, name: str) -> Tuple[str, bool]:
        modules = DTENSOR_MODULES if module == DTENSOR_MODULE else (module,)
        bound: Dict[str, int] = {}
        found: Optional[str] = None
        for stmt in self._top_level_imports():
            if stmt.module in modules and stmt.level == 0:
                for alias in stmt.names:
                    if alias.name == name:
                        found = alias.asname or alias.name
        if found is not None:
            for node in ast.walk(self.tree):
                if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)) and node.id == found:
                    bound[found] = bound.get(found, 0) + 1
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == found:
                    bound[found] = bound.get(found, 0) + 1
                elif isinstance(node, ast.arg) and node.arg == found:
                    bound[found] = bound.get(found, 0) + 1
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    for alias in node.names:
                        if (alias.asname or alias.name.split(".")[0]) == found and not (
                                isinstance(node, ast.ImportFrom) and node.module in modules and alias.name == name):
                            bound[found] = bound.get(found, 0) + 1
            if not bound.get(found):
                return found, True
        candidates = [name] + [f"_{name}"] + [f"_{name}{i}" for i in range(2, 100)]
        for candidate in candidates:
            if not re.search(rf"\b{re.escape(candidate)}\b", self.source):
                return candidate, False
        return f"_{name}_inplace_lint", False  # pragma: no cover


class _Imports:
    """Import insertions, placed as libcst's ``AddImportsVisitor`` places them: after the first block
    of imports at the top (after the docstring), with a blank line before the next statement."""

    def __init__(self, tree: ast.Module, lines: List[str], newline: str, names: _ImportNames) -> None:
        self.newline = newline
        self.names = names
        body = tree.body
        start = 1 if body and _is_docstring_or_strict(body[0]) else 0
        index = start
        while index < len(body) and isinstance(body[index], (ast.Import, ast.ImportFrom)) and \
                not _shares_line(body, index):
            index += 1
        self.lead = ""
        if index == 0:
            self.line = _first_line(body[0]) if body else len(lines) + 1
            self.sep = newline if body else ""
        else:
            self.line = (body[index - 1].end_lineno or body[index - 1].lineno) + 1
            if index < len(body):
                next_line = textpos.line_text(lines, self.line)
                starts_next = _first_line(body[index]) == self.line
                self.sep = newline if starts_next or next_line.lstrip().startswith("#") else ""
            else:
                self.sep = ""
        self.col = 0
        if self.line > len(lines) and lines and not lines[-1].endswith(("\n", "\r")):
            self.line, self.col = len(lines), len(textpos.line_text(lines, len(lines)))
            self.lead = newline

    def edit(self, needed: Set[Tuple[str, str]]) -> Optional[Edit]:
        statements = []
        for module, name in sorted(needed):
            local, present = self.names.get(module, name)
            if present:
                continue
            alias = f" as {local}" if local != name else ""
            if module == DTENSOR_MODULE and self.names.dtensor_form == "guarded":
                # torch 2.0 to 2.4 keep DTensor in torch.distributed._tensor (docs/pytorch-facts.md#dtensor-module)
                unit, nl = self.names.unit, self.newline
                statements.append(f"try:{nl}{unit}from {DTENSOR_MODULE} import {name}{alias}{nl}"
                                  f"except ImportError:  # torch < 2.5{nl}"
                                  f"{unit}from {DTENSOR_OLD_MODULE} import {name}{alias}")
                continue
            statements.append(f"from {module} import {name}{alias}")
        if not statements:
            return None
        content = self.lead + self.newline.join(_join_from_imports(statements)) + ("" if self.lead else self.newline) + self.sep
        return Edit(self.line, self.col, self.line, self.col, content)


def _is_docstring_or_strict(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
        return True
    return isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
        isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == "__strict__"


def _shares_line(body: List[ast.stmt], index: int) -> bool:
    stmt = body[index]
    prev = body[index - 1] if index else None
    nxt = body[index + 1] if index + 1 < len(body) else None
    return (prev is not None and (prev.end_lineno or prev.lineno) == stmt.lineno) or \
        (nxt is not None and nxt.lineno == (stmt.end_lineno or stmt.lineno))


def _first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None) or []
    return min([stmt.lineno] + [d.lineno for d in decorators])


# --------------------------------------------------------------------------- fix: apply the advertised edits


def _applicable(finding: Finding, unsafe_fixes: bool) -> bool:
    return finding.fix is not None and bool(finding.fix.edits) and \
        (unsafe_fixes or finding.fix.applicability is Applicability.SAFE)


def fix_findings(source: str, result: FixResult, findings: Sequence[Finding], unsafe_fixes: bool,
                 python_floor: Optional[Tuple[int, int]] = None) -> None:
    """Apply the edits of the applicable ``findings`` (with edits attached) to ``source``: sets
    ``result.applied`` / ``unsafe_skipped`` / ``unfixed`` and ``new_source`` (None when unchanged).

    The result is re-parsed, with the grammar of ``python_floor`` (the project's oldest Python) when
    the original parses with it: a rewrite never needs a newer Python than the code it rewrites."""
    todo: List[Finding] = []
    for finding in findings:
        if _applicable(finding, unsafe_fixes):
            todo.append(finding)
        elif finding.fix is None:
            result.unfixed.append(finding)
        else:
            result.unsafe_skipped.append(finding)
    if not todo:
        return
    try:
        edits = merge_edits(e for f in todo for e in f.fix.edits)
        new = apply_edits(source, edits)
        ast.parse(new)  # a rewrite is re-parsed before anyone sees it
        version = python_floor if python_floor is not None and python_floor >= (3, 7) else None
        if version is not None:
            try:
                ast.parse(source, feature_version=version)
            except SyntaxError:
                version = None  # the original already needs a newer Python than the stated floor
        if version is not None:
            ast.parse(new, feature_version=version)
    except (SyntaxError, ValueError, RecursionError) as exc:  # pragma: no cover - a bug in the codemod
        result.error = f"internal error: the rewrite does not apply or parse ({exc}); file left unchanged"
        return
    result.applied.extend(todo)
    if new != source:
        result.new_source = new
        result.edits = edits
        result.adds_runtime_import = _imports_runtime(new) and not _imports_runtime(source)


def _imports_runtime(source: str) -> bool:
    return re.search(rf"^\s*from\s+{re.escape(RUNTIME_MODULE)}\s+import\b", source, re.MULTILINE) is not None


def unified_diff(path: str, source: str, edits: Sequence[Edit], context: int = 3) -> Optional[List[str]]:
    """``difflib.unified_diff``-style lines for ``edits`` applied to ``source``, built from the edits
    themselves (cost proportional to the change, not to the file: difflib's matcher is slow on a large
    file with thousands of edits)."""
    lines = textpos.split_lines(source)
    changes: List[Tuple[int, int, List[str]]] = []  # old [a, b) -> new lines
    for e in merge_edits(edits):
        a = e.line - 1
        b = e.end_line - 1 if e.end_col == 0 else e.end_line
        if e.col:
            b = max(b, a + 1)
        prefix = lines[a][:e.col] if e.col and a < len(lines) else ""
        suffix = lines[e.end_line - 1][e.end_col:] if e.end_col and e.end_line - 1 < len(lines) else ""
        if changes and changes[-1][1] > a:
            return None  # two edits on one line (not made by this codemod): let difflib do it
        changes.append((a, b, textpos.split_lines(prefix + e.content + suffix)))
    if not changes:
        return []
    out = [f"--- {path}\n", f"+++ {path}\n"]

    def rng(start: int, length: int) -> str:
        return f"{start + 1}" if length == 1 else f"{start if not length else start + 1},{length}"

    delta = 0
    i = 0
    while i < len(changes):
        j = i
        while j + 1 < len(changes) and changes[j + 1][0] - changes[j][1] <= 2 * context:
            j += 1
        lo = max(0, changes[i][0] - context)
        hi = min(len(lines), changes[j][1] + context)
        body: List[str] = []
        pos = lo
        new_len = 0
        for a, b, new in changes[i:j + 1]:
            body += [" " + ln for ln in lines[pos:a]]
            body += ["-" + ln for ln in lines[a:b]]
            body += ["+" + ln for ln in new]
            new_len += (a - pos) + len(new)
            pos = b
        body += [" " + ln for ln in lines[pos:hi]]
        new_len += hi - pos
        old_len = hi - lo
        new_start = lo + delta
        out.append(f"@@ -{rng(lo, old_len)} +{rng(new_start, new_len)} @@\n")
        out += body
        delta += sum(len(new) - (b - a) for a, b, new in changes[i:j + 1])
        i = j + 1
    return out


def fix_code(source: str, path: str = "<string>", *, settings: Settings = DEFAULT_SETTINGS, style: str = STYLES[0],
             unsafe_fixes: bool = False, select: Sequence[str] = (), ignore: Sequence[str] = (),
             memory_aware: bool = False,
             target: Tuple[Optional[Tuple[int, int]], Optional[Tuple[int, int]]] = (None, None),
             project=None) -> FixResult:
    """Fix ``source`` (text); ``result.new_source`` is the rewritten text, or None when unchanged.

    ``target``: (Python, torch) versions overriding the floor of the project ``path`` is in
    (:mod:`inplace_lint.floor`; ``--target-version`` / ``--torch-version``). ``project``: a
    :class:`~inplace_lint.workspace.ProjectMode` (see :func:`inplace_lint.pipeline.check_source`)."""
    from .. import floor
    from ..pipeline import check_source

    result = FixResult(path, old_source=source)
    result.floor = stated = floor.for_path(path).override(*target)
    checked = check_source(source, path, settings, select, ignore, fix_style=style, memory_aware=memory_aware,
                           target=(stated.python, stated.torch), project=project)
    if checked.error:
        result.error = checked.error
        return result
    fix_findings(source, result, checked.findings, unsafe_fixes, stated.python)
    return result


def fix_file(path: str, *, settings: Settings = DEFAULT_SETTINGS, style: str = STYLES[0], unsafe_fixes: bool = False,
             select: Sequence[str] = (), ignore: Sequence[str] = (), write: bool = True,
             memory_aware: bool = False,
             target: Tuple[Optional[Tuple[int, int]], Optional[Tuple[int, int]]] = (None, None),
             project=None) -> FixResult:
    """Fix one file in place (atomically: temp file + rename; a symlink keeps pointing at its target,
    which is rewritten; a file with other hard links is overwritten on its own inode, so every link reads
    the fixed text: :func:`atomic_write`); encoding, BOM and newlines are kept.

    A file that cannot be read or parsed is reported in ``result.error`` and left untouched; one that
    cannot be written too (``cannot write: ...``, nothing counted as applied).
    """
    import io
    import tokenize

    from ..source.files import read_bytes
    from ..pipeline import decode_problem

    result = FixResult(path)
    try:
        raw = read_bytes(path)  # a FIFO or device is refused, never read
    except OSError as exc:  # the words check uses for it (IPV000 cannot read: ...)
        result.error = f"cannot read: {exc.strerror or exc}"
        return result
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        source = raw.decode(encoding)
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:  # the same words as check's IPV000
        problem = decode_problem(exc, raw)
        result.error = f"{problem.message} (line {problem.line}, column {problem.col + 1})"
        return result
    fixed = fix_code(source, path, settings=settings, style=style, unsafe_fixes=unsafe_fixes, select=select,
                     ignore=ignore, memory_aware=memory_aware, target=target, project=project)
    fixed.old_source = source
    if fixed.new_source is not None and write:
        try:
            atomic_write(path, fixed.new_source.encode(encoding))
        except OSError as exc:
            fixed.error = f"cannot write: {exc}"
            fixed.new_source, fixed.applied = None, []
            return fixed
        fixed.written = True
    return fixed


def fix_one(source: str, path: str, finding: Finding, *, settings: Settings = DEFAULT_SETTINGS,
            style: str = STYLES[0], select: Sequence[str] = (), ignore: Sequence[str] = ()) -> Optional[str]:
    """``source`` with ``finding``'s advertised edits applied (safe or not: the caller asked for this
    one), or None when it has none. ``finding`` must carry its edits (``check_source(fix_style=...)``)."""
    if finding.fix is None or not finding.fix.edits:
        return None
    return apply_edits(source, finding.fix.edits)


def atomic_write(path: str, data: bytes) -> None:
    """Replace the contents of ``path`` by ``data`` via a temp file and a rename in the same folder.
    A symlink is resolved first: its target is written (once, even when several links or the target
    itself are fixed in one run, since the second run finds nothing to fix) and the link stays a link.

    A file with other hard links (``st_nlink > 1``) is written in place instead (:func:`write_in_place`):
    a rename would give ``path`` a new inode and leave the other names on the unfixed text."""
    path = os.path.realpath(path)
    if os.stat(path).st_nlink > 1:
        write_in_place(path, data)
        return
    folder = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".inplace-lint-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        try:
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        except OSError:
            pass
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_in_place(path: str, data: bytes) -> None:
    """Overwrite ``path``'s own inode with ``data`` (every hard link then reads the new text; inode, owner,
    mode and links are kept).

    The new text is first written in full to a temp file beside it and flushed to disk (so the space is
    there and a copy exists), then written over the file in one ``write`` and truncated, flushed, and the
    temp file removed. The crash window: a crash (power loss, ``kill -9``) during that one overwrite can
    leave the file part new, part old; the temp file ``.inplace-lint-*.tmp`` beside it then holds the
    whole new text. A file that cannot be opened for writing raises ``OSError`` with nothing written; an
    error while overwriting raises ``OSError`` naming the temp file, which is kept."""
    folder = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".inplace-lint-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        os.unlink(tmp)
        raise
    try:
        fh = open(path, "r+b")
    except BaseException:  # not writable: nothing was written
        os.unlink(tmp)
        raise
    with fh:
        try:
            fh.write(data)
            fh.truncate()
            fh.flush()
            os.fsync(fh.fileno())
        except OSError as exc:
            raise OSError(exc.errno, f"{exc.strerror or exc}: {path} may be part written; "
                                     f"its fixed text is in {tmp}") from exc
    os.unlink(tmp)


_atomic_write = atomic_write  # the old private name


def __getattr__(name: str):
    if name == "InplaceToOutOfPlace":  # the libcst command (imports libcst.codemod, so only on demand)
        from .libcst_command import InplaceToOutOfPlace

        return InplaceToOutOfPlace
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _terminated(text: str, newline: str) -> str:
    return text if text.endswith(("\n", "\r")) else text + newline


def _module_names(tree: ast.Module) -> Set[str]:
    """Names bound by imports anywhere in the module (``torch``, ``F``, ``math``): never tensors."""
    out: Set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            out.update((a.asname or a.name.split(".")[0]) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.update((a.asname or a.name) for a in node.names if a.name[:1].islower() or a.name in ("F",))
    return out
