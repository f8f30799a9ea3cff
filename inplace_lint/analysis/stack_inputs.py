"""What a torch stack a class builds saves of its input: the first layer of an ``nn.Sequential`` and of each
element of an ``nn.ModuleList``.

A layer of :data:`~inplace_lint.torch_facts.ops.LAYERS_SAVING_INPUT` (``nn.Conv1d``, ``nn.Linear``,
``nn.BatchNorm1d``, ...) saves its input for its weights' gradient, so ``self.net(x)`` with ``self.net =
nn.Sequential(nn.Conv1d(...), ...)`` saves ``x``, and so does ``for conv in self.convs: x = conv(x)`` on its
first pass when every element of ``self.convs`` starts with such a layer: a later in-place write to ``x`` makes
the backward raise (docs/pytorch-facts.md#saved-for-other; torchaudio's Tacotron2 ``Postnet``, set BG)."""
from __future__ import annotations

import ast
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Set

from ..torch_facts import ops
from .astutil import dotted_name
from .init_builds import ELEMENTS
from . import layer_lists
from .model_outputs import _builds_unsaved, _frozen_target, _list_root, _module_list_elements, _self_attr, \
    class_members, inplace_module

#: containers whose call runs their layers on the input
_STACKS = ("Sequential", "ModuleList")


def first_input_layers(cls: ast.ClassDef, qualify: Callable[[str], str], counts: Dict[str, int],
                       nodes: Sequence[ast.AST], stacks: Mapping[str, List[List[ast.expr]]] = {}) -> Dict[str, str]:
    """``attr`` -> the layer an ``nn.Sequential`` built once as ``self.<attr>`` starts with, and ``attr[]`` -> the
    layer every element of an ``nn.ModuleList`` ``self.<attr>`` starts with (an element is such a layer or an
    ``nn.Sequential`` written out that starts with one), when that layer saves its input and is built with its
    weights (not ``affine=False``, not padding first). Left out: a stack the class freezes any part of
    (``self.convs[0].requires_grad_(False)``), one built more than once or changed (:func:`_module_list_elements`).
    ``stacks``: the module's functions that return a ``Sequential`` (:func:`~.init_builds.stack_builders`)."""
    return _first_layers(cls, qualify, counts, nodes, _saves_input, elements=True, stacks=stacks)


def first_inplace_layers(cls: ast.ClassDef, qualify: Callable[[str], str], counts: Dict[str, int],
                         nodes: Sequence[ast.AST], stacks: Mapping[str, List[List[ast.expr]]] = {}) -> Dict[str, str]:
    """``attr`` -> the layer an ``nn.Sequential`` built once as ``self.<attr>`` starts with, when that layer is a
    torch activation or dropout built with a literal ``inplace=True`` (``nn.ReLU(inplace=True)``, ``nn.ReLU(True)``):
    ``self.<attr>(x)`` then writes ``x`` in place before any other layer runs (``nn.Sequential.forward`` calls its
    layers in order, each on the last one's output: https://pytorch.org/docs/stable/generated/torch.nn.Sequential.html).
    The same exclusions as :func:`first_input_layers` (a stack changed after it is built, or built twice), but for
    ``add_module`` on a stack built empty: the layers it adds are the stack (:func:`_added_heads`)."""
    out = _first_layers(cls, qualify, counts, nodes, _inplace_layer, elements=False, stacks=stacks, some_path=True)
    out.update((attr, layer) for attr, layer in _added_heads(cls, qualify, counts, nodes).items() if attr not in out)
    members = changed = None
    builds: Dict[str, list] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _self_attr(node.targets[0]):
            builds.setdefault(node.targets[0].attr, []).append(node)
    for attr, assigns in builds.items():
        if attr in out or not all(_starred_sequential(a.value, qualify) for a in assigns) \
                or counts.get(attr, 0) - _bare_annotations(nodes, attr) != len(assigns):
            continue
        changed = _changed(nodes) | _changed_in_place(nodes) if changed is None else changed  # (rarely needed)
        if attr in changed:
            continue
        # `self.rep = nn.Sequential(*rep)` (in one arm or several): the first layer `rep` may start with on some path
        for node in assigns:
            func = _method_of(cls, node)
            for head in (layer_lists.list_heads(func, node.value.args[0].value.id, node) or ()) if func else ():
                if isinstance(head, ast.Name):  # `down_relu = nn.LeakyReLU(0.2, True)`, bound once in `__init__`
                    bound = [a.value for a in ast.walk(func) if isinstance(a, ast.Assign) and len(a.targets) == 1
                             and isinstance(a.targets[0], ast.Name) and a.targets[0].id == head.id]
                    head = bound[0] if len(bound) == 1 else None
                layer = _first_layer(head, qualify, 0, _inplace_layer) if isinstance(head, ast.Call) else None
                if layer is None and _self_attr(head):  # `rep.append(self.relu)`, `self.relu = nn.ReLU(inplace=True)`
                    members = class_members(cls) if members is None else members
                    layer = members.get(f"self.{head.attr}") if isinstance(members.get(f"self.{head.attr}"), str) \
                        else None
                if layer:
                    out[attr] = layer
                    break
            if attr in out:
                break
    return out


