"""The text printer: the rewrite of a one-line statement, written from its text without libcst, byte for
byte what :mod:`.cst_printer` writes for the same recipe (a test compares the two)."""
from __future__ import annotations

import ast
import re
from typing import List, Optional, Sequence, Tuple

from .. import textpos
from ..torch_facts import ops
from ..findings import FixKind, RewriteForm, WriteKind
from .forms import guard_condition, scale_call
from .imports import DTENSOR_MODULE, RUNTIME_MODULE, ImportNames
from .statements import Group


def print_text(group: Group, lines: List[str], newline: str, style: str, memory_aware: bool, unit: str,
          names: "ImportNames") -> bool:
    """The group's one finding's :class:`~inplace_lint.findings.Recipe` printed for a one-line ``x.op_(args)`` /
    ``x op= v`` statement (alone on its line or in a one-line suite), from its text without libcst: byte for
    byte what :mod:`.cst_printer` writes (a test compares the two over the generated family). Returns False,
    leaving the group to libcst, for any other shape."""
    if group.first != group.last or len(group.findings) != 1:
        return False
    finding = group.findings[0]
    stmt = group.stmt
    recipe = finding.fix.recipe
    method = recipe.method
    if recipe.kind is not FixKind.STATEMENT or not method:
        return False
    line = textpos.line_text(lines, group.first)
    start = textpos.char_column(line, stmt.col_offset)
    end = textpos.char_column(line, stmt.end_col_offset or 0)
    text, tail = line[start:end], lines[group.first - 1][end:]
    if "#" in text or "\\" in text:
        return False
    name = finding.target
    if finding.write_kind is WriteKind.METHOD and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == name):
            return False
        head = f"{name}.{method}("
        if not (text.startswith(head) and text.endswith(")")):
            return False
        args = text[len(head):-1]
        if args != args.strip() or (memory_aware and args.endswith(",")):
            return False
        operands = [a.value if isinstance(a, ast.Starred) else a for a in stmt.value.args] + \
            [k.value for k in stmt.value.keywords]
        operands.sort(key=lambda n: (n.lineno, n.col_offset))
    elif finding.write_kind is WriteKind.AUGMENTED and isinstance(stmt, ast.AugAssign) and \
            isinstance(stmt.target, ast.Name) and stmt.target.id == name:
        symbol = ops.AST_AUGMENTED.get(type(stmt.op).__name__)
        rest = text[len(name):].lstrip()
        if symbol is None or not rest.startswith(symbol):
            return False
        args = rest[len(symbol):].strip()
        operands = [stmt.value]
    else:
        return False
    indent = group.indent
    out: List[str] = []
    if style == "runtime" and recipe.scaling is not None:
        local, _ = names.get(RUNTIME_MODULE, "scale_logits")
        call = scale_call(local, name, finding.fix, memory_aware, group.scalings[id(finding)])
        out.append(f"{indent}{name} = {call}{tail}")
        group.imports[id(finding)] = {(RUNTIME_MODULE, "scale_logits")}
    elif style == "runtime":
        local, _ = names.get(RUNTIME_MODULE, "out_of_place")
        call = [name, f'"{method}"'] + ([args] if args else []) + (['inplace="auto"'] if memory_aware else [])
        out.append(f"{indent}{name} = {local}({', '.join(call)}){tail}")
        group.imports[id(finding)] = {(RUNTIME_MODULE, "out_of_place")}
    else:
        loose = [o for o in operands if not _ast_constant(o)]
        if names.dtensor_form != "none" and any(not isinstance(o, ast.Name) for o in loose):
            # operands to hold in temporaries first (cst_printer.py's ``hold``, the same text)
            held = _hold_from_text(line, start + len(text) - len(args) - (1 if text.endswith(")") and
                                   finding.write_kind is WriteKind.METHOD else 0), args, operands, name, names)
            if held is None:
                return False
            temps, args = held
            out += [f"{indent}{temp} = {value}{newline}" for temp, value in temps]
            held_names = iter(temp for temp, _ in temps)  # the operands, in order, as the guard sees them
            loose = [o if isinstance(o, ast.Name) else ast.Name(id=next(held_names), ctx=ast.Load()) for o in loose]
            if recipe.form is RewriteForm.CLONE_FIRST:
                text = f"{name}.{method}({args})"
        bare = [o.id for o in loose if o.id != name] if names.dtensor_form != "none" else []
        if bare:
            dt, _ = names.get(DTENSOR_MODULE, "DTensor")
            condition = guard_condition(name, dt, [], list(dict.fromkeys(bare)))
            out += [f"{indent}if {condition}:{newline}", f"{indent}{unit}{name} = {name}.full_tensor(){newline}"]
            group.imports[id(finding)] = {(DTENSOR_MODULE, "DTensor")}
        if recipe.form is RewriteForm.CLONE_FIRST:
            out += [f"{indent}{name} = {name}.clone(){newline}", f"{indent}{text}{tail}"]
        else:
            out.append(f"{indent}{name} = {name}.clone().{method}({args}){tail}")
    text = "".join(out)
    if not text.endswith(("\n", "\r")):
        text += newline
    group.text = (group.prefix + newline if group.prefix else "") + text
    group.done.add(id(finding))
    return True



def _ast_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is not Ellipsis


def _ast_constant(node: ast.expr) -> bool:
    """A literal, ``...`` or a unary operator on a literal (``-1``): never a tensor, never held."""
    if isinstance(node, ast.UnaryOp) and _ast_literal(node.operand):
        return True
    return isinstance(node, ast.Constant)


_GAP_FIRST = re.compile(r"\s*(?:\w+\s*=\s*)?")
_GAP = re.compile(r"\s*,\s*(?:\w+\s*=\s*)?")
_GAP_LAST = re.compile(r"\s*,?\s*")


def _hold_from_text(line: str, args_start: int, args: str, operands: Sequence[ast.expr], name: str,
                    names: "ImportNames") -> Optional[Tuple[List[Tuple[str, str]], str]]:
    """The temporaries of :meth:`inplace_lint.fix.cst_printer._Rewriter.hold`, from the text of a one-line call's
    arguments (``args``, starting at character ``args_start`` of ``line``): ``[(temp, operand text)]`` and the
    arguments with each held operand replaced by its temporary. None where the text is not plain
    ``operand, key=operand`` (a bracketed operand, a ``*`` argument): libcst writes those."""
    spans = []
    for o in operands:
        lo = textpos.char_column(line, o.col_offset) - args_start
        hi = textpos.char_column(line, o.end_col_offset or 0) - args_start
        if lo < 0 or hi > len(args):
            return None
        spans.append((lo, hi, o))
    pos = 0
    for i, (lo, hi, o) in enumerate(spans):
        gap = args[pos:lo]
        if not (_GAP_FIRST if i == 0 else _GAP).fullmatch(gap):
            return None
        pos = hi
    if not _GAP_LAST.fullmatch(args[pos:]):
        return None
    temps: List[Tuple[str, str]] = []
    pieces: List[str] = []
    pos = 0
    for lo, hi, o in spans:
        pieces.append(args[pos:lo])
        if _ast_constant(o) or isinstance(o, ast.Name):
            pieces.append(args[lo:hi])
        else:
            temp = names.temp(name, len(temps) + 1)
            text = args[lo:hi]
            temps.append((temp, f"({text})" if isinstance(o, ast.NamedExpr) else text))  # (`_x_operand = (s := t)`)
            pieces.append(temp)
        pos = hi
    pieces.append(args[pos:])
    return temps, "".join(pieces)

