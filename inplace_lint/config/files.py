"""Where the configuration is read from (:func:`load_config`) and what was read (:class:`Loaded`).

Where (the precedence, highest first; see ``docs/configuration.md``):

1. ``--config PATH`` (the CLI): that file alone, no search;
2. else the nearest folder, from the checked path upward, holding any of the forms below; in that folder
   ``[tool.inplace-lint]`` in ``pyproject.toml`` > ``[inplace-lint]`` (or ``[inplace_lint]``) in
   ``setup.cfg`` > ``tox.ini`` > ``.flake8`` > flake8's ``ipv-*`` options in ``[flake8]`` of
   ``setup.cfg`` > ``tox.ini`` > ``.flake8``. Each key comes from the highest form that sets it
   (``extend-`` keys add to what the lower forms set).

A near-miss section name (``[tool.inplace_lint]``, ``[inplacelint]``) or an unknown key is a warning
(the run goes on); a bad value is an error naming the file and the key. Lists are comma- or
whitespace-separated in INI files (as flake8 reads them) and arrays in TOML.
"""
from __future__ import annotations

import configparser
import dataclasses
import os
import pathlib
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from .settings import (DEFAULT_SETTINGS, FIX_STYLES, OPTIONS, ConfigError, Settings, apply, did_you_mean)


#: INI section names read by inplace-lint (the first is the documented one)
INI_SECTIONS = ("inplace-lint", "inplace_lint")
#: INI files searched in a folder, highest precedence first (flake8's own order)
INI_FILES = ("setup.cfg", "tox.ini", ".flake8")
#: the prefix of inplace-lint's options in flake8's ``[flake8]`` section
FLAKE8_PREFIX = "ipv-"


def _near_miss(name: str) -> bool:
    """``inplace_lint``, ``inplacelint``, ``InPlace-Lint``, ``tool.inplace_lint``: meant as our section."""
    squashed = re.sub(r"[^a-z]", "", name.lower())
    return squashed in ("inplacelint", "toolinplacelint")


@dataclass
class Source:
    """One place a configuration was read from: a file and its section (``[tool.inplace-lint]``, ...)."""

    path: pathlib.Path
    section: str
    values: Dict[str, object]
    typed: bool = False

    def __str__(self) -> str:
        return f"{self.path} [{self.section}]"


@dataclass
class Loaded:
    """The resolved configuration: settings, the CLI-only values (see :func:`apply`), where each key came
    from, the warnings to show, and the folder relative paths in it are resolved against."""

    settings: Settings = DEFAULT_SETTINGS
    cli: Dict[str, object] = dataclasses.field(default_factory=dict)
    #: the highest-precedence file read (its folder is the base of per-file-ignores and cache-dir)
    path: Optional[pathlib.Path] = None
    #: key -> the :class:`Source` it was taken from (keys not set here have their defaults)
    origins: Dict[str, Source] = dataclasses.field(default_factory=dict)
    sources: List[Source] = dataclasses.field(default_factory=list)
    warnings: List[str] = dataclasses.field(default_factory=list)


def _read_ini(path: pathlib.Path) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser()
    try:  # not parser.read: it skips a file it cannot read, as if it had no section
        parser.read_string(path.read_text(encoding="utf-8"), str(path))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    return parser


def _ini_sources(path: pathlib.Path, warnings: List[str]) -> Tuple[List[Source], List[Source]]:
    """The ``[inplace-lint]`` section and the ``ipv-*`` options of ``[flake8]`` in an INI file."""
    parser = _read_ini(path)
    own: List[Source] = []
    for name in parser.sections():
        if name in INI_SECTIONS:
            own.append(Source(path, name, dict(parser.items(name))))
        elif _near_miss(name):
            warnings.append(f"{path}: section [{name}] is not read; did you mean [{INI_SECTIONS[0]}]?")
    flake8: List[Source] = []
    if parser.has_section("flake8"):
        values = {}
        for raw, value in parser.items("flake8"):
            if not raw.startswith(FLAKE8_PREFIX):
                continue
            key = raw[len(FLAKE8_PREFIX):].replace("_", "-")
            if OPTIONS.get(key, (None,))[0] is None and key != "cache-dir":  # the plugin: analysis keys, cache-dir
                plugin_keys = [FLAKE8_PREFIX + k for k, v in OPTIONS.items() if v[0] is not None]
                warnings.append(f"{path}: [flake8] {raw} is not an option of the flake8 plugin; ignored"
                                f"{did_you_mean(raw, plugin_keys)}")
                continue
            values[key] = value
        if values:
            flake8.append(Source(path, "flake8", values))
    return own[:1], flake8


