"""The inplace-lint command line: check, fix, rule and server.

``check`` and ``fix`` share the configuration (:func:`_common`) and the parallel runner
(:func:`inplace_lint.adapters.parallel.run_files`: ``--jobs``, progress bar, results sorted by path, a crash in
one file reported and the run going on).

Conventions that ruff and flake8 users bring: ``check`` with no path checks ``.``; ``-`` reads the
source from stdin (``--stdin-filename`` names it for the output, the configuration and
``per-file-ignores``); a path that does not exist, a file that cannot be read or parsed is reported as
an ``IPV000`` item in the chosen format (and on stderr) while the other files are still checked;
``--select``/``--ignore``/``--exclude`` (and their ``--extend-`` forms) take comma lists and accumulate
when repeated; a closed stdout (``inplace-lint check . | head -1``) ends the run quietly.

Exit codes: see :data:`CHECK_EXIT_CODES` and :data:`FIX_EXIT_CODES` (also in ``--help``).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from .. import __version__, config
from ..pipeline import CheckJob, FileResult, check_source, decode_problem
from .files import decode, iter_python_files
from .reporters import FORMATS, PROJECT_URL, register_source, summary, write_statistics
from ..rules import RULES
from .parallel import run_files

ISSUES_URL = PROJECT_URL + "/issues"
#: ``-`` among the paths: read the source from stdin
STDIN = "-"

CHECK_EXIT_CODES = """\
exit codes:
  0  no findings
  1  findings; or a file could not be read or parsed (reported as IPV000), a path does not
     exist, or the analysis of a file crashed (a bug in inplace-lint, reported on stderr)
  2  usage or configuration error"""

FIX_EXIT_CODES = """\
exit codes:
  0  no finding remains
  1  findings remain (unsafe fixes not applied, or findings without a fix), a file was
     skipped (cannot be read or parsed) or crashed; with --diff, also when a file would change
  2  usage or configuration error"""

FIX_DESCRIPTION = """\
Rewrite in-place ops out of place, in the files given (directories are searched as by check).

Which findings have a fix: a write whose target is a plain local name, as a statement of its own
or used as a value in a simple statement (hoisted before it), for
  x.div_(t) and the other *_ methods with an out-of-place twin  ->  x = <out-of-place op>
  x /= t and the other augmented assignments                     ->  same as the method
  x.copy_(s), x.fill_(v), x[i] = v (no out-of-place twin)        ->  x = x.clone() first
  F.relu(x, inplace=True)                                        ->  x = F.relu(x)
  torch.add(a, b, out=x)                                         ->  x = torch.add(a, b), dtype kept
No fix where the rewrite could change what the code does: a target that is not a name
(output.logits.div_(t)), a write through a loop variable, a closure or global name, a write
under a short-circuit or conditional expression. check marks each finding [fix: safe] or
[fix: unsafe] (check --format json gives the edits and, for unsafe ones, the reason).

Safe fixes are applied; unsafe ones (another reader of the tensor, e.g. the caller of a function
whose parameter is written, could notice the change) only with --unsafe-fixes.
"fix -" reads the source from stdin and prints the fixed text to stdout."""
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
    #: ``cache-dir`` from the config file (relative to its folder)
    cache_dir: Optional[str] = None


def _paths(args: argparse.Namespace) -> List[str]:
    """The paths to check: ``.`` when none is given, stdin when none is given with ``--stdin-filename``
    (both as ruff does; flake8's ``-`` works too)."""
    if not args.paths:
        args.paths = [STDIN] if args.stdin_filename is not None else ["."]
    if args.stdin_filename is not None and STDIN not in args.paths:
        raise UsageError("--stdin-filename names the source read from stdin: give '-' as the path")
    return args.paths


def _config_start(args: argparse.Namespace) -> pathlib.Path:
    """Where the configuration is searched from: the first path (for stdin: ``--stdin-filename``, else ``.``)."""
    first = args.paths[0]
    if first == STDIN:
        return pathlib.Path(args.stdin_filename or ".")
    return pathlib.Path(first)


def _common(args: argparse.Namespace) -> Options:
    """Settings, selection and exclusion from the config file and the command line.

    ``--select`` replaces the configured selection, ``--extend-select`` adds to it (nothing to add
    to when everything is selected); ``--ignore``/``--extend-ignore`` and ``--exclude``/``--extend-exclude``
    add to the configured lists. Each may be repeated and takes comma lists.
    """
    _paths(args)
    try:
        settings, file_cfg, cfg_path = config.load(_config_start(args))
    except config.ConfigError as exc:
        raise UsageError(str(exc)) from exc
    select = list(args.select) if args.select is not None else list(file_cfg.get("select", []))
    if select and args.extend_select:
        select += args.extend_select
    ignore = list(args.ignore or []) + list(args.extend_ignore or []) + list(file_cfg.get("ignore", []))
    exclude = list(args.exclude or []) + list(args.extend_exclude or []) + list(file_cfg.get("exclude", []))
    for code in select + ignore + list(args.extend_select or []):
        if not any(c.startswith(code) for c in RULES):
            raise UsageError(f"unknown code {code!r} (known: {', '.join(RULES)})")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}")
    return Options(settings, tuple(select), tuple(ignore), tuple(exclude),
                   tuple(file_cfg.get("per-file-ignores", ())), cfg_path.parent if cfg_path else None,
                   file_cfg.get("fix-style", config.FIX_STYLES[0]),
                   str((cfg_path.parent if cfg_path else pathlib.Path()) / file_cfg["cache-dir"])
                   if file_cfg.get("cache-dir") else None)


