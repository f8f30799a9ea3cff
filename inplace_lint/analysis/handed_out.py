"""Project functions handed to other code as values (issue 20, "aliases that are not names", and callers
we cannot see): ``cbs.append(step_fn)``, a registry decorator, a callable given to a model call,
``partial(block, flag=...)``. Each is recorded as a call site (:class:`~.summaries.CallSite`) with what
is known of its arguments, so that guesses about the function's parameters are not kept or dropped on
the strength of callers nobody sees. A part of :class:`~.dataflow.Scope`."""
from __future__ import annotations

import ast
from typing import Optional

from ..findings import Origin, RootKind
from . import conditions, grad
from .astutil import dotted_name, last_name, short
from .env import EMPTY, cap
from .names import qualify_dotted
from .summaries import PASS_THROUGH, CallSite, function_of, function_ref

#: decorators (their module, or their last name) that keep a function called as itself, by its callers
_KEEP_DECORATORS = frozenset({"torch", "functools", "typing", "abc", "staticmethod", "classmethod", "property",
                              "setter", "getter", "deleter", "abstractmethod", "cached_property", "wraps",
                              "lru_cache", "cache", "overload", "override", "contextmanager", "dataclass"})


_NO_ARGS: frozenset = frozenset()
#: torch's functions that call the function they are given with grad on (each turns grad on, or differentiates it)
_GRAD_CALLERS = frozenset({
    f"torch.autograd.functional.{n}" for n in ("jacobian", "hessian", "vjp", "jvp", "hvp", "vhp")} | {
    f"torch.func.{n}" for n in ("grad", "grad_and_value", "vjp", "jacrev", "hessian")} | {  # (jvp, jacfwd: forward mode)
    "torch.autograd.gradcheck", "torch.autograd.gradgradcheck", "torch.autograd.gradcheck.gradcheck"})
_GRAD_CALLER_NAMES = frozenset(q.rpartition(".")[2] for q in _GRAD_CALLERS)


def _may_pass_through(node: ast.expr) -> bool:
    """A returned callable that may return its argument, which the analysis does not follow as a project function:
    a lambda whose body is its parameter or a view or method chain on it (``lambda x: x``), ``functools.partial(...)``,
    and torch's in-place functions and methods (``torch.relu_``, ``torch.Tensor.requires_grad_``: they return their
    input)."""
    if isinstance(node, ast.Lambda):
        root = node.body
        while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
            root = root.func if isinstance(root, ast.Call) else root.value
        return isinstance(root, ast.Name) and root.id in {a.arg for a in node.args.args}
    if isinstance(node, ast.Call):
        return last_name(node.func) == "partial"
    name = dotted_name(node)
    return name is not None and name.startswith("torch.") and name.endswith("_") and not name.endswith("__")


