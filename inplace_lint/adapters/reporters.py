"""Output formats for findings: text, full, JSON, SARIF, GitHub annotations and ``--statistics`` counts.

``full`` is text with the origin chain as note lines; JSON follows ruff's schema; SARIF is 2.1.0.

Each finding's related locations (:attr:`inplace_lint.findings.Finding.related`: the origin chain, later
call sites in other files) are written as ``note`` lines by ``full``, a ``related`` list in ``json``
and ``relatedLocations`` in ``sarif``. A file that cannot be checked is one item with code ``IPV000``
(:class:`inplace_lint.source.problems.Problem`) in every format.

``text`` and ``json`` give 1-based columns counted in UTF-8 bytes, like flake8 (``ast`` offsets);
``sarif`` and ``github`` count characters (SARIF ``columnKind: unicodeCodePoints``), read back from
the file when a line is not ASCII.
"""
from __future__ import annotations

import collections
import json
import os
import pathlib
import urllib.parse
from typing import Dict, List, Optional, Sequence, TextIO, Tuple

from .. import __version__
from ..source.problems import CANNOT_CHECK, CANNOT_CHECK_NAME, CANNOT_CHECK_SUMMARY, FileResult
from .. import textpos
from ..findings import Applicability, Finding, Related
from ..source.files import read_source
from ..rules import RULES, url

Item = Tuple[FileResult, Finding]

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
#: where ``IPV000`` (a file that cannot be checked) is documented, under the project's address
CANNOT_CHECK_PATH = "/blob/main/README.md#files-that-cannot-be-checked-ipv000"


def level(code: str) -> str:
    """``error`` or ``warning`` for a finding's code: the rule's own ``severity`` (``IPV000``, a file not
    checked, is an error)."""
    return "error" if code == CANNOT_CHECK else RULES[code].severity


def project_url() -> Optional[str]:
    """:func:`inplace_lint.project_url`, looked up when called."""
    from .. import project_url as address

    return address()


def code_url(code: str) -> Optional[str]:
    """The page that documents ``code``, or None when the package names no project address."""
    if code == CANNOT_CHECK:
        return project_url() + CANNOT_CHECK_PATH if project_url() else None
    return url(code)


def _with_uri(entry: dict, key: str, uri: Optional[str]) -> dict:
    """``entry`` with ``key: uri`` when there is an address (SARIF's URIs are optional)."""
    if uri:
        entry[key] = uri
    return entry


def code_name(code: str) -> str:
    return CANNOT_CHECK_NAME if code == CANNOT_CHECK else RULES[code].name


def related_path(result: FileResult, related: Related) -> str:
    """The file a related location is in: its own ``path``, else the finding's file."""
    return related.path if related.path is not None else result.path


def json_related(result: FileResult, finding: Finding) -> List[dict]:
    """``related`` of the JSON output: ``{"message", "filename", "location": {"row", "column"}}``
    (1-based column in UTF-8 bytes, as ``location``)."""
    return [{"message": r.message, "filename": os.path.abspath(related_path(result, r)),
             "location": {"row": r.line, "column": r.col + 1}} for r in finding.related]


def ruff_json_item(result: FileResult, finding: Finding) -> dict:
    """One finding in the schema of ``ruff check --output-format json`` (1-based columns)."""
    return {
        "cell": None,
        "code": finding.code,
        "end_location": {"column": finding.end_col + 1, "row": finding.end_line},
        "filename": os.path.abspath(result.path),
        "fix": None if finding.fix is None else {
            "applicability": finding.fix.applicability.value,
            "message": finding.fix.message + (f" (unsafe: {finding.fix.reason})" if finding.fix.reason else ""),
            "edits": json_edits(finding),
        },
        "location": {"column": finding.col + 1, "row": finding.line},
        "message": finding.message,
        "noqa_row": finding.line,
        "no_fix": finding.no_fix or None,
        "related": json_related(result, finding),
        "url": code_url(finding.code),
    }


def json_edits(finding: Finding) -> List[dict]:
    """The finding's own edits (``Fix.edits``, attached once per file by the codemod) in ruff's JSON
    shape: ``{"content", "location": {"row", "column"}, "end_location": {...}}``, 1-based character
    columns. Empty when the check ran without a fix style (nothing re-runs the codemod here)."""
    if finding.fix is None:
        return []
    return [{"content": e.content, "location": {"row": e.line, "column": e.col + 1},
             "end_location": {"row": e.end_line, "column": e.end_col + 1}} for e in finding.fix.edits]


