"""Binding: what assignments, ``del`` and loop targets bind (one job of the interpreter).

``x = ...``, ``x: T = ...``, ``x op= ...`` (an in-place write when ``x`` holds a tensor), tuple unpacking
and ``for`` targets update the environment; a bound instance of an in-project class or a submodule's
result is remembered for dispatch and for the model-output heuristics (:mod:`.model_outputs`).
"""
from __future__ import annotations

import ast
from typing import Optional, Set

from ..findings import Origin, RootKind, Step, StepKind, WriteKind
from . import grad, model_outputs
from ..torch_facts import ops
from .astutil import dotted_name, is_str_constant, short
from .local_conds import conflict
from .env import _MAX_ORIGINS, EMPTY, cap
from .names import qualify
from .init_builds import ELEMENTS
from .lambdas import mapped_items
from .model_outputs import ALL_LAYERS
from .summaries import element_kind, function_ref, is_tuple_item, no_grad_value, param_index, tuple_item_at

#: libraries whose factories build ``nn.Module``\ s (a plain class's ``self.net = timm.create_model(...)``)
_MODEL_LIBRARIES = frozenset({"torch", "torchvision", "torchaudio", "timm", "transformers"})

#: ``ast`` operator -> its augmented assignment (one operator table: ``ops.OPERATORS``)
AUG_OPS = {getattr(ast, name): symbol for name, symbol in ops.AST_AUGMENTED.items()}


