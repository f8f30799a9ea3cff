"""Statements: how each statement changes the environment of origins (one job of the interpreter).

Assignments, tuple unpacking, ``for`` targets, ``with``/``try`` blocks update the
environment; ``if``/``try`` branches and loop bodies are merged (a name *may* hold
any origin of any branch). ``def``/``class`` open scopes of their own and leave a
function summary behind (:mod:`.summaries`); ``import`` binds names for
:mod:`.names`.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Dict, Iterable, List, Optional, Sequence, Set

from ..findings import Origin, RootKind, Step, StepKind, WriteKind
from . import grad, model_outputs, ops
from .astutil import dotted_name, is_str_constant
from .names import LITERAL_HEADS, import_bindings
from .summaries import FunctionSummary, function_ref, param_index

EMPTY: frozenset = frozenset()
_MAX_ORIGINS = 12

#: ``ast`` operator -> its augmented assignment (one operator table: ``ops.OPERATORS``)
AUG_OPS = {getattr(ast, name): symbol for name, symbol in ops.AST_AUGMENTED.items()}


def origin_key(o: Origin):
    return (o.root_line, o.root_text, len(o.steps), tuple(s.text for s in o.steps), o.root.value)


def cap(origins) -> frozenset:
    s = frozenset(origins)
    if len(s) <= _MAX_ORIGINS:
        return s
    return frozenset(sorted(s, key=origin_key)[:_MAX_ORIGINS])


def merge(envs: Sequence[Dict[str, frozenset]], big: Iterable[str] = ()) -> Dict[str, frozenset]:
    """The environment after branches (or loop iterations) ``envs``: each name holds the union of what it
    holds in each, capped at ``_MAX_ORIGINS`` (in ``envs`` order: the first value as it is, each later one
    ``cap(union)``).

    The branches of one statement share most of their entries (each started from the same environment),
    so only the entries that are not the same object are joined (a union and a cap each); the rest is kept.
    An entry equal in two branches keeps its value, which is what the fold gives unless the value is over
    the cap: ``big`` names every key that may hold such a value (:meth:`StatementsMixin.bind_name`), and
    those are folded as written above. Key order may differ from the fold's; nothing reads it."""
    if not envs:
        return {}
    out: Dict[str, frozenset] = dict(envs[0])
    for env in envs[1:]:
        get = out.get
        for k, v in [(k, v) for k, v in env.items() if get(k) is not v]:
            out[k] = cap(out[k] | v) if k in out else v
    for k in big:
        folded = None
        for env in envs:
            if k in env:
                folded = env[k] if folded is None else cap(folded | env[k])
        if folded is not None:
            out[k] = folded
    return out


#: ``if`` statements merge only the keys their arms touched (tests turn it off to compare with :func:`merge`)
TOUCHED_MERGE = True


def merge_touched(arms: List[Dict[str, frozenset]], touched: Iterable[str]) -> Dict[str, frozenset]:
    """:func:`merge` of the arms of one ``if``, in the time of what they changed: each arm started from the
    same environment, so a key no arm (nor a test) bound or removed holds the same object in every arm,
    and the fold keeps it (``touched`` includes the keys that may hold more than the cap). The last arm's
    dict (no one else holds it) becomes the result; only the ``touched`` keys are folded into it."""
    out = arms[-1]
    for k in touched:
        folded = None
        for env in arms:
            if k in env:
                folded = env[k] if folded is None else cap(folded | env[k])
        if folded is None:
            out.pop(k, None)
        else:
            out[k] = folded
    return out


#: node type -> ``stmt_<Node>``
_STMT: dict = {}