def _first_layers(cls: ast.ClassDef, qualify: Callable[[str], str], counts: Dict[str, int],
                  nodes: Sequence[ast.AST], leaf: Callable[[str, ast.Call], Optional[str]], elements: bool,
                  stacks: Mapping[str, List[List[ast.expr]]], some_path: bool = False) -> Dict[str, str]:
    if not any(isinstance(n, ast.Call) and ((dotted_name(n.func) or "").endswith(_STACKS)
                                            or isinstance(n.func, ast.Name) and n.func.id in stacks) for n in nodes):
        return {}  # (most classes build neither)
    frozen = {_list_root(t) or (t.attr if _self_attr(t) else None)
              for n in nodes if (t := _frozen_target(n)) is not None} | _changed(nodes)
    sequential_changed = _changed_in_place(nodes)
    out: Dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and node.targets and _self_attr(node.targets[0]) \
                and node.targets[0].attr in sequential_changed:
            continue
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _self_attr(node.targets[0]) \
                and counts.get(node.targets[0].attr) == 1 and isinstance(node.value, ast.Call):
            if qualify(dotted_name(node.value.func) or "") == "torch.nn.Sequential":
                layer = _first_layer(node.value, qualify, 0, leaf)
            elif isinstance(node.value.func, ast.Name) and node.value.func.id in stacks \
                    and not _shadowed(cls, node, node.value.func.id):
                # `self.body = make_stack(c)`: the stack the module's function returns. Each return must give the
                # same layer (which one runs is the call's arguments' to say); of a stack filled with `add_module`,
                # `some_path` takes a layer that may come first (what the order is, is data: a config string)
                found = set()
                for heads in stacks[node.value.func.id]:
                    layers = [_first_layer(h, qualify, 0, leaf) for h in heads]
                    found.add(next((f for f in layers if f), None) if some_path
                              else layers[0] if len(set(layers)) == 1 else None)
                layer = found.pop() if len(found) == 1 else None
            else:
                layer = None
            if layer:
                out[node.targets[0].attr] = layer
    for attr, items in (_module_list_elements(cls, qualify, counts, nodes).items() if elements else ()):
        found = {_first_layer(e, qualify, 0, leaf) for e in items}
        if len(found) == 1 and (layer := found.pop()):
            out[attr + ELEMENTS] = layer
    return {k: v for k, v in out.items() if k.replace(ELEMENTS, "") not in frozen}


def _shadowed(cls: ast.ClassDef, node: ast.AST, name: str) -> bool:
    """In the method of ``cls`` that holds ``node``, ``name`` is a parameter or a local (``def __init__(self, c,
    block=plain): self.body = block(c)``): not the module's function of that name."""
    func = _method_of(cls, node)
    if func is None:
        return False
    args = func.args
    return name in {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs} | {
        a.arg for a in (args.vararg, args.kwarg) if a} or any(
        isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) for n in ast.walk(func))


