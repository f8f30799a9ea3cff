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
from typing import Dict, FrozenSet, Iterator, Optional, Set, Tuple

from ..torch_facts import ops
from .astutil import child_nodes, last_name, method_key, walk_ast

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
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name.endswith("_") and not name.endswith("__"):
            return True  # (`x.add_(y)`, and `sigmoid_(y)` imported from torch)
        return any(k.arg in ("inplace", "out") for k in node.keywords)
    return False


def _item(target: ast.AST) -> bool:
    """An item assignment's target that may be a tensor's: not ``d["key"]`` (no tensor takes a string index)."""
    return isinstance(target, ast.Subscript) and not (isinstance(target.slice, ast.Constant)
                                                     and isinstance(target.slice.value, str))


def _plain_write_target(node: ast.AST) -> Optional[str]:
    """The name a write's target is, or is an item of: ``n`` of ``n += 1``, ``d`` of ``d[k] = v`` (None for
    anything else: ``self.n += 1`` may be a buffer, ``x.add_(y)`` a tensor's method, and ``d[k] += t`` adds in place
    to what a container holds, maybe a tensor)."""
    kind = node.__class__
    if kind is ast.AugAssign:
        target = node.target
        return target.id if target.__class__ is ast.Name else None
    if kind is ast.Assign and len(node.targets) == 1 or kind is ast.AnnAssign:
        target = node.targets[0] if kind is ast.Assign else node.target
        if target.__class__ is ast.Subscript and target.value.__class__ is ast.Name:
            return target.value.id
    return None


#: what makes a name a container that is no tensor: a display, a comprehension, or a call of one of these
_CONTAINERS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
_CONTAINER_CALLS = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "Counter", "deque"})
_BINDING_KINDS = frozenset({ast.For, ast.AsyncFor, ast.comprehension, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.arg, ast.ExceptHandler, ast.alias, ast.Global,
                            ast.Nonlocal, ast.MatchAs, ast.MatchStar, ast.MatchMapping})


class _Bindings:
    """How one body binds its names (nested functions included), for :meth:`never_a_tensor`: the names an assignment
    binds to a number literal (``n = 0``) or to a container (``d = {}``), those an augmented assignment updates by
    something but a number literal, and those bound any other way (a parameter, a loop variable, an unpacking, an
    import, ``global``: :attr:`other`)."""

    __slots__ = ("numbers", "containers", "other", "updates", "judged")

    def __init__(self) -> None:
        self.numbers: Set[str] = set()
        self.containers: Set[str] = set()
        self.other: Set[str] = set()
        self.updates: Set[str] = set()
        #: the target nodes :meth:`note` judged (the walk reaches them after their assignment)
        self.judged: Set[int] = set()

    def note(self, node: ast.AST) -> None:
        """An assignment, or any other node that binds names (:data:`_BINDING_KINDS`)."""
        kind = node.__class__
        if kind is ast.AugAssign:
            target = node.target
            if target.__class__ is ast.Name:
                self.judged.add(id(target))
                value = node.value
                if not (value.__class__ is ast.Constant and type(value.value) in (int, float) or value.__class__ is
                        ast.Call and value.func.__class__ is ast.Name and value.func.id in ("len", "int")):
                    self.updates.add(target.id)
            return
        if kind is ast.Assign or kind is ast.AnnAssign:
            value = node.value
            for target in (node.targets if kind is ast.Assign else [node.target]):
                if target.__class__ is not ast.Name or value is None:
                    continue  # (an unpacking's names: :attr:`other`, when the walk reaches them)
                self.judged.add(id(target))
                if value.__class__ is ast.Constant and type(value.value) in (int, float):
                    self.numbers.add(target.id)
                elif isinstance(value, _CONTAINERS) or value.__class__ is ast.Call and \
                        value.func.__class__ is ast.Name and value.func.id in _CONTAINER_CALLS:
                    self.containers.add(target.id)
                else:
                    self.other.add(target.id)
            return
        if kind is ast.For or kind is ast.AsyncFor or kind is ast.comprehension:
            # `for i in range(n)`, `for i, x in enumerate(xs)`: `i` is an int (the other names: :attr:`other`)
            target, it = node.target, node.iter
            name = last_name(it.func) if it.__class__ is ast.Call and it.func.__class__ is ast.Name else None
            if name == "range" and target.__class__ is ast.Name:
                self.judged.add(id(target))
                self.numbers.add(target.id)
            elif name == "enumerate" and target.__class__ is ast.Tuple and target.elts \
                    and target.elts[0].__class__ is ast.Name:
                self.judged.add(id(target.elts[0]))
                self.numbers.add(target.elts[0].id)
        elif kind is ast.arg:
            self.other.add(node.arg)
        elif kind is ast.ExceptHandler:
            if node.name:
                self.other.add(node.name)
        elif kind is ast.alias:
            self.other.add((node.asname or node.name).partition(".")[0])
        elif kind is ast.Global or kind is ast.Nonlocal:
            self.other.update(node.names)
        else:  # (a `match` pattern's capture)
            name = getattr(node, "name", None)
            if isinstance(name, str):
                self.other.add(name)

    def bound(self, node: ast.Name) -> None:
        """A name bound (not read) by a node :meth:`note` did not judge: a loop variable, an unpacking, ``with ...
        as``, ``:=``, ``del``."""
        if id(node) not in self.judged:
            self.other.add(node.id)

    def never_a_tensor(self, name: str, write: ast.AST) -> bool:
        """Every binding of ``name`` in the body is a number literal and every augmented assignment of it adds a
        number literal (``n = 0 ... n += 1``), or every binding is a container (``d = {}; d[k] = v``)."""
        if write.__class__ is ast.AugAssign and (write.value.__class__ is ast.JoinedStr or write.value.__class__ is
                                                 ast.Constant and isinstance(write.value.value, (str, bytes))):
            return True  # (`line += f"..."`: no tensor takes a string)
        if name in self.other or name in self.updates:
            return False
        if write.__class__ is ast.AugAssign and write.target.__class__ is ast.Name:
            return name in self.numbers and name not in self.containers
        return name in self.containers and name not in self.numbers


