"""Shared pieces of the two printers (:mod:`.text_printer`, :mod:`.cst_printer`): the DTensor guard's test,
the ``scale_logits`` call and the temperature text of a planned scaling."""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from .. import textpos
from ..findings import Applicability


def scaling_text(lines: List[str], scaling) -> Tuple[str, str]:
    """(temperature, eps) source text of a planned :class:`~inplace_lint.findings.Scaling`."""
    def text(span: Tuple[int, int, int, int]) -> str:
        line, col, end_line, end_col = span
        head, tail = textpos.line_text(lines, line), textpos.line_text(lines, end_line)
        start, end = textpos.char_column(head, col), textpos.char_column(tail, end_col)
        if line == end_line:
            return head[start:end]
        return head[start:] + lines[line - 1][len(head):] + "".join(lines[line:end_line - 1]) + tail[:end]

    eps = scaling.eps if isinstance(scaling.eps, str) else text(scaling.eps)
    return "".join(text(s) for s in scaling.temperature), eps


def scale_call(func: str, name: str, fix, memory_aware: bool, texts: Tuple[str, str]) -> str:
    """The runtime style's call for the temperature idiom (``fix.scaling``, planned by the analysis):
    ``scale_logits(logits, T.unsqueeze(-1), eps=1e-8, broadcast="trailing", inplace="auto")``.
    ``inplace="auto"`` (in place wherever autograd allows it: no logits-sized copy, as the original) is
    written where the fix is safe (nothing else reads the tensor afterwards, so writing it in place
    cannot be seen) or with ``--memory-aware``; an unsafe fix divides out of place."""
    scale = fix.scaling
    temperature, eps = texts
    args = [name, temperature]
    if eps:
        args.append(f"eps={eps}")
    if scale.trailing:
        args.append('broadcast="trailing"')
    if memory_aware or fix.applicability is Applicability.SAFE:
        args.append('inplace="auto"')
    return f"{func}({', '.join(args)})"


def guard_condition(name: str, dt: str, roots: Sequence[str], bare_names: Optional[Sequence[str]]) -> str:
    """The DTensor guard's test, decided at run time on the operands themselves: gather ``name`` when it
    is a DTensor, no operand is one, and one operand (``bare_names``: each non-literal operand, held in a
    name, a temporary when it was an expression) is a tensor with ndim > 0. A DTensor mixes fine with a
    Python number, a 0-dim tensor or another DTensor (docs/pytorch-facts.md#dtensor-mixing), so gathering
    there would turn working DTensor code into a plain tensor next to DTensors (the MoE router's
    ``rw /= rw.sum(-1, keepdim=True)``). ``roots`` (names an operand expression is computed from) is only
    used where an operand could not be held in a name (a ``*args`` call)."""
    condition = f"isinstance({name}, {dt})" + "".join(f" and not isinstance({r}, {dt})" for r in roots)
    if bare_names:
        condition += "".join(f" and not isinstance({n}, {dt})" for n in bare_names if n not in roots)
        sized = " or ".join(f'getattr({n}, "ndim", 0) > 0' for n in bare_names)
        condition += f" and ({sized})" if len(bare_names) > 1 else f" and {sized}"
    return condition

