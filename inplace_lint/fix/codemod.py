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

- ``runtime`` (default): one readable line that calls :func:`inplace_lint.runtime.out_of_place`,
  which keeps the in-place op's dtype, raises where the in-place op raises (a result dtype that
  cannot be cast back, a shape that would grow) and gathers a ``DTensor`` operand mix:
  ``x = out_of_place(x, "div_", t)``. ``--memory-aware`` adds ``inplace="auto"``.
- ``inline``: plain torch, no dependency, with the DTensor guard of the upstream verl fix (PR 6935)::

      if isinstance(x, DTensor) and not isinstance(t, DTensor):
          x = x.full_tensor()
      x = x.clone().div_(t)

  The op runs in place on a copy: same kernel, so the same values, dtype, and the same error where
  the original raises (``int64 /= 2``, a broadcast that would grow ``x``), which ``(x / t).to(x.dtype)``
  would hide. The guard gathers ``x`` only when no operand is itself a DTensor (a DTensor op with a
  DTensor operand needs no gather; gathering one side would mix them).

Ops with no out-of-place twin (``copy_``, ``zero_``, ``fill_``, random fills) and item assignment
get ``x = x.clone()`` first: correct, at the cost of one copy. ``torch.relu_(x)`` becomes
``x = torch.relu_(x.clone())``; ``out=x`` becomes ``out=torch.empty_like(x)`` (the same dtype check
and resize rules); ``F.relu(x, inplace=True)`` loses its flag.

Also runnable as ``python -m libcst.tool codemod -x inplace_lint.fix.codemod.InplaceToOutOfPlace PATH``.
"""
from __future__ import annotations

import argparse
import ast
import bisect
import dataclasses
import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand

from .. import config, textpos
from ..analysis import ops
from ..config import DEFAULT_SETTINGS, Settings
from ..findings import Applicability, Edit, Finding, FixKind, WriteKind

STYLES = config.FIX_STYLES
RUNTIME_MODULE = "inplace_lint.runtime"
DTENSOR_MODULE = "torch.distributed.tensor"
#: modules whose ``DTensor`` is the real class (an existing import of it is reused)
DTENSOR_MODULES = (DTENSOR_MODULE, "torch.distributed._tensor")


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


def _is_insertion(edit: Edit) -> bool:
    return (edit.line, edit.col) == (edit.end_line, edit.end_col)


def _merge_imports(a: Edit, b: Edit) -> Edit:
    def parts(content: str) -> Tuple[str, List[str], str, str]:
        nl = "\r\n" if "\r\n" in content else ("\r" if "\r" in content and "\n" not in content else "\n")
        lead = nl if content.startswith(nl) else ""
        body = content[len(lead):]
        lines = [ln for ln in body.split(nl) if ln.strip()]
        tail = body[len(body.rstrip("\r\n")):]
        return lead, lines, tail, nl

    lead_a, lines_a, tail_a, nl = parts(a.content)
    lead_b, lines_b, tail_b, _ = parts(b.content)
    lines = sorted(set(lines_a) | set(lines_b))
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


def attach_edits(source: str, tree: ast.Module, findings: Sequence[Finding], style: str = "runtime",
                 memory_aware: bool = False) -> List[Finding]:
    """``findings`` with ``fix.edits`` filled for ``style``; a planned fix the codemod cannot write
    loses its ``fix``. One libcst parse for all the file's fixable statements, no analysis.

    ``tree`` is ``ast.parse(source)``. Raises ``ValueError`` for an unknown style.
    """
    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, got {style!r}")
    todo = [f for f in findings if f.fix is not None]
    if not todo:
        return list(findings)
    lines = textpos.split_lines(source)
    groups = _groups(tree, lines, todo)
    newline = _newline(lines)
    names = _ImportNames(source, tree)
    unit = _indent_unit(tree, lines)
    _render(groups, newline, unit, style, memory_aware, names)
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
    """The names the rewrite uses for ``out_of_place`` and ``DTensor`` in one file: an existing
    top-level import of the real object is reused; otherwise the plain name when the file never
    uses it, else a fresh one (``DTensor = None`` must not turn the guard into a TypeError)."""

    def __init__(self, source: str, tree: ast.Module) -> None:
        self.source = source
        self.tree = tree
        self._cache: Dict[Tuple[str, str], Tuple[str, bool]] = {}

    def get(self, module: str, name: str) -> Tuple[str, bool]:
        """(local name, already imported)."""
        key = (module, name)
        if key not in self._cache:
            self._cache[key] = self._decide(module, name)
        return self._cache[key]

    def _decide(self, module: str, name: str) -> Tuple[str, bool]:
        modules = DTENSOR_MODULES if module == DTENSOR_MODULE else (module,)
        bound: Dict[str, int] = {}
        found: Optional[str] = None
        for stmt in self.tree.body:
            if isinstance(stmt, ast.ImportFrom) and stmt.module in modules and stmt.level == 0:
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
            statements.append(f"from {module} import {name}" + (f" as {local}" if local != name else ""))
        if not statements:
            return None
        content = self.lead + self.newline.join(sorted(statements)) + ("" if self.lead else self.newline) + self.sep
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


# --------------------------------------------------------------------------- rendering (libcst)


def _render(groups: List[_Group], newline: str, unit: str, style: str, memory_aware: bool,
            names: _ImportNames) -> None:
    """Parse every group's statement (one libcst module for all indented ones), rewrite, and store
    each group's rebuilt lines in ``group.text``."""
    for g in groups:
        g.indent = g.indent.replace("\0", unit)
    wrapped = [g for g in groups if g.indent]
    alone = [g for g in groups if not g.indent]
    if wrapped:
        code = "".join(f"if True:{newline}{g.indent}{_terminated(g.snippet, newline)}" for g in wrapped)
        try:
            module = cst.parse_module(code)
            if len(module.body) != len(wrapped):
                raise ValueError("statement count")
        except (cst.ParserSyntaxError, ValueError, RecursionError):
            alone += wrapped  # parse them one by one, so one odd statement costs only its own fix
        else:
            _rewrite(module, wrapped, newline, unit, style, memory_aware, names, wrapper=True)
    for group in alone:
        prefix = f"if True:{newline}" if group.indent else ""
        try:
            module = cst.parse_module(prefix + group.indent + _terminated(group.snippet, newline))
        except (cst.ParserSyntaxError, RecursionError):
            continue
        _rewrite(module, [group], newline, unit, style, memory_aware, names, wrapper=bool(group.indent))


