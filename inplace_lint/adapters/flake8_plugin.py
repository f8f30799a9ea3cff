"""flake8 adapter: yields the engine's findings; flake8 does noqa, selection and output.

flake8 adds 1 to the column a plugin yields, so the engine's 0-based ``ast`` column
becomes flake8's usual 1-based one.
"""
from __future__ import annotations

import ast
import os
import pathlib
import sys
from typing import Iterator, List, Optional, Tuple, Type

from .. import __version__, config
from ..analysis import analyze
from ..config import DEFAULT_SETTINGS, Settings


class InplaceLintPlugin:
    """flake8 entry point ``IPV`` (see setup.cfg)."""

    name = "inplace-lint"
    version = __version__
    settings: Settings = DEFAULT_SETTINGS
    #: ``--ipv-cache-dir`` (``ipv-cache-dir`` in flake8's config): where the project cache is read
    cache_dir: Optional[str] = None

    def __init__(self, tree: ast.Module, filename: str = "stdin", lines: Optional[List[str]] = None) -> None:
        self.tree = tree
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, manager) -> None:
        for key, (field, kind, help_text) in config.OPTIONS.items():
            if field is None:
                continue  # select/ignore/exclude: flake8 has its own
            if kind == "bool":
                manager.add_option(f"--ipv-{key}", action="store_true", parse_from_config=True,
                                   default=False, help=f"inplace-lint: {help_text}")
            else:
                manager.add_option(f"--ipv-{key}", parse_from_config=True, comma_separated_list=True,
                                   default=None, help=f"inplace-lint: {help_text}")
        manager.add_option("--ipv-cache-dir", parse_from_config=True, default=None,
                           help="inplace-lint: the cache folder `inplace-lint check --cache-dir` wrote "
                                "(default: the project's own)")

    @classmethod
    def parse_options(cls, options) -> None:
        """The settings ``inplace-lint check`` uses for the working folder (:func:`config.load_config`: the
        same files, ``[flake8]``'s ``ipv-*`` options among them, with the same precedence), then the
        ``--ipv-*`` options flake8 got that the config files did not give (its command line)."""
        try:
            loaded = config.load_config(pathlib.Path.cwd())
        except config.ConfigError as exc:  # flake8 goes on with its own options; check would stop (exit 2)
            print(f"inplace-lint: warning: configuration not read: {exc}", file=sys.stderr)
            loaded = config.Loaded()
        for warning in loaded.warnings:
            print(f"inplace-lint: warning: {warning}", file=sys.stderr)
        in_files = {key: value for source in loaded.sources if source.section == "flake8"
                    for key, value in source.values.items()}
        cache_dir = getattr(options, "ipv_cache_dir", None)
        cls.cache_dir = os.path.abspath(cache_dir) if cache_dir else None
        values = {}
        for key, (field, kind, _) in config.OPTIONS.items():
            if field is None:
                continue
            value = getattr(options, "ipv_" + key.replace("-", "_"), None)
            if value in (None, False, [], ""):
                continue
            if key in in_files and (config.parse_bool(in_files[key], key) if kind == "bool"
                                    else config.split_list(in_files[key])) == (
                                        value if kind == "bool" else config.split_list(value)):
                continue  # flake8 read it from the file load_config read it from, at its precedence
            values[key] = value
        cls.settings, _ = config.apply(values, "flake8 options", base=loaded.settings)

    def run(self) -> Iterator[Tuple[int, int, str, Type["InplaceLintPlugin"]]]:
        for finding in self._findings():
            # what to do where no fix exists (IPV007: where the flag is set), as `check` says it; flake8 applies no
            # fixes, so a fix's own note is not shown
            note = f" [no fix: {finding.no_fix}]" if finding.no_fix else ""
            yield finding.line, finding.col, finding.text + note, type(self)

    def _findings(self):
        """With a project cache (written by ``inplace-lint check``), the file is analysed with the cached
        summaries of the rest of its project, as ``check`` does; without one, alone (calls between its
        own functions are still followed). flake8 never builds the cache: that would walk every file."""
        if self.lines is not None and self.filename not in ("stdin", "-") and os.path.isfile(self.filename):
            from ..workspace import ProjectMode, project_findings

            try:
                found = project_findings("".join(self.lines), self.filename, self.settings,
                                         ProjectMode(enabled=True, cache_dir=self.cache_dir), build=False)
            except (OSError, RecursionError):
                found = None
            if found is not None:
                return found
        source = "".join(self.lines) if self.lines is not None else None
        # flake8 shows no fixes; alone, only the bodies a finding can come from are walked at the end (the same
        # findings: tests/test_relevance.py)
        return analyze(self.tree, self.settings, self.filename, plan_fixes=False, source=source, bodies_on_demand=True)
