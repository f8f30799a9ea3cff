"""What ``check`` and ``fix`` share: options from the config file and the flags, the files, the project mode, exit codes."""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from ... import config, report_hint
from ...source.files import iter_python_files
from ...workspace import ProjectMode, forget_disk_state
from ...rules import RULES


#: ``-`` among the paths: read the source from stdin
STDIN = "-"


class UsageError(Exception):
    pass


def usage_error(message: str) -> int:
    print(f"inplace-lint: error: {message}", file=sys.stderr)
    return 2


@dataclass(frozen=True)
class Options:
    """What ``check`` and ``fix`` take from the config file and the command line."""

    #: what applies to every file (settings, selection, per-file-ignores, fix-style, and the (Python, torch)
    #: overriding each project's stated floor: ``--target-version``/``--torch-version``, else
    #: ``target-version``/``torch-version`` from the config file); one file's: ``config.FileOptions.for_path``
    run: config.RunOptions
    exclude: Tuple[str, ...] = ()
    #: ``cache-dir`` from the config file (relative to its folder)
    cache_dir: Optional[str] = None
    #: the resolved configuration (``--show-settings``)
    loaded: Optional[config.Loaded] = None


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
    run = config.RunOptions(settings, tuple(select), tuple(ignore), tuple(per_file),
                            cfg_path.parent if cfg_path else None, file_cfg.get("fix-style", config.FIX_STYLES[0]),
                            (_version_flag(args, "target_version") or file_cfg.get("target-version"),
                             _version_flag(args, "torch_version") or file_cfg.get("torch-version")))
    return Options(run, tuple(exclude),
                   str((cfg_path.parent if cfg_path else pathlib.Path()) / file_cfg["cache-dir"])
                   if file_cfg.get("cache-dir") else None, loaded)


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


def _prepare(files: List[str], opts: Options, args: argparse.Namespace, mode: ProjectMode) -> None:
    """Build the project summaries here, before any file is checked: the worker processes read them (with
    ``-j 1`` the check runs here too; building first puts the build before the checks on the progress bar)."""
    if len(files) > 1:
        from ...workspace import prepare_projects

        prepare_projects(files, opts.run.settings, mode, args.jobs)


def _project_mode(args: argparse.Namespace, opts: Options) -> ProjectMode:
    """Project-wide analysis (summaries of every file of the project, cached on disk) for check and fix:
    the mode every file of this command is checked in (passed down with each job)."""
    from ...analysis import cache

    cache.reset()  # the summary line and the notes are this command's
    forget_disk_state()  # and what it knows of the disk, it reads itself
    cache_dir = args.cache_dir or opts.cache_dir
    return ProjectMode(True, use_cache=not args.no_cache, cache_dir=os.path.abspath(cache_dir) if cache_dir else None)


def _report_crashes(outcomes) -> List:
    crashes = [o for o in outcomes if o.crash is not None]
    for o in crashes:
        print(f"{o.path}: internal error, the analysis crashed: {o.crash}; skipped "
              f"({report_hint()})", file=sys.stderr)
    return crashes


def _progress(args: argparse.Namespace) -> bool:
    return not args.quiet and sys.stderr.isatty()


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

    from ...source.files import _skipped_dir

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
        print(f"select (resolved) = {', '.join(opts.run.select) or 'ALL'}")
        print(f"ignore (resolved) = {', '.join(opts.run.ignore)}".rstrip())
        return 0
    if args.show_files:
        for file in sorted(os.path.abspath(f) for f in files):
            print(file)
        return 0
    return None


def _exit(args: argparse.Namespace, code: int) -> int:
    """``--exit-zero`` (ruff's): 0 whatever was found (usage errors still exit 2)."""
    return 0 if getattr(args, "exit_zero", False) and code == 1 else code


def _cache_report(args: argparse.Namespace, opts: Options) -> None:
    """``-v``: why a cache file was ignored or not written; with a cache folder named (``--cache-dir``,
    ``cache-dir``) or ``-v``, and not ``-q``: files seen, unique contents and results reused."""
    from ...analysis import cache

    if args.verbose:
        for line in cache.NOTES:
            print(f"inplace-lint: {line}", file=sys.stderr)
    if not args.no_cache and not args.quiet and (args.verbose or args.cache_dir or opts.cache_dir) \
            and cache.STATS.seen:
        print(f"inplace-lint: {cache.STATS.line()}", file=sys.stderr)
