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
import io
import os
import pathlib
import re
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from .. import __version__, config, project_url, report_hint, textpos
from ..pipeline import CheckJob, FileResult, check_source, decode_problem
from ..source.files import decode, iter_python_files, read_bytes
from .reporters import FORMATS, register_source, summary, write_statistics
from ..rules import RULES
from .parallel import run_files, showing_progress

#: ``-`` among the paths: read the source from stdin
STDIN = "-"

CHECK_EXIT_CODES = """\
exit codes:
  0  no findings
  1  findings; or a file could not be read or parsed (reported as IPV000), a path does not
     exist, or the analysis of a file crashed (a bug in inplace-lint, reported on stderr);
     with --fix: findings left after fixing (and, with --exit-non-zero-on-fix, a file fixed);
     with --diff: as 'inplace-lint fix --diff'
  2  usage or configuration error
--exit-zero (-e) turns 1 into 0."""

FIX_EXIT_CODES = """\
exit codes:
  0  no finding remains
  1  findings remain (unsafe fixes not applied, or findings without a fix), a file was
     skipped (cannot be read or parsed) or crashed; with --diff, also when a file would change;
     with --exit-non-zero-on-fix, also when a file was fixed
  2  usage or configuration error
--exit-zero (-e) turns 1 into 0."""

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
With no path, fix fixes "." (as check checks it). "fix -" (or --stdin-filename NAME alone) reads the
source from stdin and prints the fixed text to stdout. "inplace-lint check --fix" applies the same fixes,
then reports what is left."""
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
    #: the resolved configuration (``--show-settings``)
    loaded: Optional[config.Loaded] = None
    #: (Python, torch) overriding each project's stated floor: ``--target-version``/``--torch-version``,
    #: else ``target-version``/``torch-version`` from the config file
    target: Tuple[Optional[Tuple[int, int]], Optional[Tuple[int, int]]] = (None, None)


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

    The config file: ``--config PATH``, else the one :func:`config.load_config` finds from the first path.
    ``--select`` replaces the configured selection, ``--extend-select`` adds to it (nothing to add
    to when everything is selected; ``ALL`` selects everything); ``--ignore``/``--extend-ignore`` and
    ``--exclude``/``--extend-exclude`` add to the configured lists. Each may be repeated and takes comma
    lists. ``--per-file-ignores`` replaces the configured ones, ``--extend-per-file-ignores`` adds to them
    (their globs are relative to the working folder).
    """
    _paths(args)
    try:
        loaded = config.load_config(_config_start(args), pathlib.Path(args.config) if args.config else None)
    except config.ConfigError as exc:
        raise UsageError(str(exc)) from exc
    for warning in loaded.warnings:
        print(f"inplace-lint: warning: {warning}", file=sys.stderr)
    settings, file_cfg, cfg_path = loaded.settings, loaded.cli, loaded.path
    configured_select, configured_ignore = config.selection(file_cfg)
    select = list(args.select) if args.select is not None else configured_select
    if select:  # extend-select adds to a selection (nothing to add to when everything is selected)
        select += list(args.extend_select or [])
    ignore = list(args.ignore or []) + list(args.extend_ignore or []) + configured_ignore
    exclude = (list(args.exclude or []) + list(args.extend_exclude or []) + list(file_cfg.get("exclude", []))
               + list(file_cfg.get("extend-exclude", [])))
    for code in select + ignore + list(args.extend_select or []):
        if not (code == config.ALL and code not in ignore) and not any(c.startswith(code) for c in RULES):
            raise UsageError(f"unknown code {code!r} (known: {', '.join(RULES)}; --select ALL selects all)")
    if config.ALL in select:
        select = []  # ruff's --select ALL: every rule, as no selection
    per_file = list(file_cfg.get("per-file-ignores", ()))
    if getattr(args, "per_file_ignores", None) is not None:
        per_file = _cli_per_file(args.per_file_ignores, "--per-file-ignores")
    per_file += _cli_per_file(getattr(args, "extend_per_file_ignores", None) or [], "--extend-per-file-ignores")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}")
    return Options(settings, tuple(select), tuple(ignore), tuple(exclude),
                   tuple(per_file), cfg_path.parent if cfg_path else None,
                   file_cfg.get("fix-style", config.FIX_STYLES[0]),
                   str((cfg_path.parent if cfg_path else pathlib.Path()) / file_cfg["cache-dir"])
                   if file_cfg.get("cache-dir") else None, loaded,
                   (_version_flag(args, "target_version") or file_cfg.get("target-version"),
                    _version_flag(args, "torch_version") or file_cfg.get("torch-version")))