class HandedOutMixin:
    """Call sites of functions handed out as values, and what a call gives its callee's conditions."""

    def hand_out_callables(self, node: ast.Call) -> None:
        """``cbs.append(step_fn)``, ``executor.make_callable(f)``: a project function handed to other code as a
        value is called by that code, with arguments nothing here shows. Recorded as a call site that passes
        nothing (``bound`` empty), so a guess about the function's parameters is not kept on the strength of
        callers we cannot see (a guess is no evidence). Not for torch's own higher-order functions
        (``torch.compile(f)``, ``checkpoint(f, x)``, ``torch.func.vmap(f)``), hooks (``register_forward_hook``),
        ``functools.partial`` or a model call (:meth:`hand_callables_to_model`): those pass activations."""
        if isinstance(node.func, (ast.Name, ast.Attribute)) and last_name(node.func) == "partial" and node.args \
                and qualify_dotted(dotted_name(node.func), self.names, self.is_local_name)[0] \
                in ("functools.partial", "partial"):
            self.record_partial(node)
        if isinstance(node.func, (ast.Name, ast.Attribute)) and last_name(node.func) in _GRAD_CALLER_NAMES \
                and qualify_dotted(dotted_name(node.func), self.names, self.is_local_name)[0] in _GRAD_CALLERS:
            # `jacobian(f, x)`, `torch.func.grad(f)(x)`: torch calls `f` with grad on, on inputs nobody sees here: a
            # call site binding nothing known (a guess about `f`'s parameters is kept, whatever other calls do); `f`
            # may be a name bound to a function (`f_jit = torch.jit.trace(f, ...)`)
            for value in list(node.args) + [k.value for k in node.keywords]:
                callees = {q for q, _ in self.callable_refs(value)} if self._may_name_function(value) else set()
                callees |= {ref[0] for o in self.eval_quiet(value) if (ref := function_of(o)) is not None}
                for callee in sorted(callees):
                    self.ctx.calls.append(CallSite(self.qual, callee, self.ctx.path, value.lineno, value.col_offset,
                                                   (), False, bound=None))
            return
        values = []
        for value in list(node.args) + [k.value for k in node.keywords]:
            items = value.elts if isinstance(value, (ast.List, ast.Tuple, ast.Set)) else (
                value.values if isinstance(value, ast.Dict) else [value])  # `Optimizer([step_fn])`
            values.extend(item for item in items if self._may_name_function(item))
        if not values:
            return
        qual = qualify_dotted(dotted_name(node.func), self.names, self.is_local_name)[0]
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if (qual or "").split(".")[0] in ("torch", "functools", "partial") or name.startswith("register_"):
            return
        for value in values:
            self.record_handed_out(value)

    def _display_value(self, node: Optional[ast.expr]) -> frozenset:
        """What an argument the walk tracks nothing for passes. A list, tuple, dict or set display (``[mel, mel +
        post(mel)]``): its elements' origins (the callee reaches them as items, ``mel, post = outputs``), or, when none
        is tracked, a plain container known to be nothing risky; so the callee's parameter is decided by what the
        callers pass, not by its name. A comprehension (``[p.grad for p in params]``) passes a container of what its
        element gives, each item an element of it. Another expression: a tensor that requires grad when it does by
        evidence (``self.a``, an ``nn.Parameter``: :meth:`grad_source`), else a guess about each parameter of this
        function it is computed from alone (``F.pad(a, (1, 0))``: :meth:`guesses_of`), maybe no tensor; EMPTY for a
        literal or a lambda."""
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return frozenset({Origin(RootKind.FRESH, short(node), node.lineno, root_no_grad=True)}) \
                if not self.eval_quiet(node) else EMPTY
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            parts = node.elts
        elif isinstance(node, ast.Dict):
            parts = [p for p in node.values if p is not None]
        else:
            # `F.pad(a, (1, 0))`, `b.flip(-1)`, `r` with `r = u.clone()`: untracked, computed from this function's
            # parameters alone: a guess about them that this function's own callers decide (philtorch's `polydiv`,
            # handed the filter's `a` padded)
            # (maybe no tensor at all: a tuple of floats, `down_left_corner`, unpacked by the callee)
            if node is None or self.func is None or isinstance(node, (ast.Lambda, ast.Constant)):
                return EMPTY
            if self.grad_source(node):  # `div(b, self.a)` with `self.a = nn.Parameter(...)`: requires grad
                return frozenset({Origin(RootKind.TENSOR, short(node), node.lineno)})
            return frozenset(Origin(RootKind.TENSOR, short(node), node.lineno, certain_tensor=False, guessed=True,
                                    guess_param=g) for g in self.guesses_of(node, EMPTY))
        if any(isinstance(p, ast.Starred) for p in parts) or (isinstance(node, ast.Dict) and None in node.keys):
            return EMPTY
        held = cap(o for p in parts for o in self.eval_quiet(p))
        return held or frozenset({Origin(RootKind.FRESH, short(node), node.lineno, root_no_grad=True)})

    def _may_name_function(self, node: ast.expr) -> bool:
        """``f`` (not a variable or parameter here) or ``self.m`` (not an attribute bound here): cheap to ask
        before resolving."""
        if isinstance(node, ast.Name):
            return node.id in self.local_funcs or not (node.id in self.env or node.id in self.assigned
                                                       or self.is_param(node.id))
        return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == self.self_name and f"{node.value.id}.{node.attr}" not in self.env

    def hand_out_decorated(self, node: ast.AST, qual: str) -> None:
        """A ``def`` under a decorator that is neither torch's, functools', nor a builtin one (``@register("fp8")``,
        ``@pytest.mark.parametrize``): the decorator receives the function and whoever it serves calls it (a
        registry's dispatch, a test runner): a call site that passes nothing (:meth:`hand_out_callables`)."""
        if self.ctx is None or not self.recording or (self.in_class and node.name == "forward"):
            return  # (a decorated `forward` is still what the module's call runs on its inputs: `@auto_fp16()`)
        for dec in node.decorator_list:
            name = dotted_name(dec.func if isinstance(dec, ast.Call) else dec) or ""
            full = qualify_dotted(name, self.names, self.is_local_name)[0] or name
            if full.split(".")[0] not in _KEEP_DECORATORS and name.rpartition(".")[2] not in _KEEP_DECORATORS \
                    and not self.project_wrapper(dec):
                self._handed_out(qual, node)
                return

    def project_wrapper(self, dec: ast.expr) -> str:
        """``@knowngood`` (not a call) naming an in-project decorator that calls the function it decorates with
        the arguments it was given (:func:`.resolve.passes_through`): the function is still called by its
        callers, as itself."""
        name = dotted_name(dec) if self.ctx is not None and not isinstance(dec, ast.Call) else None
        if not name:
            return ""
        full = qualify_dotted(name, self.names, self.is_local_name)[0] or name
        return self.ctx.wrapper_function(full if full != name or "." in name else f"{self.ctx.module}.{name}")

    def record_partial(self, node: ast.Call) -> None:
        """``partial(block, inplace_safe=flag)``: a call of ``block`` whose other arguments come later, from
        code we may not see. Recorded as a call site with what ``partial`` binds (its literals, this function's
        own parameters passed on, flags true only with grad off) and the rest unknown (``bound`` None), so a
        condition on a bound parameter is decided by it and every other guess stays (OpenFold-style
        ``checkpoint_blocks([partial(b, ...) for b in self.blocks])``)."""
        for qual, bound in self.callable_refs(node.args[0]):
            params, _ = self.ctx.params_of(qual) or ((), False)
            binding = {}
            for position, arg in enumerate(node.args[1:], bound):
                if isinstance(arg, ast.Starred) or position >= len(params) or params[position].startswith("*"):
                    break
                binding[position] = (EMPTY, arg)
            for k in node.keywords:
                if k.arg is not None and k.arg in params:
                    binding[params.index(k.arg)] = (EMPTY, k.value)
            self.ctx.calls.append(CallSite(self.qual, qual, self.ctx.path, node.lineno, node.col_offset, (),
                                           self.no_grad or self.grad_off_arm, bound=None, **self.site_facts(binding)))

    def site_facts(self, binding, values=None, handed_on=None, own_defaults=None, off_args=None) -> dict:
        """What a call gives the callee's parameters (``binding``: index -> (origins, argument)), for the
        conditions it decides: literals (``constants``), this function's own parameters handed on with their
        defaults (``passed``), flags true only with grad off (``grad_off_args``), and the parameters of this
        function the call runs only when true (``guards``). A caller that has already computed the literals
        (``values``), the parameters handed on and their defaults, or the flags passes them in."""
        if values is None:
            values = {i: conditions.literal(n) for i, (_, n) in binding.items()}
        if handed_on is None:
            handed_on = self.own_params_passed(binding)
        if own_defaults is None:
            own_defaults = {j: self.param_default(self.params[j]) for j in set(handed_on.values())}
        return dict(constants=tuple(sorted((i, v[0]) for i, v in values.items() if v and isinstance(i, int))),
                    passed=tuple((i, j, own_defaults[j]) for i, j in sorted(handed_on.items())),
                    grad_off_args=self.grad_off_args(binding) if off_args is None else off_args,
                    guards=conditions.needs_true(self.path_conds))

    def grad_off_args(self, binding) -> frozenset:
        """The parameters a call passes a flag true only with grad off (:func:`.grad.is_grad_off_flag`); the one
        shared empty set when none (most calls pass no flag, and call sites are many)."""
        return frozenset(i for i, (_, n) in binding.items() if not isinstance(n, ast.Constant)
                         and grad.is_grad_off_flag(n, self.grad_off_flags)) or _NO_ARGS

    def returned_functions(self, value: Optional[ast.expr], origins: frozenset) -> frozenset:
        """``return ns_loop`` (or ``a if c else b``): the project functions returned as a value, as references
        (:func:`~.summaries.function_ref`) beside what ``value`` evaluated to, so that a caller's ``fn = get(...);
        fn(x)`` is a call of each with ``x`` (muonium's ``_get_orthogonalization_fn`` returned its Newton-Schulz
        loop, which the optimizer called on gradients: set BH, 2 false findings). A function returned and called
        nowhere here keeps what its own callers say (an entry point keeps its guess)."""
        if self.ctx is None or value is None or not isinstance(
                value, (ast.Name, ast.Attribute, ast.IfExp, ast.Lambda, ast.Call)):
            return origins
        out = origins
        for node in (value.body, value.orelse) if isinstance(value, ast.IfExp) else (value,):
            if isinstance(node, (ast.Name, ast.Attribute)) and self._may_name_function(node):
                out |= self.function_value(node, EMPTY, ())  # (as for `g = f`: its references)
            elif _may_pass_through(node):
                out |= {function_ref(PASS_THROUGH, 0, node.lineno)}
        return out

    def record_handed_out(self, value: ast.expr, no_grad: bool = False) -> None:
        """A call site of each project function ``value`` may be, passing nothing (:meth:`hand_out_callables`);
        ``no_grad``: it is called where grad is off (a dict of solvers inside a Function's ``forward``)."""
        for qual, _ in self.callable_refs(value):
            self._handed_out(qual, value, no_grad)

    def _handed_out(self, qual: str, where: ast.AST, no_grad: bool = False) -> None:
        """The call site, at ``where``, of ``qual`` handed to code we cannot see: no argument bound, grad on
        (or off, ``no_grad``)."""
        self.ctx.calls.append(CallSite(self.qual, qual, self.ctx.path, where.lineno, where.col_offset, (), no_grad,
                                       bound=frozenset()))

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
                                               ((bound, frozenset({given})),), self.no_grad or self.grad_off_arm,
                                               callback=True))
