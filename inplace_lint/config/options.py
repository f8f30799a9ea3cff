"""The options one file is checked and fixed with: :meth:`FileOptions.for_path`, the one per-file answer."""
from __future__ import annotations

import pathlib
from dataclasses import dataclass
from typing import Optional, Tuple

from .files import Loaded, load_config
from .settings import DEFAULT_SETTINGS, FIX_STYLES, Settings, per_file_ignored, selection

#: a ``(major, minor)`` version
Version = Tuple[int, int]
#: (Python, torch) overriding the floor a file's project states (:mod:`inplace_lint.floor`); None: the stated one
Target = Tuple[Optional[Version], Optional[Version]]


@dataclass(frozen=True)
class RunOptions:
    """What a run applies to every file: a configuration's values (:meth:`from_loaded`), with the command
    line's on top where the CLI has flags (``--select``, ``--per-file-ignores``, ``--target-version``, ...)."""

    settings: Settings = DEFAULT_SETTINGS
    #: codes (or prefixes) to report; empty: every rule
    select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    #: ``(glob, codes)`` pairs: codes not reported in the files matching the glob
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    #: the folder ``per_file_ignores`` globs are relative to (the config file's)
    config_dir: Optional[pathlib.Path] = None
    #: the form a fix's edits take (a name in :data:`~inplace_lint.config.settings.FIX_STYLES`)
    fix_style: str = FIX_STYLES[0]
    target: Target = (None, None)

    @classmethod
    def from_loaded(cls, loaded: Loaded) -> "RunOptions":
        """The options a configuration (:func:`~inplace_lint.config.files.load_config`) states, nothing added."""
        select, ignore = selection(loaded.cli)
        return cls(loaded.settings, tuple(select), tuple(ignore),
                   tuple(loaded.cli.get("per-file-ignores", ())),  # type: ignore[arg-type]
                   loaded.path.parent if loaded.path else None,
                   str(loaded.cli.get("fix-style", FIX_STYLES[0])),
                   (loaded.cli.get("target-version"), loaded.cli.get("torch-version")))  # type: ignore[arg-type]


@dataclass(frozen=True)
class FileOptions:
    """How one file is checked and fixed: settings, selection (its per-file ignores included), the
    fix-style of its edits and the versions overriding its project's floor."""

    settings: Settings = DEFAULT_SETTINGS
    select: Tuple[str, ...] = ()
    #: the run's ignored codes and those ``per-file-ignores`` names for this file
    ignore: Tuple[str, ...] = ()
    fix_style: str = FIX_STYLES[0]
    target: Target = (None, None)

    @classmethod
    def for_path(cls, path: Optional[str], run: Optional[RunOptions] = None) -> "FileOptions":
        """The options of the file ``path`` in ``run`` (the CLI: its configuration and flags); without
        ``run``, in the configuration found from the file's folder upward (the language server, the libcst
        command). No ``path`` (an unsaved buffer): the defaults. Raises
        :class:`~inplace_lint.config.settings.ConfigError` on a bad configuration file."""
        if run is None:
            if not path:
                return cls()
            run = RunOptions.from_loaded(load_config(pathlib.Path(path).parent))
        ignore = run.ignore + tuple(per_file_ignored(path, list(run.per_file_ignores), run.config_dir)) \
            if path else run.ignore
        return cls(run.settings, run.select, ignore, run.fix_style, run.target)
