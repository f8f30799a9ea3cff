"""``inplace-lint`` command line: ``check``, ``fix``, ``rule`` and ``server``.

``check`` and ``fix`` share the configuration (:func:`_common`) and the parallel runner
(:func:`inplace_lint.adapters.parallel.run_files`: ``--jobs``, progress bar, results sorted by path, a crash in
one file reported and the run going on).

Exit codes of ``check``: 0 clean; 1 findings, files that could not be read or parsed, or files whose
analysis crashed (a bug in inplace-lint: reported on stderr with the exception, the run goes on);
2 usage or configuration error.
``fix``: 0 when no finding remains, 1 when findings remain (unsafe or without a fix), a file was
skipped or crashed; with ``--diff`` also 1 when a file would change.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from .. import __version__, config
from ..pipeline import CheckJob
from .files import iter_python_files
from .reporters import FORMATS, PROJECT_URL, summary, write_statistics
from ..rules import RULES
from .parallel import run_files

ISSUES_URL = PROJECT_URL + "/issues"
#: output formats that carry each fix's edits (computed once per file, in the configured fix-style)
EDIT_FORMATS = ("json", "sarif")


class UsageError(Exception):
    pass


def usage_error(message: str) -> int:
    print(f"inplace-lint: error: {message}", file=sys.stderr)
    return 2


@dataclass(frozen=True)
class Options:
    """What ``check`` and ``fix`` take from the config file and the command line."""

    settings: config.Settings
    select: Tuple[str, ...]
    ignore: Tuple[str, ...]
    exclude: Tuple[str, ...]
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...]
    config_dir: Optional[pathlib.Path]
    fix_style: str


def _common(args: argparse.Namespace) -> Options:
    """Settings, selection and exclusion from the config file and the command line."""
    try:
        settings, file_cfg, cfg_path = config.load(pathlib.Path(args.paths[0]))
    except config.ConfigError as exc:
        raise UsageError(str(exc)) from exc
    select = args.select if args.select is not None else file_cfg.get("select", [])
    ignore = (args.ignore or []) + file_cfg.get("ignore", [])
    exclude = (args.exclude or []) + file_cfg.get("exclude", [])
    for code in list(select) + list(ignore):
        if not any(c.startswith(code) for c in RULES):
            raise UsageError(f"unknown code {code!r} (known: {', '.join(RULES)})")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}")
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        raise UsageError(f"no such file or directory: {', '.join(missing)}")
    return Options(settings, tuple(select), tuple(ignore), tuple(exclude),
                   tuple(file_cfg.get("per-file-ignores", ())), cfg_path.parent if cfg_path else None,
                   file_cfg.get("fix-style", config.FIX_STYLES[0]))


def _report_crashes(outcomes) -> List:
    crashes = [o for o in outcomes if o.crash is not None]
    for o in crashes:
        print(f"{o.path}: internal error, the analysis crashed: {o.crash}; skipped "
              f"(please report it at {ISSUES_URL})", file=sys.stderr)
    return crashes


def _progress(args: argparse.Namespace) -> bool:
    return not args.quiet and sys.stderr.isatty()


def cmd_check(args: argparse.Namespace) -> int:
    if args.statistics and args.format != "text":
        raise UsageError("--statistics prints a text table; it cannot be combined with --format " + args.format)
    opts = _common(args)
    job = CheckJob(opts.settings, opts.select, opts.ignore, args.disable_noqa, opts.per_file_ignores, opts.config_dir,
                   fix_style=opts.fix_style if args.format in EDIT_FORMATS else None)
    files = list(iter_python_files(args.paths, opts.exclude))
    outcomes = run_files(files, job, args.jobs, progress=_progress(args))
    results = [o.value for o in outcomes if o.value is not None]
    items = [(r, f) for r in results for f in r.findings]
    errors = [r for r in results if r.error]
    for r in errors:
        print(f"{r.path}: {r.error}; skipped", file=sys.stderr)
    crashes = _report_crashes(outcomes)
    if args.statistics:
        write_statistics(items, sys.stdout)
    else:
        FORMATS[args.format](items, sys.stdout)
    if not args.quiet:
        print(summary(len(files), items, len(errors), len(crashes)), file=sys.stderr)
    return 1 if items or errors or crashes else 0


@dataclass(frozen=True)
class FixJob:
    """``codemod.fix_file`` with fixed options, one picklable callable for :func:`run_files`."""

    opts: Options
    style: str
    unsafe_fixes: bool
    write: bool
    memory_aware: bool = False

    def __call__(self, path: str):
        from ..fix.codemod import fix_file

        ignore = list(self.opts.ignore) + config.per_file_ignored(
            path, list(self.opts.per_file_ignores), self.opts.config_dir)
        return fix_file(path, settings=self.opts.settings, style=self.style, unsafe_fixes=self.unsafe_fixes,
                        select=self.opts.select, ignore=ignore, write=self.write, memory_aware=self.memory_aware)


def cmd_fix(args: argparse.Namespace) -> int:
    """Rewrite fixable findings; ``--diff`` prints the changes instead of writing them."""
    import difflib

    opts = _common(args)
    job = FixJob(opts, args.style or opts.fix_style, args.unsafe_fixes, write=not args.diff,
                 memory_aware=args.memory_aware)
    files, targets = [], set()
    for path in iter_python_files(args.paths, opts.exclude):
        target = os.path.realpath(path)  # a symlink and its target (or two links) are one file: fix it once
        if target not in targets:
            targets.add(target)
            files.append(path)
    outcomes = run_files(files, job, args.jobs, progress=_progress(args))
    results = [o.value for o in outcomes if o.value is not None]
    changed = [r for r in results if r.new_source is not None]
    for r in results:
        if r.error:
            print(f"{r.path}: {r.error}; skipped", file=sys.stderr)
        if args.diff and r.new_source is not None:
            from ..fix.codemod import unified_diff

            diff = unified_diff(r.path, r.old_source, r.edits)
            sys.stdout.writelines(diff if diff is not None else difflib.unified_diff(
                r.old_source.splitlines(keepends=True), r.new_source.splitlines(keepends=True),
                fromfile=r.path, tofile=r.path))
        for f in r.remaining:
            why = (f"unsafe fix not applied: {f.fix.reason}; use --unsafe-fixes" if f in r.unsafe_skipped
                   else "no automatic fix")
            print(f"{r.path}:{f.line}:{f.col + 1}: {f.code} {f.message} [{why}]")
    crashes = _report_crashes(outcomes)
    applied = sum(len(r.applied) for r in results)
    remaining = sum(len(r.remaining) for r in results)
    errors = [r for r in results if r.error]
    if not args.quiet:
        verb = "would be applied" if args.diff else "applied"
        print(f"{applied} fix{'es' if applied != 1 else ''} {verb} in {len(changed)} file"
              f"{'s' if len(changed) != 1 else ''}; {remaining} finding{'s' if remaining != 1 else ''} remain"
              f"{'s' if remaining == 1 else ''}; {len(errors) + len(crashes)} file"
              f"{'s' if len(errors) + len(crashes) != 1 else ''} skipped. Scanned {len(outcomes)} file"
              f"{'s' if len(outcomes) != 1 else ''}.", file=sys.stderr)
    if remaining or errors or crashes or (args.diff and changed):
        return 1
    return 0


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

    fix = sub.add_parser("fix", help="rewrite in-place ops out of place (safe fixes only, unless --unsafe-fixes)")
    fix.add_argument("paths", nargs="+", metavar="PATH", help="files or directories")
    fix.add_argument("--style", choices=config.FIX_STYLES, default=None,
                     help="runtime: call inplace_lint.runtime; inline: plain torch, no dependency "
                          "(default: fix-style from the config file, else runtime)")
    fix.add_argument("--unsafe-fixes", action="store_true",
                     help="also apply fixes that another reader of the tensor could notice")
    fix.add_argument("--memory-aware", action="store_true",
                     help='runtime style: emit inplace="auto", which stays in place wherever PyTorch allows it')
    fix.add_argument("--diff", action="store_true", help="print a unified diff and write nothing")
    for flag in ("--select", "--ignore", "--exclude"):
        fix.add_argument(flag, type=config.split_list, default=None)
    fix.add_argument("-j", "--jobs", type=int, default=None,
                     help="processes to fix files with (default: all cores; 1: in this process)")
    fix.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
    fix.set_defaults(func=cmd_fix)
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
    try:
        return args.func(args)
    except UsageError as exc:
        return usage_error(str(exc))


if __name__ == "__main__":
    sys.exit(main())
