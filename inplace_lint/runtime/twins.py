""":func:`out_of_place` and :func:`setitem`: what an in-place op or item assignment would leave, as a new tensor."""

from __future__ import annotations

import numbers
from typing import Any, Union

import torch

from .dtensor import guard
from .hazard import inplace_hazard
from .tables import AUGMENTED_ASSIGNMENT_OPS, NOT_DATA_MUTATING_OPS, TWINS

InplaceMode = Union[bool, str]


def check_inplace_mode(inplace: InplaceMode) -> None:
    if inplace is not True and inplace is not False and inplace != "auto":
        raise ValueError(f"inplace must be True, False or 'auto', got {inplace!r}")


def _normalise_op(op: Any) -> str:
    if not isinstance(op, str):
        raise TypeError(f"op must be the in-place method name as a str, got {type(op).__name__}")
    if op in AUGMENTED_ASSIGNMENT_OPS:
        return AUGMENTED_ASSIGNMENT_OPS[op]
    if not op.endswith("_") or op.endswith("__") or len(op) < 2:
        raise ValueError(
            f"{op!r} is not an in-place method name: in-place tensor methods end in "
            "a single '_' (e.g. 'div_', 'masked_fill_')")
    if op in NOT_DATA_MUTATING_OPS:
        raise ValueError(
            f"{op!r} changes metadata, storage or autograd state rather than "
            "writing values; it has no out-of-place form")
    return op


def _finish_like(result: torch.Tensor, target: torch.Tensor, op: str) -> torch.Tensor:
    """Apply the in-place op's output rules: same shape, cast to target dtype."""
    if tuple(result.shape) != tuple(target.shape):
        raise RuntimeError(
            f"{op}: output with shape {list(target.shape)} doesn't match the "
            f"broadcast shape {list(result.shape)}")
    if result.dtype != target.dtype:
        if not torch.can_cast(result.dtype, target.dtype):
            raise RuntimeError(
                f"{op}: result type {result.dtype} can't be cast to the desired "
                f"output type {target.dtype}")
        result = result.to(target.dtype)
    return result


def out_of_place(target: torch.Tensor, op: str, *args: Any,
                 inplace: InplaceMode = False, keep_sharded: bool = False,
                 **kwargs: Any) -> torch.Tensor:
    """Return what ``target`` would hold after ``target.<op>(*args, **kwargs)``.

    Args:
        target: tensor (plain or DTensor) the in-place op would modify.
        op: in-place method name, e.g. ``"div_"``, ``"add_"`` (``alpha=``),
            ``"masked_fill_"``, ``"copy_"``, ``"normal_"``; augmented
            assignment dunders (``"__itruediv__"``...) are accepted too.
        *args, **kwargs: the op's arguments, unchanged.
        inplace: ``False`` (default) returns a new tensor; ``True`` runs the
            in-place op on ``target`` and returns ``target``; ``"auto"`` does
            that only when :func:`inplace_hazard` finds nothing (saving a
            full-size copy), else goes out of place.
        keep_sharded: DTensor target with a plain operand of ndim > 0: lift
            the operand onto the target's mesh as ``Replicate`` instead of
            gathering the target with ``full_tensor()``.

    Returns:
        A tensor with ``target.shape`` and ``target.dtype``.  Values equal the
        in-place result bit for bit: the twin op (``div``, ``mul``, ``add``,
        ``clamp``, ``masked_fill``, ``addcmul``, ``pow``, ``exp``...; table
        :data:`TWINS`) computes in the promoted dtype as the
        in-place op does, then casts to ``target.dtype`` (so a bf16 target
        divided by an fp32 tensor stays bf16).  Ops without a true twin
        (``copy_``, ``zero_``, ``fill_``, random fills, and any name not in the
        tables) run on ``target.clone()``, which breaks the alias (docs/pytorch-facts.md#may-alias).
        A DTensor target mixed with a plain operand gives a plain tensor by
        default (gathered), a DTensor with ``keep_sharded=True``.

    Raises:
        ValueError: ``op`` is not an in-place method name (no single trailing
            ``_``) or does not write values (``requires_grad_``,
            ``share_memory_``, ``set_``, ``detach_``, ``resize_``, ``t_``...;
            :data:`NOT_DATA_MUTATING_OPS`), or ``inplace`` is invalid.
        AttributeError: ``target`` has no method ``op``.
        RuntimeError: where the in-place op would: the broadcast shape differs
            from ``target.shape``, or the result dtype cannot be cast to
            ``target.dtype`` (e.g. ``int64.div_(2)``).

    Source: PyTorch "Tensor Views" and autograd "In-place operations"; verl PR
    6935 (gather a DTensor, then compute out of place).
    """
    check_inplace_mode(inplace)
    op = _normalise_op(op)
    if not isinstance(target, torch.Tensor):
        raise TypeError(f"target must be a torch.Tensor, got {type(target).__name__}")
    if not callable(getattr(target, op, None)):
        raise AttributeError(f"{type(target).__name__} has no in-place method {op!r}")

    if inplace == "auto":
        inplace = inplace_hazard(target, args, kwargs) is None
    if inplace:
        target_, (args_, kwargs_) = guard(target, (args, kwargs),
                                          keep_sharded=keep_sharded, mutate_target=True)
        getattr(target_, op)(*args_, **kwargs_)
        return target_

    target, (args, kwargs) = guard(target, (args, kwargs),
                                   keep_sharded=keep_sharded, mutate_target=False)
    twin = TWINS.get(op)
    if twin is not None:
        result = getattr(target, twin)(*args, **kwargs)
        return _finish_like(result, target, op)
    result = target.clone()
    getattr(result, op)(*args, **kwargs)
    return result


