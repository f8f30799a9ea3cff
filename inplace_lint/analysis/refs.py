"""Names a module uses other than as the callee of a resolved call: a function or method named so may be
called where no call site shows it (handed around as a value, ``getattr(obj, "name")``, or called on an object
whose class is not known: ``scaler.scale(out)``), so its callers are never "all checked"
(:class:`~.across_calls.AcrossCalls`). Kept as one string per module (:attr:`.summaries.ModuleIndex.value_refs`).
"""
from __future__ import annotations

import ast
import re
from typing import Iterable, List, Set

from .astutil import last_name, walk_ast
from .. import textpos


def refs_text(names: Iterable[str]) -> str:
    """A set of identifiers as one string (``"\\na\\nb\\n"``): the cache loads one string per file
    instead of a set of thousands of strings (most of the cost of reading a warm cache)."""
    return "\n" + "\n".join(sorted(names)) + "\n"


def refers(refs: str, name: str) -> bool:
    return f"\n{name}\n" in refs


#: an identifier not followed by a call's ``(``: in code, comments and strings alike (a superset of the
#: uses as a value, which only ever makes a fix "unsafe"); a regex over the text costs far less than a
#: second walk of the tree
_NOT_CALLED = re.compile(r"(?<!\w)([A-Za-z_]\w*+)(?!\s*\()")
#: a method called on a receiver other than ``self``/``cls``/``super()`` (``scaler.scale(out)``): the
#: object's class is not known, so the call may run any project method of that name where no call site shows
_METHOD_CALL = re.compile(r"\.\s*([A-Za-z_]\w*)\s*\(")
_OWN_RECEIVER = re.compile(r"(?:(?<![\w.])(?:self|cls)|\bsuper\(\))\s*$")


def registered(name: str) -> str:
    """The entry :func:`value_refs` keeps for a class ``name`` that a registry's decorator is handed (``@name``: no
    identifier, so no use of the name as a value matches it)."""
    return "@" + name


def _top_statements(tree: ast.Module) -> List[ast.stmt]:
    """The module's top-level statements, and those one level under a top-level ``if``/``else`` or ``try``."""
    top = list(tree.body)
    for node in tree.body:
        if isinstance(node, ast.If):
            top += node.body + node.orelse
        elif isinstance(node, ast.Try):
            top += node.body
    return top


def registered_classes(tree: ast.Module) -> Set[str]:
    """:func:`registered` entries of the module's top-level classes (and those under a top-level ``if``/``try``)
    defined under a registry's decorator call: ``@register_criterion()``, ``@MODELS.register_module()``,
    ``@registry.register("name")`` (a callee whose name has ``regist`` in it), or the registering function itself
    (``@register_loss``, ``@LOSSES.register``: it is handed the class). A registry keeps the class, and code
    that builds it from a name calls its instances where no call site shows. Not ``@dataclass(eq=False)``,
    ``@add_metaclass(...)``, ``@torch.no_grad()``: they keep nothing."""
    out = set()
    for node in _top_statements(tree):
        if isinstance(node, ast.ClassDef) and any(
                "regist" in (last_name(d.func if isinstance(d, ast.Call) else d) or "").lower()
                for d in node.decorator_list):
            out.add(registered(node.name))
    return out


def _other_receiver_calls(text: str) -> Set[str]:
    """Names of methods called on a receiver other than ``self``, ``cls`` or ``super()``."""
    return {m.group(1) for m in _METHOD_CALL.finditer(text) if not _OWN_RECEIVER.search(text, max(0, m.start() - 16), m.start())}


#: what loads a module or a function by a name built at run time or read from a config (``importlib.import_module
#: (f"pkg._{kind}")``, Hydra's ``instantiate`` of ``_target_: pkg._impl.fn``): a project importing them may reach
#: any of its modules without an import statement
_DYNAMIC_IMPORTERS = ("importlib", "hydra", "omegaconf", "pydoc", "pkgutil")
_DYNAMIC_NAMES = frozenset({"import_module", "__import__", "instantiate", "locate", "get_class", "get_method"})


def unreached(qual: str, indexes, refs_of) -> bool:
    """``qual`` is defined in a private module (``pkg/_x.py``: a name with a leading underscore, which no user
    imports) that no other module of the project imports (``indexes``: their ``imports``, star and submodule
    imports included) or names in its text (``refs_of(index)``: :func:`value_refs`, which keeps an import made
    inside a function; None when not at hand, then it may): with no call site either, nothing runs it
    (sober-bo's ``FBGP/_fully_Bayesian_gp.py``)."""
    indexes = list(indexes)
    module = max((i.module for i in indexes if qual.startswith(i.module + ".")), key=len, default=None)
    if module is None or not any(part.startswith("_") and not part.startswith("__") for part in module.split(".")):
        return False
    name = module.rpartition(".")[2]
    for index in indexes:
        if any(t.startswith(_DYNAMIC_IMPORTERS) or t.rpartition(".")[2] in _DYNAMIC_NAMES
               for t in index.imports.values()):
            return False  # a module may be loaded by a name built at run time or read from a config
        if index.module == module:
            continue
        refs = refs_of(index)
        if refs is None or refers(refs, name) or any(t == module or t.startswith(module + ".")
                                                     for t in index.imports.values()):
            return False
    return True


def value_refs_in_text(source: str, tree: ast.Module) -> str:
    """:func:`value_refs` from the source text: every identifier not directly followed by ``(``, outside
    the module's top-level imports (an import names a function without using it)."""
    blank = set()
    for node in _top_statements(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            blank.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    text = source
    if blank:  # each import's lines emptied; the lines are split only down to the last (imports come first)
        pieces, end, last = [], 0, max(blank)
        for number, line in enumerate(textpos.LINE.finditer(source), 1):
            pieces.append("\n" if number in blank else line.group())
            end = line.end()
            if number >= last:
                break
        pieces.append(source[end:])
        text = "".join(pieces)
    return refs_text(set(_NOT_CALLED.findall(text)) | _other_receiver_calls(text) | registered_classes(tree))


def value_refs(tree: ast.Module) -> str:
    """Names used as a value rather than called: loads of a name or attribute that are not a call's
    callee, and identifier strings (``getattr(obj, "name")``). Imports and definitions are not uses."""
    nodes = list(walk_ast(tree))
    callees = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    out = set()
    for n in nodes:
        if id(n) in callees:
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and not (
                isinstance(n.func.value, ast.Name) and n.func.value.id in ("self", "cls")) and not (
                isinstance(n.func.value, ast.Call) and getattr(n.func.value.func, "id", "") == "super"):
            out.add(n.func.attr)  # `scaler.scale(out)`: the receiver's class is not known
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
            out.add(n.attr)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier():
            out.add(n.value)
    return refs_text(out | registered_classes(tree))
