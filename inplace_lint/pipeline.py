"""Check one file or source text: engine findings, filtered by selection and ``# noqa`` as flake8 does.

Two modes (the same findings on code that has no calls between files):

- **single file** (the library default, and flake8 without a cache): the file is analysed alone; calls
  between its own functions are followed;
- **project** (``check``, ``fix`` and the language server): the file is analysed with the summaries of
  every file of its project (:func:`load_project`: root = nearest ``pyproject.toml``/``setup.cfg``/
  ``setup.py``/``.git`` above, else the topmost package), cached on disk by content hash
  (:mod:`inplace_lint.analysis.cache`). A file named alone (pre-commit) gets the same answer as a
  check of the whole project.
"""
from __future__ import annotations

import ast
import hashlib
import os
import pathlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from . import config
from .adapters import noqa
from .analysis import analyze
from .config import Settings
from .adapters.files import read_source
from .findings import Finding


@dataclass
class FileResult:
    path: str
    findings: List[Finding] = field(default_factory=list)
    #: why the file could not be checked (it is then skipped, never rewritten)
    error: Optional[str] = None


def check_source(source: str, path: str, settings: Settings, select: Sequence[str] = (),
                 ignore: Sequence[str] = (), disable_noqa: bool = False,
                 project: Optional[bool] = None) -> FileResult:
    """Analyze ``source``; a file that does not parse gets ``error`` set and no findings.

    ``project``: analyse with the summaries of the rest of the file's project (default: the mode
    :func:`set_project_mode` chose, off unless a CLI command turned it on).
    """
    result = FileResult(path)
    mode = project_mode()
    use_project = mode.enabled if project is None else project
    found: Optional[List[Finding]] = None
    if use_project and os.path.isfile(path):
        found = project_findings(source, path, settings, mode)
    if found is None:
        try:
            tree = ast.parse(source, filename=path)
        except (SyntaxError, ValueError) as exc:
            result.error = describe_error(exc)
            return result
        found = analyze(tree, settings, path)
    if not found:
        return result  # no finding: no need to tokenize for noqa comments
    lines = source.splitlines(keepends=True)
    if not disable_noqa and noqa.file_is_exempt(lines):
        return result
    mapping = noqa.line_mapping(lines) if not disable_noqa else {}
    for finding in found:
        if not config.selected(finding.code, select, ignore):
            continue
        if not disable_noqa and noqa.suppressed(finding.code, finding.line, mapping, lines):
            continue
        result.findings.append(finding)
    return result


def check_file(path: str, settings: Settings, select: Sequence[str] = (), ignore: Sequence[str] = (),
               disable_noqa: bool = False, project: Optional[bool] = None) -> FileResult:
    try:
        source = read_source(path)
    except (SyntaxError, UnicodeDecodeError, OSError) as exc:
        return FileResult(path, error=describe_error(exc))
    return check_source(source, path, settings, select, ignore, disable_noqa, project)


@dataclass(frozen=True)
class CheckJob:
    """``check_file`` with fixed options, as one picklable callable for :func:`inplace_lint.adapters.parallel.run_files`."""

    settings: Settings
    select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    disable_noqa: bool = False
    per_file_ignores: config.PerFileIgnores = ()  # type: ignore[assignment]
    #: the folder ``per_file_ignores`` globs are relative to (the config file's)
    config_dir: Optional[pathlib.Path] = None

    def __call__(self, path: str) -> FileResult:
        ignore = list(self.ignore) + config.per_file_ignored(path, list(self.per_file_ignores), self.config_dir)
        return check_file(path, self.settings, self.select, ignore, self.disable_noqa)


