"""Why a file could not be checked, and what a check of one file returns.

A file that cannot be checked (it cannot be read, is not valid in its encoding, does not parse, or is
nested too deeply for Python's parser) gets one :class:`Problem` with code :data:`CANNOT_CHECK`
(``IPV000``) at the place Python names, in the shape of a finding, so every output format (text,
JSON, SARIF, GitHub annotations, the language server) shows it where it is. :class:`FileResult` holds
a file's findings or that problem; the reporters read it without importing the pipeline.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from .. import textpos
from ..findings import Finding


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
    no_fix: str = ""
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


def _byte_col(source: str, line: int, char_offset: Optional[int]) -> int:
    """0-based UTF-8 byte column of a 1-based character ``offset`` on ``line`` (SyntaxError's)."""
    text = textpos.line_text(textpos.split_lines(source), line)
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


#: PEP 263's encoding declaration (on line 1 or 2)
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
#: what to do about a file that is not UTF-8 and declares no encoding (https://peps.python.org/pep-0263/)
UNDECLARED_HINT = ("a file without an encoding declaration must be UTF-8: save it as UTF-8, or declare its "
                   "encoding on line 1 or 2, e.g. '# -*- coding: latin-1 -*-'")


def decode_problem(exc: BaseException, raw: bytes) -> Problem:
    """Where and why ``raw`` is not text in its declared encoding: the first bad byte's line and column
    (and, when no encoding is declared, how to declare one)."""
    if isinstance(exc, SyntaxError) and exc.lineno is None and "encoding declaration" in (exc.msg or ""):
        try:  # tokenize.detect_encoding met a non-UTF-8 byte on line 1 or 2 and names no place: find it
            raw.decode("utf-8")
        except UnicodeDecodeError as inner:
            exc = inner
    if isinstance(exc, UnicodeDecodeError):
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1)
        bad = raw[exc.start:exc.end]
        shown = " ".join(f"0x{b:02x}" for b in bad[:4])
        declared = any(_CODING.match(text) for text in raw.splitlines()[:2])
        hint = "" if declared or exc.encoding.replace("-", "").lower() != "utf8" else f"; {UNDECLARED_HINT}"
        return Problem(line, col, f"cannot read: byte {shown} is not valid {exc.encoding} ({exc.reason}){hint}")
    if isinstance(exc, SyntaxError):  # a bad encoding cookie or BOM mismatch (tokenize.detect_encoding)
        return Problem(exc.lineno or 1, 0, f"cannot read: {exc.msg}")
    return Problem(1, 0, f"cannot read: {exc}")
