"""Settings: one table of options, read from flake8's config by the plugin and from
``[inplace_lint]`` (setup.cfg, tox.ini, .flake8) or ``[tool.inplace-lint]`` (pyproject.toml) by the CLI.

Keys (the flake8 options are the same with an ``ipv-`` prefix, e.g. ``ipv-model-output-fields``):

- ``model-output-fields``: attribute/item names of a model output that are tensors (``logits``, ...).
- ``model-output-names``: variable names whose fields are model outputs (``output``, ``outputs``, ...).
- ``model-output-params``: parameter names that hold a model's output object.
- ``model-call-patterns``: fnmatch patterns for the callee name of a model call (``model``, ``*_module``, ...).
- ``extend-model-output-fields`` / ``extend-model-output-names`` / ``extend-model-call-patterns``: added to the defaults.
- ``report-in-no-grad``: also report writes inside ``torch.no_grad()`` / ``inference_mode()`` (default false).
- ``no-grad-paths``: fnmatch patterns of files whose code always runs with grad off (serving and
  inference code whose ``inference_mode`` entry point is out of the analysis' reach, e.g. set by a
  dynamically chosen runner); matched against the path relative to the project root and the absolute
  path. There only the rules that hold without grad report (as inside ``torch.no_grad()``).
- ``select``, ``ignore``, ``exclude``: CLI only (flake8 has its own).
- ``per-file-ignores``: CLI only (flake8 has its own): flake8's syntax, ``glob:CODES`` entries
  (``tests/*:IPV001,IPV005``), or in pyproject.toml a table ``{"tests/*" = ["IPV001"]}``; globs
  match the checked file's path relative to the folder of the config file (a glob without ``/``
  also matches the file name alone).
- ``fix-style``: ``runtime`` (default: rewrites call ``inplace_lint.runtime``) or ``inline``
  (plain torch with an inline DTensor guard, no dependency); read by ``inplace-lint fix``.
"""
from __future__ import annotations

import configparser
import dataclasses
import fnmatch
import functools
import os
import pathlib
import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from .analysis import ops


@dataclass(frozen=True)
class Settings:
    """Analysis settings (the keys above set them)."""

    model_output_fields: FrozenSet[str] = frozenset(ops.DEFAULT_MODEL_OUTPUT_FIELDS)
    model_output_names: FrozenSet[str] = frozenset(ops.DEFAULT_MODEL_OUTPUT_NAMES)
    model_call_patterns: Tuple[str, ...] = ops.DEFAULT_MODEL_CALL_PATTERNS
    #: parameter names that hold a model's output object
    model_output_params: FrozenSet[str] = frozenset(ops.DEFAULT_MODEL_OUTPUT_PARAMS)
    #: report writes inside ``torch.no_grad()``/``inference_mode()`` too (default: only IPV004 there)
    report_in_no_grad: bool = False
    #: fnmatch patterns of files whose code always runs with grad off
    no_grad_paths: Tuple[str, ...] = ()

    def is_model_call_name(self, name: str) -> bool:
        return _matches_any(self.model_call_patterns, name)


DEFAULT_SETTINGS = Settings()


def runs_without_grad(settings: Settings, path: Optional[str], root=None) -> bool:
    """``path`` matches one of ``settings.no_grad_paths`` (relative to ``root``, or absolute)."""
    if not settings.no_grad_paths or not path:
        return False
    absolute = os.path.abspath(path)
    candidates = [os.path.normpath(path), absolute]
    for base in ([root] if root is not None else []) + [os.getcwd()]:  # flake8 passes paths as typed
        try:
            candidates.append(os.path.relpath(absolute, base))
        except ValueError:
            pass
    candidates = [c.replace(os.sep, "/") for c in candidates]
    return any(fnmatch.fnmatchcase(c, p) for c in candidates for p in settings.no_grad_paths)


