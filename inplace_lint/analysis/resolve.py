"""Names across a project: roots and module names, what each module defines and imports, classes and dispatch.

- files and modules: :func:`find_root`, :func:`is_loose`, :func:`module_name` (from :mod:`.roots`);
- :func:`index_module`: a module's top level (imports, functions, classes, bases, ``__init__`` attributes);
- names used as values rather than called (:func:`value_refs`, :func:`refers`): a function handed around
  may be called where no call site shows;
- import order: :func:`imported_files`, :func:`post_order` (from :mod:`.import_order`);
- :class:`Resolver`: in-project names resolved through imports and re-exports, methods through the
  class hierarchy, ``self.m(...)`` dispatched to overrides (what :class:`~.project.Project` answers).
"""
from __future__ import annotations

import ast
import hashlib
from typing import Callable, Dict, List, Optional, Set, Tuple

from ..torch_facts import ops
from .astutil import dotted_name, method_key
from . import class_facts, param_containers
from .decorators import module_wrappers
from .refs import refers, refs_text, value_refs, value_refs_in_text  # noqa: F401  (re-exported)
from .import_order import imported_files, post_order, suffix_module  # noqa: F401  (re-exported)
from .names import import_bindings
from .roots import ROOT_MARKERS, find_root, is_loose, module_name  # noqa: F401  (re-exported)
from .init_builds import DEFAULT_CLASS, TABLE_ITEM, default_builder, init_attributes, layer_builders
from .narrowing import PLAIN_BASES, plain_bases, torch_class_is_tensor
from .summaries import ModuleIndex, parameter_names
from .strings import string_functions
from . import tables
from .tables import function_tables

#: a dependency on a function the walk looked for in an in-project module and did not find
ABSENT = "\x00absent"
#: a dependency on the targets ``self.m(...)`` in a class dispatches to (its overrides in subclasses):
#: ``DISPATCH + "Cls.qual" + "\x00" + "m"`` -> the targets seen (a new override makes the walk stale)
DISPATCH = "\x00dispatch:"
#: a dependency on :meth:`Resolver.class_facts` (the answer's ``repr``)
CLASS_FACTS = "\x00class-facts"
#: torch's classes whose instances are tensors (a project class with one of them as a base is a tensor subclass)
TORCH_TENSOR_CLASSES = frozenset({"Tensor", "Parameter", "UninitializedParameter", "Buffer", "UninitializedBuffer",
                                  "DTensor"})


# --------------------------------------------------------------------------- modules


def index_module(tree: ast.Module, module: str, path: str, is_package: bool = False,
                 source: Optional[str] = None) -> ModuleIndex:
    """What other modules need to resolve names into this one (no function body is walked)."""
    package = module if is_package else module.rpartition(".")[0]
    index = ModuleIndex(module, path, is_package)
    builders = layer_builders(tree)
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
                    methods[method_key(item)] = (_params(item), static)
                    if any((dotted_name(d) or "").rpartition(".")[2] in ("property", "cached_property")
                           for d in item.decorator_list):
                        getters.add(item.name)
            index.classes[node.name] = (bases, methods)
            if getters:
                index.properties[node.name] = frozenset(getters)
            attributes = init_attributes(node)
            if builders:  # `self.conv = conv3x3(...)`, with `conv3x3` returning `nn.Conv2d(...)`: an `nn.Conv2d`
                attributes = {k: builders.get(v, v) for k, v in attributes.items()}
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
    index.wrappers, index.grad_off_wrappers = module_wrappers(tree)
    index.torch_function_classes = class_facts.torch_function_classes(tree, source)
    index.shared_fields = class_facts.shared_output_fields(tree, index.attributes)
    index.output_hooks = class_facts.output_hooks(tree, source)
    index.scripted = class_facts.scripted_names(tree, source)
    index.tables = function_tables(tree, module, index.imports)
    index.string_functions = string_functions(tree)
    return index


def _params(node) -> Tuple[str, ...]:
    return parameter_names(node.args)


def targets_digest(targets) -> str:
    """A short stand-in for a dispatch's targets (kept per file in the cache)."""
    return hashlib.blake2b(",".join(q for q, _ in targets).encode(), digest_size=6).hexdigest()


# --------------------------------------------------------------------------- resolution