def _terminated(text: str, newline: str) -> str:
    return text if text.endswith(("\n", "\r")) else text + newline


def _rewrite(module: cst.Module, groups: List[_Group], newline: str, unit: str, style: str,
             memory_aware: bool, names: _ImportNames, wrapper: bool) -> None:
    if wrapper:  # a block whose indentation equals the parsed default has indent None: pin it
        module = module.with_changes(body=[
            w.with_changes(body=w.body.with_changes(indent=module.default_indent if w.body.indent is None
                                                    else w.body.indent))
            if isinstance(w, cst.If) and isinstance(w.body, cst.IndentedBlock) else w for w in module.body])
    module = module.with_changes(default_indent=unit, default_newline=newline)
    rewriter = _Rewriter(module, groups, style, memory_aware, names, wrapper)
    new = module.visit(rewriter)
    if wrapper:
        for group, node in zip(groups, new.body):
            if not group.done:
                continue
            code = new.code_for_node(node)
            body = code.split(newline, 1)[1] if newline in code else ""
            group.text = (group.prefix + newline if group.prefix else "") + body
    elif groups and groups[0].done:
        groups[0].text = new.code


# --------------------------------------------------------------------------- syntax

_CST_OPERATORS = {
    "+": cst.Add, "-": cst.Subtract, "*": cst.Multiply, "/": cst.Divide, "//": cst.FloorDivide,
    "%": cst.Modulo, "**": cst.Power, "&": cst.BitAnd, "|": cst.BitOr, "^": cst.BitXor,
    "<<": cst.LeftShift, ">>": cst.RightShift,
}
_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)


def _comma() -> cst.Comma:
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def _without(args: Sequence[cst.Arg], index: int) -> List[cst.Arg]:
    """``args`` minus the one at ``index``; the new last argument takes over the removed one's comma."""
    kept = [a for i, a in enumerate(args) if i != index]
    if kept and index == len(args) - 1:
        kept[-1] = kept[-1].with_changes(comma=args[index].comma)
    return kept


def _assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=value)])


def _clone(name: str) -> cst.Call:
    return cst.Call(func=cst.Attribute(value=cst.Name(name), attr=cst.Name("clone")))


def _dotted(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr.value}"
    return None


