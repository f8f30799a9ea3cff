"""The plan of one fix: which rewrite a write admits (statement or hoist), its safety, and the
:class:`~inplace_lint.findings.Recipe` the printers write; and the one place that withdraws a fix the
rewriter cannot write (:func:`withdraw_unwritable`)."""
from __future__ import annotations

import ast
import bisect
import dataclasses
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from ...findings import (Applicability, Finding, Fix, FixKind, Origin, Recipe, RewriteForm, Scaling, StepKind,
                         WriteKind)
from ...rules.ipv004_expanded import SILENT_BASE_WRITES
from ...torch_facts import ops
from ..astutil import inplace_flag_arg, last_name, walk_ast
from .facts import (HOIST_STATEMENTS, NO_HOIST_PARENTS, SIDE_EFFECTS, FunctionFacts, alias_closure, count_name,
                    loop_variable, module_names, root_base_name)
from .safety import applicability, kept_reason, operand_shares_target
from .scaling import scaling


def write_target_name(kind: WriteKind, target: ast.expr) -> Optional[str]:
    """The name a rewrite would rebind, or None when the target is not a plain name."""
    return target.id if isinstance(target, ast.Name) else None

def fix_kind(kind: WriteKind, node: ast.AST, op_name: Optional[str], stmt: Optional[ast.stmt],
             target_name: str, facts: FunctionFacts) -> Optional[FixKind]:
    """Which rewrite the write at ``node`` (inside statement ``stmt``) admits, if any."""
    if stmt is None or _shares_a_line(stmt, facts):
        return None
    if kind is WriteKind.METHOD and (op_name in ops.METADATA_INPLACE_METHODS or op_name is None):
        return None
    if kind is WriteKind.FUNCTION and op_name not in ops.FUNCTION_TWINS:
        return None  # torch.zero_, torch.resize_as_, ...: no same-named out-of-place function
    if kind is WriteKind.AUGMENTED:
        return FixKind.STATEMENT if stmt is node and op_name is not None else None  # `@=` has no in-place method
    if kind is WriteKind.SUBSCRIPT:
        whole = (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and stmt.targets[0] is node) or \
            (isinstance(stmt, ast.AugAssign) and stmt is node)
        return FixKind.STATEMENT if whole else None
    if kind is WriteKind.INPLACE_KWARG and not _inplace_flag_in_call(node):
        return None  # nn.ReLU(inplace=True) applied to the tensor: fix the module, not the call
    if isinstance(stmt, ast.Expr) and stmt.value is node:
        return FixKind.STATEMENT
    if isinstance(stmt, ast.Assign) and stmt.value is node and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == target_name:
        return FixKind.STATEMENT  # h = F.relu(h, inplace=True) -> h = F.relu(h); x = x.div_(t) likewise
    if kind is WriteKind.OUT_KWARG or not isinstance(stmt, HOIST_STATEMENTS):
        return None
    return FixKind.HOIST if _hoistable(stmt, node, target_name, facts) else None

def _inplace_flag_in_call(node: ast.AST) -> bool:
    """The call itself passes ``inplace`` (``F.relu(x, inplace=True)``, ``F.relu(x, True)``); a module
    built with ``inplace=True`` and applied later (``self.dropout(x)``) has nothing in the call to drop."""
    return isinstance(node, ast.Call) and inplace_flag_arg(node, last_name(node.func) or "") is not None

def _hoistable(stmt: ast.stmt, node: ast.AST, target_name: str, facts: FunctionFacts) -> bool:
    """Moving the write (and its arguments) before ``stmt`` keeps the order of everything observable:
    no other read of the name in the statement, no lazy or conditional context around the write, and
    nothing with a side effect evaluated before it."""
    if count_name(stmt, target_name) != count_name(node, target_name):
        return False
    path = facts.path_to(node)
    path = path[path.index(stmt):]
    for parent, child in zip(path, path[1:]):
        if isinstance(parent, NO_HOIST_PARENTS):
            return False
        for earlier in _evaluated_before(parent, child):
            if any(isinstance(n, SIDE_EFFECTS) or not _inert(n) for n in walk_ast(earlier)):
                return False
    return True


#: what may be evaluated before a hoisted write: names, constants, dotted names (``torch.add``, ``self.scale``),
#: tuples and lists of them. A subscript (``w[5]``, ``batch["mask"]``), an operator (``a * b``: a shape
#: mismatch, a user ``__mul__``) may raise, and then the original never ran the write
_INERT = (ast.Name, ast.Constant, ast.Attribute, ast.Tuple, ast.List, ast.Starred, ast.keyword, ast.expr_context)


def _inert(node: ast.AST) -> bool:
    return isinstance(node, _INERT)

def _evaluated_before(parent: ast.AST, child: ast.AST) -> List[ast.AST]:
    """Children of ``parent`` that Python evaluates before ``child``."""
    if isinstance(parent, (ast.Assign, ast.AnnAssign)):
        return []  # the value is evaluated before the targets
    before: List[ast.AST] = []
    for sibling in ast.iter_child_nodes(parent):
        if sibling is child:
            return before
        before.append(sibling)
    return before

