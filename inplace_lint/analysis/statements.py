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
from . import fixplan, grad, model_outputs
from ..torch_facts import ops
from .astutil import dotted_name, is_str_constant
from .names import LITERAL_HEADS, import_bindings, qualify
from .summaries import FunctionSummary, function_of, function_ref, located_steps, param_index

EMPTY: frozenset = frozenset()
_MAX_ORIGINS = 12

#: ``ast`` operator -> its augmented assignment (one operator table: ``ops.OPERATORS``)
AUG_OPS = {getattr(ast, name): symbol for name, symbol in ops.AST_AUGMENTED.items()}


def _negate(cond: tuple) -> tuple:
    return cond[0], not cond[1], cond[2]


def contradicted(conds: tuple, values: Dict[int, Optional[bool]]) -> bool:
    """Some condition of ``conds`` (parameter index, truth needed, truth of the default) is false for a call that
    binds the parameters to constants of truth ``values`` (a parameter it leaves out takes its default)."""
    for index, truth, default in conds:
        value = values.get(index, default) if index in values else default
        if value is not None and value != truth:
            return True
    return False


def origin_key(o: Origin):
    # the files last: two origins alike but for the file of a line sort the same in every process
    return (o.root_line, o.root_text, len(o.steps), tuple(s.text for s in o.steps), o.root.value,
            o.path or "", tuple(s.path or "" for s in o.steps))


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
            if self.ctx is None or not self.recording:
                return
            cond = self.param_condition(node.value.test) if isinstance(node.value, ast.IfExp) else None
            if cond is None:
                self._record_return(value, self.path_conds)
                return
            # return a if flag else b: each arm under its own condition
            body, orelse = self.eval_quiet(node.value.body), self.eval_quiet(node.value.orelse)
            self._record_return(body, self.path_conds + (cond,))
            self._record_return(orelse, self.path_conds + (_negate(cond),))
            self._record_return(value - body - orelse, self.path_conds)

    def _record_return(self, origins, conds) -> None:
        for o in origins:
            if not conds:
                self.uncond_returns.add(o)
            else:
                self.return_conds.setdefault(o, set()).add(tuple(sorted(set(conds))))

    def param_condition(self, test: ast.expr):
        """``flag`` (a parameter of this function) -> (its index, True, truth of its literal default or None);
        ``not flag`` -> (..., False, ...); anything else -> None."""
        truth = True
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            truth, test = not truth, test.operand
        if not isinstance(test, ast.Name) or test.id not in self.params or test.id in self.rebound_params \
                or test.id in self.assigned:
            return None
        args = getattr(self.func, "args", None)
        default = None
        if args is not None:
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            for a, d in pairs:
                if a.arg == test.id and isinstance(d, ast.Constant):
                    default = bool(d.value)
        return list(self.params).index(test.id), truth, default

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
        saved_grad = (set(self.nograd_keys),)
        saved_conds = self.path_conds
        conds_false: list = []  # parameter tests found false by the earlier arms
        gates = []  # what holds in every later arm: (grad-enabled test, requires_grad test) found false
        mark = len(self.bindings)
        while True:
            self.eval(current.test)
            cond = self.param_condition(current.test)
            self.path_conds = saved_conds + tuple(conds_false) + ((cond,) if cond else ())
            training = grad.training_test(current.test)  # `if self.training: ... else: <eval mode only>`
            enabled = grad.grad_enabled_test(current.test)
            requires = grad.requires_grad_test(current.test)
            before = dict(self.env)
            self.eval_branch = chain or training is False
            self._gate(enabled is False, requires if requires and not requires[1] else None)
            self.run_body(current.body)
            self.nograd_keys = set(saved_grad[0])
            arms.append(self.env)
            self.env = before
            # what follows runs only in eval mode, or (after `if torch.is_grad_enabled():`) with grad off
            chain = self.eval_branch = chain or training is True or enabled is True
            gates.append((enabled is True, requires if requires and requires[1] else None))
            if cond:
                conds_false.append(_negate(cond))
            self.path_conds = saved_conds + tuple(conds_false)
            orelse = current.orelse
            if len(orelse) == 1 and isinstance(orelse[0], ast.If):
                current = orelse[0]
                for off, key in gates:
                    self._gate(off, key)
                continue
            for off, key in gates:
                self._gate(off, key)
            self.run_body(orelse)
            arms.append(self.env)
            break
        self.eval_branch = saved
        self.nograd_keys = saved_grad[0]
        self.path_conds = saved_conds
        training = grad.training_test(node.test)
        if training is not None and len(arms) == 2:
            # `if self.training: std = noise.mul_(std)` with no else: the old `std` reaches the join only on the
            # eval path, so (by the eval-only guess) only the rules that hold without grad apply to it there
            train, evaluation = (arms[0], arms[1]) if training else (arms[1], arms[0])
            for key, origins in evaluation.items():
                other = train.get(key, EMPTY)
                if origins != other:
                    evaluation[key] = frozenset(o if o in other or param_index(o) is not None
                                                else replace(o, root_no_grad=True) for o in origins)
        if TOUCHED_MERGE:
            self.env = merge_touched(arms, {k for k, _ in self.bindings[mark:]} | self.big)
        else:
            self.env = merge(arms, self.big)
        if not node.orelse and grad.ends_flow(node.body) and conds_false and self.param_condition(node.test):
            self.path_conds = saved_conds + (conds_false[0],)  # `if copy: return x.repeat(...)`: what follows
        if not node.orelse and grad.ends_flow(node.body) and (gates[0][0] or gates[0][1]):
            # `if torch.is_grad_enabled(): return ...` / `if x.requires_grad: raise ...`: what follows runs
            # with the test false
            self._gate(*gates[0])

    def _gate(self, grad_off: bool, requires) -> None:
        """Enter a branch where grad is off (``grad_off``: ``torch.is_grad_enabled()`` was false, so the whole
        call runs with grad off, and what it made before the test was made with grad off too: only the rules
        that hold without grad apply to its writes), or where ``requires[0]`` needs no grad."""
        if grad_off and not self.settings.report_in_no_grad:
            self.eval_branch = True
        if requires:
            key = requires[0]
            self.nograd_keys.add(key)
            origins = self.env.get(key)
            if origins:
                self.env[key] = frozenset(replace(o, root_no_grad=True) if param_index(o) is None else o
                                          for o in origins)
                self.bindings.append((key, self.env[key]))  # an `if` merges the keys its arms changed

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
        grad_cond = None
        for item in node.items:
            self.eval(item.context_expr)
            m = self.grad_mode_of(item.context_expr)
            mode = m if m is not None else mode
            if m is None and isinstance(item.context_expr, ast.IfExp):
                grad_cond = self._conditional_grad_off(item.context_expr) or grad_cond
            if item.optional_vars is not None:
                self.assign(item.optional_vars, None, EMPTY)
        if mode is None and grad_cond is not None and self.grad_cond is None:
            # `with torch.no_grad() if no_grad else nullcontext():` on a parameter: walked with grad as it is
            # here; the findings carry the condition, and the project pass drops them where every call makes
            # it hold (Project.findings)
            self.grad_cond = grad_cond
            try:
                self.run_body(node.body)
            finally:
                self.grad_cond = None
            return
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
        walk = self.ctx.function_walk if self.ctx is not None else None
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

    def _conditional_grad_off(self, node: ast.IfExp) -> Optional[tuple]:
        """``torch.no_grad() if flag else nullcontext()`` (either order) on a parameter ``flag``: the condition
        under which grad is off; None otherwise."""
        cond = self.param_condition(node.test)
        if cond is None:
            return None
        body, orelse = self.grad_mode_of(node.body), self.grad_mode_of(node.orelse)
        if body is False and orelse is None:
            return cond
        if orelse is False and body is None:
            return _negate(cond)
        return None

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
                cls = self.instance_class(value_node)
                if cls is not None:
                    self.local_instances[key] = cls
                else:
                    self.local_instances.pop(key, None)
                if self.is_submodule_call(value_node):
                    self.submodule_results.add(key)
                else:
                    self.submodule_results.discard(key)
        else:
            self.eval(target)

    def instance_class(self, node: Optional[ast.expr]) -> Optional[str]:
        """``Cls(...)`` of an in-project class: its qualified name; else None."""
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
        kept, decorated = fixplan.decorator_effects(self.func)
        risky = [o for o in returns if param_index(o) is None and function_of(o) is None]
        if not risky:
            kept = ""
        elif not kept:
            kept = next((self.kept_roots[(o.root_text, o.root_line)] for o in risky
                         if (o.root_text, o.root_line) in self.kept_roots), "")
            if not kept:
                bases = {b for b in (fixplan.root_base_name(o) for o in risky) if b is not None}
                kept = fixplan.returned_elsewhere(self.facts(), bases)

        # what callers read from the summary names the file of each view step (they report it there)
        path = self.ctx.path if self.ctx is not None else None

        def located(o: Origin) -> Origin:
            return replace(o, steps=located_steps(o.steps, path)) if path is not None and o.steps else o
        if path is not None:
            returns = frozenset(located(o) for o in returns)
            writes = tuple(replace(w, steps=located_steps(w.steps, path)) if w.steps else w for w in writes)
        capped = cap(returns)
        when = tuple(sorted(((located(o), tuple(sorted(conds))) for o, conds in self.return_conds.items()
                             if located(o) in capped and o not in self.uncond_returns),
                            key=lambda p: origin_key(p[0])))
        return FunctionSummary(self.qual, tuple(self.params), capped, writes,
                               declared_no_grad, frozenset(self.observed), static, kept=kept, decorated=decorated,
                               returns_when=when)
