"""A loaded project: every file's summaries (from the disk cache where fresh), kept for the process, refreshed.

Project mode (``check``, ``fix`` and the language server) analyses a file with the summaries of every
file of its project (:func:`load_project`: root = nearest ``pyproject.toml``/``setup.cfg``/``setup.py``/
``.git`` above, else the topmost package), cached on disk by content hash
(:mod:`inplace_lint.analysis.cache`). A file named alone (pre-commit) gets the same answer as a check
of the whole project.

The surfaces pass a :class:`ProjectMode` explicitly, down to :func:`inplace_lint.pipeline.check_source`
(which asks it for a file's findings); nothing travels in the environment, so worker processes get the
mode with the job they run.
"""
from __future__ import annotations

import ast
import gc
import hashlib
import os
import pathlib
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from .. import progress
from ..config import Settings
from ..findings import Finding
from ..source.files import read_source
from .kept import forget_disk_state  # noqa: F401  (the CLI starts each command with it)


@dataclass(frozen=True)
class ProjectMode:
    """Whether files are analysed with their project's summaries, and where the cache lives; the
    :class:`inplace_lint.pipeline.ProjectAnalysis` that :func:`inplace_lint.pipeline.check_source` asks."""

    enabled: bool = False
    use_cache: bool = True
    #: the cache directory, absolute (default: ``<project root>/.inplace_lint_cache``)
    cache_dir: Optional[str] = None

    def needs_tree(self, source: str, path: str, settings: Settings) -> bool:
        return project_needs_text(source, path, settings, self)

    def findings(self, source: str, path: str, settings: Settings,
                 tree: Optional[ast.Module]) -> Optional[List[Finding]]:
        return project_findings(source, path, settings, self, tree=tree)


#: project mode with the cache in its default place (``check``/``fix`` without cache flags, the server)
PROJECT = ProjectMode(enabled=True)


@dataclass
class _Loaded:
    project: "object"
    cache_file: Optional[pathlib.Path]
    entries: Dict[str, tuple]
    #: when the files on disk were last compared with what the project holds (time.monotonic())
    checked_at: float = 0.0
    #: the cache store, and the signature of the results the project holds when they were built to their
    #: fixpoint together (each file's findings are then kept for a later one-file check: ``Store.final``)
    store: "object" = None
    signature: Optional[str] = None


#: a loaded project compares its files with the disk again after this many seconds (a language server
#: lives long; a file saved by the editor or changed by git must reach the other files' findings)
REFRESH_AFTER_S = 2.0


def _refresh(loaded: _Loaded, build: bool) -> None:
    """Walk again the files of a loaded project that changed on disk since it was loaded."""
    import time

    now = time.monotonic()
    if now - loaded.checked_at < REFRESH_AFTER_S or loaded.project is None:
        return
    loaded.checked_at = now
    project = loaded.project
    changed = []
    for file, entry in list(loaded.entries.items()):
        try:
            st = os.stat(file)
        except OSError:
            continue
        if (st.st_mtime_ns, st.st_size) == entry[:2]:
            continue
        try:
            source = read_source(file)
        except (SyntaxError, UnicodeDecodeError, LookupError, OSError):
            continue
        loaded.entries[file] = (st.st_mtime_ns, st.st_size) + tuple(entry[2:])
        digest = _digest(source)
        result = project.results.get(file)
        if result is not None and result.digest == digest:
            continue
        if project.add_file(file, source=source, digest=digest) is None:
            changed.append(file)
    if changed:
        loaded.signature = None  # no longer the results the signature names
    if changed and build:
        project.build(changed)


_PROJECTS: Dict[tuple, _Loaded] = {}


_LAST_DIGEST: Tuple[Optional[str], str] = (None, "")


def _digest(source: str) -> str:
    """The content hash of a text (the last one is kept: a check asks twice for the same text)."""
    global _LAST_DIGEST
    if _LAST_DIGEST[0] is source:
        return _LAST_DIGEST[1]
    digest = hashlib.sha1(source.encode("utf-8", "surrogatepass")).hexdigest()
    _LAST_DIGEST = (source, digest)
    return digest


