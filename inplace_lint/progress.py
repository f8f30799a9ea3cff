"""Progress of a long run: the engine says which stage it is in and how far along; a surface draws it.

The stages of a cold ``check``: finding the files, reading (and with ``-j 1`` parsing) them, parsing in
the workers (``-j N``), walking every file, the fixpoint (walks again of files that read a summary that
changed since), the project pass, writing the cache, checking each file. Code that does the work calls
:func:`stage` (a context manager; stages nest: a stage started inside another gives the display back to
the outer one when it ends) and :func:`advance`; both do nothing unless a surface installed a display
(:func:`install`: ``inplace-lint check``/``fix`` with stderr on a terminal and no ``-q``). A forked
worker process inherits the display but never draws: only the process that installed it does.

Nothing here imports anything of the engine: any layer may report progress.
"""
from __future__ import annotations

import contextlib
import os
from typing import Iterable, Iterator, Optional, Protocol, TypeVar

T = TypeVar("T")


class Display(Protocol):
    """What draws progress (:class:`inplace_lint.adapters.parallel.ProgressBar`)."""

    def push(self, name: str, total: Optional[int], unit: str) -> object: ...

    def pop(self, token: object) -> None: ...

    def advance(self, n: int) -> None: ...

    def close(self) -> None: ...


_display: Optional[Display] = None
_owner: Optional[int] = None


def install(display: Optional[Display]) -> None:
    """Draw progress with ``display`` from now on (None: stop), in this process only."""
    global _display, _owner
    _display, _owner = display, os.getpid()


def active() -> Optional[Display]:
    return _display if _display is not None and _owner == os.getpid() else None


@contextlib.contextmanager
def stage(name: str, total: Optional[int] = None, unit: str = "file") -> Iterator[None]:
    """The work inside the ``with`` is stage ``name`` of ``total`` units (None: counted, total unknown)."""
    display = active()
    if display is None:
        yield
        return
    token = display.push(name, total, unit)
    try:
        yield
    finally:
        display.pop(token)


def finish() -> None:
    """The last stage is over: its final count is drawn, then the display is taken off the terminal
    (before the findings are printed)."""
    display = active()
    if display is not None:
        install(None)
        display.close()


def advance(n: int = 1) -> None:
    """``n`` more units of the current stage are done."""
    display = active()
    if display is not None and n:
        display.advance(n)


def counted(items: Iterable[T]) -> Iterator[T]:
    """``items``, advancing the current stage by one for each."""
    display = active()
    for item in items:
        if display is not None:
            display.advance(1)
        yield item
