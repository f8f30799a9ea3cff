"""Expressions: the origins an expression's value may have (one job of the interpreter).

View ops extend an origin; arithmetic on a proven tensor makes a new tensor (its
own root); anything else that is not known makes a value with no origin, which is
why ``x = x / t`` or ``x.clone()`` ends the chain. Calls are in :mod:`.calls` and :mod:`.project_calls`.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Optional, Sequence, Set

from ..findings import SAVED_STEPS, Origin, RootKind, Step, StepKind
from . import grad, model_outputs
from .conditions import negate
from ..torch_facts import ops
from .astutil import dotted_name, last_name, short
from .env import EMPTY, cap
from .summaries import element_kind, function_of, is_tuple_item, param_index, tuple_item_at


def is_basic_index(node: ast.expr, ints=frozenset()) -> bool:
    """``[:, :k]``, ``[0]``, ``[-1]``, ``[..., None, 1:]``: slices, integer literals, ``None`` and ``...`` are
    basic indexing, which returns a view; anything else may be a tensor index (advanced indexing, a copy). An
    integer is a literal, a name in ``ints`` (an ``int`` parameter, a ``range`` counter) or arithmetic (``k - 1``).
    ``x[True]`` and ``x[False]`` are advanced indexing too: they copy (executed under torch 2.13; the
    "Indexing on ndarrays" rules torch follows, https://numpy.org/doc/stable/user/basics.indexing.html)."""
    elts = node.elts if isinstance(node, ast.Tuple) else [node]
    return all(isinstance(e, ast.Slice) or _int_literal(e, ints) or (isinstance(e, ast.Constant) and (
        e.value is None or e.value is Ellipsis)) for e in elts)


def _int_literal(e: ast.expr, ints=frozenset()) -> bool:
    """``3``, ``-1``, ``~0``, ``+1``, ``4 - 1``, names in ``ints``, arithmetic of them: an integer (not ``True``)."""
    if isinstance(e, ast.Constant):
        return type(e.value) is int
    if isinstance(e, ast.Name):
        return e.id in ints
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd, ast.Invert)):
        return _int_literal(e.operand, ints)
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)):
        return _int_literal(e.left, ints) and _int_literal(e.right, ints)
    return False


def index_text(node: ast.expr) -> str:
    if isinstance(node, ast.Tuple):
        text = ", ".join(ast.unparse(e) for e in node.elts)
    else:
        text = ast.unparse(node)
    return f"[{text if len(text) <= 30 else '...'}]"


