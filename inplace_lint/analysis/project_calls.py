"""Calls of in-project functions: which functions a call may run, and the callee's summary applied there.

A call of an in-project function applies its summary (:mod:`.summaries`): its return in terms of the
arguments, its writes to parameters (reported at this call when the callee is a mutating helper), and it
is recorded as a call site for the project pass (parameter origins, grad context, fix safety from
callers). ``self.m(...)`` runs the method seen from the class or any override of it in an in-project
subclass: each target is applied and recorded (:meth:`ProjectCallsMixin.project_calls`;
``docs/analysis.md``, *Overridden methods*). Callees are looked up through the
:class:`~.context.AnalysisContext`.
"""
from __future__ import annotations

import ast
import os
from typing import Dict, List, Optional, Tuple

from ..findings import Origin, RootKind, Step, saver_parts, saver_text
from ..torch_facts import ops
from . import conditions, grad_flags, model_outputs, tables
from .astutil import dotted_name, short
from .call_grad import guessed_param, needs_no_grad_arg
from .env import EMPTY, cap, contradicted, origin_key
from .expressions import as_tensor
from .names import is_torch, qualify
from ..rules import Write
from .reporting import HelperWrite, match
from .summaries import CallSite, function_of, param_index, ran_without_grad, with_steps


def _saved_text(call: ast.Call, inner: str) -> str:
    """``self.mlp(...) [nn.Linear]``: the call, and what in the callee read its argument (a layer, or an op)."""
    op, layer = saver_parts(inner)
    return saver_text(f"{short(call.func)}(...)", layer or op)


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


#: torch.nn modules that run other modules (which may be anything): not a layer whose implementation we know
_TORCH_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict", "DataParallel", "DistributedDataParallel",
                               "Module"})


#: torch's compilers: what they return computes what the function given does (``torch.jit.trace`` runs it once on
#: its example inputs, then records the ops; ``torch.compile`` runs it as it is when it cannot compile)
_COMPILERS = frozenset({"torch.jit.trace", "torch.jit.script", "torch.compile"})


