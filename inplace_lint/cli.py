"""``inplace-lint`` command line: ``check``, ``rule`` and ``server`` (``fix`` builds on the same runner).

Exit codes of ``check``: 0 clean; 1 findings, files that could not be read or parsed, or files whose
analysis crashed (a bug in inplace-lint: reported on stderr with the exception, the run goes on);
2 usage or configuration error.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
from typing import Optional, Sequence

from . import __version__, config
from .checker import CheckJob
from .files import iter_python_files
from .reporters import FORMATS, PROJECT_URL, summary, write_statistics
from .rules import RULES
from .runner import run_files

ISSUES_URL = PROJECT_URL + "/issues"


def usage_error(message: str) -> int:
    print(f"inplace-lint: error: {message}", file=sys.stderr)
    return 2


def cmd_check(args: argparse.Namespace) -> int:
    try:
        settings, file_cfg, cfg_path = config.load(pathlib.Path(args.paths[0]))
    except config.ConfigError as exc:
        return usage_error(str(exc))
    select = args.select if args.select is not None else file_cfg.get("select", [])
    ignore = (args.ignore or []) + file_cfg.get("ignore", [])
    exclude = (args.exclude or []) + file_cfg.get("exclude", [])
    for code in list(select) + list(ignore):
        if not any(c.startswith(code) for c in RULES):
            return usage_error(f"unknown code {code!r} (known: {', '.join(RULES)})")
    if args.jobs is not None and args.jobs < 1:
        return usage_error(f"--jobs must be at least 1, got {args.jobs}")
    if args.statistics and args.format != "text":
        return usage_error("--statistics prints a text table; it cannot be combined with --format " + args.format)
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        return usage_error(f"no such file or directory: {', '.join(missing)}")
    job = CheckJob(settings, tuple(select), tuple(ignore), args.disable_noqa,
                   tuple(file_cfg.get("per-file-ignores", ())), cfg_path.parent if cfg_path else None)
    files = list(iter_python_files(args.paths, exclude))
    outcomes = run_files(files, job, args.jobs, progress=not args.quiet and sys.stderr.isatty())
    results = [o.value for o in outcomes if o.value is not None]
    crashes = [o for o in outcomes if o.crash is not None]
    items = [(r, f) for r in results for f in r.findings]
    errors = [r for r in results if r.error]
    for r in errors:
        print(f"{r.path}: {r.error}; skipped", file=sys.stderr)
    for o in crashes:
        print(f"{o.path}: internal error, the analysis crashed: {o.crash}; skipped "
              f"(please report it at {ISSUES_URL})", file=sys.stderr)
    if args.statistics:
        write_statistics(items, sys.stdout)
    else:
        FORMATS[args.format](items, sys.stdout)
    if not args.quiet:
        print(summary(len(files), items, len(errors), len(crashes)), file=sys.stderr)
    return 1 if items or errors or crashes else 0


def cmd_rule(args: argparse.Namespace) -> int:
    if args.all:
        print("\n".join(rule.document() for rule in RULES.values()), end="")
        return 0
    if args.code is None:
        width = max(len(r.name) for r in RULES.values())
        for rule in RULES.values():
            print(f"{rule.code}  {rule.name:<{width}}  {rule.summary}")
        return 0
    rule = RULES.get(args.code.upper())
    if rule is None:
        return usage_error(f"unknown rule {args.code!r} (known: {', '.join(RULES)})")
    print(rule.document(), end="")
    return 0


def cmd_server(args: argparse.Namespace) -> int:
    try:
        from .server import serve
    except ImportError as exc:  # pygls is an extra
        return usage_error(f"the language server needs pygls: pip install 'inplace-lint[server]' ({exc})")
    serve()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="inplace-lint", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"inplace-lint {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="report in-place ops on views and model outputs")
    check.add_argument("paths", nargs="+", metavar="PATH", help="files or directories")
    check.add_argument("--format", choices=sorted(FORMATS), default="text",
                       help="text: path:line:col: CODE message; json: ruff's JSON schema; sarif: SARIF 2.1.0; "
                            "github: GitHub Actions workflow annotations")
    check.add_argument("--statistics", action="store_true",
                       help="print the number of findings per code instead of the findings")
    check.add_argument("--select", type=config.split_list, default=None, help="comma-separated codes or prefixes")
    check.add_argument("--ignore", type=config.split_list, default=None, help="comma-separated codes or prefixes")
    check.add_argument("--exclude", type=config.split_list, default=None, help="comma-separated glob patterns")
    check.add_argument("--disable-noqa", action="store_true", help="report findings on # noqa lines too")
    check.add_argument("-j", "--jobs", type=int, default=None,
                       help="processes to check files with (default: all cores; 1: in this process)")
    check.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
    check.set_defaults(func=cmd_check)
    rule = sub.add_parser("rule", help="show a rule's documentation (no code: list the rules)")
    rule.add_argument("code", nargs="?", help="a rule code, e.g. IPV001")
    rule.add_argument("--all", action="store_true", help="show every rule's documentation")
    rule.set_defaults(func=cmd_rule)
    server = sub.add_parser("server", help="run the language server on stdio (needs the [server] extra)")
    server.set_defaults(func=cmd_server)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
