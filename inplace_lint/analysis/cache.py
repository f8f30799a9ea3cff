"""On-disk cache of per-file project results (summaries, call sites, findings), like ruff's cache.

One pickle per project and settings under the cache directory (default
``<project root>/.inplace_lint_cache``, which holds a ``.gitignore`` of ``*`` so git
never sees it). An entry is reused when the file's (mtime, size) are unchanged, or
else when its content hash is; a file whose entry is reused is not parsed. The
summaries a file's walk read are recorded with their digests, so an entry whose
dependencies changed is walked again (:meth:`.project.Project.build`).

The cache is only an accelerator: deleting it changes no finding. Writes are atomic
(a temporary file renamed), so concurrent runs (pre-commit) never read a torn file;
the last writer wins.
"""
from __future__ import annotations

import gc
import hashlib
import os
import pathlib
import pickle
import tempfile
from typing import Dict, Optional, Tuple

from .. import __version__
from .summaries import FileResult

CACHE_DIR_NAME = ".inplace_lint_cache"
#: bump when the pickled types change shape
FORMAT = 6

Entry = Tuple[int, int, FileResult]  # (mtime_ns, size, result)


def settings_key(settings) -> str:
    """A text that is equal for equal settings in every process (frozensets sorted: string hashes vary)."""
    import dataclasses

    parts = []
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        parts.append(f"{f.name}={sorted(value) if isinstance(value, frozenset) else value!r}")
    return ";".join(parts)


def _code_key() -> str:
    """The analysis code itself (an edited checkout must not reuse results of the code before)."""
    here = pathlib.Path(__file__).resolve().parent
    parts = []
    for folder in (here, here.parent / "rules"):
        for file in sorted(folder.glob("*.py")):
            st = file.stat()
            parts.append(f"{file.name}:{st.st_mtime_ns}:{st.st_size}")
    return hashlib.sha1("|".join(parts).encode()).hexdigest()


_CODE_KEY = None


def cache_path(cache_dir: pathlib.Path, root: pathlib.Path, settings) -> pathlib.Path:
    global _CODE_KEY
    if _CODE_KEY is None:
        _CODE_KEY = _code_key()
    key = hashlib.sha1(f"{FORMAT}|{__version__}|{_CODE_KEY}|{root}|{settings_key(settings)}".encode()).hexdigest()[:16]
    return cache_dir / f"project-{key}.pickle"


def default_dir(root: pathlib.Path) -> pathlib.Path:
    return root / CACHE_DIR_NAME


def load(path: pathlib.Path) -> Dict[str, Entry]:
    # the collector would run many times over the objects being made and find nothing to free
    # (a third of the load's time on a large project)
    enabled = gc.isenabled()
    gc.disable()
    try:
        with open(path, "rb") as fh:
            data = pickle.load(fh)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
        return {}
    finally:
        if enabled:
            gc.enable()
    return data if isinstance(data, dict) else {}


def save(path: pathlib.Path, entries: Dict[str, Entry]) -> Optional[str]:
    """Write atomically; returns why not (a read-only tree is not an error)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        ignore = path.parent / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# created by inplace-lint\n*\n")
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".pickle")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(entries, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError as exc:
        return str(exc)
    return None