def describe_error(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"cannot parse: {exc.msg} (line {exc.lineno}, column {exc.offset})"
    return f"cannot read: {exc}"


# --------------------------------------------------------------------------- project mode


@dataclass(frozen=True)
class ProjectMode:
    """Whether files are analysed with their project's summaries, and where the cache lives."""

    enabled: bool = False
    use_cache: bool = True
    #: the cache directory (default: ``<project root>/.inplace_lint_cache``)
    cache_dir: Optional[str] = None


_ENV_MODE = "INPLACE_LINT_PROJECT"
_ENV_NO_CACHE = "INPLACE_LINT_NO_CACHE"
_ENV_CACHE_DIR = "INPLACE_LINT_CACHE_DIR"


def set_project_mode(enabled: bool = True, use_cache: bool = True, cache_dir: Optional[str] = None) -> None:
    """Turn project mode on or off for this process and the worker processes it starts (``-j N``):
    the mode travels in environment variables, which every start method passes on."""
    os.environ[_ENV_MODE] = "1" if enabled else ""
    os.environ[_ENV_NO_CACHE] = "" if use_cache else "1"
    if cache_dir:
        os.environ[_ENV_CACHE_DIR] = os.path.abspath(cache_dir)
    else:
        os.environ.pop(_ENV_CACHE_DIR, None)


def project_mode() -> ProjectMode:
    return ProjectMode(bool(os.environ.get(_ENV_MODE)), not os.environ.get(_ENV_NO_CACHE),
                       os.environ.get(_ENV_CACHE_DIR) or None)


@dataclass
class _Loaded:
    project: "object"
    cache_file: Optional[pathlib.Path]
    entries: Dict[str, tuple]


_PROJECTS: Dict[tuple, _Loaded] = {}
#: cache key of the project pass's result (grad-off functions, parameter origins, call sites)
_FINAL = "\x00final"


def _digest(source: str) -> str:
    return hashlib.sha1(source.encode("utf-8", "surrogatepass")).hexdigest()


def project_files(root: pathlib.Path) -> List[str]:
    from .adapters.files import iter_python_files

    return [os.path.abspath(p) for p in iter_python_files([str(root)], ()) if p.endswith(".py")]


def load_project(path: str, settings: Settings, mode: Optional[ProjectMode] = None, build: bool = True):
    """The project ``path`` belongs to, with every file's summaries (from the cache where it is fresh;
    the rest parsed and walked, and the cache written back). Kept for the life of the process.

    ``build=False`` (flake8): only what the cache holds; files it lacks or that changed are left out.
    Returns None when ``build`` is False and there is no cache.
    """
    from .analysis import cache as disk
    from .analysis.project import Project, find_root

    mode = mode or project_mode()
    root = find_root(path)
    key = (str(root), settings, mode.use_cache, mode.cache_dir, build)
    loaded = _PROJECTS.get(key)
    if loaded is not None:
        return loaded.project
    cache_file = None
    entries: Dict[str, tuple] = {}
    if mode.use_cache:
        cache_dir = pathlib.Path(mode.cache_dir) if mode.cache_dir else disk.default_dir(root)
        cache_file = disk.cache_path(cache_dir, root, settings)
        entries = disk.load(cache_file)
    if not build and not entries:
        _PROJECTS[key] = _Loaded(None, cache_file, {})  # no cache: do not look again in this process
        return None
    project = Project(settings, root)
    files = project_files(root)
    here = os.path.abspath(path)
    if here not in files:
        files.append(here)
    to_walk = []
    fresh: Dict[str, tuple] = {}
    final = entries.pop(_FINAL, None)
    for file in files:
        try:
            st = os.stat(file)
        except OSError:
            continue
        entry = entries.get(file)
        if entry is not None and entry[0] == st.st_mtime_ns and entry[1] == st.st_size:
            project.add_result(entry[2])
            fresh[file] = entry
            continue
        if not build:
            final = None  # a file changed since the cache was written: the project pass is redone
            continue
        try:
            source = read_source(file)
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        digest = _digest(source)
        if entry is not None and entry[2].digest == digest:
            project.add_result(entry[2])
            fresh[file] = (st.st_mtime_ns, st.st_size, entry[2])
            continue
        if project.add_file(file, source=source, digest=digest) is None:
            to_walk.append(file)
    if build:
        project.build(to_walk)
        changed = bool(to_walk) or set(fresh) != set(entries)
        for file, result in project.results.items():
            if file in project.crashes:
                fresh.pop(file, None)  # never cache what a crashed walk left
                changed = True
                continue
            old = fresh.get(file)
            if old is None or old[2] is not result:
                try:
                    st = os.stat(file)
                except OSError:
                    continue
                fresh[file] = (st.st_mtime_ns, st.st_size, result)
                changed = True
        if not changed and final is not None:
            project._final = final  # the project pass over every file, as the last run left it
        elif cache_file is not None:
            disk.save(cache_file, {**fresh, _FINAL: project.finalize()})
    elif final is not None:
        project._final = final
    _PROJECTS[key] = _Loaded(project, cache_file, fresh)
    return project


def project_findings(source: str, path: str, settings: Settings, mode: Optional[ProjectMode] = None,
                     build: bool = True) -> Optional[List[Finding]]:
    """Findings of ``source`` (the text of ``path``, maybe unsaved) with its project's summaries.

    The language server calls this with an open buffer: the buffer replaces the file's entry (its
    dependents are walked again if its summaries changed). Returns None when the file does not parse
    (the caller reports the error) or, with ``build=False``, when there is no cache.
    """
    project = load_project(path, settings, mode, build)
    if project is None:
        return None
    here = os.path.abspath(path)
    digest = _digest(source)
    result = project.results.get(here)
    if result is None or result.digest != digest:
        if project.add_file(here, source=source, digest=digest) is not None:
            return None
        project.build([here], follow=build)
    crash = project.crashes.get(here)
    if crash is not None:
        raise crash
    return project.findings(here)


def prepare_projects(paths: Sequence[str], settings: Settings) -> None:
    """Build (or refresh) and cache the projects of ``paths`` in this process, before worker processes
    start (``-j N``): each worker then reads the cache instead of walking every file again."""
    mode = project_mode()
    if not mode.enabled:
        return
    from .analysis.project import find_root

    seen = set()
    for path in paths:
        root = find_root(path)
        if root not in seen:
            seen.add(root)
            load_project(path, settings, mode)