def key_of(node: ast.AST) -> Optional[str]:
    """Environment key of a name, dotted name or constant item: ``x``, ``self.x``, ``output['logits']``."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and \
            isinstance(node.slice.value, (str, int)):
        base = dotted_name(node.value)
        return f"{base}[{node.slice.value!r}]" if base is not None else None
    return dotted_name(node)


def holder_of(node: ast.expr) -> Optional[str]:
    """The name that holds what an in-place op on ``node`` wrote: ``h`` for ``h``, ``h[:, :2]`` or
    ``h.view(-1)`` (a view's base shares its storage and version counter: writing ``h`` after
    ``h[:, :2].sigmoid_()`` changes the output the backward reads)."""
    while True:
        key = dotted_name(node)
        if key is not None:
            return key
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ops.VIEW_METHODS \
                and node.func.attr != "detach":
            node = node.func.value
        else:
            return None


def cut_tracking(origins: frozenset, text: str, line: int) -> frozenset:
    """``.detach()`` / ``.data``: the result shares storage but autograd no longer tracks it as a view.

    What survives: an expanded view (its elements still overlap) and a tensor saved for backward, as an
    op's output or input: through ``detach()`` backward still sees the write (the version counter is
    shared) and raises; through ``.data`` it does not, and uses the written values, silently
    (docs/pytorch-facts.md#detach-ends-tracking; the rule's message says which). Everything else becomes a
    plain tensor that needs no grad.
    """
    step = Step(StepKind.VIEW, text, line)
    out = [o.extend(step) for o in origins
           if o.is_tensor and (o.has(StepKind.EXPAND) or o.root is RootKind.SAVED_OUTPUT
                               or any(s.kind in SAVED_STEPS for s in o.steps))]
    if any(o.is_tensor or param_index(o) is not None for o in origins):
        out.append(Origin(RootKind.FRESH, text.lstrip("."), line, root_no_grad=True))
    return cap(out)


#: ``ast`` operator class name -> the ``Tensor`` method it calls, for the operators whose backward reads an
#: input (``Mult`` -> ``mul``; :data:`ops.SAVED_FOR_BACKWARD` says which)
_OPERATOR_METHODS = {name: (method or stem + "_").rstrip("_").replace("true", "")
                     for _, method, name, stem in ops.OPERATORS if name in ("Mult", "Div", "Pow", "MatMult")}

#: node type -> ``eval_<Node>`` (dispatch is the hot path: one dict lookup)
_EVAL: dict = {}


def is_array_index(index: ast.expr) -> bool:
    """An index only arrays take: a tuple holding a slice, ``...`` or ``None`` (``[:, -1]``, ``[..., 0]``,
    ``[None, :]``), or ``...``/``None`` alone. A tuple, list or dict (a model's output object) raises on it."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    if not isinstance(index, ast.Tuple) and isinstance(index, ast.Slice):
        return False  # `outputs[1:]`: a tuple of outputs slices too
    return any(isinstance(p, ast.Slice) or (isinstance(p, ast.Constant) and (p.value is None or p.value is ...))
               for p in parts)


def as_tensor(origin: Origin) -> Origin:
    """An operand of tensor arithmetic: what a model call returned (``h = model(x)``; an object that may be a
    tuple or a ``ModelOutput`` elsewhere) is, in ``beta * h`` or ``torch.exp(h * 2)``, the model's output
    tensor itself (pygcl's ``(beta * h).exp()``)."""
    if origin.root is RootKind.MODEL_OUTPUT_OBJECT and not origin.steps:
        return replace(origin, root=RootKind.MODEL_OUTPUT)
    return origin


class ExpressionsMixin:
    """``eval_<Node>`` handlers for everything but calls."""

    def eval_quiet(self, node: ast.expr) -> frozenset:
        """Evaluate an expression already evaluated once (no findings, no bindings)."""
        saved = (self.sink, dict(self.env), set(self.nograd_bound), self.recording)
        self.sink = {}
        self.recording = False
        try:
            return self.eval(node)
        finally:
            self.sink, self.env, self.nograd_bound, self.recording = saved

    def eval(self, node: Optional[ast.AST]) -> frozenset:
        if node is None:
            return EMPTY
        try:
            handler = _EVAL[type(node)]
        except KeyError:
            handler = _EVAL[type(node)] = getattr(type(self), "eval_" + type(node).__name__, None)
        if handler is not None:
            return handler(self, node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.eval(child)
            elif isinstance(child, ast.keyword):
                self.eval(child.value)
        return EMPTY

    def eval_Constant(self, node: ast.Constant) -> frozenset:
        return EMPTY

    # the generic walk of children, spelled out for the common kinds (f-strings are everywhere in logs)
    def eval_JoinedStr(self, node: ast.JoinedStr) -> frozenset:
        for value in node.values:
            if type(value) is ast.FormattedValue:
                self.eval_FormattedValue(value)
        return EMPTY

    def eval_FormattedValue(self, node: ast.FormattedValue) -> frozenset:
        self.eval(node.value)
        if node.format_spec is not None:
            self.eval(node.format_spec)
        return EMPTY

    def eval_Yield(self, node) -> frozenset:
        self.generator = True  # (what its returns give is not what a call gives: the summary's return facts)
        self.eval(node.value)
        return EMPTY

    eval_YieldFrom = eval_Yield

    def eval_Slice(self, node: ast.Slice) -> frozenset:
        for part in (node.lower, node.upper, node.step):
            if part is not None:
                self.eval(part)
        return EMPTY

    def guessed_param(self, origin: Origin) -> int:
        """The parameter a guess is about: its ``guess_param``, or the parameter whose ``torch.Tensor``
        annotation made the root (a guessed root named after it); -1 for anything else."""
        if origin.guess_param >= 0:
            return origin.guess_param
        if origin.guessed and origin.root is RootKind.TENSOR and origin.root_text in self.params:
            return list(self.params).index(origin.root_text)
        return -1

    def eval_BinOp(self, node: ast.BinOp) -> frozenset:
        if isinstance(node.op, ast.Pow) and isinstance(node.left, ast.Constant) \
                and type(node.left.value) in (int, float):
            # `2 ** h` is `torch.pow(2, h)`, whose backward reads its result (`pow.Scalar` in torch's
            # derivatives.yaml: `pow_backward_exponent(grad, self, exponent, result)`; executed, 2.13)
            exponent = self.eval(node.right)
            right = node.right
            if not any(o.is_tensor for o in exponent) and not (
                    isinstance(right, ast.Name) and right.id in self.submodule_results) and not (
                    isinstance(right, ast.Call) and isinstance(right.func, ast.Attribute)
                    and isinstance(right.func.value, ast.Name) and right.func.value.id == self.self_name
                    and self.cls_qual and self.submodule_call(right.func.attr)):
                return EMPTY  # `2.0 ** h.size(-1)`: a number to a number's power
            return self.number_to_power(node, right, exponent)
        # a + b + c + ... nests to the left: walk it as a loop, in evaluation order
        rights, levels = [], []
        top = node
        while isinstance(node, ast.BinOp):
            rights.append(node.right)
            levels.append(node)
            node = node.left
        nodes = [node] + list(reversed(rights))
        operands = [self.eval(n) for n in nodes]
        for i, level in enumerate(reversed(levels)):
            # `x * self.w`, `x ** 2`, `y / x`: what the operator's backward reads (Tensor.mul, .div, .pow, .matmul)
            name = _OPERATOR_METHODS.get(type(level.op).__name__)
            if name is not None:
                # a later level's left operand is what the levels before made: `2 * x * cheb[k - 1]` saves the row
                # for the gradient of `2 * x`, which requires grad when `x` does (asked only where the right
                # operand is a tensor a later write can reach)
                left = operands[0] if i == 0 else self.arithmetic_result(level.left, nodes[:i + 1], operands[:i + 1]) \
                    if holder_of(level.right) is not None else None
                self.note_saved_inputs(level, "operator", name, [level.left, level.right], [left, operands[i + 1]],
                                       lambda level=level: short(level))
        return self.arithmetic_result(top, nodes, operands)

    def arithmetic_result(self, top: ast.expr, nodes: Sequence[Optional[ast.expr]],
                          operands: Sequence[frozenset]) -> frozenset:
        """What arithmetic (``a * b``, ``x.mul(2)``, ``torch.cat((a, b))``: :data:`ops.ARITHMETIC`) of ``operands``
        makes: a new tensor that requires grad when an input does (by evidence: a model output, a submodule's result,
        a Parameter), none when every input is a factory's tensor or a number; unknown otherwise."""
        operands = [frozenset(tuple_item_at(o, None) if is_tuple_item(o) else as_tensor(o) for o in ops_)
                    for ops_ in operands]
        # arithmetic on a tensor that may need grad is a new tensor that needs grad (its rows are views)
        grads = [o for ops_ in operands for o in ops_ if o.is_tensor and not o.root_no_grad and param_index(o) is None
                 and o.root is not RootKind.FRESH and o.certain_tensor]
        if not grads and not self.no_grad and any(not ops_ and n is not None and self.grad_source(n)
                                                  for n, ops_ in zip(nodes, operands)):
            # `torch.randn(n, 3) * self.w` (an nn.Parameter), `noise + self.fc(x)`: untracked, but it requires grad
            return frozenset({Origin(RootKind.TENSOR, short(top), top.lineno)})
        if grads:
            # a guess keeps the parameter it was made from (callers decide it): `x.real ** 2` of a parameter
            # annotated `Tensor` is still a guess about that parameter
            # (an input that requires grad by evidence, `self.scale ** 2` of a Parameter, outweighs a guess: set CT)
            guessed = all(o.guessed or o.guess_param >= 0 for o in grads)
            guess = min((g for g in map(self.guessed_param, grads) if g >= 0), default=-1) if guessed else -1
            return frozenset({Origin(RootKind.TENSOR, short(top), top.lineno, root_no_grad=self.no_grad,
                                     guessed=guessed, guess_param=guess)})
        if any(o.root is RootKind.FRESH and not o.steps and o.certain_tensor and function_of(o) is None
               and param_index(o) is None for ops_ in operands for o in ops_):
            # (an unannotated parameter that nothing proves a tensor, `/ (2 * sigma**2)`, does not make a
            # factory's tensor require grad: its placeholder is not evidence)
            # arithmetic on a factory's tensor (and numbers): a new tensor that needs no grad either
            return frozenset({Origin(RootKind.FRESH, short(top), top.lineno, root_no_grad=True)})
        return EMPTY

    def eval_UnaryOp(self, node: ast.UnaryOp) -> frozenset:
        """``-x``: arithmetic (``Tensor.neg``, a new tensor); ``+x``: the same tensor (``Tensor.__pos__`` returns
        its operand itself, executed on torch 2.13), so a name bound to it is an alias; ``~mask``, ``not x``:
        nothing followed."""
        operand = self.eval(node.operand)
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.USub) and operand:
            return self.arithmetic_result(node, [node.operand], [operand])
        return EMPTY

    def eval_Compare(self, node: ast.Compare) -> frozenset:
        self.eval(node.left)
        for comparator in node.comparators:
            self.eval(comparator)
        return EMPTY

    def eval_Tuple(self, node) -> frozenset:
        """``(z, torch.logsumexp(x, 1))``: each element's origins, marked with its position (a starred
        element leaves the positions after it unknown: they are not followed)."""
        out = []
        known = True
        for i, elt in enumerate(node.elts):
            origins = self.eval(elt)
            known = known and not isinstance(elt, ast.Starred)
            if known:
                out.extend(o.extend(Step(StepKind.TUPLE_ITEM, f"({i})", node.lineno, self.no_grad))
                           for o in origins if o.is_tensor)
        return cap(out)

    eval_List = eval_Tuple

    def eval_Set(self, node) -> frozenset:
        for elt in node.elts:
            self.eval(elt)
        return EMPTY

    def eval_Dict(self, node: ast.Dict) -> frozenset:
        for part in node.keys + node.values:
            if part is not None:
                self.eval(part)
        if self.no_grad and self.ctx is not None and self.recording:
            # `methods = {"gmres": gmres, "cg": cg}` where grad is off (an autograd Function's `forward`, under
            # `no_grad`): the functions are looked up and called here, with grad off
            for value in node.values:
                if self._may_name_function(value):
                    self.record_handed_out(value, no_grad=True)
        return EMPTY

    def eval_Name(self, node: ast.Name) -> frozenset:
        return self.env.get(node.id, EMPTY)

    def eval_Attribute(self, node: ast.Attribute) -> frozenset:
        key = dotted_name(node)
        if key is not None and key in self.env:
            return self.env[key]
        recv = self.eval(node.value)
        attr = node.attr
        if attr == "data":
            return cut_tracking(recv, ".data", node.lineno)
        if attr == "grad":
            # `p.grad`: the gradient autograd accumulated, which does not require grad itself (only a backward
            # with `create_graph=True` makes one that does, for higher-order gradients)
            return frozenset({Origin(RootKind.FRESH, short(node), node.lineno, root_no_grad=True)})
        if attr in ops.VIEW_ATTRIBUTES:
            return self.view_of(node.value, recv, StepKind.VIEW, f".{attr}", node.lineno)
        if attr in self.settings.model_output_fields and self._is_model_output_receiver(node.value, recv, attr):
            # known only by a name (`output.logprobs` of a parameter called `output`): a field so named may
            # be a list of dicts, so only a `*_` method proves it a tensor; a model call's field is one
            objects = [o for o in recv if o.root is RootKind.MODEL_OUTPUT_OBJECT and not o.steps]
            made = any(not model_outputs.is_guessed_object(o) for o in objects)
            # a field is made when the model ran: an output object made under no_grad has no field that needs grad
            made_no_grad = bool(objects) and all(o.root_no_grad for o in objects)
            return frozenset({Origin(RootKind.MODEL_OUTPUT, short(node), node.lineno,
                                     root_no_grad=self.no_grad or made_no_grad,
                                     certain_tensor=made or attr == "logits")})
        if self.ctx is not None and self.cls_qual and isinstance(node.value, ast.Name) \
                and node.value.id == self.self_name and self.self_name is not None:
            getters = self.ctx.property_getters(self.cls_qual, attr)
            if getters:  # `self.scale`, a @property: a call of its getter
                call = ast.copy_location(ast.Call(func=node, args=[], keywords=[]), node)
                call.end_lineno, call.end_col_offset = node.end_lineno, node.end_col_offset
                return self.project_calls(call, [(q, 0 if static else 1) for q, static in getters], [], {})
        return EMPTY

    def _is_model_output_receiver(self, recv_node: ast.expr, recv: frozenset, attr: str) -> bool:
        if any(o.root is RootKind.MODEL_OUTPUT_OBJECT and not o.steps for o in recv):
            return True
        if isinstance(recv_node, ast.Name) and recv_node.id in self.submodule_results:
            return False  # a submodule's result inside a module's forward: an activation
        name = last_name(recv_node)
        if name in self.settings.model_output_names and not self.is_shadowed_output_name(recv_node):
            return True
        # `.logits` of any name is a model output, but not of an arbitrary call (Categorical(logits=x).logits)
        return attr == "logits" and isinstance(recv_node, (ast.Name, ast.Attribute, ast.Subscript)) \
            and not (isinstance(recv_node, ast.Name) and recv_node.id in ("self", "cls"))

    def is_shadowed_output_name(self, recv_node: ast.expr) -> bool:
        """``output`` is a parameter annotated with a non-output type (``output: QAct``)."""
        return isinstance(recv_node, ast.Name) and recv_node.id in self.typed_params

    def eval_Subscript(self, node: ast.Subscript) -> frozenset:
        key = key_of(node)
        if key is not None and key in self.env:
            return self.env[key]
        recv = self.eval(node.value)
        self.eval(node.slice)
        self.note_tensor_index(node)
        if (held := self.any_key_item(node)) is not None:  # (an item of a local dict stored under a computed key)
            return held
        index = node.slice
        if not any(param_index(o) is None for o in recv):
            if self.no_grad and is_basic_index(index):
                return self.view_of(node.value, recv, StepKind.VIEW, index_text(index), node.lineno)
            if not recv:
                return EMPTY
        out = []
        text = index_text(index)
        for o in recv:
            if o.root is RootKind.MODEL_OUTPUT_OBJECT and not o.steps:
                # outputs["logits"] is a tensor; outputs[0] usually is, but may be a dict or a number
                if isinstance(index, ast.Constant) and index.value in self.settings.model_output_fields:
                    out.append(Origin(RootKind.MODEL_OUTPUT, short(node), node.lineno,
                                      root_no_grad=self.no_grad or o.root_no_grad))
                elif isinstance(index, ast.Constant) and isinstance(index.value, int):
                    out.append(Origin(RootKind.MODEL_OUTPUT, short(node), node.lineno,
                                      root_no_grad=self.no_grad or o.root_no_grad, certain_tensor=False))
                elif is_array_index(index) and not model_outputs.is_guessed_object(o):
                    # `model(x)[:, -1]`: a tuple, list or ModelOutput takes no such index; the output is a tensor
                    # (or a TensorDict of them), and this a view of it
                    out.append(o.extend(Step(StepKind.VIEW, text, node.lineno, self.no_grad)))
            elif param_index(o) is not None and not o.steps and not is_basic_index(index):
                continue  # params["key"], params[i]: an item of an unknown container
            elif is_tuple_item(o):
                item = tuple_item_at(o, index.value if isinstance(index, ast.Constant) and type(index.value) is int
                                     else None)
                if item is not None:
                    out.append(item)
            elif o.is_container:
                out.append(o.extend(Step(element_kind(o), text, node.lineno, self.no_grad)))
            elif is_basic_index(index, frozenset() if o.guessed else self.known_ints()):
                # (an integer name indexes a view of a tensor made here: `evals[k - 1]` with `k: int`; of a
                # guess about a parameter, the row stays untracked, for the guess's own rules)
                out.append(o.extend(Step(StepKind.VIEW, text, node.lineno, self.no_grad)))
        if isinstance(index, ast.Compare) or (isinstance(index, ast.Name) and index.id in self.bool_names):
            # `feats[labels == k]`: a boolean mask copies, and the copy requires grad when the tensor did (by
            # evidence; a guess about a parameter stays untracked, as for arithmetic). An index we cannot
            # read (`x[i]`, `x[tuple(s)]`) may be basic indexing, a view: left untracked
            tensors = frozenset(o for o in recv if o.is_tensor and not o.is_container and not is_tuple_item(o)
                                and not (o.root is RootKind.MODEL_OUTPUT_OBJECT and not o.steps))
            if tensors:
                out.extend(o for o in self.arithmetic_result(node, [node.value], [tensors])
                           if not o.guessed and o.guess_param < 0)
        return cap(out)

    def eval_NamedExpr(self, node: ast.NamedExpr) -> frozenset:
        value = self.eval(node.value)
        self.note_bound_value(node.value, value)
        self.bind_name(node.target.id, value)
        self.local_stacks.pop(node.target.id, None)
        self.local_input_layers.pop(node.target.id, None)
        return value

    def eval_IfExp(self, node: ast.IfExp) -> frozenset:
        self.eval(node.test)
        training = grad.training_test(node.test)
        body_off, else_off = grad.grad_off_arms(node.test, self.grad_off_flags)
        gate = not self.settings.report_in_no_grad
        # `y.mul_(2) if inplace_safe else y * 2`: each arm runs under the test's condition on a parameter, as an `if`
        # arm does (its writes carry it); an arm that runs with grad off or in eval mode only is walked as such
        cond = self.param_condition(node.test)
        body = self._arm(node.body, training is False or (body_off and gate), cond, body_off)
        orelse = self._arm(node.orelse, training is True or (else_off and gate), negate(cond) if cond else None,
                           else_off)
        if body_off or else_off:
            # `Vt.clone() if torch.is_grad_enabled() else Vt`: on the arm where grad is off the whole call runs
            # with grad off, so what that arm gives was made without grad (and saved nothing)
            off = body if body_off else orelse
            off = frozenset(o if param_index(o) is not None else replace(o, root_no_grad=True) for o in off)
            body, orelse = (off, orelse) if body_off else (body, off)
        return cap(body | orelse)

    def _arm(self, node: ast.expr, eval_only: bool, cond, grad_off: bool = False) -> frozenset:
        saved = self.path_conds, self.grad_off_arm
        if cond:
            self.path_conds = saved[0] + (cond,)
        self.grad_off_arm = self.grad_off_arm or grad_off
        try:
            return self.in_eval_branch(node) if eval_only else self.eval(node)
        finally:
            self.path_conds, self.grad_off_arm = saved

    def in_eval_branch(self, node: ast.expr) -> frozenset:
        saved = self.eval_branch
        self.eval_branch = True
        try:
            return self.eval(node)
        finally:
            self.eval_branch = saved

    def eval_BoolOp(self, node: ast.BoolOp) -> frozenset:
        out: Set[Origin] = set()
        for v in node.values:
            out |= self.eval(v)
        return cap(out)

    def eval_Starred(self, node: ast.Starred) -> frozenset:
        return self.eval(node.value)

    def eval_Await(self, node: ast.Await) -> frozenset:
        return self.eval(node.value)

    def eval_Lambda(self, node: ast.Lambda) -> frozenset:
        scope = self.child_scope(node.args, self.no_grad, None, f"{self.qual}.<lambda>")
        scope.eval(node.body)
        return EMPTY

    def _comprehension(self, node, parts: Sequence[ast.expr]) -> frozenset:
        saved = dict(self.env)
        try:
            for gen in node.generators:
                self.bind_iter(gen.target, gen.iter)
                for cond in gen.ifs:
                    self.eval(cond)
            for part in parts:
                self.eval(part)
        finally:
            self.env = saved
        return EMPTY

    def eval_ListComp(self, node) -> frozenset:
        return self._comprehension(node, [node.elt])

    eval_SetComp = eval_GeneratorExp = eval_ListComp

    def eval_DictComp(self, node) -> frozenset:
        return self._comprehension(node, [node.key, node.value])

    def key_of(self, node: ast.AST) -> Optional[str]:
        return key_of(node)