def _cli_per_file(values: Sequence[str], flag: str) -> config.PerFileIgnores:
    """``--per-file-ignores 'tests/*:IPV001'`` (flake8's and ruff's syntax); a glob with ``/`` is made
    absolute against the working folder (a config file's globs are relative to its folder)."""
    try:
        pairs = config.parse_per_file_ignores(list(values), flag)
    except config.ConfigError as exc:
        raise UsageError(str(exc)) from exc
    return [(os.path.join(os.getcwd(), g) if "/" in g else g, codes) for g, codes in pairs]


def _version_flag(args: argparse.Namespace, name: str) -> Optional[Tuple[int, int]]:
    value = getattr(args, name, None)
    if value is None:
        return None
    try:
        return config.parse_version_option(value, "--" + name.replace("_", "-"))
    except config.ConfigError as exc:
        raise UsageError(str(exc)) from exc


def _prepare(files: List[str], opts: Options, args: argparse.Namespace) -> None:
    """Build the project summaries here, before any file is checked: the worker processes read them (with
    ``-j 1`` the check runs here too; building first puts the build before the checks on the progress bar)."""
    if len(files) > 1:
        from ..pipeline import prepare_projects

        prepare_projects(files, opts.settings, args.jobs)


def _project_mode(args: argparse.Namespace, opts: Options) -> None:
    """Project-wide analysis (summaries of every file of the project, cached on disk) for check and fix."""
    from ..pipeline import set_project_mode

    from ..analysis import cache

    set_project_mode(True, use_cache=not args.no_cache, cache_dir=args.cache_dir or opts.cache_dir)
    cache.reset()  # the summary line and the notes are this command's


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
              f"({report_hint()})", file=sys.stderr)
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
    return check_source(source, name, job.settings, job.select, ignore, job.disable_noqa, fix_style=job.fix_style,
                        target=job.target)


def _discover(args: argparse.Namespace, opts: Options) -> List[str]:
    """The Python files under the paths (stdin aside), each once; a folder with none gets a one-line
    warning. ``--force-exclude`` (ruff's, for pre-commit, which names files): the exclusions (the
    ``exclude`` patterns, matched against each folder above the file, and the always-skipped folders)
    apply to named files too."""
    files: List[str] = []
    seen = set()
    for path in args.paths:
        if path == STDIN:
            continue
        found = list(iter_python_files([path], opts.exclude))
        if args.force_exclude and not os.path.isdir(path) and _force_excluded(path, opts.exclude):
            found = []
        if not found and os.path.isdir(path):
            print(f"inplace-lint: warning: {path}: no Python files found", file=sys.stderr)
        for file in found:
            key = os.path.normcase(os.path.abspath(file))
            if key not in seen:
                seen.add(key)
                files.append(file)
    return files


def _force_excluded(path: str, exclude: Sequence[str]) -> bool:
    """A named file under an excluded or always-skipped folder (``--force-exclude``)."""
    import fnmatch

    from ..source.files import _skipped_dir

    parts = pathlib.PurePath(os.path.normpath(path)).parts
    folders = [os.path.join(*parts[:i]) for i in range(1, len(parts))]
    return (any(_skipped_dir(p) for p in parts[:-1])
            or any(fnmatch.fnmatch(os.path.basename(f), pat) or fnmatch.fnmatch(f, pat)
                   for f in folders for pat in exclude))


def _show(args: argparse.Namespace, opts: Options, files: List[str]) -> Optional[int]:
    """``--show-settings`` / ``--show-files`` (ruff's): print, then stop (exit 0); else None."""
    if args.show_settings:
        loaded = opts.loaded or config.Loaded()
        target = files[0] if files else (args.stdin_filename or args.paths[0])
        print(f"Resolved settings for: {target}")
        print(f"Settings path: {loaded.path if loaded.path else '(none: defaults)'}")
        print("Read from: " + (", ".join(str(s) for s in loaded.sources) or "(nothing)"))
        for line in config.describe(loaded):
            print(line)
        print(f"select (resolved) = {', '.join(opts.select) or 'ALL'}")
        print(f"ignore (resolved) = {', '.join(opts.ignore)}".rstrip())
        return 0
    if args.show_files:
        for file in sorted(os.path.abspath(f) for f in files):
            print(file)
        return 0
    return None


