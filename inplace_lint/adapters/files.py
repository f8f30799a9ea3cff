"""Which files to check, and how to read them.

Directories are searched with ``git ls-files --cached --others --exclude-standard`` when they lie
inside a git work tree (so ``.gitignore`` is respected) and with a plain walk otherwise (or when git
is not installed). Either way ``SKIP_DIRS`` and ``--exclude`` patterns apply. A file named on the
command line is always checked (whatever its suffix, and even when git ignores it) unless an
``--exclude`` pattern matches it.
"""
from __future__ import annotations

import fnmatch
import os
import subprocess
import tokenize
from typing import Iterator, List, Optional, Sequence

#: folders never searched when a directory is given
SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", "build", "dist", ".eggs",
     "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages"}
)
PYTHON_SUFFIXES = (".py", ".pyi")


def _skipped_dir(name: str) -> bool:
    return name in SKIP_DIRS or name.endswith(".egg-info")


def git_files(folder: str) -> Optional[List[str]]:
    """Files under ``folder`` that git does not ignore (tracked or untracked), relative to it, or
    ``None`` when ``folder`` is not in a git work tree or git is missing."""
    try:
        proc = subprocess.run(
            ["git", "-C", folder, "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "."],
            capture_output=True, check=False,
        )
    except OSError:
        return None
    if proc.returncode != 0:
        return None
    names = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    return sorted({n for n in names if n})


def iter_python_files(paths: Sequence[str], exclude: Sequence[str], use_git: bool = True) -> Iterator[str]:
    """Python files under ``paths``, each once, in the order of ``paths`` then sorted within a folder
    (counted on the progress bar, :mod:`inplace_lint.progress`, as they are found)."""
    from .. import progress

    with progress.stage("finding files"):
        yield from progress.counted(_python_files(paths, exclude, use_git))


def _python_files(paths: Sequence[str], exclude: Sequence[str], use_git: bool) -> Iterator[str]:

    def excluded(path: str) -> bool:
        name = os.path.basename(path)
        return any(fnmatch.fnmatch(name, pat) or fnmatch.fnmatch(path, pat) for pat in exclude)

    seen = set()

    def fresh(path: str) -> bool:
        key = os.path.normcase(os.path.abspath(path))
        if key in seen:
            return False
        seen.add(key)
        return True

    for path in paths:
        if not os.path.isdir(path):
            if not excluded(path) and fresh(path):
                yield path
            continue
        listed = git_files(path) if use_git else None
        if listed is None:
            found = _walk(path, excluded)
        else:
            found = _from_git(path, listed, excluded)
        for full in found:
            if fresh(full):
                yield full


def _walk(path: str, excluded) -> Iterator[str]:
    for root, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not _skipped_dir(d) and not excluded(os.path.join(root, d)))
        for name in sorted(names):
            full = os.path.join(root, name)
            if name.endswith(PYTHON_SUFFIXES) and not excluded(full):
                yield full


def _from_git(path: str, listed: Sequence[str], excluded) -> Iterator[str]:
    for rel in listed:
        if not rel.endswith(PYTHON_SUFFIXES):
            continue
        parts = rel.split("/")
        full = os.path.join(path, *parts)
        folders = [os.path.join(path, *parts[:i]) for i in range(1, len(parts))]
        if any(_skipped_dir(p) for p in parts[:-1]) or any(excluded(f) for f in folders) or excluded(full):
            continue
        if os.path.isfile(full):  # tracked but deleted from the work tree: nothing to check
            yield full


def decode(raw: bytes) -> str:
    """Source bytes to text as Python reads them (BOM, encoding cookie), newlines untranslated."""
    import io

    encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    return raw.decode(encoding)


def read_source(path: str) -> str:
    """Read a file as Python does: honouring a BOM and an encoding cookie (newlines untranslated)."""
    with open(path, "rb") as fh:
        return decode(fh.read())
