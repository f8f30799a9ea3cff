"""Fix planning: whether a finding has an out-of-place rewrite, of which kind, and whether it is safe.

Called by the engine at each finding (never on clean code, so it costs nothing there).
The codemod only turns the plan into syntax.

Safety (DESIGN.md "Fix policy"): a rewrite rebinds the target name instead of
mutating the tensor, so anything else that shares the storage stops seeing the
change. It is SAFE only when nothing that could observe the mutation is read
afterwards in the function: not the view's base (``output`` of ``output.logits``),
not another name holding the same origin, and not a caller (the target is not a
parameter, ``global``, ``nonlocal`` or closure variable). Otherwise UNSAFE.
"""
from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from . import ops
from .findings import Applicability, Fix, FixKind, Origin, WriteKind

#: augmented assignment operator -> in-place method
AUGMENTED_METHODS = {
    ast.Add: "add_", ast.Sub: "sub_", ast.Mult: "mul_", ast.Div: "div_", ast.FloorDiv: "floor_divide_",
    ast.Mod: "remainder_", ast.Pow: "pow_", ast.BitAnd: "bitwise_and_", ast.BitOr: "bitwise_or_",
    ast.BitXor: "bitwise_xor_", ast.LShift: "bitwise_left_shift_", ast.RShift: "bitwise_right_shift_",
}
_NO_HOIST_PARENTS = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.BoolOp,
                     ast.IfExp, ast.Await, ast.NamedExpr)
_HOIST_STATEMENTS = (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)


def write_target_name(kind: WriteKind, target: ast.expr) -> Optional[str]:
    """The name a rewrite would rebind, or None when the target is not a plain name."""
    return target.id if isinstance(target, ast.Name) else None


def fix_kind(kind: WriteKind, node: ast.AST, op_name: Optional[str], stmt: Optional[ast.stmt],
             target_name: str) -> Optional[FixKind]:
    """Which rewrite the write at ``node`` (inside statement ``stmt``) admits, if any."""
    if stmt is None:
        return None
    if kind is WriteKind.METHOD and (op_name in ops.METADATA_INPLACE_METHODS or op_name is None):
        return None
    if kind is WriteKind.AUGMENTED:
        return FixKind.STATEMENT if stmt is node and type(node.op) in AUGMENTED_METHODS else None
    if kind is WriteKind.SUBSCRIPT:
        whole = (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and stmt.targets[0] is node) or \
            (isinstance(stmt, ast.AugAssign) and stmt is node)
        return FixKind.STATEMENT if whole else None
    if kind is WriteKind.INPLACE_KWARG and not any(k.arg == "inplace" for k in getattr(node, "keywords", ())):
        return None  # nn.ReLU(inplace=True) applied to the tensor: fix the module, not the call
    if isinstance(stmt, ast.Expr) and stmt.value is node:
        return FixKind.STATEMENT
    if kind is WriteKind.OUT_KWARG or not isinstance(stmt, _HOIST_STATEMENTS):
        return None
    # used as a value: hoist only when nothing else in the statement could observe the order
    # the call's own arguments run before the write; any other read of the name in the statement could
    # see a different value once the rebinding is moved before the statement
    if _count_name(stmt, target_name) != _count_name(node, target_name) or _under(stmt, node, _NO_HOIST_PARENTS):
        return None
    return FixKind.HOIST


def applicability(func: ast.AST, params: Sequence[str], target_name: str, origin: Origin,
                  aliases: Iterable[str], write: ast.AST, loops: Sequence[ast.AST]) -> Tuple[Applicability, str]:
    """SAFE when no observer of the mutation is read after ``write``; else UNSAFE with the reason."""
    if target_name in params:
        return Applicability.UNSAFE, f"`{target_name}` is a parameter: the caller would no longer see the change"
    declared, assigned = _declarations(func)
    if target_name in declared:
        return Applicability.UNSAFE, f"`{target_name}` is global or nonlocal: other code would no longer see the change"
    if target_name not in assigned and not isinstance(func, ast.Module):
        return Applicability.UNSAFE, f"`{target_name}` comes from an enclosing scope: it would no longer see the change"
    observers: Set[str] = {a for a in aliases if a != target_name}
    base = root_base_name(origin)
    if base is not None and base != target_name:
        observers.add(base)
    for name in sorted(observers):
        # the base came from outside the function: whoever passed it in can read it afterwards
        if name in params:
            return Applicability.UNSAFE, (
                f"`{name}` is a parameter: the caller would no longer see the change to `{origin.root_text}`")
        if name in declared or (name not in assigned and not isinstance(func, ast.Module)):
            return Applicability.UNSAFE, (
                f"`{name}` comes from outside the function: other code would no longer see the change")
    end = (getattr(write, "end_lineno", write.lineno), getattr(write, "end_col_offset", 0))
    loop_spans = [(loop.lineno, loop.end_lineno or loop.lineno) for loop in loops]
    exclusive = _exclusive_spans(func, write)
    for name, line, col in _reads(func):
        if name not in observers or any(lo <= line <= hi for lo, hi in exclusive):
            continue
        if (line, col) > end or any(lo <= line <= hi for lo, hi in loop_spans):
            return Applicability.UNSAFE, (
                f"`{name}` is read after the write (line {line}) and would no longer see the change")
    return Applicability.SAFE, ""


