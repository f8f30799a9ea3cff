"""flake8 adapter: yields the engine's findings; flake8 does noqa, selection and output.

flake8 adds 1 to the column a plugin yields, so the engine's 0-based ``ast`` column
becomes flake8's usual 1-based one.
"""
from __future__ import annotations

import ast
from typing import Iterator, Tuple, Type

from .. import __version__, config
from ..analysis import analyze
from ..config import DEFAULT_SETTINGS, Settings


class InplaceLintPlugin:
    """flake8 entry point ``IPV`` (see setup.cfg)."""

    name = "inplace-lint"
    version = __version__
    settings: Settings = DEFAULT_SETTINGS

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree

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

    @classmethod
    def parse_options(cls, options) -> None:
        values = {}
        for key, (field, kind, _) in config.OPTIONS.items():
            if field is None:
                continue
            value = getattr(options, "ipv_" + key.replace("-", "_"), None)
            if value not in (None, False, [], ""):
                values[key] = value
        cls.settings, _ = config.apply(values, "flake8 options")

    def run(self) -> Iterator[Tuple[int, int, str, Type["InplaceLintPlugin"]]]:
        for finding in analyze(self.tree, self.settings):
            yield finding.line, finding.col, finding.text, type(self)
