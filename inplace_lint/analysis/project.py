"""The project fixpoint: every file walked until the summaries settle, and the ModuleContext each walk reads.

1. **Index** every file (top level only: imports, functions, classes and their methods and bases).
2. **Walk** every file with :mod:`.dataflow`, importing files first; each function leaves a summary
   (:mod:`.summaries`) and each call of an in-project function a :class:`~.summaries.CallSite`.
   A file whose walk read a summary that changed afterwards is walked again (at most
   ``_MAX_ROUNDS`` rounds; recursion and import cycles converge or stop there).
3. **Across calls** (no walking): :mod:`.across_calls` (grad-off functions, parameter origins,
   fix safety from callers).

Each walk reads the project through a :class:`ModuleContext` (the :class:`~.context.AnalysisContext`
the interpreter sees), which records what the walk depended on. Names, classes and dispatch are
:mod:`.resolve`'s; where call resolution is sound and where it guesses is in ``docs/analysis.md``.
"""
from __future__ import annotations

import ast
import hashlib
import pathlib
import re
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Tuple

from .. import progress
from ..config import DEFAULT_SETTINGS, Settings
from .across_calls import AcrossCalls
from .astutil import dotted_name, walk_ast
from . import tables
from .strings import STRINGS
from .dataflow import walk_module
from .incremental import FunctionCache
from .relevance import bodies_needed
from .resolve import ABSENT, CLASS_FACTS, DISPATCH, Resolver, targets_digest, imported_files, index_module, module_name, post_order
from .summaries import CallSite, FileResult, FunctionSummary, ModuleIndex

_MAX_ROUNDS = 3
#: the share of a project's source text whose trees a one-shot check keeps from indexing to walking
#: (:attr:`Project.tree_budget`): every tree at once was 1.28 MB per 1,000 lines at peak, none 0.31 (issue 20's
#: budget is 1); this share keeps the peak near 0.7 and parses that share of the files once instead of twice
TREE_SHARE = 0.5