def _exclusive_spans(func: ast.AST, write: ast.AST) -> List[Tuple[int, int]]:
    """Line spans that cannot run after ``write`` in the same pass: the other arm of each ``if``
    and the other cases of each ``match`` around it."""
    path = _path_to(func, write)
    spans: List[Tuple[int, int]] = []
    for parent, child in zip(path, path[1:]):
        if isinstance(parent, ast.If):
            arms = [parent.body, parent.orelse]
        elif isinstance(parent, ast.Match):
            arms = [case.body for case in parent.cases if case is not child]
        else:
            continue
        for arm in arms:
            if arm and child not in arm:
                spans.append((arm[0].lineno, arm[-1].end_lineno or arm[-1].lineno))
    return spans


def _path_to(root: ast.AST, node: ast.AST) -> List[ast.AST]:
    stack = [(root, [root])]
    while stack:
        current, path = stack.pop()
        if current is node:
            return path
        for child in ast.iter_child_nodes(current):
            stack.append((child, path + [child]))
    return []


def root_base_name(origin: Origin) -> Optional[str]:
    """``output`` for ``output.logits`` / ``output['logits']`` / ``outputs[0]``; None for temporaries."""
    text = origin.root_text
    if "(" in text:  # a call's result is a temporary nobody else holds
        return None
    head = text.split(".", 1)[0].split("[", 1)[0]
    return head if head.isidentifier() else None


def _count_name(stmt: ast.AST, name: str) -> int:
    return sum(1 for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id == name)


def _under(root: ast.AST, node: ast.AST, kinds) -> bool:
    """Whether ``node`` sits below a node of ``kinds`` inside ``root``."""

    def walk(current: ast.AST, inside: bool) -> Optional[bool]:
        if current is node:
            return inside
        for child in ast.iter_child_nodes(current):
            found = walk(child, inside or isinstance(current, kinds))
            if found is not None:
                return found
        return None

    return bool(walk(root, False))


def _own_nodes(func: ast.AST):
    """Nodes of ``func``'s body, not descending into nested function or class bodies."""
    stack: List[ast.AST] = list(getattr(func, "body", []))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(node))


def _declarations(func: ast.AST) -> Tuple[FrozenSet[str], FrozenSet[str]]:
    declared: Set[str] = set()
    assigned: Set[str] = set()
    for node in _own_nodes(func):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            assigned.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            assigned.add(node.name)
    return frozenset(declared), frozenset(assigned)


def _reads(func: ast.AST):
    """Every load of a name in ``func``, nested functions included (they may run later)."""
    for node in ast.walk(func) if not isinstance(func, ast.Module) else _module_walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            yield node.id, node.lineno, node.col_offset


def _module_walk(module: ast.Module):
    for stmt in module.body:
        yield from ast.walk(stmt)


def plan(func: ast.AST, params: Sequence[str], kind: WriteKind, node: ast.AST, target: ast.expr,
         op_name: Optional[str], origin: Origin, env_aliases: Dict[str, FrozenSet[Origin]],
         stmt: Optional[ast.stmt], loops: Sequence[ast.AST]) -> Optional[Fix]:
    """The fix for one finding, or None when it has no correct out-of-place form."""
    name = write_target_name(kind, target)
    if name is None:
        return None
    fkind = fix_kind(kind, node, op_name, stmt, name)
    if fkind is None:
        return None
    same_root = (origin.root, origin.root_text, origin.root_line)
    aliases = [k for k, origins in env_aliases.items()
               if "." not in k and "[" not in k and any((o.root, o.root_text, o.root_line) == same_root for o in origins)]
    applicable, reason = applicability(func, params, name, origin, aliases, node, loops)
    if kind is WriteKind.SUBSCRIPT or (op_name is not None and op_name not in ops.OUT_OF_PLACE_TWINS
                                       and kind is WriteKind.METHOD):
        message = f"clone `{name}` first, then write the copy"
    else:
        message = f"rebind `{name}` to the out-of-place result"
    return Fix(applicable, fkind, message, reason)
