"""Which files to check, and how to read them."""
from __future__ import annotations

import fnmatch
import os
import tokenize
from typing import Iterator, Sequence

#: folders never searched when a directory is given
SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", "build", "dist", ".eggs",
     "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages"}
)


def iter_python_files(paths: Sequence[str], exclude: Sequence[str]) -> Iterator[str]:
    """Python files under ``paths`` (files given explicitly are always checked unless excluded)."""

    def excluded(path: str) -> bool:
        name = os.path.basename(path)
        return any(fnmatch.fnmatch(name, pat) or fnmatch.fnmatch(path, pat) for pat in exclude)

    for path in paths:
        if os.path.isdir(path):
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")
                                 and not excluded(os.path.join(root, d)))
                for name in sorted(names):
                    full = os.path.join(root, name)
                    if name.endswith((".py", ".pyi")) and not excluded(full):
                        yield full
        elif not excluded(path):
            yield path


def decode(raw: bytes) -> str:
    """Source bytes to text as Python reads them (BOM, encoding cookie), newlines untranslated."""
    import io

    encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    return raw.decode(encoding)


def read_source(path: str) -> str:
    """Read a file as Python does: honouring a BOM and an encoding cookie (newlines untranslated)."""
    with open(path, "rb") as fh:
        return decode(fh.read())
