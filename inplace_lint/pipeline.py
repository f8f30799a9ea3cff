"""Check one file or source text: parse, analysis, selection and ``# noqa`` (as flake8 does), edits.

A file that cannot be checked gets one ``IPV000`` :class:`~inplace_lint.source.problems.Problem` (see
:mod:`inplace_lint.source.problems`) instead of findings.

Two modes (the same findings on code that has no calls between files):

- **single file** (the library default, and flake8 without a cache): the file is analysed alone; calls
  between its own functions are followed;
- **project** (``check``, ``fix`` and the language server): the caller passes ``project``, a
  :class:`~inplace_lint.workspace.ProjectMode`, and the file is analysed with the summaries of every file
  of its project (:mod:`inplace_lint.workspace`). This module never imports the workspace: the mode
  itself answers :class:`ProjectAnalysis`.
"""
from __future__ import annotations

import ast
import os
from dataclasses import replace
from typing import Dict, List, Optional, Protocol, Sequence, Set, Tuple

from . import config, textpos
from .source import noqa
from .analysis import analyze, fixplan
from .config import Settings
from .source.files import decode, read_bytes
from .source.problems import FileResult, Problem, decode_problem, parse_problem
from .findings import Finding


class ProjectAnalysis(Protocol):
    """What :func:`check_source` asks of a project mode (:class:`inplace_lint.workspace.ProjectMode`)."""

    enabled: bool

    def needs_tree(self, source: str, path: str, settings: Settings) -> bool:
        """Whether :meth:`findings` walks ``source`` (so that it wants the caller's parse of it)."""

    def findings(self, source: str, path: str, settings: Settings,
                 tree: Optional[ast.Module]) -> Optional[List[Finding]]:
        """The findings of ``source`` with its project's summaries; None: analyse it alone."""


def check_source(source: str, path: str, settings: Settings, select: Sequence[str] = (),
                 ignore: Sequence[str] = (), disable_noqa: bool = False, fix_style: Optional[str] = None,
                 memory_aware: bool = False, project: Optional[ProjectAnalysis] = None,
                 target: Tuple[Optional[Tuple[int, int]], Optional[Tuple[int, int]]] = (None, None)) -> FileResult:
    """Analyze ``source``; a file that does not parse gets ``error`` set and no findings.

    With ``fix_style`` (a name in ``config.FIX_STYLES``) each planned fix gets its edits in that
    style, from one codemod pass over the file (:func:`inplace_lint.fix.attach.attach_edits`); a plan
    the codemod cannot write loses its fix. Without it (text output, flake8) libcst is never imported.

    ``project``: a :class:`~inplace_lint.workspace.ProjectMode`: analyse with the summaries of the rest of
    the file's project when it is enabled (default: the file alone). ``target``: (Python, torch)
    versions that override the floor the file's project states (:mod:`inplace_lint.floor`), which decides
    what the edits may import."""
    result = FileResult(path)
    findings: Optional[List[Finding]] = None
    tree: Optional[ast.Module] = None
    if project is not None and project.enabled and os.path.isfile(path):
        if project.needs_tree(source, path, settings):  # parsed once, here, and handed to the project
            try:
                tree = ast.parse(source, filename=path)
            except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
                return result.fail(parse_problem(exc, source))
        findings = project.findings(source, path, settings, tree)
        if findings is not None and not findings:
            return result  # nothing to report: no need to parse
    try:
        if tree is None:
            tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return result.fail(parse_problem(exc, source))
    if findings is None:
        findings = analyze(tree, settings, path)
    if not findings:
        return result
    lines = textpos.split_lines(source)  # as ast numbers them (str.splitlines also breaks at form feeds)
    # flake8's noqa line mapping tokenizes the file (it cost more than the analysis): only where a
    # finding is, and only when a comment could suppress something
    may_suppress = not disable_noqa and "noqa" in source.lower()
    if may_suppress and noqa.file_is_exempt(lines):
        return result
    mapping = noqa_mapping(tree, lines, {f.line for f in findings}) if may_suppress else {}
    for finding in findings:
        if not config.selected(finding.code, select, ignore):
            continue
        if may_suppress and noqa.suppressed(finding.code, finding.line, mapping, lines):
            continue
        result.findings.append(finding)
    result.findings = [placed_related(f, lines) for f in result.findings]
    # whether the rewriter can write each planned fix is decided here, once, for every surface
    result.findings = fixplan.withdraw_unwritable(tree, result.findings, lines)
    if fix_style is not None and any(f.fix is not None for f in result.findings):
        from . import floor
        from .fix.attach import attach_edits

        stated = floor.for_path(path).override(*target)
        result.findings = attach_edits(source, tree, result.findings, fix_style, memory_aware, stated.torch)
    return result


def placed_related(finding: Finding, lines: Sequence[str]) -> Finding:
    """``finding`` with the column of each related location in this file that the analysis gave only a line (an
    origin's root, a view step: ``model output `out.logits```, ``view `.squeeze(0)```): where the quoted text first
    stands on that line, as ``ast``'s UTF-8 byte column (unchanged when it is not there, or in another file)."""
    placed = []
    for r in finding.related:
        if r.col == 0 and r.path is None and r.message.count("`") >= 2:
            text = textpos.line_text(lines, r.line)
            quoted = r.message.split("`")[1]
            at = text.find(quoted) if quoted else -1
            if at > 0:
                r = replace(r, col=len(text[:at].encode("utf-8")))
        placed.append(r)
    related = tuple(placed)
    return finding if related == finding.related else replace(finding, related=related)


def noqa_mapping(tree: ast.Module, lines: Sequence[str], wanted: Set[int]) -> Dict[int, str]:
    """flake8's noqa line mapping (:func:`inplace_lint.source.noqa.line_mapping`) for the ``wanted``
    lines, tokenizing only the top-level statements that hold them: a top-level statement starts a
    logical line at column 0, so tokenizing from there gives the same logical lines as from the top
    of the file (statements that share a line, ``a = 1; b = 2``, are taken together)."""
    groups: List[List[int]] = []  # [first line, last line] of runs of top-level statements
    for stmt in tree.body:
        start = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])
        end = stmt.end_lineno or stmt.lineno
        if groups and start <= groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], end)
        else:
            groups.append([start, end])
    mapping: Dict[int, str] = {}
    for start, end in groups:
        if any(start <= line <= end for line in wanted):
            part = noqa.line_mapping(lines[start - 1:end])
            mapping.update({line + start - 1: text for line, text in part.items()})
    return mapping


def check_file(path: str, settings: Settings, select: Sequence[str] = (), ignore: Sequence[str] = (),
               disable_noqa: bool = False, fix_style: Optional[str] = None,
               project: Optional[ProjectAnalysis] = None,
               target: Tuple[Optional[Tuple[int, int]], Optional[Tuple[int, int]]] = (None, None)) -> FileResult:
    """:func:`check_source` of the file at ``path``; one that cannot be read or decoded gets its problem."""
    try:
        raw = read_bytes(path)  # a FIFO or device is refused, never read
    except OSError as exc:
        return FileResult(path).fail(Problem(1, 0, f"cannot read: {exc.strerror or exc}", located=False))
    try:
        source = decode(raw)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        return FileResult(path).fail(decode_problem(exc, raw))
    return check_source(source, path, settings, select, ignore, disable_noqa, fix_style=fix_style, project=project,
                        target=target)
