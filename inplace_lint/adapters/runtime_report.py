"""``inplace-lint check --runtime-report FILE``: join the static findings with a sanitizer report.

FILE is what ``python -m inplace_lint.sanitize`` (or ``pytest --inplace-sanitize``) wrote, in any of its
formats: JSON (``check``'s schema), SARIF 2.1.0, or text (``path:line:col: CODE message`` lines).

- A static finding whose ``path:line`` the run also reported is **confirmed**: its message ends with
  ``[confirmed at run time]`` (``... as IPV002`` when the run saw another code there, e.g. a model output
  whose head turned out to be a custom autograd Function).
- A runtime site in one of the checked files that no static finding covers is **missed**: listed on
  stderr after the findings, as ``path:line: CODE message``; ``check`` then exits 1.

Sites outside the checked files are left out (the static analysis did not look there), and so are sites
whose code ``check`` would not report there: not selected, ignored (also per file), or suppressed by a
``# noqa`` on that line or for the whole file; those are choices, not blind spots. This module never
imports torch.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import urllib.parse
import urllib.request
from typing import Dict, Iterable, List, Optional, Sequence, Set, TextIO, Tuple

from .. import config, textpos
from ..findings import Finding
from ..source.problems import FileResult
from .jobs import CheckJob
from ..source import noqa
from ..source.files import read_source
from .reporters import relative_path

Item = Tuple[FileResult, Finding]

_TEXT_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>IPV\d{3}) (?P<message>.*)$")


class ReportError(ValueError):
    """The runtime report cannot be read or is in no format this module knows."""


@dataclasses.dataclass(frozen=True)
class RuntimeSite:
    """One site of a runtime report: an absolute, normalised ``path``, a 1-based ``line``, a code."""

    path: str
    line: int
    code: str
    message: str = ""


def _norm(path: str, base: str = "") -> str:
    return os.path.normcase(os.path.realpath(os.path.join(base, path) if base else path))


def _sarif_path(location: dict, bases: Dict[str, str], report_dir: str) -> str:
    artifact = location.get("physicalLocation", {}).get("artifactLocation", {})
    uri = artifact.get("uri", "")
    base = bases.get(artifact.get("uriBaseId", ""), "")
    if base and not urllib.parse.urlparse(uri).scheme:
        uri = urllib.parse.urljoin(base, uri)
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme == "file":
        return _norm(urllib.request.url2pathname(parsed.path))
    return _norm(urllib.parse.unquote(uri, errors="surrogateescape"), report_dir)


def parse(text: str, report_dir: str = "") -> List[RuntimeSite]:
    """The sites of a report's text; relative paths are taken from ``report_dir``. ``ReportError`` when the
    text is no JSON list, SARIF log or text report."""
    stripped = text.strip()
    if not stripped:
        return []
    if stripped[0] in "[{":
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise ReportError(f"not valid JSON: {exc}") from exc
        try:
            if isinstance(data, list):
                return [RuntimeSite(_norm(d["filename"], report_dir), int(d["location"]["row"]), d["code"],
                                    d.get("message", "")) for d in data]
            sites = []
            for run in data["runs"]:
                bases = {k: v.get("uri", "") for k, v in run.get("originalUriBaseIds", {}).items()}
                for result in run.get("results", []):
                    for location in result.get("locations", [])[:1]:
                        region = location.get("physicalLocation", {}).get("region", {})
                        sites.append(RuntimeSite(_sarif_path(location, bases, report_dir), int(region["startLine"]),
                                                 result["ruleId"], result.get("message", {}).get("text", "")))
            return sites
        except (KeyError, TypeError, ValueError) as exc:
            raise ReportError(f"neither check's JSON nor SARIF ({type(exc).__name__}: {exc})") from exc
    sites = []
    for raw in stripped.splitlines():
        m = _TEXT_LINE.match(raw)
        if m:
            sites.append(RuntimeSite(_norm(m["path"], report_dir), int(m["line"]), m["code"], m["message"]))
    if not sites and not stripped.startswith("inplace-lint sanitize:"):
        raise ReportError("no `path:line:col: CODE message` line in it")
    return sites


def load(path: str) -> List[RuntimeSite]:
    """The sites of the report file at ``path`` (``ReportError`` when unreadable or unknown)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"cannot read {path}: {exc}") from exc
    return parse(text, os.path.dirname(os.path.abspath(path)))


