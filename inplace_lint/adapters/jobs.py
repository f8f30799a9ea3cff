"""The per-file jobs ``check`` and ``fix`` hand to :func:`inplace_lint.adapters.parallel.run_files` (picklable)."""
from __future__ import annotations

from dataclasses import dataclass

from ..config import FileOptions, RunOptions
from ..pipeline import check_file
from ..source.problems import FileResult
from ..workspace import ProjectMode


@dataclass(frozen=True)
class CheckJob:
    """``check_file`` with fixed options, as one picklable callable for :func:`inplace_lint.adapters.parallel.run_files`."""

    #: the run's options; each file's own come from :meth:`~inplace_lint.config.FileOptions.for_path`
    options: RunOptions = RunOptions()
    disable_noqa: bool = False
    #: attach each fix's edits in the options' fix-style (JSON, SARIF); else plans only (text)
    with_edits: bool = False
    #: analyse each file with its project's summaries (``check``: enabled); the worker processes get it here
    project: ProjectMode = ProjectMode()

    def file_options(self, path: str) -> FileOptions:
        return FileOptions.for_path(path, self.options)

    def check_source_args(self, path: str) -> dict:
        """The keyword arguments of :func:`inplace_lint.pipeline.check_source` for the file ``path``."""
        opts = self.file_options(path)
        return dict(settings=opts.settings, select=opts.select, ignore=opts.ignore, disable_noqa=self.disable_noqa,
                    fix_style=opts.fix_style if self.with_edits else None, target=opts.target, project=self.project)

    def __call__(self, path: str) -> FileResult:
        return check_file(path, **self.check_source_args(path))


@dataclass(frozen=True)
class FixJob:
    """``fix_file`` with fixed options, one picklable callable for :func:`~inplace_lint.adapters.parallel.run_files`."""

    options: RunOptions
    #: the fix-style of the rewrite: ``--style``, else the configuration's
    style: str
    unsafe_fixes: bool
    write: bool
    memory_aware: bool = False
    #: analyse each file with its project's summaries (the worker processes get it here)
    project: ProjectMode = ProjectMode()

    def __call__(self, path: str):
        from ..fixing import fix_file

        opts = FileOptions.for_path(path, self.options)
        return fix_file(path, settings=opts.settings, style=self.style, unsafe_fixes=self.unsafe_fixes,
                        select=opts.select, ignore=opts.ignore, write=self.write, memory_aware=self.memory_aware,
                        target=opts.target, project=self.project)
