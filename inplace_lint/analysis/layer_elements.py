"""Layer lists some element of which, after the first, is an in-place layer (:func:`inplace_elements`).

A discriminator or a perceptual loss runs its layers one by one and keeps what they return::

    self.layers = nn.ModuleList()
    for i in range(n):
        self.layers += [nn.Conv1d(c, c, 3), nn.LeakyReLU(0.2, inplace=True)]
    ...
    for f in self.layers:
        x = f(x)
        fmaps.append(x)

On the pass where ``f`` is the in-place activation, it rectifies the tensor the previous pass stored: the stored
convolution output becomes the activation's output (``fmaps[0] is fmaps[1]``). The loop's walk takes ``f`` for that
layer on some passes (:meth:`.binding.BindingMixin.bind_iter`), and IPV007 reads only what the loop itself stored
(:func:`.holders.containers_holding` with ``within``): the layer never writes what the loop was given unless it
comes first, which this fact leaves out.
"""
from __future__ import annotations

import ast
from typing import Dict, List, Optional

from ..findings import WriteKind
from ..torch_facts import ops
from ..torch_facts.ops import NON_NEGATIVE_OPS, POSITIVE_IDENTITY
from .astutil import dotted_name, short, walk_ast
from .call_args import module_condition
from .env import EMPTY
from .init_builds import layer_parameters, self_attr
from .model_outputs import inplace_module

#: torch's containers of layers: built from elements written out, or filled afterwards
_CONTAINERS = frozenset({"Sequential", "ModuleList"})
#: list and container methods that add elements at the end, by the position of their argument
_ADDING = {"append": "one", "extend": "all", "add_module": "second"}


def inplace_elements(cls: ast.ClassDef) -> Dict[str, str]:
    """``{attr: layer}`` for each ``self.<attr>`` that ``__init__`` builds as an ``nn.Sequential`` or
    ``nn.ModuleList`` (written out, filled with ``+=``/``append``/``extend``/``add_module``, or from a local list
    filled so) where an in-place layer (:func:`~.model_outputs.inplace_module`) is added after another element."""
    init = next((m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "__init__" and m.args.args), None)
    if init is None:
        return {}
    me, params = init.args.args[0].arg, layer_parameters(init)
    added: Dict[str, List[ast.expr]] = {}  # container key (`self.layers`, or a local name) -> elements, in order
    sources: Dict[str, str] = {}  # `self.layers` -> the local list it was built from
    for node in walk_ast(init):
        for key, elements in _additions(node, me):
            added.setdefault(key, []).extend(elements)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and self_attr(node.targets[0], me) \
                and isinstance(node.value, ast.Call) and _container(node.value):
            arg = node.value.args[0] if len(node.value.args) == 1 else None
            if isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name):
                sources[dotted_name(node.targets[0])] = arg.value.id  # `nn.Sequential(*layers)`
            elif isinstance(arg, ast.Name) and _module_list(node.value):
                sources[dotted_name(node.targets[0])] = arg.id  # `nn.ModuleList(layers)`
    def expand(elements: List[ast.expr]) -> List[ast.expr]:  # (`self.layers += block`: the local list's elements)
        return [e for x in elements for e in (added.get(x.id, [x]) if isinstance(x, _LocalList) else [x])]
    out: Dict[str, str] = {}
    for key, elements in [(k, expand(v)) for k, v in added.items()] + [(k, expand(added.get(v, [])))
                                                                       for k, v in sources.items()]:
        if not key.startswith(f"{me}."):
            continue
        layer = next((found for i, e in enumerate(elements) if i
                      and (found := inplace_module(e, params) or _named_torch_layer(e))
                      and not _after_non_negative(found, elements[:i])), None)
        if layer:
            out[key[len(me) + 1:]] = layer
    return out


