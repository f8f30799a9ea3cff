"""``inplace-lint`` command line: ``check`` (``fix`` and ``rule`` build on the same engine).

Exit codes: 0 clean, 1 findings (or files that could not be read or parsed), 2 usage or configuration error.
``fix``: 0 when no finding remains, 1 when findings remain (unsafe or without a fix) or a file was
skipped; with ``--diff`` also 1 when a file would change.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
from typing import Optional, Sequence

from . import __version__, config
from .checker import check_file
from .files import iter_python_files
from .reporters import FORMATS
from .rules import RULES


class UsageError(Exception):
    pass


def _common(args: argparse.Namespace):
    """Settings, selection and exclusion from the config file and the command line."""
    try:
        settings, file_cfg, _ = config.load(pathlib.Path(args.paths[0]))
    except config.ConfigError as exc:
        raise UsageError(str(exc)) from exc
    select = args.select if args.select is not None else file_cfg.get("select", [])
    ignore = (args.ignore or []) + file_cfg.get("ignore", [])
    exclude = (args.exclude or []) + file_cfg.get("exclude", [])
    for code in list(select) + list(ignore):
        if not any(c.startswith(code) for c in RULES):
            raise UsageError(f"unknown code {code!r} (known: {', '.join(RULES)})")
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        raise UsageError(f"no such file or directory: {', '.join(missing)}")
    return settings, select, ignore, exclude


def cmd_check(args: argparse.Namespace) -> int:
    settings, select, ignore, exclude = _common(args)
    results = [check_file(p, settings, select, ignore, args.disable_noqa)
               for p in iter_python_files(args.paths, exclude)]
    items = [(r, f) for r in results for f in r.findings]
    errors = [r for r in results if r.error]
    for r in errors:
        print(f"{r.path}: {r.error}; skipped", file=sys.stderr)
    FORMATS[args.format](items, sys.stdout)
    if args.format == "text" and items and not args.quiet:
        print(f"Found {len(items)} finding{'s' if len(items) != 1 else ''} "
              f"in {len({r.path for r, _ in items})} of {len(results)} files.", file=sys.stderr)
    return 1 if items or errors else 0


def cmd_fix(args: argparse.Namespace) -> int:
    """Rewrite fixable findings; ``--diff`` prints the changes instead of writing them."""
    import difflib

    from .codemod import fix_file

    settings, select, ignore, exclude = _common(args)
    results = [fix_file(p, settings=settings, style=args.style, unsafe_fixes=args.unsafe_fixes,
                        select=select, ignore=ignore, write=not args.diff, memory_aware=args.memory_aware)
               for p in iter_python_files(args.paths, exclude)]
    changed = [r for r in results if r.new_source is not None]
    for r in results:
        if r.error:
            print(f"{r.path}: {r.error}; skipped", file=sys.stderr)
        if args.diff and r.new_source is not None:
            sys.stdout.writelines(difflib.unified_diff(
                r.old_source.splitlines(keepends=True), r.new_source.splitlines(keepends=True),
                fromfile=r.path, tofile=r.path))
        for f in r.remaining:
            why = (f"unsafe fix not applied: {f.fix.reason}; use --unsafe-fixes" if f in r.unsafe_skipped
                   else "no automatic fix")
            print(f"{r.path}:{f.line}:{f.col + 1}: {f.code} {f.message} [{why}]")
    applied = sum(len(r.applied) for r in results)
    remaining = sum(len(r.remaining) for r in results)
    errors = [r for r in results if r.error]
    if not args.quiet:
        verb = "would be applied" if args.diff else "applied"
        print(f"{applied} fix{'es' if applied != 1 else ''} {verb} in {len(changed)} file"
              f"{'s' if len(changed) != 1 else ''}; {remaining} finding{'s' if remaining != 1 else ''} remain"
              f"{'s' if remaining == 1 else ''}; {len(errors)} file{'s' if len(errors) != 1 else ''} skipped.",
              file=sys.stderr)
    if remaining or errors or (args.diff and changed):
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="inplace-lint", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"inplace-lint {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="report in-place ops on views and model outputs")
    check.add_argument("paths", nargs="+", metavar="PATH", help="files or directories")
    check.add_argument("--format", choices=sorted(FORMATS), default="text",
                       help="text: path:line:col: CODE message; json: ruff's JSON schema")
    check.add_argument("--select", type=config.split_list, default=None, help="comma-separated codes or prefixes")
    check.add_argument("--ignore", type=config.split_list, default=None, help="comma-separated codes or prefixes")
    check.add_argument("--exclude", type=config.split_list, default=None, help="comma-separated glob patterns")
    check.add_argument("--disable-noqa", action="store_true", help="report findings on # noqa lines too")
    check.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    check.set_defaults(func=cmd_check)

    fix = sub.add_parser("fix", help="rewrite in-place ops out of place (safe fixes only, unless --unsafe-fixes)")
    fix.add_argument("paths", nargs="+", metavar="PATH", help="files or directories")
    fix.add_argument("--style", choices=("runtime", "inline"), default="runtime",
                     help="runtime: call inplace_lint.runtime (default); inline: plain torch, no dependency")
    fix.add_argument("--unsafe-fixes", action="store_true",
                     help="also apply fixes that another reader of the tensor could notice")
    fix.add_argument("--memory-aware", action="store_true",
                     help='runtime style: emit inplace="auto", which stays in place wherever PyTorch allows it')
    fix.add_argument("--diff", action="store_true", help="print a unified diff and write nothing")
    for flag in ("--select", "--ignore", "--exclude"):
        fix.add_argument(flag, type=config.split_list, default=None)
    fix.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    fix.set_defaults(func=cmd_fix)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"inplace-lint: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
