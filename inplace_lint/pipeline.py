"""Check one file or source text: engine findings, filtered by selection and ``# noqa`` as flake8 does.

A file that cannot be checked (it cannot be read, is not valid in its encoding, does not parse, or is
nested too deeply for Python's parser) gets one :class:`Problem` with code :data:`CANNOT_CHECK`
(``IPV000``) at the place Python names, in the shape of a finding, so every output format (text,
JSON, SARIF, GitHub annotations, the language server) shows it where it is.

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
import gc
import hashlib
import os
import pathlib
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple

from . import config, progress, textpos
from .source import noqa
from .analysis import analyze, fixplan
from .config import Settings
from .source.files import decode, read_bytes, read_source
from .findings import Finding


#: the code of a file that could not be checked; never selected away, never suppressed by ``# noqa``
CANNOT_CHECK = "IPV000"
CANNOT_CHECK_NAME = "cannot-check-file"
CANNOT_CHECK_SUMMARY = ("The file could not be read or parsed (a syntax error, bytes that are not valid in its "
                        "encoding, nesting too deep for Python's parser); nothing in it was checked.")


@dataclass(frozen=True)
class Problem:
    """Why a file could not be checked, shaped like a :class:`~inplace_lint.findings.Finding` (the
    attributes the reporters read). ``line`` is 1-based, ``col`` 0-based in UTF-8 bytes (as ``ast``)."""

    line: int
    col: int
    message: str
    code: str = CANNOT_CHECK
    fix: None = None
    no_fix: str = ""
    related: Tuple = ()
    #: False when Python names no place (a missing file, nesting too deep): reported at 1:1
    located: bool = True

    @property
    def end_line(self) -> int:
        return self.line

    @property
    def end_col(self) -> int:
        return self.col

    @property
    def text(self) -> str:
        return f"{self.code} {self.message}"


@dataclass
class FileResult:
    path: str
    findings: List[Finding] = field(default_factory=list)
    #: why the file could not be checked (it is then skipped, never rewritten)
    error: Optional[str] = None
    #: the same, located: the line and column Python names
    problem: Optional[Problem] = None

    def fail(self, problem: Problem) -> "FileResult":
        self.problem = problem
        where = f" (line {problem.line}, column {problem.col + 1})" if problem.located else ""
        self.error = problem.message + where
        return self


def check_source(source: str, path: str, settings: Settings, select: Sequence[str] = (),
                 ignore: Sequence[str] = (), disable_noqa: bool = False, fix_style: Optional[str] = None,
                 memory_aware: bool = False, project: Optional[bool] = None,
                 target: Tuple[Optional[Tuple[int, int]], Optional[Tuple[int, int]]] = (None, None)) -> FileResult:
    """Analyze ``source``; a file that does not parse gets ``error`` set and no findings.

    With ``fix_style`` (a name in ``config.FIX_STYLES``) each planned fix gets its edits in that
    style, from one codemod pass over the file (:func:`inplace_lint.fix.attach.attach_edits`); a plan
    the codemod cannot write loses its fix. Without it (text output, flake8) libcst is never imported.

    ``project``: analyse with the summaries of the rest of the file's project (default: the mode
    :func:`set_project_mode` chose, off unless a CLI command turned it on). ``target``: (Python, torch)
    versions that override the floor the file's project states (:mod:`inplace_lint.floor`), which decides
    what the edits may import."""
    result = FileResult(path)
    use_project = project_mode().enabled if project is None else project
    findings: Optional[List[Finding]] = None
    tree: Optional[ast.Module] = None
    if use_project and os.path.isfile(path):
        if project_needs_text(source, path, settings):  # parsed once, here, and handed to the project
            try:
                tree = ast.parse(source, filename=path)
            except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
                return result.fail(parse_problem(exc, source))
        findings = project_findings(source, path, settings, tree=tree)
        if findings is not None and not findings:
            return result  # nothing to report: no need to parse
    try:
        if tree is None:
            tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return result.fail(parse_problem(exc, source))
    if findings is None:
        findings = analyze(tree, settings, path)
    if not findings:
        return result
    lines = textpos.split_lines(source)  # as ast numbers them (str.splitlines also breaks at form feeds)
    # flake8's noqa line mapping tokenizes the file (it cost more than the analysis): only where a
    # finding is, and only when a comment could suppress something
    may_suppress = not disable_noqa and "noqa" in source.lower()
    if may_suppress and noqa.file_is_exempt(lines):
        return result
    mapping = noqa_mapping(tree, lines, {f.line for f in findings}) if may_suppress else {}
    for finding in findings:
        if not config.selected(finding.code, select, ignore):
            continue
        if may_suppress and noqa.suppressed(finding.code, finding.line, mapping, lines):
            continue
        result.findings.append(finding)
    # whether the rewriter can write each planned fix is decided here, once, for every surface
    result.findings = fixplan.withdraw_unwritable(tree, result.findings)
    if fix_style is not None and any(f.fix is not None for f in result.findings):
        from . import floor
        from .fix.attach import attach_edits

        stated = floor.for_path(path).override(*target)
        result.findings = attach_edits(source, tree, result.findings, fix_style, memory_aware, stated.torch)
    return result


def noqa_mapping(tree: ast.Module, lines: Sequence[str], wanted: Set[int]) -> Dict[int, str]:
    """flake8's noqa line mapping (:func:`inplace_lint.source.noqa.line_mapping`) for the ``wanted``
    lines, tokenizing only the top-level statements that hold them: a top-level statement starts a
    logical line at column 0, so tokenizing from there gives the same logical lines as from the top
    of the file (statements that share a line, ``a = 1; b = 2``, are taken together)."""
    groups: List[List[int]] = []  # [first line, last line] of runs of top-level statements
    for stmt in tree.body:
        start = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])
        end = stmt.end_lineno or stmt.lineno
        if groups and start <= groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], end)
        else:
            groups.append([start, end])
    mapping: Dict[int, str] = {}
    for start, end in groups:
        if any(start <= line <= end for line in wanted):
            part = noqa.line_mapping(lines[start - 1:end])
            mapping.update({line + start - 1: text for line, text in part.items()})
    return mapping


def check_file(path: str, settings: Settings, select: Sequence[str] = (), ignore: Sequence[str] = (),
               disable_noqa: bool = False, fix_style: Optional[str] = None,
               project: Optional[bool] = None,
               target: Tuple[Optional[Tuple[int, int]], Optional[Tuple[int, int]]] = (None, None)) -> FileResult:
    try:
        raw = read_bytes(path)  # a FIFO or device is refused, never read
    except OSError as exc:
        return FileResult(path).fail(Problem(1, 0, f"cannot read: {exc.strerror or exc}", located=False))
    try:
        source = decode(raw)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        return FileResult(path).fail(decode_problem(exc, raw))
    return check_source(source, path, settings, select, ignore, disable_noqa, fix_style=fix_style, project=project,
                        target=target)


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
    #: attach each fix's edits in this style (JSON, SARIF); None: plans only (text)
    fix_style: Optional[str] = None
    #: (Python, torch) overriding the floor each file's project states (``--target-version``, ``--torch-version``)
    target: Tuple[Optional[Tuple[int, int]], Optional[Tuple[int, int]]] = (None, None)

    def __call__(self, path: str) -> FileResult:
        ignore = list(self.ignore) + config.per_file_ignored(path, list(self.per_file_ignores), self.config_dir)
        return check_file(path, self.settings, self.select, ignore, self.disable_noqa, fix_style=self.fix_style,
                          target=self.target)


def _byte_col(source: str, line: int, char_offset: Optional[int]) -> int:
    """0-based UTF-8 byte column of a 1-based character ``offset`` on ``line`` (SyntaxError's)."""
    text = textpos.line_text(textpos.split_lines(source), line)
    chars = max((char_offset or 1) - 1, 0)
    return len(text[:chars].encode("utf-8", "surrogatepass"))


def parse_problem(exc: BaseException, source: str) -> Problem:
    """Where and why ``ast.parse`` refused ``source``: the line and column CPython names."""
    if isinstance(exc, (RecursionError, MemoryError)):
        # CPython's own words for it (``compile`` says "maximum recursion depth exceeded during
        # compilation"): the file is valid Python nested deeper than the parser's C stack allows
        return Problem(1, 0, f"cannot parse: too deeply nested for Python's parser ({exc or type(exc).__name__})",
                       located=False)
    if isinstance(exc, SyntaxError) and exc.lineno:
        line = exc.lineno
        return Problem(line, _byte_col(source, line, exc.offset), f"cannot parse: {exc.msg}")
    msg = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    nul = source.find("\0")
    if nul >= 0:  # "source code string cannot contain null bytes": CPython names no line
        line = source.count("\n", 0, nul) + 1
        start = source.rfind("\n", 0, nul) + 1
        return Problem(line, len(source[start:nul].encode("utf-8", "surrogatepass")), f"cannot parse: {msg}")
    return Problem(1, 0, f"cannot parse: {msg}")


#: PEP 263's encoding declaration (on line 1 or 2)
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
#: what to do about a file that is not UTF-8 and declares no encoding (https://peps.python.org/pep-0263/)
UNDECLARED_HINT = ("a file without an encoding declaration must be UTF-8: save it as UTF-8, or declare its "
                   "encoding on line 1 or 2, e.g. '# -*- coding: latin-1 -*-'")


def decode_problem(exc: BaseException, raw: bytes) -> Problem:
    """Where and why ``raw`` is not text in its declared encoding: the first bad byte's line and column
    (and, when no encoding is declared, how to declare one)."""
    if isinstance(exc, SyntaxError) and exc.lineno is None and "encoding declaration" in (exc.msg or ""):
        try:  # tokenize.detect_encoding met a non-UTF-8 byte on line 1 or 2 and names no place: find it
            raw.decode("utf-8")
        except UnicodeDecodeError as inner:
            exc = inner
    if isinstance(exc, UnicodeDecodeError):
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1)
        bad = raw[exc.start:exc.end]
        shown = " ".join(f"0x{b:02x}" for b in bad[:4])
        declared = any(_CODING.match(text) for text in raw.splitlines()[:2])
        hint = "" if declared or exc.encoding.replace("-", "").lower() != "utf8" else f"; {UNDECLARED_HINT}"
        return Problem(line, col, f"cannot read: byte {shown} is not valid {exc.encoding} ({exc.reason}){hint}")
    if isinstance(exc, SyntaxError):  # a bad encoding cookie or BOM mismatch (tokenize.detect_encoding)
        return Problem(exc.lineno or 1, 0, f"cannot read: {exc.msg}")
    return Problem(1, 0, f"cannot read: {exc}")


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
    #: when the files on disk were last compared with what the project holds (time.monotonic())
    checked_at: float = 0.0


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
    from .source.files import iter_python_files

    return [os.path.abspath(p) for p in iter_python_files([str(root)], ()) if p.endswith(".py")]


