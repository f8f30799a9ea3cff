"""A project's cold build split among worker processes (``check -j N`` on a project with no cache).

:meth:`.project.Project.build` walks every file in one process, importing files first. Here
(:func:`build_parallel`), with ``jobs`` worker processes:

1. **Partition** (main process, no parsing, :func:`partition`): each file's imports are read from its
   text with a regular expression (a guess that only steers the split; nothing else reads it); a
   file's import level is the longest chain of imports below it. The levels are grouped into
   :data:`WAVES` waves of about the same amount of text, and each wave's files, in import order, are
   cut into ``jobs`` runs of about the same amount of text, one per worker.
2. **Index** (workers): each worker parses and indexes its files (:meth:`~.project.Project.add_file`)
   and keeps the trees; the main process receives every file's :class:`~.summaries.ModuleIndex` and
   computes the project's walk order (:meth:`~.project.Project._ordered`).
3. **Walk** (workers), wave by wave: each worker walks its files of the wave in that order, with every
   module's index, the cache's summaries and those the other workers made in earlier waves, and
   returns each file's :class:`~.summaries.FileResult`.
4. **Fixpoint** (main process): the results are added; a file whose walk read a summary that is
   different now (made by another worker in the same wave, or absent when it was read) is walked
   again, as :meth:`~.project.Project.build` does: in the workers (which hold the trees) while many
   are stale, then here, until nothing is stale.

The findings are those of the serial build: a walk depends only on its file's tree, the indexes and
the summaries it read (each recorded with its digest), and every file that read a summary that is not
the final one is walked again. The results are kept in the serial build's order (the project pass
reads the call sites in order). A worker that cannot be started, or dies, makes the build finish in
this process. ``fork`` is used where the platform has it, except on macOS (the workers inherit the
cached part of the project); elsewhere that part is sent to each worker once.
"""
from __future__ import annotations

import concurrent.futures
import gc
import multiprocessing
import pickle
import re
import sys
import time
from concurrent.futures.process import BrokenProcessPool
from typing import Dict, List, Optional, Sequence, Tuple

from .. import progress
from .project import _MAX_ROUNDS, Project
from .resolve import imported_files, module_name, post_order

#: below this many files to walk the serial build is used (worker start-up, sending the indexes and
#: walking again the files that read another chunk's summaries cost more than they save)
MIN_FILES = 64
#: at least this many files to walk per worker process (fewer workers than ``jobs`` on a small project)
FILES_PER_WORKER = 32
#: a round of walks again with fewer stale files than this is done in the main process
MIN_REWALK_IN_WORKERS = 16
#: the walk is done in this many waves (by import level); between two waves the workers receive each
#: other's new summaries, so a file rarely reads another worker's summary before it exists
WAVES = 4

#: ``import a.b``, ``import a.b as c, d``, ``from .x import y, z``, ``from . import (y,`` at any depth
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+\(?[ \t]*([\w., \t]*)"
                     r"|import[ \t]+([\w., \t]+))", re.M)


# --------------------------------------------------------------------------- partition