def _exit(args: argparse.Namespace, code: int) -> int:
    """``--exit-zero`` (ruff's): 0 whatever was found (usage errors still exit 2)."""
    return 0 if getattr(args, "exit_zero", False) and code == 1 else code


def _color(args: argparse.Namespace, stream) -> bool:
    """``--color auto|always|never``; ``auto`` follows ``NO_COLOR``, then ``FORCE_COLOR``, then whether
    ``stream`` is a terminal (https://no-color.org, https://force-color.org)."""
    if args.color != "auto":
        return args.color == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream.isatty()


#: a line of the text and full formats: ``path:line:col: CODE`` or an indented ``... note:``
_TEXT_LINE = re.compile(r"^(\s*)(.+?:\d+:\d+:)( )(IPV\d+|note:)", re.M)


def _colored(text: str) -> str:
    """``path:line:col: CODE message``: the location bold, the code red (ruff's colours)."""
    return _TEXT_LINE.sub(lambda m: f"{m[1]}\x1b[1m{m[2]}\x1b[0m{m[3]}"
                          + (f"\x1b[1;91m{m[4]}\x1b[0m" if m[4] != "note:" else f"\x1b[96m{m[4]}\x1b[0m"), text)


def _write_items(args: argparse.Namespace, shown) -> None:
    """The findings in ``--format``/``--statistics``, coloured for ``text``/``full`` when ``--color`` says so."""
    import io

    if args.statistics:
        write_statistics(shown, sys.stdout)
        return
    if args.format not in ("text", "full") or not _color(args, sys.stdout):
        FORMATS[args.format](shown, sys.stdout)
        return
    buffer = io.StringIO()
    FORMATS[args.format](shown, buffer)
    sys.stdout.write(_colored(buffer.getvalue()))


def cmd_check(args: argparse.Namespace) -> int:
    if args.statistics and args.format != "text":
        raise UsageError("--statistics prints a text table; it cannot be combined with --format " + args.format)
    opts = _common(args)
    files = _discover(args, opts)
    shown = _show(args, opts, files)
    if shown is not None:
        return shown
    _project_mode(args, opts)
    if args.fix or args.diff:  # ruff's check --fix / --diff: the fix command's engine, then what is left
        if STDIN in args.paths:
            if args.paths != [STDIN]:
                raise UsageError("check --fix reads stdin ('-') alone: give '-' without other paths")
            return _exit(args, _fix_stdin(args, opts))
        if args.diff:
            return _exit(args, _fix_report(args, opts, *_fix_files(args, opts, files, write=False)))
        outcomes, results = _fix_files(args, opts, files, write=True)
        _report_crashes(outcomes)
        _show_fixes(args, results)
        changed = sum(1 for r in results if r.new_source is not None)
        code = _check_files(args, opts, files)  # what is left, where it now is
        return _exit(args, 1 if (code or (args.exit_non_zero_on_fix and changed)) else 0)
    if args.add_noqa:
        return _add_noqa(args, opts, files)
    return _exit(args, _check_files(args, opts, files))


def _check_files(args: argparse.Namespace, opts: Options, files: List[str]) -> int:
    """Check ``files`` (and stdin), print the findings; the exit code."""
    job = CheckJob(opts.settings, opts.select, opts.ignore, args.disable_noqa, opts.per_file_ignores, opts.config_dir,
                   fix_style=opts.fix_style if args.format in EDIT_FORMATS else None, target=opts.target)
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
    _write_items(args, shown)
    if missed:
        runtime_report.write_missed(missed, sys.stderr)
    if not args.quiet:
        print(summary(len(outcomes) + (STDIN in args.paths), items, len(errors), len(crashes)), file=sys.stderr)
    _cache_report(args, opts)
    return 1 if items or errors or crashes or missed else 0


