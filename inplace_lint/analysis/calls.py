"""Calls: torch ops (resolved through imports), tensor methods, model calls and in-project functions.

A callee is a torch op only when its name resolves to torch (``import torch.nn.functional
as Fn``; ``from torch.nn.functional import relu_``); ``math``/``numpy``/``random``/
``statistics`` functions give no origin. A call of an in-project function applies
its summary (:mod:`.summaries`): its return in terms of the arguments, its writes to
parameters (reported at this call when the callee is a mutating helper), and it is
recorded as a call site for the project pass (parameter origins, grad context, fix
safety from callers). ``self.m(...)`` runs the method seen from the class or any
override of it in an in-project subclass: each target is applied and recorded
(:meth:`CallsMixin.project_calls`; ``docs/analysis.md``, *Overridden methods*).
"""
from __future__ import annotations

import ast
import os
from typing import Dict, List, Optional, Tuple

from ..findings import Origin, RootKind, Step, StepKind, WriteKind
from . import model_outputs
from ..torch_facts import ops
from .astutil import call_text, dotted_name, is_false, is_str_constant, is_true, kw, last_name, short
from .expressions import cut_tracking, index_text, is_basic_index
from .names import FUNCTIONAL_NAMESPACE, TORCH_NAMESPACES, is_non_tensor_library, is_torch, qualify, qualify_dotted
from .reporting import HelperWrite
from .statements import EMPTY, cap, contradicted, origin_key
from .summaries import CallSite, function_of, no_grad_value, param_index, with_steps

_DTYPE_CASTS = frozenset({"float", "half", "double", "bfloat16", "long", "int", "short", "bool", "byte", "char"})


_DROPOUTS = ("dropout", "alpha_dropout", "feature_alpha_dropout")


def _dropout_condition(node: ast.Call, name: str) -> Tuple[bool, Optional[str]]:
    """Whether ``F.<name>(x, p, training, inplace=True)`` may write at all, and the run-time condition
    under which it does, when the call leaves one: dropout writes only in training mode with ``p``
    above 0 (``p=0`` or ``training=False`` return the input untouched; docs/pytorch-facts.md#dropout).
    ``training`` defaults to True for ``dropout``/``dropout1d``/..., to False for the alpha dropouts."""
    position = ops.INPLACE_POSITION.get(name, -1)
    training = kw(node, "training")
    if training is None and len(node.args) > position - 1 >= 1:
        training = node.args[position - 1]
    p = kw(node, "p")
    if p is None and len(node.args) > position - 2 >= 1:
        p = node.args[position - 2]
    parts = []
    if training is None:
        if name.startswith(("alpha_dropout", "feature_alpha_dropout")):
            return False, None
    elif is_false(training):
        return False, None
    elif not is_true(training):
        parts.append(f"`{short(training)}` is true")
    if p is not None:
        value = p.value if isinstance(p, ast.Constant) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if value == 0:
                return False, None
        else:
            parts.append(f"the dropout probability `{short(p)}` is above 0")
    return True, " and ".join(parts) or None


def _module_condition(module: str, name: Optional[str]) -> Optional[str]:
    """A dropout module built with ``inplace=True`` and applied through a name (``self.drop(x)``)
    writes only while that module is in training mode (``model.eval()`` turns it off)."""
    if name and "Dropout" in module.rpartition(".")[2]:
        return f"`{name}` is in training mode"
    return None


def inplace_flag(node: ast.Call, name: str) -> bool:
    """``F.relu(x, inplace=True)`` or ``F.relu(x, True)`` (by the parameter's position)."""
    where = ops.inplace_argument(name, len(node.args), [k.arg for k in node.keywords])
    return is_true(kw(node, "inplace") if where == "inplace" else None if where is None else node.args[where])


def tensor_split_args(node: ast.Call) -> bool:
    """``x.split(3)``, ``x.split([2, 1], dim=-1)``: tensor-style arguments, not ``str.split(sep)``."""
    if kw(node, "dim") is not None or kw(node, "split_size") is not None or kw(node, "split_size_or_sections") is not None:
        return True
    if not node.args:
        return False
    first = node.args[0]
    if isinstance(first, ast.Constant):
        return isinstance(first.value, int) and not isinstance(first.value, bool)
    return isinstance(first, (ast.List, ast.Tuple, ast.BinOp))


def _is_bool_expr(node: ast.AST) -> bool:
    return isinstance(node, ast.Compare) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.Invert))
                                            and _is_bool_expr(node.operand))


#: functions and methods whose result is a bool tensor
_BOOL_RESULTS = frozenset({"logical_and", "logical_or", "logical_not", "logical_xor", "isnan", "isinf", "isfinite",
                           "isin", "eq", "ne", "gt", "lt", "ge", "le", "bool", "isclose"})


def _is_dtype_conversion(node: ast.Call, name: str) -> bool:
    if name in _DTYPE_CASTS:
        return True
    if name == "to":
        if kw(node, "dtype") is not None:
            return True
        return any((dotted_name(a) or "").startswith("torch.") for a in node.args)
    return False


