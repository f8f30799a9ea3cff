"""What an ``isinstance`` test says of a value: the arms of an ``if`` in which a name holds no tensor.

``if isinstance(y, TensorList): for yi in y: yi /= s`` loops over a container, not over a tensor (whose
loop would be ``unbind``, a multi-output view): in that arm ``y`` holds none of the tensors the analysis
followed into it. A class is a tensor class when it is ``torch.Tensor`` or a subclass (``nn.Parameter``,
``DTensor``, a project class with such a base); builtins, numpy, ``nn.Module`` and any other class are not.
"""
from __future__ import annotations

import ast
from typing import Callable, Optional, Tuple

from .astutil import dotted_name
from .env import EMPTY
from .names import qualify_dotted

#: bases that make a class no ``nn.Module`` (qualified, or as builtins are written)
PLAIN_BASES = frozenset({
    "object", "abc.ABC", "typing.Generic", "typing.Protocol", "typing.NamedTuple", "enum.Enum", "enum.IntEnum",
    "dict", "list", "tuple", "set", "str", "int", "Exception", "collections.OrderedDict", "collections.UserDict",
})
#: decorators that compile a function with TorchScript (what it does to a tensor is not eager torch's)
SCRIPT_DECORATORS = frozenset({"torch.jit.script", "jit.script"})
#: classes that are never tensors without an import (builtins and ``typing``/``collections.abc`` names)
_BUILTIN_CLASSES = frozenset({
    "list", "tuple", "dict", "set", "frozenset", "str", "bytes", "bytearray", "int", "float", "bool", "complex",
    "range", "slice", "type", "Sequence", "Mapping", "MutableMapping", "MutableSequence", "Iterable", "Iterator",
    "Generator", "Callable", "Number", "Integral", "Real", "List", "Tuple", "Dict", "Set", "FrozenSet",
})


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
    return "Tensor" in name or name in ("Parameter", "UninitializedParameter", "Buffer", "UninitializedBuffer")


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
    project's, is surely no tensor class."""
    if qual is None:
        return False  # a local value (`cls = type(x)`): unknown
    if qual.split(".")[0] == "torch":
        return not torch_class_is_tensor(qual)
    if not imported:
        return qual in _BUILTIN_CLASSES  # a name we cannot see: unknown unless a builtin
    # another library's class, or a project class outside what was loaded (one file alone): a tensor subclass
    # from outside torch is rare, and taking it for none only loses findings in that arm
    return True


class ClassFactsMixin:
    """What the walk knows of classes and types (a part of :class:`~.dataflow.Scope`): ``isinstance`` arms,
    nested classes' bases, TorchScript-compiled functions."""

    def holds_no_tensor(self, key: str) -> None:
        """Where an ``isinstance`` test says ``key`` holds no tensor (:mod:`.narrowing`): nothing it held is
        followed there (a loop over it is over a container's items, not ``unbind``)."""
        if key in self.env:
            del self.env[key]
            self.bindings.append((key, EMPTY))  # an `if` merges the keys its arms changed

    def not_tensor_class(self, node: ast.expr) -> bool:
        """The class expression ``node`` (in ``isinstance(x, node)``) names no tensor class: a project class
        with no ``torch.Tensor`` base, a builtin, torch's ``nn.Module``, another library's class."""
        dotted = dotted_name(node)
        if dotted is None:
            return False
        qual, imported = qualify_dotted(dotted, self.names, self.is_local_name)
        if self.ctx is not None:
            found = self.ctx.resolve(qual if imported and qual else f"{self.ctx.module}.{dotted}")
            if found is not None and found[0] == "class":
                return not self.ctx.tensor_class(found[1])
        return class_is_not_tensor(qual, imported)

    def nested_class_plain(self, node: ast.ClassDef) -> Optional[bool]:
        """For a class inside a function or class (the project indexes top-level classes only): whether each
        base is plain (:data:`PLAIN_BASES`, or a plain project class); None for a top-level class."""
        if self.ctx is None or self.qual == self.ctx.module:
            return None
        for base in node.bases:
            dotted = dotted_name(base)
            if dotted is None or dotted in PLAIN_BASES:
                continue
            qual, imported = qualify_dotted(dotted, self.names, self.is_local_name)
            found = self.ctx.resolve(qual if imported and qual else f"{self.ctx.module}.{dotted}")
            if qual in PLAIN_BASES or (found is not None and found[0] == "class" and self.ctx.plain_class(found[1])):
                continue
            return False
        return True

    def scripted_function(self, node) -> bool:
        """``node`` (a ``def``) is compiled by ``torch.jit.script``."""
        return any(qualify_dotted(dotted_name(d.func if isinstance(d, ast.Call) else d), self.names,
                                  self.is_local_name)[0] in SCRIPT_DECORATORS for d in node.decorator_list)
