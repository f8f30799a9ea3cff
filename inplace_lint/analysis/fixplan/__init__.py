"""Fix planning: whether a finding has an out-of-place rewrite, how it is written (a
:class:`~inplace_lint.findings.Recipe`) and whether it is safe. Called by the engine at each finding (never
on clean code, so it costs nothing there); :mod:`inplace_lint.fix` only prints the recipe.

- :mod:`.facts`: one pass over a function body, and the alias and escape rules built on it.
- :mod:`.safety`: SAFE or UNSAFE with the reason (aliases, escapes, reads after the write, kept results).
- :mod:`.recipe`: the plan of one fix (statement or hoist, the recipe) and :func:`withdraw_unwritable`.
- :mod:`.scaling`: the temperature idiom as a ``scale_logits`` call.
- :mod:`.remedy`: what a caller can do about a helper's write through its argument.
"""
from .facts import REPEATED, FunctionFacts, root_base_name
from .recipe import MAX_REWRITE_DEPTH, plan, withdraw_unwritable, write_target_name
from .remedy import call_remedy
from .bindings import shared_base
from .safety import applicability, decorator_effects, kept_reason, raises_at_write, returned_elsewhere

__all__ = ["REPEATED", "FunctionFacts", "root_base_name", "MAX_REWRITE_DEPTH", "plan", "withdraw_unwritable",
           "write_target_name", "call_remedy", "applicability", "decorator_effects", "kept_reason", "returned_elsewhere",
           "raises_at_write", "shared_base"]