class CallsMixin:
    """``eval_Call`` and what a call returns."""

    def eval_Call(self, node: ast.Call) -> frozenset:
        func = node.func
        # evaluate arguments first (their own writes come first, as at run time)
        args = [self.eval(a) for a in node.args]
        kwargs = {k.arg: self.eval(k.value) for k in node.keywords}

        if isinstance(func, ast.Attribute):
            func_dotted = dotted_name(func)  # the receiver's is its head (None when not a dotted name)
            ns, imported = qualify_dotted(func_dotted.rpartition(".")[0] if func_dotted else None, self.names,
                                          self.is_local_name)
            if ns == "torch.Tensor" and node.args:
                # torch.Tensor.div_(x, t) is x.div_(t)
                return self.method_call(node, func.attr, node.args[0], args[0])
            if ns in TORCH_NAMESPACES:
                return self.function_call(node, func.attr, ns == FUNCTIONAL_NAMESPACE, args, kwargs, ns)
            if is_non_tensor_library(ns):
                return EMPTY  # math.sqrt, np.exp, random.random: never tensors
            callees = self.resolve_callees(func, (ns, imported)) if self.ctx is not None else ()
            if callees:
                return self.project_calls(node, callees, args, kwargs)
            forwards = self.submodule_forwards(func)
            if forwards:
                found = self.project_calls(node, forwards, args, kwargs, submodule=func.attr)
                if not self.settings.is_model_call_name(func.attr):
                    return found
                # `self.actor_module(x)`: still a model's output as the patterns say, and what its forward returns
                return cap(found | self.method_call(node, func.attr, func.value, self.eval(func.value)))
            recv = self.eval(func.value)
            inplace_module = self.inplace_modules.get(func_dotted or "")
            if inplace_module and node.args:
                self.report(node, WriteKind.INPLACE_KWARG, f"`{inplace_module}(inplace=True)`", node.args[0], args[0],
                            condition=_module_condition(inplace_module, func_dotted))
                return self._inplace_result(node, inplace_module, args[0])
            result = self.method_call(node, func.attr, func.value, recv)
            self.hand_callables_to_model(node, result)
            return result

        if isinstance(func, ast.Call):
            self.eval(func)
            module = model_outputs.inplace_module(func)
            if module and node.args:
                self.report(node, WriteKind.INPLACE_KWARG, f"`{module}(inplace=True)`", node.args[0], args[0])
                return self._inplace_result(node, module, args[0])
            return EMPTY

        if isinstance(func, ast.Name):
            if func.id == "getattr" and len(node.args) == 2 and is_str_constant(node.args[1]):
                # getattr(out, "logits") is out.logits
                attribute = ast.copy_location(ast.Attribute(value=node.args[0], attr=node.args[1].value,
                                                            ctx=ast.Load()), node)
                ast.fix_missing_locations(attribute)
                return self.eval_Attribute(attribute)
            module = self.inplace_modules.get(func.id)
            if module and node.args:
                self.report(node, WriteKind.INPLACE_KWARG, f"`{module}(inplace=True)`", node.args[0], args[0],
                            condition=_module_condition(module, func.id))
                return self._inplace_result(node, module, args[0])
            qual, imported = qualify(func, self.names, self.is_local_name)
            if imported and qual is not None:
                head, _, name = qual.rpartition(".")
                if head in TORCH_NAMESPACES:  # from torch.nn.functional import relu_
                    return self.function_call(node, name, head == FUNCTIONAL_NAMESPACE, args, kwargs, head)
                if is_non_tensor_library(qual):
                    return EMPTY
            callee = self.resolve_callee(func)
            if callee is not None:
                return self.project_call(node, callee, args, kwargs)
            refs = [function_of(o) for o in self.env.get(func.id, EMPTY)]
            if any(refs):  # func = _single_tensor_adam if ... else _multi_tensor_adam; func(...)
                out = EMPTY
                for ref in refs:
                    if ref is not None:
                        out = cap(out | self.project_call(node, ref, args, kwargs))
                return out
            if self.settings.is_model_call_name(func.id):
                result = frozenset({Origin(RootKind.MODEL_OUTPUT_OBJECT, f"{func.id}(...)", node.lineno,
                                           root_no_grad=self.no_grad)})
                self.hand_callables_to_model(node, result)
                return result
            return EMPTY
        self.eval(func)
        return EMPTY

    def _inplace_result(self, node: ast.Call, name: str, first: frozenset) -> frozenset:
        """What an in-place activation returns: its input, and for ``relu_``/``sigmoid_``/... an output
        its backward reads (a later in-place write to it fails at backward)."""
        if model_outputs.saves_output_inplace(name) and not self.no_grad:
            return cap(first | {Origin(RootKind.SAVED_OUTPUT, short(node), node.lineno)})
        return first

    def function_call(self, node: ast.Call, name: str, functional: bool, args: List[frozenset],
                      kwargs: Dict[str, frozenset], namespace: str = "torch") -> frozenset:
        """``torch.<name>(...)`` / ``F.<name>(...)`` / ``torch.linalg.<name>(...)`` (any alias; ``namespace``
        is the resolved module)."""
        result = self._function_call(node, name, functional, args, kwargs, namespace)
        entry = ops.saved_for_backward(namespace, name)
        if entry and entry[2] and not self.no_grad and not self.read_without_grad(node):
            given = list(node.args)
            if not given and kw(node, "input") is not None:
                given = [kw(node, "input")]
            for position in entry[2]:
                if position < len(given):
                    self.mark_saved_input(given[position], f"{ast.unparse(node.func)}", node.lineno)
        return result

    def read_without_grad(self, node: ast.expr) -> bool:
        """What ``node`` computes is only read by something that takes no gradient (``x.max().item()``,
        ``int(x.sum())``, ``x.amax() > 0``, ``x.max().long()``): no backward runs through it, so what its op
        saved for backward is never read (docs/pytorch-facts.md#saved-input)."""
        stmt = self.stmt_stack[-1] if self.stmt_stack else None
        if stmt is None:
            return False
        # the statement's own expressions: an `if`/`for`/`with` header, not the blocks under it
        heads = [child for name, child in ast.iter_fields(stmt) if name not in _BLOCK_FIELDS]
        nodes = [n for head in heads for item in (head if isinstance(head, list) else [head])
                 if isinstance(item, ast.AST) for n in ast.walk(item)]
        for parent in [stmt] + nodes:
            for child in ast.iter_child_nodes(parent):
                if child is not node:
                    continue
                if isinstance(parent, ast.Attribute) and parent.attr in _READ_WITHOUT_GRAD_METHODS:
                    return True
                if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) \
                        and parent.func.id in _READ_WITHOUT_GRAD_FUNCTIONS and node in parent.args:
                    return True
                return isinstance(parent, ast.Compare)
        return False

    def mark_saved_input(self, arg: ast.expr, op: str, line: int) -> None:
        """``arg`` was read by the backward of ``op``, which ran with grad on: a later in-place write to the
        tensor the name holds fails at backward when it requires grad (docs/pytorch-facts.md#saved-input).
        Only names (and dotted names) whose value is tracked and may require grad by evidence are marked
        (:attr:`Origin.grad_evidence`); a parameter's placeholder is marked too, for its callers to decide."""
        key = dotted_name(arg)
        origins = self.env.get(key) if key is not None else None
        if not origins:
            return
        step = Step(StepKind.SAVED_INPUT, op, line)
        marked = [o.extend(step) if o.is_tensor and (param_index(o) is not None or o.grad_evidence) else o
                  for o in origins]
        self.env[key] = cap(marked)
        self.bindings.append((key, self.env[key]))  # an `if` merges the keys its arms changed

    def _function_call(self, node: ast.Call, name: str, functional: bool, args: List[frozenset],
                       kwargs: Dict[str, frozenset], namespace: str) -> frozenset:
        qual = ast.unparse(node.func)
        out_node = kw(node, "out")
        if out_node is not None and not isinstance(out_node, (ast.Tuple, ast.List)):
            self.report(node, WriteKind.OUT_KWARG, f"`{qual}(..., out=...)`", out_node, kwargs.get("out", EMPTY))
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
            if name.startswith(_DROPOUTS):
                written, condition = _dropout_condition(node, name)
                if not written:
                    return first_origins  # F.dropout(training=False, inplace=True) or p=0 writes nothing
            self.report(node, WriteKind.INPLACE_KWARG, f"`{qual}(..., inplace=True)`", first, first_origins,
                        condition=condition)
            return self._inplace_result(node, name, first_origins)
        if ops.saves_output(namespace, name) and not inplace_flag(node, name):
            if no_grad_value(first_origins):
                return frozenset({Origin(RootKind.FRESH, short(node), node.lineno, root_no_grad=True)})
            if not first_origins and not self.grad_source(first) and self._guess_of(first, first_origins) < 0:
                return EMPTY  # nothing says the input requires grad: whether the output is saved is unknown
            return frozenset({Origin(RootKind.SAVED_OUTPUT, short(node), node.lineno, root_no_grad=self.no_grad,
                                     guess_param=self._guess_of(first, first_origins))})
        if name in ops.FACTORY_FUNCTIONS:
            return self._factory(node)
        if name in ops.VIEW_METHODS or name in ops.MAY_ALIAS_METHODS or name in ops.MULTI_VIEW_METHODS \
                or name in ops.EXPAND_METHODS:
            return self.method_call(node, name, first, first_origins, functional=True)
        if name in ops.ARITHMETIC and self._inputs_need_no_grad(node, args, kwargs):
            return frozenset({Origin(RootKind.FRESH, short(node), node.lineno, root_no_grad=True)})
        return EMPTY

    def _display_value(self, node: Optional[ast.expr]) -> frozenset:
        """What a list, tuple, dict or set display passes (``[mel, mel + post(mel)]``): its elements' origins
        (the callee reaches them as items, ``mel, post = outputs``), or, when none is tracked, a plain
        container known to be nothing risky; so the callee's parameter is decided by what the callers
        pass, not by its name. EMPTY for anything else."""
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            parts = node.elts
        elif isinstance(node, ast.Dict):
            parts = [p for p in node.values if p is not None]
        else:
            return EMPTY
        if any(isinstance(p, ast.Starred) for p in parts) or (isinstance(node, ast.Dict) and None in node.keys):
            return EMPTY
        held = cap(o for p in parts for o in self.eval_quiet(p))
        return held or frozenset({Origin(RootKind.FRESH, short(node), node.lineno, root_no_grad=True)})

    def _is_tensor_argument(self, node: ast.expr) -> bool:
        """``node`` is proven a tensor (a torch op's result, a model output, a ``torch.Tensor`` parameter)."""
        if isinstance(node, (ast.Constant, ast.List, ast.Tuple, ast.UnaryOp)):
            return False
        origins = self.eval_quiet(node)
        return any(o.is_tensor and o.certain_tensor and param_index(o) is None for o in origins)

    def _inputs_need_no_grad(self, node: ast.Call, args: List[frozenset], kwargs: Dict[str, frozenset],
                             receiver: Optional[frozenset] = None) -> bool:
        """Every tensor input is known to need no grad (numbers, constants and bool masks aside; the elements of
        a list or tuple argument, as ``torch.cat((a, b))`` takes them, each count)."""
        values = []
        for n, o in zip(node.args, args):
            if isinstance(n, (ast.List, ast.Tuple)) and not o:
                values.extend((e, self.eval_quiet(e)) for e in n.elts)
            else:
                values.append((n, o))
        inputs = ([receiver] if receiver is not None else []) + [
            o for n, o in values if o or not (_is_literal(n) or self.is_bool_value(n))]
        return bool(inputs) and all(no_grad_value(o) for o in inputs)

    def _factory(self, node: ast.Call) -> frozenset:
        if is_true(kw(node, "requires_grad")):
            return frozenset({Origin(RootKind.TENSOR, short(node), node.lineno, root_no_grad=self.no_grad)})
        return frozenset({Origin(RootKind.FRESH, short(node), node.lineno, root_no_grad=True)})

    def grad_source(self, node: Optional[ast.expr]) -> bool:
        """An untracked expression that requires grad by evidence: what a submodule returns in a module's
        method (``self.fc(x)``, a name bound to one), an arithmetic or call of such values. Anything else
        untracked is unknown, and an op on it saves nothing the analysis can speak for."""
        if node is None:
            return False
        if isinstance(node, ast.Name):
            # a parameter (known only as itself when the walk has no project: a snippet) is a guess that the
            # callers decide (``Origin.guess_param``)
            return node.id in self.submodule_results or (
                self.ctx is None and node.id in self.params and node.id != self.self_name)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            value = node.func.value
            if isinstance(value, ast.Name) and value.id == self.self_name and self.cls_qual:
                return True  # self.fc(x), self.proj(h)
            return self.grad_source(value)  # self.fc(x).view(...), h.float()
        if isinstance(node, ast.Call):
            return any(self.grad_source(a) for a in node.args)  # torch.sum(self.fc(x) * y)
        if isinstance(node, ast.BinOp):
            return self.grad_source(node.left) or self.grad_source(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.grad_source(node.operand)
        if isinstance(node, ast.Subscript):
            return self.grad_source(node.value)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == self.self_name \
                and self.cls_qual and self.ctx is not None:
            # `self.raw`, set to `nn.Parameter(...)` in `__init__`: a parameter requires grad
            owner = self.ctx.attribute_builder(self.cls_qual, node.attr)
            return owner is not None and owner.rsplit(".", 1)[-1] == "Parameter"
        return False

    def _guess_of(self, node: ast.expr, origins: frozenset) -> int:
        """:func:`_guessed_param` of an op's input, or, untracked, the index of the parameter it names."""
        if origins:
            return _guessed_param(origins)
        if isinstance(node, ast.Name) and node.id in self.params and node.id not in self.submodule_results:
            return list(self.params).index(node.id)
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Call, ast.Subscript)):
            # `(q @ k.transpose(-2, -1)).softmax(-1)`: an expression of parameters alone (and literals) is a
            # guess of the first one it reads (callers decide; with no in-project call it stays). One that
            # also reads a local (a factory's tensor: `(g / (2 * sigma ** 2)).exp()`) is not: the local
            # speaks for itself, and the parameter may be a number
            names = [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id != self.self_name]
            if any(n in self.assigned and n not in self.params for n in names):
                return -1
            found = [list(self.params).index(n) for n in names
                     if n in self.params and n not in self.submodule_results]
            return min(found) if found else -1
        return -1

    def _is_self(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id == self.self_name

    def method_call(self, node: ast.Call, name: str, recv_node: ast.expr, recv: frozenset,
                    functional: bool = False) -> frozenset:
        """``recv.<name>(...)``; ``functional`` for ``torch.<name>(recv, ...)`` (the receiver is surely a tensor)."""
        result = self._method_call(node, name, recv_node, recv, functional)
        if not functional and not self.no_grad:
            entry = ops.saved_for_backward(ops.TENSOR_METHOD, name)
            if entry and entry[2] and any(o.is_tensor for o in recv) and not self._is_self(recv_node) \
                    and not self.read_without_grad(node):
                given = [recv_node] + list(node.args)
                for position in entry[2]:
                    if position < len(given):
                        self.mark_saved_input(given[position], f"{short(recv_node)}.{name}", node.lineno)
        return result

    def _method_call(self, node: ast.Call, name: str, recv_node: ast.expr, recv: frozenset,
                     functional: bool = False) -> frozenset:
        line = node.lineno
        if name in ops.TENSOR_INPLACE_METHODS:
            if not recv and isinstance(recv_node, ast.Subscript) and not is_basic_index(recv_node.slice) \
                    and not _is_bool_expr(recv_node.slice):
                # x[tuple(slices)].copy_(src): an index we cannot read may be basic slicing (a view)
                base = self.eval_quiet(recv_node.value)
                recv = cap(o.extend(Step(StepKind.VIEW, index_text(recv_node.slice), line, self.no_grad))
                           for o in base if o.is_tensor and not model_outputs.is_guessed_object(o))
            self.report(node, WriteKind.METHOD, f"`{name}`", recv_node, recv, name)
            return cap(o.extend(Step(StepKind.ALIAS, f".{name}()", line)) for o in recv if o.is_tensor)
        if name == "detach":
            return cut_tracking(recv, ".detach()", line, keep_saved=True)
        recv = frozenset(o for o in recv if not model_outputs.is_guessed_object(o)) if recv else recv
        known = _known(recv)
        if name in ops.VIEW_METHODS:
            return self.view_of(recv_node, recv, StepKind.VIEW, call_text(node, name), line)
        if name in ops.MAY_ALIAS_METHODS:
            if name == "contiguous":  # an expanded (stride-0) tensor is never contiguous: this copies it
                recv = cap(o for o in recv if not o.has(StepKind.EXPAND))
            if _is_dtype_conversion(node, name) and self.is_bool_value(recv_node):
                return EMPTY  # (ids != pad).view(...).expand(...).float(): a bool mask converted is a copy
            if _to_integer_dtype(node, name) and not any(o.has(StepKind.EXPAND) for o in recv):
                # x.to(torch.long): integer and bool tensors never require grad (docs/pytorch-facts.md#grad-off);
                # from a float tensor it is a copy (an expanded one may be returned as is when already integer)
                return frozenset({Origin(RootKind.FRESH, short(node), line, root_no_grad=True)})
            return self.view_of(recv_node, recv, StepKind.MAY_ALIAS, call_text(node, name), line)
        if name in ops.EXPAND_METHODS:
            return self.view_of(recv_node, recv, StepKind.EXPAND, call_text(node, name), line, any_base=True)
        if name in ops.MULTI_VIEW_METHODS:
            # str.split(",") and str.split() are not tensor splits
            tensor_like = known or name != "split" or functional or tensor_split_args(node)
            if not tensor_like:
                return EMPTY
            if not known and not functional and name != "tensor_split" and node.args \
                    and self._is_tensor_argument(node.args[0]):
                return EMPTY  # tok.split(x), sampler.chunk(x, 2): a tensor's chunk/split/unbind take sizes and dims
            return self.view_of(recv_node, recv, StepKind.MULTI_VIEW, call_text(node, name), line, any_base=True,
                                certain=functional)
        if ops.saves_output(ops.TENSOR_METHOD, name) and (name in ops.SAVES_OUTPUT_ANY_RECEIVER or any(
                o.is_tensor for o in known) or (recv and not self._is_self(recv_node) and _literal_args(node))):
            if no_grad_value(known) and known == recv or (name in _STATE_ROOTS and recv and not known
                                                          and self._accumulated_params(recv)):
                return frozenset({Origin(RootKind.FRESH, short(node), line, root_no_grad=True)})
            if not recv and not self.grad_source(recv_node) and self._guess_of(recv_node, recv) < 0:
                return EMPTY  # nothing says the receiver requires grad: whether the output is saved is unknown
            return frozenset({Origin(RootKind.SAVED_OUTPUT, short(node), line, root_no_grad=self.no_grad,
                                     guess_param=self._guess_of(recv_node, recv))})
        if name in ops.DTENSOR_LOCAL_METHODS:
            detached = (known and all(o.root_no_grad for o in known)) or _is_detached(recv_node)
            return frozenset({Origin(RootKind.CUSTOM_FUNCTION, short(node), line,
                                     root_no_grad=self.no_grad or bool(detached))})
        if name == "apply" and (last_name(recv_node) or "a").lstrip("_")[:1].isupper():
            if self.forward_returns_fresh(recv_node):
                return EMPTY  # forward returns a new tensor, not a view of an input: in place on it is legal
            given = [(a, self.eval_quiet(a)) for a in node.args]
            if given and all(_needs_no_grad_arg(a, o) for a, o in given):
                # every tensor input needs no grad (`.data`, `.detach()`, a factory's): autograd does not track
                # the output, so it is neither a custom-Function view nor requires grad
                return frozenset({Origin(RootKind.FRESH, short(node), line, root_no_grad=True)})
            return frozenset({Origin(RootKind.CUSTOM_FUNCTION, f"{short(recv_node)}.apply(...)", line,
                                     root_no_grad=self.no_grad)})
        if name == "forward" and self.settings.is_model_call_name(last_name(recv_node) or ""):
            return frozenset({Origin(RootKind.MODEL_OUTPUT_OBJECT, f"{short(recv_node)}.forward(...)", line,
                                     root_no_grad=self.no_grad)})
        if self.settings.is_model_call_name(name) and not known:
            return frozenset({Origin(RootKind.MODEL_OUTPUT_OBJECT, f"{short(node.func)}(...)", line,
                                     root_no_grad=self.no_grad)})
        if name in ops.ARITHMETIC and known == recv and no_grad_value(known):
            args = [self.eval_quiet(a) for a in node.args] if node.args else []
            if self._inputs_need_no_grad(node, args, {}, receiver=known):
                return frozenset({Origin(RootKind.FRESH, short(node), line, root_no_grad=True)})
        return EMPTY

    def is_bool_value(self, node: ast.expr) -> bool:
        """``node`` is a bool tensor: a comparison or ``torch.logical_*(...)`` (or a name bound to one), and
        views of it (``mask.view(b, 1, 1, L).expand(...)``); a dtype conversion of it is not."""
        while True:
            if _is_bool_expr(node) or (isinstance(node, ast.Name) and node.id in self.bool_names):
                return True
            if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Attribute, ast.Name)):
                return isinstance(node, ast.Subscript) and self.is_bool_value(node.value)
            name = last_name(node.func)
            if name in _BOOL_RESULTS:
                return True
            if not isinstance(node.func, ast.Attribute) or _is_dtype_conversion(node, name) or not (
                    name in ops.VIEW_METHODS or name in ops.EXPAND_METHODS or name in ops.MAY_ALIAS_METHODS):
                return False
            node = node.func.value

    def _accumulated_params(self, recv: frozenset) -> bool:
        """``recv`` is a parameter this function already updated in place (``exp_avg_sq.mul_(b2).addcmul_(g, g)``,
        then ``exp_avg_sq.sqrt().add_(eps)``). Guess: it is state (an optimizer's moments, a running
        buffer), which needs no grad; an in-place update of a leaf that needs grad would have raised
        already (docs/pytorch-facts.md#leaf-requires-grad). Only writes made with grad on count: where
        grad is off, a weight that needs grad is updated in place legally (``w.clamp_()`` under
        ``torch.no_grad()``), and what it computes later still saves its output."""
        written = {w.index for w in self.param_writes if w.via is None and not w.steps and not w.no_grad}
        return all(param_index(o) in written and not o.steps for o in recv)

    def view_of(self, recv_node: ast.expr, recv: frozenset, kind: StepKind, text: str, line: int,
                any_base: bool = False, certain: bool = False) -> frozenset:
        """Extend ``recv``'s origins by a view step; views of untracked bases start a chain when it matters."""
        step = Step(kind, text, line, self.no_grad)
        if _known(recv):
            return cap(o.extend(step) for o in recv if o.is_tensor or kind is not StepKind.MAY_ALIAS)
        placeholders = frozenset(o.extend(step) for o in recv)
        if any_base or (self.no_grad and kind is StepKind.VIEW):
            key = dotted_name(recv_node)
            made_in_no_grad = self.no_grad and (key is None or key in self.nograd_bound)
            # expand/broadcast_to and view ops exist on tensors only; torch.split(x, ...) proves x a tensor
            sure = kind is not StepKind.MULTI_VIEW or certain
            root = Origin(RootKind.TENSOR, short(recv_node), line, root_no_grad=made_in_no_grad, certain_tensor=sure,
                          guessed=True)
            return placeholders | {root.extend(step)}
        return placeholders

    # ---- in-project calls

    def forward_returns_fresh(self, cls_node: ast.expr) -> bool:
        """``Fn.apply(x)`` of an in-project ``autograd.Function`` whose ``forward`` (by its summary) never
        returns one of its inputs or a view of one."""
        ctx = self.ctx
        if ctx is None or not isinstance(cls_node, (ast.Name, ast.Attribute)):
            return False
        qual, imported = qualify(cls_node, self.names, self.is_local_name)
        if not imported:
            qual = f"{ctx.module}.{dotted_name(cls_node)}"  # a class of this module
        found = ctx.resolve(qual)
        if not found or found[0] != "class":
            return False
        forward = ctx.method(found[1], "forward")
        summary = ctx.summary(forward[0]) if forward else None
        return summary is not None and not any(param_index(o) is not None for o in summary.returns)

    def resolve_callee(self, func: ast.expr, receiver: Optional[Tuple[Optional[str], bool]] = None
                       ) -> Optional[Tuple[str, int]]:
        """The first of :meth:`resolve_callees` (the method seen from ``self``'s own class), or None."""
        found = self.resolve_callees(func, receiver)
        return found[0] if found else None

    def resolve_callees(self, func: ast.expr, receiver: Optional[Tuple[Optional[str], bool]] = None
                        ) -> List[Tuple[str, int]]:
        """``(qualified name, bound arguments)`` of each in-project function the call may run (see
        :mod:`.project`): one, except ``self.m(...)`` and ``self.attr.m(...)``, which dispatch to the
        method seen from the class and to its overrides in every in-project subclass.
        ``receiver``: ``qualify(func.value)`` when the caller has it already."""
        ctx = self.ctx
        if ctx is None:
            return []
        if isinstance(func, ast.Name):
            name = func.id
            if name in self.local_funcs:
                return [(self.local_funcs[name], 0)]
            if name in self.env or self.is_param(name):
                return []
            found = ctx.function(self.names[name] if name in self.names else f"{ctx.module}.{name}")
            return [found] if found else []
        if not isinstance(func, ast.Attribute):
            return []
        value = func.value
        if isinstance(value, ast.Name) and value.id == self.self_name and self.cls_qual:
            if f"{value.id}.{func.attr}" in self.env:
                return []
            return [(q, 0 if static else 1) for q, static in ctx.dispatch(self.cls_qual, func.attr)]
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) \
                and value.value.id == self.self_name and self.cls_qual:
            # self.runner.execute(...) where __init__ did self.runner = Runner(...)
            owner = ctx.attribute_class(self.cls_qual, value.attr)
            return [(q, 0 if static else 1) for q, static in ctx.dispatch(owner, func.attr)] if owner else []
        if isinstance(value, ast.Name) and value.id in self.local_instances:
            # step = BeamStep(...); step.advance(...)
            return [(q, 0 if static else 1) for q, static in ctx.dispatch(self.local_instances[value.id], func.attr)]
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super" \
                and self.cls_qual:
            found = ctx.method(self.cls_qual, func.attr, skip_self=True)
            return [(found[0], 0 if found[1] else 1)] if found else []
        if receiver is None:
            receiver = qualify(value, self.names, self.is_local_name)
        ns, imported = receiver
        found = None
        if imported and ns is not None and not is_torch(ns):
            found = ctx.function(f"{ns}.{func.attr}")
        elif isinstance(value, ast.Name) and value.id in ctx.index_classes():
            found = ctx.function(f"{ctx.module}.{value.id}.{func.attr}")  # Cls.static_method(...) of this module
        return [found] if found else []

    def submodule_forwards(self, func: ast.Attribute) -> List[Tuple[str, int]]:
        """``self.kernel(x)`` where ``__init__`` built ``self.kernel`` from an in-project class (or took it
        as a parameter annotated with one): the ``forward`` of that class and of each in-project subclass
        that overrides it (class-hierarchy analysis), as for ``self.kernel.forward(x)``. Empty when the
        class is not the project's (``nn.Linear``) or none of them defines ``forward``."""
        ctx = self.ctx
        value = func.value
        if ctx is None or not self.cls_qual or not isinstance(value, ast.Name) or value.id != self.self_name \
                or f"{value.id}.{func.attr}" in self.env:
            return []
        owner = ctx.attribute_class(self.cls_qual, func.attr)
        if owner is None:
            return []
        return [(q, 0 if static else 1) for q, static in ctx.dispatch(owner, "forward")]

    def callable_refs(self, node: ast.expr) -> List[Tuple[str, int]]:
        """A function value: ``f``, ``self.m``, ``partial(self.m, a)`` -> each (qualified name, bound
        arguments) it may be (``self.m``: the method and its overrides, as for a call)."""
        if isinstance(node, ast.Call) and node.args:
            qual, _ = qualify(node.func, self.names, self.is_local_name)
            if qual in ("functools.partial", "partial"):
                extra = len(node.args) - 1
                return [(q, bound + extra) for q, bound in self.callable_refs(node.args[0])]
            return []
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self.resolve_callees(node)
        return []

    def hand_callables_to_model(self, node: ast.Call, result: frozenset) -> None:
        """``model(ids, logits_processor=f)``: ``f`` receives the model's output as its first argument."""
        if self.ctx is None or not self.recording or not any(
                o.root is RootKind.MODEL_OUTPUT_OBJECT and o.root_line == node.lineno for o in result):
            return
        for value in list(node.args) + [k.value for k in node.keywords]:
            for qual, bound in self.callable_refs(value):
                given = Origin(RootKind.MODEL_OUTPUT, f"{short(node.func)}(...)", node.lineno,
                               root_no_grad=self.no_grad)
                self.ctx.calls.append(CallSite(self.qual, qual, self.ctx.path, value.lineno, value.col_offset,
                                               ((bound, frozenset({given})),), self.no_grad, callback=True))

    def project_calls(self, node: ast.Call, callees: List[Tuple[str, int]], args: List[frozenset],
                      kwargs: Dict[str, frozenset], submodule: Optional[str] = None) -> frozenset:
        """A call that may run any of ``callees`` (a method and its overrides): each is a call site of its
        own (origins flow into every target, each counts for its grad context and fix safety), a write
        of any target's mutating helper is reported here, and the value is the union of their returns."""
        if len(callees) == 1:
            return self.project_call(node, callees[0], args, kwargs, submodule)
        out = EMPTY
        for callee in callees:
            out = cap(out | self.project_call(node, callee, args, kwargs, submodule))
        return out

    def where(self, path: str, line: int) -> str:
        """``line 5`` in this file, ``pkg/helpers.py:5`` (relative to the project root) in another."""
        if path == self.ctx.path:
            return f"line {line}"
        root = self.ctx.root
        if root is not None:
            try:
                path = os.path.relpath(path, root)
            except ValueError:
                pass
        return f"{path}:{line}"

    def out_of_place_twin(self, qual: str, params: Tuple[str, ...], index: int) -> Optional[str]:
        """The out-of-place twin of the in-place helper ``qual`` (``scale_`` -> ``scale``): a function of
        the same module or class, with the same parameters, whose summary writes none of them."""
        head, _, name = qual.rpartition(".")
        if not name.endswith("_") or name.endswith("__") or len(name) < 2:
            return None
        twin = f"{head}.{name[:-1]}"
        found = self.ctx.params_of(twin)
        if found is None or tuple(found[0]) != tuple(params):
            return None
        summary = self.ctx.summary(twin)
        if summary is not None and summary.writes:
            return None
        return name[:-1]

    def project_call(self, node: ast.Call, callee: Tuple[str, int], args: List[frozenset],
                     kwargs: Dict[str, frozenset], submodule: Optional[str] = None) -> frozenset:
        """``submodule``: the attribute of ``self`` the call went through (``kernel`` of ``self.kernel(x)``,
        ``callee`` one class's ``forward``): what it returns names the class it is risky for."""
        qual, bound = callee
        ctx = self.ctx
        summary = ctx.summary(qual)
        params, static = ctx.params_of(qual) or ((), False)
        binding: Dict[int, Tuple[frozenset, Optional[ast.expr]]] = {}
        position = bound
        for arg_node, origins in zip(node.args, args):
            if isinstance(arg_node, ast.Starred):
                break
            if position < len(params):
                binding[position] = (origins, arg_node)
            position += 1
        for k in node.keywords:
            if k.arg is not None and k.arg in params:
                binding[params.index(k.arg)] = (kwargs.get(k.arg, EMPTY), k.value)
        short_name = qual.rsplit(".", 1)[-1]
        unread = set()
        if summary is not None:
            for w in summary.writes:
                if w.index not in binding or any(g not in binding for g in w.guard):
                    continue
                # a mutating helper's write (it does not use the tensor afterwards), or a write the helper
                # keeps using in another file: reported here too, so that this file shows it; a write the
                # helper keeps using in this file is its own business, reported at the write naming this
                # call, but what this function passes on of its own parameters still reaches it (a caller
                # in another file reports it at its call)
                at_write = w.kept and w.path == ctx.path
                origins, arg_node = binding[w.index]
                helper = w.via or (short_name, w.path, w.line, w.col)
                # named from here: `(line 5)` in this file, `(pkg/helpers.py:5)` in another
                op = f"{w.op} in `{helper[0]}()` ({self.where(helper[1], helper[2])})"
                # a guessed output object (a parameter named `output`) is only read for its tensor fields
                real = [with_steps(o, w.steps) for o in origins
                        if param_index(o) is None and not model_outputs.is_guessed_object(o)]
                if real and not at_write:
                    twin = self.out_of_place_twin(qual, params, w.index) if not w.via else None
                    self.report(node, w.kind, op, arg_node, cap(real), w.op_name, no_fix=True,
                                write_no_grad=w.no_grad, helper=HelperWrite(helper[0], *helper[1:4], twin, w.kept),
                                condition=w.condition)
                for o in sorted(origins, key=origin_key) if len(origins) > 1 else origins:  # a fixed order
                    i = param_index(o)
                    if i is not None:
                        self.record_param_write(node, w.kind, w.op, arg_node, with_steps(o, w.steps), i, helper,
                                                w.op_name, w.no_grad, w.condition)
            for i in summary.observed:
                if i in binding and self.is_unread_after(binding[i][1], node):
                    unread.add(i)
        starred = any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords)
        if self.recording:  # not again from eval_quiet: it may see names bound since (`a, b = z, f(a)`), and
            # ModuleContext.call_sites keeps the later of two records of one call
            passed = ((i, o or self._display_value(n)) for i, (o, n) in sorted(binding.items()))
            ctx.calls.append(CallSite(self.qual, qual, ctx.path, node.lineno, node.col_offset,
                                      tuple((i, o) for i, o in passed if o),
                                      self.no_grad, unread=frozenset(unread),
                                      bound=None if starred else frozenset(binding),
                                      constants=tuple((i, t) for i, t in ((i, _truth(n)) for i, (_, n)
                                                                          in sorted(binding.items()))
                                                      if t is not None)))
        if summary is None or not summary.returns:
            return EMPTY
        out = []
        skip = set()
        when = {}
        if summary.returns_when and not starred:
            values = {i: _truth(arg_node) for i, (_, arg_node) in binding.items()}
            for o, paths in summary.returns_when:
                feasible = [c for c in paths if not contradicted(c, values)]
                if not feasible:
                    skip.add(o)
                else:  # a may-path: the root says on which (`batched_eye(..., copy=False)`)
                    when[o] = ", ".join(f"{params[i]}={truth}" for i, truth, _ in feasible[0] if i < len(params))
        inputs_no_grad = bool(binding) and not starred and bound == 0 and all(
            _needs_no_grad_arg(n, o) for o, n in binding.values())
        for o in summary.returns:
            if o in skip:
                continue  # only paths this call's constant arguments rule out return it
            if inputs_no_grad and o.root in (RootKind.CUSTOM_FUNCTION, RootKind.SAVED_OUTPUT) \
                    and param_index(o) is None:
                # a function (not a method: no module state) given only tensors that need no grad: what it
                # computes from them needs none either (gather_from_region(w.data) -> _Gather.apply(...))
                out.append(Origin(RootKind.FRESH, f"{short_name}(...)", node.lineno, root_no_grad=True))
                continue
            guess = -1
            if o.guess_param >= 0 and param_index(o) is None:
                # saved only if what this call passes for that parameter requires grad: the call decides
                given = binding.get(o.guess_param, (EMPTY, None))[0]
                if any(a.grad_evidence and param_index(a) is None for a in given):
                    guess = -1
                else:
                    guess = _guessed_param(given) if given else -1
                    if guess < 0:
                        continue  # nothing passed for it requires grad by evidence: nothing saved to speak of
            i = param_index(o)
            if i is not None:
                if i in binding:
                    out.extend(with_steps(a, o.steps) for a in binding[i][0])
                continue
            if _guess_of_known_param(o, summary.returns, params, binding):
                continue
            steps = tuple(Step(s.kind, s.text, node.lineno, s.no_grad or self.no_grad) for s in o.steps)
            text = f"{short_name}(..., {when[o]})" if when.get(o) else f"{short_name}(...)"
            condition = o.condition
            if not node.args and not node.keywords and isinstance(node.func, ast.Attribute) \
                    and node.end_col_offset == node.func.end_col_offset and node.end_lineno == node.func.end_lineno:
                text = f"{short(node.func)} (property)"  # `self.scale`, a @property: its getter's fresh result
            elif submodule is not None:
                text = f"{self.self_name}.{submodule}(...)"
                condition = condition or (f"raises when `{submodule}` is `{qual.rsplit('.', 2)[-2]}`, whose "
                                          f"forward returns `{o.root_text}`")
            out.append(Origin(o.root, text, node.lineno, steps, o.root_no_grad or self.no_grad,
                              o.certain_tensor, condition=condition, guess_param=guess))
            if summary.kept:
                # the object is also held where the callee put it: a fix that rebinds its name is unsafe
                reason = f"what `{short_name}()` returns, which is also reachable elsewhere: {summary.kept}"
                self.kept_roots.setdefault((text, node.lineno), reason)
        return cap(out)


