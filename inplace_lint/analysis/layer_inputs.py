"""What a call of a ``torch.nn`` layer a class built saves of its input (a part of :class:`~.dataflow.Scope`,
through :class:`~.call_grad.CallGradMixin`): a layer that saves its input for its weights' gradient
(:data:`~inplace_lint.torch_facts.ops.LAYERS_SAVING_INPUT`), the first layer of a stack
(:mod:`.stack_inputs`), and a layer that reads its input for the input's own gradient even without weights
that require grad (:data:`~inplace_lint.torch_facts.ops.LAYERS_READING_OWN_INPUT`)."""
from __future__ import annotations

import ast
from typing import Optional

from ..findings import saver_text
from ..torch_facts import ops
from .astutil import short
from .expressions import holder_of
from .init_builds import ELEMENTS
from .model_outputs import ALL_LAYERS


class LayerInputsMixin:
    """The inputs a layer call saves for backward (a part of :class:`~.dataflow.Scope`)."""

    def note_layer_input(self, node: ast.Call) -> None:
        """``self.<attr>(x, ...)`` with ``self.<attr>`` a ``torch.nn`` layer that saves its input for its
        weights' gradient (:meth:`input_saving_layer`; its parameters require grad, as a layer's do unless frozen):
        ``x`` is marked saved for another input's gradient."""
        layer = self.input_saving_layer(node.func) if node.args and not self.no_grad else None
        if not layer:
            own = self.layer_reading_own_input(node.func) if node.args and not self.no_grad else None
            if own and not self.read_without_grad(node):
                for arg in node.args[:ops.LAYER_INPUTS.get(own, 1)]:  # (read for its own gradient: needs evidence)
                    self.mark_saved_input(arg, saver_text(f"{short(node.func)}(...)", f"nn.{own}"), node.lineno, node)
            return
        given = [a for a in node.args[:ops.LAYER_INPUTS.get(layer, 1)] if holder_of(a) is not None]
        if given and not self.read_without_grad(node):
            for arg in given:  # (`nn.Bilinear(x1, x2)`, `nn.MultiheadAttention(q, k, v)` save each input)
                self.mark_saved_for_other(arg, saver_text(f"{short(node.func)}(...)", f"nn.{layer}"), node.lineno, node,
                                          surely_tensor=True)

    def input_saving_layer(self, func: ast.expr) -> Optional[str]:
        """``self.<attr>`` in ``self.<attr>(x)``, built in ``__init__`` from a ``torch.nn`` layer whose forward
        saves its input for its weights' gradient (:data:`ops.LAYERS_SAVING_INPUT`): the layer's class name. Also
        ``super().forward(x)`` in a subclass of such a layer (``class MyLinear(nn.Linear)``) whose weights are
        torch's (not frozen or replaced: :attr:`weights_unknown`)."""
        if isinstance(func, ast.Attribute) and func.attr == "forward" and isinstance(func.value, ast.Call) \
                and isinstance(func.value.func, ast.Name) and func.value.func.id == "super" \
                and self.cls_qual and self.ctx is not None:
            layer = None if self.weights_unknown else self.ctx.torch_layer_base(self.cls_qual)
            return layer if layer in ops.LAYERS_SAVING_INPUT else None
        if isinstance(func, ast.Name):  # `for conv in self.convs: x = conv(x)`: each element's first layer
            return self.local_input_layers.get(func.id)
        if isinstance(func, ast.Subscript) and not isinstance(func.slice, ast.Slice):  # `self.convs[i](x)`
            attr = self._own_container(func.value)
            return None if attr is None or {attr, ALL_LAYERS} & self.unsaved_layers else \
                self.input_layers.get(f"{attr}{ELEMENTS}")
        if not self._self_layer(func) or func.attr in self.unsaved_layers:
            return None
        if func.attr in self.input_layers:  # `self.net = nn.Sequential(nn.Conv1d(...), ...)`
            return None if ALL_LAYERS in self.unsaved_layers else self.input_layers[func.attr]
        builder = self._builder_of(func.attr)
        if builder is None:
            return None
        if builder.startswith("torch.nn."):
            layer = builder.rsplit(".", 1)[-1]
        else:  # `class MyLinear(nn.Linear)` with no `forward` of its own: torch's layer runs
            found = self.ctx.resolve(builder)
            if not found or found[0] != "class" or self.ctx.method(found[1], "forward"):
                return None
            layer = self.ctx.torch_layer_base(found[1])
        return layer if layer in ops.LAYERS_SAVING_INPUT else None

    def _self_layer(self, func: ast.expr) -> bool:
        """``self.<attr>`` in a class's method, where the project can say what built it."""
        return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
            and func.value.id == self.self_name and bool(self.cls_qual) and self.ctx is not None

    def _builder_of(self, attr: str) -> Optional[str]:
        """What ``self.<attr>`` was built from in ``__init__``, qualified (the class's own table when it has one)."""
        return self.class_builders.get(attr) if self.class_builders is not None else \
            self.ctx.attribute_builder(self.cls_qual, attr)

    def layer_reading_own_input(self, func: ast.expr) -> Optional[str]:
        """``self.<attr>`` in ``self.<attr>(x)``, built once in ``__init__`` as a ``torch.nn`` layer whose backward
        reads its input for the input's own gradient (:data:`ops.LAYERS_READING_OWN_INPUT`: a convolution or a
        norm, not ``nn.Linear``), whether or not its weights require grad: frozen, ``affine=False``, or padding
        first (``padding_mode="reflect"``: the pad reads the input), but not ``"circular"`` (a copy). Asked when
        :meth:`input_saving_layer` is not: the input is saved only when it requires grad itself."""
        if not self._self_layer(func) or func.attr not in self.builder_args:
            return None
        builder = self._builder_of(func.attr)
        padding = self.builder_args[func.attr].get("=padding_mode", ("zeros",))
        if not builder or not builder.startswith("torch.nn.") or padding not in (("zeros",), ("reflect",), ("replicate",)):
            return None  # (`padding_mode="circular"` copies; a mode that is not a literal may be that)
        layer = builder.rsplit(".", 1)[-1]
        return layer if layer in ops.LAYERS_READING_OWN_INPUT else None
