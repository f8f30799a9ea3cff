""":func:`scale_logits`: temperature scaling of logits as RL trainers need it (verl PR 6935)."""

from __future__ import annotations

import numbers
from typing import Optional, Union

import torch

from .dtensor import gather, guard, is_dtensor, is_plain_tensor, replicate_on
from .hazard import inplace_hazard
from .twins import InplaceMode, check_inplace_mode


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
    # a 0-dim temperature is not cast: it does not promote the logits (no full-size copy in a wider dtype), and
    # the division then runs in the wider type's precision and rounds once, as `logits /= t` does; cast first,
    # a bf16 0.7 is 0.69921875 and a fifth of bf16 logits round differently
    return t if t.ndim == 0 else t.to(logits.dtype)


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
        temperature with dimensions is cast to ``logits.dtype`` before
        dividing, so bf16 logits never get a full-size fp32 copy; a 0-dim
        tensor is not (it does not promote the logits, and the division
        matches ``logits /= t`` bit for bit); a Python number divides
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
    check_inplace_mode(inplace)
    if broadcast not in ("rows", "trailing"):
        raise ValueError(f"broadcast must be 'rows' or 'trailing', got {broadcast!r}")
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"logits must be a torch.Tensor, got {type(logits).__name__}")
    if not logits.is_floating_point():
        raise LogitsDtypeError(f"logits must be a floating-point tensor, got {logits.dtype} (dividing them in "
                               f"place raises too: the float result can't be cast to {logits.dtype})")

    if isinstance(temperature, torch.Tensor):
        # a DTensor temperature is gathered only next to plain logits: two DTensors divide as they are
        t = temperature if is_dtensor(logits) else gather(temperature)
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
        target, (div,) = guard(logits, (divisor,), keep_sharded=keep_sharded,
                               mutate_target=True)
        target.div_(div)
        return target

    if is_dtensor(logits) and is_plain_tensor(divisor) and divisor.ndim > 0:
        # the only mix that raises (docs/pytorch-facts.md#dtensor-mixing): a number, a 0-dim tensor or a
        # DTensor temperature divides the DTensor as it is, which stays a DTensor
        if keep_sharded:
            divisor = replicate_on(divisor, logits.device_mesh)
        else:
            logits = logits.full_tensor()
    return logits / divisor
