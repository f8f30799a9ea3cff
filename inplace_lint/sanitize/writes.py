"""Which torch calls write which arguments (from the aten schemas), and the tensor facts read at a write."""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import torch

from ..findings import WriteKind
from ..rules import ipv004_expanded as _ipv004
from ..torch_facts import ops as _ops

#: Tensor dunders of augmented assignment -> the operator as written.
_AUGMENTED_DUNDERS = {
    "__iadd__": "+=", "__isub__": "-=", "__imul__": "*=", "__itruediv__": "/=", "__idiv__": "/=",
    "__ifloordiv__": "//=", "__imod__": "%=", "__ipow__": "**=", "__iand__": "&=", "__ior__": "|=",
    "__ixor__": "^=", "__ilshift__": "<<=", "__irshift__": ">>=", "__imatmul__": "@=",
}
#: ``*_`` names that change metadata, storage or autograd state, not values (same tables as the linter).
_NOT_DATA = _ops.METADATA_INPLACE_METHODS | _ops.NON_DATA_INPLACE_METHODS | frozenset(
    {"rename_", "retain_grad_", "module_load_", "_coalesced_"})
#: overlapping memory, as the static rule IPV004 says: ``fill_``/``zero_`` skip PyTorch's overlap check and fill
#: the whole tensor (its base gets the value, usually the intent: not reported); these others also skip it but
#: write some elements, so they silently write the base; the rest raise
FILLS = _ipv004.FILLS
SILENT_BASE_WRITES = _ipv004.SILENT_BASE_WRITES


@dataclasses.dataclass(frozen=True)
class Spec:
    """How one torch callable writes: which positional arguments, as which kind of write."""

    kind: WriteKind
    op: str
    positions: Tuple[int, ...] = (0,)
    inplace_pos: int = -1  # INPLACE_KWARG: index of the ``inplace`` parameter
    training_pos: int = -1  # dropout family: index of ``training`` (nothing is written when False)


def _schema_writes(name: str) -> Optional[Tuple[int, ...]]:
    """Positional indices that some overload of ``aten::<name>`` writes (``Tensor(a!)``), or None when
    aten has no op of that name."""
    try:
        packet = getattr(torch.ops.aten, name)
        overloads = packet.overloads()
    except (AttributeError, RuntimeError):
        return None
    written = set()
    for overload in overloads:
        try:
            arguments = getattr(packet, overload)._schema.arguments
        except (AttributeError, RuntimeError):
            continue
        for i, arg in enumerate(arguments):
            info = arg.alias_info
            if info is not None and info.is_write and not arg.kwarg_only:
                written.add(i)
    return tuple(sorted(written))


def _classify(func: Callable) -> Optional[Spec]:
    """The write a torch callable makes whatever its arguments, or None (``out=`` is checked per call)."""
    schema = getattr(func, "_schema", None)
    if schema is not None and hasattr(func, "overloadpacket"):  # torch.ops.aten.add_.Tensor: its own schema says
        name = getattr(func.overloadpacket, "__name__", "")
        positions = tuple(i for i, arg in enumerate(schema.arguments)
                          if arg.alias_info is not None and arg.alias_info.is_write and not arg.kwarg_only)
        if not positions or name in _NOT_DATA or name.lstrip("_") in _NOT_DATA:
            return None
        return Spec(WriteKind.FUNCTION, name, positions)
    name = getattr(func, "__name__", "")
    if not isinstance(name, str) or not name:
        return None
    if name == "__setitem__":
        return Spec(WriteKind.SUBSCRIPT, "[...] =")
    if name in _AUGMENTED_DUNDERS:
        return Spec(WriteKind.AUGMENTED, _AUGMENTED_DUNDERS[name])
    if name.endswith("_") and not name.endswith("__"):
        if name in _NOT_DATA or name.lstrip("_") in _NOT_DATA:
            return None
        positions = _schema_writes(name)
        if positions == ():
            return None
        kind = WriteKind.METHOD if hasattr(func, "__objclass__") else WriteKind.FUNCTION
        return Spec(kind, name, positions if positions is not None else (0,))
    if name in _ops.INPLACE_POSITION and getattr(func, "__module__", "") == "torch.nn.functional":
        training = -1
        try:
            params = list(inspect.signature(func).parameters)
            training = params.index("training") if "training" in params else -1
        except (TypeError, ValueError):
            pass
        return Spec(WriteKind.INPLACE_KWARG, f"{name}(inplace=True)", (0,), _ops.INPLACE_POSITION[name], training)
    return None


_SPECS: Dict[Any, Optional[Spec]] = {}


def spec_of(func: Callable) -> Optional[Spec]:
    try:
        return _SPECS[func]
    except KeyError:
        spec = _SPECS[func] = _classify(func)
        return spec
    except TypeError:  # unhashable callable
        return _classify(func)


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, torch.Tensor):
                yield item


def written_tensors(spec: Optional[Spec], args: Sequence[Any], kwargs: Dict[str, Any]) -> List[torch.Tensor]:
    """The tensors this call writes."""
    out: List[torch.Tensor] = []
    if spec is not None:
        if spec.kind is WriteKind.INPLACE_KWARG:
            pos = spec.inplace_pos
            inplace = args[pos] if len(args) > pos else kwargs.get("inplace", False)
            training = True
            if spec.training_pos >= 0:
                training = args[spec.training_pos] if len(args) > spec.training_pos else kwargs.get("training", True)
            if inplace and training:
                out.extend(_tensors(args[0] if args else kwargs.get("input")))
        else:
            for i in spec.positions:
                if i < len(args):
                    out.extend(_tensors(args[i]))
            if not args and "self" in kwargs:
                out.extend(_tensors(kwargs["self"]))
    target = kwargs.get("out")
    if target is not None:
        out.extend(_tensors(target))
    return out


# --------------------------------------------------------------------------------------------------
# Facts about a tensor
# --------------------------------------------------------------------------------------------------

def storage_key(t: torch.Tensor) -> int:
    """The address of ``t``'s storage (shared by all its views and ``.detach()``/``.data`` aliases; a
    DTensor's is its local shard's), or 0."""
    try:
        return t.untyped_storage().data_ptr()
    except Exception:  # wrapper subclasses have no storage of their own; meta tensors have none at all
        local = getattr(t, "_local_tensor", None)  # DTensor
        if isinstance(local, torch.Tensor) and local is not t:
            return storage_key(local)
        return 0