def workers_for(files: int, jobs: int) -> int:
    """How many worker processes build ``files`` files with ``-j jobs``; 1: the serial build."""
    if jobs < 2 or files < MIN_FILES:
        return 1
    return max(1, min(jobs, files // FILES_PER_WORKER))


def imports_in_text(source: str, module: str, is_package: bool) -> List[str]:
    """Absolute names of the modules (or module members) ``source`` imports, from its text."""
    package = module if is_package else module.rpartition(".")[0]
    out: List[str] = []
    for m in _IMPORT.finditer(source):
        if m.group(3) is not None:
            for part in m.group(3).split(","):
                name = part.strip().split()[0] if part.strip() else ""
                if name:
                    out.append(name)
            continue
        base = m.group(1)
        dots = len(base) - len(base.lstrip("."))
        if dots:
            parent = package.split(".") if package else []
            if dots > 1:
                parent = parent[:len(parent) - (dots - 1)]
            base = ".".join(parent + ([base[dots:]] if base[dots:] else []))
        if not base:
            continue
        out.append(base)
        for part in m.group(2).split(","):
            name = part.strip().split()[0] if part.strip() else ""
            if name and name.isidentifier():
                out.append(f"{base}.{name}")
    return out


def partition(files: Sequence[Tuple[str, str, str]], jobs: int, waves: int = 1) -> Dict[str, Tuple[int, int]]:
    """``files``: (path, module, source). Each path's (wave, worker): ``waves`` waves, in import order
    (a file's import level, the longest chain of imports below it, decides its wave), each wave's files
    cut into ``jobs`` runs of the import order with about the same amount of text."""
    by_module = {module: path for path, module, _ in files}
    size = {path: len(source) + 200 for path, _, source in files}
    graph = {path: imported_files(imports_in_text(source, module, path.endswith("__init__.py")), path, by_module)
             for path, module, source in files}
    order = post_order(graph)  # a file after everything it imports (cycles cut anywhere)
    position = {p: i for i, p in enumerate(order)}
    level: Dict[str, int] = {}
    for path in order:
        level[path] = 1 + max((level[g] for g in graph[path] if position[g] < position[path]), default=-1)
    total = sum(size.values())
    by_level = sorted(order, key=lambda p: (level[p], position[p]))
    out: Dict[str, Tuple[int, int]] = {}
    wave, filled, i = 0, 0.0, 0
    while i < len(by_level):  # whole levels to a wave, until it holds its share of the text
        j = i
        while j < len(by_level) and level[by_level[j]] == level[by_level[i]]:
            j += 1
        members = by_level[i:j]
        for path in members:
            out[path] = (wave, 0)
        filled += sum(size[p] for p in members)
        i = j
        if filled >= total * (wave + 1) / waves and wave < waves - 1:
            wave += 1
    for w in range(waves):
        members = sorted((p for p, (v, _) in out.items() if v == w), key=position.__getitem__)
        part = sum(size[p] for p in members)
        done = 0.0
        for path in members:
            out[path] = (w, min(jobs - 1, int(done * jobs / part)) if part else 0)
            done += size[path]
    return out


# --------------------------------------------------------------------------- workers

#: the worker's own project (one per worker process)
_PROJECT: Optional[Project] = None


def _start(state) -> None:
    """Worker initializer. ``state``: the main process's project (inherited under fork: not copied) or,
    elsewhere, (settings, root, the cached file results)."""
    global _PROJECT
    if isinstance(state, Project):
        _PROJECT = state
        gc.freeze()  # the collector leaves the inherited objects alone (fewer pages copied, less time)
        return
    settings, root, cached = state
    project = Project(settings, root)
    for result in cached:
        project.add_result(result)
    _PROJECT = project


def _index(files: Sequence[Tuple[str, str, str, str]]):
    """Parse and index ``(path, module, source, digest)``; the trees stay in this worker."""
    project = _PROJECT
    out = []
    for path, module, source, digest in files:
        error = project.add_file(path, source=source, module=module, digest=digest)
        out.append((path, error, None if error is not None else project.results[path]))
    gc.freeze()  # the trees live as long as this worker: the collector need not scan them again
    return out


def _walk(indexes, order: Sequence[str], summaries=None):
    """Walk ``order`` (this worker's files, in the project's order) with every module's index (sent
    once) and the summaries other workers made since the last call."""
    project = _PROJECT
    project.indexes.update(indexes)
    for qual, summary in (summaries or {}).items():
        project.summaries[qual] = summary
        project.nested_params[qual] = (summary.params, summary.static)
    for path in order:
        project.walk(path)
    out = []
    for path in order:
        result = project.results[path]
        crash = project.crashes.get(path)
        if crash is not None:
            try:
                pickle.dumps(crash)
            except Exception:  # noqa: BLE001 -- an exception that cannot travel is sent as its text
                crash = RuntimeError(f"{type(crash).__name__}: {crash}")
        out.append((path, result, crash))
    gc.freeze()
    return out


def _rewalk(summaries, order: Sequence[str]):
    """Walk ``order`` again (files of this worker's chunk that read a summary that changed) with the
    project's summaries as the main process has them now."""
    return _walk({}, order, summaries)


def _context():
    """fork where the platform has it and it is safe to use (not macOS, where system libraries may
    crash in a forked child): the workers inherit the project; elsewhere the platform's default."""
    if "fork" in multiprocessing.get_all_start_methods() and sys.platform != "darwin":
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


# --------------------------------------------------------------------------- main process


class Stats:
    """What the last :func:`build_parallel` did (for the benchmark and the tests)."""

    files = 0
    chunks: Tuple[int, ...] = ()
    #: walks done again, after the workers' walk of every file, to reach the fixpoint (a file may
    #: count more than once)
    rewalked = 0
    #: of those, the walks done in the workers (the rest: in the main process)
    rewalked_in_workers = 0
    rounds = 0
    #: seconds spent parsing and indexing, walking, and reaching the fixpoint
    seconds: Tuple[float, ...] = ()


def build_parallel(project: Project, files: Sequence[Tuple[str, str, str]], jobs: int,
                   order: Optional[Sequence[str]] = None) -> List[str]:
    """Add ``files`` ((path, source, digest), none in the project yet) to ``project`` and build it to
    the fixpoint with ``jobs`` worker processes. Returns the paths added (those that parse).

    ``order``: every path of the project in the order :meth:`Project.add_file` would have been called
    (the project's results are kept in that order, as the serial build leaves them)."""
    entries = []
    for path, source, digest in files:
        module, _ = module_name(path)
        entries.append((path, module, source, digest))
    placed = partition([(p, m, s) for p, m, s, _ in entries], jobs, WAVES)
    chunk_of = {path: worker for path, (_, worker) in placed.items()}
    wave_of = {path: wave for path, (wave, _) in placed.items()}
    chunks = [[p for p, _, _, _ in entries if chunk_of[p] == i] for i in range(jobs)]
    chunks = [c for c in chunks if c]
    renumber = {old: new for new, old in enumerate(sorted({chunk_of[c[0]] for c in chunks}))}
    chunk_of = {p: renumber[w] for p, w in chunk_of.items()}
    by_path = {e[0]: e for e in entries}
    before = list(project.summaries)
    ctx = _context()
    if ctx.get_start_method() == "fork":
        state = project
    else:
        state = (project.settings, project.root, list(project.results.values()))
    Stats.files, Stats.chunks, Stats.rewalked, Stats.rounds = len(entries), tuple(map(len, chunks)), 0, 0
    Stats.rewalked_in_workers = 0
    clock = [time.perf_counter()]
    added: List[str] = []
    walked: Dict[str, tuple] = {}
    walk_order: List[str] = []
    pools = []
    try:
        pools = [concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx, initializer=_start, initargs=(state,))
                 for _ in chunks]
        # each worker's files go in pieces (a one-process pool runs them in order, on the same worker
        # state): the same work, reported on the progress bar as each piece comes back
        with progress.stage(f"parsing files ({len(pools)} workers)", len(entries)):
            indexed = [(pool.submit(_index, [by_path[p] for p in piece]), len(piece))
                       for pool, chunk in zip(pools, chunks) for piece in _pieces(chunk)]
            _as_they_come(indexed)
        stubs = {}
        for future, _ in indexed:
            for path, error, stub in future.result():
                if error is None:
                    stubs[path] = stub
        for path, _, _ in files:  # in the caller's order, as add_file would have added them
            stub = stubs.get(path)
            if stub is not None:
                project.add_result(stub)
                added.append(path)
        keep_order(project, order)
        clock.append(time.perf_counter())  # parsed and indexed
        walk_order = project._ordered()
        new = set(added)
        indexes = dict(project.indexes)
        unsent: List[List[str]] = [[] for _ in pools]  # files whose summaries a worker has not seen
        with progress.stage(f"walking files ({len(pools)} workers)", len(new)):
            for wave in range(WAVES):
                walks = []
                for i, pool in enumerate(pools):
                    mine = [p for p in walk_order if p in new and chunk_of[p] == i and wave_of[p] == wave]
                    sent = {q: f for p in unsent[i] for q, f in project.results[p].functions.items()}
                    unsent[i] = []
                    # the indexes and the new summaries go with the first piece; the worker keeps them
                    pieces = _pieces(mine) or ([[]] if sent else [])
                    walks.append([(pool.submit(_walk, indexes if k == 0 else {}, piece, sent if k == 0 else None),
                                   len(piece)) for k, piece in enumerate(pieces)])
                _as_they_come([w for pieces in walks for w in pieces])
                indexes = {}
                walked = {}
                for i, pieces in enumerate(walks):
                    for future, _ in pieces:
                        for path, result, crash in future.result():
                            walked[path] = (result, crash)
                            for k in range(len(pools)):
                                if k != i:
                                    unsent[k].append(path)
                _merge(project, walk_order, walked)
        clock.append(time.perf_counter())  # walked once
        keep_order(project, order)
        for round_ in range(1, _MAX_ROUNDS + 1):
            pending = [p for p in project._ordered() if project.stale(project.results[p])]
            if not pending:
                break
            Stats.rounds += 1
            Stats.rewalked += len(pending)
            mine = [[p for p in pending if chunk_of.get(p) == i] for i in range(len(pools))]
            with progress.stage(f"fixpoint (walking again, round {round_})", len(pending)):
                if len(pending) < MIN_REWALK_IN_WORKERS:
                    for path in progress.counted(pending):
                        project.walk(path)
                    continue
                Stats.rewalked_in_workers += sum(map(len, mine))
                # in the workers, which hold the trees; a file no worker parsed (from the cache) is walked here
                sent = dict(project.summaries)
                futures = [[(pool.submit(_rewalk, sent if k == 0 else {}, piece), len(piece))
                            for k, piece in enumerate(_pieces(paths))] for pool, paths in zip(pools, mine) if paths]
                for path in pending:
                    if path not in chunk_of:
                        project.walk(path)
                        progress.advance()
                _as_they_come([f for pieces in futures for f in pieces])
                walked = {}
                for pieces in futures:
                    for future, _ in pieces:
                        for path, result, crash in future.result():
                            walked[path] = (result, crash)
                _merge(project, pending, walked)
        clock.append(time.perf_counter())  # fixpoint
        Stats.seconds = tuple(b - a for a, b in zip(clock, clock[1:]))
    except (OSError, BrokenProcessPool, pickle.PicklingError):
        # no worker could be started, or one died: the rest is built here, as the serial build does
        for path, source, digest in files:
            if path not in project.results and project.add_file(path, source=source, digest=digest) is None:
                added.append(path)
        keep_order(project, order)
        Stats.chunks = ()
        project.build(added)
        return added
    finally:
        for pool in pools:
            pool.shutdown(wait=True, cancel_futures=True)
    # the summaries in the serial build's order where it can be told: those there before, then each
    # file's in walk order (only a cap on the project pass's iterations could make the order matter)
    keys = before + [q for p in walk_order for q in project.results[p].functions]
    summaries = project.summaries
    project.summaries = {q: summaries[q] for q in dict.fromkeys(keys) if q in summaries}
    project.summaries.update(summaries)
    project._final = None
    return added


#: files per piece of work sent to a worker: the progress bar moves as each piece comes back
PIECE = 16


def _pieces(items: Sequence[str]) -> List[List[str]]:
    return [list(items[k:k + PIECE]) for k in range(0, len(items), PIECE)]


def _as_they_come(futures: Sequence[Tuple[concurrent.futures.Future, int]]) -> None:
    """Wait for every future, advancing the progress bar by each one's number of files as it completes
    (the results are read afterwards, in a fixed order)."""
    sizes = {future: n for future, n in futures}
    for future in concurrent.futures.as_completed(sizes):
        progress.advance(sizes[future])


def _merge(project: Project, order: Sequence[str], walked: Dict[str, tuple]) -> None:
    """Add the workers' results in the project's order (the summaries keep the serial build's order)."""
    for path in order:
        if path in walked:
            result, crash = walked[path]
            old = project.results.get(path)
            for qual in old.functions if old is not None else ():
                if qual not in result.functions:  # as Project.walk does
                    project.summaries.pop(qual, None)
            project.results[path] = result  # add_result, but the indexes stay as keep_order left them
            project._publish(result)
            if crash is not None:
                project.crashes[path] = crash
            else:
                project.crashes.pop(path, None)


def keep_order(project: Project, order: Optional[Sequence[str]]) -> None:
    """The results in the serial build's order (the project pass reads the call sites in that order),
    and each module name's index from the last of its files in that order, as add_file leaves it."""
    if order is not None:
        position = {p: i for i, p in enumerate(order)}
        project.results = dict(sorted(project.results.items(), key=lambda kv: position.get(kv[0], len(position))))
        for result in project.results.values():  # two files of one module name (scripts in folders
            project.indexes[result.module] = result.index  # that are not packages): the later one's
