"""Configuration: one table of options, one way to find them, one answer per file.

- ``settings.py``: :class:`Settings`, the table of keys (:data:`OPTIONS`) and how a raw value is read and
  applied (:func:`apply`), selection by code (:func:`selection`, :func:`selected`), ``per-file-ignores``;
- ``files.py``: where the configuration is read from and in which precedence (:func:`load_config`,
  :class:`Loaded`, ``--show-settings``' :func:`describe`);
- ``options.py``: :class:`RunOptions` (a run's configuration and flags) and :meth:`FileOptions.for_path`,
  the options of one file that the CLI, the language server and the libcst command all ask for.

The names below are the package's API (``from inplace_lint.config import DEFAULT_SETTINGS``).
"""
from .files import (FLAKE8_PREFIX, INI_FILES, INI_SECTIONS, Loaded, Source, describe, find_config, load,
                    load_config)
from .options import FileOptions, RunOptions, Target
from .settings import (ALL, DEFAULT_SETTINGS, FIX_STYLES, OPTIONS, ConfigError, PerFileIgnores, Settings, apply,
                       check_codes, check_toml_type, did_you_mean, parse_bool, parse_per_file_ignores,
                       parse_version_option, per_file_ignored, runs_without_grad, selected, selection, split_list)

__all__ = [
    "ALL", "DEFAULT_SETTINGS", "FIX_STYLES", "FLAKE8_PREFIX", "INI_FILES", "INI_SECTIONS", "OPTIONS", "ConfigError",
    "FileOptions", "Loaded", "PerFileIgnores", "RunOptions", "Settings", "Source", "Target", "apply", "check_codes",
    "check_toml_type", "describe", "did_you_mean", "find_config", "load", "load_config", "parse_bool",
    "parse_per_file_ignores", "parse_version_option", "per_file_ignored", "runs_without_grad", "selected",
    "selection", "split_list",
]
