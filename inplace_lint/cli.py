"""``inplace-lint`` command line: ``check`` (and, later, ``fix``/``rule``).

Exit codes: 0 clean, 1 findings (or files that could not be read or parsed), 2 usage or configuration error.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import pathlib
import sys
from dataclasses import dataclass, field
from typing import Iterator, List, Optional, Sequence

from . import __version__, config, noqa
from .engine import Settings, analyze
from .findings import Finding
from .rules import RULES, url

#: folders never searched when a directory is given
SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", "build", "dist", ".eggs",
     "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages"}
)


@dataclass
class FileResult:
    path: str
    findings: List[Finding] = field(default_factory=list)
    error: Optional[str] = None


def iter_python_files(paths: Sequence[str], exclude: Sequence[str]) -> Iterator[str]:
    """Python files under ``paths`` (files given explicitly are always checked unless excluded)."""

    def excluded(path: str) -> bool:
        name = os.path.basename(path)
        return any(fnmatch.fnmatch(name, pat) or fnmatch.fnmatch(path, pat) for pat in exclude)

    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")
                                 and not excluded(os.path.join(root, d)))
                for name in sorted(files):
                    full = os.path.join(root, name)
                    if name.endswith((".py", ".pyi")) and not excluded(full):
                        yield full
        elif not excluded(path):
            yield path


def read_source(path: str) -> str:
    """Read a file as Python does: honouring a BOM and an encoding cookie."""
    import tokenize

    with tokenize.open(path) as fh:
        return fh.read()


def check_file(path: str, settings: Settings, select: Sequence[str], ignore: Sequence[str],
               disable_noqa: bool = False) -> FileResult:
    """Analyze one file; findings are filtered by selection and ``# noqa`` exactly as flake8 would."""
    result = FileResult(path)
    try:
        source = read_source(path)
        import ast

        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError, UnicodeDecodeError, OSError) as exc:
        result.error = _describe_error(exc)
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
    return result


def _describe_error(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"cannot parse: {exc.msg} (line {exc.lineno}, column {exc.offset})"
    return f"cannot read: {exc}"


def to_ruff_json(result: FileResult, finding: Finding) -> dict:
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


def cmd_check(args: argparse.Namespace) -> int:
    try:
        settings, file_cfg, cfg_path = config.load(pathlib.Path(args.paths[0]))
    except config.ConfigError as exc:
        print(f"inplace-lint: error: {exc}", file=sys.stderr)
        return 2
    select = args.select if args.select is not None else file_cfg.get("select", [])
    ignore = (args.ignore or []) + file_cfg.get("ignore", [])
    exclude = (args.exclude or []) + file_cfg.get("exclude", [])
    for code in list(select) + list(ignore):
        if not any(c.startswith(code) for c in RULES):
            print(f"inplace-lint: error: unknown code {code!r} (known: {', '.join(RULES)})", file=sys.stderr)
            return 2
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        print(f"inplace-lint: error: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    results = [check_file(p, settings, select, ignore, args.disable_noqa)
               for p in iter_python_files(args.paths, exclude)]
    findings = [(r, f) for r in results for f in r.findings]
    errors = [r for r in results if r.error]
    for r in errors:
        print(f"{r.path}: {r.error}; skipped", file=sys.stderr)
    if args.format == "json":
        json.dump([to_ruff_json(r, f) for r, f in findings], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for r, f in findings:
            print(f"{r.path}:{f.line}:{f.col + 1}: {f.code} {f.message}")
        if findings and not args.quiet:
            print(f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''} "
                  f"in {len({r.path for r, _ in findings})} of {len(results)} files.", file=sys.stderr)
    return 1 if findings or errors else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="inplace-lint", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"inplace-lint {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="report in-place ops on views and model outputs")
    check.add_argument("paths", nargs="+", metavar="PATH", help="files or directories")
    check.add_argument("--format", choices=("text", "json"), default="text",
                       help="text: path:line:col: CODE message; json: ruff's JSON schema")
    check.add_argument("--select", type=config.split_list, default=None, help="comma-separated codes or prefixes")
    check.add_argument("--ignore", type=config.split_list, default=None, help="comma-separated codes or prefixes")
    check.add_argument("--exclude", type=config.split_list, default=None, help="comma-separated glob patterns")
    check.add_argument("--disable-noqa", action="store_true", help="report findings on # noqa lines too")
    check.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    check.set_defaults(func=cmd_check)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
