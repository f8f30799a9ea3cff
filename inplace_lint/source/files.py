"""Which files to check, and how to read them.

Directories are searched with ``git ls-files --cached --others --exclude-standard`` when they lie
inside a git work tree (so ``.gitignore`` is respected) and with a plain walk otherwise (or when git
is not installed). Either way ``SKIP_DIRS`` and ``--exclude`` patterns apply. A file named on the
command line is always checked (whatever its suffix, and even when git ignores it) unless an
``--exclude`` pattern matches it.

Any path may be hostile (a symlink loop, a dangling link, a FIFO, a device, an unreadable folder or
file, a name that is not UTF-8): discovery yields such a path like a file (a folder it cannot list
included) and :func:`read_bytes` refuses it with an ``OSError`` whose ``strerror`` says why, which the
callers report as ``IPV000 cannot read: ...``. Nothing here blocks (a FIFO is opened non-blocking and
never read) or follows a link loop.
"""
from __future__ import annotations

import errno
import fnmatch
import os
import re
import stat
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


#: git's warning for a folder it cannot list (``dir.c``); git goes on without it and exits 0
_GIT_UNREADABLE = re.compile(rb"^warning: could not open directory '(.*)': ", re.M)


def git_files(folder: str) -> Optional[List[str]]:
    """Files under ``folder`` that git does not ignore (tracked or untracked), relative to it, or
    ``None`` when ``folder`` is not in a git work tree or git is missing. A folder git could not list
    is named with a trailing ``/`` (git's own form), so that it is reported rather than lost."""
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
    names += [m.decode("utf-8", "surrogateescape") for m in _GIT_UNREADABLE.findall(proc.stderr)]
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
    unreadable: List[OSError] = []
    for root, dirs, names in os.walk(path, onerror=unreadable.append):
        while unreadable:  # a folder os.walk could not list: yielded, so that reading it says why
            failed = unreadable.pop().filename
            if failed is not None and not excluded(failed):
                yield failed
        dirs[:] = sorted(d for d in dirs if not _skipped_dir(d) and not excluded(os.path.join(root, d)))
        for name in sorted(names):
            full = os.path.join(root, name)
            if name.endswith(PYTHON_SUFFIXES) and not excluded(full):
                yield full
    for error in unreadable:  # the last folder's error comes after the last step
        if error.filename is not None and not excluded(error.filename):
            yield error.filename


def _from_git(path: str, listed: Sequence[str], excluded) -> Iterator[str]:
    for rel in listed:
        if rel.endswith("/"):  # a folder git could not list
            full = os.path.join(path, *rel.rstrip("/").split("/"))
            if not excluded(full):
                yield full
            continue
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


#: what a path is when it is not a regular file (``stat.S_IFMT``), for the error message
_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory"}


def read_bytes(path: str) -> bytes:
    """The bytes of the regular file at ``path``. Raises ``OSError`` (with ``strerror`` saying why)
    for anything else: a missing file or dangling link, a symlink loop (``ELOOP``), no permission, and
    a FIFO, device, socket or folder, which are never read (``/dev/zero`` never ends; a FIFO blocks
    until a writer comes). The file is opened non-blocking and checked with ``fstat`` on the open file,
    so a path swapped for a FIFO between a check and the read cannot block either."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = _KINDS.get(stat.S_IFMT(mode), "of another kind")
            raise OSError(errno.EINVAL, f"not a regular file ({kind})", path)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    finally:
        os.close(fd)


def read_source(path: str) -> str:
    """Read a file as Python does: honouring a BOM and an encoding cookie (newlines untranslated).
    Raises ``OSError`` for what :func:`read_bytes` refuses."""
    return decode(read_bytes(path))