def _operand_roots(node: cst.BaseExpression, skip: Set[str]) -> List[str]:
    """The names (or attribute chains) whose being a DTensor makes operand ``node`` a DTensor:
    ``temperature`` for ``temperature.clamp(min=1e-8).unsqueeze(-1)``, both sides of ``a + b``.
    Literals, free-function results (``torch.ones(3)``) and module attributes (``math.pi``) have none."""
    if isinstance(node, _LITERALS) or (isinstance(node, cst.Name) and node.value in ("True", "False", "None")):
        return []
    if isinstance(node, (cst.BinaryOperation, cst.BooleanOperation)):
        return _operand_roots(node.left, skip) + _operand_roots(node.right, skip)
    if isinstance(node, cst.UnaryOperation):
        return _operand_roots(node.expression, skip)
    if isinstance(node, cst.Comparison):
        return _operand_roots(node.left, skip)
    while True:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and _dotted(node.func.value) is None:
            node = node.func.value  # a method chain on an expression
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                (_dotted(node.func.value) or "").split(".")[0] not in skip:
            node = node.func.value  # temperature.clamp(...): a method of a tensor name
        elif isinstance(node, cst.Subscript):
            node = node.value
        else:
            break
    dotted = _dotted(node)
    if dotted is None or dotted.split(".")[0] in skip:
        return []
    return [dotted]