class Project(Resolver, AcrossCalls):
    """Indexes, summaries and call sites of a set of files (a project, or one file alone)."""

    def __init__(self, settings: Settings = DEFAULT_SETTINGS, root: Optional[pathlib.Path] = None) -> None:
        self.settings = settings
        self.root = root
        self.indexes: Dict[str, ModuleIndex] = {}
        self.results: Dict[str, FileResult] = {}
        self.summaries: Dict[str, FunctionSummary] = {}
        self.nested_params: Dict[str, Tuple[Tuple[str, ...], bool]] = {}
        self._trees: Dict[str, ast.Module] = {}
        #: the text each file was added with (a tree let go after its walk is parsed again from it)
        self._texts: Dict[str, str] = {}
        #: let a file's tree go as soon as it is indexed (a one-shot check of a whole project, where the trees
        #: of every file at once were most of the peak memory), not only after its walk
        self.lean = True
        #: with ``lean``: how many characters of source may keep their trees from indexing to their walk (each
        #: kept tree saves parsing that file again; the loader sets it to a share of the project's text, so the
        #: peak memory stays a bounded share of what every tree at once would take: :data:`TREE_SHARE`)
        self.tree_budget = 0
        #: a file analysed alone (flake8 without a cache): walk at the end only the bodies a finding can come from
        #: (:func:`.relevance.bodies_needed`); the others are walked when a caller asks for their summary
        self.bodies_on_demand = False
        #: with ``bodies_on_demand``: what :func:`.relevance.bodies_needed` gave for a file, when the caller asked it
        #: already (taken at the file's first walk)
        self.needed: Dict[str, Optional[FrozenSet[str]]] = {}
        #: files whose walk raised (a bug): :func:`inplace_lint.workspace.project_findings` re-raises it
        self.crashes: Dict[str, BaseException] = {}
        self._final = None
        #: the inputs of the last project pass and its result (:meth:`finalize`): an edit that leaves
        #: every call site and grad-off declaration as it was reuses it (the language server, per keystroke)
        self._final_memo: Optional[tuple] = None
        #: :meth:`_ordered`'s answer, until a file is added or its module or imports change
        self._order: Optional[List[str]] = None
        #: file -> the modules its functions import (``from pkg.mod import f`` inside a function): read for the
        #: walking order only, not for names (:func:`lazy_imports`)
        self._lazy_imports: Dict[str, List[str]] = {}
        #: files (open buffers) whose functions' walks are kept and reused (:mod:`.incremental`), and their text
        self._function_caches: Dict[str, object] = {}
        self._sources: Dict[str, str] = {}
        #: every file walked from now on keeps its function walks (the files that depend on a buffer)
        self._walks_everywhere = False
        #: class -> its direct in-project subclasses, and :meth:`dispatch`'s answers: computed once,
        #: dropped when a file's classes, bases or imports change (:meth:`_classes_changed`)
        self._subclass_map: Optional[Dict[str, Tuple[str, ...]]] = None
        self._dispatch_memo: Dict[Tuple[str, str], Tuple[Tuple[str, bool], ...]] = {}
        self._class_facts_memo = None
        #: plan a fix for each finding (and what a fix needs: where a returned tensor is also kept). Off for a
        #: surface that shows only findings (flake8): the findings are the same, each with ``fix=None``
        self.plan_fixes = True

    # ---- building

    def add_file(self, path: str, source: Optional[str] = None, tree: Optional[ast.Module] = None,
                 module: Optional[str] = None, digest: Optional[str] = None) -> Optional[str]:
        """Parse and index one file; returns an error message when it cannot be parsed."""
        if module is None:
            module, is_package = module_name(path)
        else:
            is_package = path.endswith("__init__.py")
        if tree is None:
            try:
                if source is None:
                    from ..source.files import read_source
                    source = read_source(path)
                tree = ast.parse(source, filename=path)
            except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, OSError, RecursionError,
                    MemoryError) as exc:
                return str(exc) or type(exc).__name__
        if digest is None:
            digest = hashlib.sha1((source or "").encode("utf-8", "surrogatepass")).hexdigest() if source else ""
        index = index_module(tree, module, path, is_package, source)
        if self._walks_everywhere or path in self._function_caches:
            if source is not None:
                self._sources[path] = source
            else:
                self._sources.pop(path, None)
        old = self.results.get(path)
        lazy = lazy_imports(source, module, is_package) if source else []
        if old is None or old.module != module or old.index.imports != index.imports \
                or self._lazy_imports.get(path) != lazy:
            self._order = None
        self._lazy_imports[path] = lazy
        if old is None or old.module != module or old.index.imports != index.imports \
                or old.index.classes != index.classes or old.index.shared_fields != index.shared_fields \
                or old.index.torch_function_classes != index.torch_function_classes \
                or old.index.output_hooks != index.output_hooks or old.index.scripted != index.scripted:
            self._classes_changed()
        if old is not None:  # new text of a file (an edited buffer): what it no longer defines is gone
            for qual in old.functions:
                if not _defines(index, module, qual):
                    self.summaries.pop(qual, None)
                    self.nested_params.pop(qual, None)
        self.indexes[module] = index
        self._trees[path] = tree
        if source is not None:
            self._texts[path] = source
            if self.lean:
                if len(source) <= self.tree_budget:
                    self.tree_budget -= len(source)  # kept until its walk: not parsed a second time
                else:
                    self._let_go(path)  # parsed again when walked: never every tree of a project at once
        else:
            self._texts.pop(path, None)
        self.results[path] = FileResult(path, module, digest, index)
        self._final = None
        return None

    def keep_function_walks(self, path: Optional[str] = None) -> None:
        """Walk ``path`` again function by function: a function whose text, scope and every answer its
        walk read are unchanged is not walked again (:mod:`.incremental`; the language server's buffers).
        Without ``path``: every file walked from now on (the files that read a buffer's summaries)."""
        if path is None:
            self._walks_everywhere = True
        elif path not in self._function_caches:
            self._function_caches[path] = FunctionCache()

    def add_result(self, result: FileResult) -> None:
        """A file's result read from the cache (its tree is not needed unless it must be walked again)."""
        self._order = None
        self._classes_changed()
        self.indexes[result.module] = result.index
        self.results[result.path] = result
        self._publish(result)

    def _publish(self, result: FileResult) -> None:
        for qual, summary in result.functions.items():
            self.summaries[qual] = summary
            self.nested_params[qual] = (summary.params, summary.static)

    def walk(self, path: str) -> FileResult:
        old = self.results[path]
        if path not in self._trees and path not in self._texts:  # read from the cache: read and index it now
            self.add_file(path, module=old.module)
        tree = self._trees.get(path)
        if tree is None and path in self._texts:  # let go after indexing: parsed again from its text
            try:
                tree = ast.parse(self._texts[path], filename=path)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return old
        if tree is None:
            return old
        ctx = ModuleContext(self, old.module, path, old.index.is_package)
        if self.bodies_on_demand:
            ctx.needed = self.needed.pop(path) if path in self.needed else bodies_needed(tree)
        cache = self._function_caches.get(path)
        if cache is None and self._walks_everywhere and path in self._sources:
            cache = self._function_caches[path] = FunctionCache()
        if cache is not None and path in self._sources:
            ctx.function_walk = cache.start(tree, self._sources[path], ctx)
        package = old.module if old.index.is_package else old.module.rpartition(".")[0]
        try:
            sink = walk_module(tree, self.settings, ctx, old.module, package)
        except Exception as exc:  # a bug in the analysis: this file is reported as crashed, not the project
            self.crashes[path] = exc
            return old
        self.crashes.pop(path, None)
        result = FileResult(path, old.module, old.digest, old.index, dict(ctx.functions), ctx.call_sites(),
                            list(sink.values()), ctx.deps)
        for qual in old.functions:
            if qual not in result.functions:
                self.summaries.pop(qual, None)
        self.results[path] = result
        self._publish(result)
        self._final = None
        return result

    def stale(self, result: FileResult) -> bool:
        for qual, seen in result.deps.items():
            if qual.startswith((DISPATCH, tables.TABLE, STRINGS)):  # an override, a table's items, a string function
                if _dispatch_text(self, qual) != seen:
                    return True
                continue
            if qual == CLASS_FACTS:  # a tensor subclass or a forward sharing fields appeared or went
                if repr(self.class_facts()) != seen:
                    return True
                continue
            summary = self.summaries.get(qual)
            if seen == ABSENT:
                if summary is not None:  # a function the walk could not find is defined now
                    return True
            elif (summary.digest() if summary else "") != seen:
                return True
        return False

    def build(self, to_walk: Optional[Iterable[str]] = None, follow: bool = True) -> None:
        """Walk the files that need it (all files with no result yet), then again those that read a
        summary that changed, until nothing changes (at most ``_MAX_ROUNDS`` rounds). ``follow=False``
        walks ``to_walk`` once and leaves the files that depend on them as they are."""
        pending = [p for p in (to_walk if to_walk is not None else self.results) if p in self.results]
        if not pending:
            return  # results read from a consistent cache: nothing changed, nothing is stale
        wanted = set(pending)
        pending = [p for p in self._ordered() if p in wanted]
        for round_ in range(_MAX_ROUNDS):
            # the first round walks every file; each later one, the files that read a summary made since
            with progress.stage("walking files" if round_ == 0 else f"fixpoint (walking again, round {round_})",
                                len(pending)):
                for path in progress.counted(pending):
                    self.walk(path)
                    self._let_go(path)
            if not follow:
                break
            pending = [p for p in self._ordered() if self.stale(self.results[p])]
            if not pending:
                break

    def _let_go(self, path: str) -> None:
        """Drop a walked file's tree when its text is kept (a later round parses it again, which few files
        need): the trees of a whole project at once were most of the peak memory (1.3 MB per 1,000 lines).
        An editor's files (walked function by function) keep theirs."""
        if path in self._texts and path not in self._function_caches and not self._walks_everywhere:
            self._trees.pop(path, None)

    def _ordered(self) -> List[str]:
        """Files with the modules they import first (depth-first post-order; cycles cut anywhere)."""
        if self._order is None or len(self._order) != len(self.results):
            self._order = self._compute_order()
        return self._order

    def _compute_order(self) -> List[str]:
        by_module = {r.module: p for p, r in self.results.items()}
        return post_order({p: imported_files(list(r.index.imports.values()) + self._lazy_imports.get(p, []), p,
                                             by_module) for p, r in self.results.items()})


