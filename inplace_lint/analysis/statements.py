"""Statements: control flow, scopes and returns (one job of the interpreter).

``with``/``try`` blocks update the environment; ``if``/``try`` branches and loop bodies are merged (a name *may* hold
any origin of any branch: :mod:`.env`; what leaves a block elsewhere, :mod:`.exits`); what assignments and targets bind
is :mod:`.binding`'s. ``def``/``class`` open scopes of their own and leave a function summary behind
(:mod:`.summaries`); ``import`` binds names for :mod:`.names`.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Dict, List, Optional, Sequence, Set

from ..findings import Origin, RootKind
from . import conditions, fixplan, grad, model_outputs, narrowing
from .astutil import dotted_name, is_false, last_name, method_key, short, walk_statements
from .local_conds import copy_reach, merge_reach
from .loop_passes import last_pass_body
from .env import EMPTY, cap, merge, merge_touched, negate, origin_key
from .names import LITERAL_HEADS, import_bindings
from .summaries import FunctionSummary, derived_any, function_of, located_steps, param_index, parameter_names


#: ``if`` statements merge only the keys their arms touched (tests turn it off to compare with :func:`merge`)
TOUCHED_MERGE = True

#: node type -> ``stmt_<Node>``
_STMT: dict = {}


class StatementsMixin:
    """``stmt_<Node>`` handlers and binding of targets."""

    def run_body(self, body: Sequence[ast.stmt]) -> None:
        frame = [body, 0]
        self.blocks.append(frame)
        try:
            for index, stmt in enumerate(body):
                frame[1] = index
                self.stmt(stmt)
        finally:
            self.blocks.pop()

    def rest_of_block(self, node: ast.stmt) -> Optional[Sequence[ast.stmt]]:
        """The statements after ``node`` in the block being walked, when no enclosing ``try`` may catch what
        they raise; None otherwise."""
        if not self.blocks or any(isinstance(s, ast.Try) or type(s).__name__ == "TryStar" or (
                isinstance(s, (ast.With, ast.AsyncWith)) and not all(narrowing.non_suppressing(i) for i in s.items))
                for s in self.stmt_stack):
            return None
        body, index = self.blocks[-1]
        return body[index + 1:] if index < len(body) and body[index] is node else None

    def stmt(self, node: ast.stmt) -> None:
        points = self.try_points  # (a handler may start before or after it: :mod:`.exits`)
        if points:
            self.note_try_point(node, before=True)
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
            if points:
                self.note_try_point(node, before=False)

    def stmt_Assert(self, node: ast.Assert) -> None:
        self.eval(node.test)
        if node.msg is not None:
            self.eval(node.msg)
        # `assert not x.requires_grad` / `assert not torch.is_grad_enabled()`: what follows runs only with the
        # test true, as after `if x.requires_grad: raise ...` (the arms `if test:` gives its body)
        body_off, _ = grad.grad_off_arms(node.test, self.grad_off_flags)
        body_requires, _ = grad.requires_grad_arms(node.test)
        if body_off or body_requires:
            self._gate(body_off, body_requires)

    def stmt_Raise(self, node: ast.Raise) -> None:
        for part in (node.exc, node.cause):
            if part is not None:
                self.eval(part)

    def stmt_Expr(self, node: ast.Expr) -> None:
        self.eval(node.value)
        if isinstance(node.value, ast.Call) and last_name(node.value.func) in grad.GRAD_MODE_SETTERS:
            self.grad_off_flags.clear()  # `torch.set_grad_enabled(True)`: what the flags said of grad is stale
            # (and what `if not torch.is_grad_enabled():` or an eval-mode arm said: calls may run with grad, as in
            # `with torch.enable_grad():`)
            self.grad_off_arm = self.eval_branch = False
        elif isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute) \
                and node.value.func.attr == "requires_grad_" and not (node.value.args and is_false(node.value.args[0])):
            self.nograd_keys.discard(dotted_name(node.value.func.value) or "")  # `x.requires_grad_()` ends a gate

    def stmt_Return(self, node: ast.Return) -> None:
        value = self.eval(node.value)
        if not value and node.value is not None and not self.no_grad and self.of_own_parameter(node.value):
            # (`return self.constraint.transform(self.raw)`, a `@property` of a constrained hyperparameter)
            value = frozenset({Origin(RootKind.TENSOR, short(node.value), node.value.lineno)})
        self.note_return(node.value, value)  # (computed from parameters alone, or needing no grad)
        value = self.returned_functions(node.value, value)  # (`return ns_loop if fast else slow`: callers call it)
        value = self.empty_return(node, value)  # (`if x.numel() == 0: return x`: no two elements share memory)
        if not value:
            return
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
        self._record_return(orelse, self.path_conds + (negate(cond),))
        self._record_return(value - body - orelse, self.path_conds)

    def _record_return(self, origins, conds) -> None:
        made = self.made_conds
        for o in origins:
            # and the conditions under which the statements that made it ran (`if n == 3: y = y.expand(s)`)
            when = set(conds)
            if made:
                for step in o.steps:
                    when.update(made.get(step, ()))
                when.update(made.get((o.root, o.root_text, o.root_line), ()))
            if not when:
                self.uncond_returns.add(o)
            else:
                self.return_conds.setdefault(o, set()).add(tuple(sorted(when, key=conditions.sort_key)))

    def stmt_Pass(self, node) -> None:
        pass

    stmt_Break = stmt_Continue = stmt_Global = stmt_Nonlocal = stmt_Pass

    def stmt_For(self, node: ast.For) -> None:
        self._loop(node, lambda: self.bind_iter(node.target, node.iter))

    stmt_AsyncFor = stmt_For

    def stmt_While(self, node: ast.While) -> None:
        self._loop(node, lambda: self.eval(node.test))

    def _loop(self, node, head) -> None:
        before, reach_before = dict(self.env), copy_reach(self.reach_conds)
        conds = (self.path_conds, self.local_conds)  # (`if c: return` states `not c` for a pass; a loop may run none)
        state = self._loop_state()
        # `if torch.is_grad_enabled(): continue` (or `break`) gates the rest of one pass, not the next pass nor what
        # follows the loop (a review's misses)
        gates = (self.eval_branch, self.grad_off_arm, set(self.nograd_keys))
        self.loop_stack.append(node)
        self.loop_exits.append(exits := {"exit": [], "flag": [], "next": []})  # (what left a pass: :mod:`.exits`)
        try:
            for first in (True, False):  # a second pass sees values carried around the loop
                self.eval_branch, self.grad_off_arm, self.nograd_keys = gates[0], gates[1], set(gates[2])
                self.path_conds, self.local_conds = conds
                head()
                self.run_body(node.body)
                self.next_pass(node.body, before, reach_before, exits)
                self.grad_off_flags &= state[6]  # a flag on entry that the body binds otherwise is none after
                if first and self._loop_state()[:-1] == state[:-1] and not (self.assigned - state[-1]) & LITERAL_HEADS \
                        and (self.env == before or self.carried_unread(node, before)):
                    # nothing the walk reads changed in the first pass: the second would repeat it exactly
                    # (three loops in four; nested loops were walked 2**depth times); a name the pass bound
                    # but that every pass binds before reading it changes nothing a second pass reads
                    break
        finally:
            self.loop_stack.pop()
            self.loop_exits.pop()
            self.eval_branch, self.grad_off_arm, self.nograd_keys = gates[0], gates[1], set(gates[2])
            self.path_conds, self.local_conds = conds
        self.leave_loop(exits, "flag")  # (`while err:` made false: what follows, its `else:` included)
        if (last := last_pass_body(node)) is not None:
            self.last_pass(node, head, last, before)  # (`if i < len(S) - 1: x = act(x)`: not on the last pass)
        self.run_body(node.orelse)
        self.leave_loop(exits, "exit")  # (`break` skips the `else:`)

    def _loop_state(self) -> tuple:
        """What a loop's body may change, other than ``env``, that later statements read (``assigned``: apart)."""
        return (set(self.nograd_bound), dict(self.names), dict(self.local_funcs), dict(self.inplace_modules), set(
            self.submodule_results), set(self.bool_names), set(self.grad_off_flags), self.redefined, set(self.assigned))

    def stmt_If(self, node: ast.If) -> None:
        # an elif chain is walked as a loop, not by recursion (generated code has chains of hundreds)
        arms: List[Dict[str, frozenset]] = []
        current = node
        saved = chain = self.eval_branch
        saved_grad = (set(self.nograd_keys),)
        saved_conds, saved_local, reach_before = self.path_conds, self.local_conds, self.reach_conds
        locals_false: list = []  # tests of locals found false by the earlier arms
        arm_reach: List[dict] = []
        saved_no_grad = self.no_grad
        saved_off = off_chain = self.grad_off_arm
        conds_false: list = []  # parameter tests found false by the earlier arms
        gates = []  # what holds in every later arm: (grad-enabled test, requires_grad test) found false
        narrow_later = []  # what `isinstance` tests found false say of a name in every later arm
        mark = len(self.bindings)
        flags_before = set(self.grad_off_flags)
        arm_flags: List[Set[str]] = []  # the grad-off flags each arm leaves bound
        left: List[bool] = []  # each arm ends in `return`/`raise`: what it bound never reaches the join
        while True:
            self.eval(current.test)
            cond = self.param_condition(current.test)
            # `if inplace_safe and cond:`: the body needs each part true (the else, only one of them false)
            parts = tuple(c for c in map(self.param_condition, current.test.values) if c) \
                if cond is None and isinstance(current.test, ast.BoolOp) and isinstance(current.test.op, ast.And) \
                else ((cond,) if cond else (self.implied_conditions(current.test)))
            self.path_conds = saved_conds + tuple(conds_false) + parts
            local = self.local_condition(current.test) if cond is None else None
            local_parts = tuple(c for c in map(self.local_condition, current.test.values) if c) \
                if local is None and isinstance(current.test, ast.BoolOp) and isinstance(current.test.op, ast.And) \
                else ((local,) if local else ())
            self.local_conds = saved_local + tuple(locals_false) + local_parts
            self.reach_conds = copy_reach(reach_before)
            # `if self.training: ... else: <eval mode only>`, `if not self.training and prefilter: <eval only>`
            body_mode, else_mode = grad.training_arms(current.test)
            body_off, else_off = grad.grad_off_arms(current.test, self.grad_off_flags)
            # `elif mode == 'predict':` in an mmengine model's forward: its loops run it with grad off
            predict_off = not self.settings.report_in_no_grad and self.framework_predict_arm(current.test)
            body_requires, else_requires = grad.requires_grad_arms(current.test)
            narrow_body, narrow_else = self.type_arms(current.test)
            before = dict(self.env)
            self.eval_branch = chain or body_mode is False
            self.grad_off_arm = off_chain
            self._gate(body_off, body_requires)
            self.narrow(narrow_body)
            if predict_off:
                self.no_grad = True
            self.run_body([] if self.dead_arm(current.test) else current.body)  # (a flag the dispatch rules out)
            self.no_grad = saved_no_grad
            self.nograd_keys = set(saved_grad[0])
            arms.append(self.env)
            arm_reach.append(self.reach_conds)
            arm_flags.append(self.grad_off_flags)
            self.grad_off_flags = set(flags_before)
            left.append(self.leaves_block(current.body) is not None)
            self.env = before
            # what follows runs only in eval mode, or (after `if torch.is_grad_enabled():`) with grad off
            chain = self.eval_branch = chain or else_mode is False or else_off
            off_chain = self.grad_off_arm = off_chain or else_off
            gates.append((else_off, else_requires))
            narrow_later.extend(narrow_else)
            if current is node:
                first_narrow_else, first_off = narrow_else, (body_off, else_off)
            if cond:
                conds_false.append(negate(cond))
            if local:
                locals_false.append(negate(local))
            self.path_conds = saved_conds + tuple(conds_false)
            self.local_conds = saved_local + tuple(locals_false)
            # what every later arm (an `elif`, the `else`) holds
            for off, key in gates:
                self._gate(off, key)
            self.narrow(narrow_later)
            orelse = current.orelse
            if len(orelse) == 1 and isinstance(orelse[0], ast.If):
                current = orelse[0]
                continue
            self.reach_conds = copy_reach(reach_before)
            self.run_body(orelse)
            arms.append(self.env)
            arm_reach.append(self.reach_conds)
            arm_flags.append(self.grad_off_flags)
            left.append(self.leaves_block(orelse) is not None)
            break
        self.eval_branch = saved
        self.grad_off_arm = saved_off
        self.nograd_keys = saved_grad[0]
        self.path_conds, self.local_conds = saved_conds, saved_local
        if len(arms) == 2 and arms[0] != arms[1] and narrowing.none_test(node.test) is not None:
            # `if mask is not None: ...` and `mask.squeeze(-1)` after: the arm where it is None dies there
            dies = narrowing.none_arm_dies(node, self.rest_of_block(node))
            if dies is not None:
                left[1 if dies else 0] = True
        training = grad.training_test(node.test)
        body_off, else_off = first_off
        if (body_off or else_off) and len(arms) == 2:
            # `if torch.is_grad_enabled(): v = vt.clone() else: v = vt`: on the arm where grad is off the whole
            # call runs with grad off, so everything it holds there was made without grad (saved nothing)
            on, off = (arms[1], arms[0]) if body_off else (arms[0], arms[1])
            for key, origins in off.items():
                if origins != on.get(key, EMPTY):
                    off[key] = frozenset(o if param_index(o) is not None else replace(o, root_no_grad=True)
                                         for o in origins)
        if training is not None and len(arms) == 2:
            # `if self.training: std = noise.mul_(std)` with no else: the old `std` reaches the join only on the
            # eval path, so (by the eval-only guess) only the rules that hold without grad apply to it there
            train, evaluation = (arms[0], arms[1]) if training else (arms[1], arms[0])
            for key, origins in evaluation.items():
                other = train.get(key, EMPTY)
                if origins != other:
                    evaluation[key] = frozenset(o if o in other or param_index(o) is not None
                                                else replace(o, root_no_grad=True) for o in origins)
        live = [env for env, gone in zip(arms, left) if not gone] or arms  # (`else: raise`: only the arms going on)
        live_flags = [f for f, gone in zip(arm_flags, left) if not gone] or arm_flags
        self.grad_off_flags = set.intersection(*live_flags)
        reach = self._reach_under(node, arms, mark) if len(arms) == 2 and not any(left) else None
        live_reach = [r for r, gone in zip(arm_reach, left) if not gone] or arm_reach
        self.reach_conds = merge_reach(live_reach, live)
        if TOUCHED_MERGE:  # (merge_touched may change the arms' dicts)
            self.env = merge_touched(live, {k for k, _ in self.bindings[mark:]} | self.big)
        else:
            self.env = merge(live, self.big)
        for key, entries in (reach or {}).items():
            self.reach_conds[key] = self.reach_conds.get(key, []) + entries
        if not node.orelse and left[0]:  # `if ...: return/raise` with no else: what follows runs with the test false
            if conds_false and self.param_condition(node.test):
                self.path_conds = saved_conds + (conds_false[0],)  # `if copy: return x.repeat(...)`
            elif locals_false and self.local_condition(node.test):
                self.local_conds = saved_local + (locals_false[0],)
            self.narrow(first_narrow_else)  # `if isinstance(x, Tensor): return ...`: x holds no tensor after
        if not node.orelse and training is True and grad.leaves_function(node.body) and len(self.stmt_stack) == 1:
            # `if self.training: return torch.cat(...)` at the top of a method: the rest of it runs in eval mode
            # only, the same guess as an `else:` arm (neosr's partial convolutions write in place only there)
            self.eval_branch = True
        if not node.orelse and grad.ends_flow(node.body) and (gates[0][0] or gates[0][1]):
            # `if torch.is_grad_enabled(): return ...` / `if x.requires_grad: raise ...`: what follows, test false
            self._gate(*gates[0])

    def _gate(self, grad_off: bool, requires) -> None:
        """Enter a branch where grad is off (``grad_off``: ``torch.is_grad_enabled()`` was false, so the whole
        call runs with grad off, and what it made before the test was made with grad off too: only the rules
        that hold without grad apply to its writes), or where ``requires[0]`` needs no grad."""
        if grad_off:
            self.grad_off_arm = True
        if grad_off and not self.settings.report_in_no_grad:
            self.eval_branch = True
        if requires:
            key = requires[0]
            self.nograd_keys.add(key)
            origins = self.env.get(key)
            if origins:
                self.hold(key, frozenset(replace(o, root_no_grad=True) if param_index(o) is None else o
                                         for o in origins))

    def stmt_FunctionDef(self, node) -> None:
        if self.grad_off_flags:
            # `def bump(): nonlocal flag; flag = True`: a call may rebind the name, which is then no flag
            shared = {n for stmt in walk_statements(node) if isinstance(stmt, (ast.Nonlocal, ast.Global)) for n in stmt.names}
            self.shared_names |= shared
            self.grad_off_flags -= shared
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
        if self.in_class and self.ctx is not None and not self.settings.report_in_no_grad \
                and grad.framework_no_grad(self.ctx, self.qual, node, self.self_called):
            no_grad = declared = True  # mmengine's loops run a BaseModel's `predict` under `torch.no_grad()`
        for dec in node.decorator_list:
            mode = self.grad_mode_of(dec)
            if mode is not None:
                no_grad = declared = not mode
            elif not self.settings.report_in_no_grad and self.project_wrapper(dec) == "grad-off":
                no_grad = declared = True  # `@no_grad_call` of the project: `with torch.no_grad(): return f(...)`
        qual = f"{self.qual}.{method_key(node) if self.in_class else node.name}"  # (a setter is not the getter)
        self.hand_out_decorated(node, qual)  # `@register("fp8")`: called by whoever the registry serves
        static = any(dotted_name(d) in ("staticmethod",) for d in node.decorator_list)
        child = self.child_scope(node.args, no_grad, node, qual, bound_first=self.in_class and not static)
        child.scripted = self.scripted or self.scripted_function(node)
        if self.in_class:
            child.cls_qual = self.qual
            child.class_plain = self.class_plain
            child.class_builders = self.class_builders
            child.self_name = None if static else (child.params[0] if child.params else None)
        else:
            self.local_funcs[node.name] = qual
        if self.ctx is not None:
            self.ctx.params[qual] = (parameter_names(node.args), static)
        child.local_funcs[node.name] = qual  # recursion
        walk = self.ctx.function_walk if self.ctx is not None else None
        if walk is not None:  # an open buffer: a function whose text did not change is not walked again
            self._define(qual, walk.walk(child, node, declared, static))
            return
        if self.ctx is not None and len(self.stmt_stack) == 1 and (
                self.qual == self.ctx.module or (self.in_class and self.qual.rpartition(".")[0] == self.ctx.module)):
            # at the top of the file or of a top-level class: walked when a caller first needs its summary (the
            # scope it starts from is the one made here, at the `def`)
            def walk_body() -> None:
                child.run_body(node.body)
                self._define(qual, child.summary(declared, static))
            self.ctx.defer(qual, walk_body)
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
        scope.class_plain = self.nested_class_plain(node)
        scope.class_builders = self.nested_class_builders(node)
        scope.autograd_function = grad.is_autograd_function(node) or (
            self.ctx is not None and self.ctx.function_class(scope.qual))
        scope.class_no_grad = grad.class_runs_without_grad(node) or scope.autograd_function
        scope.self_called = grad.methods_called_on_self(node, self.ctx, scope.qual)
        scope.set_class_facts(node)
        scope.run_body(node.body)
        self.bind_name(node.name, EMPTY)

    def stmt_Import(self, node) -> None:
        bound = import_bindings(node, self.package)
        for name, target in bound.items():
            self.bind_name(name, EMPTY)  # (a new ident too)
            self.names[name] = target
            self.assigned.discard(name)
            self.local_funcs.pop(name, None)

    stmt_ImportFrom = stmt_Import

    def summary(self, declared_no_grad: bool, static: bool) -> FunctionSummary:
        """This (function) scope's summary, after its body was walked."""
        # an annotation's root travels with the parameter's placeholder: a caller passing something known drops it
        returns = frozenset(o for o in self.returns if not model_outputs.is_guessed_object(o))
        returned = {param_index(o) for o in self.returns} - {None}
        for key in self.rooted_keys:
            # a parameter bound again (in a branch, later in a loop) may hold what no caller passed: a finding here
            found = self.sink.get(key)
            if found is not None and found.param_rooted is not None \
                    and self.params[found.param_rooted] in self.rebound_params:
                self.sink[key] = replace(found, param_rooted=None)
        writes = tuple(replace(w, kept=w.kept or w.index in returned) if w.via is None else w
                       for w in self.param_writes)
        kept, decorated = fixplan.decorator_effects(self.func, self.project_wrapper)
        risky = [o for o in returns if param_index(o) is None and function_of(o) is None]
        if not risky:
            kept = ""
        elif not kept:
            kept = next((self.kept_roots[(o.root_text, o.root_line)] for o in risky
                         if (o.root_text, o.root_line) in self.kept_roots), "")
            if not kept and self.output_hook and getattr(self.func, "name", "") == "forward":
                kept = "a forward hook the class registers receives it"
            if not kept and (self.ctx is None or self.ctx.plan_fixes):  # only fix safety reads it
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
        when = tuple(sorted(((located(o), tuple(sorted(conds, key=repr))) for o, conds in self.return_conds.items()
                             if located(o) in capped and o not in self.uncond_returns),
                            key=lambda p: origin_key(p[0])))
        # the names as ctx.params_of gives them (`*args`/`**kwargs` starred): calls in other files bind by them
        args = getattr(self.func, "args", None)
        params = parameter_names(args) if isinstance(args, ast.arguments) else tuple(self.params)
        gradless, flows_out = self.params_read_without_grad(params) if writes else (frozenset(), frozenset())
        return FunctionSummary(self.qual, params, capped, writes,
                               declared_no_grad, frozenset(self.observed), static, kept=kept, decorated=decorated,
                               returns_when=when, saves=tuple(sorted((i, *v) for i, v in self.saved_params.items())),
                               gradless=gradless, flows_out=flows_out, computed=frozenset(self.computed_returns) if not
                               self.generator else frozenset(), no_grad_result=0 < self.return_count ==
                               self.gradless_returns and not self.generator)
