"""What an ``isinstance`` test says of a value: the arms of an ``if`` in which a name holds no tensor.

``if isinstance(y, TensorList): for yi in y: yi /= s`` loops over a container, not over a tensor (whose
loop would be ``unbind``, a multi-output view): in that arm ``y`` holds none of the tensors the analysis
followed into it. A class is a tensor class when it is ``torch.Tensor`` or a subclass (``nn.Parameter``,
``DTensor``, a project class with such a base); builtins, numpy, ``nn.Module`` and any other class are not.
"""
from __future__ import annotations

import ast
from typing import Callable, Dict, Optional, Tuple

from ..findings import Step, StepKind
from .astutil import dotted_name
from .names import qualify_dotted
from .summaries import param_index

#: bases that make a class no ``nn.Module`` (qualified, or as builtins are written)
PLAIN_BASES = frozenset({
    "object", "abc.ABC", "typing.Generic", "typing.Protocol", "typing.NamedTuple", "enum.Enum", "enum.IntEnum",
    "dict", "list", "tuple", "set", "str", "int", "Exception", "collections.OrderedDict", "collections.UserDict",
})
#: decorators that compile a function with TorchScript (what it does to a tensor is not eager torch's)
SCRIPT_DECORATORS = frozenset({"torch.jit.script", "jit.script"})
#: classes no tensor is an instance of (checked on torch 2.13: a tensor passes ``Iterable``, ``Sized``,
#: ``Container``, ``Collection``, ``Reversible``, ``Hashable`` and ``typing.SupportsFloat``, so those say nothing)
_NON_TENSOR_CLASSES = frozenset({
    "list", "tuple", "dict", "set", "frozenset", "str", "bytes", "bytearray", "int", "float", "bool", "complex",
    "range", "slice", "type", "Sequence", "Mapping", "MutableMapping", "MutableSequence", "Iterator", "Generator",
    "Callable", "Number", "Integral", "Real", "List", "Tuple", "Dict", "Set", "FrozenSet",
})
#: modules whose classes are never tensors
_NON_TENSOR_MODULES = frozenset({"builtins", "collections", "typing", "numbers", "numpy"})


def plain_bases(bases, plain_class: Callable[[str], bool]) -> bool:
    """Every base (``(as written, qualified, the project class it names or None)``) is a plain base
    (:data:`PLAIN_BASES`) or a project class ``plain_class`` says is plain: the one rule of
    :meth:`~.resolve.Resolver.plain_class` and :meth:`ClassFactsMixin.nested_class_plain`."""
    return all(base in PLAIN_BASES or qualified in PLAIN_BASES or (found is not None and plain_class(found))
               for base, qualified, found in bases)


def isinstance_subject(test: ast.expr) -> Optional[Tuple[ast.expr, ast.expr, bool]]:
    """``isinstance(x, C)`` -> (x, C, True); ``not isinstance(x, C)`` -> (x, C, False); else None."""
    positive = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, positive = test.operand, not positive
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" \
            and len(test.args) == 2 and not test.keywords:
        return test.args[0], test.args[1], positive
    return None


def torch_class_is_tensor(qual: str) -> bool:
    """A class of torch's: ``torch.Tensor``, ``nn.Parameter``, ``DTensor``, ``nn.Buffer`` are tensors;
    ``nn.Module``, ``torch.Size``, ``PackedSequence``, ``torch.dtype`` are not."""
    name = qual.rpartition(".")[2]
    return "Tensor" in name or name in ("Parameter", "UninitializedParameter", "Buffer", "UninitializedBuffer",
                                        "Variable")


def no_tensor_arms(test: ast.expr, not_tensor: Callable[[ast.expr], bool]) -> Tuple[Optional[str], Optional[str]]:
    """(the name that holds no tensor in the ``if``'s body, the one in its ``else``), each or None.
    ``not_tensor(C)``: the class expression ``C`` names no tensor class (so ``isinstance(x, C)`` true means ``x``
    is no tensor). ``isinstance(x, torch.Tensor)`` false does too; ``a and isinstance(x, list)`` narrows the
    body, ``a or not isinstance(x, list)`` the else."""
    found = _one(test, not_tensor)
    if found is not None:
        return found
    if isinstance(test, ast.BoolOp):
        parts = [_one(v, not_tensor) for v in test.values]
        if isinstance(test.op, ast.And):
            return next((p[0] for p in parts if p is not None and p[0]), None), None
        return None, next((p[1] for p in parts if p is not None and p[1]), None)
    return None, None


def _one(test: ast.expr, not_tensor: Callable[[ast.expr], bool]) -> Optional[Tuple[Optional[str], Optional[str]]]:
    found = isinstance_subject(test)
    if found is None:
        return None
    subject, classes, positive = found
    key = dotted_name(subject)
    if key is None:
        return None
    members = classes.elts if isinstance(classes, ast.Tuple) else [classes]
    if members and all(not_tensor(c) for c in members):
        return (key, None) if positive else (None, key)
    if len(members) == 1 and _is_tensor_name(classes):
        return (None, key) if positive else (key, None)
    return None, None


def _is_tensor_name(node: ast.expr) -> bool:
    name = dotted_name(node)
    return name in ("torch.Tensor", "Tensor")