class StatementsMixin:
    """``stmt_<Node>`` handlers and binding of targets."""

    def run_body(self, body: Sequence[ast.stmt]) -> None:
        for stmt in body:
            self.stmt(stmt)

    def stmt(self, node: ast.stmt) -> None:
        self.stmt_stack.append(node)
        try:
            try:
                handler = _STMT[type(node)]
            except KeyError:
                handler = _STMT[type(node)] = getattr(type(self), "stmt_" + type(node).__name__, None)
            if handler is not None:
                handler(self, node)
                return
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.eval(child)
        finally:
            self.stmt_stack.pop()

    def stmt_Assert(self, node: ast.Assert) -> None:
        self.eval(node.test)
        if node.msg is not None:
            self.eval(node.msg)

    def stmt_Raise(self, node: ast.Raise) -> None:
        for part in (node.exc, node.cause):
            if part is not None:
                self.eval(part)

    def stmt_Expr(self, node: ast.Expr) -> None:
        self.eval(node.value)

    def stmt_Return(self, node: ast.Return) -> None:
        value = self.eval(node.value)
        if value:
            self.returns |= value

    def stmt_Pass(self, node) -> None:
        pass

    stmt_Break = stmt_Continue = stmt_Global = stmt_Nonlocal = stmt_Pass

    def stmt_Assign(self, node: ast.Assign) -> None:
        value = self.eval(node.value)
        if self.ctx is not None and isinstance(node.value, (ast.Name, ast.Attribute)) and not value:
            refs = self.callable_refs(node.value)
            if refs:
                value = frozenset(function_ref(q, bound, node.lineno) for q, bound in refs)
        module = model_outputs.inplace_module(node.value)
        is_bool = None
        for target in node.targets:
            if module and isinstance(target, ast.Name):
                self.inplace_modules[target.id] = module
            self.assign(target, node.value, value)
            if isinstance(target, ast.Name):
                if is_bool is None:
                    is_bool = self.is_bool_value(node.value)
                if is_bool:
                    self.bool_names.add(target.id)

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.assign(node.target, node.value, self.eval(node.value))

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        self.eval(node.value)
        op = AUG_OPS.get(type(node.op), "op=")
        target = node.target
        if isinstance(target, ast.Subscript):
            base = self.eval(target.value)
            self.eval(target.slice)
            if not is_str_constant(target.slice):
                self.report(node, WriteKind.SUBSCRIPT, f"`{op}` on an item", target.value, base)
        elif isinstance(target, (ast.Name, ast.Attribute)) and ops.AUGMENTED_INPLACE.get(op) is None:
            # `x @= w`: a Tensor has no __imatmul__, so Python rebinds x = x @ w (a new tensor)
            self.eval(target)
            self.assign(target, None, EMPTY)
        elif isinstance(target, (ast.Name, ast.Attribute)):
            origins = self.eval(target)
            self.report(node, WriteKind.AUGMENTED, f"`{op}`", target, origins, ops.AUGMENTED_INPLACE.get(op))

    def stmt_For(self, node: ast.For) -> None:
        self._loop(node, lambda: self.bind_iter(node.target, node.iter))

    stmt_AsyncFor = stmt_For

    def stmt_While(self, node: ast.While) -> None:
        self._loop(node, lambda: self.eval(node.test))

    def _loop(self, node, head) -> None:
        before = dict(self.env)
        state = self._loop_state()
        self.loop_stack.append(node)
        try:
            for first in (True, False):  # a second pass sees values carried around the loop
                head()
                self.run_body(node.body)
                self.env = merge([before, self.env], self.big)
                if first and self.env == before and self._loop_state()[:-1] == state[:-1] \
                        and not (self.assigned - state[-1]) & LITERAL_HEADS:
                    # nothing the walk reads changed in the first pass: the second would repeat it exactly
                    # (three loops in four; nested loops were walked 2**depth times)
                    break
        finally:
            self.loop_stack.pop()
        self.run_body(node.orelse)

    def _loop_state(self) -> tuple:
        """What a loop's body may change, other than ``env``, that later statements read
        (``assigned`` only matters for :data:`~.names.LITERAL_HEADS`; compared apart)."""
        return (set(self.nograd_bound), dict(self.names), dict(self.local_funcs), dict(self.inplace_modules),
                set(self.submodule_results), set(self.bool_names), self.redefined, set(self.assigned))

    def stmt_If(self, node: ast.If) -> None:
        # an elif chain is walked as a loop, not by recursion (generated code has chains of hundreds)
        arms: List[Dict[str, frozenset]] = []
        current = node
        saved = chain = self.eval_branch
        mark = len(self.bindings)
        while True:
            self.eval(current.test)
            training = grad.training_test(current.test)  # `if self.training: ... else: <eval mode only>`
            before = dict(self.env)
            self.eval_branch = chain or training is False
            self.run_body(current.body)
            arms.append(self.env)
            self.env = before
            chain = self.eval_branch = chain or training is True  # what follows runs only in eval mode
            orelse = current.orelse
            if len(orelse) == 1 and isinstance(orelse[0], ast.If):
                current = orelse[0]
                continue
            self.run_body(orelse)
            arms.append(self.env)
            break
        self.eval_branch = saved
        if TOUCHED_MERGE:
            self.env = merge_touched(arms, {k for k, _ in self.bindings[mark:]} | self.big)
        else:
            self.env = merge(arms, self.big)

    def stmt_Try(self, node) -> None:
        before = dict(self.env)
        self.run_body(node.body)
        self.run_body(node.orelse)
        branches = [self.env]
        for handler in node.handlers:
            self.env = merge([before, branches[0]], self.big)
            if handler.name:
                self.env[handler.name] = EMPTY
                self.bindings.append((handler.name, EMPTY))
            self.run_body(handler.body)
            branches.append(self.env)
        self.env = merge(branches, self.big)
        self.run_body(node.finalbody)

    stmt_TryStar = stmt_Try

    def stmt_With(self, node) -> None:
        mode = None
        for item in node.items:
            self.eval(item.context_expr)
            m = self.grad_mode_of(item.context_expr)
            mode = m if m is not None else mode
            if item.optional_vars is not None:
                self.assign(item.optional_vars, None, EMPTY)
        if mode is None:
            self.run_body(node.body)
            return
        saved = (self.no_grad, self.nograd_bound)
        self.no_grad = not mode
        self.nograd_bound = set() if self.no_grad else self.nograd_bound
        try:
            self.run_body(node.body)
        finally:
            self.no_grad, self.nograd_bound = saved

    stmt_AsyncWith = stmt_With

    def stmt_Match(self, node) -> None:
        self.eval(node.subject)
        before = dict(self.env)
        branches = []
        for case in node.cases:
            self.env = dict(before)
            if case.guard is not None:
                self.eval(case.guard)
            self.run_body(case.body)
            branches.append(self.env)
        self.env = merge(branches + [before], self.big)

    def stmt_FunctionDef(self, node) -> None:
        for dec in node.decorator_list:
            self.eval(dec)
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.eval(default)
        self.bind_name(node.name, EMPTY)
        if grad.is_triton_kernel(node):
            return
        no_grad = self.no_grad
        declared = False
        if self.class_no_grad and not self.settings.report_in_no_grad and (
                not self.autograd_function or node.name in grad.AUTOGRAD_FUNCTION_METHODS):
            no_grad = declared = True  # autograd runs a custom Function's forward and backward with grad off
        for dec in node.decorator_list:
            mode = self.grad_mode_of(dec)
            if mode is not None:
                no_grad = not mode
                declared = not mode
        qual = f"{self.qual}.{node.name}"
        static = any(dotted_name(d) in ("staticmethod",) for d in node.decorator_list)
        child = self.child_scope(node.args, no_grad, node, qual, bound_first=self.in_class and not static)
        if self.in_class:
            child.cls_qual = self.qual
            child.self_name = None if static else (child.params[0] if child.params else None)
        else:
            self.local_funcs[node.name] = qual
        if self.ctx is not None:
            self.ctx.params[qual] = (tuple(child.params), static)
        child.local_funcs[node.name] = qual  # recursion
        walk = getattr(self.ctx, "function_walk", None)
        if walk is not None:  # an open buffer: a function whose text did not change is not walked again
            self._define(qual, walk.walk(child, node, declared, static))
            return
        child.run_body(node.body)
        if self.ctx is not None:
            self._define(qual, child.summary(declared, static))

    def _define(self, qual: str, summary: FunctionSummary) -> None:
        old = self.ctx.functions.get(qual)
        if old is not None and old != summary:
            self.redefined += 1  # `def f` again (in a loop body): a call of f before it reads the new one
        self.ctx.functions[qual] = summary

    stmt_AsyncFunctionDef = stmt_FunctionDef

    def stmt_ClassDef(self, node: ast.ClassDef) -> None:
        for expr in node.decorator_list + node.bases + [k.value for k in node.keywords]:
            self.eval(expr)
        members = model_outputs.class_members(node)
        env = dict(self.env)
        modules = dict(self.inplace_modules)
        for key, value in members.items():
            if isinstance(value, str):
                modules[key] = value
            else:
                env[key] = frozenset({value})
        scope = self.new_scope(params=(), func=None, env=env, no_grad=self.no_grad, inplace_modules=modules,
                               qual=f"{self.qual}.{node.name}")
        scope.in_class = True
        scope.autograd_function = grad.is_autograd_function(node)
        scope.class_no_grad = grad.class_runs_without_grad(node)
        scope.run_body(node.body)
        self.bind_name(node.name, EMPTY)

    def stmt_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            key = dotted_name(target)
            if key is not None:
                self.env.pop(key, None)
                self.bindings.append((key, EMPTY))
            else:
                self.eval(target)

    def stmt_Import(self, node) -> None:
        bound = import_bindings(node, self.package)
        for name, target in bound.items():
            self.bind_name(name, EMPTY)
            self.names[name] = target
            self.assigned.discard(name)
            self.local_funcs.pop(name, None)

    stmt_ImportFrom = stmt_Import

    def grad_mode_of(self, node: ast.expr) -> Optional[bool]:
        """The grad mode a context/decorator sets; ``report-in-no-grad`` treats all code as grad-enabled."""
        return None if self.settings.report_in_no_grad else grad.grad_mode_of(node)

    # ---- binding

    def bind_name(self, key: str, origins: frozenset) -> None:
        if origins:
            self.env[key] = origins
            self.bindings.append((key, origins))
            if len(origins) > _MAX_ORIGINS:
                self.big.add(key)
        else:
            self.env.pop(key, None)
            self.bindings.append((key, EMPTY))
        if "." not in key:
            self.bool_names.discard(key)
            self.local_funcs.pop(key, None)
            self.names.pop(key, None)
            self.assigned.add(key)
            if key in self.params:
                index = list(self.params).index(key)
                if not any(param_index(o) == index for o in origins):
                    self.rebound_params.add(key)
        if self.no_grad:
            self.nograd_bound.add(key)

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
                self.report(target, WriteKind.SUBSCRIPT, "item assignment", target.value, base,
                            write_no_grad=isinstance(value_node, ast.Constant) and isinstance(value_node.value, bool))
            key = self.key_of(target)
            if key is not None and not any(o.is_tensor for o in base):
                self.bind_name(key, value)  # output["logits"] = ... on a dict-like model output
            return
        key = dotted_name(target)
        if key is not None:
            self.bind_name(key, value)
            if isinstance(target, ast.Name):
                if self.is_submodule_call(value_node):
                    self.submodule_results.add(key)
                else:
                    self.submodule_results.discard(key)
        else:
            self.eval(target)

    def is_submodule_call(self, node: Optional[ast.expr]) -> bool:
        """``self.backbone(x)`` in a ``forward`` method, the callee not a configured model-call name."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and self.self_name is not None
                and node.func.value.id == self.self_name and self.qual.rsplit(".", 1)[-1] == "forward"):
            return False
        return not self.settings.is_model_call_name(node.func.attr)

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

    def element_of(self, origins: frozenset, text: str, line: int) -> frozenset:
        """What one element (unpacked, iterated) of a value with ``origins`` holds."""
        out = []
        for o in origins:
            if o.root is RootKind.MODEL_OUTPUT_OBJECT and not o.steps:
                # loss, logits = model(x): each element may be a tensor, a dict or a number
                out.append(Origin(RootKind.MODEL_OUTPUT, f"{o.root_text}{text if text.startswith('[') else '[...]'}",
                                  line, root_no_grad=o.root_no_grad or self.no_grad, certain_tensor=False))
            else:
                out.append(o.extend(Step(StepKind.ELEMENT, text if text.startswith("[") else "iteration", line,
                                         self.no_grad)))
        return cap(out)

    def summary(self, declared_no_grad: bool, static: bool) -> FunctionSummary:
        """This (function) scope's summary, after its body was walked."""
        # a root made from a parameter's annotation is returned with the placeholder that travelled
        # alongside it: a caller that passed something known drops it (CallsMixin.project_call)
        returns = frozenset(o for o in self.returns if not model_outputs.is_guessed_object(o))
        returned = {param_index(o) for o in self.returns} - {None}
        for key in self.rooted_keys:
            # a parameter bound again (in a branch, or later in a loop) may hold what no caller passed:
            # its guess stays a finding here
            found = self.sink.get(key)
            if found is not None and found.param_rooted is not None \
                    and self.params[found.param_rooted] in self.rebound_params:
                self.sink[key] = replace(found, param_rooted=None)
        writes = tuple(replace(w, kept=w.kept or w.index in returned) if w.via is None else w
                       for w in self.param_writes)
        return FunctionSummary(self.qual, tuple(self.params), cap(returns), writes,
                               declared_no_grad, frozenset(self.observed), static)