def _add_noqa(args: argparse.Namespace, opts: Options, files: List[str]) -> int:
    """``--add-noqa`` (ruff's): ``# noqa: CODE`` on the line of each finding, added to the codes a
    ``# noqa:`` there already names; a second run adds nothing. Written atomically, after a re-parse."""
    import ast
    import io
    import tokenize

    from ..fixing import atomic_write
    from ..source.noqa import add_noqa

    if STDIN in args.paths:
        raise UsageError("--add-noqa rewrites files: it cannot read stdin ('-')")
    job = CheckJob(opts.settings, opts.select, opts.ignore, False, opts.per_file_ignores, opts.config_dir)
    _prepare(files, opts, args)
    outcomes = run_files(files, job, args.jobs, progress=_progress(args))
    added = 0
    for outcome in outcomes:
        result = outcome.value
        if result is None or result.error or not result.findings:
            continue
        raw = read_bytes(result.path)  # a FIFO or device is refused, never read
        source = decode(raw)
        encoding = tokenize.detect_encoding(io.BytesIO(raw).readline)[0]
        new, count = add_noqa(source, result.findings)
        if count:
            try:
                ast.parse(new)  # never write a file that no longer parses
            except SyntaxError as exc:
                print(f"{result.path}: --add-noqa would break the file ({exc.msg}, line {exc.lineno}); "
                      f"not written ({report_hint()})", file=sys.stderr)
                continue
            atomic_write(result.path, new.encode(encoding))
            added += count
    _report_crashes(outcomes)
    if added:  # as ruff: nothing said when nothing was added
        print(f"Added {added} noqa directive{'s' if added != 1 else ''}.", file=sys.stderr)
    return 0


def _show_fixes(args: argparse.Namespace, results) -> None:
    """``--show-fixes`` (ruff's layout): the fixes applied, by file and code, on stdout (with ``--diff``, on
    stderr: stdout holds the patch alone)."""
    if not getattr(args, "show_fixes", False):
        return
    import collections

    fixed = [(r.path, f.code) for r in results for f in r.applied]
    if not fixed:
        return
    out = sys.stderr if args.diff else sys.stdout
    print(f"\n{'Would fix' if args.diff else 'Fixed'} {len(fixed)} finding{'s' if len(fixed) != 1 else ''}:", file=out)
    by_path: Dict[str, collections.Counter] = {}
    for path, code in fixed:
        by_path.setdefault(path, collections.Counter())[code] += 1
    for path, counts in by_path.items():
        print(f"- {path}:", file=out)
        for code, n in sorted(counts.items()):
            print(f"    {n} \u00d7 {code} ({RULES[code].name})", file=out)
    print(file=out)


@dataclass(frozen=True)
class FixJob:
    """``codemod.fix_file`` with fixed options, one picklable callable for :func:`run_files`."""

    opts: Options
    style: str
    unsafe_fixes: bool
    write: bool
    memory_aware: bool = False

    def __call__(self, path: str):
        from ..fixing import fix_file

        ignore = list(self.opts.ignore) + config.per_file_ignored(
            path, list(self.opts.per_file_ignores), self.opts.config_dir)
        return fix_file(path, settings=self.opts.settings, style=self.style, unsafe_fixes=self.unsafe_fixes,
                        select=self.opts.select, ignore=ignore, write=self.write, memory_aware=self.memory_aware,
                        target=self.opts.target)


def _fix_stdin(args: argparse.Namespace, opts: Options) -> int:
    """``fix -``: the fixed source on stdout (the input unchanged when nothing applies, as ruff does),
    or with ``--diff`` the diff; findings left and errors on stderr. Exit codes as for files."""
    import difflib

    from ..fixing import fix_code

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
                      memory_aware=getattr(args, "memory_aware", False), target=opts.target)
    new = result.new_source
    if args.diff:
        if new is not None:
            sys.stdout.writelines(difflib.unified_diff(textpos.split_lines(source),
                                                       textpos.split_lines(new), fromfile=name, tofile=name))
    else:
        sys.stdout.write(source if new is None else new)
    if result.error:
        print(f"{name}: {result.error}; not fixed", file=sys.stderr)
    for f in result.remaining:
        print(f"{name}:{f.line}:{f.col + 1}: {f.code} {f.message} [{_why_left(f)}]", file=sys.stderr)
    if result.error or result.remaining or (args.diff and new is not None):
        return 1
    return 1 if new is not None and getattr(args, "exit_non_zero_on_fix", False) else 0


def _fix_job(args: argparse.Namespace, opts: Options, write: bool) -> FixJob:
    return FixJob(opts, args.style or opts.fix_style, args.unsafe_fixes, write=write,
                  memory_aware=getattr(args, "memory_aware", False))


