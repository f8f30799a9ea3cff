"""Top-level tables of functions (``UPDATES = {"adapt": _adapt, "const": _const}``) and the calls made through them
(``UPDATES[kind](penalties, p_mult)``): such a call may run any function the literal holds, each a call site of its
own, so its callers decide what a guess about a parameter would leave open (humancompatible-train's penalty
updates, set CG; docs/analysis.md).
"""
from __future__ import annotations

import ast
from typing import Dict, List, Mapping, Tuple

from .astutil import dotted_name
from .strings import STRINGS, returns_string

#: a dependency on the functions a top-level table holds: ``TABLE + "pkg.mod.NAME"`` -> the items seen, joined
TABLE = "\x00table:"


def function_tables(tree: ast.Module, module: str, imports: Dict[str, str]) -> Dict[str, Tuple[str, ...]]:
    """Top-level ``NAME = {key: f, ...}`` (or ``[f, g]``, ``(f, g)``) whose items are all names or dotted names:
    ``NAME`` -> each item qualified through the module's imports (``module.f`` for a name defined here). A name
    bound again at top level is no table (``NAME[k] = h`` adds an item the literal does not show)."""
    bound: Dict[str, int] = {}
    found: Dict[str, Tuple[str, ...]] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            for t in ast.walk(target):
                name = t.id if isinstance(t, ast.Name) else t.value.id \
                    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) else None
                if name is not None:
                    bound[name] = bound.get(name, 0) + 1
        if not (isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None):
            continue
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        value = node.value
        items = value.values if isinstance(value, ast.Dict) else value.elts \
            if isinstance(value, (ast.List, ast.Tuple)) else None
        if not isinstance(target, ast.Name) or not items or isinstance(value, ast.Dict) and None in value.keys:
            continue
        names = [dotted_name(v) for v in items]
        if any(n is None for n in names):
            continue
        quals = []
        for n in names:
            head, _, rest = n.partition(".")
            base = imports.get(head, f"{module}.{head}")
            quals.append(f"{base}.{rest}" if rest else base)
        found[target.id] = tuple(dict.fromkeys(quals))
    if not found:
        return {}
    # every other use of the name: only `NAME[key](...)`, `key in NAME`, `NAME.keys()`, `len(NAME)`; `NAME.get(k)(...)`,
    # `fn = NAME[k]`, `for f in NAME`, NAME handed to a call run its functions where no call site shows their arguments
    harmless = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript):
            harmless.add(id(n.func.value))
        elif isinstance(n, ast.Compare) and all(isinstance(op, (ast.In, ast.NotIn)) for op in n.ops):
            harmless.update(id(c) for c in n.comparators)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "keys" and not n.args:
            harmless.add(id(n.func.value))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" and len(n.args) == 1:
            harmless.add(id(n.args[0]))
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id in found and isinstance(n.ctx, ast.Load) and id(n) not in harmless:
            found.pop(n.id)
    return {k: v for k, v in found.items() if bound.get(k) == 1}


def table_callees(scope, table: ast.expr) -> List[Tuple[str, int]]:
    """``(qualified name, 0)`` of each function a call ``table[key](...)`` may run, where ``table`` names a top-level
    table of functions (of this module, or imported) and nothing in the calling function binds that name."""
    if not isinstance(table, ast.Name) or table.id in scope.env or scope.is_param(table.id):
        return []
    ctx = scope.ctx
    entries = ctx.table(scope.names.get(table.id, f"{ctx.module}.{table.id}"))
    if entries and scope.func is not None and not isinstance(scope.func, ast.Module) \
            and table.id in scope.facts().assigned:
        return []  # (a local of the same name)
    return [f for f in (ctx.function(q) for q in entries) if f]


def lookup(indexes: Mapping[str, object], qual: str) -> Tuple[str, ...]:
    """The functions the table ``qual`` (``pkg.mod.NAME``) holds, qualified; empty when it is none, or when another
    module imports it, its module (``from pkg import mod``, ``from pkg.mod import *``) or a package above it: what that
    module does with it is not in the index (``mod.NAME.get(k)(...)``)."""
    module, _, name = qual.rpartition(".")
    index = indexes.get(module)
    found = index.tables.get(name, ()) if index is not None else ()
    if found:
        parts = module.split(".")
        reach = {qual} | {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
        if any(v in reach for key, other in indexes.items() if key != module for v in other.imports.values()):
            return ()
    return found


def dep_text(indexes: Mapping[str, object], key: str) -> str:
    """What a walk's dependency ``key`` (``TABLE + qual`` or ``STRINGS + qual``) reads now."""
    if key.startswith(TABLE):
        return ",".join(lookup(indexes, key[len(TABLE):]))
    return "1" if returns_string(indexes, key[len(STRINGS):]) else ""


class IndexAnswers:
    """The module context's answers read from the modules' indexes, each a dependency of the walk that asks (a part
    of :class:`~.project.ModuleContext`)."""

    def table(self, qual: str) -> Tuple[str, ...]:
        """:func:`lookup` (an item added to the literal walks the file again)."""
        found = lookup(self.project.indexes, qual)
        self.deps[f"{TABLE}{qual}"] = ",".join(found)
        return found

    def returns_string(self, qual: str) -> bool:
        """:func:`.strings.returns_string`."""
        found = returns_string(self.project.indexes, qual)
        self.deps[f"{STRINGS}{qual}"] = "1" if found else ""
        return found
