"""Check one file or source text: engine findings, filtered by selection and ``# noqa`` as flake8 does."""
from __future__ import annotations

import ast
import pathlib
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from . import config
from .adapters import noqa
from .analysis import analyze
from .config import Settings
from .adapters.files import read_source
from .findings import Finding


@dataclass
class FileResult:
    path: str
    findings: List[Finding] = field(default_factory=list)
    #: why the file could not be checked (it is then skipped, never rewritten)
    error: Optional[str] = None


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
    except (SyntaxError, ValueError) as exc:
        result.error = describe_error(exc)
        return result
    lines = source.splitlines(keepends=True)
    if not disable_noqa and noqa.file_is_exempt(lines):
        return result
    mapping = noqa.line_mapping(lines) if not disable_noqa else {}
    for finding in analyze(tree, settings):
        if not config.selected(finding.code, select, ignore):
            continue
        if not disable_noqa and noqa.suppressed(finding.code, finding.line, mapping, lines):
            continue
        result.findings.append(finding)
    if fix_style is not None and any(f.fix is not None for f in result.findings):
        from .fix.codemod import attach_edits

        result.findings = attach_edits(source, tree, result.findings, fix_style, memory_aware)
    return result


def check_file(path: str, settings: Settings, select: Sequence[str] = (), ignore: Sequence[str] = (),
               disable_noqa: bool = False, fix_style: Optional[str] = None) -> FileResult:
    try:
        source = read_source(path)
    except (SyntaxError, UnicodeDecodeError, OSError) as exc:
        return FileResult(path, error=describe_error(exc))
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


def describe_error(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"cannot parse: {exc.msg} (line {exc.lineno}, column {exc.offset})"
    return f"cannot read: {exc}"
