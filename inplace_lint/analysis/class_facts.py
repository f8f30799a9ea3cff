"""Facts a module's classes state about every tensor or model output in the project, read when it is indexed.

A fix rebinds the written name to an out-of-place result (``x = x.clone().div_(t)``). Two things a class
elsewhere in the project can do make that rewrite change what the program computes, although nothing in the
function with the write shows it:

- :func:`torch_function_classes`: a tensor subclass with its own ``__torch_function__`` decides what type an
  op on one of its instances returns. With ``__torch_function__ = torch._C._disabled_torch_function_impl``
  ``clone()`` returns a plain ``Tensor``, while an in-place op keeps the object and so its class; a method of
  the subclass called on the rewritten name then raises ``AttributeError`` (docs/fixes.md, "Tensor subclasses";
  https://pytorch.org/docs/stable/notes/extending.html#extending-torch-with-a-tensor-wrapper-type).
- :func:`shared_output_fields`: a model's ``forward`` that returns one tensor under two names
  (``Out(logits=h, scores=h)``) makes those fields one storage: writing ``out.logits`` in place changes
  ``out.scores`` too, and a rewrite of the write would not (a model output is a record of distinct fields
  only where its ``forward`` says so; issue 20, "a model output is an object with fields").
"""
from __future__ import annotations

import ast
from typing import Dict, FrozenSet, List, Optional, Tuple

from ..torch_facts import ops
from .astutil import dotted_name, walk_ast

#: the methods whose return value is what calling a module gives
_CALL_METHODS = frozenset({"forward", "__call__"})


def torch_function_classes(tree: ast.Module) -> FrozenSet[str]:
    """The top-level classes whose body defines or assigns ``__torch_function__`` (a tensor subclass that
    disables it, or decides itself what an op on its instances returns). Whether a class is a tensor subclass
    at all is for the project to say (:meth:`.resolve.Resolver.tensor_class`): a ``TorchFunctionMode`` is not."""
    out = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(_defines_torch_function(item) for item in node.body):
            out.add(node.name)
    return frozenset(out)


def _defines_torch_function(item: ast.stmt) -> bool:
    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return item.name == "__torch_function__"
    targets = item.targets if isinstance(item, ast.Assign) else [item.target] if isinstance(
        item, ast.AnnAssign) else []
    return any(isinstance(t, ast.Name) and t.id == "__torch_function__" for t in targets)


def shared_output_fields(tree: ast.Module) -> Tuple[Tuple[str, ...], ...]:
    """Groups of field names (sorted) that a ``forward`` or ``__call__`` of a top-level class returns one
    tensor under: ``return Out(logits=h, scores=h)``, ``return {"logits": h, "probs": h.squeeze(0)}``,
    ``scores = logits; return Out(logits=logits, scores=scores)``. A field's value is followed through
    subscripts, view methods and plain renames to the name it comes from; two fields from one name are one
    group. What cannot be followed (a call's result) shares with nothing."""
    groups = set()
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in _CALL_METHODS:
                groups.update(_method_groups(item))
    return tuple(sorted(groups))


def _method_groups(func: ast.AST) -> List[Tuple[str, ...]]:
    renames: Dict[str, str] = {}
    returns = []
    for node in walk_ast(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            source = _source_name(node.value, {})
            if source is not None and source != node.targets[0].id:
                renames[node.targets[0].id] = source
        elif isinstance(node, ast.Return) and node.value is not None:
            returns.append(node.value)
    out = []
    for value in returns:
        fields: Dict[str, List[str]] = {}
        for field, item in _fields(value):
            source = _source_name(item, renames)
            if source is not None:
                fields.setdefault(source, []).append(field)
        out.extend(tuple(sorted(set(names))) for names in fields.values() if len(set(names)) > 1)
    return out


def _fields(value: ast.expr) -> List[Tuple[str, ast.expr]]:
    """(field name, value) of a returned ``Out(a=..., b=...)``, ``dict(a=...)`` or ``{"a": ...}``."""
    if isinstance(value, ast.Call):
        return [(k.arg, k.value) for k in value.keywords if k.arg is not None]
    if isinstance(value, ast.Dict):
        return [(k.value, v) for k, v in zip(value.keys, value.values)
                if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return []


def _source_name(node: ast.expr, renames: Dict[str, str], depth: int = 0) -> Optional[str]:
    """The local name (or ``self.attr``) a value is that name, a subscript of it or a view of it."""
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Attribute) and node.attr in ops.VIEW_ATTRIBUTES:
            node = node.value  # `h.T`, `h.data`
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr in ops.VIEW_METHODS or node.func.attr in ops.MAY_ALIAS_METHODS):
            # `h.squeeze(0)`, `h.detach()`, or the function form `torch.squeeze(h, 0)`
            function_form = (dotted_name(node.func.value) or "") in ("torch", "th") and node.args
            node = node.args[0] if function_form else node.func.value
        else:
            break
    name = dotted_name(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
    while name in renames and depth < 20:
        name, depth = renames[name], depth + 1
    return name