def _method_of(cls: ast.ClassDef, node: ast.AST):
    """The method of ``cls`` whose body holds ``node``, or None."""
    return next((f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and any(n is node for n in ast.walk(f))), None)


def _added_heads(cls: ast.ClassDef, qualify: Callable[[str], str], counts: Dict[str, int],
                 nodes: Sequence[ast.AST]) -> Dict[str, str]:
    """``self.<attr> = nn.Sequential()`` (built empty, once, in a method's own body) and then
    ``self.<attr>.add_module(name, layer)``: a layer that may come first (:func:`.layer_lists.added_heads`). Left
    out: a stack changed otherwise (another method called on it), or handed to a call."""
    empty = {n.targets[0].attr: n for n in nodes if isinstance(n, ast.Assign) and len(n.targets) == 1
             and _self_attr(n.targets[0]) and counts.get(n.targets[0].attr) == 1 and isinstance(n.value, ast.Call)
             and not n.value.args and not n.value.keywords
             and qualify(dotted_name(n.value.func) or "") == "torch.nn.Sequential"}
    if not empty:
        return {}
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _self_attr(node.func.value) \
                and node.func.value.attr in empty and not layer_lists.adds_layers(node):
            empty.pop(node.func.value.attr)  # changed otherwise: `insert`, `apply`, `add_module(**kw)`
        elif isinstance(node, (ast.Assign, ast.Delete)):
            for t in node.targets:  # `self.body[0] = nn.Identity()`, `self.body.act = nn.ReLU()`, `del self.body[0]`
                if isinstance(t, (ast.Subscript, ast.Attribute)) and _self_attr(t.value):
                    empty.pop(t.value.attr, None)
    changed = _changed(nodes)
    out: Dict[str, str] = {}
    for attr, built in empty.items():
        func = _method_of(cls, built)
        if func is None or attr in changed:
            continue  # (`added_heads` reads the calls after `built` in the method's own body)
        heads = layer_lists.added_heads(func, lambda r, a=attr: _self_attr(r) and r.attr == a, built)
        layer = next((found for h in heads if (found := _first_layer(h, qualify, 0, _inplace_layer))), None)
        if layer:
            out[attr] = layer
    return out


def _starred_sequential(value: ast.expr, qualify: Callable[[str], str]) -> bool:
    """``nn.Sequential(*rep, ...)``: a stack whose first layers come from the local list ``rep``."""
    return isinstance(value, ast.Call) and bool(value.args) and isinstance(value.args[0], ast.Starred) \
        and isinstance(value.args[0].value, ast.Name) and not value.keywords \
        and qualify(dotted_name(value.func) or "") == "torch.nn.Sequential"


def _bare_annotations(nodes: Sequence[ast.AST], attr: str) -> int:
    """``self.model: nn.Module`` without a value: counted as an assignment, binds nothing."""
    return sum(1 for n in nodes if isinstance(n, ast.AnnAssign) and n.value is None and _self_attr(n.target)
               and n.target.attr == attr)


def _saves_input(layer: str, node: ast.Call) -> Optional[str]:
    return layer if layer in ops.LAYERS_SAVING_INPUT and not _builds_unsaved(node) else None


def _inplace_layer(layer: str, node: ast.Call) -> Optional[str]:
    """The layer as the source spells it (``nn.ReLU``), when it is built with a literal ``inplace=True``."""
    return dotted_name(node.func) if inplace_module(node) is not None else None


def _first_layer(node: ast.expr, qualify: Callable[[str], str], depth: int,
                 leaf: Callable[[str, ast.Call], Optional[str]]) -> Optional[str]:
    if depth > 4 or not isinstance(node, ast.Call):
        return None
    name = qualify(dotted_name(node.func) or "")
    if not name.startswith("torch.nn.") or name.count(".") != 2:
        return None
    layer = name.rsplit(".", 1)[-1]
    if layer == "Sequential":
        args = node.args
        if len(args) == 1 and isinstance(args[0], ast.Call) and (dotted_name(args[0].func) or "").endswith(
                "OrderedDict") and len(args[0].args) == 1 and isinstance(args[0].args[0], (ast.List, ast.Tuple)):
            # `nn.Sequential(OrderedDict([("relu", nn.ReLU(inplace=True)), ("conv", ...)]))`: the pairs' layers, in order
            pairs = args[0].args[0].elts
            if not all(isinstance(p, ast.Tuple) and len(p.elts) == 2 for p in pairs):
                return None
            args = [p.elts[1] for p in pairs]
        layers = [a for a in args if not (isinstance(a, ast.Call) and qualify(dotted_name(a.func) or "")
                                          == "torch.nn.Identity")]  # (it hands its input on)
        if not layers or node.keywords or isinstance(layers[0], ast.Starred):
            return None
        return _first_layer(layers[0], qualify, depth + 1, leaf)
    return leaf(layer, node)


