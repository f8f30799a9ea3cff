"""Matching and reporting: which rule a write's origins match, the finding, its planned fix (one job
of the interpreter). Writes that reach a parameter are recorded for the function's summary."""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import NamedTuple, Optional, Sequence, Tuple

from ..findings import HELPER_WRITE, Applicability, Finding, Origin, Related, RootKind, StepKind, WriteKind
from ..rules import PRIORITY, Write
from . import conditions, fixplan, model_outputs, rereads
from .astutil import defaults as parameter_defaults, dotted_name, short, walk_ast
from .consumers import flows_into, only_gradless_readers
from .env import origin_key
from .fix_planning import FixPlanningMixin
from .out_calls import NEEDS_GRAD
from .summaries import LocalFinding, ParamWrite, param_index


def _written_base(target: ast.expr) -> Optional[str]:
    """The name (or dotted name) whose tensor a write reaches: ``x`` for ``x[0]``, ``x.view(-1)``, ``x``."""
    while True:
        key = dotted_name(target)
        if key is not None:
            return key
        if isinstance(target, ast.Subscript):
            target = target.value
        elif isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute):
            target = target.func.value
        else:
            return None


#: ops whose result never requires grad (an index, a sample count, a bool, a Python number)
def point_index(node: ast.AST, kind: WriteKind) -> bool:
    """Item assignment whose index has no slice and no ``...`` (``x[0] = v``, ``x[mask] += v``)."""
    if kind is not WriteKind.SUBSCRIPT:
        return False
    sub = node if isinstance(node, ast.Subscript) else getattr(node, "target", None)
    if not isinstance(sub, ast.Subscript):
        return False
    parts = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
    return not any(isinstance(e, ast.Slice) or (isinstance(e, ast.Constant) and e.value is Ellipsis) for e in parts)


def match(origins: Sequence[Origin], write: Write, no_grad: bool, report_in_no_grad: bool,
          grad_context: bool = False, params: Optional[Sequence[str]] = None):
    """The first rule (by priority) some origin matches, and the origin that shows it; or (None, None).
    ``params``: the writing function's parameters, where a rule that needs evidence (:attr:`.Rule.needs_evidence`)
    leaves out the origins that are only guesses made here.

    ``no_grad``: the write needs no autograd rule; ``grad_context``: that is only because the write sits in a
    grad-off block (``with torch.no_grad():``), so a rule that looks at the origin's grad mode
    (``grad_at_origin``: a tensor saved for backward with grad on) still applies."""
    tensors = model_outputs.written_tensors(origins, write.kind)
    if not tensors:
        return None, None
    for rule in PRIORITY:
        if no_grad and not (rule.without_grad or report_in_no_grad or (grad_context and rule.grad_at_origin)):
            continue
        matching = [o for o in tensors if rule.applies(o, write)
                    and not (rule.needs_evidence and params is not None and _unevidenced(o, params))]
        if matching:
            return rule, min(matching, key=origin_key)
    return None, None


def _unevidenced(origin: Origin, params: Sequence[str]) -> bool:
    """Only a guess that a value made here is a tensor (``torch.chunk(a0, 2)`` of what nothing tracks): no evidence
    that it requires grad, and not made from one of the function's parameters (its callers decide those)."""
    return origin.guessed and origin.guess_param < 0 and origin.root_text not in params


def with_condition(message: str, origin: Origin) -> str:
    """The rule's message, with the condition under which the write raises when there is one. Not the root's own
    (``raises when `decoder` is `_Decoder` ...``) where an op saved the tensor for another input's gradient: the
    backward raises whatever the tensor is (a guess about a parameter still names it)."""
    if origin.condition and origin.guess_param < 0 and any(s.kind is StepKind.SAVED_FOR_OTHER for s in origin.steps):
        return message
    return f"{message} ({origin.condition})" if origin.condition else message


