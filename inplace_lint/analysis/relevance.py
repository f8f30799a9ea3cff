"""Which function bodies of one file can lead to a finding when the file is analysed alone (:func:`bodies_needed`).

flake8 without a project cache analyses each file alone (:func:`inplace_lint.analysis.api.analyze`, ``lean=True``).
A finding is reported at an in-place write (a ``*_`` method, an augmented or item assignment, ``inplace=``/``out=``)
or at a call of a function of the file that makes one (its call sites decide what the write meets, and whether it
runs with grad off). A body with neither, that no such body names, can only give summaries, and a body that needs
one asks for it on demand (:meth:`~.project.ModuleContext._demand`): walking it at the end adds nothing. Files where a
finding may stand at a call with no write syntax near it are walked whole: an in-place layer applied (``inplace=``
or a positional ``True`` anywhere) or a module whose ``forward`` writes (``self.block(x)`` names no function).
"""
from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Optional, Set

from ..torch_facts import ops
from .astutil import child_nodes, last_name

#: methods whose callers name them by no function name: ``self.block(x)`` runs ``forward``
_CALLED_UNNAMED = frozenset({"forward", "__call__"})


def _writes(node: ast.AST) -> bool:
    """``node`` is in-place write syntax, or a call that may apply an in-place layer (see the module's docstring)."""
    kind = node.__class__
    if kind is ast.AugAssign:
        return True
    if kind is ast.Assign or kind is ast.AnnAssign:
        targets = node.targets if kind is ast.Assign else [node.target]
        return any(_item(t) or isinstance(t, (ast.Tuple, ast.List)) and any(_item(e) for e in t.elts) for t in targets)
    if kind is ast.Call:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr.endswith("_") and not func.attr.endswith("__"):
            return True
        return any(k.arg in ("inplace", "out") for k in node.keywords)
    return False


def _item(target: ast.AST) -> bool:
    """An item assignment's target that may be a tensor's: not ``d["key"]`` (no tensor takes a string index)."""
    return isinstance(target, ast.Subscript) and not (isinstance(target.slice, ast.Constant)
                                                     and isinstance(target.slice.value, str))


def _may_take_inplace(call: ast.Call) -> bool:
    """A call that may take ``inplace`` by position: a ``torch.nn.functional`` activation or dropout
    (:data:`~inplace_lint.torch_facts.ops.INPLACE_POSITION`), or a class (``nn.ReLU(True)``, any layer); not a
    method such as ``x.sum(-1, True)``."""
    name = last_name(call.func) or ""
    return name in ops.INPLACE_POSITION or name[:1].isupper()


def bodies_needed(tree: ast.Module) -> Optional[FrozenSet[str]]:
    """The names (``f``, ``Cls.method``) of the top-level functions and top-level classes' methods whose bodies
    :meth:`~.project.ModuleContext.finish` must walk: those with write syntax and those that name one of them
    (transitively); None when every body must be walked (see the module's docstring). One walk of the tree."""
    owners: Dict[str, ast.AST] = {}
    todo: list = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            owners[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for m in node.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    owners[f"{node.name}.{m.name}"] = m
    owner_of = {id(n): name for name, n in owners.items()}
    short = {name.rpartition(".")[2] for name in owners}
    writes: Set[str] = set()
    refs: Dict[str, Set[str]] = {name: set() for name in owners}
    todo = [(tree, None)]
    pop, push = todo.pop, todo.append
    while todo:
        node, owner = pop()
        kind = node.__class__
        if kind is ast.keyword and node.arg == "inplace":
            return None
        if kind is ast.Call and any(a.__class__ is ast.Constant and a.value is True for a in node.args) \
                and _may_take_inplace(node):
            return None  # (`nn.ReLU(True)`, `F.relu(x, True)`, a project's `ConvBNReLU(c, c, True)`)
        if owner is not None:
            if kind is ast.Name:
                if node.id in short:
                    refs[owner].add(node.id)
                continue
            if kind is ast.Attribute and node.attr in short:
                refs[owner].add(node.attr)
            if owner not in writes and _writes(node):
                writes.add(owner)
        for child in child_nodes(node):
            push((child, owner_of.get(id(child), owner)))
    needed = set(writes)
    named = {name.rpartition(".")[2] for name in needed}
    changed = True
    while changed:
        changed = False
        for name, named_here in refs.items():
            if name not in needed and named_here & named:
                needed.add(name)
                named.add(name.rpartition(".")[2])
                changed = True
    return None if named & _CALLED_UNNAMED else frozenset(needed)
