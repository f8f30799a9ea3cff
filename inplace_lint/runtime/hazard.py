""":func:`inplace_hazard`: why PyTorch would refuse (or later fail on) an in-place op, from autograd metadata."""

from __future__ import annotations

from typing import Any, Optional

import torch

from .dtensor import is_dtensor, needs_mixing_fix, tensors_in

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


def creation_meta(t: torch.Tensor) -> Optional[str]:
    """Name of the view's CreationMeta (``DEFAULT``, ``IN_CUSTOM_FUNCTION``,
    ``MULTI_OUTPUT_NODE``, ``NO_GRAD_MODE``, ``INFERENCE_MODE``), or None when
    torch cannot tell (private API absent, or no differentiable view meta). Looked up
    on each call (the sanitizer and :func:`inplace_hazard` share it)."""
    getter = getattr(getattr(torch._C, "_autograd", None), "_get_creation_meta", None)
    if getter is None:
        return None
    try:
        meta = getter(t)
    except (RuntimeError, TypeError):  # not a differentiable view: "Expected meta != nullptr"
        return None
    return getattr(meta, "name", None) or str(meta).rsplit(".", 1)[-1]


def has_internal_overlap(t: torch.Tensor) -> bool:
    """More than one element of ``t`` refers to one memory location (``expand``): torch's
    ``_debug_has_internal_overlap`` when it can tell, else a dimension of stride 0 and size > 1;
    False when neither can be read (a wrapper subclass without strides)."""
    check = getattr(torch, "_debug_has_internal_overlap", None)
    if check is not None:
        try:
            status = int(check(t))  # 0 NO, 1 YES, 2 TOO_HARD
        except Exception:
            status = 2
        if status != 2:
            return status == 1
    try:
        return any(st == 0 and sz > 1 for sz, st in zip(t.shape, t.stride()))
    except Exception:
        return False


def _partial_overlap(target: torch.Tensor, other: torch.Tensor) -> bool:
    """Operand shares storage with target without being the same view."""
    if is_dtensor(target) or is_dtensor(other) or other is target:
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
    op_tensors = tensors_in(operands)

    if needs_mixing_fix([tensor] + op_tensors):
        return ("mixes a DTensor with a plain torch.Tensor of ndim > 0 "
                "(\"got mixed torch.Tensor and DTensor\")")

    if tensor.is_inference() and not torch.is_inference_mode_enabled():
        return "is an inference tensor modified outside inference mode"

    if has_internal_overlap(tensor.to_local() if is_dtensor(tensor) else tensor):
        return ("has overlapping memory (e.g. from expand): more than one element "
                "refers to a single memory location")
    for other in op_tensors:
        if _partial_overlap(tensor, other):
            return "shares memory with an operand of the op (partial overlap)"

    grad_on = torch.is_grad_enabled()
    recorded = grad_on and (tensor.requires_grad
                            or any(o.requires_grad for o in op_tensors))

    if tensor._is_view():
        meta = creation_meta(tensor)
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
