"""The sanitizer's report, in ``check``'s formats: text, ruff-compatible JSON, SARIF 2.1.0.

The writers are :mod:`inplace_lint.adapters.reporters`' own; a runtime finding becomes a
:class:`~inplace_lint.findings.Finding` whose message ends with how often it was seen, and SARIF results
also carry that number as ``occurrenceCount``.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from typing import Iterator, List, Sequence, TextIO, Tuple, Union

from ..adapters import reporters
from ..findings import Finding
from ..source.problems import FileResult

FORMATS = ("text", "json", "sarif")


def items(findings: Sequence["RuntimeFinding"]) -> List[Tuple[FileResult, Finding]]:  # noqa: F821
    """``check``'s ``(FileResult, Finding)`` pairs for runtime findings, in their order."""
    results = {}
    out = []
    for f in findings:
        result = results.setdefault(f.path, FileResult(f.path))
        finding = f.to_finding()
        result.findings.append(finding)
        out.append((result, finding))
    return out


def summary(findings: Sequence["RuntimeFinding"]) -> str:  # noqa: F821
    if not findings:
        return "inplace-lint sanitize: no in-place hazards seen."
    by_code = {}
    for f in findings:
        by_code[f.code] = by_code.get(f.code, 0) + 1
    writes = sum(f.count for f in findings)
    codes = ", ".join(f"{code}: {n}" for code, n in sorted(by_code.items()))
    return (f"inplace-lint sanitize: {len(findings)} site{'s' if len(findings) != 1 else ''} "
            f"({writes} write{'s' if writes != 1 else ''}) with in-place hazards ({codes}).")


def render(findings: Sequence["RuntimeFinding"], format: str = "text") -> str:  # noqa: F821
    """The report as text. ``format``: ``text`` (one ``path:line:col: CODE message`` line per site and a
    summary line), ``json`` or ``sarif``; ``ValueError`` for another."""
    buf = io.StringIO()
    pairs = items(findings)
    if format == "text":
        reporters.write_text(pairs, buf)
        buf.write(summary(findings) + "\n")
    elif format == "json":
        reporters.write_json(pairs, buf)
    elif format == "sarif":
        log = reporters.sarif_log(pairs)
        for result, f in zip(log["runs"][0]["results"], findings):
            result["occurrenceCount"] = f.count
        json.dump(log, buf, indent=2)
        buf.write("\n")
    else:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    return buf.getvalue()


@contextlib.contextmanager
def _open(output: Union[None, str, os.PathLike, TextIO]) -> Iterator[TextIO]:
    if output is None:
        yield sys.stderr
    elif isinstance(output, (str, os.PathLike)):
        with open(output, "w", encoding="utf-8") as fh:
            yield fh
    else:
        yield output


def write_report(findings: Sequence["RuntimeFinding"],  # noqa: F821
                 output: Union[None, str, os.PathLike, TextIO] = None, format: str = "text") -> None:
    """Write :func:`render` to ``output``: a path (overwritten), a text stream, or None for stderr."""
    text = render(findings, format)
    with _open(output) as out:
        out.write(text)
        out.flush()