def _may_take_inplace(call: ast.Call) -> bool:
    """A call that may take ``inplace`` by position: a ``torch.nn.functional`` activation or dropout
    (:data:`~inplace_lint.torch_facts.ops.INPLACE_POSITION`), or a class (``nn.ReLU(True)``, any layer); not a
    method such as ``x.sum(-1, True)``."""
    name = last_name(call.func) or ""
    return name in ops.INPLACE_POSITION or name[:1].isupper()


def bodies_needed(tree: ast.Module) -> Optional[FrozenSet[str]]:
    """:func:`scan`'s bodies."""
    return scan(tree)[0]


def scan(tree: ast.Module) -> Tuple[Optional[FrozenSet[str]], bool]:
    """The names (``f``, ``Cls.method``) of the top-level functions and top-level classes' methods whose bodies
    :meth:`~.project.ModuleContext.finish` must walk: those with write syntax and those that name one of them
    (transitively), or None when every body must be walked (see the module's docstring); and whether the code outside
    those bodies (module and class bodies, functions defined under an ``if``) has write syntax. One walk of the tree."""
    owners: Dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            owners[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for m in node.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    owners[f"{node.name}.{method_key(m)}"] = m
    short = {name.rpartition(".")[2] for name in owners}
    writes: Set[str] = set()
    #: per body: its writes to a plain name (``n += 1``, ``d[k] = v``), kept apart until the name's bindings are known
    on_names: Dict[str, list] = {}
    refs: Dict[str, Set[str]] = {name: set() for name in owners}
    bindings: Dict[str, _Bindings] = {}
    top_writes = False
    owned = {id(n) for n in owners.values()}
    # each body with `walk_ast` (the analysis' fast walk), then the rest of the module without the bodies
    parts = [(name, walk_ast(n)) for name, n in owners.items()]
    parts.append((None, _outside(tree, owned)))
    for owner, nodes in parts:
        found_refs = refs.get(owner)
        bound = bindings[owner] = _Bindings() if owner is not None else None
        for node in nodes:
            kind = node.__class__
            if kind is ast.Name:
                if owner is not None:
                    if node.id in short:
                        found_refs.add(node.id)
                    if node.ctx.__class__ is not ast.Load:
                        bound.bound(node)
                continue
            if kind is ast.keyword:
                if node.arg == "inplace":
                    return None, True
                continue
            if kind is ast.Call and any(a.__class__ is ast.Constant and a.value is True for a in node.args) \
                    and _may_take_inplace(node):
                return None, True  # (`nn.ReLU(True)`, `F.relu(x, True)`, a project's `ConvBNReLU(c, c, True)`)
            if owner is None:
                top_writes = top_writes or _writes(node)
                continue
            if kind is ast.Attribute and node.attr in short:
                found_refs.add(node.attr)
            if kind in _BINDING_KINDS:
                bound.note(node)
            if owner not in writes and _writes(node):
                name = _plain_write_target(node)
                if name is None:
                    writes.add(owner)
                else:
                    on_names.setdefault(owner, []).append((name, node))
    for owner, found in on_names.items():
        if owner not in writes and any(not bindings[owner].never_a_tensor(name, node) for name, node in found):
            writes.add(owner)
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
    return None if named & _CALLED_UNNAMED else frozenset(needed), top_writes


def _outside(tree: ast.Module, owned: Set[int]) -> Iterator[ast.AST]:
    """Every node of ``tree`` but those of the bodies in ``owned`` (top-level functions and methods, by ``id``)."""
    todo = [tree]
    pop, push = todo.pop, todo.extend
    while todo:
        node = pop()
        yield node
        push(c for c in child_nodes(node) if id(c) not in owned)


def no_finding_possible(needed: Optional[FrozenSet[str]], top_writes: bool) -> bool:
    """Analysed alone, a file can give no finding when :func:`scan` found no body needed and no write syntax outside
    the bodies. Its summaries would matter only to other files, which the file alone has none of."""
    return needed is not None and not needed and not top_writes
