"""Saved tensors (saved-tensor hooks) and top-level module outputs, tracked by weak reference."""
from __future__ import annotations

import dataclasses
import threading
import weakref
from typing import Any, Dict, Iterator, Optional, Tuple

import torch

from .writes import storage_key


class _Packed:
    """What autograd keeps for one saved tensor while our hooks are on: a detached alias (the same
    storage and version counter, no ``grad_fn``, so no reference cycle) and its version when saved."""

    __slots__ = ("tensor", "version", "key", "registry")

    def __init__(self, tensor: torch.Tensor, version: int, key: int, registry: Dict[int, int]):
        self.tensor = tensor
        self.version = version
        self.key = key
        self.registry = registry
        if key:
            registry[key] = registry.get(key, 0) + 1

    def __del__(self) -> None:
        key, registry = self.key, self.registry
        if key:
            left = registry.get(key, 0) - 1
            if left > 0:
                registry[key] = left
            else:
                registry.pop(key, None)


#: storage address -> how many tensors autograd saved from that storage are still held by a live graph;
#: one table for every sanitizer, so that a sanitizer nested in another (a test's own inside the pytest
#: plugin's) and the outer one both see the saves made while either is active
SAVED: Dict[int, int] = {}
HOOKS = threading.local()  # .installed: a sanitizer of this thread has the saved-tensor hooks on


def pack(t: torch.Tensor) -> _Packed:
    return _Packed(t.detach(), t._version, storage_key(t), SAVED)


def unpack(packed: _Packed) -> torch.Tensor:
    tensor = packed.tensor
    if tensor._version != packed.version:
        # what autograd would raise without hooks (it skips this check when saved-tensor hooks are set)
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"[{tensor.type()} {list(tensor.shape)}] is at version {tensor._version}; expected version "
            f"{packed.version} instead. The inplace-lint sanitizer reported the write that did it (IPV006).")
    return tensor


def saved_hooks_allowed() -> bool:
    """False inside ``torch.autograd.graph.disable_saved_tensors_hooks`` (installing hooks would raise)."""
    get = getattr(torch._C._autograd, "_saved_tensors_hooks_get_disabled_error_message", None)
    try:
        return get is None or get() is None
    except RuntimeError:
        return True


def output_tensors(value: Any, depth: int = 2, where: str = "") -> Iterator[Tuple[str, torch.Tensor]]:
    """``(where, tensor)`` for the tensors a module's output holds: itself (``where`` empty), or items and
    fields of a tuple, list, mapping or dataclass-like object (``ModelOutput``), ``depth`` levels down;
    ``where`` is ``.logits`` / ``[0]``."""
    if isinstance(value, torch.Tensor):
        yield where, value
        return
    if depth <= 0 or value is None or isinstance(value, (str, bytes, int, float, bool)):
        return
    if isinstance(value, (tuple, list)):
        items = [(f"{where}[{i}]", item) for i, item in enumerate(value)]
    elif isinstance(value, dict):
        items = [(f"{where}.{k}" if isinstance(k, str) and k.isidentifier() else f"{where}[{k!r}]", v)
                 for k, v in list(value.items())]
    else:
        items = [(f"{where}.{k}", v) for k, v in list(getattr(value, "__dict__", {}).items())]
    for sub, item in items:
        yield from output_tensors(item, depth - 1, sub)


@dataclasses.dataclass(eq=False)
class OutputRecord:
    tensor: "weakref.ReferenceType[torch.Tensor]"
    holder: Optional[weakref.ReferenceType]  # the output object when it can be weakly referenced
    module: str
    container: bool  # the output object was a container (tuple, dict, ModelOutput), not the tensor itself
    where: str  # ``.logits``, ``[0]``; empty when the output is the tensor