#: an import statement inside a function or method (indented): ``from .kernels import f``, ``import pkg.mod``
#: (anchored on the newline, not ``^`` with ``re.M``: a literal the scanner finds fast, 2.6x; an indented line is never first)
_LAZY_IMPORT = re.compile(r"\n[ \t]+(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t(]+(\w+)|import[ \t]+([\w.]+))")


def lazy_imports(source: str, module: str, is_package: bool) -> List[str]:
    """What a file's indented imports name (``pkg.mod.f``), relative ones resolved: a function that imports a
    module when it runs (to avoid an import cycle, or a heavy import) calls into it, so walking that module
    first saves walking the function again once the module's summaries exist (verl 0.9.1: most of the second
    round). Read from the text: no walk of the function bodies."""
    package = module if is_package else module.rpartition(".")[0]
    out = []
    for dots, base, name, plain in _LAZY_IMPORT.findall(source):
        if plain:
            out.append(plain)
            continue
        if dots:
            parts = package.split(".") if package else []
            parts = parts[:len(parts) - (len(dots) - 1)] if len(dots) > 1 else parts
            base = ".".join(parts + ([base] if base else []))
        out.append(f"{base}.{name}" if base else name)
    return out


def _dispatch_text(project: Project, key: str) -> str:
    if not key.startswith(DISPATCH):
        return tables.dep_text(project.indexes, key)  # (a table's items, whether a function returns a string)
    cls_qual, _, name = key[len(DISPATCH):].partition("\x00")
    return targets_digest(project.dispatch(cls_qual, name))


