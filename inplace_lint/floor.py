"""The target project's floor: the oldest Python and torch it says it runs on.

A rewrite must run where the original ran (DESIGN.md, "Fix policy"), so the codemod writes nothing
that the floor lacks (:mod:`inplace_lint.fix.imports` decides the forms). This module only reads what
the project states, never guesses:

- Python: ``requires-python`` (``[project]`` in ``pyproject.toml``), ``python_requires`` (``setup.cfg``
  ``[options]``, or a ``setup(python_requires=...)`` string in ``setup.py``), poetry's ``python``
  dependency;
- torch: the lower bound of every ``torch`` requirement (``==``, ``===``, ``>=``, ``>``, ``~=``, poetry's
  ``^``) in ``pyproject.toml`` (dependencies and optional dependencies), ``setup.cfg``
  (``install_requires``, ``extras_require``), ``setup.py`` (any string literal that is a torch
  requirement) and ``requirements*.txt`` (also under ``requirements/``) in the project root. The floor
  is the lowest bound stated anywhere: the project says it runs there.

The project root is the nearest folder above the file holding ``pyproject.toml``, ``setup.cfg``,
``setup.py`` or a ``requirements*.txt``. ``--target-version`` / ``--torch-version`` (``target-version`` /
``torch-version`` in the config file) override what is read.
"""
from __future__ import annotations

import ast
import configparser
import functools
import os
import pathlib
import re
from dataclasses import dataclass
from typing import Iterable, List, Optional, Tuple

Version = Tuple[int, int]

#: the oldest Python and torch ``inplace_lint.runtime`` supports (tested: Python 3.9 with torch 2.4)
RUNTIME_PYTHON: Version = (3, 9)
RUNTIME_TORCH: Version = (2, 4)


@dataclass(frozen=True)
class Floor:
    """The oldest Python and torch a project runs on (None: not stated), and where each was read."""

    python: Optional[Version] = None
    torch: Optional[Version] = None
    python_source: str = ""
    torch_source: str = ""

    def override(self, python: Optional[Version], torch: Optional[Version]) -> "Floor":
        return Floor(python or self.python, torch or self.torch,
                     "--target-version" if python else self.python_source,
                     "--torch-version" if torch else self.torch_source)


UNKNOWN = Floor()

_VERSION = re.compile(r"^\s*v?(\d+)(?:\.(\d+))?")
_REQ = re.compile(r"^\s*torch\s*(?:\[[^\]]*\])?\s*(?P<spec>(?:[<>=!~^]=?=?\s*[\w.*+!-]+\s*,?\s*)*)(?:;.*)?$",
                  re.IGNORECASE)
_CLAUSE = re.compile(r"(===|==|>=|~=|<=|!=|>|<|\^|~)?\s*([\w.*+!-]+)")


def parse_version(text: str) -> Optional[Version]:
    """``(major, minor)`` of ``"2.4.1+cu121"``, ``"3.9"``, ``"2"`` (minor 0); None when not a version."""
    match = _VERSION.match(str(text))
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2) or 0)


def lower_bound(spec: str) -> Optional[Version]:
    """The lower bound of a version specifier (``">=2.4,<2.7"`` -> (2, 4); ``"==2.4.0"`` -> (2, 4);
    ``"^3.9"`` / ``"~=3.9"`` -> (3, 9)); None when it states none (``"<2.7"``, ``""``, ``"*"``)."""
    bounds = []
    for part in str(spec).split(","):
        match = _CLAUSE.match(part.strip())
        if match is None or not match.group(2):
            continue
        op, value = match.group(1) or "==", match.group(2)
        if op in ("===", "==", ">=", ">", "~=", "^", "~") and "*" not in value.split(".")[0]:
            version = parse_version(value)
            if version is not None:
                bounds.append(version)
    return max(bounds) if bounds else None


def torch_requirement_floor(requirement: str) -> Optional[Version]:
    """The lower bound of ``requirement`` when it is a torch requirement (``"torch>=2.4"``), else None."""
    match = _REQ.match(requirement)
    if match is None or not match.group("spec").strip():
        return None
    return lower_bound(match.group("spec"))


def _min(a: Optional[Version], b: Optional[Version]) -> Optional[Version]:
    return b if a is None else a if b is None else min(a, b)


_ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py")


def project_root(path: pathlib.Path) -> Optional[pathlib.Path]:
    """The nearest folder at or above ``path`` that states a project (see the module docstring)."""
    path = pathlib.Path(os.path.realpath(path))  # not Path.resolve: it raises on a symlink loop
    return _root_of(path if os.path.isdir(path) else path.parent)


