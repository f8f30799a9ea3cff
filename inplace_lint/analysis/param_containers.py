"""Containers of tensors that require grad, held as an attribute built in ``__init__`` (:func:`init_param_containers`).

``self.params = {"kappa": torch.tensor(1.0, requires_grad=True), ...}`` (or ``nn.ParameterDict(...)``,
``nn.ParameterList(...)``, a list or tuple of ``nn.Parameter(...)``) makes each item ``self.params["kappa"]`` a
leaf that requires grad, as ``self.w = nn.Parameter(...)`` makes ``self.w`` one (PyTorch docs:
``torch.nn.ParameterDict``; ``requires_grad`` of factory functions). A base class's ``__init__`` that stores its
parameter (``self.params = params``) holds what the subclass's ``super().__init__(params)`` passes: that link is
kept as two marks, resolved by :func:`through_super` (torchquantlib's stochastic models: a calibration's
backward runs through every simulated path).

The facts go into the class's ``__init__`` attributes (:func:`.init_builds.init_attributes`) under
``"<attr>[]"`` (what an item of the container is), with the builder ``torch.nn.Parameter``.
"""
from __future__ import annotations

import ast
from typing import Dict, Optional, Set

from .astutil import dotted_name, walk_ast

#: what an item of a container of leaves that require grad is built from
PARAMETER = "torch.nn.Parameter"
_CONTAINERS = frozenset({"ParameterDict", "ParameterList"})


def _true(node: Optional[ast.expr]) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def grad_leaf(node: ast.expr) -> bool:
    """``nn.Parameter(x)`` (not frozen), ``torch.<op>(..., requires_grad=True)``, ``x.requires_grad_()``."""
    if not isinstance(node, ast.Call):
        return False
    name = (dotted_name(node.func) or "").rpartition(".")[2]
    flag = next((k.value for k in node.keywords if k.arg == "requires_grad"), None)
    if name == "Parameter":
        return (flag is None or _true(flag)) and (len(node.args) < 2 or _true(node.args[1]))
    if isinstance(node.func, ast.Attribute) and node.func.attr == "requires_grad_":
        return not node.args or _true(node.args[0])
    return _true(flag)


def grad_leaf_container(node: Optional[ast.expr]) -> bool:
    """A dict, list or tuple literal (or a list comprehension) whose every item is a :func:`grad_leaf` (one at
    least), or ``nn.ParameterDict``/``nn.ParameterList`` of one (not an empty one filled later: what is added may
    be frozen)."""
    if isinstance(node, ast.Dict):
        return bool(node.values) and all(k is not None and grad_leaf(v) for k, v in zip(node.keys, node.values))
    if isinstance(node, (ast.List, ast.Tuple)):
        return bool(node.elts) and all(grad_leaf(e) for e in node.elts)
    if isinstance(node, ast.ListComp):
        return grad_leaf(node.elt)
    return isinstance(node, ast.Call) and (dotted_name(node.func) or "").rpartition(".")[2] in _CONTAINERS \
        and len(node.args) == 1 and not node.keywords and grad_leaf_container(node.args[0])


def _freezes(nodes) -> bool:
    """``__init__`` (its ``nodes``) turns grad off for something (``p.requires_grad_(False)``, ``p.requires_grad =
    False``, in a loop over the container or not) or detaches: what it holds may not require grad."""
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr == "requires_grad_" and node.args and not _true(node.args[0])
                or node.func.attr in ("detach", "detach_")):
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "requires_grad"
                                                for t in node.targets) and not _true(node.value):
            return True
    return False


def init_param_containers(init: ast.FunctionDef, me: str) -> Dict[str, str]:
    """Of ``__init__`` (``me`` its ``self``): ``"<attr>[]"`` -> :data:`PARAMETER` for ``self.<attr> =`` a
    :func:`grad_leaf_container` (or a local bound once to one); ``"<attr>[]"`` -> ``"@param:<i>:<name>"`` for
    ``self.<attr> = <name>``, the ``__init__``'s parameter ``i`` (counting after ``self``); ``"@super:<i>"``
    / ``"@super:<keyword>"`` -> :data:`PARAMETER` for such a container passed to ``super().__init__(...)`` (or
    ``Base.__init__(self, ...)``), and then ``"<attr>[]"`` -> ``"@other"`` for an attribute bound to anything else
    (the base's link is replaced). Nothing when ``__init__`` freezes or detaches anything (:func:`_freezes`)."""
    nodes = list(walk_ast(init))  # (one walk for the three questions)
    if _freezes(nodes):
        return {}
    params = [a.arg for a in init.args.posonlyargs + init.args.args][1:]
    bound: Dict[str, list] = {}
    for node in nodes:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    bound.setdefault(t.id, []).append(node.value)
    containers: Set[str] = {n for n, values in bound.items() if len(values) == 1 and grad_leaf_container(values[0])}

    def holds(value: ast.expr) -> bool:
        return grad_leaf_container(value) or isinstance(value, ast.Name) and value.id in containers

    out: Dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == me:
                if holds(value):
                    out.setdefault(f"{target.attr}[]", PARAMETER)
                elif isinstance(value, ast.Name) and value.id in params and value.id not in bound:
                    out.setdefault(f"{target.attr}[]", f"@param:{params.index(value.id)}:{value.id}")
                else:  # (bound to anything else here: what a base's `__init__` stored there is replaced)
                    out[f"{target.attr}[]"] = "@other"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__":
            # `super().__init__(params)`, or `Base.__init__(self, params)`
            args = node.args if isinstance(node.func.value, ast.Call) and dotted_name(node.func.value.func) \
                == "super" else node.args[1:] if node.args and isinstance(node.args[0], ast.Name) \
                and node.args[0].id == me else None
            for i, arg in enumerate(args or ()):
                if holds(arg):
                    out[f"@super:{i}"] = PARAMETER
            for k in node.keywords:
                if k.arg is not None and holds(k.value):
                    out[f"@super:{k.arg}"] = PARAMETER
    if not any(k.startswith("@super:") for k in out):  # ("@other" only blocks what a base stores of a container)
        out = {k: v for k, v in out.items() if v != "@other"}
    return out


def through_super(found: Optional[str], own: Dict[str, str]) -> Optional[str]:
    """What a base class's attribute holds (``found``) as seen from a subclass whose own ``__init__`` attributes are
    ``own``: a base's ``"@param:<i>:<name>"`` mark is what the subclass's ``super().__init__`` passed there (None
    when it passed nothing known); anything else is ``found`` itself."""
    if found is None or "@param:" not in found:
        return found
    _, position, name = found[found.index("@param:"):].split(":", 2)
    return own.get(f"@super:{position}") or own.get(f"@super:{name}")


def builder(found: Optional[str]) -> Optional[str]:
    """``found`` less a mark no ``super().__init__`` resolved, or a binding to something else (unknown)."""
    return None if found is None or "@" in found else found
