"""Grad at a call: what an op's backward saves and reads, and whether a call's inputs need grad.

An input read by a backward that runs with grad on is marked saved (``docs/pytorch-facts.md#saved-input``);
an input read only by something that takes no gradient (``x.max().item()``) saves nothing the analysis
speaks for; an untracked expression requires grad only by evidence (a submodule's result, an
``nn.Parameter`` attribute). Used by :mod:`.calls` and :mod:`.project_calls`.
"""
from __future__ import annotations

import ast
import re
from dataclasses import replace
from typing import Callable, Dict, List, Optional

from ..findings import SAVED_STEPS, Origin, RootKind, Step, StepKind
from ..torch_facts import ops
from .astutil import dotted_name, is_false, is_str_constant, kw, last_name, short, sliced_name
from .grad_reads import GradReadsMixin
from .layer_inputs import LayerInputsMixin
from .param_guesses import ParamGuessesMixin
from .storage import StorageMixin, basic_view, whole_read
from .param_guesses import guessed_param  # noqa: F401 (re-exported)
from .env import EMPTY, cap
from .model_outputs import ALL_LAYERS
from .expressions import holder_of, is_basic_index
from .saved_ops import returns_tuple
from .summaries import no_grad_value, param_index


def is_literal(node: ast.AST) -> bool:
    """``0.5``, ``-1``, ``(1, 2)``: a number or a tuple of them, never a tensor."""
    if isinstance(node, ast.UnaryOp):
        return is_literal(node.operand)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(is_literal(e) for e in node.elts)
    return isinstance(node, ast.Constant)


def known_origins(origins: frozenset) -> frozenset:
    """The origins that are not parameter placeholders (what is known at this point of the walk)."""
    return frozenset(o for o in origins if param_index(o) is None) if origins else origins


def needs_no_grad_arg(node: ast.AST, origins: frozenset) -> bool:
    """An argument that needs no grad: a literal, known origins that need none, or a view chain of a detached
    tensor (``w.data.transpose(0, 1)``, ``x.detach()[0]``)."""
    if is_literal(node) or no_grad_value(origins):
        return True
    while True:
        if is_detached(node):
            return True
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr in ops.VIEW_METHODS or node.func.attr in ops.MAY_ALIAS_METHODS):
            node = node.func.value
        else:
            return False