def _shares_a_line(stmt: ast.stmt, facts: FunctionFacts) -> bool:
    """Another statement sits on one of ``stmt``'s lines (``a = 1; x.div_(t)``): a rewrite replaces whole
    lines, so it would have to split them. A one-line suite (``if c: x.div_(t)``) is fine: it becomes a block.
    Siblings are in source order, so one that shares a line is a neighbour."""
    found = facts.siblings(stmt)
    if found is None:
        return False
    siblings, i = found
    return any(s.lineno <= (stmt.end_lineno or stmt.lineno) and (s.end_lineno or s.lineno) >= stmt.lineno
               for s in siblings[max(i - 1, 0):i] + siblings[i + 1:i + 2])

def _reads_watched_outside(facts: FunctionFacts, stmt: ast.stmt, node: ast.AST, name: str,
                           origins: Sequence[Origin], aliases: Iterable[str]) -> bool:
    observers = set(aliases) | {name}
    observers |= {b for b in (root_base_name(o) for o in origins) if b is not None}
    watched = alias_closure(facts, observers)
    inside = {id(n) for n in walk_ast(node)}
    return any(isinstance(n, ast.Name) and n.id in watched and id(n) not in inside for n in walk_ast(stmt))

def plan(facts: FunctionFacts, params: Sequence[str], kind: WriteKind, node: ast.AST, target: ast.expr,
         op_name: Optional[str], origins: Sequence[Origin], env_aliases: Dict[str, FrozenSet[Origin]],
         stmt: Optional[ast.stmt], loops: Sequence[ast.AST], callers_checked: bool = False,
         kept: Optional[Dict[Tuple[str, int], str]] = None, holders: Optional[Iterable[str]] = None,
         shared_fields: Sequence[Sequence[str]] = ()) -> Optional[Fix]:
    """The fix for one finding, or None when it has no correct out-of-place form. ``kept``: roots of
    what in-project calls returned that is also held elsewhere (``FunctionSummary.kept``). ``holders``: the
    names of ``env_aliases`` that may hold one of ``origins``' roots (a superset; default: all of them).
    ``shared_fields``: groups of model-output fields some in-project ``forward`` returns one tensor under."""
    name = write_target_name(kind, target)
    if name is None:
        return None
    if name not in params and not facts.is_local(name):
        return None  # a closure, global or module-level name: rebinding it here would make it local
    if loop_variable(facts, node, name):
        return None  # rebinding a loop variable is lost at the next iteration: the write would vanish
    fkind = fix_kind(kind, node, op_name, stmt, name, facts)
    if fkind is None:
        return None
    roots = {(o.root, o.root_text, o.root_line) for o in origins}
    candidates = env_aliases if holders is None else (k for k in holders if k in env_aliases)
    aliases = [k for k in candidates if "." not in k and "[" not in k and
               any((o.root, o.root_text, o.root_line) in roots for o in env_aliases[k])]
    applicable, reason = applicability(facts, params, name, origins, aliases, node, loops, callers_checked,
                                       shared_fields)
    if operand_shares_target(facts, kind, node, name):
        return None  # the original reads what it wrote: no out-of-place form computes the same
    held = kept_reason(origins, kept or {})
    if held:
        applicable, reason = Applicability.UNSAFE, f"`{name}` holds {held}"
    if (kind is WriteKind.SUBSCRIPT or op_name in SILENT_BASE_WRITES) and any(
            o.is_tensor and o.has(StepKind.EXPAND) for o in origins):
        # `flags = zeros(1).expand(n); flags[0] = 1` writes every element (they are one): the copy writes one
        applicable, reason = Applicability.UNSAFE, (
            f"`{name}` is an expanded view: where the written part holds each shared element once the write "
            "silently changes every element that shares its memory, and the copy changes only those indexed")
    if fkind is FixKind.HOIST and _reads_watched_outside(facts, stmt, node, name, origins, aliases):
        return None  # another alias or the base is read in the same statement: moving the write reorders it
    scale = scaling(facts, kind, node, stmt, name) if fkind is FixKind.STATEMENT else None
    how = recipe(kind, fkind, op_name, scale)
    if how.form is RewriteForm.CLONE_FIRST or (how.method and how.method not in ops.OUT_OF_PLACE_TWINS):
        message = f"clone `{name}` first, then write the copy"
    else:
        message = f"rebind `{name}` to the out-of-place result"
    return Fix(applicable, how, message, reason)


def recipe(kind: WriteKind, fkind: FixKind, op_name: Optional[str], scale: Optional[Scaling] = None) -> Recipe:
    """How a write of ``kind`` (in-place method ``op_name``) admitting rewrite ``fkind`` is written: the one
    decision the printers of :mod:`inplace_lint.fix` print. A method with an out-of-place twin
    (:data:`inplace_lint.torch_facts.ops.OUT_OF_PLACE_TWINS`) runs on a copy, one without it is cloned
    first (hoisted, it runs on a copy: it returns the copy); item assignment is cloned first."""
    method = (op_name or "") if kind in (WriteKind.METHOD, WriteKind.AUGMENTED) else ""
    if kind is WriteKind.SUBSCRIPT or (method and method not in ops.OUT_OF_PLACE_TWINS and fkind is FixKind.STATEMENT):
        form = RewriteForm.CLONE_FIRST
    elif method:
        form = RewriteForm.ON_COPY
    else:
        form = _FORMS[kind]
    return Recipe(fkind, form, method, scale)