def _prepare(files: List[str], opts: Options, args: argparse.Namespace) -> None:
    """With worker processes, build the project summaries once here (the workers read the cache)."""
    if args.jobs != 1 and len(files) > 1:
        from ..pipeline import prepare_projects

        prepare_projects(files, opts.settings, args.jobs)


def _project_mode(args: argparse.Namespace, opts: Options) -> None:
    """Project-wide analysis (summaries of every file of the project, cached on disk) for check and fix."""
    from ..pipeline import set_project_mode

    set_project_mode(True, use_cache=not args.no_cache, cache_dir=args.cache_dir or opts.cache_dir)


def _why_left(finding) -> str:
    """Why ``fix`` left a finding: an unsafe fix not asked for (it still has its fix), or no fix (and why,
    where the analysis says: ``Finding.no_fix``)."""
    if finding.fix is not None:
        return f"unsafe fix not applied: {finding.fix.reason}; use --unsafe-fixes"
    return "no automatic fix" + (f": {finding.no_fix}" if finding.no_fix else "")


def _report_crashes(outcomes) -> List:
    crashes = [o for o in outcomes if o.crash is not None]
    for o in crashes:
        print(f"{o.path}: internal error, the analysis crashed: {o.crash}; skipped "
              f"(please report it at {ISSUES_URL})", file=sys.stderr)
    return crashes


def _progress(args: argparse.Namespace) -> bool:
    return not args.quiet and sys.stderr.isatty()


def _check_stdin(args: argparse.Namespace, job: CheckJob) -> FileResult:
    """``check -``: the source on stdin, named ``--stdin-filename`` (else ``-``) in the output."""
    name = args.stdin_filename or STDIN
    raw = sys.stdin.buffer.read()
    try:
        source = decode(raw)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        return FileResult(name).fail(decode_problem(exc, raw))
    ignore = list(job.ignore) + config.per_file_ignored(name, list(job.per_file_ignores), job.config_dir)
    register_source(name, source)  # columns and fix edits come from this text, not from a file of that name
    return check_source(source, name, job.settings, job.select, ignore, job.disable_noqa, fix_style=job.fix_style)


def cmd_check(args: argparse.Namespace) -> int:
    if args.statistics and args.format != "text":
        raise UsageError("--statistics prints a text table; it cannot be combined with --format " + args.format)
    opts = _common(args)
    _project_mode(args, opts)
    job = CheckJob(opts.settings, opts.select, opts.ignore, args.disable_noqa, opts.per_file_ignores, opts.config_dir,
                   fix_style=opts.fix_style if args.format in EDIT_FORMATS else None)
    files = list(iter_python_files([p for p in args.paths if p != STDIN], opts.exclude))
    _prepare(files, opts, args)
    outcomes = run_files(files, job, args.jobs, progress=_progress(args))
    results = [o.value for o in outcomes if o.value is not None]
    if STDIN in args.paths:
        results.insert(0, _check_stdin(args, job))
    missed = []
    if args.runtime_report:  # join a sanitizer report (adapters/runtime_report.py)
        from . import runtime_report
        try:
            missed = runtime_report.mark_results(args.runtime_report, files, results, job)
        except runtime_report.ReportError as exc:
            raise UsageError(f"--runtime-report {args.runtime_report}: {exc}") from exc
    items = [(r, f) for r in results for f in r.findings]
    errors = [r for r in results if r.error]
    for r in errors:
        print(f"{r.path}: {r.error}; skipped", file=sys.stderr)
    crashes = _report_crashes(outcomes)
    # a file that could not be checked is an IPV000 item in every format, where Python says the problem is
    shown = [item for r in results
             for item in ([(r, r.problem)] if r.problem is not None else [(r, f) for f in r.findings])]
    if args.statistics:
        write_statistics(shown, sys.stdout)
    else:
        FORMATS[args.format](shown, sys.stdout)
    if missed:
        runtime_report.write_missed(missed, sys.stderr)
    if not args.quiet:
        print(summary(len(outcomes) + (STDIN in args.paths), items, len(errors), len(crashes)), file=sys.stderr)
    return 1 if items or errors or crashes or missed else 0


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