class BindingMixin:
    """Assignments and targets (a part of :class:`~.dataflow.Scope`)."""

    def stmt_Assign(self, node: ast.Assign) -> None:
        items = None if self.is_local_name("map") or "map" in self.names else mapped_items(node.value, node.targets)
        if items is not None:  # `q, k, v = map(lambda t: rearrange(t, ...), (q, k, v))` (:mod:`.lambdas`)
            values = [self.eval(item) for item in items]  # (all evaluated before any name is bound)
            for target, item, value in zip(node.targets[0].elts, items, values):
                self._bind_value([target], item, value)
            return
        self._bind_value(node.targets, node.value, self.eval(node.value))

    def _bind_value(self, targets, value_node: ast.expr, value: frozenset) -> None:
        value = self.function_value(value_node, value, targets)
        self.note_bound_value(value_node, value)
        module = model_outputs.inplace_module(value_node)
        is_bool = None
        context = value_node if self.grad_mode_of(value_node) is not None or (
            isinstance(value_node, ast.IfExp) and self._conditional_grad_off(value_node) is not None) else None
        for target in targets:
            if module and isinstance(target, ast.Name):
                self.inplace_modules[target.id] = module
            self.assign(target, value_node, value)
            if isinstance(target, ast.Name):
                if context is not None:
                    self.grad_contexts[target.id] = context
                else:
                    self.grad_contexts.pop(target.id, None)
            if isinstance(target, ast.Name):
                if is_bool is None:
                    is_bool = self.is_bool_value(value_node)
                if is_bool:
                    self.bool_names.add(target.id)
                if grad.is_grad_off_flag(value_node, self.grad_off_flags) and target.id not in self.shared_names:
                    self.grad_off_flags.add(target.id)

    def function_value(self, value_node: ast.expr, value: frozenset, targets) -> frozenset:
        """``g = f``, ``g = self.m``, ``g = torch.jit.trace(f, example)``: a name bound to a project function (a call
        of it is a call of that function); what ``value_node`` evaluated to otherwise."""
        if self.ctx is None or value or not isinstance(value_node, (ast.Name, ast.Attribute, ast.Call)) \
                or isinstance(value_node, ast.Call) and not self.compiled(value_node):
            return value
        refs = self.callable_refs(value_node)
        if not refs:
            return value
        if any(not isinstance(t, ast.Name) for t in targets) and not isinstance(value_node, ast.Call):
            self.record_handed_out(value_node)  # `REGISTRY[key] = f`, `self.cb = f`: called from there
        return frozenset(function_ref(q, bound, value_node.lineno) for q, bound in refs)

    def note_bound_value(self, node: ast.expr, value: frozenset) -> None:
        """A name was bound to ``node``, whose value the walk knows (``tracked_values``) or gives nothing
        (``untracked_values``: a fix may not assume what it holds, :mod:`.fixplan.sources`)."""
        (self.tracked_values if value else self.untracked_values).add((node.lineno, node.col_offset))

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            value = self.function_value(node.value, self.eval(node.value), [node.target])
            self.note_bound_value(node.value, value)
            self.assign(node.target, node.value, value)
            if isinstance(node.target, ast.Name) and grad.is_grad_off_flag(node.value, self.grad_off_flags) \
                    and node.target.id not in self.shared_names:
                self.grad_off_flags.add(node.target.id)

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        value = self.eval(node.value)
        op = AUG_OPS.get(type(node.op), "op=")
        target = node.target
        if isinstance(target, ast.Name):
            self.grad_off_flags.discard(target.id)  # `flag |= force`: no longer true only with grad off
            self.new_ident(target.id, None)  # `n += 1`: another value (a test of `n` before is of the old one)
        if isinstance(target, ast.Subscript):
            base = self.eval(target.value)
            self.eval(target.slice)
            if not is_str_constant(target.slice):
                self.report(node, WriteKind.SUBSCRIPT, f"`{op}` on an item", target.value,
                            self.written_with_grad(base, node.value))
                self.written_with(target.value, base, value, node.value)
        elif isinstance(target, (ast.Name, ast.Attribute)) and (
                ops.AUGMENTED_INPLACE.get(op) is None or self._numpy_array(node.value)):
            # `x @= w`: a Tensor has no __imatmul__, so Python rebinds x = x @ w (a new tensor); `x += np.ones(n)`:
            # the tensor's in-place add declines an ndarray and NumPy's reflected add makes a new tensor, which
            # Python binds to x (executed on torch 2.13: the tensor x held is unchanged)
            self.eval(target)
            self.assign(target, None, EMPTY)
        elif isinstance(target, (ast.Name, ast.Attribute)):
            origins = self.saved_by_its_own_write(node, ops.AUGMENTED_INPLACE.get(op), target, self.eval(target),
                                                  [node.value])  # (`a *= a`)
            self.report(node, WriteKind.AUGMENTED, f"`{op}`", target, self.written_with_grad(origins, node.value),
                        ops.AUGMENTED_INPLACE.get(op))
            self.written_with(target, origins, value, node.value)

    def stmt_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            key = dotted_name(target)
            if key is not None:
                self.env.pop(key, None)
                self.bindings.append((key, EMPTY))
                if "." not in key:
                    self.new_ident(key, None)
            else:
                self.eval(target)

    # ---- binding

    def hold(self, key: str, origins: frozenset) -> None:
        """``key`` now holds ``origins`` without being bound again (a test narrowed it, an op marked it saved):
        recorded for an ``if`` to merge the keys its arms changed."""
        if origins:
            self.env[key] = origins
        else:
            self.env.pop(key, None)
        self.bindings.append((key, origins))

    def bind_name(self, key: str, origins: frozenset) -> None:
        if self.reach_conds and key in self.reach_conds:
            # what the name held before, under a condition, may come back where paths join (a `try`'s handler):
            # only entries of origins the new value is made from are dropped
            kept = [(held, c) for held, c in self.reach_conds[key] if not any(o.derived_from(held) for o in origins)]
            if kept:
                self.reach_conds[key] = kept
            else:
                del self.reach_conds[key]
        if origins:
            self.env[key] = origins
            self.bindings.append((key, origins))
            if len(origins) > _MAX_ORIGINS:
                self.big.add(key)
            if (self.path_conds or self.local_conds) and self.recording and self.stmt_stack:
                self._made_under(origins)
        else:
            self.env.pop(key, None)
            self.bindings.append((key, EMPTY))
        if "." not in key:
            self.new_ident(key, None)
            self.bool_names.discard(key)
            self.grad_off_flags.discard(key)
            self.local_funcs.pop(key, None)
            self.names.pop(key, None)
            self.assigned.add(key)
            if key in self.params:
                index = list(self.params).index(key)
                if not any(param_index(o) == index for o in origins):
                    self.rebound_params.add(key)
        if self.no_grad:
            self.nograd_bound.add(key)

    def written_with(self, target: ast.expr, written: frozenset, value: frozenset,
                     value_node: Optional[ast.expr] = None) -> None:
        """``t[i] = v`` / ``t += v`` on a tensor that needs no grad (a factory's, ``torch.zeros(n, d)``) with a
        value that requires grad by evidence: from here on ``t`` requires grad too (autograd records the write:
        ``CopySlices``, ``AddBackward0``), so what is computed from it may be saved for backward. Not under
        ``no_grad`` (nothing is recorded there). A value computed here from parameters annotated ``Tensor`` alone
        (``qu[mask, 1] = m01[mask] * r`` with ``m01 = matrix[..., 0, 1]``) makes ``t`` a guess about them, which the
        function's callers decide (ebsdtorch's ``om2qu``, flowtorch's node weights)."""
        if self.no_grad or not written or not no_grad_value(written):
            return
        key = dotted_name(target)
        if key is None or key not in self.env or not self.recording:
            return
        if value and any(o.is_tensor and o.grad_evidence and param_index(o) is None for o in value):
            self.bind_name(key, frozenset({Origin(RootKind.TENSOR, short(target), target.lineno)}))
        elif value_node is not None and isinstance(target, ast.Name) and self.func is not None and \
                not isinstance(self.func, ast.Module):
            guesses = [g for g in self.guesses_of(value_node, value)
                       if 0 <= g < len(self.params) and self.annotated_tensor(g)]
            if guesses:
                named = " or ".join(f"`{list(self.params)[g]}`" for g in guesses)
                self.hold(key, cap(set(self.env.get(key) or ()) | {Origin(
                    RootKind.TENSOR, key, target.lineno, guessed=True, guess_param=g, certain_tensor=True,
                    condition=f"it does when {named} requires grad") for g in guesses}))

    def reachable(self, key: Optional[str], origins: list) -> list:
        """``origins`` less those that ``key`` holds only on paths the conditions being walked exclude:
        ``ids.clone()`` bound under ``if reset:`` leaves the expanded ``ids`` only where ``reset`` is false, so
        ``ids[b] -= 1`` under a later ``if reset:`` writes the clone (:attr:`reach_conds`)."""
        now = self.path_conds + self.local_conds
        if not now:
            return origins
        entries = self.reach_conds.get(key) if key is not None else None
        excluded = [held for held, cond in entries if any(conflict(cond, c) for c in now)] if entries else ()
        # and what was made under conditions those walked now rule out (`if m == "a": x = y.exp()`, `if m == "b": ...`)
        return [o for o in origins if not any(o.derived_from(h) for h in excluded) and not self.made_contradicted(o, now)]

    def _made_under(self, origins: frozenset) -> None:
        """Record, for the steps and roots the statement being walked made (their line is in it), the
        conditions on parameters it runs under (:attr:`made_conds`; the first record of each stays)."""
        stmt = self.stmt_stack[-1]
        first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
        if self.local_conds:
            self.made_under_locals(origins, first, last)
        if not self.path_conds:
            return
        made = self.made_conds
        for o in origins:
            for step in o.steps:
                if first <= step.line <= last and step not in made:
                    made[step] = self.path_conds
            if first <= o.root_line <= last and param_index(o) is None:
                made.setdefault((o.root, o.root_text, o.root_line), self.path_conds)

    def assign(self, target: ast.expr, value_node: Optional[ast.expr], value: frozenset) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value_node, (ast.Tuple, ast.List)) and len(value_node.elts) == len(target.elts) and \
                    not any(isinstance(e, ast.Starred) for e in target.elts + value_node.elts):
                # a, b = x.squeeze(0), y: values were evaluated as part of the tuple; re-evaluate per element
                for t, v in zip(target.elts, value_node.elts):
                    self.assign(t, v, self.eval_quiet(v))
                return
            for i, elt in enumerate(target.elts):
                if isinstance(elt, ast.Starred):
                    self.assign(elt.value, None, cap(o for o in value if o.is_container))
                else:
                    self.assign(elt, None, self.element_of(value, f"[{i}]", elt.lineno))
            return
        if isinstance(target, ast.Starred):
            self.assign(target.value, None, value)
            return
        if isinstance(target, ast.Subscript):
            base = self.eval(target.value)
            self.eval(target.slice)
            if not is_str_constant(target.slice):  # x["key"] = v: a mapping, not a tensor
                # guess: `small[k:] = False` writes a bool mask, and a bool tensor never requires grad
                # (docs/pytorch-facts.md#grad-off): the autograd rules do not apply, the alias rules do
                self.report(target, WriteKind.SUBSCRIPT, "item assignment", target.value,
                            self.written_with_grad(base, value_node),
                            write_no_grad=isinstance(value_node, ast.Constant) and isinstance(value_node.value, bool))
            key = self.key_of(target)
            if key is not None and not any(o.is_tensor for o in base):
                self.bind_name(key, value)  # output["logits"] = ... on a dict-like model output
            else:
                self.written_with(target.value, base, value, value_node)
                self.store_any_key(target, value, value_node)  # (`mapped[ntype] = h` into a local dict)
            return
        key = dotted_name(target)
        if key is not None:
            own = value_node.value if isinstance(value_node, ast.Attribute) and value_node.attr in ops.VIEW_ATTRIBUTES \
                else value_node
            if not value and isinstance(target, ast.Name) and (isinstance(own, ast.Attribute) and isinstance(
                    own.value, ast.Name) and own.value.id == self.self_name and self._parameter_attribute(own)
                    or isinstance(own, ast.Subscript) and self.parameter_item(own)
                    or not self.no_grad and self.of_own_parameter(own)):
                # `params = self.transform_params` (an `nn.Parameter` the class built), or its transpose (`AT =
                # self._A.T`): that parameter or a view of it, which requires grad (neuroreg, set AT; flowtorch, BS);
                # `mu = self.params["mu"]`, an item of a dict of such leaves (torchquantlib, BW); `s =
                # self.constraint.transform(self.raw)`, a call given such a parameter (alfi's kernels, set CX)
                value = frozenset({Origin(RootKind.TENSOR, short(value_node), value_node.lineno)})
            self.bind_name(key, value)
            if isinstance(target, ast.Name):
                self.new_ident(key, value_node)
                cls = self.instance_class(value_node)
                if cls is not None:
                    self.local_instances[key] = cls
                else:
                    self.local_instances.pop(key, None)
                self.local_stacks.pop(key, None)
                self.local_input_layers.pop(key, None)
                if self.is_submodule_call(value_node) and not self.no_grad:  # (made with grad off: needs none)
                    self.submodule_results.add(key)
                else:
                    self.submodule_results.discard(key)
                if isinstance(value_node, ast.Call) and not self.no_grad and self.input_saving_layer(value_node.func):
                    self.layer_results.add(key)  # `gate = self.proj(h)` in any method
                else:
                    self.layer_results.discard(key)
                self.submodule_names.discard(key)
                self.note_view(key, value_node)
        else:
            self.eval(target)

    def instance_class(self, node: Optional[ast.expr]) -> Optional[str]:
        """``Cls(...)`` of an in-project class, or ``self.blocks[i]`` (one element of a container
        :meth:`element_class` knows): its qualified name; else None."""
        if isinstance(node, ast.Subscript):
            return self.indexed_element_class(node)
        if self.ctx is None or not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Name, ast.Attribute)):
            return None
        if not (node.func.id if isinstance(node.func, ast.Name) else node.func.attr).lstrip("_")[:1].isupper():
            return None  # only CapWords names are looked up as classes (PEP 8): every other call would cost a lookup
        qual, imported = qualify(node.func, self.names, self.is_local_name)
        if not imported:
            dotted = dotted_name(node.func)
            if dotted is None or dotted.split(".")[0] in self.env or dotted.split(".")[0] in self.params:
                return None
            qual = f"{self.ctx.module}.{dotted}"
        if qual is None:
            return None
        found = self.ctx.resolve(qual)
        return found[1] if found and found[0] == "class" else None

    def is_submodule_call(self, node: Optional[ast.expr]) -> bool:
        """``self.backbone(x)`` in a ``forward`` method, the callee not a configured model-call name, or a view or
        a dtype/layout change of it (``self.gate(h).to(torch.float32)``: a copy or the same tensor, either way
        computed from the submodule's output with grad on)."""
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Call) \
                and node.func.attr != "detach" \
                and (node.func.attr in ops.MAY_ALIAS_METHODS or node.func.attr in ops.VIEW_METHODS):
            node = node.func.value
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and self.self_name is not None
                and node.func.value.id == self.self_name):
            return False
        if self.qual.rsplit(".", 1)[-1] != "forward":
            return False
        if not node.args and not node.keywords and not self.built_as_module(node.func.attr, strict=False):
            return False  # `alpha = self.alpha()`, a sampler built by another library: no input, no evidence
        return not self.settings.is_model_call_name(node.func.attr)

    def built_as_module(self, attr: str, strict: bool = True) -> bool:
        """``self.<attr>`` may be a module with weights of its own: ``__init__`` built it from a project class that
        is an ``nn.Module``, or from torch or a model library (:data:`_MODEL_LIBRARIES`), or the walk has no project
        to ask. Not ``strict``: anything but a call of another library's factory (``self.alpha =
        cc.Uniform.make(...)``, a sampler) may be, as what was handed in, a lambda, a bound method, a project
        factory or ``functools.partial`` may (a review's 8 cases: each returned a tensor requiring grad)."""
        if self.ctx is None or not self.cls_qual:
            return True
        builder = self.class_builders.get(attr) if self.class_builders is not None else \
            self.ctx.attribute_builder(self.cls_qual, attr)
        if builder is None:
            return not strict
        found = self.ctx.resolve(builder)
        if found is None:
            return builder.split(".")[0] in (_MODEL_LIBRARIES if strict else _MODEL_LIBRARIES | {"functools"})
        return (found[0] == "class" and self.ctx.module_class(found[1])) or not strict

    def bind_iter(self, target: ast.expr, iterable: ast.expr) -> None:
        """Bind a ``for``/comprehension target to the elements of ``iterable``."""
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.args:
            fname = iterable.func.id
            if fname == "enumerate":
                for extra in iterable.args[1:] + [k.value for k in iterable.keywords]:
                    self.eval(extra)
                if isinstance(target, ast.Tuple) and len(target.elts) == 2:
                    self.assign(target.elts[0], None, EMPTY)
                    self.bind_iter(target.elts[1], iterable.args[0])
                else:
                    self.eval(iterable.args[0])
                    self.assign(target, None, EMPTY)
                return
            if fname == "zip" and isinstance(target, ast.Tuple) and len(target.elts) == len(iterable.args):
                for t, it in zip(target.elts, iterable.args):
                    self.bind_iter(t, it)
                return
            if fname in ("reversed", "list", "tuple") and len(iterable.args) == 1:
                self.bind_iter(target, iterable.args[0])
                return
        if isinstance(iterable, (ast.List, ast.Tuple, ast.Set)):
            # for s in [a, b]: s is a or b itself
            elements: Set[Origin] = set()
            for elt in iterable.elts:
                elements |= self.eval(elt)
            self.assign(target, None, cap(elements))
            return
        origins = self.eval(iterable)
        self.assign(target, None, self.element_of(origins, "for ... in", getattr(target, "lineno", 0)))
        if isinstance(target, ast.Name) and self.own_submodules(iterable):
            self.submodule_names.add(target.id)
        if isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(iterable, ast.Call) \
                and isinstance(iterable.func, ast.Attribute) and iterable.func.attr == "items" and not iterable.args:
            target = target.elts[1]  # `for name, head in self.heads.items():`
            iterable = ast.Call(func=ast.Attribute(value=iterable.func.value, attr="values"), args=[], keywords=[])
        if isinstance(target, ast.Name):
            cls = self.element_class(iterable)
            if cls is not None:
                self.local_instances[target.id] = cls
            else:
                self.local_instances.pop(target.id, None)
            stack = self.element_stack(iterable)
            if stack:
                self.local_stacks[target.id] = stack
            else:
                self.local_stacks.pop(target.id, None)
            attr = self._own_container(iterable)
            self._some_pass_layer(target.id, attr, iterable)
            layer = self.input_layers.get(f"{attr}{ELEMENTS}") if attr is not None else None
            if layer and not {attr, ALL_LAYERS} & self.unsaved_layers:
                self.local_input_layers[target.id] = layer  # `for conv in self.convs: x = conv(x)`
            else:
                self.local_input_layers.pop(target.id, None)

    def _some_pass_layer(self, name: str, attr: Optional[str], iterable: ast.expr) -> None:
        """``for f in self.layers:`` over a layer list with an in-place layer after its first element: ``f`` is that
        layer on some passes of this loop (:mod:`.layer_elements`; not over a slice, whose first element may be it);
        any other binding of ``name`` ends that."""
        loop = self.loop_stack[-1] if self.loop_stack else None
        layer = self.inplace_elements.get(attr) if attr is not None and isinstance(iterable, ast.Attribute) \
            and isinstance(loop, (ast.For, ast.AsyncFor)) \
            and (loop.iter is iterable or isinstance(loop.iter, ast.Call) and iterable in loop.iter.args) else None
        if layer:
            self.some_pass_layers[name] = (loop, layer)
        else:
            self.some_pass_layers.pop(name, None)

    def _own_container(self, iterable: ast.expr) -> Optional[str]:
        """``blocks`` for ``self.blocks`` (or a slice of it) or ``self.blocks.values()``, in a class's method."""
        if isinstance(iterable, ast.Subscript) and isinstance(iterable.slice, ast.Slice):
            iterable = iterable.value
        elif isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) \
                and iterable.func.attr == "values" and not iterable.args and not iterable.keywords:
            iterable = iterable.func.value
        if not self.cls_qual or not isinstance(iterable, ast.Attribute) \
                or not isinstance(iterable.value, ast.Name) or iterable.value.id != self.self_name:
            return None
        return iterable.attr

    def element_class(self, iterable: ast.expr) -> Optional[str]:
        """``self.blocks`` (or a slice of it), or ``self.heads.values()``, where ``__init__`` filled the
        ``ModuleList``/``ModuleDict`` with instances of one in-project class (:func:`.init_builds.container_elements`):
        that class."""
        attr = self._own_container(iterable) if self.ctx is not None else None
        return self.ctx.attribute_class(self.cls_qual, f"{attr}{ELEMENTS}") if attr is not None else None

    def element_stack(self, iterable: ast.expr) -> Optional[str]:
        """``self.us`` (or a slice of it), a ``ModuleList`` every element of which the class builds as a torch stack
        ending in the same activation (:func:`.model_outputs.torch_stacks`): that activation's functional op."""
        attr = self._own_container(iterable)
        return self.torch_stacks.get(f"{attr}{ELEMENTS}") if attr is not None else None

    def indexed_stack(self, node: ast.expr) -> Optional[str]:
        """``self.us[i]`` (an index, not a slice): :meth:`element_stack` of ``self.us``."""
        return self.element_stack(node.value) if isinstance(node, ast.Subscript) \
            and not isinstance(node.slice, ast.Slice) else None

    def indexed_element_class(self, node: ast.expr) -> Optional[str]:
        """``self.blocks[i]`` or ``self.heads["a"]`` (an index, not a slice): the one class
        :meth:`element_class` knows the container's elements are made from; else None."""
        if not isinstance(node, ast.Subscript) or isinstance(node.slice, ast.Slice):
            return None
        return self.element_class(node.value)

    def own_submodules(self, iterable: ast.expr) -> bool:
        """``self.enc``, ``self.blocks.values()``, ``self.children()`` iterated in a module's ``forward``: what
        it yields are the module's own submodules (a ``ModuleList``, ``ModuleDict``, ``Sequential``)."""
        if self.self_name is None or self.qual.rsplit(".", 1)[-1] != "forward":
            return False
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and not iterable.args \
                and iterable.func.attr in ("values", "children", "modules"):
            iterable = iterable.func.value
        while isinstance(iterable, ast.Subscript):  # self.layers[1:]
            iterable = iterable.value
        return isinstance(iterable, ast.Attribute) and isinstance(iterable.value, ast.Name) \
            and iterable.value.id == self.self_name

    def element_of(self, origins: frozenset, text: str, line: int) -> frozenset:
        """What one element (unpacked, iterated) of a value with ``origins`` holds. A value some path of which is
        a tuple literal (``return z, log_p``) is unpacked by position; a bare tensor on another path would
        only unpack if its first dimension happened to match, so it is not taken as ``unbind`` then."""
        out = []
        position = int(text[1:-1]) if text.startswith("[") and text[1:-1].isdigit() else None
        tuples = any(is_tuple_item(o) for o in origins)
        for o in origins:
            if is_tuple_item(o):
                item = tuple_item_at(o, position)
                if item is not None:
                    out.append(item)
                continue
            if tuples and o.is_tensor and position is not None:
                continue
            if o.is_tensor and not o.certain_tensor and o.guessed:
                continue  # `for x in xs * 2`: iterating what nothing proves a tensor (a list repeated) is no unbind
            if o.root is RootKind.MODEL_OUTPUT_OBJECT and not o.steps:
                # loss, logits = model(x): each element may be a tensor, a dict or a number
                out.append(Origin(RootKind.MODEL_OUTPUT, f"{o.root_text}{text if text.startswith('[') else '[...]'}",
                                  line, root_no_grad=o.root_no_grad or self.no_grad, certain_tensor=False))
            else:
                kind = element_kind(o)
                if self.scripted and kind is StepKind.ELEMENT and o.is_tensor and not text.startswith("["):
                    kind = StepKind.VIEW  # TorchScript's `for t in x` is `x.select(0, i)`, one view per step
                out.append(o.extend(Step(kind, text if text.startswith("[") else "iteration", line, self.no_grad)))
        return cap(out)