def _fix_files(args: argparse.Namespace, opts: Options, paths: List[str], write: bool):
    """The one fix engine behind ``fix``, ``fix --diff``, ``check --fix`` and ``check --diff``:
    ``codemod.fix_file`` on each file (a symlink and its target, or two links, are one file: fixed
    once). Returns the outcomes and the :class:`~inplace_lint.fix.codemod.FixResult` of each file."""
    files, targets = [], set()
    for path in paths:
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
    outcomes = run_files(files, _fix_job(args, opts, write), args.jobs, progress=_progress(args), stage="fixing")
    results = [o.value for o in outcomes if o.value is not None]
    _drop_fixed_through_helpers(results)
    return outcomes, results


def _fix_report(args: argparse.Namespace, opts: Options, outcomes, results) -> int:
    """Print what ``fix`` did: with ``--diff`` the patch alone on stdout (the findings left on stderr),
    else the findings left on stdout; the summary on stderr. The exit code (see FIX_EXIT_CODES)."""
    import difflib

    left_to = sys.stderr if args.diff else sys.stdout
    changed = [r for r in results if r.new_source is not None]
    for r in results:
        if r.error:
            print(f"{r.path}: {r.error}; skipped", file=sys.stderr)
        if args.diff and r.new_source is not None:
            from ..fix.edits import unified_diff

            diff = unified_diff(r.path, r.old_source, r.edits)
            sys.stdout.writelines(diff if diff is not None else difflib.unified_diff(
                textpos.split_lines(r.old_source), textpos.split_lines(r.new_source),
                fromfile=r.path, tofile=r.path))
        for f in r.remaining:
            print(f"{r.path}:{f.line}:{f.col + 1}: {f.code} {f.message} [{_why_left(f)}]", file=left_to)
    crashes = _report_crashes(outcomes)
    _show_fixes(args, results)
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
        dependent = [r for r in changed if r.adds_runtime_import]
        if dependent:
            print(runtime_dependency_note(dependent, args.diff), file=sys.stderr)
    _cache_report(args, opts)
    if remaining or errors or crashes or (args.diff and changed):
        return 1
    if changed and getattr(args, "exit_non_zero_on_fix", False):
        return 1
    return 0


def _drop_fixed_through_helpers(results) -> None:
    """A finding at a call stands for a write inside the called helper, also reported (with its own fix)
    at the write: when this run fixed that write, the call's finding is gone too, not remaining."""
    from ..findings import helper_write

    def key(path: str, line: int, col: int):
        return os.path.realpath(path), line, col

    fixed = {key(r.path, f.line, f.col) for r in results for f in r.applied}
    if not fixed:
        return
    for r in results:
        def gone(f) -> bool:
            write = helper_write(f)
            return write is not None and key(write.path or r.path, write.line, write.col) in fixed

        r.unsafe_skipped = [f for f in r.unsafe_skipped if not gone(f)]
        r.unfixed = [f for f in r.unfixed if not gone(f)]


def cmd_fix(args: argparse.Namespace) -> int:
    """Rewrite fixable findings; ``--diff`` prints the changes instead of writing them."""
    opts = _common(args)
    if STDIN in args.paths:
        if args.paths != [STDIN]:
            raise UsageError("fix reads stdin ('-') alone: give '-' without other paths")
        if _show(args, opts, []) is not None:
            return 0
        _project_mode(args, opts)
        return _exit(args, _fix_stdin(args, opts))
    files = _discover(args, opts)
    shown = _show(args, opts, files)
    if shown is not None:
        return shown
    _project_mode(args, opts)
    return _exit(args, _fix_report(args, opts, *_fix_files(args, opts, files, write=not args.diff)))


def _runtime_install_hint() -> str:
    url = project_url()
    return f"pip install 'inplace-lint[runtime] @ git+{url}'" if url else "install inplace-lint[runtime] where it runs"