def project_files(root: pathlib.Path) -> List[str]:
    from ..source.files import iter_python_files

    return [os.path.abspath(p) for p in iter_python_files([str(root)], ()) if p.endswith(".py")]


def load_project(path: str, settings: Settings, mode: ProjectMode = PROJECT, build: bool = True,
                 jobs: int = 1):
    """The project ``path`` belongs to, with every file's summaries: :func:`_load_project`, with the cyclic
    garbage collector paused. Every tree stays alive while the project is built, and the collector
    scanned them again and again: half of a cold ``check -j 1`` on verl (4.0 CPU s with it, 2.1 without).
    The walk makes little cyclic garbage; what there is, is collected once the collector runs again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _load_project(path, settings, mode, build, jobs)
    finally:
        if enabled:
            gc.enable()


def _size(file: str) -> int:
    try:
        return os.stat(file).st_size
    except OSError:
        return 0


def _load_project(path: str, settings: Settings, mode: ProjectMode, build: bool = True, jobs: int = 1):
    """The project ``path`` belongs to, with every file's summaries (from the cache where it is fresh;
    the rest parsed and walked, and the cache written back). Kept for the life of the process.

    ``build=False`` (flake8): only what the cache holds; files it lacks or that changed are left out.
    Returns None when ``build`` is False and there is no cache.

    ``jobs > 1``: when at least :data:`inplace_lint.analysis.parallel_build.MIN_FILES` files must be
    walked, they are parsed and walked by up to that many worker processes
    (:func:`inplace_lint.analysis.parallel_build.build_parallel`; the same summaries and findings).
    """
    from ..analysis import cache as disk
    from ..analysis.project import TREE_SHARE, Project

    root, loose = _root_and_loose(path)
    key = _project_key(path, settings, mode, build)
    loaded = _PROJECTS.get(key)
    if loaded is not None:
        _refresh(loaded, build)
        return loaded.project
    store = manifest_file = None
    manifest: Dict[str, tuple] = {}
    settings_text = disk.settings_key(settings)
    if mode.use_cache and not loose:  # a loose script gets no cache folder beside it
        store = disk.Store.open(pathlib.Path(mode.cache_dir) if mode.cache_dir else disk.default_dir(root))
        if store is not None:
            manifest_file = store.manifest_path(root, settings_text)
            manifest = store.load_manifest(manifest_file)
    if not build and not manifest:
        _PROJECTS[key] = _Loaded(None, manifest_file, {})  # no cache: do not look again in this process
        return None
    project = Project(settings, root)
    here = os.path.abspath(path)
    files = [] if loose else project_files(root)
    if here not in files:
        files.append(here)
    if build and jobs <= 1:
        project.tree_budget = int(TREE_SHARE * sum(_size(f) for f in files))
    root_text = str(root)
    stats = disk.STATS
    to_walk = []
    deferred: List[Tuple[str, str, str]] = []
    #: file -> (mtime_ns, size, digest, object key, variant) of what the project holds from the cache
    fresh: Dict[str, tuple] = {}
    #: files whose result came from another project's walk (or an older run): checked for staleness
    borrowed: Dict[str, Tuple[str, Dict[str, object]]] = {}
    okeys: Dict[str, str] = {}
    with progress.stage("reading files" if jobs > 1 else "reading and parsing files", len(files)):
        for file in progress.counted(files):
            try:
                st = os.stat(file)
            except OSError:
                continue
            stats.seen += 1
            entry = manifest.get(file)
            if entry is not None and entry[0] == st.st_mtime_ns and entry[1] == st.st_size:
                result = _from_store(store, entry[3], entry[4], file, root_text)
                if result is not None:
                    project.add_result(result)
                    fresh[file] = entry
                    okeys[file] = entry[3]
                    stats.contents.add(entry[3])
                    continue
            if not build:
                continue
            try:
                source = read_source(file)
            except (SyntaxError, UnicodeDecodeError, LookupError, OSError):
                continue
            digest = _digest(source)
            if store is not None:
                okey = okeys[file] = disk.content_key(settings_text, *_module_name(file), digest)
                stats.contents.add(okey)
                variants = store.variants(okey)
                for variant, encoded in variants.items():
                    result = _from_store(store, okey, variant, file, root_text, encoded)
                    if result is not None:
                        project.add_result(result)
                        fresh[file] = (st.st_mtime_ns, st.st_size, digest, okey, variant)
                        if entry is None or entry[3:] != (okey, variant):
                            borrowed[file] = (okey, variants)
                        break
                if file in fresh:
                    continue
            if jobs > 1:
                deferred.append((file, source, digest))  # parsed by the workers (or below, when too few)
            elif project.add_file(file, source=source, digest=digest) is None:
                to_walk.append(file)
    built = False
    final_signature = None
    if deferred:
        from ..analysis import parallel_build

        workers = parallel_build.workers_for(len(deferred), jobs)
        if workers > 1:
            to_walk = parallel_build.build_parallel(project, deferred, workers, order=files)
            built = True
        else:
            with progress.stage("parsing files", len(deferred)):
                to_walk = [f for f, source, digest in progress.counted(deferred)
                           if project.add_file(f, source=source, digest=digest) is None]
            parallel_build.keep_order(project, files)
    if build and store is not None and not to_walk and not built and set(fresh) >= set(project.results):
        signature = disk.signature((project.results[f].module,) + fresh[f][3:] for f in project.results)
        if borrowed and store.validated(signature):
            borrowed = {}  # these very results were built to their fixpoint together before
        twin = _TWINS.get((signature, settings))
        if twin is not None and not borrowed:
            project.adopt_final(twin)  # another copy of this project, checked in this process
    if build:
        gone = any(f not in fresh for f in manifest)  # deleted since: what read its summaries may not hold
        if not to_walk and not built and (borrowed or gone):
            # nothing walked, so no fixpoint looks at them: a result made in another project (or before a
            # dependency changed) must still hold here, else another variant of its text, else a walk
            to_walk = _still_valid(project, borrowed, fresh, root_text, store, everything=gone)
        if not built:
            project.build(to_walk)  # walks to_walk, then again every file (borrowed ones too) that is stale
        reused = {file for file, entry in fresh.items() if project.results.get(file) is not None
                  and getattr(project.results[file], "_from_cache", None) == entry[3:]}
        stats.reused += len(reused)
        if store is not None:
            changed = set(fresh) != set(manifest) or any(manifest.get(f) != e for f, e in fresh.items())
            for file, result in project.results.items():
                if file in reused:
                    continue
                if file in project.crashes:
                    fresh.pop(file, None)  # never cache what a crashed walk left
                    changed = True
                    continue
                try:
                    st = os.stat(file)
                except OSError:
                    continue
                okey = okeys.get(file)
                if okey is None:
                    okey = disk.content_key(settings_text, result.module, result.index.is_package, result.digest)
                encoded = disk.encode_result(result, root_text)
                variant = disk.variant_id(encoded)
                store.put(okey, variant, encoded)
                store.remember(okey, variant, result, root_text)
                fresh[file] = (st.st_mtime_ns, st.st_size, result.digest, okey, variant)
                changed = True
            if not project.crashes and set(fresh) >= set(project.results):
                signature = disk.signature((project.results[f].module,) + fresh[f][3:] for f in project.results)
                store.validate(signature)
                _TWINS.setdefault((signature, settings), project)
                final_signature = signature if set(fresh) == set(project.results) else None
            with progress.stage("writing the cache", None):
                why = store.flush()
                if changed and why is None:
                    why = store.save_manifest(manifest_file, root, fresh)
            if why is not None:
                disk.note(f"cache not written: {why}")
            store.compact()
    import time

    _PROJECTS[key] = _Loaded(project, manifest_file, fresh, time.monotonic(), store, final_signature)
    # the project lives as long as the process: later collections (while every file is reported) need
    # not scan it again (on sglang, 1.8M lines, they took four fifths of a check); what it holds is
    # acyclic, so what an edit replaces is still freed by reference counting
    gc.freeze()
    return project


def _from_store(store, okey: str, variant: str, file: str, root: str, encoded=None):
    """The result ``variant`` of object ``okey`` decoded for ``file``; None when absent or not valid."""
    from ..analysis import cache as disk

    try:
        result = store.result(okey, variant, file, root, encoded)
    except KeyError:
        return None
    except disk.BadCache as exc:
        disk.note(f"ignored a cached result of {file}: {exc}; walked again")
        return None
    result._from_cache = (okey, variant)
    return result


def _still_valid(project, borrowed, fresh, root: str, store, everything: bool = False) -> List[str]:
    """Files whose result came from another walk than this project's last (another project, or a text
    seen before; with ``everything``, any file) and read a summary that differs here: another variant
    of the same text where one holds, else the file is to be walked again (returned, in the project's
    order)."""
    for _ in range(2):  # a variant swapped in may make another file's hold (or stop holding)
        swapped = False
        for file in project._ordered():
            if file not in borrowed or not project.stale(project.results[file]):
                continue
            okey, variants = borrowed[file]
            for variant, encoded in variants.items():
                if variant == fresh[file][4]:
                    continue
                result = _from_store(store, okey, variant, file, root, encoded)
                if result is not None and not project.stale(result):
                    project.add_result(result)
                    fresh[file] = fresh[file][:4] + (variant,)
                    swapped = True
                    break
        if not swapped:
            break
    return [f for f in project._ordered() if (everything or f in borrowed) and project.stale(project.results[f])]


#: (signature of its results, settings) -> a project loaded in this process: another copy of it (a fork
#: with the same files) takes its project pass (:meth:`~.analysis.project.Project.adopt_final`)
_TWINS: Dict[tuple, object] = {}
_ROOTS: Dict[str, Tuple[pathlib.Path, bool]] = {}


def _root_and_loose(path: str) -> Tuple[pathlib.Path, bool]:
    """:func:`~.analysis.resolve.find_root` and :func:`~.analysis.resolve.is_loose` of ``path``, once per
    path in this process (each resolves the path: a third of a warm check's time when asked per call)."""
    from ..analysis.resolve import find_root, is_loose

    absolute = os.path.abspath(path)  # a relative path names another file once the working folder changes
    hit = _ROOTS.get(absolute)
    if hit is None:
        folder = os.path.dirname(absolute)
        if os.path.isfile(path) and not os.path.islink(path):  # its folder decides (resolved once)
            hit = _ROOTS.get(folder + os.sep)
            if hit is None:
                hit = _ROOTS[folder + os.sep] = (find_root(path), is_loose(path))
        else:
            hit = (find_root(path), is_loose(path))
        _ROOTS[absolute] = hit
    return hit


_PACKAGES: Dict[str, str] = {}


def _module_name(path: str) -> Tuple[str, bool]:
    """:func:`~.analysis.resolve.module_name`, with each folder's package resolved once."""
    from ..analysis.resolve import module_name

    if os.path.islink(path):
        return module_name(path)
    folder, name = os.path.split(os.path.abspath(path))
    prefix = _PACKAGES.get(folder)
    if prefix is None:
        probe = module_name(os.path.join(folder, "__probe__.py"))[0]  # "pkg.sub.__probe__" or "__probe__"
        prefix = _PACKAGES[folder] = probe[:-len("__probe__")]
    if name == "__init__.py":
        return prefix[:-1] or "__init__", True
    return prefix + name[:-3] if name.endswith(".py") else module_name(path)[0], False


_KEEP_FUNCTION_WALKS = False


def keep_function_walks(enabled: bool = True) -> None:
    """A long-lived process (the language server): a buffer analysed again walks only the functions
    whose text (or what they read from the project) changed (:mod:`inplace_lint.analysis.incremental`)."""
    global _KEEP_FUNCTION_WALKS
    _KEEP_FUNCTION_WALKS = enabled


def _project_key(path: str, settings: Settings, mode: ProjectMode, build: bool) -> tuple:
    """What a loaded project is kept under in :data:`_PROJECTS`: its root (a loose file: itself) and how it was
    loaded."""
    root, loose = _root_and_loose(path)
    return os.path.abspath(path) if loose else str(root), settings, mode.use_cache, mode.cache_dir, build


def _loaded(path: str, settings: Settings, mode: ProjectMode, build: bool) -> Optional[_Loaded]:
    return _PROJECTS.get(_project_key(path, settings, mode, build))


def project_needs_text(source: str, path: str, settings: Settings, mode: ProjectMode = PROJECT,
                       build: bool = True) -> bool:
    """Whether :func:`project_findings` would parse ``source`` (the project holds other text for ``path``)."""
    from .kept import kept_final

    if kept_final(source, path, settings, mode) is not None:
        return False
    project = load_project(path, settings, mode, build)
    if project is None:
        return False
    result = project.results.get(os.path.abspath(path))
    return result is None or result.digest != _digest(source)


def project_findings(source: str, path: str, settings: Settings, mode: ProjectMode = PROJECT,
                     build: bool = True, tree: Optional[ast.Module] = None) -> Optional[List[Finding]]:
    """Findings of ``source`` (the text of ``path``, maybe unsaved) with its project's summaries.

    The language server calls this with an open buffer: the buffer replaces the file's entry (its
    dependents are walked again if its summaries changed). Returns None when the file does not parse
    (the caller reports the error) or, with ``build=False``, when there is no cache. ``tree``: the
    caller's ``ast.parse`` of ``source`` (not parsed again).
    """
    from .kept import kept_final

    final = kept_final(source, path, settings, mode)
    if final is not None:
        return final
    project = load_project(path, settings, mode, build)
    if project is None:
        return None
    here = os.path.abspath(path)
    digest = _digest(source)
    result = project.results.get(here)
    unchanged = result is not None and result.digest == digest
    if result is None or result.digest != digest:
        if _KEEP_FUNCTION_WALKS:
            project.keep_function_walks(here)
            project.keep_function_walks()  # and the files that depend on it, walked again after it
        loaded = _loaded(path, settings, mode, build)
        if loaded is not None:
            loaded.signature = None  # the project now holds other text for this file
        if project.add_file(here, source=source, tree=tree, digest=digest) is not None:
            return None
        project.build([here], follow=build)
    crash = project.crashes.get(here)
    if crash is not None:
        raise crash
    found = project.findings(here)
    loaded = _loaded(path, settings, mode, build)
    if unchanged and loaded is not None and loaded.signature and loaded.store is not None:
        root, _ = _root_and_loose(path)
        loaded.store.put_final(loaded.signature, here, str(root), found)
    return found


def prepare_projects(paths: Sequence[str], settings: Settings, mode: ProjectMode, jobs: Optional[int] = None) -> None:
    """Build (or refresh) and cache the projects of ``paths`` in this process, before worker processes
    start (``-j N``): each worker then reads the cache instead of walking every file again. A cold
    build of many files is itself split among ``jobs`` processes (default: one per core). Nothing to do
    unless ``mode`` is enabled."""
    if not mode.enabled:
        return
    from ..analysis.resolve import find_root, is_loose

    seen = set()
    for path in paths:
        root = find_root(path)
        if is_loose(path):
            continue  # analysed alone, in its worker
        if root not in seen:
            seen.add(root)
            project = load_project(path, settings, mode, jobs=jobs or os.cpu_count() or 1)
            if project is not None:
                # the project pass too (cached with the project, as the cache holds it): the workers forked
                # next inherit it instead of each computing it again (and it shows on the progress bar)
                project.finalize()
