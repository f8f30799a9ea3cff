"""``inplace-lint check``: check the files (and stdin), print the findings in the chosen format; ``--add-noqa``."""
from __future__ import annotations

import argparse
import os
import re
import sys
from typing import List

from ... import report_hint
from ...pipeline import check_source
from ...source.files import decode, read_bytes
from ...source.problems import FileResult, decode_problem
from ...workspace import ProjectMode
from ..jobs import CheckJob
from ..reporters import FORMATS, register_source, summary, write_statistics
from ..parallel import run_files
from .fix import _fix_files, _fix_report, _fix_stdin, _show_fixes
from .options import (_cache_report, _common, _discover, _exit, Options, _prepare, _progress, _project_mode,
                      _report_crashes, _show, STDIN, UsageError)


#: output formats that carry each fix's edits (computed once per file, in the configured fix-style)
EDIT_FORMATS = ("json", "sarif")


def cmd_check(args: argparse.Namespace) -> int:
    if args.statistics and args.format != "text":
        raise UsageError("--statistics prints a text table; it cannot be combined with --format " + args.format)
    opts = _common(args)
    files = _discover(args, opts)
    shown = _show(args, opts, files)
    if shown is not None:
        return shown
    mode = _project_mode(args, opts)
    if args.fix or args.diff:  # ruff's check --fix / --diff: the fix command's engine, then what is left
        if STDIN in args.paths:
            if args.paths != [STDIN]:
                raise UsageError("check --fix reads stdin ('-') alone: give '-' without other paths")
            return _exit(args, _fix_stdin(args, opts, mode))
        if args.diff:
            return _exit(args, _fix_report(args, opts, *_fix_files(args, opts, files, mode, write=False)))
        outcomes, results = _fix_files(args, opts, files, mode, write=True)
        _report_crashes(outcomes)
        _show_fixes(args, results)
        changed = sum(1 for r in results if r.new_source is not None)
        applied = sum(len(r.applied) for r in results if r.new_source is not None)
        if applied and not args.quiet:  # (ruff: "N fixed"; what is left follows, as `check` reports it)
            print(f"Fixed {applied} finding{'s' if applied != 1 else ''} in {changed} file"
                  f"{'s' if changed != 1 else ''}.", file=sys.stderr)
        code = _check_files(args, opts, files, mode)  # what is left, where it now is
        return _exit(args, 1 if (code or (args.exit_non_zero_on_fix and changed)) else 0)
    if args.add_noqa:
        return _add_noqa(args, opts, files, mode)
    return _exit(args, _check_files(args, opts, files, mode))


def _check_files(args: argparse.Namespace, opts: Options, files: List[str], mode: ProjectMode) -> int:
    """Check ``files`` (and stdin), print the findings; the exit code."""
    job = CheckJob(opts.run, args.disable_noqa, with_edits=args.format in EDIT_FORMATS, project=mode)
    _prepare(files, opts, args, mode)
    outcomes = run_files(files, job, args.jobs, progress=_progress(args))
    results = [o.value for o in outcomes if o.value is not None]
    if STDIN in args.paths:
        results.insert(0, _check_stdin(args, job))
    missed = []
    if args.runtime_report:  # join a sanitizer report (adapters/runtime_report.py)
        from .. import runtime_report
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


def _check_stdin(args: argparse.Namespace, job: CheckJob) -> FileResult:
    """``check -``: the source on stdin, named ``--stdin-filename`` (else ``-``) in the output."""
    name = args.stdin_filename or STDIN
    raw = sys.stdin.buffer.read()
    try:
        source = decode(raw)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        return FileResult(name).fail(decode_problem(exc, raw))
    register_source(name, source)  # columns and fix edits come from this text, not from a file of that name
    return check_source(source, name, **job.check_source_args(name))


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


def _add_noqa(args: argparse.Namespace, opts: Options, files: List[str], mode: ProjectMode) -> int:
    """``--add-noqa`` (ruff's): ``# noqa: CODE`` on the line of each finding, added to the codes a
    ``# noqa:`` there already names; a second run adds nothing. Written atomically, after a re-parse."""
    import ast
    import io
    import tokenize

    from ...fixing import atomic_write
    from ...source.noqa import add_noqa

    if STDIN in args.paths:
        raise UsageError("--add-noqa rewrites files: it cannot read stdin ('-')")
    job = CheckJob(opts.run, project=mode)
    _prepare(files, opts, args, mode)
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