def _silenced(job: Optional[CheckJob], path: str, site: RuntimeSite, cache: Dict[str, Tuple[list, dict]]) -> bool:
    """Whether ``check`` with ``job``'s options would not report ``site.code`` at ``site.line`` of ``path``."""
    if job is None:
        return False
    opts = job.file_options(path)
    if not config.selected(site.code, opts.select, opts.ignore):
        return True
    if job.disable_noqa:
        return False
    if path not in cache:
        try:
            lines = textpos.split_lines(read_source(path))
        except (OSError, SyntaxError, UnicodeDecodeError):
            lines = []
        cache[path] = (lines, noqa.line_mapping(lines) if lines else {})
    lines, mapping = cache[path]
    return bool(lines) and (noqa.file_is_exempt(lines) or noqa.suppressed(site.code, site.line, mapping, lines))


def join(items: Sequence[Item], sites: Iterable[RuntimeSite], checked: Iterable[str],
         job: Optional[CheckJob] = None) -> Tuple[List[Item], List[RuntimeSite]]:
    """Mark the static findings confirmed by ``sites``; return them and the sites in ``checked`` files that no
    static finding covers (by path, line, code) and that ``job``'s selection and ``# noqa`` comments do not
    silence."""
    seen: Dict[Tuple[str, int], Set[str]] = {}
    sites = list(sites)
    for site in sites:
        seen.setdefault((site.path, site.line), set()).add(site.code)
    out: List[Item] = []
    covered: Set[Tuple[str, int]] = set()
    for result, finding in items:
        key = (_norm(result.path), finding.line)
        codes = seen.get(key)
        if codes:
            covered.add(key)
            note = "confirmed at run time" if finding.code in codes else \
                f"confirmed at run time as {', '.join(sorted(codes))}"
            finding = dataclasses.replace(finding, message=f"{finding.message} [{note}]")
        out.append((result, finding))
    files = {_norm(p): p for p in checked}
    cache: Dict[str, Tuple[list, dict]] = {}
    missed = sorted({s for s in sites if s.path in files and (s.path, s.line) not in covered
                     and not _silenced(job, files[s.path], s, cache)},
                    key=lambda s: (s.path, s.line, s.code))
    unique: Dict[Tuple[str, int, str], RuntimeSite] = {}
    for s in missed:
        unique.setdefault((s.path, s.line, s.code), s)
    return out, list(unique.values())


def write_missed(missed: Sequence[RuntimeSite], out: TextIO) -> None:
    """The runtime sites that the static analysis missed, one ``path:line: CODE message`` line each."""
    if not missed:
        return
    out.write(f"Seen at run time but not found by the static analysis ({len(missed)}):\n")
    for s in missed:
        out.write(f"{relative_path(s.path)}:{s.line}: {s.code} {s.message}\n")


def mark_results(path: str, checked: Iterable[str], results: Sequence[FileResult],
                 job: Optional[CheckJob] = None) -> List[RuntimeSite]:
    """:func:`load` then :func:`join` on ``results``' findings, replaced in place by their marked copies;
    returns the missed sites. What ``check --runtime-report`` does."""
    marked, missed = join([(r, f) for r in results for f in r.findings], load(path), checked, job)
    by_result: Dict[int, List[Finding]] = {}
    for result, finding in marked:
        by_result.setdefault(id(result), []).append(finding)
    for result in results:
        if result.findings:
            result.findings[:] = by_result.get(id(result), [])
    return missed


def join_report(path: str, checked: Iterable[str], items: Sequence[Item],
                job: Optional[CheckJob] = None) -> Tuple[List[Item], List[RuntimeSite]]:
    """:func:`load` then :func:`join`: what ``check --runtime-report`` does."""
    return join(items, load(path), checked, job)