def _pyproject_source(path: pathlib.Path, warnings: List[str], top_level: bool = False) -> Optional[Source]:
    try:
        import tomllib  # Python 3.11+
    except ModuleNotFoundError:  # pragma: no cover
        try:
            import tomli as tomllib  # type: ignore
        except ModuleNotFoundError:
            warnings.append(f"{path}: not read (Python < 3.11 needs the tomli package to read TOML)")
            return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    tool = data.get("tool", {})
    tool = tool if isinstance(tool, dict) else {}
    for name in tool:
        if name != "inplace-lint" and _near_miss(name):
            warnings.append(f"{path}: table [tool.{name}] is not read; did you mean [tool.inplace-lint]?")
    for name in data:
        if name != "tool" and _near_miss(name):
            warnings.append(f"{path}: table [{name}] is not read; did you mean [tool.inplace-lint]?")
    table = tool.get("inplace-lint")
    if table is None and top_level and "tool" not in data:
        return Source(path, "top level", data, typed=True)  # --config my-inplace-lint.toml
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: tool.inplace-lint: expected a table, got {table!r}")
    return Source(path, "tool.inplace-lint", table, typed=True)


def _folder_sources(folder: pathlib.Path, warnings: List[str]) -> List[Source]:
    """The forms found in ``folder``, highest precedence first."""
    own: List[Source] = []
    flake8: List[Source] = []
    pyproject = folder / "pyproject.toml"
    if os.path.isfile(pyproject):  # os.path: False, not an error, where we may not look
        found = _pyproject_source(pyproject, warnings)
        if found is not None:
            own.append(found)
    for name in INI_FILES:
        path = folder / name
        if os.path.isfile(path):
            a, b = _ini_sources(path, warnings)
            own += a
            flake8 += b
    return own + flake8


def _file_sources(path: pathlib.Path, warnings: List[str]) -> List[Source]:
    """``--config PATH``: the forms in that one file (a TOML file may hold the keys at its top level)."""
    if not os.path.isfile(path):
        raise ConfigError(f"{path}: no such configuration file")
    if path.suffix == ".toml":
        found = _pyproject_source(path, warnings, top_level=True)
        return [found] if found is not None else []
    own, flake8 = _ini_sources(path, warnings)
    return own + flake8


def load_config(start: pathlib.Path, explicit: Optional[pathlib.Path] = None) -> Loaded:
    """The configuration for files under ``start`` (see the module docstring for where it is read from
    and the precedence), or of the file ``explicit`` alone. Raises :class:`ConfigError` on a bad value."""
    warnings: List[str] = []
    if explicit is not None:
        # os.path.realpath, not Path.resolve: it raises on a symlink loop
        sources = _file_sources(pathlib.Path(os.path.realpath(explicit)), warnings)
    else:
        sources = []
        start = pathlib.Path(os.path.realpath(start))
        for folder in [start, *start.parents] if os.path.isdir(start) else [start.parent, *start.parent.parents]:
            sources = _folder_sources(folder, warnings)
            if sources:
                break
    loaded = Loaded(sources=sources, warnings=warnings)
    if not sources:
        if explicit is not None:
            warnings.append(f"{explicit}: no [{INI_SECTIONS[0]}], [tool.inplace-lint] or ipv- options found")
        return loaded
    settings, cli = DEFAULT_SETTINGS, {}
    for source in reversed(sources):  # lowest first: each higher form overrides (or extends) it
        where = f"{source.path} [flake8] {FLAKE8_PREFIX}*" if source.section == "flake8" else str(source.path)
        settings, values = apply(source.values, where, settings, typed=source.typed, warnings=warnings)
        for key in source.values:
            norm = key.replace("_", "-")
            if norm in OPTIONS:
                loaded.origins[norm] = source
        cli.update(values)
    loaded.settings, loaded.cli, loaded.path = settings, cli, sources[0].path
    return loaded


def find_config(start: pathlib.Path) -> Optional[Tuple[pathlib.Path, Dict[str, object]]]:
    """The highest-precedence file and section read for ``start`` (see :func:`load_config`)."""
    loaded = load_config(start)
    return (loaded.sources[0].path, loaded.sources[0].values) if loaded.sources else None


def load(start: pathlib.Path) -> Tuple[Settings, Dict[str, object], Optional[pathlib.Path]]:
    """Settings for files under ``start`` (defaults when no config file has our section), the
    CLI-only values (see :func:`apply`) and the config file's path (see :func:`load_config`)."""
    loaded = load_config(start)
    return loaded.settings, loaded.cli, loaded.path


def describe(loaded: Loaded) -> List[str]:
    """``--show-settings``: each key's resolved value and where it came from (``default`` when unset)."""
    lines = []
    for key, (field, kind, _) in OPTIONS.items():
        if field is not None:
            if kind == "extend":
                continue  # shown by the key it extends
            value = getattr(loaded.settings, field)
            shown = ", ".join(sorted(value)) if isinstance(value, frozenset) else (
                ", ".join(value) if isinstance(value, tuple) else str(value).lower())
        elif key == "per-file-ignores":
            shown = " ".join(f"{g}:{','.join(c)}" for g, c in loaded.cli.get(key, ()))  # type: ignore[union-attr]
        elif kind == "list":
            shown = ", ".join(loaded.cli.get(key, ()))  # type: ignore[arg-type]
        else:
            shown = str(loaded.cli.get(key, FIX_STYLES[0] if key == "fix-style" else ""))
        origin = loaded.origins.get(key) or loaded.origins.get("extend-" + key)
        lines.append(f"{key} = {shown}".rstrip() + f"  # {origin if origin is not None else 'default'}")
    return lines