def load_project(path: str, settings: Settings, mode: Optional[ProjectMode] = None, build: bool = True,
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


def _load_project(path: str, settings: Settings, mode: Optional[ProjectMode] = None, build: bool = True,
                  jobs: int = 1):
    """The project ``path`` belongs to, with every file's summaries (from the cache where it is fresh;
    the rest parsed and walked, and the cache written back). Kept for the life of the process.

    ``build=False`` (flake8): only what the cache holds; files it lacks or that changed are left out.
    Returns None when ``build`` is False and there is no cache.

    ``jobs > 1``: when at least :data:`inplace_lint.analysis.parallel_build.MIN_FILES` files must be
    walked, they are parsed and walked by up to that many worker processes
    (:func:`inplace_lint.analysis.parallel_build.build_parallel`; the same summaries and findings).
    """
    from .analysis import cache as disk
    from .analysis.project import Project

    mode = mode or project_mode()
    root, loose = _root_and_loose(path)
    key = (os.path.abspath(path) if loose else str(root), settings, mode.use_cache, mode.cache_dir, build)
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
    if deferred:
        from .analysis import parallel_build

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
            with progress.stage("writing the cache", None):
                why = store.flush()
                if changed and why is None:
                    why = store.save_manifest(manifest_file, root, fresh)
            if why is not None:
                disk.note(f"cache not written: {why}")
            store.compact()
    import time

    _PROJECTS[key] = _Loaded(project, manifest_file, fresh, time.monotonic())
    # the project lives as long as the process: later collections (while every file is reported) need
    # not scan it again (on sglang, 1.8M lines, they took four fifths of a check); what it holds is
    # acyclic, so what an edit replaces is still freed by reference counting
    gc.freeze()
    return project


def _from_store(store, okey: str, variant: str, file: str, root: str, encoded=None):
    """The result ``variant`` of object ``okey`` decoded for ``file``; None when absent or not valid."""
    from .analysis import cache as disk

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
    """:func:`~.analysis.project.find_root` and :func:`~.analysis.project.is_loose` of ``path``, once per
    path in this process (each resolves the path: a third of a warm check's time when asked per call)."""
    from .analysis.project import find_root, is_loose

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
    """:func:`~.analysis.project.module_name`, with each folder's package resolved once."""
    from .analysis.project import module_name

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


def project_needs_text(source: str, path: str, settings: Settings, mode: Optional[ProjectMode] = None,
                       build: bool = True) -> bool:
    """Whether :func:`project_findings` would parse ``source`` (the project holds other text for ``path``)."""
    project = load_project(path, settings, mode, build)
    if project is None:
        return False
    result = project.results.get(os.path.abspath(path))
    return result is None or result.digest != _digest(source)


def project_findings(source: str, path: str, settings: Settings, mode: Optional[ProjectMode] = None,
                     build: bool = True, tree: Optional[ast.Module] = None) -> Optional[List[Finding]]:
    """Findings of ``source`` (the text of ``path``, maybe unsaved) with its project's summaries.

    The language server calls this with an open buffer: the buffer replaces the file's entry (its
    dependents are walked again if its summaries changed). Returns None when the file does not parse
    (the caller reports the error) or, with ``build=False``, when there is no cache. ``tree``: the
    caller's ``ast.parse`` of ``source`` (not parsed again).
    """
    project = load_project(path, settings, mode, build)
    if project is None:
        return None
    here = os.path.abspath(path)
    digest = _digest(source)
    result = project.results.get(here)
    if result is None or result.digest != digest:
        if _KEEP_FUNCTION_WALKS:
            project.keep_function_walks(here)
            project.keep_function_walks()  # and the files that depend on it, walked again after it
        if project.add_file(here, source=source, tree=tree, digest=digest) is not None:
            return None
        project.build([here], follow=build)
    crash = project.crashes.get(here)
    if crash is not None:
        raise crash
    return project.findings(here)


def prepare_projects(paths: Sequence[str], settings: Settings, jobs: Optional[int] = None) -> None:
    """Build (or refresh) and cache the projects of ``paths`` in this process, before worker processes
    start (``-j N``): each worker then reads the cache instead of walking every file again. A cold
    build of many files is itself split among ``jobs`` processes (default: one per core)."""
    mode = project_mode()
    if not mode.enabled:
        return
    from .analysis.project import find_root, is_loose

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
