"""Runtime helpers that the inplace-lint codemod calls: out-of-place twins of
in-place tensor ops, with in-place dtype semantics and a DTensor guard.

With :mod:`inplace_lint.sanitize`, the only part of :mod:`inplace_lint` that imports torch; the linter
and the codemod never import it. It imports only torch and :mod:`inplace_lint.torch_facts`.

Modules
-------
- :mod:`.tables` -- the op tables (twins, clone-first ops, ops that write no values); no torch.
- :mod:`.dtensor` -- the DTensor guard (gather, or lift plain operands onto the mesh).
- :mod:`.hazard` -- :func:`inplace_hazard`, read from autograd metadata.
- :mod:`.twins` -- :func:`out_of_place` and :func:`setitem`.
- :mod:`.scaling` -- :func:`scale_logits`.

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

from .dtensor import DTensor
from .hazard import inplace_hazard
from .scaling import LogitsDtypeError, scale_logits  # noqa: F401  (public: the error scale_logits raises)
from .tables import AUGMENTED_ASSIGNMENT_OPS, CLONE_FIRST_OPS, NOT_DATA_MUTATING_OPS, TWINS
from .twins import InplaceMode, out_of_place, setitem  # noqa: F401  (InplaceMode: the type of inplace=)

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