def runtime_dependency_note(results, diff: bool = False) -> str:
    """The summary's word on a new dependency: how many files the runtime style made import
    ``inplace_lint.runtime``, what that needs where the code runs, and the way out (``--style inline``)."""
    from ..floor import RUNTIME_PYTHON, RUNTIME_TORCH

    n = len(results)
    verb = "would import" if diff else ("now imports" if n == 1 else "now import")
    note = (f"{n} file{'s' if n != 1 else ''} {verb} inplace_lint.runtime (--style runtime): the project "
            f"needs inplace-lint installed where it runs (a new dependency: Python >= "
            f"{RUNTIME_PYTHON[0]}.{RUNTIME_PYTHON[1]}, torch >= {RUNTIME_TORCH[0]}.{RUNTIME_TORCH[1]}; "
            f"{_runtime_install_hint()}); --style inline writes plain torch instead.")
    below = sorted({f"{r.floor.python_source} says Python >= {r.floor.python[0]}.{r.floor.python[1]}"
                    for r in results if r.floor is not None and r.floor.python is not None
                    and r.floor.python < RUNTIME_PYTHON}
                   | {f"{r.floor.torch_source} says torch >= {r.floor.torch[0]}.{r.floor.torch[1]}"
                      for r in results if r.floor is not None and r.floor.torch is not None
                      and r.floor.torch < RUNTIME_TORCH})
    if below:
        note += " Below the runtime's floor: " + "; ".join(below) + "."
    return note


def cmd_rule(args: argparse.Namespace) -> int:
    if args.all:
        print("\n".join(rule.document() for rule in RULES.values()), end="")
        return 0
    if args.code is None:
        width = max(len(r.name) for r in RULES.values())
        for rule in RULES.values():
            print(f"{rule.code}  {rule.name:<{width}}  {rule.summary}")
        return 0
    by_name = {r.name: r for r in RULES.values()}
    rule = RULES.get(args.code.upper()) or by_name.get(args.code.lower())
    if rule is None:
        return usage_error(f"unknown rule {args.code!r}{config._did_you_mean(args.code.lower(), by_name)} "
                           f"(known: {', '.join(f'{r.code} ({r.name})' for r in RULES.values())})")
    print(rule.document(), end="")
    return 0


#: how to get the language server's dependency: inplace-lint is not on PyPI, so from a clone (or git URL)
SERVER_INSTALL_HINT = ("install the [server] extra from a clone of this repository: "
                       "python -m pip install -e '.[server]' (or: python -m pip install "
                       "'inplace-lint[server] @ git+{url}')")


def cmd_server(args: argparse.Namespace) -> int:
    try:
        from .server import serve
    except ImportError as exc:  # pygls is an extra
        return usage_error(f"the language server needs pygls ({exc}); {SERVER_INSTALL_HINT.format(url=project_url() or '<URL of this repository>')}")
    from ..pipeline import set_project_mode

    set_project_mode(True)  # open buffers are analysed with their project's (cached) summaries
    serve()
    return 0


def _cache_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-cache", action="store_true",
                        help="do not read or write the cache of project summaries")
    parser.add_argument("--cache-dir", default=None,
                        help="where project summaries are cached, by content: one folder may serve many "
                             "projects (forks), each file's text walked once (default: cache-dir from the "
                             "config file, else .inplace_lint_cache in the project root, or a per-user "
                             "folder for a tree you do not own); a summary line says what was reused")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="say which cache files were ignored (and why) and what the cache reused")


def _cache_report(args: argparse.Namespace, opts: Options) -> None:
    """``-v``: why a cache file was ignored or not written; with a cache folder named (``--cache-dir``,
    ``cache-dir``) or ``-v``, and not ``-q``: files seen, unique contents and results reused."""
    from ..analysis import cache

    if args.verbose:
        for line in cache.NOTES:
            print(f"inplace-lint: {line}", file=sys.stderr)
    if not args.no_cache and not args.quiet and (args.verbose or args.cache_dir or opts.cache_dir) \
            and cache.STATS.seen:
        print(f"inplace-lint: {cache.STATS.line()}", file=sys.stderr)


def _jobs(value: str) -> Optional[int]:
    """``-j N`` or ruff's ``-j auto`` (all cores, the default)."""
    if value == "auto":
        return None
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of processes or 'auto', got {value!r}") from None


#: ruff's ``--output-format`` names -> ours, where they mean the same (ruff's ``concise`` is our ``text``)
OUTPUT_FORMAT_NAMES = {"concise": "text"}


def _output_format(value: str) -> str:
    return OUTPUT_FORMAT_NAMES.get(value, value)