@functools.lru_cache(maxsize=8192)
def _matches_any(patterns: Tuple[str, ...], name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


class ConfigError(ValueError):
    """A bad key or value in a configuration file; the message names the file and the key."""


#: key -> (Settings field or None for CLI-only keys, kind, help)
OPTIONS: Dict[str, Tuple[Optional[str], str, str]] = {
    "model-output-fields": ("model_output_fields", "list", "model output fields that are tensors (replaces the defaults)"),
    "extend-model-output-fields": ("model_output_fields", "extend", "model output fields added to the defaults"),
    "model-output-names": ("model_output_names", "list", "names whose fields are model outputs (replaces the defaults)"),
    "extend-model-output-names": ("model_output_names", "extend", "names added to the defaults"),
    "model-output-params": ("model_output_params", "list", "parameter names that hold a model output object"),
    "model-call-patterns": ("model_call_patterns", "list", "fnmatch patterns of callee names whose result is a model output"),
    "extend-model-call-patterns": ("model_call_patterns", "extend", "patterns added to the defaults"),
    "report-in-no-grad": ("report_in_no_grad", "bool", "also report writes inside torch.no_grad()/inference_mode()"),
    "no-grad-paths": ("no_grad_paths", "list", "fnmatch patterns of files whose code always runs with grad off (serving code)"),
    "select": (None, "list", "codes (or prefixes) to report"),
    "ignore": (None, "list", "codes (or prefixes) not to report"),
    "exclude": (None, "list", "glob patterns of paths to skip"),
    "per-file-ignores": (None, "per-file", "glob:CODES entries: codes not reported in files matching the glob"),
    "fix-style": (None, "fix-style", "runtime (call inplace_lint.runtime) or inline (plain torch)"),
    "cache-dir": (None, "path", "where project summaries are cached, by content, shared by every project "
                                "checked with it (default: .inplace_lint_cache in the project root)"),
}

#: values of ``fix-style``; the first is the default
FIX_STYLES = ("runtime", "inline")
_CODE = re.compile(r"[A-Z]+[0-9]*")

PerFileIgnores = List[Tuple[str, Tuple[str, ...]]]


def split_list(value) -> List[str]:
    if isinstance(value, (list, tuple)):
        items: Iterable[str] = [str(v) for v in value]
    else:
        items = str(value).replace("\n", ",").split(",")
    return [i.strip() for i in items if i.strip()]


def parse_bool(value, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{where}: expected true or false, got {value!r}")


def check_codes(codes: Sequence[str], where: str) -> List[str]:
    """``codes`` unchanged when each is a known code or a prefix of one, else a ``ConfigError``."""
    from .rules import RULES

    for code in codes:
        if not any(c.startswith(code) for c in RULES):
            raise ConfigError(f"{where}: unknown code {code!r} (known: {', '.join(RULES)})")
    return list(codes)


def parse_per_file_ignores(value, where: str) -> PerFileIgnores:
    """flake8's ``per-file-ignores`` syntax (``glob[,glob...]:CODE[,CODE...]`` entries separated by
    whitespace or newlines), a list of such strings, or a TOML table ``{glob = [codes] | "codes"}``."""
    pairs: PerFileIgnores = []
    if isinstance(value, dict):
        for glob, codes in value.items():
            listed = split_list(codes)
            if not listed:
                raise ConfigError(f"{where}: no codes given for {glob!r}")
            pairs.append((str(glob), tuple(check_codes(listed, where))))
        return pairs
    text = "\n".join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value)
    globs: List[str] = []
    codes: List[str] = []
    after_colon = False

    def close() -> None:
        if not codes:
            raise ConfigError(f"{where}: expected glob:CODES, found no codes after {', '.join(globs)!r}:")
        pairs.extend((g, tuple(check_codes(codes, where))) for g in globs)

    for token in re.findall(r"[^\s,:]+|:", text):
        if token == ":":
            if not globs or after_colon:
                raise ConfigError(f"{where}: expected glob:CODES, found a misplaced ':' in {text.strip()!r}")
            after_colon = True
        elif after_colon and _CODE.fullmatch(token):
            codes.append(token)
        else:
            if after_colon:
                close()
                globs, codes, after_colon = [], [], False
            globs.append(token)
    if globs and not after_colon:
        raise ConfigError(f"{where}: expected glob:CODES, found {' '.join(globs)!r} without ':CODES'")
    if globs:
        close()
    return pairs


def per_file_ignored(path: str, per_file: PerFileIgnores, base: Optional[pathlib.Path]) -> List[str]:
    """The codes that ``per_file`` ignores in ``path`` (globs relative to ``base``, the config's folder)."""
    if not per_file:
        return []
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(base or os.curdir)).replace(os.sep, "/")
    name = rel.rsplit("/", 1)[-1]
    codes: List[str] = []
    for glob, listed in per_file:
        pat = glob[2:] if glob.startswith("./") else glob
        if fnmatch.fnmatchcase(rel, pat) or ("/" not in pat and fnmatch.fnmatchcase(name, pat)):
            codes.extend(listed)
    return codes


_TOML_TYPES = {"list": "an array of strings", "extend": "an array of strings", "bool": "true or false",
               "fix-style": "a string", "per-file": "a table of glob = [codes]"}


