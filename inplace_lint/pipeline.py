"""Check one file or source text: engine findings, filtered by selection and ``# noqa`` as flake8 does.

A file that cannot be checked (it cannot be read, is not valid in its encoding, does not parse, or is
nested too deeply for Python's parser) gets one :class:`Problem` with code :data:`CANNOT_CHECK`
(``IPV000``) at the place Python names, in the shape of a finding, so every output format (text,
JSON, SARIF, GitHub annotations, the language server) shows it where it is.
"""
from __future__ import annotations

import ast
import pathlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple

from . import config
from .adapters import noqa
from .analysis import analyze
from .config import Settings
from .adapters.files import decode
from .findings import Finding


#: the code of a file that could not be checked; never selected away, never suppressed by ``# noqa``
CANNOT_CHECK = "IPV000"
CANNOT_CHECK_NAME = "cannot-check-file"
CANNOT_CHECK_SUMMARY = ("The file could not be read or parsed (a syntax error, bytes that are not valid in its "
                        "encoding, nesting too deep for Python's parser); nothing in it was checked.")


@dataclass(frozen=True)
class Problem:
    """Why a file could not be checked, shaped like a :class:`~inplace_lint.findings.Finding` (the
    attributes the reporters read). ``line`` is 1-based, ``col`` 0-based in UTF-8 bytes (as ``ast``)."""

    line: int
    col: int
    message: str
    code: str = CANNOT_CHECK
    fix: None = None
    related: Tuple = ()
    #: False when Python names no place (a missing file, nesting too deep): reported at 1:1
    located: bool = True

    @property
    def end_line(self) -> int:
        return self.line

    @property
    def end_col(self) -> int:
        return self.col

    @property
    def text(self) -> str:
        return f"{self.code} {self.message}"


@dataclass
class FileResult:
    path: str
    findings: List[Finding] = field(default_factory=list)
    #: why the file could not be checked (it is then skipped, never rewritten)
    error: Optional[str] = None
    #: the same, located: the line and column Python names
    problem: Optional[Problem] = None

    def fail(self, problem: Problem) -> "FileResult":
        self.problem = problem
        where = f" (line {problem.line}, column {problem.col + 1})" if problem.located else ""
        self.error = problem.message + where
        return self


def check_source(source: str, path: str, settings: Settings, select: Sequence[str] = (),
                 ignore: Sequence[str] = (), disable_noqa: bool = False, fix_style: Optional[str] = None,
                 memory_aware: bool = False) -> FileResult:
    """Analyze ``source``; a file that does not parse gets ``error`` set and no findings.

    With ``fix_style`` (a name in ``config.FIX_STYLES``) each planned fix gets its edits in that
    style, from one codemod pass over the file (:func:`inplace_lint.fix.codemod.attach_edits`); a plan
    the codemod cannot write loses its fix. Without it (text output, flake8) libcst is never imported."""
    result = FileResult(path)
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return result.fail(parse_problem(exc, source))
    findings = analyze(tree, settings)
    if not findings:
        return result
    lines = source.splitlines(keepends=True)
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
    if fix_style is not None and any(f.fix is not None for f in result.findings):
        from .fix.codemod import attach_edits

        result.findings = attach_edits(source, tree, result.findings, fix_style, memory_aware)
    return result


def noqa_mapping(tree: ast.Module, lines: Sequence[str], wanted: Set[int]) -> Dict[int, str]:
    """flake8's noqa line mapping (:func:`inplace_lint.adapters.noqa.line_mapping`) for the ``wanted``
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
               disable_noqa: bool = False, fix_style: Optional[str] = None) -> FileResult:
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        return FileResult(path).fail(Problem(1, 0, f"cannot read: {exc.strerror or exc}", located=False))
    try:
        source = decode(raw)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        return FileResult(path).fail(decode_problem(exc, raw))
    return check_source(source, path, settings, select, ignore, disable_noqa, fix_style=fix_style)


@dataclass(frozen=True)
class CheckJob:
    """``check_file`` with fixed options, as one picklable callable for :func:`inplace_lint.adapters.parallel.run_files`."""

    settings: Settings
    select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    disable_noqa: bool = False
    per_file_ignores: config.PerFileIgnores = ()  # type: ignore[assignment]
    #: the folder ``per_file_ignores`` globs are relative to (the config file's)
    config_dir: Optional[pathlib.Path] = None
    #: attach each fix's edits in this style (JSON, SARIF); None: plans only (text)
    fix_style: Optional[str] = None

    def __call__(self, path: str) -> FileResult:
        ignore = list(self.ignore) + config.per_file_ignored(path, list(self.per_file_ignores), self.config_dir)
        return check_file(path, self.settings, self.select, ignore, self.disable_noqa, fix_style=self.fix_style)


def _byte_col(source: str, line: int, char_offset: Optional[int]) -> int:
    """0-based UTF-8 byte column of a 1-based character ``offset`` on ``line`` (SyntaxError's)."""
    lines = source.splitlines()
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    chars = max((char_offset or 1) - 1, 0)
    return len(text[:chars].encode("utf-8", "surrogatepass"))


def parse_problem(exc: BaseException, source: str) -> Problem:
    """Where and why ``ast.parse`` refused ``source``: the line and column CPython names."""
    if isinstance(exc, (RecursionError, MemoryError)):
        # CPython's own words for it (``compile`` says "maximum recursion depth exceeded during
        # compilation"): the file is valid Python nested deeper than the parser's C stack allows
        return Problem(1, 0, f"cannot parse: too deeply nested for Python's parser ({exc or type(exc).__name__})",
                       located=False)
    if isinstance(exc, SyntaxError) and exc.lineno:
        line = exc.lineno
        return Problem(line, _byte_col(source, line, exc.offset), f"cannot parse: {exc.msg}")
    msg = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    nul = source.find("\0")
    if nul >= 0:  # "source code string cannot contain null bytes": CPython names no line
        line = source.count("\n", 0, nul) + 1
        start = source.rfind("\n", 0, nul) + 1
        return Problem(line, len(source[start:nul].encode("utf-8", "surrogatepass")), f"cannot parse: {msg}")
    return Problem(1, 0, f"cannot parse: {msg}")


def decode_problem(exc: BaseException, raw: bytes) -> Problem:
    """Where and why ``raw`` is not text in its declared encoding: the first bad byte's line and column."""
    if isinstance(exc, UnicodeDecodeError):
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1)
        bad = raw[exc.start:exc.end]
        shown = " ".join(f"0x{b:02x}" for b in bad[:4])
        return Problem(line, col, f"cannot read: byte {shown} is not valid {exc.encoding} ({exc.reason})")
    if isinstance(exc, SyntaxError):  # a bad encoding cookie or BOM mismatch (tokenize.detect_encoding)
        return Problem(exc.lineno or 1, 0, f"cannot read: {exc.msg}")
    return Problem(1, 0, f"cannot read: {exc}")
