"""Settings, the table of every configuration key, and how a key's raw value is read and applied.

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
- ``select``, ``ignore``, ``exclude`` (and ``extend-select``, ``extend-ignore``, ``extend-exclude``, which add
  to them): CLI only (flake8 has its own). ``select = ALL`` selects every rule.
- ``per-file-ignores``: CLI only (flake8 has its own): flake8's syntax, ``glob:CODES`` entries
  (``tests/*:IPV001,IPV005``), or in pyproject.toml a table ``{"tests/*" = ["IPV001"]}``; globs
  match the checked file's path relative to the folder of the config file (a glob without ``/``
  also matches the file name alone).
- ``fix-style``: ``inline`` (default: plain torch) or ``runtime`` (rewrites call ``inplace_lint.runtime``)
  (plain torch with an inline DTensor guard, no dependency); read by ``inplace-lint fix``.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import functools
import os
import pathlib
import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from ..torch_facts import ops


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
    "select": (None, "list", "codes (or prefixes) to report; ALL: every rule"),
    "extend-select": (None, "list", "codes added to select"),
    "ignore": (None, "list", "codes (or prefixes) not to report"),
    "extend-ignore": (None, "list", "codes added to ignore (flake8's and ruff's name)"),
    "exclude": (None, "list", "glob patterns of paths to skip"),
    "extend-exclude": (None, "list", "glob patterns added to exclude (ruff's name)"),
    "per-file-ignores": (None, "per-file", "glob:CODES entries: codes not reported in files matching the glob"),
    "fix-style": (None, "fix-style", "inline (plain torch, the default) or runtime (call inplace_lint.runtime)"),
    "target-version": (None, "version", "the oldest Python the project runs on (default: its requires-python)"),
    "torch-version": (None, "version", "the oldest torch the project runs on (default: its torch requirement's lower bound)"),
    "cache-dir": (None, "path", "where project summaries are cached, by content, shared by every project "
                                "checked with it (default: .inplace_lint_cache in the project root)"),
}

#: values of ``fix-style``; the first is the default of every surface (CLI, pre-commit hook, language
#: server, library): ``inline``, plain torch that runs on the project's own floor with no new dependency,
#: the form upstream verl merged (PR 6935); ``runtime`` calls ``inplace_lint.runtime`` (README, "Fixing")
FIX_STYLES = ("inline", "runtime")
_CODE = re.compile(r"[A-Z]+[0-9]*")

PerFileIgnores = List[Tuple[str, Tuple[str, ...]]]


def split_list(value) -> List[str]:
    """A list option's items: a TOML array as it is, text split at commas and whitespace (flake8's
    ``parse_comma_separated_list``: ``IPV001, IPV004``, ``IPV001 IPV004`` and one per line all work)."""
    if isinstance(value, (list, tuple)):
        items: Iterable[str] = [str(v) for v in value]
    else:
        items = re.split(r"[,\s]", str(value))
    return [i.strip() for i in items if i.strip()]


def parse_version_option(value, where: str) -> Tuple[int, int]:
    """``"3.9"`` / ``"2.4"`` / ``"py39"`` as ``(major, minor)``; a ``ConfigError`` otherwise."""
    text = str(value).strip()
    match = re.fullmatch(r"(?:py)?(\d)(\d{1,2})|v?(\d+)\.(\d+)(?:\.\d+)?(?:\+\w+)?", text)
    if match is None:
        raise ConfigError(f"{where}: expected a version such as 3.9 or 2.4, got {value!r}")
    major, minor = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
    return int(major), int(minor)


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
    from ..rules import RULES

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
    absolute = os.path.abspath(path).replace(os.sep, "/")
    for glob, listed in per_file:
        pat = glob[2:] if glob.startswith("./") else glob
        if os.path.isabs(pat):  # from the command line: made absolute against the working folder
            if fnmatch.fnmatchcase(absolute, pat.replace(os.sep, "/")):
                codes.extend(listed)
        elif fnmatch.fnmatchcase(rel, pat) or ("/" not in pat and fnmatch.fnmatchcase(name, pat)):
            codes.extend(listed)
    return codes


_TOML_TYPES = {"list": "an array of strings", "extend": "an array of strings", "bool": "true or false",
               "fix-style": "a string", "version": "a string", "per-file": "a table of glob = [codes]"}


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
    elif kind in ("fix-style", "version"):
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


def apply(values: Dict[str, object], where: str, base: Settings = DEFAULT_SETTINGS, typed: bool = False,
          warnings: Optional[List[str]] = None) -> Tuple[Settings, Dict[str, object]]:
    """Apply raw ``key -> value`` pairs (file or flake8 options) to ``base``; return settings and the
    CLI-only values (``select``/``ignore``/``exclude``: lists; ``per-file-ignores``: ``(glob, codes)``
    pairs; ``fix-style``: a string).

    ``typed``: the values come from TOML (``pyproject.toml``) and must have their key's type (an array
    of strings, a boolean, a string, a table); INI values are all strings and are parsed instead.
    Raises :class:`ConfigError` naming ``where`` and the key (an unknown key too, unless ``warnings`` is
    given: then it is appended there and skipped).
    """
    changes: Dict[str, object] = {}
    cli: Dict[str, object] = {}
    for raw_key, value in values.items():
        key = raw_key.replace("_", "-")
        if key not in OPTIONS:
            if warnings is None:
                raise ConfigError(f"{where}: unknown key {raw_key!r} (known: {', '.join(sorted(OPTIONS))})")
            warnings.append(f"{where}: unknown key {raw_key!r} ignored{did_you_mean(key, OPTIONS)}")
            continue
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
        elif kind == "version":
            cli[key] = parse_version_option(value, f"{where}: {raw_key}")
        elif field is None:
            cli[key] = split_list(value)
            if key in ("select", "ignore", "extend-select", "extend-ignore"):
                listed = [c for c in cli[key] if not (c == ALL and key.endswith("select"))]  # type: ignore[union-attr]
                check_codes(listed, f"{where}: {raw_key}")
        elif kind == "bool":
            changes[field] = parse_bool(value, f"{where}: {raw_key}")
        else:
            items = split_list(value)
            current = changes.get(field, getattr(base, field))
            merged = list(current) + items if kind == "extend" else items
            changes[field] = tuple(merged) if field in ("model_call_patterns", "no_grad_paths") else frozenset(merged)
    return dataclasses.replace(base, **changes), cli


#: ``select = ALL`` (ruff's spelling): every rule, the same as no ``select``
ALL = "ALL"


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` to ``word``, or nothing."""
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def selection(cli: Dict[str, object]) -> Tuple[List[str], List[str]]:
    """``select`` (with ``extend-select``; ``ALL`` or nothing: every rule, ``[]``) and ``ignore`` (with
    ``extend-ignore``) of a configuration's CLI values: what every surface that selects applies."""
    select = list(cli.get("select", []))  # type: ignore[call-overload]
    if select:
        select += list(cli.get("extend-select", []))  # type: ignore[call-overload]
    if ALL in select:
        select = []
    return select, list(cli.get("ignore", [])) + list(cli.get("extend-ignore", []))  # type: ignore[call-overload]


def selected(code: str, select: Sequence[str], ignore: Sequence[str]) -> bool:
    """flake8-style selection by code prefix: the longer matching prefix wins; a tie goes to ignore."""
    sel = max((len(s) for s in select if code.startswith(s)), default=-1) if select else 0
    if sel < 0:
        return False
    ign = max((len(i) for i in ignore if code.startswith(i)), default=-1)
    return ign < 0 or sel > ign
