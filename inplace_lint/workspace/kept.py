"""Findings kept for a whole unchanged project: a one-file check reads its file's instead of loading the project.

A whole-project run keeps each file's findings under the signature of the results it held
(:meth:`inplace_lint.analysis.cache.Store.final`); a later one-file check of the same project (every file on
disk as the cache's manifest has it) reads them back, decoding no other file's summaries and running no
project pass (pre-commit on one file, flake8 after ``inplace-lint check``).
"""
from __future__ import annotations

import os
import pathlib
import time
from typing import Dict, List, Optional

from ..config import Settings
from ..findings import Finding

#: (signature, path, cache folder) -> the findings a kept final gave (a check asks twice)
_FINALS: Dict[tuple, List[Finding]] = {}


def kept_final(source: str, path: str, settings: Settings, mode) -> Optional[List[Finding]]:
    """The findings of ``path`` kept by an earlier run for exactly this project (every file unchanged on
    disk since the cache's manifest, ``source`` its text there): a one-file check of an unchanged project
    (pre-commit, flake8 after ``check``) reads one small file instead of every file's summaries and the
    project pass. None when the project is loaded in this process, or anything differs."""
    from . import REFRESH_AFTER_S, _digest, _loaded, _root_and_loose

    root, loose = _root_and_loose(path)
    if loose or not mode.use_cache or _loaded(path, settings, mode, True) is not None:
        return None
    here = os.path.abspath(path)
    digest = _digest(source)
    state_key = (str(root), settings, mode.cache_dir)
    state = _FINAL_STATES.get(state_key)
    if state is None or time.monotonic() - state[0] >= REFRESH_AFTER_S:
        # the project as the disk has it now, compared with the cache's manifest (once per
        # REFRESH_AFTER_S, as a loaded project is: flake8 asks for every file of a run)
        state = _FINAL_STATES[state_key] = (time.monotonic(),) + _final_state(root, settings, mode)
    _, store, manifest, signature = state
    if signature is None:
        return None
    entry = manifest.get(here)
    if entry is None or entry[2] != digest:
        return None
    memo = (signature, here, str(store.directory))
    if memo in _FINALS:
        return _FINALS[memo]
    found = store.final(signature, here, str(root))
    if found is not None:
        _FINALS[memo] = found
    return found


#: (root, settings, cache folder) -> (when, store, manifest, signature or None) of :func:`_final_state`
_FINAL_STATES: Dict[tuple, tuple] = {}


def forget_disk_state() -> None:
    """What a new process would know of the disk: nothing (a command run in this process reads it again)."""
    _FINAL_STATES.clear()
    _FINALS.clear()


def _final_state(root: pathlib.Path, settings: Settings, mode) -> tuple:
    """(store, manifest, signature): the signature of the results the manifest names when every file of the
    project is on disk as the manifest has it (same files, sizes and times), else None."""
    from ..analysis import cache as disk
    from . import _module_name, project_files

    store = disk.Store.open(pathlib.Path(mode.cache_dir) if mode.cache_dir else disk.default_dir(root))
    if store is None:
        return None, {}, None
    manifest = store.load_manifest(store.manifest_path(root, disk.settings_key(settings)))
    files = project_files(root) if manifest else []
    if not manifest or set(files) != set(manifest):
        return store, manifest, None  # a file added or gone since: the project pass may say otherwise now
    for file in files:
        try:
            st = os.stat(file)
        except OSError:
            return store, manifest, None
        if (st.st_mtime_ns, st.st_size) != manifest[file][:2]:
            return store, manifest, None
    return store, manifest, disk.signature((_module_name(f)[0],) + tuple(manifest[f][3:]) for f in files)