_BOTH = ("check", "fix")
#: The flags ruff (and flake8) users carry over, with ruff's meaning: (flags, argparse keywords, commands).
RUFF_FLAGS: Tuple[Tuple[Tuple[str, ...], dict, Tuple[str, ...]], ...] = (
    (("--fix",), dict(action="store_true", help="apply the fixes (the engine of `inplace-lint fix`), then report "
                                                "what is left"), ("check",)),
    (("--diff",), dict(action="store_true", help="print a unified diff of the fixes and write nothing (findings "
                                                 "left go to stderr)"), _BOTH),
    (("--unsafe-fixes",), dict(action="store_true", help="also apply fixes that another reader of the tensor "
                                                         "could notice"), _BOTH),
    (("--style",), dict(choices=config.FIX_STYLES, default=None,
                        help="inline: plain torch, no new dependency; runtime: call inplace_lint.runtime "
                             "(scale_logits, out_of_place) (default: fix-style from the config file, else inline)"),
     _BOTH),
    (("--memory-aware",), dict(action="store_true", help='runtime style: emit inplace="auto" (stays in place '
                                                         'wherever PyTorch allows it) on every call; a safe '
                                                         'scale_logits fix has it without this flag'), _BOTH),
    (("--show-fixes",), dict(action="store_true", help="list the fixes applied, by file and code"), _BOTH),
    (("--add-noqa",), dict(action="store_true", help="add '# noqa: CODE' to each line with a finding (kept codes "
                                                     "stay; a second run adds nothing)"), ("check",)),
    (("-e", "--exit-zero"), dict(action="store_true", help="exit 0 even when something is found"), _BOTH),
    (("--exit-non-zero-on-fix",), dict(action="store_true", help="exit 1 when a file was fixed, even if "
                                                                 "nothing is left"), _BOTH),
    (("--config",), dict(metavar="PATH", default=None,
                         help="read the configuration from this file alone (pyproject.toml, setup.cfg, tox.ini, "
                              ".flake8, or a TOML file with the keys at its top level)"), _BOTH),
    (("--show-settings",), dict(action="store_true", help="print the resolved settings and the file each came "
                                                          "from, then exit"), _BOTH),
    (("--show-files",), dict(action="store_true", help="print the files that would be checked, then exit"), _BOTH),
    (("--force-exclude",), dict(action="store_true", help="apply the exclusions to files named on the command line "
                                                          "too (for pre-commit)"), _BOTH),
    (("--per-file-ignores",), dict(metavar="GLOB:CODES", action="append", default=None,
                                   help="codes not reported in files matching the glob (replaces the config "
                                        "file's; globs relative to the working folder)"), _BOTH),
    (("--extend-per-file-ignores",), dict(metavar="GLOB:CODES", action="append", default=None,
                                          help="like --per-file-ignores, added to the config file's"), _BOTH),
    (("--color",), dict(choices=("auto", "always", "never"), default="auto",
                        help="colour the text output (auto: on a terminal, unless NO_COLOR is set or "
                             "FORCE_COLOR is)"), ("check",)),
)


def _add_ruff_flags(parser: argparse.ArgumentParser, command: str) -> None:
    for flags, kwargs, commands in RUFF_FLAGS:
        if command in commands:
            parser.add_argument(*flags, **kwargs)