@functools.lru_cache(maxsize=4096)
def _root_of(folder: pathlib.Path) -> Optional[pathlib.Path]:
    if any(os.path.isfile(folder / m) for m in _ROOT_MARKERS) or any(folder.glob("requirements*.txt")):
        return folder
    return None if folder.parent == folder else _root_of(folder.parent)


def for_path(path: str) -> Floor:
    """The floor of the project that holds ``path`` (:data:`UNKNOWN` outside any project)."""
    try:
        root = project_root(pathlib.Path(path))
    except OSError:
        return UNKNOWN
    return UNKNOWN if root is None else read(root)


@functools.lru_cache(maxsize=256)
def read(root: pathlib.Path) -> Floor:
    """The floor stated by the project files in ``root``."""
    python: Optional[Version] = None
    torch: Optional[Version] = None
    python_source = torch_source = ""
    for name, py, reqs in _sources(root):
        if py is not None and (python is None or py < python):
            python, python_source = py, name
        for req in reqs:
            bound = torch_requirement_floor(req)
            if bound is not None and (torch is None or bound < torch):
                torch, torch_source = bound, name
    return Floor(python, torch, python_source, torch_source)


def _sources(root: pathlib.Path) -> Iterable[Tuple[str, Optional[Version], List[str]]]:
    """(file name, Python floor, requirement strings) per project file in ``root``."""
    pyproject = root / "pyproject.toml"
    if os.path.isfile(pyproject):
        yield ("pyproject.toml",) + _pyproject(pyproject)
    setup_cfg = root / "setup.cfg"
    if os.path.isfile(setup_cfg):
        yield ("setup.cfg",) + _setup_cfg(setup_cfg)
    setup_py = root / "setup.py"
    if os.path.isfile(setup_py):
        yield ("setup.py",) + _setup_py(setup_py)
    for req in sorted(list(root.glob("requirements*.txt")) + list(root.glob("requirements/*.txt"))):
        yield (str(req.relative_to(root)), None, _requirements_txt(req))


def _read(path: pathlib.Path) -> str:
    from .source.files import read_bytes  # a FIFO or device is refused, never read (it would block)

    try:
        return read_bytes(str(path)).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _pyproject(path: pathlib.Path) -> Tuple[Optional[Version], List[str]]:
    try:
        import tomllib  # Python 3.11+
    except ModuleNotFoundError:  # pragma: no cover
        try:
            import tomli as tomllib  # type: ignore
        except ModuleNotFoundError:
            return None, []
    try:
        data = tomllib.loads(_read(path))
    except tomllib.TOMLDecodeError:
        return None, []
    project = data.get("project") if isinstance(data.get("project"), dict) else {}
    python = lower_bound(project.get("requires-python", "")) if isinstance(project.get("requires-python"), str) else None
    reqs = [r for r in project.get("dependencies", []) or [] if isinstance(r, str)]
    extras = project.get("optional-dependencies", {}) or {}
    if isinstance(extras, dict):
        reqs += [r for group in extras.values() if isinstance(group, list) for r in group if isinstance(r, str)]
    poetry = ((data.get("tool") or {}).get("poetry") or {}) if isinstance(data.get("tool"), dict) else {}
    deps = poetry.get("dependencies", {}) if isinstance(poetry, dict) else {}
    if isinstance(deps, dict):
        for key, value in deps.items():
            spec = value.get("version", "") if isinstance(value, dict) else value
            if not isinstance(spec, str):
                continue
            if key.lower() == "python":
                python = _min(python, lower_bound(spec))
            elif key.lower() == "torch":
                reqs.append("torch" + (spec if spec[:1] in "<>=!~^" else "==" + spec))
    return python, reqs


def _setup_cfg(path: pathlib.Path) -> Tuple[Optional[Version], List[str]]:
    parser = configparser.RawConfigParser()
    try:
        parser.read_string(_read(path))
    except configparser.Error:
        return None, []
    python = lower_bound(parser.get("options", "python_requires", fallback=""))
    reqs = parser.get("options", "install_requires", fallback="").splitlines()
    if parser.has_section("options.extras_require"):
        for _, value in parser.items("options.extras_require"):
            reqs += value.splitlines()
    return python, [r.strip() for r in reqs if r.strip()]


def _setup_py(path: pathlib.Path) -> Tuple[Optional[Version], List[str]]:
    text = _read(path)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None, []
    python: Optional[Version] = None
    reqs: List[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "python_requires" and \
                isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            python = _min(python, lower_bound(node.value.value))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _REQ.match(node.value):
            reqs.append(node.value)
    return python, reqs


def _requirements_txt(path: pathlib.Path) -> List[str]:
    out = []
    for line in _read(path).splitlines():
        line = line.split(" #", 1)[0].strip()
        if line and not line.startswith(("#", "-")):
            out.append(line)
    return out