#: what optimizers take of a second moment they update in place (Adam, LAMB, Adagrad, RMSprop: ``sqrt``;
#: Adafactor: ``rsqrt``); an activation updated in place and then put through ``sigmoid``/``exp``/``tanh``
#: is not state (it needs grad, and the output saved for backward is still written)
_STATE_ROOTS = frozenset({"sqrt", "rsqrt"})


def _guess_of_known_param(o: Origin, returns: frozenset, params, binding) -> bool:
    """``o`` is the root made from a parameter's ``torch.Tensor`` annotation (named after it, on its
    line, returned with the parameter's placeholder and the same steps) and this call passes something
    known for that parameter: the placeholder brings what was passed, the guess would only add a tensor
    that may need grad (``narrow(w.data)``). Passed something untracked, the guess is all there is."""
    if o.root is not RootKind.TENSOR or o.root_text not in params:
        return False
    i = list(params).index(o.root_text)
    if i not in binding or not any(param_index(a) is None for a in binding[i][0]):
        return False
    return any(param_index(p) == i and p.root_line == o.root_line and p.steps == o.steps for p in returns)


def _is_literal(node: ast.AST) -> bool:
    """``0.5``, ``-1``, ``(1, 2)``: a number or a tuple of them, never a tensor."""
    if isinstance(node, ast.UnaryOp):
        return _is_literal(node.operand)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_is_literal(e) for e in node.elts)
    return isinstance(node, ast.Constant)


