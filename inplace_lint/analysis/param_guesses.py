"""Which parameters an op's input is computed from, when nothing else says whether it requires grad: a guess
the callers decide (``Origin.guess_param``; :meth:`~.across_calls.AcrossCalls._no_call_passes_grad`). Also the
one-walk table of what each local is bound to, which the guesses and the expand facts read.
A part of :class:`~.dataflow.Scope`, through :class:`~.call_grad.CallGradMixin`."""
from __future__ import annotations

import ast
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from ..findings import Origin, RootKind
from ..torch_facts import ops
from .astutil import dotted_name, is_str_constant, last_name, walk_ast
from .consumers import GRADLESS_CONSUMERS
from .grad import grad_mode_of
from .env import EMPTY
from .names import qualify_dotted
from .summaries import no_grad_value, param_index

#: torch functions that return something other than one tensor
_NOT_ONE_TENSOR = frozenset({"split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "meshgrid",
                             "broadcast_tensors", "where", "sort", "topk", "max", "min", "median", "mode", "kthvalue",
                             "unique", "unique_consecutive", "nonzero", "frexp", "lu", "qr", "svd", "eig", "slogdet",
                             "histogram", "aminmax", "var_mean", "std_mean", "cummax", "cummin", "is_tensor",
                             "is_floating_point", "numel", "typename", "get_default_dtype", "is_grad_enabled"})
#: torch modules whose functions return no tensor of a program's values: a process group's size or rank, a device
#: count, a work handle, a script (``torch.distributed.get_world_size() * 1.0`` is a number)
_NOT_TENSOR_MODULES = ("torch.jit.", "torch.distributed.", "torch.cuda.", "torch.backends.", "torch.utils.")
#: what a tensor has that is not its value: reading it reads no tensor (:meth:`CallGradMixin._computed_from`)
_NOT_VALUE_ATTRS = frozenset({"shape", "device", "dtype", "ndim", "is_cuda", "requires_grad", "layout"})
#: attributes of a tensor that are tensors computed from it (another attribute of a parameter is an object's field)
_TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag"})
#: builtins that make a Python number of a tensor, and tensor methods whose result takes no gradient
_NUMBER_BUILTINS = frozenset({"float", "int", "bool", "complex"})
_GRADLESS_METHODS = frozenset({"item", "tolist", "argmax", "argmin", "argsort", "long", "int", "bool", "detach",
                               "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite", "numpy"})
#: torch functions whose operand at this position is an index (integer) tensor, never differentiable (the method form,
#: ``v.gather(0, t)``, takes it one earlier); PyTorch docs: ``torch.gather``, ``index_select``, ``take``,
#: ``take_along_dim``
_INDEX_OPERAND = {"gather": 2, "index_select": 2, "take": 1, "take_along_dim": 1}
#: annotations of Python numbers (``t: int``): what such a parameter holds never requires grad
_NUMBER_TYPES = frozenset({"int", "float", "bool", "complex"})
_NOT_VALUE_CALLS = frozenset({"size", "dim", "numel", "len", "isinstance", "nelement", "get_device", "stride", "range"})

#: tensor methods whose result is computed from the receiver and arguments (a local bound to one reads them)
_KNOWN_OPS = (ops.VIEW_METHODS | ops.MAY_ALIAS_METHODS | ops.MULTI_VIEW_METHODS | ops.SLICED_VIEW_METHODS
              | ops.EXPAND_METHODS | ops.SAVES_OUTPUT | ops.ARITHMETIC)


#: a copy of a parameter that is surely a tensor is computed from it (``out = coords.clone()``, as ``coords * 1``)
CLONES = frozenset({"clone"})
#: tensor methods that make a factory's tensor (``requires_grad=False`` unless passed)
_FACTORY_METHODS = ops.FACTORY_METHODS
#: torch functions and tensor methods that make a new tensor (not a view, not maybe the input itself)
_NEW_TENSOR_OPS = (ops.SAVES_OUTPUT | ops.ARITHMETIC) - ops.VIEW_METHODS - ops.MAY_ALIAS_METHODS


