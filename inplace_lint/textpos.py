"""Positions in source text: the one place that converts between ``ast``'s UTF-8 byte columns,
character columns (:class:`inplace_lint.findings.Edit`, SARIF ``unicodeCodePoints``, libcst) and
UTF-16 code units (the Language Server Protocol's default encoding).

The one line splitter for source text, :func:`split_lines` (the pipeline, noqa, the reporters, the codemod
and the server all use it). Lines are split as ``ast`` numbers them: at ``\\r\\n``, ``\\r`` and ``\\n``
only (``str.splitlines`` also splits at form feeds and other separators, which would shift line numbers:
a ``# noqa`` below a page break stopped suppressing its line).
"""
from __future__ import annotations

import re
from typing import List, Sequence

#: one line with its terminator (:func:`split_lines`; ``LINE.finditer`` splits only as far as it is read)
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(source: str) -> List[str]:
    """``source``'s lines with their terminators, numbered as ``ast`` numbers them (line n is item n-1)."""
    return LINE.findall(source)


def line_text(lines: Sequence[str], line: int) -> str:
    """1-based ``line`` of ``lines`` without its terminator ("" past the end)."""
    return lines[line - 1].rstrip("\r\n") if 0 < line <= len(lines) else ""


def char_column(text: str, byte_col: int) -> int:
    """0-based character column in ``text`` (one line) of ``ast``'s 0-based UTF-8 byte column."""
    if text.isascii():
        return byte_col
    return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def utf16_column(text: str, char_col: int) -> int:
    """UTF-16 code units before character column ``char_col`` of ``text`` (LSP positions)."""
    prefix = text[:char_col]
    if prefix.isascii():
        return char_col
    return len(prefix.encode("utf-16-le")) // 2


def offsets(lines: List[str]) -> List[int]:
    """Character offset of the start of each line, plus one past the end (for line n+1)."""
    out = [0]
    for text in lines:
        out.append(out[-1] + len(text))
    return out
