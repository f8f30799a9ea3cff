"""What kind of tensor an expression holds where the walk tracks nothing for it: a bool (or integer) tensor, a
value a container stored, a parameter already updated in place (state). A part of :class:`~.dataflow.Scope`."""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Optional, Set

from ..findings import RootKind, StepKind
from ..rules.ipv003_multi_output_view import GRAD_VALUE_WRITTEN
from ..torch_facts import ops
from .astutil import dotted_name, kw, last_name, values_bound, walk_ast
from .call_args import is_dtype_conversion, to_integer_dtype
from .names import qualify
from .summaries import param_index


def _is_bool_expr(node: ast.AST) -> bool:
    """A comparison, or ``~``/``not`` of one."""
    return isinstance(node, ast.Compare) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.Invert))
                                            and _is_bool_expr(node.operand))


#: functions and methods whose result is a bool tensor, or an integer one of one dimension or more that indexes
#: (``nonzero``, ``argsort``; ``torch.where(c)`` with one argument, :meth:`TensorKindsMixin.is_bool_value`): either
#: needs no grad, and as an index either is advanced indexing (a copy). Not ``argmax``: without a dimension it is
#: 0-dim, and ``x[s.argmax()]`` is a view (executed on torch 2.13)
_BOOL_RESULTS = frozenset({"logical_and", "logical_or", "logical_not", "logical_xor", "isnan", "isinf", "isfinite",
                           "isin", "eq", "ne", "gt", "lt", "ge", "le", "bool", "isclose", "all", "any", "nonzero",
                           "argwhere", "argsort"})


#: tensor methods that make a new tensor with its own storage (only a tensor has them)
_MADE_BY_METHOD = ops.OWN_STORAGE_METHODS
#: tensor methods that copy into a new tensor, but that a NumPy array has too (``ndarray.repeat``): a tensor's copy
#: only where the receiver is surely a tensor
_COPIED_BY_METHOD = frozenset({"repeat", "repeat_interleave"})
#: conversions that return their receiver when it already has the dtype and device asked, and a copy otherwise
_CONVERSIONS = frozenset({"to", "float", "double", "half", "bfloat16", "type", "type_as", "cpu", "cuda"})


#: NumPy scalar types (``np.float32(2.0)``): a tensor's in-place ops take them as numbers
_NUMPY_SCALARS = ("float", "int", "uint", "bool", "complex", "double", "half", "single", "longlong", "short",
                  "byte", "ubyte", "ushort", "uintc", "intc", "intp", "uintp", "str_", "bytes_", "generic",
                  "number", "datetime64", "timedelta64")


def _integer_factory(text: str) -> bool:
    """The text of a factory call that makes an integer or bool tensor, which never requires grad (a value written
    into it is converted): ``torch.zeros(n, dtype=torch.long)``, ``torch.randint(...)``, ``torch.arange(n)`` with no
    float argument, ``x.long()``, ``x.to(torch.int64)``. A text :func:`~.astutil.short` cut is not read (a float
    tensor is assumed: the finding stands)."""
    try:
        call = ast.parse(text, mode="eval").body
    except SyntaxError:
        return False
    if not isinstance(call, ast.Call):
        return False
    name = last_name(call.func)
    dtype = (dotted_name(kw(call, "dtype")) or "").rpartition(".")[2]
    if dtype:
        return dtype in ops.INTEGER_DTYPES
    if name in ("randint", "randperm", "randint_like") or isinstance(call.func, ast.Attribute) and (
            name in _INTEGER_CASTS and not call.args or to_integer_dtype(call, name)):
        return True
    return name == "arange" and not any(isinstance(a, ast.Constant) and isinstance(a.value, float)
                                        for a in call.args)


#: tensor methods that convert to an integer or bool dtype
_INTEGER_CASTS = frozenset({"long", "int", "short", "byte", "char", "bool"})