def _gradless_return(value: Optional[ast.expr], origins: frozenset, no_grad: bool) -> bool:
    """:meth:`ParamGuessesMixin.note_return`'s first question, on the returned expression and what it evaluates to."""
    if value is None or origins and no_grad_value(origins):
        return True  # (`return`, `return torch.zeros(n)`; `return 0.0`, `return x > 0`: below)
    if origins:
        return False
    if no_grad and (isinstance(value, (ast.BinOp, ast.UnaryOp)) or isinstance(value, ast.Call) and (
            last_name(value.func) or "") in _NEW_TENSOR_OPS and (isinstance(value.func, ast.Attribute))):
        return True  # a new tensor made with grad off (not a view, nor what a callable returns: maybe its argument)
    return _gradless_expr(value)




def _integer_result(call: ast.Call) -> bool:
    """``call`` may make an integer or bool tensor: an op whose result is an index or a count
    (:data:`.consumers.GRADLESS_CONSUMERS`), or a cast to a dtype that is an integer one or not known here
    (``.to(ref.dtype)``, ``.type(dtype)``)."""
    name = last_name(call.func) or ""
    if name in GRADLESS_CONSUMERS:
        return True
    if name not in ("to", "type") or not isinstance(call.func, ast.Attribute):
        return False
    for arg in list(call.args) + [k.value for k in call.keywords if k.arg == "dtype"]:
        dtype = last_name(arg) or ""
        if dtype in ops.INTEGER_DTYPES or dtype == "dtype":
            return True
    return False


def _gradless_expr(node: ast.expr) -> bool:
    """``node`` surely needs no grad whatever the names in it hold: a number, a comparison, an index
    (``x.argmax(-1)``), a factory method (``x.new_zeros(n)``), and arithmetic or dtype conversions of those."""
    if isinstance(node, (ast.Constant, ast.Compare)):
        return True
    if isinstance(node, ast.BinOp):
        return _gradless_expr(node.left) and _gradless_expr(node.right)
    if isinstance(node, ast.UnaryOp):
        return _gradless_expr(node.operand)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        name = node.func.attr
        return name in _GRADLESS_METHODS or name in _FACTORY_METHODS and not any(
            k.arg == "requires_grad" for k in node.keywords) or (
            name in ops.MAY_ALIAS_METHODS and _gradless_expr(node.func.value))  # (`ids.argmax(-1).float()`)
    return False


def guessed_params(origins: frozenset) -> Tuple[int, ...]:
    """The parameters an op's input is known only as (their placeholders, or the guesses their annotations make),
    when nothing in ``origins`` is evidence that it requires grad; () otherwise."""
    if not origins or any(o.grad_evidence and param_index(o) is None for o in origins):
        return ()
    return tuple(sorted(({param_index(o) for o in origins} | {o.guess_param for o in origins if o.guess_param >= 0})
                        - {None}))


def guessed_param(origins: frozenset) -> int:
    """The first of :func:`guessed_params`, or -1."""
    indexes = guessed_params(origins)
    return indexes[0] if indexes else -1


def _updates(value: ast.expr, name: str) -> bool:
    """``phi = phi - buf[:, p:p + 1] * phi``, ``x = -x``: arithmetic on the local itself, which keeps it a tensor when
    its other bindings make it one."""
    return isinstance(value, (ast.BinOp, ast.UnaryOp)) and not (
        isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not)) and any(
        isinstance(n, ast.Name) and n.id == name for n in walk_ast(value))


def _factory_call(value: ast.expr) -> bool:
    """``torch.zeros(n)``, ``torch.empty_like(x)``, ``x.new_zeros(n)``: a factory's tensor (no grad unless asked)."""
    return isinstance(value, ast.Call) and _factory_form(value) \
        and not any(k.arg == "requires_grad" for k in value.keywords)


def _factory_form(call: ast.Call) -> bool:
    """``call`` is a torch factory (``torch.zeros``, ``torch.ones_like``) or a tensor's factory method
    (``x.new_zeros``), whatever its ``requires_grad``."""
    name = last_name(call.func) or ""
    torch_op = (dotted_name(call.func) or "").startswith(("torch.", "F."))
    return torch_op and (name in ops.FACTORY_FUNCTIONS or name.endswith("_like")) \
        or not torch_op and name in _FACTORY_METHODS and isinstance(call.func, ast.Attribute)


