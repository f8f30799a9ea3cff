"""The project pass: summaries of every function of a project, to a fixpoint, then findings across calls.

1. **Index** every file (top level only: imports, functions, classes and their methods and bases).
2. **Walk** every file with :mod:`.dataflow`, importing files first; each function leaves a summary
   (:mod:`.summaries`) and each call of an in-project function a :class:`~.summaries.CallSite`.
   A file whose walk read a summary that changed afterwards is walked again (at most
   ``_MAX_ROUNDS`` rounds; recursion and import cycles converge or stop there).
3. **Across calls** (no walking): a function runs with grad off when it is declared so or every
   in-project call of it does; a parameter takes the origins its call sites pass (transitively);
   writes to parameters are matched against those origins and reported in the callee, naming
   the call site; a fix made unsafe only by a parameter becomes safe when every in-project call
   site was checked and none reads what it passed afterwards.

Call resolution (where it is sound and where it guesses) is described in ``docs/analysis.md``.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import os
import pathlib
import re
from dataclasses import replace
from typing import Dict, Iterable, List, Optional, Set, Tuple

from .. import progress, textpos
from ..config import DEFAULT_SETTINGS, Settings
from ..findings import Finding, Origin, Related, RootKind
from ..rules import PRIORITY, Write
from . import model_outputs
from .astutil import dotted_name
from .names import import_bindings
from .reporting import match
from .summaries import CallSite, FileResult, FunctionSummary, ModuleIndex, located, located_steps, param_index, with_steps

_MAX_ROUNDS = 3
#: a dependency on a function the walk looked for in an in-project module and did not find
ABSENT = "\x00absent"
#: a dependency on the targets ``self.m(...)`` in a class dispatches to (its overrides in subclasses):
#: ``DISPATCH + "Cls.qual" + "\x00" + "m"`` -> the targets seen (a new override makes the walk stale)
DISPATCH = "\x00dispatch:"
_MAX_INCOMING = 12
ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")


# --------------------------------------------------------------------------- files and modules


def find_root(path: str) -> pathlib.Path:
    """Nearest directory above ``path`` with pyproject.toml/setup.cfg/setup.py/.git; else the directory
    above the topmost package (``__init__.py``) holding it; else the file's own directory."""
    start = pathlib.Path(os.path.realpath(path))  # not Path.resolve: it raises on a symlink loop
    folder = start if os.path.isdir(start) else start.parent
    return _root_of(folder)


def is_loose(path: str) -> bool:
    """A file with no project marker above it and in no package: its project is the file alone
    (a script in ``/tmp`` must not pull in every file under ``/tmp``)."""
    start = pathlib.Path(os.path.realpath(path))  # not Path.resolve: it raises on a symlink loop
    folder = start if os.path.isdir(start) else start.parent
    root = _root_of(folder)
    return root == folder and not any(os.path.exists(root / marker) for marker in ROOT_MARKERS) \
        and not os.path.exists(folder / "__init__.py")


@functools.lru_cache(maxsize=1024)
def _root_of(folder: pathlib.Path) -> pathlib.Path:
    # os.path.exists, not Path.exists: False, not PermissionError, in a folder we may not search
    for candidate in [folder, *folder.parents]:
        if any(os.path.exists(candidate / marker) for marker in ROOT_MARKERS):
            return candidate
    top = folder
    while os.path.exists(top / "__init__.py") and top.parent != top:
        top = top.parent
    return top


def module_name(path: str) -> Tuple[str, bool]:
    """``pkg.sub.mod`` for ``.../pkg/sub/mod.py`` (packages are folders with ``__init__.py``)."""
    p = pathlib.Path(os.path.realpath(path))
    is_package = p.name == "__init__.py"
    parts = [] if is_package else [p.stem]
    folder = p.parent
    while os.path.exists(folder / "__init__.py") and folder.parent != folder:
        parts.append(folder.name)
        folder = folder.parent
    return ".".join(reversed(parts)) or p.stem, is_package


def index_module(tree: ast.Module, module: str, path: str, is_package: bool = False,
                 source: Optional[str] = None) -> ModuleIndex:
    """What other modules need to resolve names into this one (no function body is walked)."""
    package = module if is_package else module.rpartition(".")[0]
    index = ModuleIndex(module, path, is_package)
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            index.imports.update(import_bindings(node, package))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            index.functions[node.name] = _params(node)
        elif isinstance(node, ast.ClassDef):
            bases = tuple(b for b in (dotted_name(b) for b in node.bases) if b)
            methods = {}
            getters = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    static = any(dotted_name(d) == "staticmethod" for d in item.decorator_list)
                    methods[item.name] = (_params(item), static)
                    if any((dotted_name(d) or "").rpartition(".")[2] in ("property", "cached_property")
                           for d in item.decorator_list):
                        getters.add(item.name)
            index.classes[node.name] = (bases, methods)
            if getters:
                index.properties[node.name] = frozenset(getters)
            attributes = _init_attributes(node)
            if attributes:
                index.attributes[node.name] = attributes
        elif isinstance(node, ast.If):  # if TYPE_CHECKING: / try-imports at top level
            for sub in node.body + node.orelse:
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    index.imports.update(import_bindings(sub, package))
        elif isinstance(node, ast.Try):
            for sub in node.body:
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    index.imports.update(import_bindings(sub, package))
    index.value_refs = value_refs_in_text(source, tree) if source is not None else None
    return index