class TensorKindsMixin:
    """``is_bool_value``, ``stored_value``, ``accumulated_params``, ``torch_made`` (a part of
    :class:`~.dataflow.Scope`)."""

    bool_names: Set[str]

    def written_with_grad(self, written: frozenset, *value_nodes: Optional[ast.expr]) -> frozenset:
        """What a write of ``value_nodes`` writes (``a[:] = v``, ``a += v``, ``a.copy_(v)``): where a value requires
        grad by evidence (a model output, a parameter, an op on either: its origins, or
        :meth:`~.call_grad.CallGradMixin.grad_source`), an output of ``split``/``chunk``/``unbind`` (or the loop
        variable over a tensor) of a tensor that needs none (a factory's, ``a, b = torch.zeros(2, n)``) is written as
        one of a tensor that requires grad: with grad on, the write raises ``A view was created in no_grad mode and is
        being modified inplace with grad mode enabled. This view is the output of a function that returns multiple
        views.`` (docs/pytorch-facts.md#multi-output-view-grad-value; POT's log-domain barycenters, set CK). Such an
        origin keeps its root (a fix's safety still finds the names bound to the factory's tensor) and says so in its
        condition, which IPV003 reads. A write with grad off records nothing: :meth:`~.reporting.ReportingMixin.report`
        reads the grad mode as for any write."""
        split = {o for o in written if o.root is RootKind.FRESH and o.is_tensor and o.has(StepKind.ELEMENT)
                 and not o.has(StepKind.EXPAND) and not o.condition and not _integer_factory(o.root_text)}
        if not split or not any(
                v is not None and not isinstance(v, ast.Starred) and (self.grad_source(v) or any(
                    o.is_tensor and o.grad_evidence and param_index(o) is None for o in self.eval_quiet(v)))
                for v in value_nodes):
            return written
        return frozenset(replace(o, condition=GRAD_VALUE_WRITTEN) if o in split else o for o in written)

    def _numpy_array(self, node: ast.expr) -> bool:
        """``node`` surely makes a NumPy array: a call of a ``numpy`` function other than a scalar type
        (``np.ones(n)``, ``np.asarray(v)``, not ``np.float32(2.0)``, which a tensor's in-place ops accept), or
        ``t.numpy()``."""
        if not isinstance(node, ast.Call):
            return False
        if isinstance(node.func, ast.Attribute) and node.func.attr == "numpy" and not node.args:
            return True
        qual, _ = qualify(node.func, self.names, self.is_local_name)
        if not qual or not qual.startswith("numpy.") or qual.count(".") != 1:
            return False
        return not qual[len("numpy."):].startswith(_NUMPY_SCALARS)

    def is_bool_value(self, node: ast.expr) -> bool:
        """``node`` is a bool tensor: a comparison or ``torch.logical_*(...)`` (or a name bound to one), and
        views of it (``mask.view(b, 1, 1, L).expand(...)``); a dtype conversion of it is not."""
        while True:
            if _is_bool_expr(node) or (isinstance(node, ast.Name) and node.id in self.bool_names):
                return True
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
                node = node.operand  # `~mask`
                continue
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
                # `in_mask & ~hit`: a bool tensor combined bitwise with a bool (or an integer) tensor is a tensor of
                # that kind, never a float one (`&` rejects floats): as an index, advanced indexing either way
                return self.is_bool_value(node.left) or self.is_bool_value(node.right)
            if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Attribute, ast.Name)):
                return isinstance(node, ast.Subscript) and self.is_bool_value(node.value)
            name = last_name(node.func)
            if name in _BOOL_RESULTS:
                return True
            if name == "where" and len(node.args) + len(node.keywords) == 1 and (
                    node.args or node.keywords[0].arg == "condition"):
                return True  # `torch.where(c)` is `torch.nonzero(c, as_tuple=True)`: index tensors (PyTorch docs)
            if name == "where" and len(node.args) == 3 and all(
                    isinstance(a, ast.Constant) and type(a.value) in (int, bool) for a in node.args[1:]):
                return True  # `torch.where(c, 1, 0)`: an integer tensor, which indexes as advanced indexing
            if not isinstance(node.func, ast.Attribute) or is_dtype_conversion(node, name) or not (
                    name in ops.VIEW_METHODS or name in ops.EXPAND_METHODS or name in ops.MAY_ALIAS_METHODS):
                return False
            node = node.func.value

    def accumulated_params(self, recv: frozenset) -> bool:
        """``recv`` is a parameter this function already updated in place (``exp_avg_sq.mul_(b2).addcmul_(g, g)``,
        then ``exp_avg_sq.sqrt().add_(eps)``). Guess: it is state (an optimizer's moments, a running
        buffer), which needs no grad; an in-place update of a leaf that needs grad would have raised
        already (docs/pytorch-facts.md#leaf-requires-grad). Only writes made with grad on count: where
        grad is off, a weight that needs grad is updated in place legally (``w.clamp_()`` under
        ``torch.no_grad()``), and what it computes later still saves its output."""
        written = {w.index for w in self.param_writes if w.via is None and not w.steps and not w.no_grad}
        return all(param_index(o) in written and not o.steps for o in recv)

    def stored_value(self, node: ast.expr, depth: int = 0) -> bool:
        """``node`` reads what a container held before this function ran: an item of it (``state["exp_avg"]``,
        ``optim.state.get(p, {})``, an item of that), or a local every binding of which is one (a loop over
        ``optimizer.state.values()`` too). Not a container this function builds (a list or dict written out here) or
        fills with something computed (``self.cache["h"] = self.model(x)``): that may hold a model's output. A tensor
        an optimizer or a cache stored (a momentum buffer, Adam's moments) is state, which never requires grad."""
        if depth > 4:
            return False
        container = None
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice):
            container = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("get", "pop", "setdefault") and node.args:
            container = node.func.value
        if container is not None:
            return not self._built_here(container) and (
                not isinstance(container, (ast.Subscript, ast.Call)) or self.stored_value(container, depth + 1))
        if isinstance(node, ast.Name) and node.id in self.assigned and node.id not in self.params:
            values = self._bindings().get(node.id)
            return bool(values) and all(self.stored_value(v, depth + 1) or _state_items(v) for v in values)
        return False

    def _built_here(self, container: ast.expr) -> bool:
        """This function binds ``container`` to a list, tuple, dict or comprehension it writes out, or stores a
        computed value in one of its items."""
        key = dotted_name(container)
        if key is None or self.func is None or isinstance(self.func, ast.Module):
            return False
        for n in walk_ast(self.func):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    if dotted_name(t) == key and isinstance(n.value, _BUILT):
                        return True
                    if isinstance(t, ast.Subscript) and dotted_name(t.value) == key \
                            and not isinstance(n.value, ast.Constant):
                        return True
        return False

    def _tensor_param_here(self, name: str, guess: int) -> bool:
        """``name`` is a parameter of this function (not parameter ``guess``) that is surely a tensor (annotated
        ``Tensor``, or used as one: :meth:`annotated_tensor`) and is never bound again here."""
        params = list(self.params)
        return name in params and params.index(name) != guess and name not in self.rebound_params \
            and name not in self.assigned and self.annotated_tensor(params.index(name))

    def torch_made(self, name: str, line: int = 0) -> bool:
        """Every binding of the local ``name`` in this function that may reach ``line`` is ``name = torch.<op>(...)``,
        ``name = <expr>.clone()`` or ``name = <expr>.new_empty(...)`` (a tensor with its own storage, surely, that the
        walk leaves untracked when its inputs are only guesses about parameters: ``torch.maximum(spot - k, z)``, ``y =
        x.clone()``). A binding below ``line`` and outside the loops being walked cannot reach it (``r = r[..., k:]``
        after the loop that wrote ``r``: philtorch's ``polydiv``); ``line`` 0: every binding."""
        if name in self.params or self.func is None or isinstance(self.func, ast.Module):
            return False
        found = False
        loops = [(loop.lineno, loop.end_lineno or loop.lineno) for loop in getattr(self, "loop_stack", ())]
        for node in walk_ast(self.func):
            if line and getattr(node, "lineno", 0) > line and not any(a <= node.lineno <= b for a, b in loops):
                continue
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
                found = True
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
                for value in values_bound(node, name):
                    if not self._made(value, name):
                        return False
        return found

    def _made(self, value: ast.expr, name: str) -> bool:
        """:meth:`torch_made`'s test of one value bound to ``name``; ``t = torch.stack(...).to(torch.float)``,
        ``F.one_hot(y, n).float()`` and ``t = t.float()`` too (a dtype or device conversion, :data:`_CONVERSIONS`,
        returns its receiver or a copy: a tensor either way), a conversion of a parameter surely a tensor (``t =
        target.float()``: the caller's tensor or a copy of it), and arithmetic on the name itself or on such a value
        (``t = t * mask``): pixseg's Dice loss, set CQ."""
        if isinstance(value, ast.Name):
            return value.id == name
        if isinstance(value, ast.BinOp):
            return self._made(value.left, name) or self._made(value.right, name)
        if not isinstance(value, ast.Call):
            return False
        if isinstance(value.func, ast.Attribute) and value.func.attr in _CONVERSIONS:
            recv = value.func.value
            if isinstance(recv, ast.Name) and recv.id in self.params and recv.id not in self.rebound_params:
                return self.annotated_tensor(list(self.params).index(recv.id))
            return self._made(recv, name)
        return self.torch_op_call(value) or (isinstance(value.func, ast.Attribute) and value.func.attr in
                                             _MADE_BY_METHOD) or self._copy_of_tensor_param(value)

    def _copy_of_tensor_param(self, value: ast.Call, methods=_COPIED_BY_METHOD) -> bool:
        """``weights.view(n, 1, a).repeat(1, h, 1)``: a copying method (:data:`_COPIED_BY_METHOD`, or ``methods``) of a
        method chain on a parameter that is surely a tensor (annotated ``Tensor``, or used as one:
        :meth:`annotated_tensor`)."""
        if not (isinstance(value.func, ast.Attribute) and value.func.attr in methods):
            return False
        recv = value.func.value
        while isinstance(recv, ast.Call) and isinstance(recv.func, ast.Attribute):
            recv = recv.func.value
        params = list(self.params)
        return isinstance(recv, ast.Name) and recv.id in params and recv.id not in self.rebound_params \
            and self.annotated_tensor(params.index(recv.id))


#: values a function writes out as a container
_BUILT = (ast.List, ast.Tuple, ast.Dict, ast.ListComp, ast.DictComp, ast.SetComp, ast.Set)


def _state_items(value: ast.expr) -> bool:
    """``optimizer.state.values()`` or ``.items()``: a loop over an optimizer's per-parameter states."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
        and value.func.attr in ("values", "items") and isinstance(value.func.value, ast.Attribute) \
        and value.func.value.attr == "state"
