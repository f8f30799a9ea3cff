"""``inplace-lint`` command line: ``check`` (``fix`` and ``rule`` build on the same engine).

Exit codes: 0 clean, 1 findings (or files that could not be read or parsed), 2 usage or configuration error.
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
    items = [(r, f) for r in results for f in r.findings]
    errors = [r for r in results if r.error]
    for r in errors:
        print(f"{r.path}: {r.error}; skipped", file=sys.stderr)
    FORMATS[args.format](items, sys.stdout)
    if args.format == "text" and items and not args.quiet:
        print(f"Found {len(items)} finding{'s' if len(items) != 1 else ''} "
              f"in {len({r.path for r, _ in items})} of {len(results)} files.", file=sys.stderr)
    return 1 if items or errors else 0


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
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