class Resolver:
    """Answers about names, classes and methods from the modules' indexes (a part of
    :class:`~.project.Project`, which sets these attributes)."""

    #: module -> its index
    indexes: Dict[str, ModuleIndex]
    #: qualified function (nested ones included) -> (parameters, static)
    nested_params: Dict[str, Tuple[Tuple[str, ...], bool]]
    #: class -> its direct in-project subclasses, and :meth:`dispatch`'s answers: computed once,
    #: dropped when a file's classes, bases or imports change (:meth:`_classes_changed`)
    _subclass_map: Optional[Dict[str, Tuple[str, ...]]]
    _dispatch_memo: Dict[Tuple[str, str], Tuple[Tuple[str, bool], ...]]

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
        moved = suffix_module(self.indexes, qual) if depth == 0 else None
        return self.resolve(moved, depth + 1, missing) if moved else None

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

    def runs_on_activations(self, qual: str) -> bool:
        """Whether a tensor parameter of ``qual``, where no in-project call decides it, may require grad.
        A method (or a function nested in one) of a class that is surely not an ``nn.Module``
        (:meth:`plain_class`: a data transform, a KV-cache manager, a tokenizer) is called by code that
        hands it data, not activations: its parameters' grad is unknown, which does not make a rule fire.
        A module's methods and free functions (a library's functional API, a loss) are called by training
        code where no call site shows: the guess stays. So is a ``__call__`` of a class that no visible class makes a
        module and that defines no ``forward``: calling it runs its own code, as any callable object's (maltorch)."""
        parts = qual.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            prefix = ".".join(parts[:cut])
            if self._class(prefix) is not None:
                return not self.plain_class(prefix) and not (parts[cut:] == ["__call__"] and not self.module_class(
                    prefix) and self.method(prefix, "forward") is None)
        return True

    def framework_runs_without_grad(self, cls_qual: str, method: str, depth: int = 0) -> bool:
        """``method`` of ``cls_qual`` is one a framework runs with grad off, by a base it inherits from another
        library (:data:`~inplace_lint.torch_facts.ops.FRAMEWORK_NO_GRAD_METHODS`: mmengine's loops run a
        ``BaseModel``'s ``val_step``/``test_step``, and so ``predict``, under ``torch.no_grad()``)."""
        info = self._class(cls_qual)
        if info is None or depth > 10:
            return False
        for _, qualified, found in self._base_classes(cls_qual, info):
            if found is not None:
                if self.framework_runs_without_grad(found, method, depth + 1):
                    return True
            elif method in ops.FRAMEWORK_NO_GRAD_METHODS.get(qualified, ()):
                return True
        return False

    def plain_class(self, cls_qual: str, depth: int = 0) -> bool:
        """Surely not an ``nn.Module``: every base is ``object``, an ``abc``/``typing``/``enum`` base, a builtin
        container, or an in-project class that is plain in turn (an unknown base may be a module)."""
        info = self._class(cls_qual)
        if info is None or depth > 10:
            return False
        return plain_bases(self._base_classes(cls_qual, info), lambda found: self.plain_class(found, depth + 1))

    def tensor_class(self, cls_qual: str, depth: int = 0) -> bool:
        """May be a subclass of ``torch.Tensor``: unless every base, followed through the project, is a plain base
        (:data:`PLAIN_BASES`) or a torch class that is no tensor (``nn.Module``); a base we cannot see (another
        library's class, a module-level alias ``Base = torch.Tensor``) may be one."""
        info = self._class(cls_qual)
        if info is None or depth > 10:
            return True
        for base, qualified, found in self._base_classes(cls_qual, info):
            if found is not None:
                if self.tensor_class(found, depth + 1):
                    return True
            elif qualified.split(".")[0] == "torch":
                if torch_class_is_tensor(qualified):
                    return True
            elif base not in PLAIN_BASES and qualified not in PLAIN_BASES:
                return True
        return False

    def _some_base(self, cls_qual: str, accepts: Callable[[str, Optional[str]], bool], depth: int = 0) -> bool:
        """Some base of the class, followed through the project's classes, is one ``accepts(qualified, found)``
        takes (``found``: the in-project class the base names, or None)."""
        info = self._class(cls_qual)
        if info is None or depth > 10:
            return False
        return any(accepts(qualified, found) or (found is not None and self._some_base(found, accepts, depth + 1))
                   for _, qualified, found in self._base_classes(cls_qual, info))

    def _surely_tensor_class(self, cls_qual: str) -> bool:
        """A base, followed through the project, is one of torch's tensor classes (:data:`TORCH_TENSOR_CLASSES`:
        ``torch.Tensor``, ``nn.Parameter``; not ``TensorDataset``): unlike :meth:`tensor_class`, a base we cannot
        see says nothing."""
        return self._some_base(cls_qual, lambda qualified, found: found is None and qualified.split(".")[0] == "torch"
                               and qualified.rpartition(".")[2] in TORCH_TENSOR_CLASSES)

    def module_class(self, cls_qual: str) -> bool:
        """Surely an ``nn.Module``: a base is torch's (``nn.Module``, ``nn.Linear``) or an in-project module."""
        return self._some_base(cls_qual, lambda qualified, found: qualified.startswith("torch.nn."))

    def wrapper_function(self, qual: str) -> str:
        """``qual`` names an in-project pass-through decorator (:func:`passes_through`): "grad-off" when it
        calls the function with grad off, "pass-through" otherwise; "" for anything else."""
        found = self.resolve(qual)
        if not found or found[0] != "function":
            return ""
        module, _, name = found[1].rpartition(".")
        index = self.indexes.get(module)
        if index is None or name not in index.wrappers:
            return ""
        return "grad-off" if name in index.grad_off_wrappers else "pass-through"

    def torch_layer_base(self, cls_qual: str, depth: int = 0) -> Optional[str]:
        """The ``torch.nn`` class a class derives from, directly or through in-project bases
        (``class MaskedLinear(nn.Linear)``: ``"Linear"``); its ``__init__`` built ``self.weight`` and
        ``self.bias``. None when no base is a ``torch.nn`` class other than ``Module``, or when a base we
        cannot see (another library's class) comes first."""
        info = self._class(cls_qual)
        if info is None or depth > 10:
            return None
        for _, qualified, found in self._base_classes(cls_qual, info):
            if found is not None:
                layer = self.torch_layer_base(found, depth + 1)
                if layer:
                    return layer
            elif qualified.startswith("torch.nn.") and qualified.rsplit(".", 1)[-1] != "Module":
                return qualified.rsplit(".", 1)[-1]
            elif qualified not in PLAIN_BASES and qualified.rsplit(".", 1)[-1] not in PLAIN_BASES:
                return None
        return None

    def function_class(self, cls_qual: str) -> bool:
        """A custom autograd ``Function`` through an in-project base (``class Solver(SolverBase)`` with
        ``class SolverBase(torch.autograd.Function)``): autograd runs its ``forward`` and ``backward`` with grad
        off, as for a direct subclass (:func:`.grad.class_runs_without_grad`)."""
        return self._some_base(cls_qual, lambda qualified, found: qualified.rpartition(".")[2] == "Function"
                               and qualified.startswith("torch."))

    def _base_classes(self, cls_qual: str, info) -> List[Tuple[str, str, Optional[str]]]:
        """Each base as written, with imports resolved, and the in-project class it names (not itself) or None."""
        module = cls_qual.rpartition(".")[0]
        index = self.indexes.get(module)
        out = []
        for base in info[0]:
            head, _, rest = base.partition(".")
            qualified = index.imports[head] + (f".{rest}" if rest else "") \
                if index is not None and head in index.imports else base
            target = qualified if qualified != base or index is None or head not in index.classes \
                else f"{module}.{base}"
            found = self.resolve(target)
            out.append((base, qualified, found[1] if found and found[0] == "class" and found[1] != cls_qual else None))
        return out

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
        self._class_facts_memo = None

    def class_facts(self) -> Tuple[Tuple[str, ...], Tuple[Tuple[str, ...], ...], Tuple[str, ...], Tuple[str, ...]]:
        """What classes anywhere in the project say about every tensor and model output (:mod:`.class_facts`):
        the tensor subclasses (qualified, sorted: those with their own ``__torch_function__``, those whose bases
        surely reach torch's tensor classes, and a module that makes instances of one the index cannot name),
        the groups of fields some function making a model's output returns one tensor under, the forward hooks
        that may keep a module's output (``module:line``), and the names handed to ``torch.jit.script``."""
        memo = getattr(self, "_class_facts_memo", None)
        if memo is None:
            subclasses, groups, hooks, scripted = set(), set(), set(), set()
            for module, index in self.indexes.items():
                for name in index.torch_function_classes:
                    if name == class_facts.SUBCLASSING:
                        subclasses.add(f"{module} (`as_subclass`, or a class made in a function)")
                    elif self.tensor_class(f"{module}.{name}"):
                        subclasses.add(f"{module}.{name}")
                subclasses.update(f"{module}.{name}" for name in index.classes
                                  if self._surely_tensor_class(f"{module}.{name}"))
                groups.update(index.shared_fields)
                hooks.update(f"{module}:{line}" for line in index.output_hooks)
                scripted.update(index.scripted)
            # (tuples in a fixed order: the answer's text is a cache dependency, the same under any hash seed)
            memo = self._class_facts_memo = (tuple(sorted(subclasses, key=lambda q: ("(" in q, q))),  # named first
                                              tuple(sorted(groups)), tuple(sorted(hooks)), tuple(sorted(scripted)))
        return memo

    def attribute_builder(self, cls_qual: str, attr: str, default: bool = True) -> Optional[str]:
        """What ``self.<attr>`` was built from in ``__init__`` of this class, qualified: through the module's
        imports (``torch.nn.Parameter`` for ``self.raw = nn.Parameter(...)``), else as a name of the class's
        module (``pkg.conv.make_aggr``), in the project or not; a base's ``__init__`` when the class's does not
        build it (what the class's ``super().__init__`` passed, :mod:`.param_containers`); None unknown. A torch
        layer that is the default of the ``__init__`` parameter it is built from (``self.norm = norm_layer(dim)``,
        ``norm_layer=nn.LayerNorm``) is one class the attribute may hold: taken with ``default`` (a hazard it
        makes is reachable), None without (what a caller passes may be a custom Function)."""
        found = self._attribute_builder(cls_qual, attr, 0)
        if found is not None and found.startswith(DEFAULT_CLASS):  # `norm_layer=nn.LayerNorm`: the default class
            found = default_builder(found) if default else None
        return param_containers.builder(found)

    def _attribute_builder(self, cls_qual: str, attr: str, depth: int) -> Optional[str]:
        module, _, name = cls_qual.rpartition(".")
        index, info = self.indexes.get(module), self._class(cls_qual)
        if index is None or depth > 8:
            return None
        own = index.attributes.get(name, {})
        dotted = own.get(attr)
        if dotted is None:
            for base in info[0] if info else ():
                head, _, rest = base.partition(".")
                qual = index.imports[head] + (f".{rest}" if rest else "") if head in index.imports else None
                found = self.resolve(qual or f"{module}.{base}")
                torch_layer = ops.TORCH_LAYER_ATTRIBUTES.get(qual.rpartition(".")[2], {}).get(attr) \
                    if qual and qual.startswith("torch.nn.") else None
                if torch_layer:  # (`class Layer(nn.TransformerDecoderLayer)`: torch's `__init__` built it)
                    return f"torch.nn.{torch_layer}"
                if found and found[0] == "class" and found[1] != cls_qual:
                    hit = param_containers.through_super(self._attribute_builder(found[1], attr, depth + 1), own)
                    if hit and hit.startswith(DEFAULT_CLASS) and info and "__init__" in info[1]:
                        return None  # (this class's `__init__` may pass the base another class)
                    if hit:
                        return hit
            return None
        if dotted.endswith(TABLE_ITEM):  # `self.fc = FC_REGISTRY[kind](...)`: the table's one class, if one (and no
            classes = tables.lookup(self.indexes, f"{module}.{dotted[:-len(TABLE_ITEM)]}")  # other module imports it)
            return classes[0] if len(classes) == 1 else None
        mark = DEFAULT_CLASS if dotted.startswith(DEFAULT_CLASS) else ""  # (qualified where the default is written)
        dotted = dotted[len(mark):]
        if dotted.startswith("@"):
            return dotted
        head, _, rest = dotted.partition(".")
        return mark + (index.imports[head] + (f".{rest}" if rest else "") if head in index.imports
                       else f"{module}.{dotted}")

    def attribute_class(self, cls_qual: str, attr: str) -> Optional[str]:
        """The in-project class ``self.<attr>`` was built from in ``__init__`` (this class or a base)."""
        module, _, name = cls_qual.rpartition(".")
        index = self.indexes.get(module)
        if index is None:
            return None
        builder = self.attribute_builder(cls_qual, attr)
        if builder is not None:
            found = self.resolve(builder)
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