def setitem(target: torch.Tensor, index: Any, value: Any, *,
            inplace: InplaceMode = False, keep_sharded: bool = False) -> torch.Tensor:
    """Return ``target`` with ``target[index] = value`` applied.

    Out of place by default: ``out = target.clone(); out[index] = value``
    (clone-first; ``clone()`` breaks the alias, docs/pytorch-facts.md#may-alias).  The result keeps
    ``target.dtype`` and shape: a tensor ``value`` of another dtype is cast to
    ``target.dtype`` first (subscript assignment casts for basic indexing but
    raises "Index put requires the source and destination dtypes match" for
    advanced indexing; here both cast).  A full-shape bool mask with a scalar
    (or 0-d) value is computed as ``target.masked_fill(mask, value)`` (same
    values, no clone).  ``inplace=True`` assigns into ``target`` and returns it;
    ``inplace="auto"`` does so only when :func:`inplace_hazard` finds
    nothing.  DTensor target with a plain tensor index or value of ndim > 0:
    gathered with ``full_tensor()`` (plain result) by default, or the plain
    tensors are lifted onto the mesh as ``Replicate`` with ``keep_sharded``
    (DTensor indexing support then depends on torch's sharding rules).

    Raises whatever the subscript assignment raises (IndexError,
    RuntimeError for shape mismatches), and ValueError for a bad ``inplace``.
    """
    check_inplace_mode(inplace)
    if not isinstance(target, torch.Tensor):
        raise TypeError(f"target must be a torch.Tensor, got {type(target).__name__}")
    if inplace == "auto":
        inplace = inplace_hazard(target, index, value) is None
    target, (index, value) = guard(target, (index, value), keep_sharded=keep_sharded,
                                   mutate_target=bool(inplace))
    if isinstance(value, torch.Tensor) and value.dtype != target.dtype:
        # copy_ (basic indexing) casts, index_put_ (advanced indexing) refuses
        # a different dtype: cast first so both keep target.dtype.
        value = value.to(target.dtype)
    if (isinstance(index, torch.Tensor) and index.dtype == torch.bool
            and tuple(index.shape) == tuple(target.shape)
            and (isinstance(value, numbers.Number)
                 or (isinstance(value, torch.Tensor) and value.ndim == 0))):
        # x[mask] = v with a full-shape bool mask is masked_fill: same values,
        # no clone, and elementwise, so it also works on a sharded DTensor
        # (where index_put with a mask on the sharded dim does not).
        if inplace:
            return target.masked_fill_(index, value)
        return target.masked_fill(index, value)
    out = target if inplace else target.clone()
    out[index] = value
    return out