#: methods of a stack (or of an element) that leave its layers and their order as they are
_KEEPS = frozenset({"parameters", "named_parameters", "children", "modules", "named_children", "named_modules", "to",
                    "train", "eval", "state_dict", "buffers", "named_buffers", "cuda", "cpu", "float", "double",
                    "half", "bfloat16", "forward", "requires_grad_", "register_forward_hook",
                    "register_forward_pre_hook", "register_full_backward_hook", "zero_grad", "extra_repr"})


def _changed_in_place(nodes: Sequence[ast.AST]) -> Set[str]:
    """Attributes whose ``nn.Sequential`` the class changes after building it: an item stored or deleted
    (``self.net[0] = nn.Identity()``, ``del self.net[0]``) or a method that may change its layers
    (``insert``, ``append``, ``apply``)."""
    out: Set[str] = set()
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            for t in node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]:
                if not _self_attr(t) and (root := _list_root(t)):
                    out.add(root)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr not in _KEEPS \
                and (_self_attr(node.func.value) or _list_root(node.func.value)):
            out.add(node.func.value.attr if _self_attr(node.func.value) else _list_root(node.func.value))
    return out


#: builtins that only read the container they are given (``len(self.convs)``, ``enumerate(self.convs)``)
_READERS = frozenset({"len", "enumerate", "zip", "reversed", "list", "tuple", "iter", "isinstance", "hasattr",
                      "getattr", "print", "repr", "str", "id", "type", "range", "sorted", "any", "all"})


#: functions that run the module they are given on its inputs and change nothing of it (activation checkpointing)
_RUNNERS = frozenset({"checkpoint", "checkpoint_sequential"})


def _changed(nodes: Sequence[ast.AST]) -> Set[str]:
    """Attributes whose stack (a ``Sequential``, a ``ModuleList``'s elements) may be changed where this class
    does not show it: handed to a call (``set_requires_grad(self.net, False)``, ``freeze(self.convs[0])``; not
    a weight, ``init.xavier_uniform_(self.net[0].weight)``), or changed through a loop's name (``for block in
    self.convs: block[0] = nn.Identity()``)."""
    out: Set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _READERS) \
                and (dotted_name(node.func) or "").rpartition(".")[2] not in _RUNNERS:
            for arg in list(node.args) + [k.value for k in node.keywords]:
                if _self_attr(arg):
                    out.add(arg.attr)
                elif isinstance(arg, ast.Subscript) and (root := _list_root(arg)):
                    out.add(root)
        elif isinstance(node, ast.For):
            attrs = {n.attr for n in ast.walk(node.iter) if _self_attr(n)}
            names = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
            if attrs and names and any(_changes_name(n, names) for stmt in node.body for n in ast.walk(stmt)):
                out |= attrs
    return out


def _changes_name(node: ast.AST, names: Set[str]) -> bool:
    """``node`` stores, deletes or calls a method that may change what one of ``names`` holds (``block[0] = ...``,
    ``del block[-1]``, ``block.append(...)``, ``block.apply(freeze)``)."""
    def rooted(t: ast.AST) -> bool:
        while isinstance(t, (ast.Subscript, ast.Attribute)):
            t = t.value
        return isinstance(t, ast.Name) and t.id in names
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        return any(not isinstance(t, ast.Name) and rooted(t) for t in targets)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr not in _KEEPS \
        and rooted(node.func.value)