def _toml_type_name(value: object) -> str:
    for kind, name in ((bool, "a boolean"), (str, "a string"), (int, "an integer"), (float, "a number"),
                       (list, "an array"), (dict, "a table")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def check_toml_type(kind: str, value: object, where: str) -> None:
    """Reject a pyproject.toml value of the wrong type (``ignore = "IPV001"``, ``report-in-no-grad = "yes"``):
    TOML has types, so a string where an array or a boolean belongs is a mistake, not a shorthand."""
    if kind in ("list", "extend"):
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    elif kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "fix-style":
        ok = isinstance(value, str)
    elif kind == "per-file":
        ok = isinstance(value, dict) and all(
            isinstance(v, str) or (isinstance(v, list) and all(isinstance(c, str) for c in v))
            for v in value.values())
    else:  # pragma: no cover - every kind is listed above
        ok = True
    if not ok:
        hint = f" (write [{value!r}])".replace("'", '"') if kind in ("list", "extend") and isinstance(value, str) else ""
        raise ConfigError(f"{where}: expected {_TOML_TYPES[kind]}, got {_toml_type_name(value)} {value!r}{hint}")


def apply(values: Dict[str, object], where: str,
          base: Settings = DEFAULT_SETTINGS, typed: bool = False) -> Tuple[Settings, Dict[str, object]]:
    """Apply raw ``key -> value`` pairs (file or flake8 options) to ``base``; return settings and the
    CLI-only values (``select``/``ignore``/``exclude``: lists; ``per-file-ignores``: ``(glob, codes)``
    pairs; ``fix-style``: a string).

    ``typed``: the values come from TOML (``pyproject.toml``) and must have their key's type (an array
    of strings, a boolean, a string, a table); INI values are all strings and are parsed instead.
    Raises :class:`ConfigError` naming ``where`` and the key.
    """
    changes: Dict[str, object] = {}
    cli: Dict[str, object] = {}
    for raw_key, value in values.items():
        key = raw_key.replace("_", "-")
        if key not in OPTIONS:
            raise ConfigError(f"{where}: unknown key {raw_key!r} (known: {', '.join(sorted(OPTIONS))})")
        field, kind, _ = OPTIONS[key]
        if typed:
            check_toml_type(kind, value, f"{where}: {raw_key}")
        if kind == "per-file":
            cli[key] = parse_per_file_ignores(value, f"{where}: {raw_key}")
        elif kind == "fix-style":
            style = str(value).strip()
            if style not in FIX_STYLES:
                raise ConfigError(f"{where}: {raw_key}: expected one of {', '.join(FIX_STYLES)}, got {value!r}")
            cli[key] = style
        elif kind == "path":
            cli[key] = str(value).strip()
        elif field is None:
            cli[key] = split_list(value)
            if key in ("select", "ignore"):
                check_codes(cli[key], f"{where}: {raw_key}")  # type: ignore[arg-type]
        elif kind == "bool":
            changes[field] = parse_bool(value, f"{where}: {raw_key}")
        else:
            items = split_list(value)
            current = changes.get(field, getattr(base, field))
            merged = list(current) + items if kind == "extend" else items
            changes[field] = tuple(merged) if field in ("model_call_patterns", "no_grad_paths") else frozenset(merged)
    return dataclasses.replace(base, **changes), cli


def find_config(start: pathlib.Path) -> Optional[Tuple[pathlib.Path, Dict[str, object]]]:
    """The nearest file, from ``start`` upward, with an ``[inplace_lint]`` / ``[tool.inplace-lint]`` section."""
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else [start.parent, *start.parent.parents]:
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            table = _pyproject_table(pyproject)
            if table is not None:
                return pyproject, table
        for name in ("setup.cfg", "tox.ini", ".flake8"):
            path = folder / name
            if path.is_file():
                parser = configparser.RawConfigParser()
                try:
                    parser.read(path, encoding="utf-8")
                except configparser.Error as exc:
                    raise ConfigError(f"{path}: {exc}") from exc
                if parser.has_section("inplace_lint"):
                    return path, dict(parser.items("inplace_lint"))
    return None


def _pyproject_table(path: pathlib.Path):
    try:
        import tomllib  # Python 3.11+
    except ModuleNotFoundError:  # pragma: no cover
        try:
            import tomli as tomllib  # type: ignore
        except ModuleNotFoundError:
            return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    tool = data.get("tool", {})
    table = tool.get("inplace-lint") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: tool.inplace-lint: expected a table, got {table!r}")
    return table


def load(start: pathlib.Path) -> Tuple[Settings, Dict[str, object], Optional[pathlib.Path]]:
    """Settings for files under ``start`` (defaults when no config file has our section), the
    CLI-only values (see :func:`apply`) and the config file's path."""
    found = find_config(start)
    if found is None:
        return DEFAULT_SETTINGS, {}, None
    path, values = found
    settings, cli = apply(values, str(path), typed=path.name == "pyproject.toml")
    return settings, cli, path


def selected(code: str, select: Sequence[str], ignore: Sequence[str]) -> bool:
    """flake8-style selection by code prefix: the longer matching prefix wins; a tie goes to ignore."""
    sel = max((len(s) for s in select if code.startswith(s)), default=-1) if select else 0
    if sel < 0:
        return False
    ign = max((len(i) for i in ignore if code.startswith(i)), default=-1)
    return ign < 0 or sel > ign