def sarif_fixes(finding: Finding, artifact: dict) -> List[dict]:
    """SARIF ``fixes`` from the finding's own edits (columns in characters, 1-based)."""
    if finding.fix is None or not finding.fix.edits:
        return []
    fix = finding.fix
    description = fix.message + (f" (unsafe: {fix.reason})" if fix.applicability is not Applicability.SAFE else "")
    return [{"description": {"text": description}, "artifactChanges": [{
        "artifactLocation": artifact,
        "replacements": [{"deletedRegion": {"startLine": e.line, "startColumn": e.col + 1,
                                            "endLine": e.end_line, "endColumn": e.end_col + 1},
                          "insertedContent": {"text": e.content}} for e in fix.edits],
    }]}]


#: texts checked that are not (or not as checked) on disk, by the name shown: ``check -`` (stdin)
SOURCES: Dict[str, str] = {}


def register_source(name: str, source: str) -> None:
    """Make the reporters read ``name``'s lines (columns, fix edits) from ``source``, not from the disk:
    with ``--stdin-filename`` the file on disk may hold another version (an editor's unsaved buffer)."""
    SOURCES[name] = source
    _LINES[name] = textpos.split_lines(source)


#: each reported file's lines (:func:`inplace_lint.textpos.split_lines`), read once
_LINES: Dict[str, List[str]] = {}


def _lines(path: str) -> List[str]:
    lines = _LINES.get(path)
    if lines is None:
        try:
            lines = textpos.split_lines(read_source(path))
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
            lines = []
        _LINES[path] = lines
    return lines


def char_column(path: str, line: int, byte_col: int) -> int:
    """0-based character column of ``ast``'s 0-based UTF-8 byte column on ``line`` of ``path``."""
    return textpos.char_column(textpos.line_text(_lines(path), line), byte_col)


def relative_path(path: str) -> str:
    """``path`` relative to the working directory, with ``/`` separators (absolute when outside it)."""
    absolute = os.path.abspath(path)
    try:
        rel = os.path.relpath(absolute)
    except ValueError:  # another drive (Windows)
        return absolute.replace(os.sep, "/")
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return absolute.replace(os.sep, "/")
    return rel.replace(os.sep, "/")


def fix_note(finding: Finding) -> str:
    """`` [fix: safe]`` / `` [fix: unsafe]`` after a finding that ``inplace-lint fix`` can rewrite,
    `` [no fix: <why>]`` after one whose planned fix was withdrawn (``Finding.no_fix``)."""
    if finding.fix is None:
        return f" [no fix: {finding.no_fix}]" if finding.no_fix else ""
    return f" [fix: {finding.fix.applicability.value}]"


def write_text(items: Sequence[Item], out: TextIO) -> None:
    """``path:line:col: CODE message [fix: safe]``, one line per finding (grep-friendly)."""
    for result, f in items:
        out.write(f"{result.path}:{f.line}:{f.col + 1}: {f.code} {f.message}{fix_note(f)}\n")


def write_full(items: Sequence[Item], out: TextIO) -> None:
    """``text``, each finding followed by its related locations as indented note lines that editors
    and terminals can jump to (as compilers print them)::

        pkg/m.py:3:5: IPV001 `div_` writes in place to `x`, ...
          pkg/m.py:2:9: note: model output `model(h).logits`
          pkg/m.py:2:24: note: view `.squeeze(0)`
    """
    for result, f in items:
        out.write(f"{result.path}:{f.line}:{f.col + 1}: {f.code} {f.message}{fix_note(f)}\n")
        for r in f.related:
            where = result.path if r.path is None else relative_path(r.path)  # another file: as `sarif` names it
            out.write(f"  {where}:{r.line}:{r.col + 1}: note: {r.message}\n")


def write_json(items: Sequence[Item], out: TextIO) -> None:
    """A JSON array, one finding per line: ``json``'s C encoder does each line (with ``indent`` it falls
    back to pure Python, which cost more than the analysis of the findings it prints)."""
    if not items:
        out.write("[]\n")
        return
    lines = ",\n  ".join(json.dumps(ruff_json_item(r, f)) for r, f in items)
    out.write(f"[\n  {lines}\n]\n")