class ReportingMixin(FixPlanningMixin, rereads.RereadsMixin):
    def report(self, node: ast.AST, kind: WriteKind, op: str, target: ast.expr, origins, op_name: Optional[str] = None,
               no_fix: bool = False, write_no_grad: bool = False, helper: Optional["HelperWrite"] = None,
               condition: Optional[str] = None, layer: Optional[str] = None) -> None:
        """Report the write at ``node`` if ``target``'s origins match a rule; ``op_name`` is the in-place
        method it amounts to (``div_`` for ``x.div_(t)`` and ``x /= t``), for fix planning. ``helper``:
        ``node`` is a call whose callee writes ``target`` (its argument) there: the finding is reported at
        the call, its first related location is the write, and its message says what the caller can do.
        ``condition``: the run-time condition under which the write happens (:attr:`rules.Write.condition`).
        ``layer``: the write is a call of a layer built with ``inplace=True`` (``self.act(x)``; its class name), so
        the call does not show it: a later read of the written name is reported too (:attr:`rules.Write.reread`)."""
        write_no_grad = write_no_grad or self.eval_branch or (
            bool(self.nograd_keys) and _written_base(target) in self.nograd_keys)
        real = []
        placeholders = []
        gated = self.gated_params()
        write_no_grad = write_no_grad or self.from_gated_params(origins, gated)
        for o in origins:
            index = param_index(o)
            if index is None:
                real.append(o)
            elif self.ctx is not None and self.recording:
                placeholders.append((index, o))
        if len(placeholders) > 1:
            # in parameter order, not the set's (string hashes vary per process): the summary's writes,
            # and so which argument a call reports, are the same in every run
            placeholders.sort(key=lambda p: (p[0], origin_key(p[1])))
        for index, o in placeholders:
            self.record_param_write(node, kind, op, target, o, index, None, op_name,
                                    write_no_grad or self.param_name(index) in gated, condition, layer=layer)
        unpruned = real
        real = self.reachable(_written_base(target), real)
        if layer is None and helper is None and isinstance(target, ast.Name) and isinstance(node, ast.Call) \
                and self.func is not None and not isinstance(self.func, ast.Module) and (
                    kind is WriteKind.INPLACE_KWARG or kind in (WriteKind.METHOD, WriteKind.FUNCTION)
                    and (op_name or "").rstrip("_") in rereads.ACTIVATION_OPS) \
                and rereads.value_used(self.facts(), node, target.id):
            layer = rereads.VALUE_USED  # `h = F.relu(x, inplace=True); ... + x`: `h` is `x`, which reads as the input
        reread = self.hidden_write_reread(node, target, layer) if layer else None
        if not real and reread is not None:  # (a parameter: this function reads what it wrote, whatever it was)
            real = unpruned = [Origin(RootKind.TENSOR, reread[0], node.lineno)]
        if not real:
            return
        if condition is None and self.path_conds:  # `if prefix_trans is not None: trans *= prefix_trans`
            condition = " and ".join(f"`{conditions.describe(c, self.params)}`" for c in self.path_conds)
        write = Write(op, op_name, kind, short(target), point_index(node, kind), condition,
                      reread[1:] if reread is not None else None)
        rule, origin = match(real, write, self.no_grad or write_no_grad, self.settings.report_in_no_grad,
                             grad_context=not write_no_grad, params=self.params)
        stale = self.stale_multi_view(node, _written_base(target), write) if rule is None and not write_no_grad \
            else None
        if stale is not None:  # (`z[:, 3:] = v` after `c, u = z.split(...)`, and `u` read again: no fix)
            (origin, write), no_fix = stale, True
            real = unpruned = [origin]
            rule = match(real, write, False, False, params=self.params)[0]
        if rule is None:
            return
        held_when = self._held_when(_written_base(target), origin)
        if held_when and (condition is None or held_when not in condition):
            # `if shift != 0: cloud = w * cloud` with no else: the expanded `cloud` reaches the write only where
            # `shift == 0`, which the message states beside the write's own path
            condition = f"{condition} and {held_when}" if condition else held_when
            write = replace(write, condition=condition)
        key = (node.lineno, node.col_offset)
        if key in self.sink:
            if self.loop_stack and not no_fix and not self.no_grad:
                self._replan_in_loop(key, node, kind, target, op_name, real, unpruned)
            return
        if origin.root is RootKind.SAVED_OUTPUT and rule.grad_at_origin and self.only_gradless_consumers(node, origin):
            return
        if any(s.text == ".data" for s in origin.steps):
            # through `.data` autograd does not see the write: whether the backward should see the new values
            # is the author's choice, not a rewrite's
            no_fix = True
        if self.no_grad and not rule.without_grad:
            # a saved tensor written under no_grad: the out-of-place form would make a tensor that needs no
            # grad, so the caller's backward would lose this path instead of raising: no fix
            no_fix = True
        target_text = write.target
        fix = observed = alt = None
        self.withheld = ""
        if not no_fix and not rule.about_readers:
            fix, alt, observed = self._plan_fixes(node, kind, target, op_name, real, unpruned)
            if observed:
                self.observed |= observed
        withheld = self.withheld if fix is None else ""
        here = self.ctx.path if self.ctx is not None else None
        related = tuple(r if r.path is None or r.path != here else replace(r, path=None) for r in origin.related())
        if rule.about_readers:  # (IPV007: who reads the written tensor again, not what made it risky)
            withheld = rereads.remedy(short(target), helper.name if helper is not None else None,
                                      helper.line if helper is not None else 0, layer)
            related = (Related(f"{write.reread[0]} read again", write.reread[1], write.reread[2]),)
            message = rule.message(write, origin)
        else:
            message = with_condition(rule.message(write, origin), origin)
            if not origin.condition and rule.code in NEEDS_GRAD and 0 <= origin.guess_param < len(self.params):
                message = f"{message} (it does when `{self.params[origin.guess_param]}` requires grad)"  # (a guess)
        if condition and condition not in message:  # a rule whose message does not say it (IPV003, IPV004)
            message = f"{message}, when {condition}"
        if helper is not None:
            related = (Related(f"the write in `{helper.name}()`", helper.line, helper.col,
                               None if helper.path == here else helper.path, role=HELPER_WRITE),) + related
            remedy = self.plan_call_remedy(node, target, real, helper.twin, helper.kept) \
                if not rule.about_readers else None
            if remedy:
                message = f"{message}; at this call: {remedy}"
        finding = Finding(
            code=rule.code, line=node.lineno, col=node.col_offset,
            end_line=node.end_lineno or node.lineno, end_col=node.end_col_offset or node.col_offset,
            message=message, op=op, write_kind=kind,
            target=target_text, origin=origin, fix=fix, related=related, no_fix=withheld,
        )
        guessed = self.saved_guess(real, write, rule)
        if self.past_out_call(guessed) or rule.code in NEEDS_GRAD and self.past_out_call_of(
                [o for o in model_outputs.written_tensors(real, kind) if rule.applies(o, write)
                 and not any(s.kind is StepKind.SAVED_FOR_OTHER for s in o.steps)]):
            # an `out=` call on every path here consumed what the guess is about, or the written tensor: with it
            # requiring grad, that call raised in the forward ("functions with out=... arguments don't support
            # automatic differentiation"), so the backward this write breaks never runs (torch-sla's CG loops, set BZ)
            self.sink.pop(key, None)
            return
        rooted = self.param_rooted(real, write, rule, self.no_grad or write_no_grad, {i for i, _ in placeholders})
        if rooted is not None:
            self.rooted_keys.append(key)  # undone in summary() if the parameter is bound again
        self.sink[key] = LocalFinding(finding, self.qual, grad_rule=not rule.without_grad,
                                      observed=frozenset(observed or ()), fix_if_callers=alt,
                                      param_rooted=rooted, grad_cond=self.grad_cond or self.made_under_cond(
                                          real, write, rule),
                                      guess_params=guessed,
                                      guards=conditions.needs_true(self.path_conds))

    def _held_when(self, key: Optional[str], origin: Origin) -> str:
        """The conditions on parameters (or ``__init__`` flags) under which ``key`` holds ``origin`` here
        (:attr:`reach_conds`), as the message shows them; "" when it holds it on every path."""
        if key is None or not self.reach_conds or self.loop_stack:
            return ""  # (in a loop, what the passes merged is capped: a condition there is not stated)
        conds = sorted({c for held, c in self.reach_conds.get(key, ()) if origin.derived_from(held)
                        and (type(c[0]) is int or str(c[0]).startswith(conditions.INIT))}, key=conditions.sort_key)
        return " and ".join(f"`{conditions.describe(c, self.params)}`" for c in conds)

    def _plan_fixes(self, node: ast.AST, kind: WriteKind, target: ast.expr, op_name: Optional[str], real,
                    unpruned=()):
        """The write's fix; the fix that is safe once every caller is checked (when the first is unsafe only
        because of the parameters it involves) and those parameters; ``(fix, None, None)`` otherwise.
        ``unpruned``: the written name's values before the paths its conditions exclude were taken out; a
        fix is safe only if it is safe with them too (which paths run is a guess a finding may rest on, a
        rewrite may not: ``toggle(self)`` may flip the ``self.hold`` two tests read)."""
        fix = self.plan_fix(node, kind, target, op_name, real)
        if fix is not None and fix.applicability.value == "safe" and set(unpruned) - set(real):
            wider = self.plan_fix(node, kind, target, op_name, unpruned)
            if wider is None or wider.applicability.value != "safe":
                reason = wider.reason if wider is not None and wider.reason else (
                    f"on a path its conditions seem to exclude, `{short(target)}` holds another value")
                fix = replace(fix, applicability=Applicability.UNSAFE, reason=reason)
        if fix is not None and fix.applicability.value == "unsafe" and self.params:
            involved = self.involved_params(target, real)
            if involved:
                alt = self.plan_fix(node, kind, target, op_name, real, callers_checked=True)
                if alt is not None and alt.applicability.value == "safe":
                    return fix, alt, involved
        return fix, None, None

    def _replan_in_loop(self, key, node: ast.AST, kind: WriteKind, target: ast.expr, op_name: Optional[str],
                        real, unpruned) -> None:
        """A write reported on a loop's first pass, met again on the second with what the loop carries
        (``beta.mul_(0.5); beta = x`` in one body: from the second pass on ``beta`` is ``x``): its fix keeps
        the less safe of the two plans (a fix planned from the first pass's values alone missed the name
        the loop carries in, read after the loop)."""
        local = self.sink[key]
        before = local.finding.fix
        if before is None or before.applicability.value != "safe" and local.fix_if_callers is None:
            return
        fix, alt, observed = self._plan_fixes(node, kind, target, op_name, real, unpruned)
        if before.applicability.value == "safe":
            if fix is None or fix.applicability.value != "safe":
                local.finding = replace(local.finding, fix=fix)
                local.fix_if_callers = alt
                local.observed = frozenset(observed or ())
                self.observed |= local.observed
            return
        if alt is None or alt.applicability.value != "safe" or not (observed or set()) <= local.observed:
            local.fix_if_callers = None
            local.observed = frozenset()

    def made_under_cond(self, origins: Sequence[Origin], write: Write, rule) -> Optional[tuple]:
        """The condition that turns grad off where every origin that makes ``rule`` apply was made (``with
        torch.no_grad() if no_grad else nullcontext(): logits = model(x).logits``, written after the block),
        for a rule that needs grad where the tensor was made; None otherwise."""
        if not self.grad_cond_spans:
            return None
        matching = [o for o in model_outputs.written_tensors(origins, write.kind) if rule.applies(o, write)]
        found = set()
        for o in matching:
            # (an input saved for another's gradient: what matters is where the op that saved it ran)
            saved = next((s for s in o.steps if s.kind is StepKind.SAVED_FOR_OTHER), None)
            off = replace(o, root_no_grad=True, steps=tuple(replace(s, no_grad=True) if s is saved else s
                                                            for s in o.steps))
            if rule.applies(off, write):
                return None  # the rule holds for a tensor made with grad off too
            line = saved.line if saved is not None else o.root_line
            span = next((c for first, last, c in self.grad_cond_spans if first <= line <= last), None)
            if span is None or o.path is not None:
                return None
            found.add(span)
        return found.pop() if len(found) == 1 else None

    def saved_guess(self, origins: Sequence[Origin], write: Write, rule) -> Optional[Tuple[int, ...]]:
        """The parameters the origins that make ``rule`` apply guess their grad from, when each is such a guess
        (an output saved for backward of an op whose input is computed from parameters alone: one origin per
        parameter, :meth:`guesses_of`), or None."""
        matching = [o for o in model_outputs.written_tensors(origins, write.kind) if rule.applies(o, write)]
        guesses = {o.guess_param for o in matching}
        if guesses and -1 not in guesses:
            return tuple(sorted(guesses))
        return None

    def only_gradless_consumers(self, node: ast.AST, origin: Origin, through_calls: bool = False) -> bool:
        """Every read of the saved output written at ``node`` (through the names that hold it, or the write's
        own value) feeds an op whose result never requires grad (``torch.multinomial``, ``argmax``, a
        comparison, ``.item()``, ...): no backward passes through the op that saved it, so the write cannot
        fail (docs/pytorch-facts.md#saved-output). ``torch.bernoulli`` is not one: its result has a
        ``BernoulliBackward0`` node, and a backward through it reaches the saved output."""
        if self.func is None:
            return False
        facts = self.facts()
        stmt = self.stmt_stack[-1] if self.stmt_stack else None
        names = {k for k, os in self.env.items() if "." not in k and any(
            o.root is origin.root and o.root_line == origin.root_line and o.root_text == origin.root_text for o in os)}
        value = getattr(stmt, "value", None)
        consumed = False  # the write's own value went into a consumer without a gradient (`p.div_(q).argmax()`)
        if isinstance(stmt, ast.Assign) and value is not None and any(n is node for n in walk_ast(value)):
            if not through_calls:
                # the names the write's own value is bound to: not those of `t = p.div_(q).argmax()`, whose value
                # went through a consumer without a gradient
                flow = flows_into(node, facts.parents)
                if flow is None:
                    return False
                names |= flow
                consumed = not flow
        elif isinstance(stmt, ast.Expr) and stmt.value is node:
            pass
        elif not names:
            return flows_into(node, facts.parents) == set()
        # (`through_calls`: read by the call at `node` too, whose summary says if its result holds it: followed so)
        skip = self.read_before(names, origin) if through_calls else {id(n) for n in walk_ast(node) if type(n) is ast.Name}
        return only_gradless_readers(names, lambda name: facts.by_name.get(name, ((), ()))[1], facts.parents, node,
                                     skip, facts.captured_loads, () if through_calls else self.params, facts.declared,
                                     unread=consumed, callee=self.callee_reads if through_calls else None)

    def param_rooted(self, origins: Sequence[Origin], write: Write, rule, no_grad: bool,
                     reached: Sequence[int] = ()) -> Optional[int]:
        """The parameter every origin that makes ``rule`` apply was guessed from (its annotation, or a view
        taken of the parameter itself, whose root is named after it), if it still holds the parameter
        and nothing else written here matches a rule of its own (a lower one: ``y = x.chunk(2)[0] if c
        else model(ids).logits.squeeze(0)``, where the model output is not the callers' to decide)."""
        if self.ctx is None or not self.params:
            return None
        matching = [o for o in model_outputs.written_tensors(origins, write.kind) if rule.applies(o, write)]
        names = {self._guessed_from(o) for o in matching}
        if len(names) != 1:
            return None
        name = names.pop()
        if name is None or name not in self.params:
            return None
        rest = [o for o in origins if self._guessed_from(o) != name]
        if rest and match(rest, write, no_grad, self.settings.report_in_no_grad)[0] is not None:
            return None
        index = list(self.params).index(name)
        if any(o.root is not RootKind.TENSOR for o in matching) and index not in reached:
            return None  # `outputs.logits`: the callers' objects do not reach the write (a field is not followed)
        return index if any(param_index(o) == index for o in self.env.get(name, ())) else None

    def _guessed_from(self, origin: Origin) -> Optional[str]:
        """The parameter ``origin`` is a guess about: its ``torch.Tensor`` annotation or a view taken of it
        (a root named after it), or its name (``outputs[0]`` of a parameter called ``outputs``)."""
        if origin.root is RootKind.TENSOR:
            return origin.root_text
        if origin.root in (RootKind.MODEL_OUTPUT, RootKind.MODEL_OUTPUT_OBJECT) and "(" not in origin.root_text:
            head = fixplan.root_base_name(origin)
            if head is not None and head in self.settings.model_output_params:
                return head
        return None

    def involved_params(self, target: ast.expr, origins: Sequence[Origin]) -> frozenset:
        """Indexes of the parameters a fix would hide the write from: the target or a view's base."""
        names = {fixplan.write_target_name(WriteKind.METHOD, target)}
        names |= {fixplan.root_base_name(o) for o in origins}
        return frozenset(i for i, p in enumerate(self.params) if p in names) | \
            frozenset(self._held_parameters(WriteKind.METHOD, target))

    def record_param_write(self, node: ast.AST, kind: WriteKind, op: str, target: ast.expr, origin: Origin, index: int,
                           via: Optional[Tuple[str, str, int, int]], op_name: Optional[str] = None,
                           write_no_grad: bool = False, condition: Optional[str] = None, when: tuple = (),
                           layer: Optional[str] = None, inner: Optional[ParamWrite] = None) -> None:
        """``when``: the conditions a helper's write needs, on this function's parameters (this path's own
        conditions are added here). ``layer``: the write is a call of a layer built with ``inplace=True``.
        ``inner``: the callee's write this call passes on (``node`` is then the call): what it knew of the written
        item's index stays known."""
        if any(w.line == node.lineno and w.col == node.col_offset and w.index == index for w in self.param_writes):
            return
        fix = alt = None
        if via is None and self.func is not None:
            fix = self.plan_fix(node, kind, target, op_name, [origin])
            if fix is not None and fix.applicability.value == "unsafe":
                alt = self.plan_fix(node, kind, target, op_name, [origin], callers_checked=True)
                if alt is not None and alt.applicability.value != "safe":
                    alt = None
                if alt is not None:
                    self.observed.add(index)
        on_tensor = kind in (WriteKind.AUGMENTED, WriteKind.SUBSCRIPT) and self.annotated_tensor(index)
        self.param_writes.append(ParamWrite(
            self.qual, index, self.ctx.path, node.lineno, node.col_offset, node.end_lineno or node.lineno,
            node.end_col_offset or node.col_offset, op, kind, origin.steps, short(target),
            self.no_grad or self.grad_off_arm or write_no_grad,
            kept=via is None and self.read_after(target, node), via=via, op_name=op_name,
            point_index=inner.point_index if inner is not None else point_index(node, kind), guard=self.default_guard(),
            fix=fix, fix_if_callers=alt,
            condition=condition, when=tuple(sorted(set(self.path_conds) | set(when), key=repr)),
            on_tensor=on_tensor, layer=layer,
            past_out=tuple(sorted(self.out_consumed())),
            keyed=inner.keyed if inner is not None else kind is WriteKind.SUBSCRIPT and isinstance(node, ast.Subscript)
            and not on_tensor and self.plain_store(node) and (self.string_key(node.slice) or isinstance(
                node.value, ast.Name) and node.value.id == self.params[index] and self.annotated_container(index)),
            number=inner.number if inner is not None else via is None and kind is WriteKind.AUGMENTED
            and isinstance(target, ast.Name) and self.number_default(index)))

    def default_guard(self) -> tuple:
        """Parameters whose default skips the statement being walked: ``if t != 1.0:`` (``t=1.0``),
        ``if t is not None:`` / ``if t:`` (``t=None``)."""
        args = getattr(self.func, "args", None)
        if args is None:
            return ()
        defaults = parameter_defaults(args)
        if not defaults:
            return ()
        out = []
        for outer, inner in zip(self.stmt_stack, self.stmt_stack[1:]):
            if not isinstance(outer, ast.If) or not any(inner is s for s in outer.body):
                continue
            name = _skipped_by_default(outer.test, defaults)
            if name is not None and name in self.params:
                out.append(list(self.params).index(name))
        return tuple(out)

    def read_after(self, target: ast.expr, node: ast.AST) -> bool:
        """The written name (or the base of the written item) is read after the write in this function."""
        base = target
        while isinstance(base, (ast.Attribute, ast.Subscript, ast.Call)):
            base = base.func if isinstance(base, ast.Call) else base.value
        if not isinstance(base, ast.Name) or self.func is None:
            return False
        end = (node.end_lineno or node.lineno, node.end_col_offset or 0)
        return self.facts().loaded_after(base.id, end)

    def is_unread_after(self, arg: Optional[ast.expr], call: ast.Call) -> bool:
        """The argument is a temporary, or a local name the caller neither reads nor lets escape after the call."""
        if arg is None or self.func is None or isinstance(self.func, ast.Module):
            return False
        base = fixplan.shared_base(arg)
        while isinstance(base, (ast.Attribute, ast.Subscript)):
            base = fixplan.shared_base(base.value)  # `out.logits.view(-1)`: a field of `out`
        if base is not arg:  # `out.view(-1)`, `out[0]`, `out.float()`, `out.mul_(2)`: `out`'s storage
            # (a view of a call's result, `model(ids).logits.squeeze(0)`, is a temporary's)
            return self.is_unread_after(base, call) if isinstance(base, ast.Name) else isinstance(
                base, (ast.Call, ast.BinOp))
        if isinstance(arg, (ast.Call, ast.BinOp)):
            return True
        if not isinstance(arg, ast.Name) or self.loop_stack:
            return False
        facts = self.facts()
        if any(isinstance(p, fixplan.REPEATED) for p in facts.path_to(call)):
            return False  # a comprehension or lambda passes the same object on every step
        if fixplan.kept_reason(self.env.get(arg.id, ()), self.kept_roots):
            return False  # what it holds is also held elsewhere (a cache, `self.last`)
        end = (call.end_lineno or call.lineno, call.end_col_offset or 0)
        if facts.loaded_after(arg.id, end):
            return False  # the caller reads what it passed (fix planning would only look at other names)
        # other aliases read afterwards (`x = base`, `x = base.T`: the caller's `base` sees what the callee
        # writes through `x`), escapes before the call, parameters, globals
        origins = [o for o in self.env.get(arg.id, ()) if param_index(o) is None]
        roots = {(o.root, o.root_text, o.root_line) for o in origins}
        aliases = sorted(k for k in self.holders(origins) if "." not in k and "[" not in k and k != arg.id
                         and any((o.root, o.root_text, o.root_line) in roots for o in self.env.get(k, ())))
        applicable, _ = fixplan.applicability(facts, self.params, arg.id, origins, aliases, call, self.loop_stack)
        return applicable.value == "safe"


class HelperWrite(NamedTuple):
    """The write inside a called helper that a finding at the call stands for: the helper's name, the
    write's file and position, and the helper's out-of-place twin when the project has one."""

    name: str
    path: str
    line: int
    col: int
    twin: Optional[str] = None
    #: the helper keeps using what it wrote (returns it or reads it afterwards)
    kept: bool = False


def _skipped_by_default(test: ast.expr, defaults) -> Optional[str]:
    """The parameter whose default value makes ``test`` false, or None."""
    if isinstance(test, ast.Name) and test.id in defaults:
        d = defaults[test.id]
        return test.id if isinstance(d, ast.Constant) and not d.value else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name) \
            and test.left.id in defaults:
        d, right, op = defaults[test.left.id], test.comparators[0], test.ops[0]
        if isinstance(d, ast.Constant) and isinstance(right, ast.Constant):
            if isinstance(op, ast.NotEq) and d.value == right.value:
                return test.left.id
            if isinstance(op, ast.IsNot) and d.value is None and right.value is None:
                return test.left.id
    return None