def _defines(index: ModuleIndex, module: str, qual: str) -> bool:
    """Whether the module still defines the function ``qual`` (its top-level function or class method;
    a function nested in one that is still there counts as there)."""
    if not qual.startswith(module + "."):
        return False
    parts = qual[len(module) + 1:].split(".")
    if parts[0] in index.functions:
        return True
    cls = index.classes.get(parts[0])
    return cls is not None and len(parts) > 1 and parts[1] in cls[1]


_TORCHSCRIPT = re.compile(r"jit\.script|torch\.jit\s+import")
#: how many deferred function bodies may be walked inside one another (each nests a whole walk on the stack)
_MAX_DEMAND_DEPTH = 16


class ModuleContext(tables.IndexAnswers):
    """What one file's walk reads from and leaves in the project (an :class:`~.context.AnalysisContext`)."""

    def __init__(self, project: Project, module: str, path: str, is_package: bool = False) -> None:
        self.project = project
        self.module = module
        self.path = path
        self.functions: Dict[str, FunctionSummary] = {}
        self.calls: List[CallSite] = []
        self.deps: Dict[str, str] = {}
        self.params: Dict[str, Tuple[Tuple[str, ...], bool]] = {}
        #: resolutions of names to in-project functions (builtins like `len` are looked up once)
        self._functions: Dict[str, Optional[Tuple[str, int]]] = {}
        #: an open buffer's walk that reuses unchanged functions (:mod:`.incremental`), else None
        self.function_walk = None
        #: whether findings get fixes planned (:attr:`Project.plan_fixes`)
        self.plan_fixes = project.plan_fixes
        #: functions of this file whose bodies are walked on demand (:meth:`defer`), and how deep that nests
        self._deferred: Dict[str, Callable[[], None]] = {}
        self._demand_depth = 0
        #: the deferred bodies :meth:`finish` walks (their names under the module), None: all
        self.needed: Optional[FrozenSet[str]] = None
        self._scripts: Optional[bool] = None

    def defer(self, qual: str, walk_body: Callable[[], None]) -> None:
        """Walk the body of ``qual`` (a function or method defined at the top of the file or of a top-level
        class) when a caller first asks for its summary, else at :meth:`finish`: a caller above its callee
        then reads the callee's summary on the first walk, instead of walking the whole file again. A second
        ``def`` of the same name walks the first one's body now (each body is walked once)."""
        earlier = self._deferred.pop(qual, None)
        if earlier is not None:
            earlier()
        self._deferred[qual] = walk_body

    def finish(self) -> None:
        """Walk the deferred bodies nobody asked for, in the order they were defined (with :attr:`needed`, those
        named there, and the others only where a walk read their summary as missing)."""
        if self.needed is None:
            while self._deferred:
                qual = next(iter(self._deferred))
                self._deferred.pop(qual)()
            return
        # only the bodies a finding can come from (:mod:`.relevance`); the others stay deferred, so a needed body
        # that asks for one's summary walks it then
        for qual in [q for q in self._deferred if q[len(self.module) + 1:] in self.needed]:
            walk_body = self._deferred.pop(qual, None)
            if walk_body is not None:
                walk_body()
        while True:  # a body whose summary a walk read as missing (past the demand depth): the fixpoint needs it
            wanted = [qual for qual in self._deferred if qual in self.deps]
            if not wanted:
                break
            for qual in wanted:
                walk_body = self._deferred.pop(qual, None)
                if walk_body is not None:
                    walk_body()
        self._deferred.clear()

    def _demand(self, qual: str) -> None:
        walk_body = self._deferred.pop(qual, None)
        if walk_body is None:
            return
        if self._demand_depth >= _MAX_DEMAND_DEPTH:  # a long chain: left to finish() and the fixpoint
            self._deferred[qual] = walk_body
            return
        self._demand_depth += 1
        try:
            walk_body()
        finally:
            self._demand_depth -= 1

    def compiles_torchscript(self) -> bool:
        """The file's text compiles code with TorchScript (``torch.jit.script`` as a call or decorator, ``from
        torch.jit import script``): a function it scripts may be any of the file's, through a helper or a module's
        ``forward``, and TorchScript compiles neither the DTensor guard nor the runtime (a review's broken fixes)."""
        if self._scripts is None:
            text = self.project._texts.get(self.path) or self.project._sources.get(self.path)
            tree = self.project._trees.get(self.path) if text is None else None
            self._scripts = bool(_TORCHSCRIPT.search(text)) if text is not None else tree is not None and any(
                (isinstance(n, ast.Attribute) and n.attr == "script" and (dotted_name(n.value) or "").endswith("jit"))
                or (isinstance(n, ast.ImportFrom) and n.module == "torch.jit") for n in walk_ast(tree))
        return self._scripts

    def call_sites(self) -> List[CallSite]:
        """``calls`` with one site per call (a loop's second pass records its calls again: the later
        record, which saw the values carried around the loop, replaces the earlier)."""
        out: Dict[tuple, CallSite] = {}
        for site in self.calls:
            key = (site.caller, site.callee, site.line, site.col, site.callback)
            out[key] = site
        return list(out.values()) if len(out) != len(self.calls) else self.calls

    @property
    def root(self) -> Optional[pathlib.Path]:
        return self.project.root

    def resolve(self, qual: str) -> Optional[Tuple[str, str]]:
        return self.project.resolve(qual)

    def index_classes(self):
        index = self.project.indexes.get(self.module)
        return index.classes if index is not None else {}

    def function(self, qual: str):
        if qual in self.params:
            return qual, 0
        try:
            return self._functions[qual]
        except KeyError:
            missing: List[str] = []
            found = self._functions[qual] = self.project.function(qual, missing)
            if found is None:
                for name in missing:  # not (yet) in its module: walked again when it appears
                    self.deps.setdefault(name, ABSENT)
            return found

    def method(self, cls_qual: str, name: str, skip_self: bool = False):
        return self.project.method(cls_qual, name, skip_self)

    def property_getters(self, cls_qual: str, name: str) -> Tuple[Tuple[str, bool], ...]:
        """``self.name`` where the class (or a base) defines ``name`` as a ``@property``: the getter and its
        overrides (as for a call ``self.name()``); empty when it is not a property."""
        found = self.project.method(cls_qual, name)
        if not found:
            return ()
        module, _, cls_name = found[0].rpartition(".")[0].rpartition(".")
        index = self.project.indexes.get(module)
        if index is None or name not in index.properties.get(cls_name, ()):
            return ()
        return self.dispatch(cls_qual, name)

    def dispatch(self, cls_qual: str, name: str) -> Tuple[Tuple[str, bool], ...]:
        """:meth:`Project.dispatch`; the walk depends on the answer (a new override walks it again)."""
        targets = self.project.dispatch(cls_qual, name)
        self.deps[f"{DISPATCH}{cls_qual}\x00{name}"] = targets_digest(targets)
        return targets

    def attribute_class(self, cls_qual: str, attr: str) -> Optional[str]:
        return self.project.attribute_class(cls_qual, attr)

    def class_facts(self):
        """:meth:`Project.class_facts`; the walk depends on the answer (a fix's safety reads it)."""
        facts = self.project.class_facts()
        self.deps[CLASS_FACTS] = repr(facts)
        return facts

    def attribute_builder(self, cls_qual: str, attr: str, default: bool = True) -> Optional[str]:
        return self.project.attribute_builder(cls_qual, attr, default)

    def module_class(self, cls_qual: str) -> bool:
        return self.project.module_class(cls_qual)

    def function_class(self, cls_qual: str) -> bool:
        return self.project.function_class(cls_qual)

    def wrapper_function(self, qual: str) -> str:
        return self.project.wrapper_function(qual)

    def torch_layer_base(self, cls_qual: str) -> Optional[str]:
        return self.project.torch_layer_base(cls_qual)

    def plain_class(self, cls_qual: str) -> bool:
        return self.project.plain_class(cls_qual)

    def tensor_class(self, cls_qual: str) -> bool:
        return self.project.tensor_class(cls_qual)

    def framework_runs_without_grad(self, cls_qual: str, method: str) -> bool:
        return self.project.framework_runs_without_grad(cls_qual, method)

    def params_of(self, qual: str):
        return self.params.get(qual) or self.project.params_of(qual)

    def summary(self, qual: str) -> Optional[FunctionSummary]:
        if qual in self._deferred:
            self._demand(qual)
        summary = self.functions.get(qual)
        if summary is None:
            summary = self.project.summaries.get(qual)
            self.deps[qual] = summary.digest() if summary else ""
        return summary