def _additions(node: ast.AST, me: str):
    """``(key, elements)`` for what ``node`` adds to a container or list, in order."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        key = dotted_name(node.targets[0])
        value = node.value
        if key and isinstance(value, (ast.List, ast.Tuple)):
            yield key, list(value.elts)  # `layers = [conv, act]`
        elif key and isinstance(value, ast.Call) and _container(value):
            items = value.args[0] if _module_list(value) and value.args else None
            elements = list(items.elts) if isinstance(items, (ast.List, ast.Tuple)) else \
                [a for a in value.args if not isinstance(a, ast.Starred)] if not _module_list(value) else []
            yield key, elements  # `nn.Sequential(conv, act)`, `nn.ModuleList([conv, act])`
    elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
        key = dotted_name(node.target)
        if key and isinstance(node.value, (ast.List, ast.Tuple)):
            yield key, list(node.value.elts)  # `self.layers += [conv, act]`
        elif key and isinstance(node.value, ast.Name):
            yield key, [_LocalList(node.value.id)]  # `self.layers += block`, `block = [conv, act]`
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _ADDING:
        key = dotted_name(node.func.value)
        how = _ADDING[node.func.attr]
        if key and how == "one" and len(node.args) == 1:
            yield key, [node.args[0]]
        elif key and how == "all" and len(node.args) == 1 and isinstance(node.args[0], (ast.List, ast.Tuple)):
            yield key, list(node.args[0].elts)
        elif key and how == "second" and len(node.args) == 2:
            yield key, [node.args[1]]


class _LocalList(ast.expr):
    """A local list whose elements were added at once (``self.layers += block``); ``id``: its name."""
    _fields = ("id",)


def _after_non_negative(layer: str, before: List[ast.expr]) -> bool:
    """A ReLU-like ``layer`` right after a layer whose output is never negative (``nn.ReLU()``, ``nn.Sigmoid()``), with
    only sign-keeping layers between (``nn.MaxPool2d``, ``nn.Dropout``): it leaves what it is given as it is."""
    if layer.rpartition(".")[2] not in POSITIVE_IDENTITY:
        return False
    for element in reversed(before):
        name = (dotted_name(element.func) or "").rpartition(".")[2] if isinstance(element, ast.Call) else ""
        if name in ops.SIGN_KEEPING_LAYERS:
            continue
        return ops.MODULE_FUNCTIONALS.get(name) in NON_NEGATIVE_OPS
    return False


def _named_torch_layer(node: ast.expr) -> Optional[str]:
    """``getattr(nn, name)(inplace=True)``: a layer of ``torch.nn`` chosen by name, built to write its input in place
    (each torch layer that takes the flag does)."""
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "getattr" \
            and len(func.args) == 2 and dotted_name(func.args[0]) in ("nn", "torch.nn") and any(
                k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in node.keywords):
        return ast.unparse(func)
    return None


def _container(call: ast.Call) -> bool:
    return (dotted_name(call.func) or "").rpartition(".")[2] in _CONTAINERS


def _module_list(call: ast.Call) -> bool:
    return (dotted_name(call.func) or "").rpartition(".")[2] == "ModuleList"


def loop_targets(loop: Optional[ast.AST]) -> frozenset:
    """The names a ``for`` statement binds on each pass."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return frozenset()
    return frozenset(n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name))


class LayerElementsMixin:
    """The call of a loop variable over such a list (a part of :class:`~.dataflow.Scope`)."""

    def some_pass_write(self, node: ast.Call, name: str) -> None:
        """``x = f(x)`` in ``for f in self.layers:`` over a layer list with an in-place layer after its first element:
        on that layer's pass it writes what an earlier pass made, which only what the loop itself stored can read
        again (IPV007 alone, through :meth:`~.rereads.RereadsMixin.hidden_write_reread`: the call's input is not
        written, so no origin of it is reported)."""
        loop, layer = self.some_pass_layers[name]
        where = short(loop.iter.args[0] if isinstance(loop.iter, ast.Call) and loop.iter.args else loop.iter)
        self.report(node, WriteKind.INPLACE_KWARG, f"`{layer}(inplace=True)` in `{where}`", node.args[0], EMPTY,
                    condition=module_condition(layer, where), layer=layer)