class _Rewriter(cst.CSTTransformer):
    """Rewrites the planned writes of each group; the original argument nodes (with their comments
    and line breaks) are reused, never re-typed."""

    def __init__(self, module: cst.Module, groups: List[_Group], style: str, memory_aware: bool,
                 names: _ImportNames, wrapper: bool) -> None:
        super().__init__()
        self.module = module
        self.style = style
        self.memory_aware = memory_aware
        self.names = names
        self.by_node: Dict[int, _Group] = {}
        top = module.body
        for group, node in zip(groups, top):
            self.by_node[id(node)] = group
        self.wrapper = wrapper
        self.group: Optional[_Group] = groups[0] if not wrapper and groups else None
        self.finding: Optional[Finding] = None
        self._hoisted: List[Tuple[bool, List[cst.BaseStatement]]] = []
        self._modules = _module_names(names.tree)

    # ---- helpers

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def use(self, module: str, name: str) -> str:
        local, _ = self.names.get(module, name)
        if self.group is not None and self.finding is not None:
            self.group.imports.setdefault(id(self.finding), set()).add((module, name))
        return local

    def guard(self, name: str, operands: Sequence[cst.BaseExpression] = ()) -> List[cst.BaseStatement]:
        """The DTensor guard: gather the target before a mixed op, unless an operand is itself a DTensor."""
        dt = self.use(DTENSOR_MODULE, "DTensor")
        roots: List[str] = []
        for operand in operands:
            for root in _operand_roots(operand, self._modules | {dt}):
                if root != name and root not in roots:
                    roots.append(root)
        condition = f"isinstance({name}, {dt})" + "".join(f" and not isinstance({r}, {dt})" for r in roots)
        unit = self.module.default_indent
        return [cst.parse_statement(f"if {condition}:\n{unit}{name} = {name}.full_tensor()\n",
                                    config=self.module.config_for_parsing)]

    def method_statements(self, name: str, method: str, call: Optional[cst.Call], args: Sequence[cst.Arg],
                          original: Optional[cst.BaseStatement]) -> Optional[List[cst.BaseStatement]]:
        """Statements equivalent to ``name.<method>(args)`` that rebind ``name`` instead of writing it."""
        ws_before_args = call.whitespace_before_args if call is not None else cst.SimpleWhitespace("")
        if self.style == "runtime":
            func = self.use(RUNTIME_MODULE, "out_of_place")
            head = [cst.Arg(cst.Name(name), comma=_comma()),
                    cst.Arg(cst.SimpleString(f'"{method}"'), comma=_comma() if args else cst.MaybeSentinel.DEFAULT)]
            rest = list(args)
            if self.memory_aware:
                if rest and rest[-1].comma == cst.MaybeSentinel.DEFAULT:
                    rest[-1] = rest[-1].with_changes(comma=_comma())
                elif not rest:
                    head[-1] = head[-1].with_changes(comma=_comma())
                no_space = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                           whitespace_after=cst.SimpleWhitespace(""))
                rest.append(cst.Arg(cst.SimpleString('"auto"'), keyword=cst.Name("inplace"), equal=no_space))
            value = cst.Call(func=cst.Name(func), args=head + rest, whitespace_before_args=ws_before_args)
            return [_assign(name, value)]
        operands = [a.value for a in args]
        needs_guard = any(not (isinstance(a, _LITERALS) or (isinstance(a, cst.Name) and a.value in ("True", "False", "None")))
                          for a in operands)
        guard = self.guard(name, operands) if needs_guard else []
        if method not in ops.OUT_OF_PLACE_TWINS and original is not None:
            return guard + [cst.parse_statement(f"{name} = {name}.clone()\n", config=self.module.config_for_parsing),
                            original]
        # the op itself, on a copy: same values, dtype and errors as the in-place original
        value = cst.Call(func=cst.Attribute(value=_clone(name), attr=cst.Name(method)), args=list(args),
                         whitespace_before_args=ws_before_args)
        return guard + [_assign(name, value)]

    def statements_for(self, finding: Finding, node: cst.CSTNode,
                       original: Optional[cst.BaseStatement]) -> Optional[List[cst.BaseStatement]]:
        """Statements replacing the write (``node`` is the Call, AugAssign or Subscript target);
        ``original`` is the whole statement (None when the write is used as a value)."""
        self.finding = finding
        name = finding.target
        kind = finding.write_kind
        if kind is WriteKind.METHOD and isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            args = list(node.args)
            if self._is_unbound_method(node):  # torch.Tensor.div_(x, t)
                args = args[1:]
            return self.method_statements(name, node.func.attr.value, node, args, original)
        if kind is WriteKind.AUGMENTED and isinstance(node, cst.AugAssign):
            method = ops.AUGMENTED_INPLACE[self.code(node.operator).strip()]
            return self.method_statements(name, method, None, [cst.Arg(node.value)], original)
        if kind is WriteKind.SUBSCRIPT and original is not None:
            operands: List[cst.BaseExpression] = []
            small = original.body[0] if isinstance(original, cst.SimpleStatementLine) else None
            if isinstance(small, (cst.Assign, cst.AugAssign)):
                operands.append(small.value)
                target = small.targets[0].target if isinstance(small, cst.Assign) else small.target
                if isinstance(target, cst.Subscript):
                    operands += [e.slice.value for e in target.slice if isinstance(e.slice, cst.Index)]
            return self.guard(name, operands) + [
                cst.parse_statement(f"{name} = {name}.clone()\n", config=self.module.config_for_parsing), original]
        if kind is WriteKind.FUNCTION and isinstance(node, cst.Call) and node.args:
            # torch.relu_(x) -> torch.relu_(x.clone()): the same function on a copy
            first = node.args[0].with_changes(value=_clone(name))
            return [_assign(name, node.with_changes(args=[first] + list(node.args[1:])))]
        if kind is WriteKind.INPLACE_KWARG and isinstance(node, cst.Call):
            func_name = node.func.attr.value if isinstance(node.func, cst.Attribute) else getattr(node.func, "value", "")
            where = ops.inplace_argument(func_name, sum(1 for a in node.args if a.keyword is None and not a.star),
                                         [a.keyword.value for a in node.args if a.keyword is not None])
            if where is None:
                return None
            index = where if isinstance(where, int) else next(
                i for i, a in enumerate(node.args) if a.keyword is not None and a.keyword.value == "inplace")
            return [_assign(name, node.with_changes(args=_without(node.args, index)))]
        if kind is WriteKind.OUT_KWARG and isinstance(node, cst.Call):
            index = next((i for i, a in enumerate(node.args) if a.keyword is not None and a.keyword.value == "out"), None)
            if index is None:
                return None
            # out= a fresh tensor like the target: the same dtype check and resize rules as the original
            empty = cst.parse_expression(f"torch.empty_like({name})") if "torch" in self._modules else None
            if empty is None:
                return None
            args = list(node.args)
            args[index] = args[index].with_changes(value=empty)
            return [_assign(name, node.with_changes(args=args))]
        return None

    @staticmethod
    def _is_unbound_method(call: cst.Call) -> bool:
        func = call.func
        if not isinstance(func, cst.Attribute):
            return False
        value = func.value
        if isinstance(value, cst.Name):
            return value.value == "Tensor"
        return isinstance(value, cst.Attribute) and value.attr.value == "Tensor" and \
            isinstance(value.value, cst.Name) and value.value.value == "torch"

    # ---- which group

    def visit_If(self, node: cst.If) -> None:
        if self.wrapper and id(node) in self.by_node:
            self.group = self.by_node[id(node)]

    # ---- hoisting (a write used as a value)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        # hoisting moves statements before the whole line: only when the line holds one statement
        self._hoisted.append((len(node.body) == 1, []))

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        group = self.group
        if group is None or not self._hoisted or not self._hoisted[-1][0]:
            return updated
        hoists = [f for f in group.findings if f.fix.kind is FixKind.HOIST and id(f) not in group.done]
        if not hoists:
            return updated
        text = self.code(original.with_changes(lpar=(), rpar=()))
        finding = next((f for f in hoists if group.segments.get(id(f)) == text), None)
        if finding is None:
            return updated
        statements = self.statements_for(finding, updated, None)
        if not statements:
            return updated
        self._hoisted[-1][1].extend(statements)
        group.done.add(id(finding))
        return cst.Name(finding.target)

    # ---- whole-statement writes

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        hoisted = self._hoisted.pop()[1] if self._hoisted else []
        group = self.group
        replacement: Optional[List[cst.BaseStatement]] = None
        statement = [f for f in group.findings if f.fix.kind is FixKind.STATEMENT and id(f) not in group.done] \
            if group is not None else []
        if statement and len(original.body) == 1 and self._hoisted == []:
            finding = statement[0]
            small = updated.body[0]
            node: Optional[cst.CSTNode] = None
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                node = small.value
            elif isinstance(small, cst.AugAssign):
                node = small
            elif isinstance(small, cst.Assign) and len(small.targets) == 1:
                node = small.targets[0].target if finding.write_kind is WriteKind.SUBSCRIPT else small.value
            if node is not None:
                bare = updated.with_changes(leading_lines=(), trailing_whitespace=cst.TrailingWhitespace())
                replacement = self.statements_for(finding, node, bare)
                if replacement:
                    group.done.add(id(finding))
                else:
                    replacement = None
        if replacement is None:
            if not hoisted:
                return updated
            replacement = [updated.with_changes(leading_lines=())]
        replacement = hoisted + replacement
        replacement[0] = replacement[0].with_changes(leading_lines=original.leading_lines)
        if isinstance(replacement[-1], cst.SimpleStatementLine):
            replacement[-1] = replacement[-1].with_changes(trailing_whitespace=original.trailing_whitespace)
        return cst.FlattenSentinel(replacement)


