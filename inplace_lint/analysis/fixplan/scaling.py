"""The temperature idiom: a write that ``inplace_lint.runtime.scale_logits`` computes with the same values,
dtype and gradients (planned as :class:`~inplace_lint.findings.Scaling`)."""
from __future__ import annotations

import ast
from typing import List, Optional, Tuple, Union

from ...findings import Scaling, WriteKind
from ..astutil import is_int_literal, walk_ast
from .facts import FunctionFacts, count_name


#: shape ops that commute with an elementwise clamp (the temperature may be shaped before or after it)
_SHAPE_METHODS = frozenset({"unsqueeze", "view", "reshape"})

def scaling(facts: FunctionFacts, kind: WriteKind, node: ast.AST, stmt: Optional[ast.stmt],
            name: str) -> Optional[Scaling]:
    """The write as a ``scale_logits`` call, when that gives the same values, dtype and gradients
    (``inplace_lint.runtime.scale_logits``; verl PR 6935 and verl 0.9.1 ``_scale_logits_by_temperature``):

    - ``x.div_(T<shape ops>.clamp(min=EPS)<shape ops>.to(x.dtype))`` or ``x /= ...`` (the seed): the
      divisor is cast to ``x.dtype`` as ``scale_logits`` casts it, the clamp (``clamp(min=EPS)``,
      ``clamp(EPS)``, ``clamp_min(EPS)``, a number literal; optional) is elementwise and so commutes with
      ``unsqueeze``/``view``/``reshape`` (integer literal arguments), and ``broadcast="trailing"`` keeps
      the original's broadcast: ``scale_logits(x, T.unsqueeze(-1), eps=EPS, broadcast="trailing")``;
    - ``x.div_(v)`` / ``x /= v`` where ``v`` is a Python number: a positive number literal, or a name
      that only ever holds one (a parameter annotated ``float``/``int`` or a local bound only to number
      literals and ``float(...)``/``int(...)``), passed with ``eps=None`` (no clamp) unless a literal is
      above the default bound.

    Multiplication is never one: ``x * (1 / T)`` rounds differently from ``x / T``. None otherwise."""
    if kind is WriteKind.METHOD:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "div_"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == name
                and len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred)):
            return None
        operand = node.args[0]
    elif kind is WriteKind.AUGMENTED:
        if not (isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Div) and isinstance(node.target, ast.Name)):
            return None
        operand = node.value
    else:
        return None
    number = _number(facts, operand)
    if number is not None:
        return number
    # `.to(x.dtype)` last: the divisor has the target's dtype, as scale_logits casts it
    if not (_method_call(operand, "to") and len(operand.args) == 1 and not operand.keywords):
        return None
    dtype = operand.args[0]
    if not (isinstance(dtype, ast.Attribute) and dtype.attr == "dtype" and isinstance(dtype.value, ast.Name)
            and dtype.value.id == name):
        return None
    chain: List[ast.Call] = []
    base: ast.expr = operand.func.value
    while isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) and \
            base.func.attr in _SHAPE_METHODS | {"clamp", "clamp_min"}:
        chain.append(base)
        base = base.func.value
    chain.reverse()
    clamps = [c for c in chain if c.func.attr in ("clamp", "clamp_min")]
    if len(clamps) > 1 or count_name(base, name):
        return None  # the temperature must not read the target (it would be read before the rewrite binds it)
    eps: Union[str, Tuple[int, int, int, int]] = "None"
    if clamps:
        eps_node = _clamp_bound(clamps[0])
        if eps_node is None:
            return None
        eps = _span(eps_node)
    spans = [_span(base)]
    for call in chain:
        if call in clamps:
            continue
        if call.keywords or not all(is_int_literal(a) for a in call.args):
            return None
        receiver = call.func.value  # `.unsqueeze(-1)`: from the end of the receiver to the end of the call
        spans.append((receiver.end_lineno, receiver.end_col_offset, call.end_lineno, call.end_col_offset))
    return Scaling(tuple(spans), eps, True)

def _span(node: ast.AST) -> Tuple[int, int, int, int]:
    return node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0

def _method_call(node: ast.AST, method: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method

def _number_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)

def _clamp_bound(call: ast.Call) -> Optional[ast.expr]:
    """The lower bound of ``clamp(min=EPS)`` / ``clamp(EPS)`` / ``clamp_min(EPS)`` when it is a number literal
    and nothing else is clamped (no ``max``)."""
    if call.func.attr == "clamp_min":
        bound = call.args[0] if len(call.args) == 1 and not call.keywords else None
    elif len(call.args) == 1 and not call.keywords:
        bound = call.args[0]
    elif not call.args and len(call.keywords) == 1 and call.keywords[0].arg == "min":
        bound = call.keywords[0].value
    else:
        bound = None
    return bound if bound is not None and _number_literal(bound) else None

def _number(facts: FunctionFacts, operand: ast.expr) -> Optional[Scaling]:
    """``operand`` as the temperature of a ``scale_logits`` call when it is surely a Python number."""
    if _number_literal(operand):
        if not operand.value > 0:
            return None
        return Scaling((_span(operand),), "" if operand.value >= 1e-8 else "None", False)
    if not isinstance(operand, ast.Name):
        return None
    name = operand.id
    if name in facts.declared:
        return None
    args = getattr(facts.func, "args", None)
    params = [a for a in (args.posonlyargs + args.args + args.kwonlyargs if args else []) if a.arg == name]
    bindings = [s for s in facts.assigns if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
                                                for t in _targets(s) for n in walk_ast(t))]
    if any(isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == name
           for n in walk_ast(facts.func)):
        return None
    if params:
        annotation = params[0].annotation
        if not (isinstance(annotation, ast.Name) and annotation.id in ("float", "int")) or bindings:
            return None
        return Scaling((_span(operand),), "None", False)
    if not bindings or not all(isinstance(s, (ast.Assign, ast.AnnAssign)) and len(_targets(s)) == 1
                               and isinstance(_targets(s)[0], ast.Name) and _is_number_value(s.value)
                               for s in bindings):
        return None
    return Scaling((_span(operand),), "None", False)

def _targets(stmt: ast.AST) -> List[ast.expr]:
    if isinstance(stmt, ast.Assign):
        return list(stmt.targets)
    target = getattr(stmt, "target", None)
    return [target] if target is not None else []

def _is_number_value(value: Optional[ast.expr]) -> bool:
    if value is None:
        return False
    if _number_literal(value):
        return True
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("float", "int") \
        and len(value.args) == 1 and not value.keywords