class ProjectCallsMixin:
    """In-project callees resolved and their summaries applied (a part of :class:`~.dataflow.Scope`)."""

    def _note_saved_arguments(self, node: ast.Call, summary, binding, starred: bool) -> None:
        """The callee read parameter ``i`` for another input's gradient (``FunctionSummary.saves``: a project
        module whose ``forward`` calls ``self.fc(x)``): what this call passes for it is saved too."""
        if not summary.saves or starred or self.no_grad or self.read_without_grad(node):
            return
        for i, inner, _ in summary.saves:
            if i in binding and binding[i][1] is not None:
                self.mark_saved_for_other(binding[i][1], _saved_text(node, inner), node.lineno, node,
                                          surely_tensor=True)

    def own_params_passed(self, binding) -> Dict[int, int]:
        """Callee parameter index -> index of this function's own parameter passed for it as is."""
        passed = {}
        for i, (_, arg_node) in binding.items():
            if isinstance(arg_node, ast.Name) and arg_node.id in self.params \
                    and arg_node.id not in self.rebound_params and arg_node.id not in self.assigned:
                passed[i] = list(self.params).index(arg_node.id)
        return passed

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
        return next(iter(self.resolve_callees(func, receiver)), None)

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
            if name == self.self_name and self.cls_qual:
                # `y_hat = self(x)` in a module's `training_step`: its own `forward` (or the project's `__call__`),
                # as seen from the class and overridden in subclasses
                call = self._own_call(self.cls_qual)
                return [(call[0], 0 if call[1] else 1)] if call else \
                    [(q, 0 if static else 1) for q, static in ctx.dispatch(self.cls_qual, "forward")]
            if name in self.local_instances:
                # `op = _GeneratorOp(...); op()`, `for block in self.blocks: block(x)`: an instance built as exactly
                # that class runs its class's `__call__` where the project defines one, else its `forward`
                # (no subclass's override)
                cls = self.local_instances[name]
                found = self._own_call(cls) or ctx.method(cls, "forward")
                return [(found[0], 0 if found[1] else 1)] if found else []
            if name in self.env or self.is_param(name):
                return []
            found = ctx.function(self.names[name] if name in self.names else f"{ctx.module}.{name}")
            return [found] if found else []
        if isinstance(func, ast.Subscript):
            cls = self.indexed_element_class(func)  # `self.blocks[i](x)`: as a loop over `self.blocks` would
            found = (self._own_call(cls) or ctx.method(cls, "forward")) if cls else None  # (else `UPDATES[kind](p)`)
            return [(found[0], 0 if found[1] else 1)] if found else tables.table_callees(self, func.value)
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

    def _own_call(self, cls: str) -> Optional[Tuple[str, bool]]:
        """The project's ``__call__`` an instance of ``cls`` runs: none for an ``nn.Module`` whose ``__call__``
        comes from a plain mixin (``class Step(nn.Module, Mixin)``: ``nn.Module.__call__`` is first in the method
        order, and it runs ``forward``)."""
        ctx = self.ctx
        found = ctx.method(cls, "__call__")
        if found is not None and ctx.module_class(cls) and not ctx.module_class(found[0].rpartition(".")[0]):
            return None
        return found

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
        found = ctx.dispatch(owner, "forward")
        if not found and ctx.plain_class(owner):
            # `self.stat()` with `self.stat = Stat(...)`, a plain class: its `__call__` (gromo's tensor statistics)
            call = self._own_call(owner)
            return [(call[0], 0 if call[1] else 1)] if call else []
        return [(q, 0 if static else 1) for q, static in found]

    def built_submodule(self, recv_node: ast.expr, name: str) -> bool:
        """``self.<name>(...)`` in a method of an ``nn.Module`` whose ``__init__`` built ``self.<name>`` with the
        project's own code (``self.aggr_module = aggr_resolver(aggr)``): a submodule the module made, whose
        result is an activation of this module, not the output of a model the code was handed (a model-call
        name guesses that only for what comes from outside: a parameter, another library's loader)."""
        if self.ctx is None or not self.cls_qual or not isinstance(recv_node, ast.Name) \
                or recv_node.id != self.self_name:
            return False
        builder = self.ctx.attribute_builder(self.cls_qual, name, default=False)
        return builder is not None and self.ctx.module_class(self.cls_qual) and self.ctx.resolve(builder) is not None

    def torch_layer(self, recv_node: ast.expr, name: str) -> bool:
        """``self.<name>`` was built in ``__init__`` from one of torch's own layers (``self.lm_head =
        nn.Linear(d, v)``): its implementation is visible and is not a custom ``autograd.Function``, so its
        output is an op's result (a plain activation), not a model output, whatever the attribute is called.
        Containers and wrappers (``nn.Sequential``, ``DataParallel``, ``torch.nn.parallel.*``) run modules
        we may not see, so they keep the model-call patterns' guess."""
        if self.ctx is None or not self.cls_qual or not isinstance(recv_node, ast.Name) \
                or recv_node.id != self.self_name:
            return False
        builder = self.ctx.attribute_builder(self.cls_qual, name, default=False) or ""
        if not builder.startswith("torch.nn.") or builder.startswith(("torch.nn.parallel.", "torch.nn.utils.")):
            return False
        return builder.rsplit(".", 1)[-1] not in _TORCH_CONTAINERS

    def _torch_layer_class(self, recv_node: ast.expr, name: str) -> Optional[str]:
        """The class name of the torch layer ``self.<name>`` was built as (``"Linear"``), when :meth:`torch_layer`."""
        if not self.torch_layer(recv_node, name):
            return None
        return (self.ctx.attribute_builder(self.cls_qual, name, default=False) or "").rsplit(".", 1)[-1]

    def frozen_embedding(self, recv_node: ast.expr, name: str) -> bool:
        """``self.<name>`` is an ``nn.Embedding``/``nn.EmbeddingBag`` the class frozen (``self.embed.weight.requires_grad
        = False``, ``self.requires_grad_(False)``): its input is indices, so its output never requires grad."""
        if not (name in self.frozen_layers or model_outputs.ALL_LAYERS in self.frozen_layers):
            return False  # not one built twice or handed in (`self.embed = shared`): that table may train
        return self._torch_layer_class(recv_node, name) in ("Embedding", "EmbeddingBag")

    def weighted_layer(self, recv_node: ast.expr, name: str) -> bool:
        """``self.<name>`` was built in ``__init__`` as one of torch's layers with weights (``nn.Linear``,
        :data:`~inplace_lint.torch_facts.ops.WEIGHTED_LAYERS`), called in the module's ``forward``: its call
        returns one tensor that requires grad where grad is on. Not in other methods (a streaming or decoding
        helper a caller may run under ``no_grad``: funasr's ``forward_chunk``), as for other evidence from a
        torch layer there."""
        if not self.qual.endswith(".forward") \
                or name in self.unsaved_layers or model_outputs.ALL_LAYERS in self.unsaved_layers:
            return False  # frozen (`self.emb.weight.requires_grad = False`), built without weights or twice
        return self._torch_layer_class(recv_node, name) in ops.WEIGHTED_LAYERS

    def compiled(self, node: ast.Call) -> bool:
        """``torch.jit.trace(f, ...)``, ``torch.jit.script(f)``, ``torch.compile(f)`` (:data:`_COMPILERS`)."""
        return bool(node.args) and qualify(node.func, self.names, self.is_local_name)[0] in _COMPILERS

    def callable_refs(self, node: ast.expr) -> List[Tuple[str, int]]:
        """A function value: ``f``, ``self.m``, ``partial(self.m, a)`` -> each (qualified name, bound
        arguments) it may be (``self.m``: the method and its overrides, as for a call)."""
        if isinstance(node, ast.Call) and node.args:
            qual, _ = qualify(node.func, self.names, self.is_local_name)
            if qual in ("functools.partial", "partial"):
                extra = len(node.args) - 1
                return [(q, bound + extra) for q, bound in self.callable_refs(node.args[0])]
            if qual in _COMPILERS:
                # `f_jit = torch.jit.trace(f, example)`: calling `f_jit` runs what `f` does on its arguments
                return self.callable_refs(node.args[0])
            return []
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self.resolve_callees(node)
        return []

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
            if position >= len(params) or params[position].startswith("**"):
                break  # more positional arguments than parameters: nowhere
            if params[position].startswith("*"):
                # the rest are `*args`' items (any of them is what the callee iterates or indexes)
                held, first = binding.get(position, (EMPTY, arg_node))
                binding[position] = (held | origins, first)
                continue
            binding[position] = (origins, arg_node)
            position += 1
        for k in node.keywords:
            if k.arg is not None and k.arg in params:
                binding[params.index(k.arg)] = (kwargs.get(k.arg, EMPTY), k.value)
        if summary is not None and summary.gradless and not self.no_grad:
            self._unreached_saved_outputs(node, summary, binding)
        short_name = qual.rsplit(".", 1)[-1]
        unread = set()
        starred = any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords)
        # what this call gives each parameter (a literal, or unknown, or this function's own parameter with its
        # default), for the callee's paths it rules out or hands on to this function's callers
        values = {i: conditions.literal(arg_node) for i, (_, arg_node) in binding.items()}
        builds = self.submodule_builds(submodule, qual)
        if len(builds) == 1:  # `self.conv(x)` with `self.conv = BasicConv(..., relu=False)`: its flags
            values.update(builds[0], built=())
        elif builds:  # `self.conv2(x)`, built one way or another in `__init__`: a path needs one of them
            values[conditions.ALTS] = builds
        handed_on = self.own_params_passed(binding)
        own_defaults = {j: self.param_default(self.params[j]) for j in set(handed_on.values())}
        flag_args = None  # (computed once, here or for the call site below)
        if summary is not None:
            flag_args = self.grad_off_args(binding) if any(w.when for w in summary.writes) else None
            for w in summary.writes:
                if w.index not in binding or any(g not in binding for g in w.guard):
                    continue
                if w.when and not starred and contradicted(w.when, values):
                    continue  # only paths this call's constant arguments rule out reach the write
                # `add(m1, m2, inplace_safe)`: a path that needs a flag this call passes true only with grad off
                flagged = not starred and grad_flags.flag_guards(w.when, flag_args)
                # a mutating helper's write (it does not use the tensor afterwards), or a write the helper keeps using
                # in another file: reported here too, so that this file shows it; a write the helper keeps using in
                # this file is its own business, reported at the write naming this call, but what this function
                # passes on of its own parameters still reaches it (a caller in another file reports it at its call)
                at_write = w.kept and w.path == ctx.path
                origins, arg_node = self.arm_filtered(w, binding[w.index], submodule, builds, values)
                helper = w.via or (short_name, w.path, w.line, w.col)
                # named from here: `(line 5)` in this file, `(pkg/helpers.py:5)` in another
                op = f"{w.op} in `{helper[0]}()` ({self.where(helper[1], helper[2])})"
                # a guessed output object (a parameter named `output`) is only read for its tensor fields
                # a call made with grad off runs the callee with grad off: no op in it saved anything
                steps = ran_without_grad(w.steps) if self.no_grad else w.steps
                real = [with_steps(as_tensor(o) if w.on_tensor else o, steps) for o in origins
                        if param_index(o) is None and not model_outputs.is_guessed_object(o)]
                # the helper's conditions to its write, seen from here: those on a parameter this function
                # passes its own parameter for become conditions on that one
                when = conditions.translate(w.when, values, handed_on, own_defaults) if w.when and not starred else ()
                # an in-place layer in the callee, or a submodule's forward: the call shows no write (IPV007)
                hidden = w.layer or (f"`self.{submodule}`" if submodule and qual.endswith(".forward") else None)
                if real and not at_write:
                    twin = self.out_of_place_twin(qual, params, w.index) if not w.via else None
                    saved_conds = self.path_conds
                    # (the finding here runs under them too: `_add(y, x, inplace_safe)` passing this function's
                    # flag, which its callers may make true only with grad off: LocalFinding.guards)
                    self.path_conds = saved_conds + tuple(c for c in when if not isinstance(c[0], str))
                    try:
                        self.report(node, w.kind, op, arg_node, cap(real), w.op_name, no_fix=True,
                                    write_no_grad=w.no_grad or flagged,
                                    helper=HelperWrite(helper[0], *helper[1:4], twin, w.kept),
                                    condition=conditions.write_path_condition(w, values, params, short_name, starred),
                                    layer=hidden)
                    finally:
                        self.path_conds = saved_conds
                elif hidden and isinstance(arg_node, ast.Name) and not self.container_store(w, arg_node) and not (
                        w.number and not real and self.number_argument(arg_node)) and not (real and match(
                        real, Write(w.op, w.op_name, w.kind, w.target, w.point_index, w.condition),
                        self.no_grad or w.no_grad, self.settings.report_in_no_grad)[0]):
                    # `out = self.conv1(x)` running an in-place layer on `x`, read here later (`D.forward`, not `forward`)
                    method = ".".join(qual.split(".")[-2:]) if submodule and not w.via else helper[0]
                    self.report(node, w.kind, f"{w.op} in `{method}()` ({self.where(helper[1], helper[2])})", arg_node,
                                EMPTY, w.op_name, no_fix=True, helper=HelperWrite(method, *helper[1:4], None, w.kept),
                                condition=conditions.write_path_condition(w, values, params, short_name, starred),
                                layer=hidden)
                for o in sorted(origins, key=origin_key) if len(origins) > 1 else origins:  # a fixed order
                    i = param_index(o)
                    if i is not None:
                        self.record_param_write(node, w.kind, w.op, arg_node, with_steps(o, steps), i, helper,
                                                w.op_name, w.no_grad or flagged, w.condition, when=when,
                                                layer=w.layer, inner=w)
            for i in summary.observed:
                if i in binding and self.is_unread_after(binding[i][1], node):
                    unread.add(i)
            self._note_saved_arguments(node, summary, binding, starred)
        if self.recording:  # not again from eval_quiet: it may see names bound since (`a, b = z, f(a)`), and
            # ModuleContext.call_sites keeps the later of two records of one call
            passed = ((i, o or self._display_value(n)) for i, (o, n) in sorted(binding.items()))
            ctx.calls.append(CallSite(self.qual, qual, ctx.path, node.lineno, node.col_offset,
                                      tuple((i, o) for i, o in passed if o),
                                      self.no_grad or self.grad_off_arm or self.eval_branch, unread=frozenset(unread),
                                      bound=None if starred else frozenset(binding),
                                      built=self.built_record(builds, submodule, binding),
                                      **self.site_facts(binding, values, handed_on, own_defaults, flag_args)))
        if summary is not None and summary.no_grad_result and not summary.returns and not starred:
            # every return needs no grad (an index, a factory's method, arithmetic under no_grad), and nothing
            # tracks what they return (what is tracked, a factory's expanded view, comes with its own facts)
            # (maybe not a tensor at all: `.item()`, a comparison, None)
            return frozenset({Origin(RootKind.FRESH, f"{short_name}(...)", node.lineno, root_no_grad=True,
                                     certain_tensor=False)})
        if summary is None or not summary.returns and not summary.computed:
            return EMPTY
        self.note_arm_returns(submodule, builds, values, summary, node.lineno)  # (`self.conv1(x)`: :mod:`.built_arms`)
        out = []
        skip = set()
        when = {}
        if summary.returns_when and not starred:
            for o, paths in summary.returns_when:
                feasible = [c for c in paths if not contradicted(c, values)]
                if not feasible:
                    skip.add(o)
                else:  # a may-path: the root says on which (`batched_eye(..., copy=False)`)
                    when[o] = ", ".join(conditions.describe(c, params) for c in feasible[0])
        inputs_no_grad = bool(binding) and not starred and bound == 0 and all(
            needs_no_grad_arg(n, o) for o, n in binding.values())
        for o in summary.returns:
            if o in skip or function_of(o) is not None:
                out.extend(() if o in skip else (o,))  # (a function returned as a value: calling the result calls it)
                continue  # only paths this call's constant arguments rule out return it
            if inputs_no_grad and o.root in (RootKind.CUSTOM_FUNCTION, RootKind.SAVED_OUTPUT) \
                    and param_index(o) is None:
                # a function (not a method: no module state) given only tensors that need no grad: what it
                # computes from them needs none either (gather_from_region(w.data) -> _Gather.apply(...))
                out.append(Origin(RootKind.FRESH, f"{short_name}(...)", node.lineno, root_no_grad=True))
                continue
            guess = -1
            certain, guessed = o.certain_tensor, o.guessed
            if o.guess_param >= 0 and param_index(o) is None:
                # saved only if what this call passes for that parameter requires grad: the call decides
                given, given_node = binding.get(o.guess_param, (EMPTY, None))
                if self._passes_grad(given, given_node):
                    guess = -1
                    # arithmetic on that parameter (`x + 1e-6`, maybe a number) is a tensor: one was passed, and
                    # it requires grad by evidence now (no longer a guess)
                    certain, guessed = True, False
                else:
                    guess = guessed_param(given) if given else self.tensor_param_guess(given_node, EMPTY)
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
            if o.guessed and o.root is RootKind.TENSOR and o.root_text in params and guess < 0:
                # the callee's guess about its own annotated parameter: what this call passes for it decides, and
                # this function's own parameter passed there hands the guess on to this function's callers
                given = binding.get(list(params).index(o.root_text), (EMPTY, None))[0]
                guess = guessed_param(given) if given else -1
            out.append(Origin(o.root, text, node.lineno, steps, o.root_no_grad or self.no_grad,
                              certain, condition=condition, guess_param=guess, guessed=guessed))
            if summary.kept:
                # the object is also held where the callee put it: a fix that rebinds its name is unsafe
                reason = f"what `{short_name}()` returns, which is also reachable elsewhere: {summary.kept}"
                self.kept_roots.setdefault((text, node.lineno), reason)
        if summary.computed and not self.no_grad and any(  # (`binding` holds only what is surely bound)
                self._passes_grad(*binding.get(i, (EMPTY, None))) for i in summary.computed):
            out.append(Origin(RootKind.TENSOR, f"{short_name}(...)", node.lineno))  # computed from it: requires grad
        elif summary.computed and not self.no_grad and not out:
            out.extend(self.computed_guess(summary.computed, binding, f"{short_name}(...)", node.lineno))
        return cap(out)

    def _passes_grad(self, given: frozenset, given_node: Optional[ast.expr]) -> bool:
        """What a call passes for a parameter requires grad by evidence (tracked, or ``self.fc(x)`` untracked)."""
        return any(a.grad_evidence and param_index(a) is None for a in given) or (
            not given and self.grad_source(given_node))