#: methods and builtins whose result takes no gradient from their receiver or argument (a Python number, an
#: integer or bool tensor): what an op saved for backward is never read through them
_READ_WITHOUT_GRAD_METHODS = frozenset({"item", "tolist", "numpy", "long", "int", "bool", "short", "byte",
                                        "argmax", "argmin", "nonzero", "any", "all"})
_READ_WITHOUT_GRAD_FUNCTIONS = frozenset({"int", "float", "bool", "len", "round"})
#: the fields of a compound statement that hold its blocks (statements), not its own expressions
_BLOCK_FIELDS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})

_INTEGER_DTYPES = frozenset({"long", "int", "int64", "int32", "int16", "int8", "uint8", "short", "bool", "uint16",
                             "uint32", "uint64"})


def _to_integer_dtype(node: ast.Call, name: str) -> bool:
    """``x.to(torch.long)``, ``x.to(dtype=torch.bool)``, ``x.type(torch.int64)``: an integer or bool result."""
    if name not in ("to", "type"):
        return False
    given = [kw(node, "dtype")] + list(node.args[:2])
    return any(a is not None and (dotted_name(a) or "").startswith("torch.")
               and (dotted_name(a) or "").rsplit(".", 1)[1] in _INTEGER_DTYPES for a in given)


def _truth(node: Optional[ast.expr]) -> Optional[bool]:
    """The truth of a literal argument (``True``, ``0``, ``None``, ``"x"``), else None (unknown)."""
    if isinstance(node, ast.Constant):
        return bool(node.value)
    return None


