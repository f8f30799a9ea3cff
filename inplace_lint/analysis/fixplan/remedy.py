"""The remedy at a call: what a caller can do about a helper's in-place write through one of its arguments
(the helper's out-of-place twin, or a clone), as text for the finding's message."""
from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Optional, Sequence

from ...findings import Applicability, Origin
from ..astutil import short
from .facts import FunctionFacts, loop_variable
from .safety import applicability


def call_remedy(facts: FunctionFacts, params: Sequence[str], arg: ast.expr, call: ast.Call,
                origins: Sequence[Origin], env_aliases: Dict[str, FrozenSet[Origin]], loops: Sequence[ast.AST],
                twin: Optional[str], kept: bool = False) -> str:
    """What a caller can do about a helper's in-place write through the argument ``arg`` of ``call``
    (the helper's own fix is planned at its write): call the helper's out-of-place ``twin`` (a function
    of the same module or class, named without the trailing ``_``, with the same parameters, that writes
    none of them) and use what it returns, or give the helper a copy. Cloning a name first
    (``x = x.clone()``, then the call) keeps every later read of ``x`` seeing the helper's change; what
    stops seeing it (the view's base, another alias) is decided as for a rewrite at a write
    (:func:`applicability`), and said; a temporary passed to a helper that drops it (``kept`` False) shows
    the change only through its base, which a clone hides. No edit is made: the text is part of the finding's message."""
    options = []
    if twin is not None:
        options.append(f"call `{twin}()`, its out-of-place twin, and use what it returns")
    name = arg.id if isinstance(arg, ast.Name) else None
    if name is not None and (name in params or facts.is_local(name)) and not loop_variable(facts, call, name):
        roots = {(o.root, o.root_text, o.root_line) for o in origins}
        aliases = [k for k, held in env_aliases.items()
                   if "." not in k and "[" not in k and any((o.root, o.root_text, o.root_line) in roots for o in held)]
        applicable, reason = applicability(facts, params, name, origins, aliases, call, loops)
        clone = f"clone `{name}` before the call (`{name} = {name}.clone()`)"
        if applicable is not Applicability.SAFE:
            clone += f", though {reason}"
        options.append(clone)
    elif not isinstance(arg, ast.Starred):
        text = short(arg)
        clone = f"pass `{text}.clone()`" if len(text) <= 40 else "pass a clone"
        base = arg
        while isinstance(base, (ast.Attribute, ast.Subscript, ast.Call)):
            base = base.func if isinstance(base, ast.Call) else base.value
        if not kept and isinstance(base, ast.Name) and base.id != "self" \
                and (base.id in params or facts.is_local(base.id)):
            # a temporary written by a helper that drops it: only its base shows the change, and a clone
            # hides it from every later read of the base
            end = (getattr(call, "end_lineno", call.lineno), getattr(call, "end_col_offset", 0))
            spans = [(loop.lineno, loop.end_lineno or loop.lineno) for loop in loops]
            later = [load.lineno for load in facts.loads if load.id == base.id and (
                (load.lineno, load.col_offset) >= end or any(lo <= load.lineno <= hi for lo, hi in spans))]
            if base.id in params:
                clone += f", though `{base.id}` is a parameter: the caller would no longer see the change"
            elif later:
                clone += f", though `{base.id}` is read after the call (line {min(later)}) and would no longer " \
                         "see the change"
        options.append(clone)
    return " or ".join(options)
