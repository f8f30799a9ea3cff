"""The DTensor guard: no plain tensor of ndim > 0 left next to a DTensor (gather, or lift onto the mesh).

Source: verl PR 6935 (gather a DTensor with ``full_tensor()``, then compute), docs/pytorch-facts.md#dtensor-mixing
and #dtensor-module (where torch keeps the class).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Tuple

import torch

try:  # the class the rewritten code's DTensor guard tests against (runtime style imports it from here)
    from torch.distributed.tensor import DTensor
except ImportError:  # pragma: no cover - torch < 2.5 (docs/pytorch-facts.md#dtensor-module)
    try:
        from torch.distributed._tensor import DTensor  # type: ignore[no-redef]
    except ImportError:  # torch < 2.0, or a build without torch.distributed
        class DTensor:  # type: ignore[no-redef]
            """Stands in where torch has no DTensor: nothing is an instance of it, so the guard never gathers."""


@functools.lru_cache(maxsize=None)
def dtensor_types() -> Optional[Tuple[type, type]]:
    """(DTensor, Replicate) or None when torch.distributed has no DTensor."""
    try:
        if not torch.distributed.is_available():
            return None
        try:
            from torch.distributed.tensor import DTensor, Replicate
        except ImportError:  # torch 2.0 to 2.4 (docs/pytorch-facts.md#dtensor-module)
            from torch.distributed._tensor import DTensor, Replicate  # type: ignore[no-redef]
    except Exception:  # pragma: no cover - depends on the torch build
        return None
    return DTensor, Replicate


def is_dtensor(x: Any) -> bool:
    types = dtensor_types()
    return types is not None and isinstance(x, types[0])


def is_plain_tensor(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and not is_dtensor(x)


def tree_map(fn: Callable[[Any], Any], obj: Any) -> Any:
    """Apply ``fn`` to every tensor inside tuples / lists / dicts."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, tuple):
        return type(obj)(*[tree_map(fn, o) for o in obj]) if hasattr(obj, "_fields") \
            else tuple(tree_map(fn, o) for o in obj)
    if isinstance(obj, list):
        return [tree_map(fn, o) for o in obj]
    if isinstance(obj, dict):
        return {k: tree_map(fn, v) for k, v in obj.items()}
    return obj


def tensors_in(obj: Any) -> list:
    found: list = []

    def visit(t):
        found.append(t)
        return t

    tree_map(visit, obj)
    return found


def needs_mixing_fix(tensors) -> bool:
    """True when DTensors meet plain tensors of ndim > 0 (plain 0-dim tensors and
    Python numbers mix fine; docs/pytorch-facts.md#dtensor-mixing)."""
    has_dt = any(is_dtensor(t) for t in tensors)
    has_plain = any(is_plain_tensor(t) and t.ndim > 0 for t in tensors)
    return has_dt and has_plain


def replicate_on(t: torch.Tensor, mesh) -> torch.Tensor:
    DTensor, Replicate = dtensor_types()
    # run_check=False: every rank must pass the same values (they are
    # replicated operands such as a temperature or a mask).
    return DTensor.from_local(t, mesh, [Replicate()] * mesh.ndim, run_check=False)


def gather(t: Any) -> Any:
    return t.full_tensor() if is_dtensor(t) else t


def guard(target, payload, *, keep_sharded: bool, mutate_target: bool):
    """The DTensor guard.  Returns ``(target, payload)`` with no plain tensor
    of ndim > 0 left next to a DTensor.

    - default: every DTensor is gathered with ``full_tensor()`` (upstream fix,
      verl PR 6935); the result is a plain tensor;
    - ``keep_sharded`` (or an in-place op on a DTensor target, which must keep
      writing into that DTensor): plain operands are lifted onto the mesh as
      ``Replicate`` DTensors, no all-gather;
    - an in-place op on a plain target gathers its DTensor operands.
    """
    tensors = [target] + tensors_in(payload)
    if not needs_mixing_fix(tensors):
        return target, payload
    target_is_dt = is_dtensor(target)
    lift = keep_sharded if not mutate_target else target_is_dt
    if lift:
        mesh = target.device_mesh if target_is_dt else next(
            t for t in tensors if is_dtensor(t)).device_mesh

        def lift_fn(t):
            if is_plain_tensor(t) and t.ndim > 0:
                return replicate_on(t, mesh)
            return t

        return lift_fn(target), tree_map(lift_fn, payload)
    if mutate_target:  # plain target, DTensor operands
        return target, tree_map(gather, payload)
    return gather(target), tree_map(gather, payload)
