"""Statement grouping: the simple statements that carry fixes, the whole lines each rewrite replaces,
and the file's newline and indentation step."""
from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple

from .. import textpos
from ..findings import Finding, FixKind


@dataclass
class Group:
    """One statement that carries fixes, and how its whole lines are rebuilt."""

    stmt: ast.stmt
    findings: List[Finding]
    first: int  # first replaced line (1-based)
    last: int  # last replaced line
    indent: str  # the statement's indentation in the output ("" at module level)
    prefix: str = ""  # one-line suite: the header (``if T != 1:``), which stays on its line
    snippet: str = ""  # the statement's text, from its first character
    #: per hoisted finding: the source text of its write (to find it again in the libcst tree)
    segments: Dict[int, str] = field(default_factory=dict)
    #: per finding: the imports it needs, (module, name)
    imports: Dict[int, Set[Tuple[str, str]]] = field(default_factory=dict)
    done: Set[int] = field(default_factory=set)
    text: Optional[str] = None  # the rebuilt lines
    #: per finding with a planned ``scaling``: its (temperature, eps) source text
    scalings: Dict[int, Tuple[str, str]] = field(default_factory=dict)



def newline_of(lines: List[str]) -> str:
    for text in lines:
        if text.endswith("\r\n"):
            return "\r\n"
        if text.endswith("\n"):
            return "\n"
        if text.endswith("\r"):
            return "\r"
    return "\n"


def _leading_ws(text: str) -> str:
    return text[: len(text) - len(text.lstrip(" \t\f"))]


def indent_unit(tree: ast.Module, lines: List[str]) -> str:
    """The file's indentation step, as libcst infers it: the first indented block's indentation."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.stmt, ast.ExceptHandler)) and isinstance(body, list) and body and \
                isinstance(body[0], ast.stmt) and body[0].lineno > node.lineno:
            outer = _leading_ws(textpos.line_text(lines, node.lineno))
            inner = _leading_ws(textpos.line_text(lines, body[0].lineno))
            if inner.startswith(outer) and len(inner) > len(outer):
                return inner[len(outer):]
    return "    "


_COMPOUND_BODIES = ("body", "orelse", "finalbody")


def groups(tree: ast.Module, lines: List[str], todo: Sequence[Finding]) -> List[Group]:
    """The simple statements that hold the findings in ``todo``, each with the lines to rebuild."""
    pending = sorted(todo, key=lambda f: (f.line, f.col))
    keys = [(f.line, f.col) for f in pending]
    groups: List[Group] = []
    _visit_statements(tree.body, None, lines, pending, keys, groups)
    return groups


def _visit_statements(body: List[ast.stmt], owner: Optional[ast.AST], lines: List[str],
                      pending: List[Finding], keys: List[Tuple[int, int]], groups: List[Group]) -> None:
    for stmt in body:
        end = (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0)
        lo = bisect.bisect_left(keys, (stmt.lineno, stmt.col_offset))
        hi = bisect.bisect_right(keys, end)
        if lo == hi:
            continue
        blocks: List[Tuple[List[ast.stmt], ast.AST]] = []
        for name in _COMPOUND_BODIES:
            value = getattr(stmt, name, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                blocks.append((value, stmt))
        for handler in getattr(stmt, "handlers", []) or []:
            blocks.append((handler.body, handler))
        for case in getattr(stmt, "cases", []) or []:
            blocks.append((case.body, case.pattern))
        if blocks:
            for block, block_owner in blocks:
                _visit_statements(block, block_owner, lines, pending, keys, groups)
            continue
        group = _group(stmt, body, owner, lines, pending[lo:hi])
        if group is not None:
            groups.append(group)


def _group(stmt: ast.stmt, siblings: List[ast.stmt], owner: Optional[ast.AST], lines: List[str],
           findings: List[Finding]) -> Optional[Group]:
    """Where ``stmt``'s lines are and how they are re-parsed; None when its layout has no whole-line rewrite."""
    first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
    head = textpos.line_text(lines, first)
    col = textpos.char_column(head, stmt.col_offset)
    tail = textpos.line_text(lines, last)[textpos.char_column(textpos.line_text(lines, last), stmt.end_col_offset or 0):]
    if tail.strip() and not tail.strip().startswith("#"):
        return None  # `x.div_(t); y = 1`
    before = head[:col]
    body = "".join(lines[first - 1:last])
    segments = {id(f): _segment(lines, f) for f in findings if f.fix.kind is FixKind.HOIST}
    if not before.strip():
        return Group(stmt, findings, first, last, before, "", body[len(before):], segments)
    if not before.rstrip().endswith(":") or owner is None or len(siblings) != 1:
        return None  # after a semicolon, or one of several statements in a one-line suite
    owner_line = getattr(owner, "lineno", first)
    indent = _leading_ws(textpos.line_text(lines, owner_line)) + "\0"  # + the unit, filled in by _render
    return Group(stmt, findings, first, last, indent, before.rstrip(), body[col:], segments)


def _segment(lines: List[str], f: Finding) -> str:
    """The source text of finding ``f``'s node."""
    head, tail = textpos.line_text(lines, f.line), textpos.line_text(lines, f.end_line)
    start, end = textpos.char_column(head, f.col), textpos.char_column(tail, f.end_col)
    if f.line == f.end_line:
        return head[start:end]
    return head[start:] + lines[f.line - 1][len(head):] + "".join(lines[f.line:f.end_line - 1]) + tail[:end]



def terminated(text: str, newline: str) -> str:
    return text if text.endswith(("\n", "\r")) else text + newline

