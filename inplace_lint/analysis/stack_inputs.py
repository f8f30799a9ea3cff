"""What a torch stack a class builds saves of its input: the first layer of an ``nn.Sequential`` and of each
element of an ``nn.ModuleList``.

A layer of :data:`~inplace_lint.torch_facts.ops.LAYERS_SAVING_INPUT` (``nn.Conv1d``, ``nn.Linear``,
``nn.BatchNorm1d``, ...) saves its input for its weights' gradient, so ``self.net(x)`` with ``self.net =
nn.Sequential(nn.Conv1d(...), ...)`` saves ``x``, and so does ``for conv in self.convs: x = conv(x)`` on its
first pass when every element of ``self.convs`` starts with such a layer: a later in-place write to ``x`` makes
the backward raise (docs/pytorch-facts.md#saved-for-other; torchaudio's Tacotron2 ``Postnet``, set BG)."""
from __future__ import annotations

import ast
from typing import Callable, Dict, Optional, Sequence

from ..torch_facts import ops
from .astutil import dotted_name
from .init_builds import ELEMENTS
from .model_outputs import _builds_unsaved, _frozen_target, _list_root, _module_list_elements, _self_attr

#: containers whose call runs their layers on the input
_STACKS = ("Sequential", "ModuleList")


def first_input_layers(cls: ast.ClassDef, qualify: Callable[[str], str], counts: Dict[str, int],
                       nodes: Sequence[ast.AST]) -> Dict[str, str]:
    """``attr`` -> the layer an ``nn.Sequential`` built once as ``self.<attr>`` starts with, and ``attr[]`` -> the
    layer every element of an ``nn.ModuleList`` ``self.<attr>`` starts with (an element is such a layer or an
    ``nn.Sequential`` written out that starts with one), when that layer saves its input and is built with its
    weights (not ``affine=False``, not padding first). Left out: a stack the class freezes any part of
    (``self.convs[0].requires_grad_(False)``), one built more than once or changed (:func:`_module_list_elements`)."""
    if not any(isinstance(n, ast.Call) and (dotted_name(n.func) or "").endswith(_STACKS) for n in nodes):
        return {}  # (most classes build neither)
    frozen = {_list_root(t) or (t.attr if _self_attr(t) else None)
              for n in nodes if (t := _frozen_target(n)) is not None}
    out: Dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _self_attr(node.targets[0]) \
                and counts.get(node.targets[0].attr) == 1 and isinstance(node.value, ast.Call) \
                and qualify(dotted_name(node.value.func) or "") == "torch.nn.Sequential":
            layer = _first_layer(node.value, qualify, 0)
            if layer:
                out[node.targets[0].attr] = layer
    for attr, elements in _module_list_elements(cls, qualify, counts, nodes).items():
        found = {_first_layer(e, qualify, 0) for e in elements}
        if len(found) == 1 and (layer := found.pop()):
            out[attr + ELEMENTS] = layer
    return {k: v for k, v in out.items() if k.replace(ELEMENTS, "") not in frozen}


def _first_layer(node: ast.expr, qualify: Callable[[str], str], depth: int) -> Optional[str]:
    if depth > 4 or not isinstance(node, ast.Call):
        return None
    name = qualify(dotted_name(node.func) or "")
    if not name.startswith("torch.nn.") or name.count(".") != 2:
        return None
    layer = name.rsplit(".", 1)[-1]
    if layer == "Sequential":
        if not node.args or node.keywords or isinstance(node.args[0], ast.Starred):
            return None
        return _first_layer(node.args[0], qualify, depth + 1)
    return layer if layer in ops.LAYERS_SAVING_INPUT and not _builds_unsaved(node) else None
