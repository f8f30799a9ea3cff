"""Output formats for findings: text and ruff-compatible JSON."""
from __future__ import annotations

import json
import os
from typing import List, Sequence, TextIO, Tuple

from .checker import FileResult
from .findings import Finding
from .rules import url

Item = Tuple[FileResult, Finding]


def ruff_json_item(result: FileResult, finding: Finding) -> dict:
    """One finding in the schema of ``ruff check --output-format json`` (1-based columns)."""
    return {
        "cell": None,
        "code": finding.code,
        "end_location": {"column": finding.end_col + 1, "row": finding.end_line},
        "filename": os.path.abspath(result.path),
        "fix": None if finding.fix is None else {
            "applicability": finding.fix.applicability.value, "message": finding.fix.message, "edits": [],
        },
        "location": {"column": finding.col + 1, "row": finding.line},
        "message": finding.message,
        "noqa_row": finding.line,
        "url": url(finding.code),
    }


def write_text(items: Sequence[Item], out: TextIO) -> None:
    for result, f in items:
        out.write(f"{result.path}:{f.line}:{f.col + 1}: {f.code} {f.message}\n")


def write_json(items: Sequence[Item], out: TextIO) -> None:
    json.dump([ruff_json_item(r, f) for r, f in items], out, indent=2)
    out.write("\n")


FORMATS = {"text": write_text, "json": write_json}
