"""Where a file's project starts and what its module is called: :func:`find_root`, :func:`is_loose`,
:func:`module_name` (folders and markers only; each folder is looked at once per process)."""
from __future__ import annotations

import functools
import os
import pathlib
from typing import Optional, Tuple

ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")


def find_root(path: str) -> pathlib.Path:
    """Nearest directory above ``path`` with pyproject.toml/setup.cfg/setup.py/.git (or an unpacked wheel's
    ``*.dist-info``); else the directory above the topmost package (``__init__.py``) holding it, through
    namespace folders (:func:`_package_top`); else the file's own directory."""
    start = pathlib.Path(os.path.realpath(path))  # not Path.resolve: it raises on a symlink loop
    folder = start if os.path.isdir(start) else start.parent
    return _root_of(folder)


def is_loose(path: str) -> bool:
    """A file with no project marker above it and in no package: its project is the file alone
    (a script in ``/tmp`` must not pull in every file under ``/tmp``)."""
    start = pathlib.Path(os.path.realpath(path))  # not Path.resolve: it raises on a symlink loop
    folder = start if os.path.isdir(start) else start.parent
    root = _root_of(folder)
    return root == folder and not any(os.path.exists(root / marker) for marker in ROOT_MARKERS) \
        and not os.path.exists(folder / "__init__.py")


@functools.lru_cache(maxsize=1024)
def _root_of(folder: pathlib.Path) -> pathlib.Path:
    marked = _marked_above(folder)
    if marked is not None:
        return marked
    package = _package_top(folder)  # a namespace folder inside a package (`lerobot/datasets/`) belongs to it
    if package is not None:
        return package.parent
    top = folder
    while os.path.exists(top / "__init__.py") and top.parent != top:
        top = top.parent
    return top


@functools.lru_cache(maxsize=4096)
def _marked_above(folder: pathlib.Path) -> Optional[pathlib.Path]:
    """The nearest folder at or above ``folder`` holding a project marker (each folder asked once)."""
    # os.path.exists, not Path.exists: False, not PermissionError, in a folder we may not search
    if _is_marked(folder):
        return folder
    return None if folder.parent == folder else _marked_above(folder.parent)


def module_name(path: str) -> Tuple[str, bool]:
    """``pkg.sub.mod`` for ``.../pkg/sub/mod.py`` (packages are folders with ``__init__.py``). A folder without
    ``__init__.py`` inside a package is a namespace package (PEP 420) and part of the name: ``lerobot/datasets/
    utils.py`` under ``lerobot/__init__.py`` is ``lerobot.datasets.utils``, as its imports spell it, not a
    top-level ``utils`` that every other such ``utils.py`` would overwrite."""
    p = pathlib.Path(os.path.realpath(path))
    is_package = p.name == "__init__.py"
    parts = [] if is_package else [p.stem]
    folder = p.parent
    top = _package_top(folder)
    while folder.parent != folder and (os.path.exists(folder / "__init__.py") or (
            top is not None and folder != top.parent and top in folder.parents)):
        parts.append(folder.name)
        folder = folder.parent
    return ".".join(reversed(parts)) or p.stem, is_package


@functools.lru_cache(maxsize=4096)
def _package_top(folder: pathlib.Path) -> Optional[pathlib.Path]:
    """The topmost folder at or above ``folder`` holding ``__init__.py``, through folders whose names are
    identifiers, up to a project's marker (or an unpacked wheel's ``*.dist-info``); None when there is none
    above a folder without ``__init__.py`` (a loose script's folder)."""
    top = None
    for depth, here in enumerate([folder, *folder.parents]):
        if depth > 16 or not here.name.isidentifier():
            break
        if os.path.exists(here / "__init__.py"):
            top = here
        elif _is_marked(here):
            break
    return top


@functools.lru_cache(maxsize=4096)
def _is_marked(folder: pathlib.Path) -> bool:
    """``folder`` holds a project marker or an unpacked wheel's metadata (``name-1.0.dist-info``)."""
    if any(os.path.exists(folder / marker) for marker in ROOT_MARKERS):
        return True
    try:
        return any(name.endswith(".dist-info") for name in os.listdir(folder))
    except OSError:
        return False
