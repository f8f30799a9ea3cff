"""Runtime helpers that the inplace-lint codemod calls: out-of-place twins of
in-place tensor ops, with in-place dtype semantics and a DTensor guard.

This is the only module of :mod:`inplace_lint` that imports torch; the linter
and the codemod never import it.

Public API
----------
- :func:`scale_logits` -- temperature scaling of logits as RL trainers need it
  (verl PR 6935 "[fsdp] fix: FSDP logits temperature scaling for view
  tensors" and its follow-ups; verl 0.9.1 ``_scale_logits_by_temperature``).
- :func:`out_of_place` -- what ``target.<op>(*args, **kwargs)`` would leave in
  ``target``, as a new tensor with ``target``'s dtype and shape.
- :func:`setitem` -- ``target[index] = value`` without mutating ``target``.
- :func:`inplace_hazard` -- why PyTorch would refuse (or later fail on) an
  in-place op on a tensor, read from the tensor's own autograd metadata.

Sources of the behaviour: PyTorch docs "Tensor Views"
(https://pytorch.org/docs/stable/tensor_view.html), autograd mechanics
"In-place operations with autograd"
(https://pytorch.org/docs/stable/notes/autograd.html), torch's
``check_inplace`` / ``handle_view_on_rebase`` (VariableTypeUtils.h), and the facts checked on
torch 2.13 in ``docs/pytorch-facts.md`` (cited by anchor, e.g. ``#custom-function-view``).
"""

from __future__ import annotations

import functools
import numbers
from typing import Any, Callable, Optional, Tuple, Union

import torch

from ..torch_facts import ops as _ops

__all__ = [
    "DTensor",
    "scale_logits",
    "out_of_place",
    "setitem",
    "inplace_hazard",
    "TWINS",
    "CLONE_FIRST_OPS",
    "NOT_DATA_MUTATING_OPS",
    "AUGMENTED_ASSIGNMENT_OPS",
]

InplaceMode = Union[bool, str]

try:  # the class the rewritten code's DTensor guard tests against (runtime style imports it from here)
    from torch.distributed.tensor import DTensor
except ImportError:  # pragma: no cover - torch < 2.5 (docs/pytorch-facts.md#dtensor-module)
    try:
        from torch.distributed._tensor import DTensor  # type: ignore[no-redef]
    except ImportError:  # torch < 2.0, or a build without torch.distributed
        class DTensor:  # type: ignore[no-redef]
            """Stands in where torch has no DTensor: nothing is an instance of it, so the guard never gathers."""

# --------------------------------------------------------------------------
# Op tables
# --------------------------------------------------------------------------

#: In-place op -> its out-of-place twin, which computes the same values from the same arguments
#: (the in-place op then only casts to ``target.dtype`` and requires the broadcast shape to equal
#: ``target.shape``, which :func:`out_of_place` reproduces). THE table of twins:
#: :data:`inplace_lint.torch_facts.ops.OUT_OF_PLACE_TWINS`, generated from torch by
#: ``scripts/generate_ops.py`` (whose ``NOT_TWINS`` names the same-named methods that are not twins:
#: ``bernoulli_``, ``float_power_``, ``index_reduce_``). Fix planning and the codemod read it too.
TWINS = _ops.OUT_OF_PLACE_TWINS

#: Names ending in ``_`` that change metadata, storage or autograd state
#: rather than writing values: :func:`out_of_place` refuses them.
#: ``set_`` rebinds storage (an "out-of-place set_" is just the source
#: tensor); ``resize_``/``resize_as_`` change shape and may leave
#: uninitialised memory; the view-like ones change shape/strides only.
NOT_DATA_MUTATING_OPS = (
    _ops.METADATA_INPLACE_METHODS | _ops.NON_DATA_INPLACE_METHODS
    | frozenset({"rename_", "retain_grad_", "module_load_", "_coalesced_"})
)

#: In-place ops with no out-of-place twin: they run on a clone (``copy_``, ``zero_``, ``fill_``,
#: random fills, ``bernoulli_``, ...). Derived from :data:`TWINS`, not a second list.
CLONE_FIRST_OPS = frozenset(_ops.TENSOR_INPLACE_METHODS) - frozenset(TWINS) - NOT_DATA_MUTATING_OPS

