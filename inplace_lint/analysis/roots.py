"""Where a file's project starts and what its module is called: :func:`find_root`, :func:`is_loose`,
:func:`module_name` (folders and markers only; each folder is looked at once per process)."""
from __future__ import annotations

import functools
import os
import pathlib
from typing import Optional, Tuple

ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")


def find_root(path: str) -> pathlib.Path:
    """Nearest directory above ``path`` with pyproject.toml/setup.cfg/setup.py/.git; else the directory
    above the topmost package (``__init__.py``) holding it; else the file's own directory."""
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
    top = folder
    while os.path.exists(top / "__init__.py") and top.parent != top:
        top = top.parent
    return top


@functools.lru_cache(maxsize=4096)
def _marked_above(folder: pathlib.Path) -> Optional[pathlib.Path]:
    """The nearest folder at or above ``folder`` holding a project marker (each folder asked once)."""
    # os.path.exists, not Path.exists: False, not PermissionError, in a folder we may not search
    if any(os.path.exists(folder / marker) for marker in ROOT_MARKERS):
        return folder
    return None if folder.parent == folder else _marked_above(folder.parent)


def module_name(path: str) -> Tuple[str, bool]:
    """``pkg.sub.mod`` for ``.../pkg/sub/mod.py`` (packages are folders with ``__init__.py``)."""
    p = pathlib.Path(os.path.realpath(path))
    is_package = p.name == "__init__.py"
    parts = [] if is_package else [p.stem]
    folder = p.parent
    while os.path.exists(folder / "__init__.py") and folder.parent != folder:
        parts.append(folder.name)
        folder = folder.parent
    return ".".join(reversed(parts)) or p.stem, is_package