def _floor_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target-version", metavar="X.Y", default=None,
                        help="the oldest Python the code runs on (default: target-version from the config file, "
                             "else the project's requires-python)")
    parser.add_argument("--torch-version", metavar="X.Y", default=None,
                        help="the oldest torch the code runs on, which decides how the inline DTensor guard imports "
                             "DTensor (default: torch-version from the config file, else the lower bound of the "
                             "project's torch requirement)")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs as written (tables, exit codes), option help wrapped."""


class _TopParser(argparse.ArgumentParser):
    """The top-level parser: a misspelled command, or a command's flag given before the command
    (``inplace-lint --fix .``), gets a hint naming what was probably meant."""

    argv: Sequence[str] = ()

    def error(self, message: str):  # type: ignore[override]
        import difflib

        commands = self.get_default("commands") or {}
        hints = []
        words = list(self.argv)
        first = next((w for w in words if not w.startswith("-")), None)
        if first is not None and first not in commands:
            close = difflib.get_close_matches(first, list(commands), n=1, cutoff=0.6)
            if close:
                hints.append(f"did you mean 'inplace-lint {close[0]}'?")
        for word in words:
            flag = word.split("=", 1)[0]
            owners = [name for name, p in commands.items() if flag.startswith("-") and flag in p._option_string_actions]
            if owners and not hints:
                hints.append(f"{flag} is an option of a command: 'inplace-lint {owners[0]} {flag} ...'")
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n" + "".join(f"  {h}\n" for h in hints))


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
    parser = _TopParser(
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
    check.add_argument("--format", "--output-format", choices=list(FORMATS), default="text", type=_output_format,
                       help="text: path:line:col: CODE message; full: text plus the origin chain as indented "
                            "'note' lines; json: ruff's JSON schema plus a 'related' list; sarif: SARIF 2.1.0 "
                            "with relatedLocations; github: GitHub Actions workflow annotations (ruff's name "
                            "concise is text)")
    check.add_argument("--statistics", action="store_true",
                       help="print the number of findings per code instead of the findings")
    _add_selection_options(check)
    check.add_argument("--disable-noqa", action="store_true", help="report findings on # noqa lines too")
    check.add_argument("-j", "--jobs", type=_jobs, default=None,
                       help="processes to check files with (default and auto: all cores; 1: in this process)")
    check.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
    _cache_flags(check)
    _floor_flags(check)
    check.add_argument("--runtime-report", metavar="FILE", default=None,
                       help="a report of `python -m inplace_lint.sanitize` (text, json or sarif): mark the findings "
                            "it confirms and list on stderr what it saw that the static analysis missed")
    _add_ruff_flags(check, "check")
    check.set_defaults(func=cmd_check)

    fix = sub.add_parser("fix", help="rewrite in-place ops out of place (safe fixes only, unless --unsafe-fixes)",
                         formatter_class=_HelpFormatter, description=FIX_DESCRIPTION, epilog=FIX_EXIT_CODES)
    fix.add_argument("paths", nargs="*", metavar="PATH",
                     help="files or directories (default: .); '-' reads the source from stdin")
    _floor_flags(fix)
    _add_selection_options(fix)
    fix.add_argument("-j", "--jobs", type=_jobs, default=None,
                     help="processes to fix files with (default and auto: all cores; 1: in this process)")
    fix.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
    _cache_flags(fix)
    _add_ruff_flags(fix, "fix")
    fix.set_defaults(func=cmd_fix)
    rule = sub.add_parser("rule", help="show a rule's documentation (no code: list the rules)")
    rule.add_argument("code", nargs="?", metavar="CODE|NAME",
                      help="a rule code or name, e.g. IPV001 or inplace-on-model-output")
    rule.add_argument("--all", action="store_true", help="show every rule's documentation")
    rule.set_defaults(func=cmd_rule)
    server = sub.add_parser("server", help="run the language server on stdio (needs the [server] extra)")
    server.set_defaults(func=cmd_server)
    parser.set_defaults(commands={"check": check, "fix": fix, "rule": rule, "server": server})
    return parser


def unknown_arguments(parser: argparse.ArgumentParser, command: str, extra: Sequence[str]) -> int:
    """An unknown flag: the command's usage, and the closest valid spelling (or the command that has it)."""
    import difflib

    commands = parser.get_default("commands")
    sub = commands[command]
    lines = [sub.format_usage().rstrip(), f"{sub.prog}: error: unrecognized arguments: {' '.join(extra)}"]
    for word in extra:
        if not word.startswith("-"):
            continue
        flag = word.split("=", 1)[0]
        elsewhere = [name for name, p in commands.items() if name != command and flag in p._option_string_actions]
        close = difflib.get_close_matches(flag, list(sub._option_string_actions), n=1, cutoff=0.6)
        if close:
            lines.append(f"  {flag}: did you mean {close[0]}?")
        elif elsewhere:
            lines.append(f"  {flag} is an option of 'inplace-lint {elsewhere[0]}'")
    print("\n".join(lines), file=sys.stderr)
    return 2


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    parser.argv = list(sys.argv[1:] if argv is None else argv)
    args, extra = parser.parse_known_args(argv)
    if extra:
        return unknown_arguments(parser, args.command, extra)
    if isinstance(sys.stdout, io.TextIOWrapper):
        # a file name that is not UTF-8 reaches us with its bytes as surrogates (os.fsdecode); print
        # those bytes back, as ls does, where a strict UTF-8 stdout would raise UnicodeEncodeError
        sys.stdout.reconfigure(errors="surrogateescape")
    try:
        # every stage of a check or fix on one bar, from finding the files to the last file checked
        # (not while a source is read from stdin: the bar would sit on the terminal while it is typed)
        with showing_progress(args.func in (cmd_check, cmd_fix) and _progress(args)
                              and STDIN not in getattr(args, "paths", ())):
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