def _number_or_gradless(call: ast.Call) -> bool:
    """``float(t.mean())``, ``logits.argmax(-1)``, ``x.detach()``: a number, or a method whose result takes no
    gradient."""
    name = last_name(call.func) or ""
    return isinstance(call.func, ast.Name) and name in _NUMBER_BUILTINS \
        or isinstance(call.func, ast.Attribute) and name in _GRADLESS_METHODS


class ParamGuessesMixin:
    """Guesses about parameters (a part of :class:`~.dataflow.Scope`)."""

    def _computed_from(self, node: ast.expr, depth: int, seen: Optional[Set[str]] = None,
                       fresh_ok: bool = False) -> Optional[Set[int]]:
        """The parameters ``node`` reads, through the locals it reads (every value each is bound to in the
        function), when it reads nothing else that could be a tensor; None when it reads a local bound another
        way (a loop variable, an unpacking) or to a factory's tensor (``torch.ones_like(x)``, ``torch.eye(n)``:
        the local speaks for itself, and the parameter may be a number), or locals more than three deep.
        Shapes, devices and dtypes (``x.shape[0]``, ``x.size(1)``, ``len(x)``) are not reads of a tensor.
        ``fresh_ok``: a local bound only to factories' tensors adds nothing (in an update of a local that a torch op
        already makes a tensor, where the factory's tensor cannot be what makes it one)."""
        found: Set[int] = set()
        seen = set() if seen is None else seen
        todo = [node]
        while todo:
            part = todo.pop()
            if isinstance(part, ast.Attribute) and part.attr in _NOT_VALUE_ATTRS or isinstance(part, ast.Compare):
                continue  # (a comparison is a bool tensor: no gradient flows through it)
            if isinstance(part, ast.Attribute) and part.attr not in _TENSOR_ATTRS and not (
                    isinstance(part.value, ast.Name) and part.value.id == self.self_name) or (
                    isinstance(part, ast.Subscript) and isinstance(part.slice, ast.Constant)
                    and isinstance(part.slice.value, str)):
                return None  # `td["locs"]`, `batch.pos`: what an object or a mapping holds speaks for itself
            if isinstance(part, ast.Subscript):
                todo.append(part.value)  # (an index selects: `buf[:, p:p + 1]` reads `buf`, not the loop's `p`)
                continue
            if isinstance(part, ast.Call):
                name = last_name(part.func) or ""
                if name in _NOT_VALUE_CALLS or _number_or_gradless(part):
                    continue  # (`float(t.mean())`, `logits.argmax(-1)`, `x.detach()`: no gradient flows through)
                torch_op = (dotted_name(part.func) or "").startswith(("torch.", "F.")) or self.torch_op_call(part)
                if _factory_form(part):
                    return None  # (`x.new_zeros(n)`: a factory's tensor, whatever `x` is)
                if depth and not torch_op and not (isinstance(part.func, ast.Attribute) and (
                        name in _KNOWN_OPS or name == "clone")):
                    return None  # a local bound to what a callable returned (`m = convert(a)`) speaks for itself
                if self._own_method_call(part):
                    return None  # `self.noise_scale(x, t)`: the method's summary says what it returns
                if isinstance(part.func, ast.Name) and not torch_op:
                    # `torch.sigmoid(lin(x))`: what a callable parameter returns is its callers' to decide, through
                    # what they pass for the callable (a `lambda t: t.detach()` returns nothing that needs grad)
                    todo.append(part.func)
                    continue
                # (the receiver of a method, not the method's name: `query.mul(scale)` reads `query`, `scale`; an
                # index operand, `torch.gather(v, 0, t)`, is an integer tensor: no gradient flows through it)
                skip = _INDEX_OPERAND.get(name, -1) - (1 if isinstance(part.func, ast.Attribute) and not torch_op else 0)
                todo.extend(a for i, a in enumerate(part.args) if i != skip)
                todo.extend(k.value for k in part.keywords if k.arg not in ("index", "indices"))
                if isinstance(part.func, ast.Attribute) and not torch_op:
                    todo.append(part.func.value)
                continue
            if isinstance(part, ast.Name) and isinstance(part.ctx, ast.Load) and part.id != self.self_name:
                if part.id in self.params:  # (a parameter bound again too: `cov = torch.nan_to_num(cov)`)
                    if part.id not in self.submodule_results and part.id not in self.number_parameters():
                        found.add(list(self.params).index(part.id))
                elif part.id in self.assigned and part.id not in seen and (held := guessed_params(
                        self.env.get(part.id, EMPTY))) and not any(o.grad_evidence for o in self.env[part.id]):
                    found.update(held)  # a local tracked only as a guess (`autocorr = autocorrelation(series)`)
                elif part.id in self.assigned and part.id not in seen:  # (`x = x.permute(...)` reads x once)
                    values = self._bindings().get(part.id)
                    if not values or depth >= 3 or any(self._gradless_binding(v) for v in values):
                        return None  # (`h = h.detach()`, `phi = phi.item()`, a binding made with grad off)
                    seen.add(part.id)
                    if fresh_ok and all(_factory_call(v) for v in values):
                        continue  # (`buf = torch.zeros(3, n)` read by `phi - buf[:, p:p + 1] * phi`)
                    for value in values:
                        deps = self._computed_from(value, depth + 1, seen, fresh_ok or (
                            _updates(value, part.id) and not all(_updates(v, part.id) for v in values)))
                        if deps is None:
                            return None
                        found |= deps
                continue
            todo.extend(ast.iter_child_nodes(part))
        return found

    def note_return(self, value: Optional[ast.expr], origins: frozenset) -> None:
        """What a return statement gives, for the summary. Whether it surely needs no grad
        (:attr:`.summaries.FunctionSummary.no_grad_result`): None, a number, an index or a comparison
        (``x.argmax(-1)``), a factory's tensor (``x.new_zeros(n)``), an op run under ``torch.no_grad()``, or what
        is tracked as needing none. And, when nothing tracks it (``return (features.relu() + 1e-6).pow(p)``),
        whether torch ops, tensor methods and arithmetic compute it from parameters alone (:meth:`_computed_from`):
        a new tensor that requires grad when what a call passes for one of them does
        (:attr:`.summaries.FunctionSummary.computed`; the call decides,
        :meth:`.project_calls.ProjectCallsMixin.project_call`). Not a container, an object's field, or what
        another callable returns."""
        if self.func is None:
            return
        self.return_count += 1
        if _gradless_return(value, origins, self.no_grad):
            self.gradless_returns += 1
            return
        if origins and not self.no_grad and not self.grad_off_block:
            # a tensor tracked only as a guess about parameters (`torch.stack([...])` of an annotated `series`):
            # computed from them, for the call to decide as below
            guesses = guessed_params(origins)
            if guesses and all(o.guessed or o.guess_param >= 0 or param_index(o) is not None for o in origins):
                self.computed_returns |= set(guesses)
        if origins or value is None or self.no_grad or not (
                isinstance(value, ast.BinOp) or isinstance(value, ast.UnaryOp) and not isinstance(value.op, ast.Not)
                or isinstance(value, ast.Call) and (self.torch_op_call(value) or isinstance(value.func, ast.Attribute)
                                                    and value.func.attr in _KNOWN_OPS)
                or isinstance(value, ast.Name) and value.id in self.assigned
                # (`x[:, self.ids]`: an item of a tensor, view or copy, requires grad when the tensor does)
                or isinstance(value, ast.Subscript) and not is_str_constant(value.slice)):
            return
        found = self._computed_from(value, 0) if not self.grad_off_block else None  # (a local made with grad off)
        if found and not any(isinstance(n, ast.Call) and _integer_result(n) for n in walk_ast(value)):
            self.computed_returns |= found  # (`torch.bucketize(x, e)`, `.to(ref.dtype)`: maybe integers, not this)

    def untracked_guesses(self, name: str, line: int) -> Tuple[int, ...]:
        """The parameters an untracked local is computed from, when every binding of it is a torch op, a tensor
        method or arithmetic, and one is a torch op or arithmetic on a parameter annotated ``Tensor``
        (``x = F.unfold(x, k)``, ``x = x.transpose(1, 2)``, ``qu = matrix * 2``: surely a tensor, left untracked
        because its inputs are only guesses); () otherwise, or when the name holds anything tracked.
        The bindings are those before ``line``, and those in a loop around it (``x = fn(x, w)`` after the read
        is not what was read)."""
        if self.env.get(name) or name not in self.assigned or self.func is None:
            return ()
        values = self._bindings().get(name)
        if not values:
            return ()
        cached = self.local_cond_cache.get(("untracked", name, line))
        if cached is not None:
            return cached
        loops = [(loop.lineno, loop.end_lineno or loop.lineno) for loop in self.loop_stack]
        augmented = self.local_cond_cache["augmented"]  # (`x -= m` keeps what `x` is)
        values = [v for v in values if id(v) not in augmented
                  and (v.lineno < line or any(first <= v.lineno <= last for first, last in loops))]
        torch_op = False
        if any(self._gradless_binding(v) for v in values):
            return ()  # some binding needs no grad (`h = h.detach()` each pass): which one reaches the op is not known
        updates = [v for v in values if _updates(v, name)]
        values = [v for v in values if not any(v is u for u in updates)]
        for value in values:
            # (`F.unfold(x, k).transpose(1, 2)`: tensor methods down to a torch op)
            while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                    and value.func.attr in _KNOWN_OPS and isinstance(value.func.value, ast.Call):
                value = value.func.value
            if isinstance(value, ast.BinOp) and not isinstance(value.op, ast.Mod):
                # `qu = matrix * 2`: arithmetic on a parameter annotated `Tensor` makes a tensor (`%` may format)
                deps = self._computed_from(value, 1)
                if not deps or not any(self.annotated_tensor(g) for g in deps):
                    return ()
                torch_op = True
                continue
            if not isinstance(value, ast.Call):
                return ()
            if self.torch_op_call(value) or self._copy_of_tensor_param(value, CLONES):
                torch_op = True
            elif not (isinstance(value.func, ast.Attribute) and value.func.attr in _KNOWN_OPS):
                return ()
        found: Set[int] = set()
        for value in (values + updates) if torch_op else ():
            # (what its bindings read: `x = torch.stack([x] + others)` is not only the parameter `x`; a factory's
            # tensor an update reads, `phi - buf[:, p:p + 1] * phi`, adds no parameter and takes none away)
            deps = self._computed_from(value, 1, fresh_ok=any(value is u for u in updates))
            if deps is None:
                found = set()
                break
            found |= deps
        out = self.local_cond_cache[("untracked", name, line)] = tuple(sorted(found))
        return out

    def torch_op_call(self, call: ast.Call) -> bool:
        """``torch.<op>(...)`` (through the module's imports: ``F.unfold``) that returns one tensor: not
        ``torch.jit.*`` (``torch.jit.annotate(List[Tensor], [])`` is a list), nor ``torch.split(...)`` (a tuple), nor
        a number (``dist.get_world_size()``, ``torch.get_num_threads()``, ``torch.is_tensor(x)``)."""
        dotted = dotted_name(call.func)
        qual = (qualify_dotted(dotted, self.names, self.is_local_name)[0] or "") if dotted else ""
        name = qual.rpartition(".")[2]
        return qual.startswith("torch.") and not qual.startswith(_NOT_TENSOR_MODULES) \
            and name not in _NOT_ONE_TENSOR and not name.startswith(("is_", "get_num_"))

    def shape_part_of(self, name: ast.Name, recv: ast.expr, line: int):
        """``"shape"`` when ``name`` is bound once, before ``line``, to ``recv.shape`` or ``recv.size()``; ``k``
        when to ``recv.shape[k]`` or ``recv.size(k)``; None otherwise, or when the name ``recv`` is bound again
        between that binding and ``line``, or anywhere in a loop around it (``s = x.shape; ...; x.expand(1, s[0])``)."""
        values = self._bindings().get(name.id)
        if not values or len(values) != 1 or not isinstance(recv, ast.Name):
            return None
        value = values[0]
        part, index = value, None
        if isinstance(part, ast.Subscript) and isinstance(part.slice, ast.Constant) and type(part.slice.value) is int:
            part, index = part.value, part.slice.value
        if isinstance(part, ast.Attribute) and part.attr == "shape":
            shape = part.value
        elif isinstance(part, ast.Call) and isinstance(part.func, ast.Attribute) and part.func.attr == "size" \
                and index is None and len(part.args) <= 1:
            shape = part.func.value
            if part.args:
                if not (isinstance(part.args[0], ast.Constant) and type(part.args[0].value) is int):
                    return None
                index = part.args[0].value
        else:
            return None
        if not (isinstance(shape, ast.Name) and shape.id == recv.id and value.lineno < line):
            return None
        if recv.id in self._bound_otherwise():
            return None
        loops = [(loop.lineno, loop.end_lineno or loop.lineno) for loop in self.loop_stack]
        # (in a loop, a binding after `line` reaches the next pass: `s` may be the shape of another tensor there)
        if any(value.lineno < v.lineno < line or any(first <= v.lineno <= last for first, last in loops)
               and v.lineno != line for v in self._bindings().get(recv.id, ())):
            return None
        return "shape" if index is None else index

    def _bindings(self) -> Dict[str, List[ast.expr]]:
        """The values each plain name is bound to by ``=``, ``+=`` or ``x: T = v`` in the function walked, for the
        names bound only so (not by a loop, an unpacking, ``with ... as``, an import); built once per function."""
        got = self.local_cond_cache.get("bindings")
        if got is None:
            values: Dict[str, List[ast.expr]] = {}
            plain, bound_otherwise = set(), set()
            nodes = list(walk_ast(self.func)) if self.func is not None else []
            augmented = set()
            for stmt in nodes:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    values.setdefault(stmt.targets[0].id, []).append(stmt.value)
                    plain.add(id(stmt.targets[0]))
                elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                        and isinstance(stmt.targets[0], (ast.Tuple, ast.List)) and isinstance(stmt.value, (ast.Tuple, ast.List)) \
                        and len(stmt.targets[0].elts) == len(stmt.value.elts) \
                        and not any(isinstance(e, ast.Starred) for e in stmt.targets[0].elts + stmt.value.elts):
                    # `phi, pac[:, 0:2] = autocorr[:, 1:2], autocorr[:, 0:2]`: each name is bound to its own element
                    for target, value in zip(stmt.targets[0].elts, stmt.value.elts):
                        if isinstance(target, ast.Name):
                            values.setdefault(target.id, []).append(value)
                            plain.add(id(target))
                elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and isinstance(stmt.target, ast.Name) \
                        and stmt.value is not None:
                    values.setdefault(stmt.target.id, []).append(stmt.value)
                    plain.add(id(stmt.target))
                    if isinstance(stmt, ast.AugAssign):
                        augmented.add(id(stmt.value))  # (`x -= m` keeps what `x` is; `m` is read)
            self.local_cond_cache["augmented"] = frozenset(augmented)
            off = set()  # the values bound inside `with torch.no_grad():` (and the like): they need no grad
            for node in nodes:
                if isinstance(node, (ast.With, ast.AsyncWith)) \
                        and any(grad_mode_of(item.context_expr) is False for item in node.items):
                    off.update(id(n) for n in walk_ast(node) if isinstance(n, ast.expr))
            self.local_cond_cache["made without grad"] = frozenset(off)
            for n in nodes:
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and id(n) not in plain:
                    bound_otherwise.add(n.id)
            got = self.local_cond_cache["bindings"] = {k: v for k, v in values.items() if k not in bound_otherwise}
            self.local_cond_cache["bound otherwise"] = frozenset(bound_otherwise)
        return got

    def _bound_otherwise(self) -> FrozenSet[str]:
        """The names :meth:`_bindings` leaves out: bound by a loop, an unpacking, ``with ... as``, an import."""
        self._bindings()
        return self.local_cond_cache["bound otherwise"]

    def in_grad_off_block(self, node: ast.expr) -> bool:
        """``node`` sits inside a ``with torch.no_grad():`` (or the like) block of the function walked."""
        self._bindings()
        return id(node) in self.local_cond_cache["made without grad"]

    def _gradless_binding(self, value: ast.expr) -> bool:
        """A binding whose value never requires grad: ``x.detach()``, ``x.item()``, ``float(x)``, an index or a count
        (``torch.bucketize``, :func:`_integer_result`), or a value made inside ``torch.no_grad()``."""
        if self.in_grad_off_block(value):
            return True
        if not isinstance(value, ast.Call):
            return False
        return _number_or_gradless(value) or _integer_result(value)

    def computed_guess(self, computed: FrozenSet[int], binding: Dict[int, tuple], text: str, line: int) -> List[Origin]:
        """What a project call returns when its callee computes the result from its parameters ``computed``
        (:attr:`.summaries.FunctionSummary.computed`) and the call passes there nothing that requires grad by
        evidence, but a guess about a parameter of this function annotated ``torch.Tensor`` (``autocorr =
        autocorrelation(series, n)``): a tensor guessed from that parameter, for this function's callers to decide;
        nothing otherwise."""
        guesses = sorted({g for i in computed for g in guessed_params(binding.get(i, (EMPTY, None))[0])
                          if 0 <= g < len(self.params) and self.annotated_tensor(g)})
        return [Origin(RootKind.TENSOR, text, line, guessed=True, guess_param=guesses[0])] if guesses else []

    def tensor_param_guess(self, node: Optional[ast.expr], origins: Optional[frozenset]) -> int:
        """:meth:`_guess_of` ``node``, when that parameter is annotated ``torch.Tensor`` (a parameter that may be a
        number, a scale or a probability, is no guess that anything requires grad); -1 otherwise. (Also what a
        project call passes untracked, `logits[:, self.ids]`: the callee's guess goes to that parameter.)"""
        if node is None:
            return -1
        if origins is None:
            key = dotted_name(node)
            origins = self.env.get(key, EMPTY) if key is not None else EMPTY
        guess = self._guess_of(node, origins)
        return guess if 0 <= guess < len(self.params) and self.annotated_tensor(guess) else -1

    def _guess_of(self, node: ast.expr, origins: frozenset) -> int:
        """The first of :meth:`guesses_of`, or -1."""
        guesses = self.guesses_of(node, origins)
        return guesses[0] if guesses else -1

    def own_method(self, attr: str) -> bool:
        """The class being walked (or a base in the project) defines a method ``attr``: ``self.<attr>(...)`` is a
        method call, not a submodule's."""
        return self.ctx is not None and bool(getattr(self, "cls_qual", None)) \
            and bool(self.ctx.method(self.cls_qual, attr))

    def _own_method_call(self, call: ast.Call) -> bool:
        """``self.<name>(...)`` of a method the class defines (:meth:`own_method`)."""
        func = call.func
        return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
            and func.value.id == self.self_name and self.own_method(func.attr)

    def annotated_as(self, types) -> FrozenSet[str]:
        """This function's parameters annotated with a bare name among ``types`` (``t: int``), never bound again here."""
        args = getattr(self.func, "args", None)
        if not isinstance(args, ast.arguments):
            return frozenset()
        return frozenset(a.arg for a in args.posonlyargs + args.args + args.kwonlyargs
                         if isinstance(a.annotation, ast.Name) and a.annotation.id in types
                         and a.arg not in self.rebound_params and a.arg not in self.assigned)

    def number_parameters(self) -> FrozenSet[str]:
        """This function's parameters annotated as Python numbers (``t: int``, ``scale: float``, ``flag: bool``):
        a number never requires grad, so nothing computed from one is a guess about it."""
        return self.annotated_as(_NUMBER_TYPES)

    def guess_origins(self, node: ast.expr, origins: frozenset, make) -> frozenset:
        """``make(g)`` (an :class:`Origin` guessed from parameter ``g``) for each parameter an op's input
        ``node`` is computed from (:meth:`guesses_of`): the callers of any of them decide (a write after
        ``torch.norm(pred - target)`` raises when ``pred`` requires grad, whatever ``target`` is); ``make(-1)``
        when it is no guess."""
        return frozenset(make(g) for g in self.guesses_of(node, origins) or (-1,))

    def guesses_of(self, node: ast.expr, origins: frozenset) -> Tuple[int, ...]:
        """:func:`guessed_params` of an op's input, or, untracked, the indexes of the parameters it names."""
        if origins:
            return guessed_params(origins)
        if isinstance(node, ast.Name) and node.id in self.params and node.id not in self.submodule_results:
            return (list(self.params).index(node.id),)
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Call, ast.Subscript, ast.Name)):
            # `(q @ k.transpose(-2, -1)).softmax(-1)`: an expression of parameters alone (and literals) is a
            # guess of the first one it reads (callers decide; with no in-project call it stays). One that
            # also reads a local (a factory's tensor: `(g / (2 * sigma ** 2)).exp()`) is not: the local
            # speaks for itself, and the parameter may be a number
            # (a local computed from parameters alone reads them: `m = means[target].permute(0, 3, 1, 2)`)
            found = self._computed_from(node, 0)
            return tuple(sorted(found)) if found else ()
        return ()
