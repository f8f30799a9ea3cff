"""Run one function over many files, in parallel, with a progress bar: shared by ``check`` and ``fix``.

``run_files(paths, worker, jobs, progress)`` calls ``worker(path)`` for every path and returns one
:class:`Outcome` per path, sorted by path whatever ``jobs`` is. ``worker`` must be picklable when
``jobs > 1`` (a module-level function, or a frozen dataclass with ``__call__``). An exception raised
by ``worker`` does not stop the run: it becomes the outcome's ``crash`` (the caller reports it and
exits 1). ``jobs == 1`` runs in this process (no pickling, easy to debug).
"""
from __future__ import annotations

import concurrent.futures
import os
import sys
import traceback
from dataclasses import dataclass
from functools import partial
from typing import Callable, Generic, List, Optional, Sequence, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Outcome(Generic[T]):
    path: str
    #: what ``worker(path)`` returned; ``None`` when it raised
    value: Optional[T] = None
    #: ``"ValueError: boom (at engine.py:123 in visit)"`` when ``worker(path)`` raised
    crash: Optional[str] = None


def default_jobs() -> int:
    return os.cpu_count() or 1


def describe_crash(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        text += f" (at {os.path.basename(last.filename)}:{last.lineno} in {last.name})"
    return text


def _guarded(worker: Callable[[str], T], path: str) -> Outcome[T]:
    try:
        return Outcome(path, value=worker(path))
    except Exception as exc:  # noqa: BLE001 -- any bug in one file's analysis must not stop the run
        return Outcome(path, crash=describe_crash(exc))


def run_files(paths: Sequence[str], worker: Callable[[str], T], jobs: Optional[int] = None,
              progress: bool = False) -> List[Outcome[T]]:
    """``worker(path)`` for each path; ``jobs`` processes (default: all cores); a tqdm bar on stderr
    when ``progress``. The result is sorted by path."""
    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    paths = list(paths)
    jobs = min(jobs, len(paths)) or 1
    bar = _progress_bar(len(paths)) if progress else None
    outcomes: List[Outcome[T]] = []
    try:
        if jobs == 1:
            results = map(partial(_guarded, worker), paths)
            for outcome in results:
                outcomes.append(outcome)
                if bar is not None:
                    bar.update(1)
        else:
            chunksize = max(1, min(16, len(paths) // (jobs * 4)))
            with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as pool:
                for outcome in pool.map(partial(_guarded, worker), paths, chunksize=chunksize):
                    outcomes.append(outcome)
                    if bar is not None:
                        bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return sorted(outcomes, key=lambda o: o.path)


def _progress_bar(total: int):
    try:
        from tqdm import tqdm
    except ImportError:  # an install without it: no bar, same results
        return None

    return tqdm(total=total, file=sys.stderr, unit="file", desc="inplace-lint", leave=False, dynamic_ncols=True)