def _fix_stdin(args: argparse.Namespace, opts: Options) -> int:
    """``fix -``: the fixed source on stdout (the input unchanged when nothing applies, as ruff does),
    or with ``--diff`` the diff; findings left and errors on stderr. Exit codes as for files."""
    import difflib

    from ..fix.codemod import fix_code

    name = args.stdin_filename or STDIN
    raw = sys.stdin.buffer.read()
    try:
        source = decode(raw)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        problem = decode_problem(exc, raw)
        print(f"{name}:{problem.line}:{problem.col + 1}: {problem.text}", file=sys.stderr)
        if not args.diff:
            sys.stdout.buffer.write(raw)
        return 1
    ignore = list(opts.ignore) + config.per_file_ignored(name, list(opts.per_file_ignores), opts.config_dir)
    result = fix_code(source, name, settings=opts.settings, style=args.style or opts.fix_style,
                      unsafe_fixes=args.unsafe_fixes, select=opts.select, ignore=ignore,
                      memory_aware=args.memory_aware)
    new = result.new_source
    if args.diff:
        if new is not None:
            sys.stdout.writelines(difflib.unified_diff(source.splitlines(keepends=True),
                                                       new.splitlines(keepends=True), fromfile=name, tofile=name))
    else:
        sys.stdout.write(source if new is None else new)
    if result.error:
        print(f"{name}: {result.error}; not fixed", file=sys.stderr)
    for f in result.remaining:
        print(f"{name}:{f.line}:{f.col + 1}: {f.code} {f.message} [{_why_left(f)}]", file=sys.stderr)
    return 1 if result.error or result.remaining or (args.diff and new is not None) else 0


def cmd_fix(args: argparse.Namespace) -> int:
    """Rewrite fixable findings; ``--diff`` prints the changes instead of writing them."""
    import difflib

    opts = _common(args)
    _project_mode(args, opts)
    if STDIN in args.paths:
        if args.paths != [STDIN]:
            raise UsageError("fix reads stdin ('-') alone: give '-' without other paths")
        return _fix_stdin(args, opts)
    job = FixJob(opts, args.style or opts.fix_style, args.unsafe_fixes, write=not args.diff,
                 memory_aware=args.memory_aware)
    files, targets = [], set()
    for path in iter_python_files(args.paths, opts.exclude):
        # a symlink and its target, or two hard links, are one file: fix it once (two workers writing one
        # inode in place at the same time could read each other's half-written text)
        target = os.path.realpath(path)
        try:
            st = os.stat(target)
            target = (st.st_dev, st.st_ino)
        except OSError:
            pass
        if target not in targets:
            targets.add(target)
            files.append(path)
    _prepare(files, opts, args)
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
            print(f"{r.path}:{f.line}:{f.col + 1}: {f.code} {f.message} [{_why_left(f)}]")
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


#: how to get the language server's dependency: inplace-lint is not on PyPI, so from a clone (or git URL)
SERVER_INSTALL_HINT = ("install the [server] extra from a clone of this repository: "
                       "python -m pip install -e '.[server]' (or: python -m pip install "
                       f"'inplace-lint[server] @ git+{PROJECT_URL}')")


def cmd_server(args: argparse.Namespace) -> int:
    try:
        from .server import serve
    except ImportError as exc:  # pygls is an extra
        return usage_error(f"the language server needs pygls ({exc}); {SERVER_INSTALL_HINT}")
    from ..pipeline import set_project_mode

    set_project_mode(True)  # open buffers are analysed with their project's (cached) summaries
    serve()
    return 0


