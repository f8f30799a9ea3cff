"""Values that are surely strings: a tensor, an array or a list cannot be indexed by one, so ``d[key] = value`` with a
string ``key`` stores into a mapping (fairseq's ``incremental_state[full_key] = value``, ``full_key`` made by a helper
returning ``"{}.{}".format(...)``).

:func:`string_valued` reads an expression: a string literal, an f-string, ``"...".format(...)``, ``sep.join(...)``,
``"..." % args``, a concatenation with one, ``str(...)``/``repr(...)``, a local bound only to such values, or a call of
a function of the project whose every ``return`` gives one (:func:`string_functions`, kept in each module's index).
"""
from __future__ import annotations

import ast
from typing import Callable, Dict, FrozenSet, List, Optional

from .astutil import dotted_name, walk_ast
from .names import qualify_dotted

#: builtins that return a string
_STRING_BUILTINS = frozenset({"str", "repr", "format", "chr", "hex", "oct", "bin", "ascii"})
#: methods of a string that return a string
_STRING_METHODS = frozenset({"format", "join", "lower", "upper", "strip", "lstrip", "rstrip", "replace", "title",
                             "capitalize", "casefold", "zfill", "center", "ljust", "rjust", "removeprefix",
                             "removesuffix", "format_map"})
_MAX_DEPTH = 4
#: what a string function's ``return`` may give, at first sight
_STRING_SHAPES = (ast.Constant, ast.JoinedStr, ast.BinOp, ast.Name, ast.Call)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
#: a dependency on whether a function of the project always returns a string: ``STRINGS + qual`` -> "1" or ""
STRINGS = "\x00strings:"


def string_valued(node: Optional[ast.expr], bindings: Callable[[str], Optional[List[ast.expr]]],
                  returns_string: Callable[[ast.expr], bool], depth: int = 0,
                  shadowed: Callable[[str], bool] = lambda name: False) -> bool:
    """``node`` surely evaluates to a ``str``. ``bindings(name)``: every value the local ``name`` is bound to in the
    function (None when it is bound some other way, or is a parameter); ``returns_string(func)``: the callee is a
    function of the project that always returns a string; ``shadowed(name)``: a builtin's name is bound otherwise."""
    if node is None or depth > _MAX_DEPTH:
        return False
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Mod):
            return string_valued(node.left, bindings, returns_string, depth + 1, shadowed)
        if isinstance(node.op, ast.Add):  # (`str + x` is a str or raises)
            return string_valued(node.left, bindings, returns_string, depth + 1, shadowed) \
                or string_valued(node.right, bindings, returns_string, depth + 1, shadowed)
        return False
    if isinstance(node, ast.Name):
        values = bindings(node.id)
        return bool(values) and all(string_valued(v, bindings, returns_string, depth + 1, shadowed) for v in values)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id in _STRING_BUILTINS:
            return not shadowed(func.id)
        if isinstance(func, ast.Attribute) and func.attr in _STRING_METHODS:
            return string_valued(func.value, bindings, returns_string, depth + 1, shadowed)
        return returns_string(func)
    return False


def _local_bindings(func: ast.AST) -> Dict[str, Optional[List[ast.expr]]]:
    """Each name ``func`` binds -> the values a plain ``name = value`` binds it to; None for a name also bound any
    other way (a parameter, a loop, an unpacking, ``+=``, ``with ... as``, ``:=``)."""
    out: Dict[str, Optional[List[ast.expr]]] = {}
    plain = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            plain.add(id(node.targets[0]))
            found = out.setdefault(node.targets[0].id, [])
            if found is not None:
                found.append(node.value)
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)) and id(node) not in plain:
            out[node.id] = None
        elif isinstance(node, ast.arg):
            out[node.arg] = None
    return out


def string_functions(tree: ast.Module) -> FrozenSet[str]:
    """The module's top-level functions whose every ``return`` gives a string (and that return at all), read from
    their own code alone (a call in a return is not followed)."""
    found = set()
    defined: Dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined[node.name] = defined.get(node.name, 0) + 1
    bound = {t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom))
             for t in (node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)])
             if isinstance(t, ast.Name)} | {a.asname or a.name for node in tree.body
                                            if isinstance(node, (ast.Import, ast.ImportFrom)) for a in node.names}
    shadowed = bound.__contains__
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.decorator_list \
                or defined[node.name] > 1:
            continue  # (a decorator may return anything; of two definitions, which one runs is not read here)
        last = node.body[-1]  # (first sight: the function ends in returning a string, or a name bound to one)
        if last.__class__ is not ast.Return or not (
                string_valued(last.value, lambda name: None, lambda func: False, shadowed=shadowed) or (
                last.value.__class__ is ast.Name and any(
                    s.__class__ is ast.Assign and len(s.targets) == 1 and s.targets[0].__class__ is ast.Name
                    and s.targets[0].id == last.value.id
                    and string_valued(s.value, lambda name: None, lambda func: False, shadowed=shadowed)
                    for s in node.body))):
            continue
        returns = []
        for n in walk_ast(node):
            if n.__class__ is ast.Return:
                if n.value is None or not isinstance(n.value, _STRING_SHAPES):
                    break  # (a tensor's name, a call of another function: no string function, decided at once)
                returns.append(n)
            elif n.__class__ in _SCOPES and n is not node:
                break  # (a nested function's returns are not this one's)
        else:
            local = _local_bindings(node) if any(r.value.__class__ is ast.Name for r in returns) else {}
            if returns and all(string_valued(r.value, local.get, lambda func: False, shadowed=shadowed)
                               for r in returns):
                found.add(node.name)
    return frozenset(found)


def returns_string(indexes, qual: str) -> bool:
    """The top-level function ``qual`` always returns a string (:func:`string_functions` of its module's index)."""
    module, _, name = qual.rpartition(".")
    index = indexes.get(module)
    return index is not None and name in index.string_functions


class StringsMixin:
    """``string_key`` (a part of :class:`~.dataflow.Scope`)."""

    def string_key(self, key: ast.expr) -> bool:
        """``key`` (an item assignment's index) is surely a string: the written object is a mapping, not a tensor."""
        params = set(self.params)
        bindings = self._bindings()
        return string_valued(key, lambda name: None if name in params else bindings.get(name), self._returns_string,
                             shadowed=lambda name: name in self.names or self.is_local_name(name))

    def _returns_string(self, func: ast.expr) -> bool:
        if self.ctx is None:
            return False
        dotted = dotted_name(func)
        head = dotted.split(".")[0] if dotted is not None else None
        if head is None or head in self.env or head in self.params \
                or self.local_funcs.get(head, f"{self.ctx.module}.{head}") != f"{self.ctx.module}.{head}":
            return False  # (a local of that name: `def key_of(i): return i` nested here)
        qual, imported = qualify_dotted(dotted, self.names, self.is_local_name)
        if not imported:
            qual = f"{self.ctx.module}.{dotted}"
        # (the function's own binding of the name, asked last: it builds the function's facts)
        return qual is not None and self.ctx.returns_string(qual) and not (
            self.func is not None and not isinstance(self.func, ast.Module) and head in self.facts().assigned)