def _module_names(tree: ast.Module) -> Set[str]:
    """Names bound by imports anywhere in the module (``torch``, ``F``, ``math``): never tensors."""
    out: Set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            out.update((a.asname or a.name.split(".")[0]) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.update((a.asname or a.name) for a in node.names if a.name[:1].islower() or a.name in ("F",))
    return out


# --------------------------------------------------------------------------- fix: apply the advertised edits


def _applicable(finding: Finding, unsafe_fixes: bool) -> bool:
    return finding.fix is not None and bool(finding.fix.edits) and \
        (unsafe_fixes or finding.fix.applicability is Applicability.SAFE)


def fix_findings(source: str, result: FixResult, findings: Sequence[Finding], unsafe_fixes: bool) -> None:
    """Apply the edits of the applicable ``findings`` (with edits attached) to ``source``: sets
    ``result.applied`` / ``unsafe_skipped`` / ``unfixed`` and ``new_source`` (None when unchanged)."""
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
        new = apply_edits(source, [e for f in todo for e in f.fix.edits])
        ast.parse(new)  # a rewrite is re-parsed before anyone sees it
    except (SyntaxError, ValueError, RecursionError) as exc:  # pragma: no cover - a bug in the codemod
        result.error = f"internal error: the rewrite does not apply or parse ({exc}); file left unchanged"
        return
    result.applied.extend(todo)
    if new != source:
        result.new_source = new


def fix_code(source: str, path: str = "<string>", *, settings: Settings = DEFAULT_SETTINGS, style: str = "runtime",
             unsafe_fixes: bool = False, select: Sequence[str] = (), ignore: Sequence[str] = (),
             memory_aware: bool = False) -> FixResult:
    """Fix ``source`` (text); ``result.new_source`` is the rewritten text, or None when unchanged."""
    from ..pipeline import check_source

    result = FixResult(path, old_source=source)
    checked = check_source(source, path, settings, select, ignore, fix_style=style, memory_aware=memory_aware)
    if checked.error:
        result.error = checked.error
        return result
    fix_findings(source, result, checked.findings, unsafe_fixes)
    return result


def fix_file(path: str, *, settings: Settings = DEFAULT_SETTINGS, style: str = "runtime", unsafe_fixes: bool = False,
             select: Sequence[str] = (), ignore: Sequence[str] = (), write: bool = True,
             memory_aware: bool = False) -> FixResult:
    """Fix one file in place (atomically: temp file + rename; a symlink keeps pointing at its target,
    which is rewritten); encoding, BOM and newlines are kept.

    A file that cannot be read or parsed is reported in ``result.error`` and left untouched.
    """
    import io
    import tokenize

    result = FixResult(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        source = raw.decode(encoding)
    except (OSError, UnicodeDecodeError, LookupError, SyntaxError) as exc:
        result.error = f"cannot read: {exc}"
        return result
    fixed = fix_code(source, path, settings=settings, style=style, unsafe_fixes=unsafe_fixes, select=select,
                     ignore=ignore, memory_aware=memory_aware)
    fixed.old_source = source
    if fixed.new_source is not None and write:
        atomic_write(path, fixed.new_source.encode(encoding))
        fixed.written = True
    return fixed


def fix_one(source: str, path: str, finding: Finding, *, settings: Settings = DEFAULT_SETTINGS,
            style: str = "runtime", select: Sequence[str] = (), ignore: Sequence[str] = ()) -> Optional[str]:
    """``source`` with ``finding``'s advertised edits applied (safe or not: the caller asked for this
    one), or None when it has none. ``finding`` must carry its edits (``check_source(fix_style=...)``)."""
    if finding.fix is None or not finding.fix.edits:
        return None
    return apply_edits(source, finding.fix.edits)


def atomic_write(path: str, data: bytes) -> None:
    """Replace the contents of ``path`` by ``data`` via a temp file and a rename in the same folder.
    A symlink is resolved first: its target is written (once, even when several links or the target
    itself are fixed in one run, since the second run finds nothing to fix) and the link stays a link."""
    path = os.path.realpath(path)
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


_atomic_write = atomic_write  # the old private name


# --------------------------------------------------------------------------- the libcst command


class InplaceToOutOfPlace(VisitorBasedCodemodCommand):
    """Rewrite in-place writes on views and model outputs to out-of-place form (inplace-lint).

    The same edits as ``inplace-lint fix``: the analysis plans, :func:`attach_edits` writes, and the
    edits are applied to the module's text."""

    DESCRIPTION = "Rewrite in-place PyTorch ops on views and model outputs to out-of-place form."

    def __init__(self, context: CodemodContext, style: str = "runtime", unsafe_fixes: bool = False,
                 settings: Optional[Settings] = None, select: Sequence[str] = (),
                 ignore: Sequence[str] = (), memory_aware: bool = False) -> None:
        super().__init__(context)
        if style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}, got {style!r}")
        self.style = style
        self.memory_aware = memory_aware
        self.unsafe_fixes = unsafe_fixes
        self.settings = settings
        self.select, self.ignore = list(select), list(ignore)
        self.result = FixResult(context.filename or "<string>")

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument("--style", choices=STYLES, default="runtime",
                                help="runtime: call inplace_lint.runtime; inline: plain torch")
        arg_parser.add_argument("--unsafe-fixes", action="store_true", default=False,
                                help="also apply fixes that other readers of the tensor could notice")
        arg_parser.add_argument("--memory-aware", action="store_true", default=False,
                                help='runtime style: pass inplace="auto" (in place wherever PyTorch allows it)')

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        settings = self.settings
        if settings is None:  # run by libcst.tool: read the project's configuration
            import pathlib

            start = os.path.dirname(os.path.abspath(self.context.filename or ".")) or "."
            settings, file_cfg, _ = config.load(pathlib.Path(start))
            self.select = self.select or file_cfg.get("select", [])
            self.ignore = self.ignore or file_cfg.get("ignore", [])
        code = tree.code
        result = fix_code(code, self.result.path, settings=settings, style=self.style, unsafe_fixes=self.unsafe_fixes,
                          select=self.select, ignore=self.ignore, memory_aware=self.memory_aware)
        self.result = result
        if result.error:
            raise SyntaxError(result.error)
        if result.new_source is None:
            return tree
        return cst.parse_module(result.new_source)