def refs_text(names: Iterable[str]) -> str:
    """A set of identifiers as one string (``"\\na\\nb\\n"``): the cache loads one string per file
    instead of a set of thousands of strings (most of the cost of reading a warm cache)."""
    return "\n" + "\n".join(sorted(names)) + "\n"


def refers(refs: str, name: str) -> bool:
    return f"\n{name}\n" in refs


#: an identifier not followed by a call's ``(``: in code, comments and strings alike (a superset of the
#: uses as a value, which only ever makes a fix "unsafe"); a regex over the text costs far less than a
#: second walk of the tree
_NOT_CALLED = re.compile(r"\b([A-Za-z_]\w*)\b(?!\s*\()")


def value_refs_in_text(source: str, tree: ast.Module) -> str:
    """:func:`value_refs` from the source text: every identifier not directly followed by ``(``, outside
    the module's top-level imports (an import names a function without using it)."""
    lines = [text.rstrip("\r\n") for text in textpos.split_lines(source)]
    top = list(tree.body)
    for node in tree.body:
        if isinstance(node, ast.If):
            top += node.body + node.orelse
        elif isinstance(node, ast.Try):
            top += node.body
    for node in top:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for i in range(node.lineno - 1, min(node.end_lineno or node.lineno, len(lines))):
                lines[i] = ""
    return refs_text(set(_NOT_CALLED.findall("\n".join(lines))))


def value_refs(tree: ast.Module) -> str:
    """Names used as a value rather than called: loads of a name or attribute that are not a call's
    callee, and identifier strings (``getattr(obj, "name")``). Imports and definitions are not uses."""
    nodes = list(ast.walk(tree))
    callees = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    out = set()
    for n in nodes:
        if id(n) in callees:
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
            out.add(n.attr)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier():
            out.add(n.value)
    return refs_text(out)


def _init_attributes(cls: ast.ClassDef) -> Dict[str, str]:
    """``self.x = SomeClass(...)`` (or ``self.x: SomeClass = ...``, or ``self.x = x`` with the parameter
    ``x: SomeClass``) in ``__init__``: x -> "SomeClass"."""
    out: Dict[str, str] = {}
    for item in cls.body:
        if not (isinstance(item, ast.FunctionDef) and item.name == "__init__" and item.args.args):
            continue
        me = item.args.args[0].arg
        every = item.args.posonlyargs + item.args.args + item.args.kwonlyargs
        annotated = {a.arg: dotted_name(a.annotation) for a in every[1:] if a.annotation is not None}
        nodes = list(item.body)
        for stmt in item.body:  # the top level of __init__ and one level of if/else, try, with
            for field in ("body", "orelse", "finalbody"):
                nodes.extend(getattr(stmt, field, ()) if not isinstance(stmt, ast.FunctionDef) else ())
        for node in nodes:
            target = value = None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
                if isinstance(value, ast.Name) and annotated.get(value.id):
                    name = annotated[value.id]  # self.kernel = kernel, with `kernel: Kernel`
                    value = ast.Name(id=name) if "." not in name else ast.parse(name, mode="eval").body
                else:
                    value = value.func if isinstance(value, ast.Call) else None
            elif isinstance(node, ast.AnnAssign):
                target, value = node.target, node.annotation
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == me:
                name = dotted_name(value) if value is not None else None
                if name and name[:1].isupper() or (name and "." in name and name.rsplit(".", 1)[1][:1].isupper()):
                    out.setdefault(target.attr, name)
    return out


def _params(node) -> Tuple[str, ...]:
    args = node.args
    every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
    return tuple(a.arg for a in every)


# --------------------------------------------------------------------------- the project


