"""What torch does, as tables: in-place ops and their twins, views, saved tensors. Imports nothing of ours, never torch.

- :mod:`.ops`: the tables the engine reads (views, in-place methods, model-output names, saved tensors).
- :mod:`._ops_generated`, :mod:`._saved_generated`: generated from torch by ``scripts/generate_ops.py`` and
  ``scripts/generate_saved.py``; never edited by hand.
"""