def sarif_log(items: Sequence[Item]) -> dict:
    """A SARIF 2.1.0 log with one run: every rule in ``tool.driver.rules``, one result per finding."""
    index = {code: i for i, code in enumerate(RULES)}
    rules: List[dict] = [_with_uri({
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.what},
        "help": {"text": rule.why, "markdown": rule.document()},
        "defaultConfiguration": {"level": level(rule.code)},
    }, "helpUri", url(rule.code)) for rule in RULES.values()]
    if any(f.code == CANNOT_CHECK for _, f in items):
        index[CANNOT_CHECK] = len(rules)
        rules.append(_with_uri({
            "id": CANNOT_CHECK,
            "name": CANNOT_CHECK_NAME,
            "shortDescription": {"text": "File could not be read or parsed."},
            "fullDescription": {"text": CANNOT_CHECK_SUMMARY},
            "defaultConfiguration": {"level": "error"},
        }, "helpUri", code_url(CANNOT_CHECK)))
    results = []
    for result, f in items:
        entry = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": level(f.code),
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": _artifact(result.path),
                "region": {
                    "startLine": f.line,
                    "startColumn": char_column(result.path, f.line, f.col) + 1,
                    "endLine": f.end_line,
                    "endColumn": char_column(result.path, f.end_line, f.end_col) + 1,
                },
            }}],
        }
        if f.related:
            entry["relatedLocations"] = [{
                "id": i,
                "message": {"text": r.message},
                "physicalLocation": {
                    "artifactLocation": _artifact(related_path(result, r)),
                    "region": {"startLine": r.line,
                               "startColumn": char_column(related_path(result, r), r.line, r.col) + 1},
                },
            } for i, r in enumerate(f.related)]
        fixes = sarif_fixes(f, _artifact(result.path))
        if fixes:
            entry["fixes"] = fixes
        if f.no_fix:
            entry["properties"] = {"noFix": f.no_fix}
        results.append(entry)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": _with_uri({
                "name": "inplace-lint",
                "version": __version__,
                "rules": rules,
            }, "informationUri", project_url())},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": pathlib.Path(os.getcwd()).as_uri() + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }


def _artifact(path: str) -> dict:
    """SARIF ``artifactLocation``: relative to ``%SRCROOT%`` (the working directory) when inside it."""
    rel = relative_path(path)
    if os.path.isabs(rel) or rel.startswith("/"):
        return {"uri": pathlib.Path(os.path.abspath(path)).as_uri()}
    # a name that is not UTF-8 (its bytes kept as surrogates) is quoted byte for byte, as ``as_uri`` does
    return {"uri": urllib.parse.quote(rel, errors="surrogateescape"), "uriBaseId": "%SRCROOT%"}


def write_sarif(items: Sequence[Item], out: TextIO) -> None:
    json.dump(sarif_log(items), out, indent=2)
    out.write("\n")


def escape_data(text: str) -> str:
    """GitHub workflow command escaping for the message (after ``::``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """GitHub workflow command escaping for a property value (``file=``, ``title=``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(result: FileResult, f: Finding) -> str:
    props = {
        "file": relative_path(result.path),
        "line": f.line,
        "col": char_column(result.path, f.line, f.col) + 1,
        "endLine": f.end_line,
        "endColumn": char_column(result.path, f.end_line, f.end_col) + 1,
        "title": f.code,
    }
    joined = ",".join(f"{k}={escape_property(str(v))}" for k, v in props.items())
    return f"::{level(f.code)} {joined}::{escape_data(f.message)}"


def write_github(items: Sequence[Item], out: TextIO) -> None:
    for result, f in items:
        out.write(github_annotation(result, f) + "\n")


def counts_by_code(items: Sequence[Item]) -> List[Tuple[str, int]]:
    """``(code, count)`` by code, most frequent first (ties by code)."""
    counts = collections.Counter(f.code for _, f in items)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def write_statistics(items: Sequence[Item], out: TextIO) -> None:
    """One line per code, like ``ruff check --statistics``: count, code, rule name."""
    for code, count in counts_by_code(items):
        out.write(f"{count:>5}  {code}  {code_name(code)}\n")


def summary(files: int, items: Sequence[Item], unparsed: int, crashed: int) -> str:
    """The closing line of ``check`` (on stderr unless ``--quiet``)."""
    n = len(items)
    text = f"Scanned {files} file{'s' if files != 1 else ''}: "
    if n:
        by_code = ", ".join(f"{code}: {count}" for code, count in sorted(counts_by_code(items)))
        in_files = len({r.path for r, _ in items})
        text += f"{n} finding{'s' if n != 1 else ''} in {in_files} file{'s' if in_files != 1 else ''} ({by_code})"
    else:
        text += "no findings"
    if unparsed:
        text += f"; {unparsed} file{'s' if unparsed != 1 else ''} could not be read or parsed"
    if crashed:
        text += f"; the analysis crashed on {crashed} file{'s' if crashed != 1 else ''}"
    return text + "."


FORMATS = {"text": write_text, "full": write_full, "json": write_json, "sarif": write_sarif,
           "github": write_github}