def class_is_not_tensor(qual: Optional[str], imported: bool) -> bool:
    """Whether the class named ``qual`` (imports resolved; ``imported``: through an import), not one of the
    project's, is surely no tensor class: a builtin or ``collections.abc``/``typing``/``numbers``/numpy class no
    tensor passes, or a torch class that is no tensor (``nn.Module``, ``torch.Size``). Anything else (another
    library's name, which may be a tuple of classes or an alias of ``torch.Tensor``) is unknown."""
    if qual is None:
        return False  # a local value (`cls = type(x)`): unknown
    head, _, name = qual.rpartition(".")
    if qual.split(".")[0] == "torch":
        return not torch_class_is_tensor(qual)
    if not imported:
        return qual in _NON_TENSOR_CLASSES
    return head.split(".")[0] in _NON_TENSOR_MODULES and name in _NON_TENSOR_CLASSES | {"ndarray", "generic"}


def init_attributes(cls: ast.ClassDef) -> Dict[str, str]:
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
            called = False  # built by a call: a factory function counts too (`aggr_resolver(aggr)`)
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
                if isinstance(value, ast.Name) and annotated.get(value.id):
                    name = annotated[value.id]  # self.kernel = kernel, with `kernel: Kernel`
                    value = ast.Name(id=name) if "." not in name else ast.parse(name, mode="eval").body
                else:
                    called, value = isinstance(value, ast.Call), (value.func if isinstance(value, ast.Call) else None)
            elif isinstance(node, ast.AnnAssign):
                target, value = node.target, node.annotation
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == me:
                name = dotted_name(value) if value is not None else None
                if name and (called or name.rpartition(".")[2][:1].isupper()):
                    out.setdefault(target.attr, name)
    return out


class ClassFactsMixin:
    """What the walk knows of classes and types (a part of :class:`~.dataflow.Scope`): ``isinstance`` arms,
    nested classes' bases, TorchScript-compiled functions."""

    def holds_no_tensor(self, key: str) -> None:
        """Where an ``isinstance`` test says ``key`` holds no tensor (:mod:`.narrowing`): none of the single
        tensors it held is followed there (a loop over it is over a container's items, not ``unbind``); what
        is known to be a container (``x.chunk(2)``, a model's output object) stays, and a parameter's
        placeholder stands there only for the containers its callers pass (:attr:`StepKind.NOT_TENSOR`)."""
        held = self.env.get(key)
        if held:
            kept = frozenset(o if o.is_container else o.extend(Step(StepKind.NOT_TENSOR, "isinstance", o.root_line))
                             for o in held if o.is_container or param_index(o) is not None)
            if kept != held:
                self.env[key] = kept
                if not kept:
                    del self.env[key]
                self.bindings.append((key, kept))  # an `if` merges the keys its arms changed

    def not_tensor_class(self, node: ast.expr) -> bool:
        """The class expression ``node`` (in ``isinstance(x, node)``) names no tensor class: a project class
        with no ``torch.Tensor`` base, a builtin, torch's ``nn.Module``, another library's class."""
        dotted = dotted_name(node)
        if dotted is None:
            return False
        qual, imported, here = self._qualified(dotted)
        if self.ctx is not None:
            found = self.ctx.resolve(here)
            if found is not None:
                return found[0] == "class" and not self.ctx.tensor_class(found[1])
        return class_is_not_tensor(qual, imported)

    def _qualified(self, dotted: str) -> Tuple[Optional[str], bool, str]:
        """``dotted`` (a name as this module writes it): :func:`~.names.qualify_dotted`'s (qualified name,
        imported), and the name to resolve in the project (through the imports, else in this module)."""
        qual, imported = qualify_dotted(dotted, self.names, self.is_local_name)
        module = self.ctx.module if self.ctx is not None else ""
        return qual, imported, qual if imported and qual else f"{module}.{dotted}"

    def nested_class_builders(self, node: ast.ClassDef) -> Optional[Dict[str, str]]:
        """For a class inside a function or class: what its ``__init__`` built each ``self.<attr>`` from,
        qualified as :meth:`~.resolve.Resolver.attribute_builder` does for a top-level class; None otherwise."""
        if self.ctx is None or self.qual == self.ctx.module:
            return None
        return {attr: self._qualified(dotted)[2] for attr, dotted in init_attributes(node).items()}

    def nested_class_plain(self, node: ast.ClassDef) -> Optional[bool]:
        """For a class inside a function or class (the project indexes top-level classes only): whether each
        base is plain (:data:`PLAIN_BASES`, or a plain project class); None for a top-level class."""
        if self.ctx is None or self.qual == self.ctx.module:
            return None
        bases = []
        for base in node.bases:
            dotted = dotted_name(base)
            if dotted is None:
                return False  # `Base[T]`, `make_base()`: unknown
            qual, _, here = self._qualified(dotted)
            found = self.ctx.resolve(here)
            bases.append((dotted, qual, found[1] if found is not None and found[0] == "class" else None))
        return plain_bases(bases, self.ctx.plain_class)

    def scripted_function(self, node) -> bool:
        """``node`` (a ``def``) is compiled by ``torch.jit.script``."""
        return any(qualify_dotted(dotted_name(d.func if isinstance(d, ast.Call) else d), self.names,
                                  self.is_local_name)[0] in SCRIPT_DECORATORS for d in node.decorator_list)