class Project:
    """Indexes, summaries and call sites of a set of files (a project, or one file alone)."""

    def __init__(self, settings: Settings = DEFAULT_SETTINGS, root: Optional[pathlib.Path] = None) -> None:
        self.settings = settings
        self.root = root
        self.indexes: Dict[str, ModuleIndex] = {}
        self.results: Dict[str, FileResult] = {}
        self.summaries: Dict[str, FunctionSummary] = {}
        self.nested_params: Dict[str, Tuple[Tuple[str, ...], bool]] = {}
        self._trees: Dict[str, ast.Module] = {}
        #: files whose walk raised (a bug): :func:`inplace_lint.pipeline.project_findings` re-raises it
        self.crashes: Dict[str, BaseException] = {}
        self._final = None
        #: the inputs of the last project pass and its result (:meth:`finalize`): an edit that leaves
        #: every call site and grad-off declaration as it was reuses it (the language server, per keystroke)
        self._final_memo: Optional[tuple] = None
        #: :meth:`_ordered`'s answer, until a file is added or its module or imports change
        self._order: Optional[List[str]] = None
        #: files (open buffers) whose functions' walks are kept and reused (:mod:`.incremental`), and their text
        self._function_caches: Dict[str, object] = {}
        self._sources: Dict[str, str] = {}
        #: every file walked from now on keeps its function walks (the files that depend on a buffer)
        self._walks_everywhere = False
        #: class -> its direct in-project subclasses, and :meth:`dispatch`'s answers: computed once,
        #: dropped when a file's classes, bases or imports change (:meth:`_classes_changed`)
        self._subclass_map: Optional[Dict[str, Tuple[str, ...]]] = None
        self._dispatch_memo: Dict[Tuple[str, str], Tuple[Tuple[str, bool], ...]] = {}

    # ---- resolution

    def resolve(self, qual: str, depth: int = 0, missing: Optional[List[str]] = None) -> Optional[Tuple[str, str]]:
        """``("function"|"class"|"method"|"module", qualified name)`` of an in-project name, or None.

        Follows re-exports (``from .mod import f`` in a package ``__init__``) up to 8 hops.
        ``missing``: where the name is not found in an in-project module, ``module.name`` is added to it
        (a function defined there later makes the caller's walk stale).
        """
        if depth > 8 or not qual:
            return None
        parts = qual.split(".")
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            index = self.indexes.get(module)
            if index is None:
                continue
            rest = parts[cut:]
            if not rest:
                return "module", module
            head = rest[0]
            if head in index.functions and len(rest) == 1:
                return "function", f"{module}.{head}"
            if head in index.classes:
                if len(rest) == 1:
                    return "class", f"{module}.{head}"
                if len(rest) == 2:
                    found = self.method(f"{module}.{head}", rest[1])
                    return ("method", found[0]) if found else None
                return None
            if head in index.imports:
                return self.resolve(".".join([index.imports[head]] + rest[1:]), depth + 1, missing)
            if missing is not None and head not in index.functions:
                missing.append(f"{module}.{head}")
            if cut < len(parts):
                return None
        return None

    def function(self, qual: str, missing: Optional[List[str]] = None) -> Optional[Tuple[str, int]]:
        if qual in self.nested_params:
            return qual, 0
        found = self.resolve(qual, missing=missing)
        if found and found[0] in ("function", "method"):
            return found[1], 0
        return None

    def _class(self, qual: str):
        module, _, name = qual.rpartition(".")
        index = self.indexes.get(module)
        return index.classes.get(name) if index else None

    def method(self, cls_qual: str, name: str, skip_self: bool = False, depth: int = 0):
        """The method ``name`` seen from class ``cls_qual`` (its own, else its bases' in order):
        ``(qualified name, static)``. Overrides in subclasses are not considered (:meth:`dispatch`)."""
        info = self._class(cls_qual)
        if info is None or depth > 10:
            return None
        methods = info[1]
        if not skip_self and name in methods:
            return f"{cls_qual}.{name}", methods[name][1]
        for base in self._bases(cls_qual, info):
            hit = self.method(base, name, False, depth + 1)
            if hit:
                return hit
        return None

    def _bases(self, cls_qual: str, info=None) -> List[str]:
        """The in-project classes ``cls_qual`` names as its bases, in order (others are left out)."""
        info = info if info is not None else self._class(cls_qual)
        if info is None:
            return []
        module = cls_qual.rpartition(".")[0]
        index = self.indexes.get(module)
        out = []
        for base in info[0]:
            head, _, rest = base.partition(".")
            if index is not None and head in index.imports:
                target = index.imports[head] + (f".{rest}" if rest else "")
            elif index is not None and head in index.classes:
                target = f"{module}.{base}"
            else:
                continue
            found = self.resolve(target)
            if found and found[0] == "class":
                out.append(found[1])
        return out

    def subclasses(self, cls_qual: str) -> Tuple[str, ...]:
        """Every in-project class that has ``cls_qual`` among its bases, transitively, sorted."""
        if self._subclass_map is None:
            direct: Dict[str, List[str]] = {}
            for module, index in self.indexes.items():
                for name, info in index.classes.items():
                    qual = f"{module}.{name}"
                    for base in self._bases(qual, info):
                        if base != qual:
                            direct.setdefault(base, []).append(qual)
            self._subclass_map = {k: tuple(v) for k, v in direct.items()}
        seen: Set[str] = set()
        todo = list(self._subclass_map.get(cls_qual, ()))
        while todo:
            qual = todo.pop()
            if qual not in seen and qual != cls_qual:
                seen.add(qual)
                todo.extend(self._subclass_map.get(qual, ()))
        return tuple(sorted(seen))

    def dispatch(self, cls_qual: str, name: str) -> Tuple[Tuple[str, bool], ...]:
        """Every method ``self.name(...)`` may run when ``self`` is a ``cls_qual`` or any in-project
        subclass of it (class-hierarchy analysis): :meth:`method` seen from ``cls_qual`` first (when
        there is one), then the method seen from each subclass that differs (its override, or a mixin's
        method that comes first in its bases), as ``(qualified name, static)``."""
        key = (cls_qual, name)
        memo = self._dispatch_memo.get(key)
        if memo is not None:
            return memo
        out: List[Tuple[str, bool]] = []
        static = self.method(cls_qual, name)
        if static:
            out.append(static)
        for sub in self.subclasses(cls_qual):
            found = self.method(sub, name)
            if found and found not in out:
                out.append(found)
        memo = self._dispatch_memo[key] = tuple(out)
        return memo

    def _classes_changed(self) -> None:
        self._subclass_map = None
        self._dispatch_memo = {}

    def attribute_builder(self, cls_qual: str, attr: str) -> Optional[str]:
        """What ``self.<attr>`` was built from in ``__init__`` of this class, imports resolved
        (``torch.nn.Parameter`` for ``self.raw = nn.Parameter(...)``), in the project or not; None unknown."""
        module, _, name = cls_qual.rpartition(".")
        index = self.indexes.get(module)
        dotted = index.attributes.get(name, {}).get(attr) if index is not None else None
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        return index.imports[head] + (f".{rest}" if rest else "") if head in index.imports else dotted

    def attribute_class(self, cls_qual: str, attr: str) -> Optional[str]:
        """The in-project class ``self.<attr>`` was built from in ``__init__`` (this class or a base)."""
        module, _, name = cls_qual.rpartition(".")
        index = self.indexes.get(module)
        if index is None:
            return None
        dotted = index.attributes.get(name, {}).get(attr)
        if dotted is not None:
            head, _, rest = dotted.partition(".")
            target = index.imports[head] + (f".{rest}" if rest else "") if head in index.imports \
                else f"{module}.{dotted}"
            found = self.resolve(target)
            return found[1] if found and found[0] == "class" else None
        info = self._class(cls_qual)
        for base in info[0] if info else ():
            head, _, rest = base.partition(".")
            target = index.imports[head] + (f".{rest}" if rest else "") if head in index.imports \
                else f"{module}.{base}"
            found = self.resolve(target)
            if found and found[0] == "class" and found[1] != cls_qual:
                hit = self.attribute_class(found[1], attr)
                if hit:
                    return hit
        return None

    def params_of(self, qual: str) -> Optional[Tuple[Tuple[str, ...], bool]]:
        if qual in self.nested_params:
            return self.nested_params[qual]
        module, _, name = qual.rpartition(".")
        index = self.indexes.get(module)
        if index is not None and name in index.functions:
            return index.functions[name], False
        cls, _, method = qual.rpartition(".")
        info = self._class(cls)
        if info is not None and method in info[1]:
            return info[1][method]
        return None

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
        if old is None or old.module != module or old.index.imports != index.imports:
            self._order = None
        if old is None or old.module != module or old.index.imports != index.imports \
                or old.index.classes != index.classes:
            self._classes_changed()
        if old is not None:  # new text of a file (an edited buffer): what it no longer defines is gone
            for qual in old.functions:
                if not _defines(index, module, qual):
                    self.summaries.pop(qual, None)
                    self.nested_params.pop(qual, None)
        self.indexes[module] = index
        self._trees[path] = tree
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
            from .incremental import FunctionCache

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
        from .dataflow import walk_module

        old = self.results[path]
        tree = self._trees.get(path)
        if tree is None:
            self.add_file(path, module=old.module)
            tree = self._trees.get(path)
            if tree is None:
                return old
        ctx = ModuleContext(self, old.module, path, old.index.is_package)
        cache = self._function_caches.get(path)
        if cache is None and self._walks_everywhere and path in self._sources:
            from .incremental import FunctionCache

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
            if qual.startswith(DISPATCH):  # an override appeared or went since the walk
                if _dispatch_text(self, qual) != seen:
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
        pending = [p for p in self._ordered() if p in set(pending)]
        for round_ in range(_MAX_ROUNDS):
            # the first round walks every file; each later one, the files that read a summary made since
            with progress.stage("walking files" if round_ == 0 else f"fixpoint (walking again, round {round_})",
                                len(pending)):
                for path in progress.counted(pending):
                    self.walk(path)
            if not follow:
                break
            pending = [p for p in self._ordered() if self.stale(self.results[p])]
            if not pending:
                break

    def _ordered(self) -> List[str]:
        """Files with the modules they import first (depth-first post-order; cycles cut anywhere)."""
        if self._order is None or len(self._order) != len(self.results):
            self._order = self._compute_order()
        return self._order

    def _compute_order(self) -> List[str]:
        by_module = {r.module: p for p, r in self.results.items()}
        return post_order({p: imported_files(r.index.imports.values(), p, by_module) for p, r in self.results.items()})

    # ---- across calls

    def finalize(self):
        """Grad-off functions, parameter origins and caller checks (cached until the project changes)."""
        if self._final is not None:
            return self._final
        with progress.stage("project pass (across calls)", None, unit="call site"):
            return self._finalize()

    def _finalize(self):
        calls_to: Dict[str, List[CallSite]] = {}
        all_sites: List[CallSite] = []
        for result in self.results.values():
            for site in result.calls:
                calls_to.setdefault(site.callee, []).append(site)
                all_sites.append(site)
        # what the pass reads: the call sites (in order), the functions that start grad-off, and which
        # called functions have a summary; a function nobody calls only gets its own starting value
        calls = [(path, result.calls) for path, result in self.results.items()]
        # functions of files configured to run with grad off (no-grad-paths) start grad-off too
        off_files = {q for p, r in self.results.items() if self.file_no_grad(p) for q in r.functions}
        start = frozenset(q for q, s in self.summaries.items()
                          if s.declared_no_grad or q.endswith(".__init__") or q in off_files)
        known = frozenset(q for q in calls_to if q in self.summaries)
        memo = self._final_memo
        if memo is not None and memo[1] == start and memo[2] == known and len(memo[0]) == len(calls) \
                and all(p == mp and (c is mc or c == mc) for (p, c), (mp, mc) in zip(calls, memo[0])):
            self._final = memo[3]
            self._final_memo = (calls, start, known, memo[3])
            return self._final
        # guess: no backward runs through what a constructor computes (schedules, buffers, masks), so
        # `__init__` and what only `__init__` calls count as grad-off for the autograd rules
        grad_off = {q: q in start for q in self.summaries}
        chains: Dict[str, Tuple[str, ...]] = {}

        def off(qual: str) -> bool:  # _grad_off, with each name's enclosing names split once
            chain = chains.get(qual)
            if chain is None:
                chain = chains[qual] = _enclosing(qual)
            for name in chain:
                if grad_off.get(name):
                    return True
            return False

        # the functions that can still turn grad-off (called, not grad-off yet), in the summaries' order;
        # one is looked at again only when a function its callers are (nested in) turned grad-off since
        candidates = [q for q in self.summaries if not grad_off[q] and calls_to.get(q)]
        readers: Dict[str, List[str]] = {}
        for qual in candidates:
            for s in calls_to[qual]:
                if not s.no_grad:
                    chain = chains.get(s.caller)
                    if chain is None:
                        chain = chains[s.caller] = _enclosing(s.caller)
                    for name in chain:
                        readers.setdefault(name, []).append(qual)
        dirty = set(candidates)
        for _ in range(10):
            changed = False
            for qual in candidates:
                if grad_off[qual] or qual not in dirty:
                    continue
                dirty.discard(qual)
                if all(s.no_grad or off(s.caller) for s in calls_to[qual]):
                    grad_off[qual] = changed = True
                    dirty.update(readers.get(qual, ()))
            if not changed:
                break
        #: (callee, parameter) -> origin -> (the call site that passes it, whether every call on the way
        #: from where the origin was made runs with grad off)
        incoming: Dict[Tuple[str, int], Dict[Origin, Tuple[CallSite, bool]]] = {}
        #: the arguments made from the caller's own parameters: after the first round, only they can
        #: bring anything new (an origin made in the caller is added in the first round, or its slot is full)
        derived: List[Tuple[CallSite, Dict[Origin, Tuple[CallSite, bool]], bool, List[Tuple[Origin, int]]]] = []
        for site in progress.counted(all_sites):
            here = site.no_grad or off(site.caller)
            for index, origins in site.args:
                slot = incoming.setdefault((site.callee, index), {})
                from_params = []
                for o in origins:
                    k = param_index(o)
                    if k is None:
                        if model_outputs.is_guessed_object(o):
                            continue
                        new = [(located(o, site.path), here)]  # its lines are in the caller's file
                    else:
                        from_params.append((o, k))
                        new = [(with_steps(o2, located_steps(o.steps, site.path)), here or before)
                               for o2, (_, before) in incoming.get((site.caller, k), {}).items()]
                    for n, flag in new:
                        if n not in slot and len(slot) < _MAX_INCOMING:
                            slot[n] = (site, flag)
                if from_params:
                    derived.append((site, slot, here, from_params))
        for _ in range(3):
            changed = False
            for site, slot, here, from_params in derived:
                for o, k in from_params:
                    new = [(with_steps(o2, located_steps(o.steps, site.path)), here or before)
                           for o2, (_, before) in incoming.get((site.caller, k), {}).items()]
                    for n, flag in new:
                        if n not in slot and len(slot) < _MAX_INCOMING:
                            slot[n] = (site, flag)
                            changed = True
            if not changed:
                break
        self._final = (calls_to, grad_off, incoming)
        self._final_memo = (calls, start, known, self._final)
        return self._final

    def adopt_final(self, other: "Project") -> bool:
        """Take the project pass of ``other``, a copy of this project elsewhere (the same files, by
        module, text and result, in the same order, with the same settings; another fork checked in the
        same run), with its call sites replaced by this project's: what :meth:`finalize` would compute,
        without computing it. Returns False (nothing taken) when the two differ anywhere."""
        if other is self or self.settings != other.settings or len(self.results) != len(other.results):
            return False
        site_of: Dict[int, CallSite] = {}
        for mine, theirs in zip(self.results.values(), other.results.values()):
            if mine.module != theirs.module or mine.digest != theirs.digest or mine.deps != theirs.deps \
                    or len(mine.calls) != len(theirs.calls) or self.file_no_grad(mine.path) != other.file_no_grad(theirs.path):
                return False
            for a, b in zip(theirs.calls, mine.calls):
                if a.callee != b.callee or a.line != b.line or a.col != b.col:
                    return False
                site_of[id(a)] = b
        calls_to, grad_off, incoming = other.finalize()
        old_prefix = os.path.join(str(other.root), "") if other.root else None
        new_prefix = os.path.join(str(self.root), "") if self.root else None

        def moved(path: Optional[str]) -> Optional[str]:
            if path is None or old_prefix is None or new_prefix is None or not path.startswith(old_prefix):
                return path
            return new_prefix + path[len(old_prefix):]

        def here(o: Origin) -> Origin:
            """``o`` with the files its root and view steps name moved from ``other``'s tree to this one."""
            if o.path is None and all(st.path is None for st in o.steps):
                return o
            return replace(o, path=moved(o.path), steps=tuple(replace(st, path=moved(st.path)) if st.path else st
                                                             for st in o.steps))
        try:
            self._final = ({q: [site_of[id(s)] for s in sites] for q, sites in calls_to.items()}, grad_off,
                           {k: {here(o): (site_of[id(site)], flag) for o, (site, flag) in slot.items()}
                            for k, slot in incoming.items()})
        except KeyError:  # a call site of other's pass that is not among its results' (it changed since)
            return False
        return True

    def file_no_grad(self, path: str) -> bool:
        """The file matches the ``no-grad-paths`` setting: its code always runs with grad off."""
        from ..config import runs_without_grad

        return runs_without_grad(self.settings, path, self.root)

    @staticmethod
    def _grad_off(grad_off: Dict[str, bool], qual: str) -> bool:
        """A function, or a function it is nested in, runs with grad off."""
        while qual:
            if grad_off.get(qual):
                return True
            qual = qual.rpartition(".")[0]
        return False

    def findings(self, path: str) -> List[Finding]:
        """The findings of one file of the project, across calls, sorted by position."""
        result = self.results.get(path)
        if result is None:
            return []
        calls_to, grad_off, incoming = self.finalize()
        out: Dict[Tuple[int, int], Finding] = {}
        file_off = self.file_no_grad(path)
        for lf in result.findings:
            if lf.grad_rule and (file_off or self._grad_off(grad_off, lf.func)) and not self.settings.report_in_no_grad:
                continue
            if lf.grad_rule and lf.grad_cond is not None and self._cond_holds(calls_to, lf.func, lf.grad_cond):
                continue  # `with no_grad() if flag else nullcontext():` and every call keeps flag so
            if lf.guess_param is not None and not self.settings.report_in_no_grad \
                    and self._no_call_passes_grad(calls_to, lf.func, lf.guess_param):
                continue  # saved only if the parameter requires grad, and no call passes one that does
            if lf.grad_rule and lf.param_rooted is not None \
                    and self._callers_decide(calls_to, incoming, lf.func, lf.param_rooted,
                                             named=lf.finding.origin.root is not RootKind.TENSOR):
                continue  # what the callers pass is known: the parameter's write below is matched against it
            finding = lf.finding
            if lf.fix_if_callers is not None and lf.observed:
                checked = self._callers_checked(calls_to, lf.func, lf.observed)
                if checked:
                    finding = replace(finding, fix=_checked(lf.fix_if_callers, checked))
            out[(finding.line, finding.col)] = finding
        for qual, summary in result.functions.items():
            for w in summary.writes:
                if w.via is not None or (w.line, w.col) in out:
                    continue
                found = self._param_finding(path, w, incoming.get((qual, w.index), {}), grad_off, calls_to)
                if found is not None:
                    out[(w.line, w.col)] = found
        return sorted(out.values(), key=lambda f: (f.line, f.col, f.code))

    @classmethod
    def _no_call_passes_grad(cls, calls_to, qual: str, index: int, seen=None) -> bool:
        """``qual`` has in-project calls and none passes, for parameter ``index``, something that requires
        grad by evidence (``Origin.grad_evidence``): a guess of that parameter's grad is decided by them. A
        call that passes on its own parameter (or a guess made from one) asks that caller's calls in turn; with
        no in-project call (an entry point), the guess stays."""
        seen = set() if seen is None else seen
        if (qual, index) in seen or len(seen) > 8:
            return False
        seen.add((qual, index))
        sites = calls_to.get(qual, [])
        if not sites:
            return False
        for site in sites:
            if site.bound is None or site.callback:
                return False
            for i, origins in site.args:
                if i != index:
                    continue
                for o in origins:
                    if o.grad_evidence and param_index(o) is None:
                        return False
                    passed = param_index(o) if param_index(o) is not None else (
                        o.guess_param if o.guess_param >= 0 else None)
                    if passed is not None and not cls._no_call_passes_grad(calls_to, site.caller, passed, seen):
                        return False
        return True

    @staticmethod
    def _cond_holds(calls_to, qual: str, cond: tuple) -> bool:
        """Every in-project call of ``qual`` gives parameter ``cond[0]`` the truth ``cond[1]`` (a literal, or
        the literal default it leaves); with no in-project call, the default decides (guess: callers outside
        keep it). A call with ``*args``/``**kwargs`` or a non-literal argument for it keeps the finding."""
        index, truth, default = cond
        sites = calls_to.get(qual, [])
        if not sites:
            return default is truth
        for site in sites:
            constants = dict(site.constants)
            if index in constants:
                if constants[index] is not truth:
                    return False
            elif site.bound is None or index in site.bound or default is not truth:
                return False
        return True

    def _callers_checked(self, calls_to, qual: str, observed) -> int:
        sites = calls_to.get(qual, [])
        if not sites or any(s.callback or not set(observed) <= s.unread for s in sites):
            return 0
        summary = self.summaries.get(qual)
        if summary is not None and summary.decorated:
            return 0  # a registry or wrapper decorator may call it where no call site shows
        name = qual.rsplit(".", 1)[-1]
        for index in self.indexes.values():
            refs = self._value_refs(index)
            if refs is None or refers(refs, name):
                return 0  # handed around as a value: some calls are not visible as call sites
        return len(sites)

    def _callers_decide(self, calls_to, incoming, qual: str, index: int, memo=None, named: bool = False) -> bool:
        """Every in-project call of ``qual`` passes something known for parameter ``index`` (and the
        function is not handed around as a value, where calls are not visible). A caller that passes
        its own parameter on decides only where its own callers do, up to the calls that pass
        something known (a chain that ends in a function nobody calls ends in nothing known)."""
        memo = {} if memo is None else memo
        key = (qual, index)
        if key in memo:
            return memo[key]
        memo[key] = False  # a cycle of calls decides nothing
        memo[key] = decided = self._callers_pass_known(calls_to, incoming, qual, index, memo, named)
        return decided

    def _callers_pass_known(self, calls_to, incoming, qual: str, index: int, memo, named: bool = False) -> bool:
        """``named``: the guess is only the parameter's name (``outputs``), no annotation: the project's own
        calls outweigh it even for a public method (unseen callers are no evidence for a name)."""
        sites = calls_to.get(qual)
        if not sites:
            return False
        for s in sites:
            passed = dict(s.args).get(index)
            if not passed:
                return False
            for o in passed:
                k = param_index(o)
                if k is not None and not self._callers_decide(calls_to, incoming, s.caller, k, memo, named) \
                        and not self._reported_at(s, passed):
                    return False  # the caller's own parameter, whose callers do not decide it
        if len(incoming.get((qual, index), ())) >= _MAX_INCOMING:
            return False  # more than is kept: some origins were dropped
        name = qual.rsplit(".", 1)[-1]
        if name == "forward" or (name.startswith("__") and name.endswith("__")):
            return False  # called by nn.Module.__call__ / the interpreter too, where no call site shows
        if not named and not name.startswith("_") and self._class(qual.rpartition(".")[0]) is not None:
            return False  # a public method: `loader.load(...)` on a local instance is no call site
        for module_index in self.indexes.values():
            refs = self._value_refs(module_index)
            if refs is None or refers(refs, name):
                return False
        return True

    def _reported_at(self, site: CallSite, passed) -> bool:
        """The caller passes something of its own besides its parameter, and its walk reported a write at
        this call (a helper's write through what it passed, its own guess included): the call shows it."""
        if all(param_index(o) is not None for o in passed):
            return False
        result = self.results.get(site.path)
        return result is not None and any(lf.finding.line == site.line and lf.finding.col == site.col
                                          for lf in result.findings)

    def _value_refs(self, index: ModuleIndex) -> Optional[str]:
        """:func:`value_refs` of a module; None when neither its text nor its tree is at hand (then any
        name may be used as a value there)."""
        if index.value_refs is None:
            tree = self._trees.get(index.path)
            if tree is None:
                return None
            index.value_refs = value_refs(tree)
        return index.value_refs

    def _param_finding(self, path: str, w, incoming, grad_off, calls_to) -> Optional[Finding]:
        best = None
        for origin, (site, chain_no_grad) in incoming.items():
            if not (w.kept or site.callback):
                continue  # a mutating helper: reported at the call (by the caller's walk)
            if w.guard and site.bound is not None and any(g not in site.bound for g in w.guard):
                continue  # the call leaves a parameter at the default that skips the write
            no_grad = w.no_grad or chain_no_grad or self._grad_off(grad_off, w.func)
            write = Write(w.op, w.op_name, w.kind, w.target, w.point_index, w.condition)
            rule, shown = match([with_steps(origin, w.steps)], write, no_grad, self.settings.report_in_no_grad)
            if rule is None:
                continue
            rank = PRIORITY.index(rule)
            if best is None or rank < best[0]:
                best = (rank, rule, shown, site)
        if best is None:
            return None
        _, rule, shown, site = best
        where = self._where(site, path)
        write = Write(w.op, w.op_name, w.kind, w.target, w.point_index, w.condition)
        message = f"{rule.message(write, shown)}, passed by the call at {where}"
        if shown.condition:
            message += f" ({shown.condition})"
        related = (Related(f"call site passing {shown.root.value} `{shown.root_text}`", site.line, site.col,
                           None if site.path == path else site.path),)
        # each location in its own file: the origin's root and steps name theirs (the caller's, a
        # caller's caller's, the write's own)
        related += tuple(replace(r, path=None if r.path in (None, path) else r.path) for r in shown.related())
        fix = w.fix
        if w.fix_if_callers is not None:
            checked = self._callers_checked(calls_to, w.func, {w.index})
            if checked:
                fix = _checked(w.fix_if_callers, checked)
        return Finding(code=rule.code, line=w.line, col=w.col, end_line=w.end_line, end_col=w.end_col,
                       message=message, op=w.op, write_kind=w.kind, target=w.target, origin=shown, fix=fix,
                       related=related)

    def _where(self, site: CallSite, path: str) -> str:
        if site.path == path:
            return f"line {site.line}"
        shown = site.path
        if self.root is not None:
            try:
                shown = os.path.relpath(site.path, self.root)
            except ValueError:
                pass
        return f"{shown}:{site.line}"