_FORMS = {WriteKind.FUNCTION: RewriteForm.FUNCTION_ON_COPY, WriteKind.INPLACE_KWARG: RewriteForm.DROP_INPLACE_FLAG,
          WriteKind.OUT_KWARG: RewriteForm.FRESH_OUT}


#: the deepest simple statement (in ``ast`` levels, the statement itself being 1) whose fix is written.
#: The rewriter (libcst) walks a statement recursively: parsing, visiting and printing it took up to
#: about 10 Python frames per ``ast`` level (nested subscripts, ``a[a[a[...]]]``, the worst shape measured;
#: nested calls about 7), so with Python's default recursion limit of 1000 it failed from about 100
#: levels (140 nested calls: ``RecursionError``). 64 leaves room for the caller's own frames (a language
#: server, a test runner: a statement at the limit is still fixed from 300 frames down). Real code stays
#: below it: of 1.79M simple statements (Python 3.11's standard library, torch, sympy and the other installed
#: packages, verl 0.8.0), 31 are deeper, all generated tables (sympy, pip's idna data, pygls' types).
MAX_REWRITE_DEPTH = 64

#: why an ``out=`` write has no fix in a module that does not import ``torch`` (the rewrite names it)
NO_TORCH = "the rewrite passes `out=torch.empty_like(...)`, and the module does not import `torch`"


def withdraw_unwritable(tree: ast.Module, findings: Sequence[Finding],
                        lines: Optional[Sequence[str]] = None) -> List[Finding]:
    """``findings`` with the fix withdrawn (``fix`` None, ``no_fix`` saying why) where the simple statement
    holding the write is nested deeper than :data:`MAX_REWRITE_DEPTH`, where it ends with a semicolon or a
    line continuation (``y.div_(t);``: the rewrite replaces whole lines; ``lines``, the file's, tell), or where the recipe needs a
    name the module does not import (``out=torch.empty_like(x)`` without a top-level ``import torch``).

    The one place that decides whether the rewriter can write a planned fix: the pipeline calls it on
    every file's findings before any surface sees them, so ``check``'s ``[fix: ...]`` note, JSON, SARIF,
    ``fix`` and the language server's quick fixes agree (a fix is advertised exactly when it is applied).
    ``tree`` is ``ast.parse`` of the findings' file. Iterative (no recursion, whatever the nesting)."""
    if any(f.fix is not None and f.fix.recipe.form is RewriteForm.FRESH_OUT for f in findings) \
            and "torch" not in module_names(tree):
        findings = [dataclasses.replace(f, fix=None, no_fix=NO_TORCH) if f.fix is not None
                    and f.fix.recipe.form is RewriteForm.FRESH_OUT else f for f in findings]
    planned = sorted({(f.line, f.col) for f in findings if f.fix is not None})
    if not planned:
        return list(findings)
    deep: Set[Tuple[int, int]] = set()
    semicolon: Set[Tuple[int, int]] = set()
    stack: List[List[ast.stmt]] = [tree.body]
    while stack:
        for stmt in stack.pop():
            end = (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0)
            lo = bisect.bisect_left(planned, (stmt.lineno, stmt.col_offset))
            hi = bisect.bisect_right(planned, end)
            if lo == hi:
                continue
            blocks = [getattr(stmt, name, None) for name in ("body", "orelse", "finalbody")]
            blocks += [h.body for h in getattr(stmt, "handlers", None) or []]
            blocks += [c.body for c in getattr(stmt, "cases", None) or []]
            blocks = [b for b in blocks if isinstance(b, list) and b and isinstance(b[0], ast.stmt)]
            if blocks:  # a compound statement: its writes are in its blocks (a write in a header has no fix)
                stack.extend(blocks)
            elif _deeper_than(stmt, MAX_REWRITE_DEPTH):
                deep.update(planned[lo:hi])
            elif lines is not None and stmt.end_lineno is not None and stmt.end_lineno <= len(lines) \
                    and lines[stmt.end_lineno - 1][stmt.end_col_offset or 0:].lstrip().startswith((";", "\\")):
                semicolon.update(planned[lo:hi])
    if not deep and not semicolon:
        return list(findings)
    reason = f"the statement is nested more than {MAX_REWRITE_DEPTH} levels deep, too deep for the rewriter (libcst)"
    ends = "the statement ends with `;` or `\\`, and the rewrite replaces whole lines"
    return [dataclasses.replace(f, fix=None, no_fix=reason if (f.line, f.col) in deep else ends)
            if f.fix is not None and ((f.line, f.col) in deep or (f.line, f.col) in semicolon) else f
            for f in findings]


def _deeper_than(node: ast.AST, limit: int) -> bool:
    """Whether ``node``'s subtree has more than ``limit`` levels (``node`` alone: 1)."""
    stack = [(node, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return False