#: Augmented-assignment dunders accepted as ``op`` and the in-place method each one is
#: (derived from the one operator table, :data:`inplace_lint.torch_facts.ops.OPERATORS`).
AUGMENTED_ASSIGNMENT_OPS = _ops.DUNDER_INPLACE


# --------------------------------------------------------------------------
# DTensor helpers (torch.distributed may be unavailable)
# --------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _dtensor_types() -> Optional[Tuple[type, type]]:
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


def _is_dtensor(x: Any) -> bool:
    types = _dtensor_types()
    return types is not None and isinstance(x, types[0])


def _is_plain_tensor(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and not _is_dtensor(x)


def _tree_map(fn: Callable[[Any], Any], obj: Any) -> Any:
    """Apply ``fn`` to every tensor inside tuples / lists / dicts."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, tuple):
        return type(obj)(*[_tree_map(fn, o) for o in obj]) if hasattr(obj, "_fields") \
            else tuple(_tree_map(fn, o) for o in obj)
    if isinstance(obj, list):
        return [_tree_map(fn, o) for o in obj]
    if isinstance(obj, dict):
        return {k: _tree_map(fn, v) for k, v in obj.items()}
    return obj


def _tensors_in(obj: Any) -> list:
    found: list = []

    def visit(t):
        found.append(t)
        return t

    _tree_map(visit, obj)
    return found


def _needs_mixing_fix(tensors) -> bool:
    """True when DTensors meet plain tensors of ndim > 0 (plain 0-dim tensors and
    Python numbers mix fine; docs/pytorch-facts.md#dtensor-mixing)."""
    has_dt = any(_is_dtensor(t) for t in tensors)
    has_plain = any(_is_plain_tensor(t) and t.ndim > 0 for t in tensors)
    return has_dt and has_plain


def _replicate_on(t: torch.Tensor, mesh) -> torch.Tensor:
    DTensor, Replicate = _dtensor_types()
    # run_check=False: every rank must pass the same values (they are
    # replicated operands such as a temperature or a mask).
    return DTensor.from_local(t, mesh, [Replicate()] * mesh.ndim, run_check=False)


def _gather(t: Any) -> Any:
    return t.full_tensor() if _is_dtensor(t) else t


def _guard(target, payload, *, keep_sharded: bool, mutate_target: bool):
    """The DTensor guard.  Returns ``(target, payload)`` with no plain tensor
    of ndim > 0 left next to a DTensor.

    - default: every DTensor is gathered with ``full_tensor()`` (upstream fix,
      verl PR 6935); the result is a plain tensor;
    - ``keep_sharded`` (or an in-place op on a DTensor target, which must keep
      writing into that DTensor): plain operands are lifted onto the mesh as
      ``Replicate`` DTensors, no all-gather;
    - an in-place op on a plain target gathers its DTensor operands.
    """
    tensors = [target] + _tensors_in(payload)
    if not _needs_mixing_fix(tensors):
        return target, payload
    target_is_dt = _is_dtensor(target)
    lift = keep_sharded if not mutate_target else target_is_dt
    if lift:
        mesh = target.device_mesh if target_is_dt else next(
            t for t in tensors if _is_dtensor(t)).device_mesh

        def lift_fn(t):
            if _is_plain_tensor(t) and t.ndim > 0:
                return _replicate_on(t, mesh)
            return t

        return lift_fn(target), _tree_map(lift_fn, payload)
    if mutate_target:  # plain target, DTensor operands
        return target, _tree_map(_gather, payload)
    return _gather(target), _tree_map(_gather, payload)


# --------------------------------------------------------------------------
# inplace_hazard
# --------------------------------------------------------------------------

_CREATION_META_REASONS = {
    "IN_CUSTOM_FUNCTION": (
        "is a view created inside a custom autograd Function (or an input it "
        "returned as-is); PyTorch forbids modifying it in place "
        "(\"This view was created inside a custom Function\")"
    ),
    "MULTI_OUTPUT_NODE": (
        "is one of several views returned by one op (split/chunk/unbind); "
        "PyTorch forbids modifying it in place "
        "(\"This view is the output of a function that returns multiple views\")"
    ),
    "NO_GRAD_MODE": (
        "is a view created in no_grad mode; modifying it in place with grad "
        "mode enabled is forbidden (\"A view was created in no_grad mode\")"
    ),
    "INFERENCE_MODE": (
        "is a view created in inference mode; modifying it in place outside "
        "inference mode is forbidden"
    ),
}


def _creation_meta(t: torch.Tensor) -> Optional[str]:
    """Name of the view's CreationMeta (``DEFAULT``, ``IN_CUSTOM_FUNCTION``,
    ``MULTI_OUTPUT_NODE``, ``NO_GRAD_MODE``, ``INFERENCE_MODE``), or None when
    torch cannot tell (private API absent, or no differentiable view meta)."""
    getter = getattr(getattr(torch._C, "_autograd", None), "_get_creation_meta", None)
    if getter is None:
        return None
    try:
        meta = getter(t)
    except RuntimeError:  # not a differentiable view: "Expected meta != nullptr"
        return None
    name = getattr(meta, "name", None) or str(meta).rsplit(".", 1)[-1]
    return name


def _has_internal_overlap(t: torch.Tensor) -> bool:
    local = t.to_local() if _is_dtensor(t) else t
    check = getattr(torch, "_debug_has_internal_overlap", None)
    if check is not None:
        try:
            status = int(check(local))  # 0 NO, 1 YES, 2 TOO_HARD
        except Exception:
            status = 2
        if status == 0:
            return False
        if status == 1:
            return True
    # TOO_HARD or no helper: a broadcast (stride 0, size > 1) dim overlaps.
    return any(st == 0 and sz > 1 for sz, st in zip(local.shape, local.stride()))


def _partial_overlap(target: torch.Tensor, other: torch.Tensor) -> bool:
    """Operand shares storage with target without being the same view."""
    if _is_dtensor(target) or _is_dtensor(other) or other is target:
        return False
    if target.device != other.device or other.numel() == 0 or target.numel() == 0:
        return False
    try:
        same_storage = (target.untyped_storage().data_ptr()
                        == other.untyped_storage().data_ptr())
    except Exception:
        return False
    if not same_storage:
        return False
    return not (target.data_ptr() == other.data_ptr()
                and target.shape == other.shape
                and target.stride() == other.stride())


def _saved_result_of_grad_fn(t: torch.Tensor) -> Optional[str]:
    """Name of the node that saved ``t`` (or its base) as its *result* for
    backward (exp, sigmoid, tanh, softmax, log_softmax, relu, sqrt, rsqrt,
    logsumexp...; docs/pytorch-facts.md#saved-output); in-place on it fails at backward."""
    for cand in (t, t._base if t._is_view() else None):
        if cand is None or not cand.requires_grad:
            continue
        node = cand.grad_fn
        if node is None:
            continue
        try:
            saved = getattr(node, "_saved_result", None)
        except RuntimeError:  # buffers already freed by a backward pass
            continue
        if isinstance(saved, torch.Tensor):
            return node.name()
    return None


def inplace_hazard(tensor: torch.Tensor, *operands: Any) -> Optional[str]:
    """Why an in-place op on ``tensor`` would be refused, or fail later.

    Reads only the tensor's own metadata (and the operands', optional: the
    other arguments of the planned in-place op, which decide whether autograd
    records it).  Returns a one-line reason, or ``None`` when in place is
    allowed as far as the metadata can tell.

    Conditions (PyTorch ``check_inplace`` / autograd notes "In-place
    operations"; the fact in docs/pytorch-facts.md in brackets):

    - a view created inside a custom autograd Function, or an input it
      returned as-is [#custom-function-view]; with grad disabled this still fails
      later when the graph is used [#no-grad-view], so it counts whenever the view requires grad;
    - a view from a multi-output op (split/chunk/unbind) when the op would be
      recorded (grad mode on and the view or an operand requires grad) [#multi-output-view];
    - a view created in no_grad (or inference) mode, modified with grad mode on
      while autograd would record the op [#no-grad-view];
    - a leaf that requires grad, or a view of one, with grad mode on [#leaf-requires-grad];
    - an inference tensor outside inference mode [#grad-off];
    - overlapping memory, e.g. after ``expand`` (``torch._debug_has_internal_
      overlap`` when present, else a stride-0 check) [#expanded-overlap]; an operand that
      partly overlaps the target;
    - the target or its base is the saved *result* of its own grad_fn (exp,
      sigmoid, softmax, ...) so backward would fail [#saved-output];
    - a DTensor next to a plain operand of ndim > 0 ("mixed torch.Tensor and
      DTensor") [#dtensor-mixing].

    What it cannot know (in place may still fail or surprise): a tensor saved
    for backward by a *later* op or by a custom Function's
    ``save_for_backward`` fails loudly at backward [#saved-output]; ``.detach()``
    and ``.data`` aliases share storage but not view metadata
    [#detach-ends-tracking]; other aliases (the view's base, the caller's
    tensor) observe the mutation [#silent-alias].

    ``torch._C._autograd._get_creation_meta`` is private; when it is missing or
    cannot describe a view, a view is reported as unsafe whenever autograd
    would record the op ("unknown -> out of place").
    """
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"inplace_hazard expects a torch.Tensor, got {type(tensor).__name__}")
    op_tensors = _tensors_in(operands)

    if _needs_mixing_fix([tensor] + op_tensors):
        return ("mixes a DTensor with a plain torch.Tensor of ndim > 0 "
                "(\"got mixed torch.Tensor and DTensor\")")

    if tensor.is_inference() and not torch.is_inference_mode_enabled():
        return "is an inference tensor modified outside inference mode"

    if _has_internal_overlap(tensor):
        return ("has overlapping memory (e.g. from expand): more than one element "
                "refers to a single memory location")
    for other in op_tensors:
        if _partial_overlap(tensor, other):
            return "shares memory with an operand of the op (partial overlap)"

    grad_on = torch.is_grad_enabled()
    recorded = grad_on and (tensor.requires_grad
                            or any(o.requires_grad for o in op_tensors))

    if tensor._is_view():
        meta = _creation_meta(tensor)
        if meta is None:
            if recorded or tensor.requires_grad:
                return ("is a view whose creation metadata torch does not expose; "
                        "assuming in place is unsafe")
        elif meta != "DEFAULT":
            reason = _CREATION_META_REASONS.get(meta, f"is a view with creation meta {meta}")
            if recorded:
                return reason
            if meta == "IN_CUSTOM_FUNCTION" and tensor.requires_grad:
                return reason + "; in place under no_grad fails later in autograd"
        if recorded and tensor.requires_grad:
            base = tensor._base
            if base is not None and base.is_leaf:
                return "is a view of a leaf tensor that requires grad"

    if recorded and tensor.requires_grad and tensor.is_leaf:
        return "is a leaf tensor that requires grad"

    saved_by = _saved_result_of_grad_fn(tensor)
    if saved_by is not None:
        return (f"is the output saved for backward by {saved_by}; modifying it "
                "in place makes backward fail")
    return None


# --------------------------------------------------------------------------
# out_of_place / setitem
# --------------------------------------------------------------------------


def _check_inplace_mode(inplace: InplaceMode) -> None:
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
    _check_inplace_mode(inplace)
    op = _normalise_op(op)
    if not isinstance(target, torch.Tensor):
        raise TypeError(f"target must be a torch.Tensor, got {type(target).__name__}")
    if not callable(getattr(target, op, None)):
        raise AttributeError(f"{type(target).__name__} has no in-place method {op!r}")

    if inplace == "auto":
        inplace = inplace_hazard(target, args, kwargs) is None
    if inplace:
        target_, (args_, kwargs_) = _guard(target, (args, kwargs),
                                           keep_sharded=keep_sharded, mutate_target=True)
        getattr(target_, op)(*args_, **kwargs_)
        return target_

    target, (args, kwargs) = _guard(target, (args, kwargs),
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
    _check_inplace_mode(inplace)
    if not isinstance(target, torch.Tensor):
        raise TypeError(f"target must be a torch.Tensor, got {type(target).__name__}")
    if inplace == "auto":
        inplace = inplace_hazard(target, index, value) is None
    target, (index, value) = _guard(target, (index, value), keep_sharded=keep_sharded,
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


# --------------------------------------------------------------------------
# scale_logits
# --------------------------------------------------------------------------


class LogitsDtypeError(TypeError, RuntimeError):
    """:func:`scale_logits` on logits that are not floating point. A ``TypeError``, and a ``RuntimeError``
    as ``logits.div_(t)`` raises there ("result type Float can't be cast to the desired output type Long",
    docs/pytorch-facts.md#inplace-keeps-dtype-and-shape), so code the codemod rewrote raises what it raised."""


def _temperature_divisor(logits: torch.Tensor, temperature: torch.Tensor,
                         eps: Optional[float], broadcast: str = "rows") -> torch.Tensor:
    """Clamp, cast to the logits dtype and reshape so it broadcasts per row (``broadcast="rows"``), or
    keep the shape as given (``"trailing"``: as in ``logits.div_(temperature)``)."""
    lshape = tuple(logits.shape)
    tshape = tuple(temperature.shape)
    t = temperature
    if broadcast == "trailing":
        try:
            grown = tuple(torch.broadcast_shapes(tshape, lshape))
        except RuntimeError as exc:
            raise RuntimeError(f"temperature of shape {list(tshape)} does not broadcast to logits of shape "
                               f"{list(lshape)}: {exc}") from None
        if grown != lshape:  # the in-place division's own rule (docs/pytorch-facts.md#inplace-keeps-dtype-and-shape)
            raise RuntimeError(f"output with shape {list(lshape)} doesn't match the broadcast shape {list(grown)}")
    elif t.ndim == 0:
        pass
    elif t.ndim < len(lshape) and tshape == lshape[:t.ndim]:
        # per-token (N,) for (N, V); per-sample (B,) for (B, S, V); (B, S) too
        t = t.reshape(tshape + (1,) * (len(lshape) - t.ndim))
    elif t.ndim == len(lshape) or t.numel() == 1:
        try:
            ok = tuple(torch.broadcast_shapes(tshape, lshape)) == lshape
        except RuntimeError:
            ok = False
        if not ok:
            raise ValueError(
                f"temperature of shape {tshape} does not broadcast to logits of "
                f"shape {lshape}")
    else:
        raise ValueError(
            f"temperature of shape {tshape} does not fit logits of shape {lshape}: "
            "expected a number, a 0-d tensor, one entry per leading row "
            f"(shape {lshape[:1]} or {lshape[:-1]}), or a shape that broadcasts "
            f"to the logits with the same number of dims (e.g. {lshape[:-1] + (1,)})")
    # out of place: a broadcast temperature raises on clamp_ (docs/pytorch-facts.md#expanded-overlap)
    if eps is not None:
        t = t.clamp(min=eps)
    return t.to(logits.dtype)


def scale_logits(logits: torch.Tensor, temperature: Union[numbers.Real, torch.Tensor], *,
                 eps: Optional[float] = 1e-8, inplace: InplaceMode = False,
                 keep_sharded: bool = False, broadcast: str = "rows") -> torch.Tensor:
    """Divide logits by a temperature, without mutating the input unless asked.

    Args:
        logits: floating tensor, ``(N, V)`` (remove-padding layout) or
            ``(B, S, V)``, any float dtype; plain tensor or DTensor.
        temperature: a Python number, a 0-d tensor, a per-row tensor whose
            shape is a prefix of ``logits.shape[:-1]`` (per-token ``(N,)`` for
            ``(N, V)``, per-sample ``(B,)`` or per-token ``(B, S)`` for
            ``(B, S, V)``), or a shape that already broadcasts to the logits
            with the same number of dims (``(N, 1)``, ``(B, 1, 1)``).  When a
            1-D temperature's length equals ``logits.shape[0]`` it is per row.
        eps: temperatures are clamped at ``eps`` (padding rows carry 0),
            out of place.  The clamp happens in the temperature's dtype before
            the cast, as upstream does; for fp16 logits 1e-8 rounds to 0.
            ``None``: no clamp (the code the codemod rewrites did not clamp).
        broadcast: ``"rows"`` (default) reads a temperature whose shape is a
            prefix of ``logits.shape[:-1]`` as one value per row (see
            ``temperature``); ``"trailing"`` broadcasts the temperature as it
            is, trailing dims aligned, exactly as ``logits.div_(temperature)``
            does, and raises ``RuntimeError`` where that in-place division
            would (a broadcast shape other than ``logits.shape``).  The codemod
            writes ``"trailing"``: the temperature keeps the shape the
            original code gave it (``temperature.unsqueeze(-1)``).
        inplace: ``False`` (default) returns a new tensor; ``True`` divides
            ``logits`` in place (the original verl code) and returns it;
            ``"auto"`` divides in place only when :func:`inplace_hazard` finds
            nothing, which saves a full copy of the logits, and otherwise goes
            out of place.  In place, other aliases (``output.logits``) see the
            change, and a tensor saved for backward by a later op fails at
            backward.
        keep_sharded: for DTensor logits, keep them sharded by lifting the
            temperature onto the same mesh as a ``Replicate`` DTensor instead
            of gathering the logits with ``full_tensor()``.

    Returns:
        Logits divided by the clamped temperature, in ``logits.dtype`` and
        shape.  A Python temperature equal to 1 returns ``logits`` itself (no
        copy, and no gather: a DTensor stays a DTensor).  A tensor
        temperature is cast to ``logits.dtype`` before dividing, so bf16
        logits never get a full-size fp32 copy; a Python number divides
        directly (``logits / max(t, eps)``).  DTensor logits divided by a
        plain tensor temperature with dimensions give a plain tensor by
        default (gathered, verl PR 6935) and a DTensor with
        ``keep_sharded=True``; by a number, a 0-dim tensor or a DTensor
        temperature they stay a DTensor (nothing is gathered: that op works
        on DTensors).  A DTensor temperature next to plain logits is gathered.

    Raises:
        ValueError: the temperature shape does not fit the logits shape (the
            message names both), or ``inplace`` or ``broadcast`` is invalid.
        RuntimeError: with ``broadcast="trailing"``, where ``logits.div_``
            would raise (the temperature does not broadcast to ``logits.shape``).
        TypeError: logits are not a floating-point tensor (:class:`LogitsDtypeError`,
            also a ``RuntimeError``, as the in-place division raises).

    Source: verl PR 6935 "[fsdp] fix: FSDP logits temperature scaling for
    view tensors" (out-of-place division, ``full_tensor()`` for DTensor),
    verl 0.9.1 ``_scale_logits_by_temperature``
    (``logits / temperature.clamp(min=1e-8).to(logits.dtype)``, skipped when
    the temperature is the scalar 1).
    """
    _check_inplace_mode(inplace)
    if broadcast not in ("rows", "trailing"):
        raise ValueError(f"broadcast must be 'rows' or 'trailing', got {broadcast!r}")
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"logits must be a torch.Tensor, got {type(logits).__name__}")
    if not logits.is_floating_point():
        raise LogitsDtypeError(f"logits must be a floating-point tensor, got {logits.dtype} (dividing them in "
                               f"place raises too: the float result can't be cast to {logits.dtype})")

    if isinstance(temperature, torch.Tensor):
        # a DTensor temperature is gathered only next to plain logits: two DTensors divide as they are
        t = temperature if _is_dtensor(logits) else _gather(temperature)
        divisor = _temperature_divisor(logits, t, eps, broadcast)
    elif broadcast == "trailing":
        raise TypeError(f"broadcast='trailing' takes a tensor temperature, got {type(temperature).__name__}")
    elif isinstance(temperature, numbers.Real) and not isinstance(temperature, bool):
        if temperature == 1:
            return logits
        divisor = float(temperature) if eps is None else max(float(temperature), float(eps))
    else:
        raise TypeError(
            f"temperature must be a number or a tensor, got {type(temperature).__name__}")

    if inplace == "auto":
        inplace = inplace_hazard(logits, divisor) is None
    if inplace:
        target, (div,) = _guard(logits, (divisor,), keep_sharded=keep_sharded,
                                mutate_target=True)
        target.div_(div)
        return target

    if _is_dtensor(logits) and _is_plain_tensor(divisor) and divisor.ndim > 0:
        # the only mix that raises (docs/pytorch-facts.md#dtensor-mixing): a number, a 0-dim tensor or a
        # DTensor temperature divides the DTensor as it is, which stays a DTensor
        if keep_sharded:
            divisor = _replicate_on(divisor, logits.device_mesh)
        else:
            logits = logits.full_tensor()
    return logits / divisor
