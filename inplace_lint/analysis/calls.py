"""Calls: torch ops (resolved through imports), tensor methods and model calls.

A callee is a torch op only when its name resolves to torch (``import torch.nn.functional as Fn``; ``from
torch.nn.functional import relu_``); ``math``/``numpy``/``random``/``statistics`` functions give no origin. Calls of
in-project functions are :mod:`.project_calls`'s; what a call's backward saves and whether its inputs need grad,
:mod:`.call_grad`'s.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Dict, List

from ..findings import Origin, RootKind, Step, StepKind, WriteKind
from . import model_outputs
from ..torch_facts import ops
from .astutil import call_text, dotted_name, is_str_constant, is_true, kw, last_name, short
from .call_args import (DROPOUTS, dropout_condition, expands_to_itself, inplace_flag, is_dtype_conversion,
                        literal_args, module_condition, tensor_split_args, to_integer_dtype, unknown_inplace_flag)
from .call_grad import is_detached, known_origins, needs_no_grad_arg
from .saved_ops import REORDERING, TENSOR_IS_RETURNED, einsum_operands_kept, output_saved_here, returns_tuple
from .expressions import cut_tracking, holder_of, index_text, is_basic_index
from .names import (EINOPS_OPS, FUNCTIONAL_NAMESPACE, TORCH_NAMESPACES, einops_op, is_non_tensor_library,
                    qualify, qualify_dotted, rearranged)
from .env import EMPTY, cap
from .storage import whole_read
from .summaries import PASS_THROUGH, function_of, no_grad_value, param_index
from .tensor_kinds import _is_bool_expr

#: ``torch.nn.functional`` functions named like a view method that return a new tensor (``F.unfold`` is im2col)
_FUNCTIONAL_COPIES = frozenset({"unfold", "fold"})


def _literal_index(index: ast.expr) -> bool:
    """An index made of literals only (``x[True]``, ``x[0, True]``): :func:`.expressions.is_basic_index` reads
    it exactly, so one that is not basic is known to copy."""
    return all(isinstance(e, ast.Constant) for e in (index.elts if isinstance(index, ast.Tuple) else [index]))


class CallsMixin:
    """``eval_Call`` and what a call returns."""

    def eval_Call(self, node: ast.Call) -> frozenset:
        func = node.func
        # evaluate arguments first (their own writes come first, as at run time)
        args = [self.eval(a) for a in node.args]
        kwargs = {k.arg: self.eval(k.value) for k in node.keywords}
        if self.ctx is not None and self.recording and (node.args or node.keywords):
            self.hand_out_callables(node)
        self.note_layer_input(node)  # (`self.fc(x)`, `self.convs[i](x)`, `conv(x)` of `for conv in self.convs`)
        if isinstance(func, ast.Attribute):
            func_dotted = dotted_name(func)  # the receiver's is its head (None when not a dotted name)
            ns, imported = qualify_dotted(func_dotted.rpartition(".")[0] if func_dotted else None, self.names,
                                          self.is_local_name)
            if ns == "torch.autograd" and func.attr in ("grad", "backward"):
                self.backward_ran(node, positional=3 if func.attr == "grad" else 2)
            if ns == "torch.Tensor" and node.args:
                # torch.Tensor.div_(x, t) is x.div_(t)
                return self.method_call(node, func.attr, node.args[0], args[0])
            if ns in TORCH_NAMESPACES:
                return self.function_call(node, func.attr, ns == FUNCTIONAL_NAMESPACE, args, kwargs, ns)
            if imported and (qual := f"{ns}.{func.attr}") in EINOPS_OPS and rearranged(node):
                return self.method_call(node, einops_op(qual, node), node.args[0], args[0], functional=True)
            if is_non_tensor_library(ns):
                # math.sqrt, np.exp, random.random: never tensors (but `np.asarray(x)` shares its memory)
                return self._unresolved(node)
            callees = self.resolve_callees(func, (ns, imported)) if self.ctx is not None else ()
            if callees:
                return self.project_calls(node, callees, args, kwargs)
            forwards = self.submodule_forwards(func)
            if forwards:
                # the project's implementations decide, whatever the attribute is called (`self.score_head =
                # MLP(...)`, `iql_model: ILQL`): what each forward returns, each named in the message when it
                # matters. Only a head we cannot see counts as the model-call patterns say (a custom Function)
                return self.project_calls(node, forwards, args, kwargs, submodule=func.attr)
            if imported and ns is not None and (ns.split(".")[0] != "torch" and func.attr in _TENSOR_OPS
                                                 or self.settings.is_model_call_name(func.attr)):
                # PIL.ImageOps.expand(img, border=2), `itertools.repeat(x)`: a library's function, not Tensor.expand;
                # `tensor_api.distribute_module(...)`: a module's function, named like a model only
                return self._unresolved(node)
            recv = self.eval(func.value)
            inplace_module = self.inplace_modules.get(func_dotted or "")
            if inplace_module and node.args:
                self.report(node, WriteKind.INPLACE_KWARG, f"`{inplace_module}(inplace=True)`", node.args[0], args[0],
                            condition=module_condition(inplace_module, func_dotted), layer=inplace_module)
                return self._inplace_result(node, inplace_module, args[0])
            first_layer = self.inplace_firsts.get(func.attr) if node.args and self._is_self(func.value) else None
            if first_layer:
                # `self.rep(x)` with `self.rep = nn.Sequential(nn.ReLU(inplace=True), ...)`: its first layer writes `x`
                self.report(node, WriteKind.INPLACE_KWARG, f"`{func_dotted}`'s first layer `{first_layer}(inplace=True)`",
                            node.args[0], args[0], condition=module_condition(first_layer, func_dotted),
                            layer=first_layer)
            if node.args and func.attr in self.torch_stacks and isinstance(func.value, ast.Name) \
                    and func.value.id == self.self_name and self.cls_qual:
                return self.module_output(node, self.torch_stacks[func.attr], node.args[0], args[0])
            if node.args and not self.no_grad and self.weighted_layer(func.value, func.attr):
                # `self.qkv(x)` with `self.qkv = nn.Linear(...)`: a tensor that requires grad (its weights do)
                return frozenset({Origin(RootKind.TENSOR, short(node), node.lineno)})
            if node.args and self.frozen_embedding(func.value, func.attr):
                return frozenset({Origin(RootKind.FRESH, short(node), node.lineno, root_no_grad=True)})
            if node.args and func.attr in self.zero_dropouts and self._is_self(func.value):  # `nn.Dropout(0.0)`
                return args[0]
            result = self.method_call(node, func.attr, func.value, recv)
            if not recv and not result:
                self._unresolved(node)  # `d.get(k)`, `[x].pop()`
            self.hand_callables_to_model(node, result)
            return result

        if isinstance(func, ast.Call):
            self.eval(func)
            module = model_outputs.inplace_module(func)
            if module and node.args:
                self.report(node, WriteKind.INPLACE_KWARG, f"`{module}(inplace=True)`", node.args[0], args[0],
                            layer=module)
                return self._inplace_result(node, module, args[0])
            return self._unresolved(node)

        if isinstance(func, ast.Name):
            if func.id == "getattr" and len(node.args) == 2 and is_str_constant(node.args[1]):  # is out.logits
                attribute = ast.copy_location(ast.Attribute(value=node.args[0], attr=node.args[1].value,
                                                            ctx=ast.Load()), node)
                ast.fix_missing_locations(attribute)
                return self.eval_Attribute(attribute)
            if func.id in self.some_pass_layers and node.args:  # `for f in self.layers: x = f(x)`: what the loop kept
                self.some_pass_write(node, func.id)
            module = self.inplace_modules.get(func.id)
            if module and node.args:
                self.report(node, WriteKind.INPLACE_KWARG, f"`{module}(inplace=True)`", node.args[0], args[0],
                            condition=module_condition(module, func.id), layer=module)
                return self._inplace_result(node, module, args[0])
            qual, imported = qualify(func, self.names, self.is_local_name)
            if imported and qual in ("torch.autograd.grad", "torch.autograd.backward"):
                # `from torch.autograd import grad`; `grad(loss, inputs=δ)`
                self.backward_ran(node, positional=3 if qual.endswith("grad") else 2)
            if imported and qual is not None:
                head, _, name = qual.rpartition(".")
                if head in TORCH_NAMESPACES:  # from torch.nn.functional import relu_
                    return self.function_call(node, name, head == FUNCTIONAL_NAMESPACE, args, kwargs, head)
                if qual in EINOPS_OPS and rearranged(node):
                    return self.method_call(node, einops_op(qual, node), node.args[0], args[0], functional=True)
                if is_non_tensor_library(qual):
                    return EMPTY
            if func.id in self.local_stacks and node.args:  # `for up in self.us: x = up(x)`
                return self.module_output(node, self.local_stacks[func.id], node.args[0], args[0])
            if func.id in self.local_instances:
                forwards = self.resolve_callees(func)  # the class's forward
                if forwards:
                    return self.project_calls(node, forwards, args, kwargs)
            callee = self.resolve_callee(func)
            if callee is not None:
                return self.project_call(node, callee, args, kwargs)
            refs = [function_of(o) for o in self.env.get(func.id, EMPTY)]
            if any(refs):  # `func = _adam if ... else _multi_adam; func(...)`; a returned `lambda x: x` passes `x` on
                return cap(frozenset().union(*((args[0] if args else EMPTY) if ref[0] == PASS_THROUGH else
                                               self.project_call(node, ref, args, kwargs) for ref in refs if ref)))
            if self.settings.is_model_call_name(func.id) and func.id not in self.submodule_names and not imported:
                # (an imported name is a function or a class: `from torch.distributed.tensor import
                # distribute_module` returns the module it is given, and the callables handed to it get no output)
                result = frozenset({Origin(RootKind.MODEL_OUTPUT_OBJECT, f"{func.id}(...)", node.lineno,
                                           root_no_grad=self.no_grad)})
                self.hand_callables_to_model(node, result)
                return result
            return self._unresolved(node)  # a builtin, a library's function
        if node.args and (stack := self.indexed_stack(func)):  # `self.us[i](x)`, each `nn.Sequential(..., nn.ReLU())`
            self.eval(func)
            return self.module_output(node, stack, node.args[0], args[0])
        if isinstance(func, ast.Subscript) and self.ctx is not None:
            forwards = self.resolve_callees(func)  # `self.blocks[i](x)`: the elements' class's forward
            if forwards:
                self.eval(func)
                return self.project_calls(node, forwards, args, kwargs)
        self.eval(func)
        return self._unresolved(node)  # `(lambda: x)()`, `getattr(o, n)(x)`

    def _unresolved(self, node: ast.Call) -> frozenset:
        """A call not resolved: nothing known (:attr:`~.dataflow.Scope.unresolved_calls`; :mod:`.fixplan.sources`)."""
        self.unresolved_calls.add((node.lineno, node.col_offset))
        return EMPTY

    def _inplace_result(self, node: ast.Call, name: str, first: frozenset) -> frozenset:
        """What an in-place activation returns: its input, and for ``relu_``/``sigmoid_``/... an output
        its backward reads (a later in-place write to it fails at backward)."""
        if model_outputs.saves_output_inplace(name) and not self.no_grad:
            saved = Origin(RootKind.SAVED_OUTPUT, short(node), node.lineno)
            target = node.args[0] if node.args else kw(node, "input")
            key = (self.key_of(target) or holder_of(target)) if target is not None else None
            known = known_origins(first)
            if key is not None and "." not in key and "[" not in key:
                # `y = F.relu(h, inplace=True)`: `y` is `h`, whatever `h` is known to be (:meth:`plan_fix`)
                self.inplace_inputs[(saved.root_text, saved.root_line)] = key
            if target is None or no_grad_value(known) and known == first or not (
                    any(o.is_tensor for o in first) or self.grad_source(target) or self._guess_of(target, first) >= 0):
                return first  # nothing says the input requires grad: whether anything was saved is unknown
            # (of an input known only as parameter `g`'s, a guess the callers decide, as for `h.sigmoid_()`)
            saved_set = self.guess_origins(target, first, lambda g: replace(saved, guess_param=g))
            if key is not None and self.recording:
                # `F.relu_(h)` alone, `h` known to be a tensor that may need grad: `h` (and what shares its
                # storage: `self.relu(x.real)` saves a view of `x`) now holds that output
                self.hold_saved_output(target, saved_set)
            return cap(first | saved_set)
        return first

    def module_output(self, node: ast.Call, op: str, first: ast.expr, first_origins: frozenset) -> frozenset:
        """``self.act(h)`` with ``self.act = nn.Sigmoid()``, or an ``nn.Sequential`` of torch layers ending in one:
        the output of the functional ``op``, saved for backward when the saved table says so (``F.sigmoid(h)``)."""
        if not op or self.no_grad or not ops.saves_output(FUNCTIONAL_NAMESPACE, op):
            return EMPTY
        return self.saved_output(node, first, first_origins)

    def saved_output(self, node: ast.Call, first: ast.expr, first_origins: frozenset) -> frozenset:
        """What an op that saves its output for backward returns, given its input ``first``: a tensor that needs
        no grad when the input needs none, nothing known when nothing says the input requires grad (whether
        anything was saved is unknown), else an output saved for backward (a guess of parameter ``i`` when the
        input is known only as that parameter, for the callers to decide)."""
        if no_grad_value(first_origins):
            return frozenset({Origin(RootKind.FRESH, short(node), node.lineno, root_no_grad=True)})
        if not first_origins and not self.grad_source(first) and self._guess_of(first, first_origins) < 0:
            return EMPTY
        return self.guess_origins(first, first_origins, lambda g: Origin(
            RootKind.SAVED_OUTPUT, short(node), node.lineno, root_no_grad=self.no_grad, guess_param=g))

    def function_call(self, node: ast.Call, name: str, functional: bool, args: List[frozenset],
                      kwargs: Dict[str, frozenset], namespace: str = "torch") -> frozenset:
        """``torch.<name>(...)`` / ``F.<name>(...)`` / ``torch.linalg.<name>(...)`` (any alias; ``namespace``
        is the resolved module)."""
        result = self._function_call(node, name, functional, args, kwargs, namespace)
        given, origins = list(node.args), list(args)
        if not given and kw(node, "input") is not None:
            given, origins = [kw(node, "input")], [kwargs.get("input", EMPTY)]
        key = self.key_of(given[0]) if given and name in ops.INPLACE_KWARG_FUNCTIONS else None
        if key and "." not in key and "[" not in key and unknown_inplace_flag(node, name):
            # the result may be the input itself: a fix rebinding it must not leave `key` behind (plan_fix)
            self.inplace_inputs.update({(o.root_text, o.root_line): key for o in result if o.root_line == node.lineno})
        if name == "einsum" and namespace == "torch" and len(given) == 3 and einsum_operands_kept(given[0]):
            # `torch.einsum("ij,jk->ik", a, b)`: each operand is read for the other's gradient, as `a @ b`'s are
            # (derivatives.yaml has no einsum: it runs as bmm/mul, which save their inputs; executed on torch 2.13)
            namespace, name, given, origins = "torch", "matmul", given[1:], origins[1:]
        self.note_saved_inputs(node, namespace, name, given, origins, lambda: ast.unparse(node.func))
        return result

    def _function_call(self, node: ast.Call, name: str, functional: bool, args: List[frozenset],
                       kwargs: Dict[str, frozenset], namespace: str) -> frozenset:
        qual = ast.unparse(node.func)
        out_node = kw(node, "out")
        if out_node is not None and not isinstance(out_node, (ast.Tuple, ast.List)):
            self.report(node, WriteKind.OUT_KWARG, f"`{qual}(..., out=...)`", out_node, kwargs.get("out", EMPTY))
            self.note_out_call(node, name, args)
            return kwargs.get("out", EMPTY)
        first = node.args[0] if node.args else kw(node, "input")
        first_origins = args[0] if node.args else kwargs.get("input", EMPTY)
        if first is None:
            if name in ops.FACTORY_FUNCTIONS:
                return self._factory(node)
            return EMPTY
        if name in (ops.FUNCTIONAL_INPLACE_FUNCTIONS if functional else ops.TORCH_INPLACE_FUNCTIONS):
            self.report(node, WriteKind.FUNCTION, f"`{qual}`", first, first_origins,
                        f"{'F' if functional else 'torch'}.{name}")
            return self._inplace_result(node, name, first_origins)
        if name in ops.INPLACE_KWARG_FUNCTIONS and inplace_flag(node, name):
            condition = None
            if name.startswith(DROPOUTS):
                written, condition = dropout_condition(node, name)
                if not written:
                    return first_origins  # F.dropout(training=False, inplace=True) or p=0 writes nothing
            self.report(node, WriteKind.INPLACE_KWARG, f"`{qual}(..., inplace=True)`", first, first_origins,
                        condition=condition)
            return self._inplace_result(node, name, first_origins)
        if functional and name.startswith(DROPOUTS) and not dropout_condition(node, name)[0]:
            return first_origins  # `F.dropout(h, p=0.0)`, out of training: what writes nothing returns `h` itself
        if name == "pow" and (powed := self.number_base_pow(node, namespace, args)) is not None:
            return powed  # `torch.pow(10.0, t)`, as `10.0 ** t`
        tuple_saved = self.saved_tuple_outputs(node, namespace, name, first, first_origins)
        if tuple_saved is not None:
            return tuple_saved
        if output_saved_here(node, namespace, name) and not inplace_flag(node, name):
            return self.saved_output(node, first, first_origins)
        if name in TENSOR_IS_RETURNED and namespace == "torch" and any(
                o.is_tensor or param_index(o) is not None for o in first_origins):
            # `torch.as_tensor(t)` of a tensor is `t` itself (grad kept), a copy only for another dtype or device
            # (PyTorch docs: torch.as_tensor, torch.asarray): what `t.to(...)` is; of what a parameter holds, a
            # new tensor too (a number, a list)
            made = self._factory(node) if any(param_index(o) is not None for o in first_origins) else EMPTY
            return self.method_call(node, "to", first, first_origins, functional=True) | made
        if name in ops.FACTORY_FUNCTIONS:
            return self._factory(node)
        if not functional and (name in ops.VIEW_METHODS or name in ops.MAY_ALIAS_METHODS
                               or name in ops.MULTI_VIEW_METHODS or name in ops.SLICED_VIEW_METHODS
                               or name in ops.EXPAND_METHODS):
            return self.method_call(node, name, first, first_origins, functional=True)
        # (`torch.nn.functional` has no view op: `F.unfold` is im2col, a new tensor, unlike `Tensor.unfold`)
        if name in ops.ARITHMETIC or (functional and name in _FUNCTIONAL_COPIES):
            if self._inputs_need_no_grad(node, args, kwargs):
                return frozenset({Origin(RootKind.FRESH, short(node), node.lineno, root_no_grad=True)})
            nodes = list(node.args) + [k.value for k in node.keywords if k.arg is not None]
            result = self.arithmetic_result(node, nodes, list(args) + [
                kwargs.get(k.arg, EMPTY) for k in node.keywords if k.arg is not None])
            # (`torch.flip(f, (-1,))` reorders `f`'s elements: a guess about a parameter stays one)
            return result if name in REORDERING else _evidence(result)
        return EMPTY

    def _is_tensor_argument(self, node: ast.expr) -> bool:
        """``node`` is proven a tensor (a torch op's result, a model output, a ``torch.Tensor`` parameter)."""
        if isinstance(node, (ast.Constant, ast.List, ast.Tuple, ast.UnaryOp)):
            return False
        origins = self.eval_quiet(node)
        return any(o.is_tensor and o.certain_tensor and param_index(o) is None for o in origins)

    def _factory(self, node: ast.Call) -> frozenset:
        if is_true(kw(node, "requires_grad")):
            return frozenset({Origin(RootKind.TENSOR, short(node), node.lineno, root_no_grad=self.no_grad)})
        return frozenset({Origin(RootKind.FRESH, short(node), node.lineno, root_no_grad=True)})

    def _is_self(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id == self.self_name

    def method_call(self, node: ast.Call, name: str, recv_node: ast.expr, recv: frozenset,
                    functional: bool = False) -> frozenset:
        """``recv.<name>(...)``; ``functional`` for ``torch.<name>(recv, ...)`` (the receiver is surely a tensor)."""
        result = self._method_call(node, name, recv_node, recv, functional)
        if name == "backward" and not functional:
            self.backward_ran(node)
        elif not functional and not self._is_self(recv_node) and (any(o.is_tensor for o in recv) or (
                not recv and ops.saved_for_backward(ops.TENSOR_METHOD, name)
                and (read := whole_read(recv_node, self.known_ints())) and self.untracked_guesses(read, node.lineno))):
            # (an untracked local made by torch ops from parameters: `x = F.unfold(x, k); x.var(-1)` saves it,
            # a guess for the callers to decide)
            self.note_saved_inputs(node, ops.TENSOR_METHOD, name, [recv_node] + list(node.args),
                                   [recv] + [None] * len(node.args), lambda: f"{short(recv_node)}.{name}")
        return result

    def _method_call(self, node: ast.Call, name: str, recv_node: ast.expr, recv: frozenset,
                     functional: bool = False) -> frozenset:
        line = node.lineno
        flag = node.args[0] if node.args else kw(node, "requires_grad")
        if name == "requires_grad_" and (flag is None or is_true(flag)):
            # `pos.requires_grad_()` (forces as the gradient of an energy): from here on it requires grad (a
            # flag that is not a literal, `.requires_grad_(x.requires_grad)`, says nothing)
            made = frozenset({Origin(RootKind.TENSOR, short(recv_node), line)})
            if (key := self.key_of(recv_node)) is not None and self.recording:
                self.bind_name(key, made)
            return made
        if name in ops.TENSOR_INPLACE_METHODS:
            if not recv and isinstance(recv_node, ast.Subscript) and not is_basic_index(recv_node.slice) \
                    and not _is_bool_expr(recv_node.slice) and not _literal_index(recv_node.slice):
                # x[tuple(slices)].copy_(src): an index we cannot read may be basic slicing (a view)
                base = self.eval_quiet(recv_node.value)
                recv = cap(o.extend(Step(StepKind.VIEW, index_text(recv_node.slice), line, self.no_grad))
                           for o in base if o.is_tensor and not model_outputs.is_guessed_object(o))
            values = node.args + [k.value for k in node.keywords]  # (`a.addcmul_(t, tensor2=self.w)`)
            recv = self.saved_by_its_own_write(node, name, recv_node, recv, values)  # (`a.mul_(a)`)
            self.report(node, WriteKind.METHOD, f"`{name}`", recv_node, self.written_with_grad(recv, *values), name)
            result = cap(o.extend(Step(StepKind.ALIAS, f".{name}()", line)) for o in recv if o.is_tensor)
            if model_outputs.saves_output_inplace(name) and not self.no_grad:
                # `h.sigmoid_()`: what it returns is also an output its backward reads, as for `torch.sigmoid_(h)`
                # (whose receiver needs grad by the same evidence an out-of-place `h.sigmoid()` needs)
                known = known_origins(recv)
                if not (no_grad_value(known) and known == recv) and (
                        recv or self.grad_source(recv_node) or self._guess_of(recv_node, recv) >= 0):
                    saved = self.guess_origins(recv_node, recv, lambda g: Origin(
                        RootKind.SAVED_OUTPUT, short(node), line, guess_param=g))
                    result = cap(result | saved)
                    if self.recording:  # `h.exp_()` alone: `h` (and what shares its storage) now holds that output
                        self.hold_saved_output(recv_node, saved)
            return result
        if name == "detach":
            return cut_tracking(recv, ".detach()", line)
        if name in ops.FACTORY_METHODS and not functional:
            return self._factory(node)  # `x.new_empty(n, m)`: a factory's tensor, as `torch.empty(n, m)`
        recv = frozenset(o for o in recv if not model_outputs.is_guessed_object(o)) if recv else recv
        known = known_origins(recv)
        if name in ops.VIEW_METHODS:
            return self.view_of(recv_node, recv, StepKind.VIEW, call_text(node, name), line)
        if name in ops.MAY_ALIAS_METHODS:
            if name == "contiguous":  # an expanded (stride-0) tensor is never contiguous: this copies it
                recv = cap(o for o in recv if not o.has(StepKind.EXPAND))
            if is_dtype_conversion(node, name) and self.is_bool_value(recv_node):
                return EMPTY  # (ids != pad).view(...).expand(...).float(): a bool mask converted is a copy
            if to_integer_dtype(node, name) and not any(o.has(StepKind.EXPAND) for o in recv):
                # x.to(torch.long): integer and bool tensors never require grad (docs/pytorch-facts.md#grad-off);
                # from a float tensor it is a copy (an expanded one may be returned as is when already integer)
                return frozenset({Origin(RootKind.FRESH, short(node), line, root_no_grad=True)})
            return self.view_of(recv_node, recv, StepKind.MAY_ALIAS, call_text(node, name), line,
                                shape=name in _SHAPE_METHODS)
        if name in ops.EXPAND_METHODS:
            if expands_to_itself(node, recv_node, lambda name: self.shape_part_of(name, recv_node, line)):
                # `x.expand_as(x)`, `t.expand(t.shape)`, `t.expand(1, s[0])` with `s = t.shape`: nothing is broadcast
                return self.view_of(recv_node, recv, StepKind.VIEW, call_text(node, name), line)
            return self.view_of(recv_node, recv, StepKind.EXPAND, call_text(node, name), line, any_base=True)
        if name in ops.MULTI_VIEW_METHODS or name in ops.SLICED_VIEW_METHODS:
            # str.split(",") and str.split() are not tensor splits
            tensor_like = known or name != "split" or functional or tensor_split_args(node)
            if not tensor_like:
                return EMPTY
            if not known and not functional and name in ops.MULTI_VIEW_METHODS and node.args \
                    and self._is_tensor_argument(node.args[0]):
                return EMPTY  # tok.split(x), sampler.chunk(x, 2): a tensor's chunk/split/unbind take sizes and dims
            kind = StepKind.MULTI_VIEW if name in ops.MULTI_VIEW_METHODS else StepKind.SLICED_VIEWS
            return self.view_of(recv_node, recv, kind, call_text(node, name), line, any_base=True,
                                certain=functional)
        if ops.saved_outputs(ops.TENSOR_METHOD, name) and (any(o.is_tensor for o in known) or self.grad_source(
                recv_node)) and (saved := self.saved_tuple_outputs(node, ops.TENSOR_METHOD, name, recv_node, recv)):
            return saved  # `v, i = x.max(-1)` of a tensor: the outputs its backward reads (EMPTY: unknown, go on)
        if not returns_tuple(node, ops.TENSOR_METHOD, name) and output_saved_here(node, ops.TENSOR_METHOD, name) and (
                name in ops.SAVES_OUTPUT_ANY_RECEIVER or any(
                o.is_tensor for o in known) or (recv and not self._is_self(recv_node) and literal_args(node))):
            if no_grad_value(known) and known == recv or (name in _STATE_ROOTS and recv and not known
                                                          and self.accumulated_params(recv)):
                return frozenset({Origin(RootKind.FRESH, short(node), line, root_no_grad=True)})
            if not recv and not self.grad_source(recv_node) and self._guess_of(recv_node, recv) < 0:
                return EMPTY  # nothing says the receiver requires grad: whether the output is saved is unknown
            return self.guess_origins(recv_node, recv, lambda g: Origin(
                RootKind.SAVED_OUTPUT, short(node), line, root_no_grad=self.no_grad, guess_param=g))
        if name in ops.DTENSOR_LOCAL_METHODS:
            detached = (known and all(o.root_no_grad for o in known)) or is_detached(recv_node)
            if not recv and self.plain_self_call(recv_node):
                return EMPTY  # `self._state(k).to_local()` in an optimizer or a cache: state, not an activation
            if not recv and self.stored_value(recv_node):
                # `optim.state[p].get("momentum_buffer").to_local()`: `to_local()` runs a custom Function whose output
                # is a view only when the DTensor requires grad, and what an optimizer or a cache stored never does
                # (docs/pytorch-facts.md#dtensor-local-is-custom-function)
                return EMPTY
            placeholders = {param_index(o) for o in recv} - {None}
            if recv and len(placeholders) == 1 and all(param_index(o) is not None for o in recv):
                # `def unwrap(t): return t.to_local()`: a view made by a custom Function when what a call passes for
                # `t` requires grad, which each call decides (a model's logits, not an optimizer's state)
                return frozenset({Origin(RootKind.CUSTOM_FUNCTION, short(node), line, root_no_grad=self.no_grad,
                                         guess_param=placeholders.pop())})
            return frozenset({Origin(RootKind.CUSTOM_FUNCTION, short(node), line,
                                     root_no_grad=self.no_grad or bool(detached))})
        if name == "apply" and (last_name(recv_node) or "a").lstrip("_")[:1].isupper():
            if self.forward_returns_fresh(recv_node):
                return EMPTY  # forward returns a new tensor, not a view of an input: in place on it is legal
            given = [(a, self.eval_quiet(a)) for a in node.args]
            if given and all(needs_no_grad_arg(a, o) for a, o in given):
                # every tensor input needs no grad (`.data`, `.detach()`, a factory's): autograd does not track
                # the output, so it is neither a custom-Function view nor requires grad
                return frozenset({Origin(RootKind.FRESH, short(node), line, root_no_grad=True)})
            return frozenset({Origin(RootKind.CUSTOM_FUNCTION, f"{short(recv_node)}.apply(...)", line,
                                     root_no_grad=self.no_grad)})
        if name == "forward" and self.settings.is_model_call_name(last_name(recv_node) or ""):
            return frozenset({Origin(RootKind.MODEL_OUTPUT_OBJECT, f"{short(recv_node)}.forward(...)", line,
                                     root_no_grad=self.no_grad)})
        if self.settings.is_model_call_name(name) and not known and not self.torch_layer(recv_node, name) \
                and not self.built_submodule(recv_node, name):
            return frozenset({Origin(RootKind.MODEL_OUTPUT_OBJECT, f"{short(node.func)}(...)", line,
                                     root_no_grad=self.no_grad)})
        if name in ops.ARITHMETIC or name == "clone":
            args = [self.eval_quiet(a) for a in node.args] if node.args else []
            if known == recv and no_grad_value(known) and self._inputs_need_no_grad(node, args, {}, receiver=known):
                return frozenset({Origin(RootKind.FRESH, short(node), line, root_no_grad=True)})
            result = self.arithmetic_result(node, [recv_node] + list(node.args), [recv] + args)
            if name == "clone":  # `p = z.clone()` of a local guess is that guess (an out= on it raises first); of a
                return EMPTY if any(param_index(o) is not None for o in recv) else frozenset(  # parameter or by
                    o for o in result if o.guessed)  # evidence, untracked as before (the guesses path decides)
            return result if name in REORDERING else _evidence(result)
        return EMPTY

    def view_of(self, recv_node: ast.expr, recv: frozenset, kind: StepKind, text: str, line: int,
                any_base: bool = False, certain: bool = False, shape: bool = False) -> frozenset:
        """Extend ``recv``'s origins by a view step; views of untracked bases start a chain when it matters.
        ``shape``: a may-alias method that changes only the shape (``flatten``, ``reshape``), which a model's output
        object takes as its tensor does (not ``.to(device)``, which a ``BatchEncoding`` has too)."""
        step = Step(kind, text, line, self.no_grad)
        if known_origins(recv):
            return cap(o.extend(step) for o in recv if o.is_tensor or kind is not StepKind.MAY_ALIAS or shape)
        placeholders = frozenset(o.extend(step) for o in recv)
        if any_base or (self.no_grad and kind is StepKind.VIEW):
            key = dotted_name(recv_node)
            made_in_no_grad = self.no_grad and (key is None or key in self.nograd_bound)
            # expand/broadcast_to and view ops exist on tensors only; torch.split(x, ...) proves x a tensor
            sure = kind not in (StepKind.MULTI_VIEW, StepKind.SLICED_VIEWS) or certain
            root = Origin(RootKind.TENSOR, short(recv_node), line, root_no_grad=made_in_no_grad, certain_tensor=sure,
                          guessed=True)
            return placeholders | {root.extend(step)}
        return placeholders


#: what optimizers take of a second moment they update in place (Adam, LAMB, Adagrad, RMSprop: ``sqrt``;
#: Adafactor: ``rsqrt``); an activation updated in place and then put through ``sigmoid``/``exp``/``tanh``
#: is not state (it needs grad, and the output saved for backward is still written)
_STATE_ROOTS = frozenset({"sqrt", "rsqrt"})


#: may-alias methods that change only the shape: on a model's output object, as on its tensor, the result may be
#: a view of the output (``model(x).flatten()`` then ``clamp_min_``: tsai's TweedieLoss shape)
_SHAPE_METHODS = frozenset({"reshape", "reshape_as", "flatten", "contiguous"})

#: the tensor methods whose meaning the analysis follows: called on an imported name of another library
#: (``ImageOps.expand``, ``shlex.split``) they are that library's functions
_TENSOR_OPS = (ops.VIEW_METHODS | ops.MAY_ALIAS_METHODS | ops.MULTI_VIEW_METHODS | ops.SLICED_VIEW_METHODS
               | ops.EXPAND_METHODS | ops.TENSOR_INPLACE_METHODS | ops.SAVES_OUTPUT)


def _evidence(origins: frozenset) -> frozenset:
    """What a torch arithmetic function or method (``logits.mul(2)``, ``torch.stack(xs)``) is known to make:
    a tensor that requires grad by evidence; a guess about a parameter stays untracked, as the input was
    (its view steps keep their own guess: ``x.mean(0).expand(n, -1)``)."""
    return frozenset(o for o in origins if not o.guessed and o.guess_param < 0)