def _dispatch_text(project: Project, key: str) -> str:
    cls_qual, _, name = key[len(DISPATCH):].partition("\x00")
    return _targets_digest(project.dispatch(cls_qual, name))


def _targets_digest(targets) -> str:
    """A short stand-in for a dispatch's targets (kept per file in the cache)."""
    return hashlib.blake2b(",".join(q for q, _ in targets).encode(), digest_size=6).hexdigest()


def imported_files(targets: Iterable[str], path: str, by_module: Dict[str, str]) -> List[str]:
    """The project files that import targets (``pkg.mod.name``) name, by their longest prefix that is a
    project module, other than ``path`` itself, in the targets' order."""
    out = []
    for target in targets:
        parts = target.split(".")
        for cut in range(len(parts), 0, -1):
            hit = by_module.get(".".join(parts[:cut]))
            if hit is not None:
                if hit != path:
                    out.append(hit)
                break
    return out


def post_order(graph: Dict[str, List[str]]) -> List[str]:
    """Depth-first post-order of ``graph`` (file -> the files it imports), starting from each file in
    sorted order: a file after everything it imports; cycles are cut anywhere."""
    seen: Set[str] = set()
    out: List[str] = []
    for start in sorted(graph):
        if start in seen:
            continue
        seen.add(start)
        stack = [(start, iter(graph[start]))]
        while stack:
            current, children = stack[-1]
            for child in children:
                if child not in seen:
                    seen.add(child)
                    stack.append((child, iter(graph[child])))
                    break
            else:
                stack.pop()
                out.append(current)
    return out


