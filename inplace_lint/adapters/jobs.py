"""The per-file jobs ``check`` and ``fix`` hand to :func:`inplace_lint.adapters.parallel.run_files` (picklable)."""
from __future__ import annotations

import pathlib
from dataclasses import dataclass
from typing import Optional, Tuple

from .. import config
from ..config import Settings
from ..pipeline import check_file
from ..source.problems import FileResult
from ..workspace import ProjectMode


@dataclass(frozen=True)
class CheckJob:
    """``check_file`` with fixed options, as one picklable callable for :func:`inplace_lint.adapters.parallel.run_files`."""

    settings: Settings
    select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    disable_noqa: bool = False
    per_file_ignores: config.PerFileIgnores = ()  # type: ignore[assignment]
    #: the folder ``per_file_ignores`` globs are relative to (the config file's)
    config_dir: Optional[pathlib.Path] = None
    #: attach each fix's edits in this style (JSON, SARIF); None: plans only (text)
    fix_style: Optional[str] = None
    #: (Python, torch) overriding the floor each file's project states (``--target-version``, ``--torch-version``)
    target: Tuple[Optional[Tuple[int, int]], Optional[Tuple[int, int]]] = (None, None)
    #: analyse each file with its project's summaries (``check``: enabled); the worker processes get it here
    project: ProjectMode = ProjectMode()

    def __call__(self, path: str) -> FileResult:
        ignore = list(self.ignore) + config.per_file_ignored(path, list(self.per_file_ignores), self.config_dir)
        return check_file(path, self.settings, self.select, ignore, self.disable_noqa, fix_style=self.fix_style,
                          target=self.target, project=self.project)
