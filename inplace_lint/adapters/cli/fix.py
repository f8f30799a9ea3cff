"""``inplace-lint fix`` (and ``check --fix``/``--diff``): rewrite the files (or stdin) and report what is left."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List

from ... import config, project_url, textpos
from ...source.files import decode
from ...source.problems import decode_problem
from ...workspace import ProjectMode
from ..jobs import FixJob
from ...rules import RULES
from ..parallel import run_files
from .options import (_cache_report, _common, _discover, _exit, Options, _prepare, _progress, _project_mode,
                      _report_crashes, _show, STDIN, UsageError)


def cmd_fix(args: argparse.Namespace) -> int:
    """Rewrite fixable findings; ``--diff`` prints the changes instead of writing them."""
    opts = _common(args)
    if STDIN in args.paths:
        if args.paths != [STDIN]:
            raise UsageError("fix reads stdin ('-') alone: give '-' without other paths")
        if _show(args, opts, []) is not None:
            return 0
        return _exit(args, _fix_stdin(args, opts, _project_mode(args, opts)))
    files = _discover(args, opts)
    shown = _show(args, opts, files)
    if shown is not None:
        return shown
    mode = _project_mode(args, opts)
    return _exit(args, _fix_report(args, opts, *_fix_files(args, opts, files, mode, write=not args.diff)))


def _fix_stdin(args: argparse.Namespace, opts: Options, mode: ProjectMode) -> int:
    """``fix -``: the fixed source on stdout (the input unchanged when nothing applies, as ruff does),
    or with ``--diff`` the diff; findings left and errors on stderr. Exit codes as for files."""
    import difflib

    from ...fixing import fix_code

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
    file_opts = config.FileOptions.for_path(name, opts.run)
    result = fix_code(source, name, settings=file_opts.settings, style=args.style or file_opts.fix_style,
                      unsafe_fixes=args.unsafe_fixes, select=file_opts.select, ignore=file_opts.ignore,
                      memory_aware=getattr(args, "memory_aware", False), target=file_opts.target, project=mode)
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


def _fix_job(args: argparse.Namespace, opts: Options, mode: ProjectMode, write: bool) -> FixJob:
    return FixJob(opts.run, args.style or opts.run.fix_style, args.unsafe_fixes, write=write,
                  memory_aware=getattr(args, "memory_aware", False), project=mode)


def _fix_files(args: argparse.Namespace, opts: Options, paths: List[str], mode: ProjectMode, write: bool):
    """The one fix engine behind ``fix``, ``fix --diff``, ``check --fix`` and ``check --diff``:
    ``codemod.fix_file`` on each file (a symlink and its target, or two links, are one file: fixed
    once). Returns the outcomes and the :class:`~inplace_lint.fixing.FixResult` of each file."""
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
    _prepare(files, opts, args, mode)
    outcomes = run_files(files, _fix_job(args, opts, mode, write), args.jobs, progress=_progress(args), stage="fixing")
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
            from ...fix.edits import unified_diff

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
    from ...findings import helper_write

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


def _why_left(finding) -> str:
    """Why ``fix`` left a finding: an unsafe fix not asked for (it still has its fix), or no fix (and why,
    where the analysis says: ``Finding.no_fix``)."""
    if finding.fix is not None:
        return f"unsafe fix not applied: {finding.fix.reason}; use --unsafe-fixes"
    return "no automatic fix" + (f": {finding.no_fix}" if finding.no_fix else "")


def _runtime_install_hint() -> str:
    url = project_url()
    return f"pip install 'inplace-lint[runtime] @ git+{url}'" if url else "install inplace-lint[runtime] where it runs"


def runtime_dependency_note(results, diff: bool = False) -> str:
    """The summary's word on a new dependency: how many files the runtime style made import
    ``inplace_lint.runtime``, what that needs where the code runs, and the way out (``--style inline``)."""
    from ...floor import RUNTIME_PYTHON, RUNTIME_TORCH

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