def _enclosing(qual: str) -> Tuple[str, ...]:
    """``a.b.c``, ``a.b``, ``a``: a function and the functions (classes, module) it is nested in."""
    out = []
    while qual:
        out.append(qual)
        qual = qual.rpartition(".")[0]
    return tuple(out)


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


def _checked(fix, callers: int):
    """A fix made safe by checking its callers says so (in its message: ``reason`` is for unsafe fixes)."""
    return replace(fix, message=f"{fix.message} (safe: callers in this project checked: {callers})", reason="")


class ModuleContext:
    """What one file's walk reads from and leaves in the project."""

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

    def call_sites(self) -> List[CallSite]:
        """``calls`` with one site per call (a loop's second pass records its calls again: the later
        record, which saw the values carried around the loop, replaces the earlier)."""
        out: Dict[tuple, CallSite] = {}
        for site in self.calls:
            key = (site.caller, site.callee, site.line, site.col, site.callback)
            out[key] = site
        return list(out.values()) if len(out) != len(self.calls) else self.calls

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
        self.deps[f"{DISPATCH}{cls_qual}\x00{name}"] = _targets_digest(targets)
        return targets

    def attribute_class(self, cls_qual: str, attr: str) -> Optional[str]:
        return self.project.attribute_class(cls_qual, attr)

    def attribute_builder(self, cls_qual: str, attr: str) -> Optional[str]:
        return self.project.attribute_builder(cls_qual, attr)

    def params_of(self, qual: str):
        return self.params.get(qual) or self.project.params_of(qual)

    def summary(self, qual: str) -> Optional[FunctionSummary]:
        summary = self.functions.get(qual)
        if summary is None:
            summary = self.project.summaries.get(qual)
            self.deps[qual] = summary.digest() if summary else ""
        return summary


def analyze_single(tree: ast.Module, settings: Settings, path: str) -> List[Finding]:
    """One module as a project of its own: calls between its functions are followed."""
    project = Project(settings)
    module = pathlib.Path(path).stem if path and not path.startswith("<") else "__main__"
    project.add_file(path, tree=tree, module=module.replace("-", "_") or "__main__", digest="")
    project.build()
    return project.findings(path)