def _cache_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-cache", action="store_true",
                        help="do not read or write the cache of project summaries")
    parser.add_argument("--cache-dir", default=None,
                        help="where project summaries are cached (default: cache-dir from the config file, "
                             "else .inplace_lint_cache in the project root)")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs as written (tables, exit codes), option help wrapped."""


def _add_selection_options(parser: argparse.ArgumentParser) -> None:
    """``--select``/``--ignore``/``--exclude`` and their ``--extend-`` forms: comma lists, repeatable."""
    parser.epilog = ("--select, --ignore, --exclude and their --extend- forms take comma lists (IPV001,IPV004) and "
                     "add up when repeated.\n\n" + (parser.epilog or ""))
    lists = dict(type=config.split_list, action="extend", default=None)
    parser.add_argument("--select", metavar="CODES", **lists,
                        help="report only these codes or prefixes (replaces the config file's select)")
    parser.add_argument("--extend-select", metavar="CODES", **lists,
                        help="add codes to the config file's select")
    parser.add_argument("--ignore", metavar="CODES", **lists, help="do not report these codes or prefixes")
    parser.add_argument("--extend-ignore", metavar="CODES", **lists, help="same as --ignore (flake8's name)")
    parser.add_argument("--exclude", metavar="GLOBS", **lists, help="skip paths matching these glob patterns")
    parser.add_argument("--extend-exclude", metavar="GLOBS", **lists, help="same as --exclude (ruff's name)")
    parser.add_argument("--stdin-filename", metavar="PATH", default=None,
                        help="with '-' as the path: the name of the source read from stdin (for the output, "
                             "the config file search and per-file-ignores)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="inplace-lint", formatter_class=_HelpFormatter,
        description="Find in-place PyTorch ops on views and model outputs, and rewrite them out of place.",
        epilog="Run 'inplace-lint COMMAND --help' for a command's options and exit codes.")
    parser.add_argument("--version", action="version", version=f"inplace-lint {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    check = sub.add_parser(
        "check", help="report in-place ops on views and model outputs", formatter_class=_HelpFormatter,
        description="Report in-place ops on views and model outputs, one line per finding:\n"
                    "  path:line:col: CODE message [fix: safe|unsafe]\n"
                    "A file that cannot be read or parsed is reported as IPV000 at the place Python names.",
        epilog=CHECK_EXIT_CODES)
    check.add_argument("paths", nargs="*", metavar="PATH",
                       help="files or directories (default: .); '-' reads the source from stdin")
    check.add_argument("--format", choices=list(FORMATS), default="text",
                       help="text: path:line:col: CODE message; full: text plus the origin chain as indented "
                            "'note' lines; json: ruff's JSON schema plus a 'related' list; sarif: SARIF 2.1.0 "
                            "with relatedLocations; github: GitHub Actions workflow annotations")
    check.add_argument("--statistics", action="store_true",
                       help="print the number of findings per code instead of the findings")
    _add_selection_options(check)
    check.add_argument("--disable-noqa", action="store_true", help="report findings on # noqa lines too")
    check.add_argument("-j", "--jobs", type=int, default=None,
                       help="processes to check files with (default: all cores; 1: in this process)")
    check.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
    _cache_flags(check)
    check.add_argument("--runtime-report", metavar="FILE", default=None,
                       help="a report of `python -m inplace_lint.sanitize` (text, json or sarif): mark the findings "
                            "it confirms and list on stderr what it saw that the static analysis missed")
    check.set_defaults(func=cmd_check)

    fix = sub.add_parser("fix", help="rewrite in-place ops out of place (safe fixes only, unless --unsafe-fixes)",
                         formatter_class=_HelpFormatter, description=FIX_DESCRIPTION, epilog=FIX_EXIT_CODES)
    fix.add_argument("paths", nargs="+", metavar="PATH", help="files or directories; '-' reads stdin")
    fix.add_argument("--style", choices=config.FIX_STYLES, default=None,
                     help="runtime: call inplace_lint.runtime; inline: plain torch, no dependency "
                          "(default: fix-style from the config file, else runtime)")
    fix.add_argument("--unsafe-fixes", action="store_true",
                     help="also apply fixes that another reader of the tensor could notice")
    fix.add_argument("--memory-aware", action="store_true",
                     help='runtime style: emit inplace="auto", which stays in place wherever PyTorch allows it')
    fix.add_argument("--diff", action="store_true", help="print a unified diff and write nothing")
    _add_selection_options(fix)
    fix.add_argument("-j", "--jobs", type=int, default=None,
                     help="processes to fix files with (default: all cores; 1: in this process)")
    fix.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
    _cache_flags(fix)
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
        code = args.func(args)
        if not sys.stdout.closed:  # the language server closes it on exit
            sys.stdout.flush()  # a closed pipe shows up here, not at interpreter exit
        return code
    except UsageError as exc:
        return usage_error(str(exc))
    except BrokenPipeError:
        # `inplace-lint check . | head -1`: the reader is gone; end quietly as other CLIs do
        # (https://docs.python.org/3/library/signal.html#note-on-sigpipe)
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is not a real file (captured in tests)
            pass
        return 1


if __name__ == "__main__":
    sys.exit(main())
