"""Decorators the project defines: which ones call the function they decorate as it was called.

A function under such a decorator (``@functools.wraps(f)`` around ``f(*args, **kwargs)``, heavyball's
``decorator_knowngood``) is still called by its callers with their arguments, so what they pass decides its
parameters (:meth:`~.project_calls.ProjectCallsMixin.project_wrapper`), and nothing keeps its results
(:func:`~.fixplan.safety.decorator_effects`).
"""
from __future__ import annotations

import ast
from typing import FrozenSet, Iterable, Set, Tuple

from .astutil import dotted_name, walk_ast
from .grad import grad_mode_of


def module_wrappers(tree: ast.Module) -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """The module's top-level pass-through decorators (:func:`passes_through`), in order: ``def
    no_fullgraph(f): return knowngood(f)`` after ``knowngood``; and those of them that call the function with
    grad off (:func:`calls_without_grad`)."""
    wrappers: Set[str] = set()
    grad_off: Set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and passes_through(node, wrappers):
            wrappers.add(node.name)
            if calls_without_grad(node):
                grad_off.add(node.name)
    return frozenset(wrappers), frozenset(grad_off)


def calls_without_grad(node: ast.FunctionDef) -> bool:
    """The decorator's nested function calls the decorated one inside ``with torch.no_grad():`` (or
    ``inference_mode()``), or is itself decorated ``@torch.no_grad()``: a function under it runs with grad
    off, whatever its callers' grad mode."""
    first = _first_param(node)
    if first is None:
        return False
    for inner in node.body:
        if not isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if any(grad_mode_of(d) is False for d in inner.decorator_list):
            return True
        for block in walk_ast(inner):
            if isinstance(block, (ast.With, ast.AsyncWith)) and any(
                    grad_mode_of(item.context_expr) is False for item in block.items) and any(
                    isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == first
                    for n in walk_ast(block)):
                return True
    return False


def passes_through(node: ast.FunctionDef, wrappers: Iterable[str] = ()) -> bool:
    """A decorator whose result calls the function it decorates with the arguments it was given: it returns a
    nested function marked ``@functools.wraps(f)`` (``f`` its first parameter) that passes ``*args, **kwargs``
    on, or it returns another such decorator applied to ``f`` (``return knowngood(f, fullgraph=False)``,
    ``wrappers`` those of the module seen so far). The decorated function's callers still decide what its
    parameters hold."""
    first = _first_param(node)
    if first is None:
        return False
    nested = {}
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(d, ast.Call) and (dotted_name(d.func) or "").rpartition(".")[2] == "wraps"
                and d.args and isinstance(d.args[0], ast.Name) and d.args[0].id == first for d in item.decorator_list) \
                and item.args.vararg is not None and _forwards(item, first):
            nested[item.name] = item
    for item in node.body:
        if isinstance(item, ast.Return) and item.value is not None:
            value = item.value
            if isinstance(value, ast.Name) and value.id in nested:
                return True
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in wrappers \
                    and value.args and isinstance(value.args[0], ast.Name) and value.args[0].id == first:
                return True
    return False


def _forwards(inner: ast.FunctionDef, first: str) -> bool:
    """Every call in ``inner`` that passes its ``*args`` on passes them whole, first (``f(*args, **kwargs)``,
    ``compiled(*args, **kwargs)``), and ``f`` is called so at least once."""
    star = inner.args.vararg.arg
    calls_f = False
    for n in walk_ast(inner):
        if isinstance(n, ast.Call) and any(isinstance(a, ast.Starred) for a in n.args):
            if not (isinstance(n.args[0], ast.Starred) and isinstance(n.args[0].value, ast.Name)
                    and n.args[0].value.id == star and len(n.args) == 1):
                return False
            calls_f = calls_f or (isinstance(n.func, ast.Name) and n.func.id == first)
    return calls_f


def _first_param(node: ast.FunctionDef):
    """The decorator's first parameter: the function it decorates."""
    params = node.args.posonlyargs + node.args.args
    return params[0].arg if params else None
