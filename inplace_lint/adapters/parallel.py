"""Run one function over many files, in parallel, with a progress bar: shared by ``check`` and ``fix``.

``run_files(paths, worker, jobs, progress)`` calls ``worker(path)`` for every path and returns one
:class:`Outcome` per path, sorted by path whatever ``jobs`` is. ``worker`` must be picklable when
``jobs > 1`` (a module-level function, or a frozen dataclass with ``__call__``). An exception raised
by ``worker`` does not stop the run: it becomes the outcome's ``crash`` (the caller reports it and
exits 1). ``jobs == 1`` runs in this process (no pickling, easy to debug).

:func:`showing_progress` draws every stage of a run (:mod:`inplace_lint.progress`: finding the files, the
project build, the fixpoint, checking each file) on one tqdm bar on stderr.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import os
import sys
import traceback
from dataclasses import dataclass
from functools import partial
from typing import Callable, Generic, Iterator, List, Optional, Sequence, TypeVar

from .. import progress as _progress

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
              progress: bool = False, stage: str = "checking") -> List[Outcome[T]]:
    """``worker(path)`` for each path; ``jobs`` processes (default: all cores); a tqdm bar on stderr
    when ``progress`` (the run's last stage, named ``stage``, when :func:`showing_progress` draws the
    run). The result is sorted by path."""
    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    paths = list(paths)
    jobs = min(jobs, len(paths)) or 1
    if progress and _progress.active() is not None:  # the run's bar (showing_progress): one stage of it
        with _progress.stage(stage, len(paths)):
            outcomes = _run(paths, worker, jobs, _progress.advance)
        _progress.finish()  # the last stage: off the terminal before the findings are printed
        return outcomes
    bar = _progress_bar(len(paths)) if progress else None
    try:
        return _run(paths, worker, jobs, bar.update if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()


def _run(paths: List[str], worker: Callable[[str], T], jobs: int,
         step: Optional[Callable[[int], object]]) -> List[Outcome[T]]:
    outcomes: List[Outcome[T]] = []
    if jobs == 1:
        for outcome in map(partial(_guarded, worker), paths):
            outcomes.append(outcome)
            if step is not None:
                step(1)
    else:
        chunksize = max(1, min(16, len(paths) // (jobs * 4)))
        with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as pool:
            for outcome in pool.map(partial(_guarded, worker), paths, chunksize=chunksize):
                outcomes.append(outcome)
                if step is not None:
                    step(1)
    return sorted(outcomes, key=lambda o: o.path)


class ProgressBar:
    """One tqdm bar for every stage of a run (:class:`inplace_lint.progress.Display`): a stage sets its
    name, unit and total (None: a count), an inner stage gives the bar back to the outer one as it was."""

    def __init__(self, bar) -> None:
        self.bar = bar
        self.stack: List[tuple] = []
        self.closed = False

    def push(self, name: str, total: Optional[int], unit: str) -> object:
        bar = self.bar
        self.stack.append((bar.desc, bar.total, bar.n, bar.unit))
        self._show(name, total, 0, unit)
        return len(self.stack)

    def pop(self, token: object) -> None:
        while len(self.stack) >= token:  # type: ignore[operator]
            desc, total, n, unit = self.stack.pop()
        if self.stack:  # the outermost stage ("starting") is not drawn again: the run is ending
            self._show(desc, total, n, unit, prefixed=True)

    def advance(self, n: int) -> None:
        self.bar.update(n)

    def _show(self, name: str, total: Optional[int], n: int, unit: str, prefixed: bool = False) -> None:
        bar = self.bar
        bar.unit = unit
        bar.set_description_str(name if prefixed else f"inplace-lint: {name}", refresh=False)
        if total is None:
            bar.total = None  # reset(total=None) would keep the last stage's total
        bar.miniters = 0  # tqdm adapts it to the last stage's pace: a slower stage would not be drawn
        bar.reset(total=total)  # draws it
        if n:
            bar.n = n
            bar.refresh()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.bar.refresh()  # the last count, which tqdm's rate limit may have skipped
            self.bar.close()


@contextlib.contextmanager
def showing_progress(enabled: bool) -> Iterator[None]:
    """Draw the run's progress on stderr while the ``with`` runs (when ``enabled`` and tqdm is there)."""
    bar = _progress_bar(None, "inplace-lint: starting") if enabled else None
    if bar is None:
        yield
        return
    display = ProgressBar(bar)
    _progress.install(display)
    try:
        yield
    finally:
        if _progress.active() is display:
            _progress.install(None)
        display.close()


def _progress_bar(total: Optional[int], desc: str = "inplace-lint"):
    try:
        from tqdm import tqdm
    except ImportError:  # an install without it: no bar, same results
        return None

    return tqdm(total=total, file=sys.stderr, unit="file", desc=desc, leave=False, dynamic_ncols=True)