def _literal_args(node: ast.Call) -> bool:
    """Every positional argument is a literal (``x.norm(2, -1)``, ``x.std()``): a module called on its input
    (``self.norm(h)``, ``ln.norm(h)``) passes a tensor."""
    return all(_is_literal(a) for a in node.args)


def _known(origins: frozenset) -> frozenset:
    """The origins that are not parameter placeholders (what is known at this point of the walk)."""
    return frozenset(o for o in origins if param_index(o) is None) if origins else origins


def _guessed_param(origins: frozenset) -> int:
    """The parameter an op's input is known only as (its placeholder, or the guess its annotation makes), when
    nothing in ``origins`` is evidence that it requires grad; -1 otherwise."""
    if not origins or any(o.grad_evidence and param_index(o) is None for o in origins):
        return -1
    indexes = sorted(({param_index(o) for o in origins} | {o.guess_param for o in origins if o.guess_param >= 0})
                     - {None})
    return indexes[0] if indexes else -1


def _needs_no_grad_arg(node: ast.AST, origins: frozenset) -> bool:
    """An argument that needs no grad: a literal, known origins that need none, or a view chain of a detached
    tensor (``w.data.transpose(0, 1)``, ``x.detach()[0]``)."""
    if _is_literal(node) or no_grad_value(origins):
        return True
    while True:
        if _is_detached(node):
            return True
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr in ops.VIEW_METHODS or node.func.attr in ops.MAY_ALIAS_METHODS):
            node = node.func.value
        else:
            return False


def _is_detached(node: ast.AST) -> bool:
    """``x.detach()`` or ``x.data``: autograd no longer tracks what follows."""
    if isinstance(node, ast.Attribute):
        return node.attr == "data"
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "detach"