def is_detached(node: ast.AST) -> bool:
    """``x.detach()`` or ``x.data``: autograd no longer tracks what follows; also through ``typing.cast(T, x)``
    (which returns ``x``)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "data"
    if isinstance(node, ast.Call) and last_name(node.func) == "cast" and len(node.args) == 2 and not node.keywords:
        return is_detached(node.args[1])
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "detach"


#: methods whose result never requires grad, whatever the receiver (docs/pytorch-facts.md#grad-off)
_NO_GRAD_METHODS = frozenset({"detach", "argmax", "argmin", "argsort", "long", "int", "bool", "item", "tolist",
                              # comparisons make bool tensors (`2 * x.ge(0) * buf[k - 1]` saves no row of `buf`)
                              "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite", "logical_not",
                              "logical_and", "logical_or", "logical_xor"}) | ops.FACTORY_METHODS  # (`w.new_zeros(n)`)


class CallGradMixin(LayerInputsMixin, GradReadsMixin, ParamGuessesMixin, StorageMixin):
    """Grad facts about a call's inputs (a part of :class:`~.dataflow.Scope`)."""

    def mark_saved_input(self, arg: ast.expr, op: str, line: int, call: ast.Call) -> None:
        """``arg`` was read by the backward of ``op``, which ran with grad on: a later in-place write to the
        tensor the name holds fails at backward when it requires grad (docs/pytorch-facts.md#saved-input).
        Only names (and dotted names) whose value is tracked and may require grad by evidence are marked
        (:attr:`Origin.grad_evidence`); a parameter's placeholder is marked too, for its callers to decide.
        Nothing is marked when no backward can reach ``call`` (:meth:`_output_read_without_grad`)."""
        key = dotted_name(arg)
        origins = self.env.get(key) if key is not None else None
        if not origins and self._parameter_attribute(arg):
            origins = frozenset({Origin(RootKind.TENSOR, key, line)})  # `torch.sqrt(1 - self.v ** 2)` saved `self.v`
            self.hold(key, origins)
        untracked = whole_read(arg, self.known_ints())
        if not origins and untracked is not None and not self.env.get(untracked) and self.recording:
            guesses = self.untracked_guesses(untracked, line)
            if guesses and not self._output_read_without_grad(call):
                # `x = F.unfold(x, k).transpose(1, 2); x.var(-1)`: a local computed from parameters by torch ops
                # alone (left untracked) is a guess about them, marked saved for its callers to decide; so is a
                # basic view of one (`out = coords.clone(); out[..., 0].clamp(-1, 1)` saved a view of `out`)
                step = Step(StepKind.SAVED_INPUT, op, line)
                named = " or ".join(f"`{self.params[g]}`" for g in guesses)
                self.hold(untracked, frozenset(Origin(RootKind.TENSOR, untracked, line, guessed=True, guess_param=g,
                                                      condition=f"it does when {named} requires grad")
                                               .extend(step) for g in guesses))
            return
        if not origins and isinstance(arg, ast.Name) and self.recording:
            return
        holder = key or holder_of(arg)
        if holder is None or not self.env.get(holder) or self._output_read_without_grad(call):
            return
        if key is None and not self.view_subscript(arg):
            return
        if "." not in holder and self.recording and self._local_guesses(self.env[holder]) \
                and basic_view(arg, self.known_ints()):
            # `qu = matrix * 2` with `matrix: Tensor`, then `torch.abs(qu[..., 0])`: a tensor this function computed
            # from its parameters, known only as a guess about them, marked saved as an untracked one is above;
            # through an index only basic indexing says is a view (`temp[mask] ** 3` reads a copy)
            guesses = self._local_guesses(self.env[holder])
            named = " or ".join(f"`{self.params[g]}`" for g in guesses)
            step = Step(StepKind.SAVED_INPUT, op, line)
            for name in self.sharing_storage(holder):
                if name == holder or self.env.get(name):
                    self.hold(name, cap(set(self.env.get(name) or ()) | {Origin(
                        RootKind.TENSOR, name, line, guessed=True, guess_param=g,
                        condition=f"it does when {named} requires grad").extend(step) for g in guesses}))
            return
        # `tree[j].pow(2)`, `v.pow(2)` with `v = tree[0]`: the view read shares the storage and version counter
        # of its base (and of the other views of it), so a later write to any of them fails the backward; not
        # `h[keep].pow(2)` with a mask or a tensor of indices (advanced indexing: a copy; checked above)
        through_item = key is None and isinstance(arg, ast.Subscript) and not isinstance(arg.slice, (ast.Tuple, ast.Slice))
        step = Step(StepKind.SAVED_INPUT, op, line)
        for name in self.sharing_storage(holder):
            held = self.env.get(name)
            if held:
                # (an item of a parameter a tensor by its annotation or use, `mat[0]`, is a view of it too)
                self.hold(name, cap(o.extend(step) if o.is_tensor and (param_index(o) is not None or o.grad_evidence)
                                    and not (through_item and not (o.certain_tensor and param_index(o) is None) and not (
                                        param_index(o) is not None and self.annotated_tensor(param_index(o))))
                                    else o for o in held))

    def known_ints(self) -> frozenset:
        """Names that hold Python ints here: parameters annotated ``int`` and ``range`` counters."""
        return self.int_parameters() | self._range_counters()

    def _range_counters(self) -> frozenset:
        """The names the loops being walked bind from ``range(...)`` (integers)."""
        return frozenset(loop.target.id for loop in self.loop_stack if isinstance(loop, ast.For)
                         and isinstance(loop.target, ast.Name) and isinstance(loop.iter, ast.Call)
                         and isinstance(loop.iter.func, ast.Name) and loop.iter.func.id == "range")

    def int_parameters(self) -> frozenset:
        """This function's parameters annotated ``int`` (and not bound again here)."""
        return self.annotated_as(("int",))

    def _local_guesses(self, held: frozenset) -> tuple:
        """The parameters (annotated ``Tensor``) a tensor is known here only as a guess about: every origin a guess
        (``Origin.guess_param``) made in this function's body (not a caller's, handed on), none with grad evidence."""
        func = self.func
        first, last = getattr(func, "lineno", None), getattr(func, "end_lineno", None)
        # (beside what needs no grad: the factory's tensor `qu = torch.empty(n, 4)` that item writes filled)
        guesses = [o for o in held if not no_grad_value(frozenset({o}))]
        if first is None or last is None or not guesses or not all(
                o.guessed and o.guess_param >= 0 and first <= o.root_line <= last
                and all(st.kind is StepKind.VIEW for st in o.steps) for o in guesses):
            return ()
        return tuple(sorted({o.guess_param for o in guesses if o.guess_param < len(self.params)
                             and self.annotated_tensor(o.guess_param)}))

    def note_saved_inputs(self, node: ast.expr, namespace: str, name: str, given: List[ast.expr],
                          origins: List[Optional[frozenset]], text: Callable[[], str]) -> None:
        """``namespace.name`` ran on ``given`` (their ``origins``, None: looked up by name; position 0 is the receiver
        or first argument) with grad on: mark what its backward reads (:data:`ops.SAVED_FOR_BACKWARD`), each input
        read for its own gradient (:meth:`mark_saved_input`), each read for another input's gradient when that
        one requires grad by evidence (:meth:`mark_saved_for_other`), and an index or mask (:meth:`note_saved_indices`).
        ``text()`` names the op (made only when something is marked); ``namespace`` ``"operator"`` is ``a * b``."""
        if self.no_grad:
            return
        self.note_saved_indices(node, namespace, name, given, origins, text)
        entry = ops.saved_for_backward(ops.TENSOR_METHOD if namespace == "operator" else namespace, name)
        if not entry:
            return
        if name in _SELECTING_BY_INDEX and _reduces_along_dim(node, given, self.int_parameters()):
            return  # `x.max(dim=0)`: the backward reads the indices, not `x` (derivatives.yaml's `max.dim`)
        own = [p for p in entry[2] if p < len(given) and (self.env.get(holder_of(given[p]) or "") or (
            (name_read := whole_read(given[p], self.known_ints())) and self.untracked_guesses(name_read, node.lineno)))]
        # (the table probes two inputs: `x` in `F.linear(x, w, b)` is read for `w`'s gradient, not `b`'s)
        other, guessed = [], {}
        for p in entry[3]:
            if not (p < len(given) and 1 - p < len(given) and holder_of(given[p]) is not None):
                continue
            if self.needs_grad(given[1 - p], origins[1 - p]):
                other.append(p)
            elif (guess := self.tensor_param_guess(given[1 - p], origins[1 - p])) >= 0:
                # `p * tree[j]` with `p` computed from a parameter annotated `Tensor`: `tree[j]` is saved for
                # `p`'s gradient when a caller passes one that requires grad (the callers decide: guess_param)
                other.append(p)
                guessed[p] = guess
        if not (own or other) or self.read_without_grad(node):
            return
        text = text()
        for position in own:
            self.mark_saved_input(given[position], text, node.lineno, node)
        for position in other:
            arg = given[position]
            activation = isinstance(arg, ast.Name) and (arg.id in self.submodule_results or arg.id in self.layer_results)
            # (`a @ b` takes only tensors on both sides: a number there raises, unlike `a * b`)
            self.mark_saved_for_other(arg, text, node.lineno, node,
                                      surely_tensor=(position == 0 and namespace != "operator") or activation
                                      or name == "matmul", guess=guessed.get(position, -1))

    def saved_tuple_outputs(self, node: ast.Call, namespace: str, name: str, first: Optional[ast.expr],
                            first_origins: frozenset) -> Optional[frozenset]:
        """``q, r = torch.linalg.qr(a)``: an op that returns a tuple of tensors some of which its backward reads
        (:func:`ops.saved_outputs`): each of those is an output saved for backward, held at its position of the
        tuple (unpacking gives it back); None for any other op, EMPTY when nothing says the input requires grad
        (as for an op that returns one saved output)."""
        positions = ops.saved_outputs(namespace, name)
        if not positions or is_str_constant(kw(node, "mode")) and kw(node, "mode").value == "r":
            return None  # (`torch.linalg.qr(a, mode="r")` has no backward at all)
        if not returns_tuple(node, namespace, name):
            return None
        if first is None or no_grad_value(first_origins) or (
                not first_origins and not self.grad_source(first) and self._guess_of(first, first_origins) < 0):
            return EMPTY
        if positions == (1,) and self._values_read_without_grad(node):
            return EMPTY  # `v, i = x.max(1)` with `v` only compared: no backward reaches the op to read `i`
        return frozenset(o for i in positions for o in self.guess_origins(first, first_origins, lambda g: Origin(
            RootKind.SAVED_OUTPUT, short(node), node.lineno, root_no_grad=self.no_grad, guess_param=g).extend(
                Step(StepKind.TUPLE_ITEM, f"({i})", node.lineno, self.no_grad))))

    def number_base_pow(self, node: ast.Call, namespace: str, args: List[frozenset]) -> Optional[frozenset]:
        """``torch.pow(10.0, t)``: a number to a tensor's power, as ``10.0 ** t`` (``eval_BinOp``): ``pow.Scalar``'s
        backward reads its result and the exponent (torch's derivatives.yaml, ``pow_backward_exponent(grad, self,
        exponent, result)``; executed on torch 2.13, tests/test_set_bi_facts.py), so the result is a saved output
        and the exponent is marked saved. None for any other ``pow`` (a tensor base: the table's answer)."""
        base = node.args[0] if node.args else kw(node, "input")
        if namespace != "torch" or len(node.args) != 2 or node.keywords or not (
                isinstance(base, ast.Constant) and type(base.value) in (int, float)):
            return None
        return self.number_to_power(node, node.args[1], args[1])

    def number_to_power(self, node: ast.expr, exponent_node: ast.expr, exponent: frozenset) -> frozenset:
        """``2 ** h`` / ``torch.pow(2, h)`` with a tensor ``h``: the output, saved for backward; its backward also
        reads the exponent (``pow_backward_exponent`` tests ``exponent >= 0`` where the base is 0), so writing
        ``h`` afterwards raises too (a review's case, executed)."""
        if not self.no_grad:
            self.mark_saved_input(exponent_node, short(node), node.lineno, node)
        return self.saved_output(node, exponent_node, exponent)

    def needs_grad(self, node: ast.expr, origins: Optional[frozenset]) -> bool:
        """``node`` requires grad by evidence: a tracked tensor with :attr:`Origin.grad_evidence`, or, untracked,
        a submodule's result or an ``nn.Parameter`` attribute (:meth:`grad_source`). ``origins`` None: what the
        name ``node`` holds."""
        if origins is None:
            key = dotted_name(node)
            origins = self.env.get(key) if key is not None else None
        if origins:
            return any(o.is_tensor and o.grad_evidence and param_index(o) is None for o in origins)
        return self.grad_source(node)

    def mark_saved_for_other(self, arg: ast.expr, op: str, line: int, call: ast.expr, surely_tensor: bool,
                             guess: int = -1) -> None:
        """``arg`` (or the base of the view passed: ``x`` for ``conv(x[:, :k])``) was read by the backward of
        ``op``, run with grad on, for the gradient of another input that requires grad by evidence (``x`` in
        ``x * self.w``, ``self.fc(x)``): a later in-place write to that storage makes the backward raise whether
        or not ``arg`` itself requires grad (docs/pytorch-facts.md#saved-for-other). Nothing is marked when no
        backward can reach ``call``. An untracked local name is held as a tensor of unknown grad only when the
        op takes nothing but a tensor there (``surely_tensor``: a layer's input, a receiver).

        A parameter's placeholder stands for whatever the callers pass (a number too, unless the op takes only a
        tensor there): it is left as it is, and the name also holds a tensor of unknown grad marked saved (the
        write is a hazard whatever the caller passed); the parameter itself goes into the summary
        (:attr:`~.summaries.FunctionSummary.saves`), so the caller's argument is marked too. Through an item
        (``feats[-1]``, not ``x[:, :k]``) the base may be a list: only a base known to be a tensor is marked.
        Names bound to a view of the name marked, or that it views (``v = x[:, :2]``), share its storage and
        version counter: they are marked too.

        ``guess`` >= 0: the other input requires grad only when parameter ``guess`` (annotated ``Tensor``) does
        (``p * tree[j]`` with ``p`` computed from it): a tensor known here (not a list's item) gets, beside what
        it holds, a tensor marked saved under that guess, which the callers decide (``Origin.guess_param``)."""
        while isinstance(arg, ast.Attribute) and arg.attr in _ATTRIBUTE_VIEWS:
            arg = arg.value  # (`R.mT` saved is `R`'s storage saved)
        key = holder_of(arg)
        if key is None or self._output_read_without_grad(call):
            return
        if dotted_name(arg) is None and not self.view_subscript(arg):
            return  # `d[mask].unsqueeze(1) * rays`: the op saved a copy (advanced indexing), not `d`
        through_item = isinstance(arg, ast.Subscript) and not isinstance(arg.slice, (ast.Tuple, ast.Slice))
        step = Step(StepKind.SAVED_FOR_OTHER, op, line)
        for name in self.sharing_storage(key):
            origins = self.env.get(name)
            if guess >= 0:
                # (a tensor made here, or a parameter that is surely a tensor: saved and written here, it makes
                # the backward raise whatever the caller passed for it; the other input's callers decide)
                if origins and any(o.is_tensor and o.certain_tensor and param_index(o) is None
                                   and o.root_text not in self.params for o in origins) \
                        or name == key and self.torch_made(name, line) \
                        or self._tensor_param_here(name, guess):
                    condition = f"it does when `{self.params[guess]}` requires grad"
                    self.hold(name, cap(set(origins or ()) | {Origin(RootKind.TENSOR, name, line, guessed=True,
                                                               guess_param=guess, condition=condition).extend(step)}))
                continue
            if origins:
                marked = []
                for o in origins:
                    if not o.is_tensor or (through_item and not (o.certain_tensor and param_index(o) is None)):
                        marked.append(o)
                    elif param_index(o) is not None:
                        marked.append(o)
                        if surely_tensor:
                            marked.append(Origin(RootKind.TENSOR, name, line, guessed=True).extend(step))
                            if self.recording and not o.steps and name == key:
                                self.saved_params.setdefault(param_index(o), (op, line))
                    else:
                        marked.append((replace(o, certain_tensor=True) if surely_tensor else o).extend(step))
            elif surely_tensor and name == key and (
                    isinstance(arg, ast.Name) and arg.id != self.self_name or sliced_name(arg)):
                # (not the base of `z[-1]`: an untracked `z` may be a list; `z[..., :k]` or `z[:, :k]` is a tensor's)
                marked = [Origin(RootKind.TENSOR, key, line, guessed=True).extend(step)]
            elif name == key and self._parameter_attribute(arg):
                # `x @ self.w`: the parameter itself is saved for `x`'s gradient; writing it before the backward,
                # with grad off or on, makes the backward raise (docs/pytorch-facts.md#saved-for-other)
                marked = [Origin(RootKind.TENSOR, key, line).extend(step)]
            else:
                continue
            self.hold(name, cap(marked))

    def _parameter_attribute(self, arg: ast.expr) -> bool:
        """``self.w`` built as an ``nn.Parameter`` in ``__init__``, or a torch layer's ``self.proj.weight``: a tensor
        the module keeps, untracked by the walk until an op saves it (:meth:`grad_source`)."""
        return isinstance(arg, ast.Attribute) and isinstance(arg.value, (ast.Name, ast.Attribute)) \
            and arg.attr not in ("data", "grad") and self.grad_source(arg)

    def parameter_item(self, node: ast.Subscript) -> bool:
        """``self.params["mu"]``, an item of a container of leaves that require grad built in ``__init__`` (or
        handed to a base's ``__init__``: :mod:`.param_containers`)."""
        value = node.value
        return isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) \
            and value.value.id == self.self_name and bool(self.cls_qual) and self.ctx is not None \
            and (self.ctx.attribute_builder(self.cls_qual, f"{value.attr}[]") or "").endswith(".Parameter")

    def backward_ran(self, node: ast.Call, positional: int = 1) -> None:
        """``loss.backward()``, ``torch.autograd.grad(loss, params)``: the backward ran and freed what the ops
        before it saved, so a write after it (the next step of a training loop) is legal; with ``retain_graph``
        or ``create_graph`` (a keyword, or a positional argument past the first ``positional``) the graph is
        kept for another backward, and so are the marks."""
        if any(k.arg in ("retain_graph", "create_graph") and not is_false(k.value) for k in node.keywords) or \
                len(node.args) > positional:
            return
        for key, origins in list(self.env.items()):
            if any(s.kind in SAVED_STEPS for o in origins for s in o.steps):
                self.hold(key, frozenset(replace(o, steps=tuple(s for s in o.steps if s.kind not in SAVED_STEPS))
                                         for o in origins))

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
            o for n, o in values if o or not (is_literal(n) or self.is_bool_value(n))]
        return bool(inputs) and all(no_grad_value(o) for o in inputs)

    def returns_no_grad(self, func: ast.expr) -> bool:
        """Every in-project function a call of ``func`` may run returns only what needs no grad, and nothing
        tracked (:attr:`.summaries.FunctionSummary.no_grad_result`)."""
        callees = self.resolve_callees(func) if self.ctx is not None else []
        summaries = [self.ctx.summary(q) for q, _ in callees]
        return bool(summaries) and all(s is not None and s.no_grad_result and not s.returns for s in summaries)

    def grad_source(self, node: Optional[ast.expr]) -> bool:
        """An untracked expression that requires grad by evidence: what a submodule returns in a module's
        method (``self.fc(x)``, a name bound to one; in any method, to a weighted layer's), an arithmetic or call
        of such values. Anything else untracked is unknown, and an op on it saves nothing the analysis can speak for."""
        if node is None:
            return False
        if isinstance(node, ast.Name):  # (a parameter, known only as itself without a project: the callers decide)
            return node.id in self.submodule_results or node.id in self.layer_results or (
                self.ctx is None and node.id in self.params and node.id != self.self_name)
        func = node.func if isinstance(node, ast.Call) else None
        if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Attribute) and self._is_self(func.value.value):
            return self.submodule_call(func.value.attr)  # `self.encoders[k](x)`: a ModuleDict's element
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            value = node.func.value
            if node.func.attr in _NO_GRAD_METHODS:
                return False  # self.eta.detach().clamp_min(1e-8): what `.detach()` returns needs no grad
            if isinstance(value, ast.Name) and value.id == self.self_name and self.cls_qual:
                if node.func.attr in self.frozen_layers or ALL_LAYERS in self.frozen_layers:
                    # a layer the class froze (random Fourier features): its input decides
                    return any(self.grad_source(a) for a in node.args)
                return self.submodule_call(node.func.attr)  # self.fc(x), self.proj(h)
            return self.grad_source(value)  # self.fc(x).view(...), h.float()
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and self.returns_no_grad(node.func) or last_name(node.func) in \
                    ops.FACTORY_FUNCTIONS - ops.SHARING_FACTORIES and kw(node, "requires_grad") is None:
                return False  # `_norm(self.fc(x))` returning `.item()`; `torch.zeros_like(self.w)`: no grad
            return any(self.grad_source(a) for a in node.args)  # torch.sum(self.fc(x) * y)
        if isinstance(node, ast.BinOp):
            return self.grad_source(node.left) or self.grad_source(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.grad_source(node.operand)
        if isinstance(node, ast.Subscript):
            return self.grad_source(node.value) or self.parameter_item(node)
        if isinstance(node, ast.Attribute) and node.attr in ("data", "grad"):
            return False  # `self.w.data`, `p.grad`: autograd does not track them
        if isinstance(node, ast.Attribute) and node.attr in ops.VIEW_ATTRIBUTES:
            return self.grad_source(node.value)  # `self.weight.T`: a view of a parameter requires grad
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == self.self_name \
                and self.cls_qual and self.ctx is not None:
            # `self.raw`, set to `nn.Parameter(...)` in `__init__`: a parameter requires grad (unless the class
            # freezes it: `self.raw.requires_grad = False`)
            owner = self.ctx.attribute_builder(self.cls_qual, node.attr)
            if owner is None and node.attr in ("weight", "bias") and node.attr not in self.unsaved_layers \
                    and not self.weights_unknown:
                # `class MaskedLinear(nn.Linear)`: torch's `__init__` made `self.weight` a parameter
                return self.ctx.torch_layer_base(self.cls_qual) in ops.LAYERS_SAVING_INPUT
            return owner is not None and owner.rsplit(".", 1)[-1] == "Parameter" and node.attr not in self.unsaved_layers
        if isinstance(node, ast.Attribute) and (node.attr in ("weight", "bias") or _RECURRENT_PARAMETER.match(
                node.attr)) and self.input_saving_layer(node.value):
            # `F.linear(x, self.proj.weight)`, `h @ self.lstm.weight_hh_l0.T`: a torch layer's parameter requires
            # grad, unless frozen
            return True
        return False

    def plain_self_call(self, node: ast.expr) -> bool:
        """``self.<m>(...)`` in a class that is surely no ``nn.Module`` (an optimizer, a state store) whose
        callable is no module either (:meth:`submodule_call`): what it returns is no activation."""
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and isinstance(node.func.value, ast.Name) and node.func.value.id == self.self_name \
            and self.cls_qual is not None and self.ctx is not None and self.ctx.plain_class(self.cls_qual) \
            and not self.submodule_call(node.func.attr)

    def submodule_call(self, attr: str) -> bool:
        """``self.<attr>(...)`` returns an activation that requires grad: in a class that may be an ``nn.Module``
        (one whose bases we cannot all see counts); in a plain class (a policy, a replay buffer) only when its
        ``__init__`` built ``self.<attr>`` with a project module class or a model library's factory (torch,
        torchvision, timm, transformers: ``torchvision.models.resnet18()``). A plain class's other callables (a
        schedule, ``self._beta = to_parameter(beta)``; one handed in) are unknown, which is no evidence."""
        plain = self.class_plain if self.class_plain is not None else (
            self.ctx is not None and self.ctx.plain_class(self.cls_qual))
        if self.own_method(attr):
            return attr in self.activation_methods  # `self.helper(x)` returning `self.lin(x)`, or its summary's say
        if self.ctx is not None and not plain:
            # in a module, `self.stat()` with `self.stat = RunningStat(...)` built from a project class that is
            # surely no module calls that class's `__call__`, whose summary says what it returns (gromo's tensor
            # statistics: buffers averaged without grad); any other callable may be a submodule
            builder = self.class_builders.get(attr) if self.class_builders is not None else \
                self.ctx.attribute_builder(self.cls_qual, attr)
            found = self.ctx.resolve(builder) if builder is not None else None
            return not (found is not None and found[0] == "class" and self.ctx.plain_class(found[1]))
        return self.ctx is None or not plain or self.built_as_module(attr)

    def view_subscript(self, node: ast.expr) -> bool:
        """``node`` reads a view of what it indexes, down to a name: every subscript on the way is basic indexing or
        an index nothing shows to be a tensor (``t[j]`` with a loop counter); a view method is one too."""
        while not isinstance(node, (ast.Name, ast.Attribute)):
            if isinstance(node, ast.Subscript):
                parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                if not is_basic_index(node.slice) and any(
                        not isinstance(p, ast.Slice) and (self.is_bool_value(p) or any(o.is_tensor for o in self.eval_quiet(p)))
                        for p in parts):
                    return False
                node = node.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                node = node.func.value
            else:
                return False
        return True


#: the parameters of ``nn.LSTM``/``nn.GRU``/``nn.RNN`` (PyTorch docs: ``weight_ih_l[k]``, ``bias_hh_l[k]_reverse``)
_RECURRENT_PARAMETER = re.compile(r"(weight|bias)_(ih|hh)_l\d+(_reverse)?$")
#: attributes that are views of the tensor they are read from (PyTorch docs: Tensor.T, Tensor.mT, Tensor.H, Tensor.mH)
_ATTRIBUTE_VIEWS = frozenset({"T", "mT", "H", "mH"})


#: reductions whose form along a dimension returns (values, indices) and whose backward then scatters the gradient
#: by the indices, reading neither the input nor the values (derivatives.yaml: ``max.dim``, ``min.dim``:
#: ``value_selecting_reduction_backward(grad, dim, indices, self.sizes(), keepdim)``); the full reduction
#: (``x.max()``) reads both, and the binary form (``torch.max(a, b)``) reads its inputs. The generated table merges
#: the three forms (executed on torch 2.13: ``im_map.max(dim=0)`` then a write of ``im_map`` runs backward)
_SELECTING_BY_INDEX = frozenset({"max", "min", "median", "nanmedian"})


def _reduces_along_dim(call: ast.expr, given: List[ast.expr], int_params=frozenset()) -> bool:
    """``call`` names a dimension: a ``dim`` keyword, or an integer literal where the second input would be (``x.max(0)``,
    ``torch.max(x, 1)``; position 1 of ``given``, the receiver or first argument being position 0)."""
    if isinstance(call, ast.Call) and any(k.arg == "dim" for k in call.keywords):
        return True
    second = given[1] if len(given) > 1 else None
    if isinstance(second, ast.Name) and second.id in int_params:
        return True  # `torch.max(y, dim)` with `dim: int`
    return second is not None and (isinstance(second, ast.Constant) and type(second.value) is int or (
        isinstance(second, ast.UnaryOp) and isinstance(second.op, ast.USub) and isinstance(second.operand, ast.Constant)
        and type(second.operand.value) is int))
