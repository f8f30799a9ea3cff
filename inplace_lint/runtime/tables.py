"""The runtime's op tables: in-place op -> out-of-place twin, clone-first ops, ops that write no values.

Derived from :mod:`inplace_lint.torch_facts.ops` (generated from torch by ``scripts/generate_ops.py``); no
torch import here.
"""

from __future__ import annotations

from ..torch_facts import ops as _ops

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
