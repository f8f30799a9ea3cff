"""Fix planning: whether a finding has an out-of-place rewrite, of which kind, and whether it is safe.

Called by the engine at each finding (never on clean code, so it costs nothing there).
The codemod only turns the plan into syntax.

Safety (DESIGN.md "Fix policy"): a rewrite rebinds the target name instead of
mutating the tensor, so anything else that shares the storage stops seeing the
change. It is SAFE only when nothing that could observe the mutation can see it:

- the target and the view's base (``output`` of ``output.logits``) and every other
  name that may hold the same tensor (for every origin the target may have) are local
  to the function: not a parameter, ``global``, ``nonlocal`` or closure variable;
- none of them is read after the write (reads in the other arm of an ``if`` around the
  write do not count, unless a loop around that ``if`` can run it again);
- none of them escaped before the write: stored in a container or an attribute, passed
  to a call that may keep it (anything but torch functions and a few builtins), yielded,
  or captured by a nested function, lambda or generator;
- what an in-project call returned is not also held by the callee (``FunctionSummary.kept``:
  a caching or replacing decorator, ``self.last = out``, ``_LOG.append(out)``; see
  :func:`returned_elsewhere`, :func:`decorator_effects`);
- no Python attribute was set on the tensor object (``x.tag = v``: lost by rebinding).

A model output is a record: another field (``output.hidden_states``, ``output["entropy"] = e``)
is not a read of the written one (:func:`written_fields`).

Anything else is UNSAFE, with the reason.
"""
from __future__ import annotations

import ast
import bisect
import dataclasses
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple, Union

from ..torch_facts import ops
from .astutil import dotted_name as _dotted
from .astutil import last_name as _last_name
from .astutil import short
from ..findings import Applicability, Finding, Fix, FixKind, Origin, RootKind, Scaling, WriteKind

#: a write under one of these is evaluated lazily, conditionally or out of order: never hoisted
_NO_HOIST_PARENTS = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.BoolOp,
                     ast.IfExp, ast.Await, ast.NamedExpr, ast.Compare, ast.Dict)
_HOIST_STATEMENTS = (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)
_SIDE_EFFECTS = (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_CAPTURES = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.GeneratorExp, ast.ClassDef)
#: methods whose result shares storage with the receiver (an alias, for escape analysis)
_ALIAS_METHODS = (ops.VIEW_METHODS | ops.MAY_ALIAS_METHODS | ops.MULTI_VIEW_METHODS | ops.EXPAND_METHODS
                  | ops.TENSOR_INPLACE_METHODS | frozenset({"numpy", "data_ptr"}))
#: callees that read their argument and keep nothing
_PURE_CALLEES = frozenset({"len", "isinstance", "print", "str", "repr", "id", "type", "hasattr", "float",
                           "int", "bool", "format", "callable", "sum", "abs", "round", "any", "all"})
#: calls that return one of their arguments
_RETURNS_ARGUMENT = frozenset({"max", "min"})
#: methods and torch functions whose result is a new tensor (or a number): everything else that takes
#: the tensor may return it or a view of it, and is followed as an alias (not ``einsum``: a permutation-only
#: equation such as ``"ij->ji"`` returns a view)
_FRESH_RESULTS = ops.SAVES_OUTPUT | frozenset({
    "sum", "mean", "max", "min", "std", "var", "norm", "prod", "argmax", "argmin", "topk", "sort", "argsort",
    "item", "tolist", "size", "dim", "numel", "clone", "log", "log1p", "log2", "log10", "expm1", "abs", "neg",
    "sign", "round", "floor", "ceil", "trunc", "add", "sub", "mul", "div", "true_divide", "floor_divide",
    "remainder", "fmod", "pow", "square", "matmul", "mm", "bmm", "dot", "outer", "cat", "concat",
    "stack", "where", "gather", "index_select", "masked_fill", "masked_select", "nonzero", "eq", "ne", "lt",
    "le", "gt", "ge", "isnan", "isinf", "isfinite", "any", "all", "cumsum", "cumprod", "clamp", "clip",
    "clamp_min", "clamp_max", "maximum", "minimum", "amax", "amin", "lerp", "addcmul", "addcdiv", "gelu",
    "silu", "elu", "leaky_relu", "softplus", "logsigmoid", "flip", "roll", "repeat", "repeat_interleave",
    "tile", "new_zeros", "new_ones", "new_full", "new_empty", "new_tensor", "zeros_like", "ones_like",
    "full_like", "empty_like", "rand_like", "randn_like", "tensor", "equal", "allclose", "isclose",
    "count_nonzero", "unique", "bincount", "median", "quantile", "diff", "logcumsumexp", "cross_entropy",
    "nll_loss", "mse_loss", "l1_loss", "kl_div", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "linear", "embedding", "layer_norm", "group_norm", "rms_norm", "normalize", "pad", "interpolate",
    "one_hot", "logical_and", "logical_or", "logical_not", "logical_xor", "bitwise_and", "bitwise_or",
    "bitwise_xor", "bitwise_not", "scatter", "scatter_add", "index_add", "index_copy", "index_fill",
    "index_put", "baddbmm", "addmm", "cosine_similarity", "cdist", "softmin", "log_softmax", "data_ptr",
})
_TORCH_PREFIXES = ("torch.", "F.", "nn.functional.")
#: tensor attributes that are not tensors sharing storage
_NON_ALIAS_ATTRS = frozenset({"shape", "dtype", "device", "ndim", "requires_grad", "grad_fn", "is_leaf", "layout",
                              "names", "grad", "is_cuda", "itemsize", "nbytes"})


class FunctionFacts:
    """What safety needs to know about one function body, computed once on its first finding."""

    def __init__(self, func: ast.AST) -> None:
        self.func = func
        self.parents: Dict[int, ast.AST] = {}
        self.loads: List[ast.Name] = []
        self.assigns: List[ast.stmt] = []
        #: the function's own ``return <value>`` statements (not those of nested functions)
        self.returns: List[ast.Return] = []
        #: ids of the loads inside a nested function, lambda, generator expression or class (run later)
        self.captured_loads: Set[int] = set()
        stack = [(func, False)]
        AST, Name, Load, ASSIGNS = ast.AST, ast.Name, ast.Load, (ast.Assign, ast.AnnAssign, ast.For, ast.AsyncFor,
                                                                 ast.NamedExpr)
        parents, loads, assigns, captured_loads = self.parents, self.loads, self.assigns, self.captured_loads
        while stack:
            node, captured = stack.pop()
            for field_name in node._fields:  # ast.iter_child_nodes, inlined (a generator per node cost more)
                value = getattr(node, field_name, None)
                if isinstance(value, list):
                    children = value
                elif isinstance(value, AST):
                    children = (value,)
                else:
                    continue
                for child in children:
                    if not isinstance(child, AST):
                        continue
                    parents[id(child)] = node
                    stack.append((child, captured or isinstance(child, _CAPTURES)))
                    if isinstance(child, Name) and isinstance(child.ctx, Load):
                        loads.append(child)
                        if captured:
                            captured_loads.add(id(child))
                    elif isinstance(child, ASSIGNS):
                        assigns.append(child)
                    elif type(child) is ast.Return and not captured and child.value is not None:
                        self.returns.append(child)
        self.loads.sort(key=lambda n: (n.lineno, n.col_offset))
        #: per name, its loads and their positions, in source order (a finding looks up only its names)
        self.by_name: Dict[str, Tuple[List[Tuple[int, int]], List[ast.Name]]] = {}
        for load in self.loads:
            positions, nodes = self.by_name.setdefault(load.id, ([], []))
            positions.append((load.lineno, load.col_offset))
            nodes.append(load)
        self.declared, self.assigned = _declarations(func)
        # memos: a function with many findings must not cost findings x loads x depth (nor findings x
        # statements: each finding looks only at the names it watches, found through these indexes)
        self.escapes: Dict[int, Optional[str]] = {}
        self.closures: Dict[FrozenSet[str], Set[str]] = {}
        self._escaping: Dict[str, Tuple[List[Tuple[int, int]], List[ast.Name]]] = {}
        self._captured: Dict[str, Tuple[List[Tuple[int, int]], List[ast.Name]]] = {}
        self._alias_edges: Optional[Dict[str, List[Tuple[Tuple[int, int], int, FrozenSet[str]]]]] = None
        self._siblings: Optional[Dict[int, Tuple[List[ast.stmt], int]]] = None
        self._attr_stores: Optional[Dict[str, List[ast.Name]]] = None

    def parent(self, node: ast.AST) -> Optional[ast.AST]:
        return self.parents.get(id(node))

    def attribute_stores(self, name: str) -> List[ast.Name]:
        """The loads of ``name`` that set or delete an attribute on it (``x.tag = v``), in source order."""
        stores = self._attr_stores
        if stores is None:
            stores = self._attr_stores = {}
            for load in self.loads:
                parent = self.parents.get(id(load))
                if isinstance(parent, ast.Attribute) and parent.value is load \
                        and isinstance(parent.ctx, (ast.Store, ast.Del)):
                    stores.setdefault(load.id, []).append(load)
        return stores.get(name, [])

    def path_to(self, node: ast.AST) -> List[ast.AST]:
        """Ancestors of ``node`` from the function down to ``node`` itself."""
        path = [node]
        while id(path[-1]) in self.parents:
            path.append(self.parents[id(path[-1])])
        return path[::-1]

    def is_param(self, name: str) -> bool:
        args = getattr(self.func, "args", None)
        return args is not None and name not in self.declared and any(
            a.arg == name for a in args.posonlyargs + args.args + args.kwonlyargs)

    def is_local(self, name: str) -> bool:
        return name not in self.declared and (name in self.assigned or isinstance(self.func, ast.Module))

    def captured(self, load: ast.Name) -> bool:
        """Inside a nested function, lambda, generator expression or class (it may run later)."""
        return id(load) in self.captured_loads

    def loaded_after(self, name: str, pos: Tuple[int, int]) -> bool:
        """``name`` is loaded at or after ``pos`` (line, column)."""
        positions = self.by_name.get(name, ((), ()))[0]
        return bool(positions) and positions[-1] >= pos

    def escape_of(self, load: ast.Name) -> Optional[str]:
        if id(load) not in self.escapes:
            self.escapes[id(load)] = _escape(self, load)
        return self.escapes[id(load)]

    def escaping(self, name: str) -> Tuple[List[Tuple[int, int]], List[ast.Name]]:
        """The loads of ``name`` through which the tensor may be kept elsewhere (:func:`_escape`)."""
        if name not in self._escaping:
            positions, nodes = self.by_name.get(name, ([], []))
            keep = [i for i, load in enumerate(nodes) if self.escape_of(load) is not None]
            self._escaping[name] = ([positions[i] for i in keep], [nodes[i] for i in keep])
        return self._escaping[name]

    def captured_of(self, name: str) -> Tuple[List[Tuple[int, int]], List[ast.Name]]:
        """The loads of ``name`` inside a nested function, lambda, generator expression or class."""
        if name not in self._captured:
            positions, nodes = self.by_name.get(name, ([], []))
            keep = [i for i, load in enumerate(nodes) if id(load) in self.captured_loads]
            self._captured[name] = ([positions[i] for i in keep], [nodes[i] for i in keep])
        return self._captured[name]

    def alias_edges(self) -> Dict[str, List[Tuple[Tuple[int, int], int, FrozenSet[str]]]]:
        """Per name ``n``: the binding statements whose value is an alias chain of ``n`` (``y = n.view(...)``,
        ``for y in n``), as (position, line, names bound), in source order. Computed once per function."""
        if self._alias_edges is None:
            edges: Dict[str, List[Tuple[Tuple[int, int], int, FrozenSet[str]]]] = {}
            for stmt in self.assigns:
                value = stmt.iter if isinstance(stmt, (ast.For, ast.AsyncFor)) else stmt.value
                if value is None:
                    continue
                targets = [stmt.target] if not isinstance(stmt, ast.Assign) else stmt.targets
                bound = frozenset(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
                sources = {n.id for n in ast.walk(value)
                           if isinstance(n, ast.Name) and _alias_chain_top(self, n) in (value, stmt)}
                for source in sources:
                    edges.setdefault(source, []).append(((stmt.lineno, stmt.col_offset), stmt.lineno, bound))
            self._alias_edges = edges
        return self._alias_edges

    def siblings(self, stmt: ast.stmt) -> Optional[Tuple[List[ast.stmt], int]]:
        """The statement list ``stmt`` is in (a ``body``, ``orelse`` or ``finalbody``) and its index there."""
        if self._siblings is None:
            index: Dict[int, Tuple[List[ast.stmt], int]] = {}
            unique = {id(p): p for p in self.parents.values()}  # a parent per child: each block once
            unique[id(self.func)] = self.func
            for parent in unique.values():
                for field_name in ("body", "orelse", "finalbody"):
                    block = getattr(parent, field_name, None)
                    if isinstance(block, list):
                        for i, child in enumerate(block):
                            index[id(child)] = (block, i)
            self._siblings = index
        return self._siblings.get(id(stmt))


# --------------------------------------------------------------------------- fix kind


def write_target_name(kind: WriteKind, target: ast.expr) -> Optional[str]:
    """The name a rewrite would rebind, or None when the target is not a plain name."""
    return target.id if isinstance(target, ast.Name) else None


def fix_kind(kind: WriteKind, node: ast.AST, op_name: Optional[str], stmt: Optional[ast.stmt],
             target_name: str, facts: FunctionFacts) -> Optional[FixKind]:
    """Which rewrite the write at ``node`` (inside statement ``stmt``) admits, if any."""
    if stmt is None or _shares_a_line(stmt, facts):
        return None
    if kind is WriteKind.METHOD and (op_name in ops.METADATA_INPLACE_METHODS or op_name is None):
        return None
    if kind is WriteKind.FUNCTION and op_name not in ops.FUNCTION_TWINS:
        return None  # torch.zero_, torch.resize_as_, ...: no same-named out-of-place function
    if kind is WriteKind.AUGMENTED:
        return FixKind.STATEMENT if stmt is node and op_name is not None else None  # `@=` has no in-place method
    if kind is WriteKind.SUBSCRIPT:
        whole = (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and stmt.targets[0] is node) or \
            (isinstance(stmt, ast.AugAssign) and stmt is node)
        return FixKind.STATEMENT if whole else None
    if kind is WriteKind.INPLACE_KWARG and not _inplace_flag_in_call(node):
        return None  # nn.ReLU(inplace=True) applied to the tensor: fix the module, not the call
    if isinstance(stmt, ast.Expr) and stmt.value is node:
        return FixKind.STATEMENT
    if isinstance(stmt, ast.Assign) and stmt.value is node and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == target_name:
        return FixKind.STATEMENT  # h = F.relu(h, inplace=True) -> h = F.relu(h); x = x.div_(t) likewise
    if kind is WriteKind.OUT_KWARG or not isinstance(stmt, _HOIST_STATEMENTS):
        return None
    return FixKind.HOIST if _hoistable(stmt, node, target_name, facts) else None


def _inplace_flag_in_call(node: ast.AST) -> bool:
    """The call itself passes ``inplace`` (``F.relu(x, inplace=True)``, ``F.relu(x, True)``); a module
    built with ``inplace=True`` and applied later (``self.dropout(x)``) has nothing in the call to drop."""
    return isinstance(node, ast.Call) and ops.inplace_argument(
        _last_name(node.func) or "", len(node.args), [k.arg for k in node.keywords]) is not None


def _hoistable(stmt: ast.stmt, node: ast.AST, target_name: str, facts: FunctionFacts) -> bool:
    """Moving the write (and its arguments) before ``stmt`` keeps the order of everything observable:
    no other read of the name in the statement, no lazy or conditional context around the write, and
    nothing with a side effect evaluated before it."""
    if _count_name(stmt, target_name) != _count_name(node, target_name):
        return False
    path = facts.path_to(node)
    path = path[path.index(stmt):]
    for parent, child in zip(path, path[1:]):
        if isinstance(parent, _NO_HOIST_PARENTS):
            return False
        for earlier in _evaluated_before(parent, child):
            if any(isinstance(n, _SIDE_EFFECTS) for n in ast.walk(earlier)):
                return False
    return True


def _evaluated_before(parent: ast.AST, child: ast.AST) -> List[ast.AST]:
    """Children of ``parent`` that Python evaluates before ``child``."""
    if isinstance(parent, (ast.Assign, ast.AnnAssign)):
        return []  # the value is evaluated before the targets
    before: List[ast.AST] = []
    for sibling in ast.iter_child_nodes(parent):
        if sibling is child:
            return before
        before.append(sibling)
    return before


# --------------------------------------------------------------------------- safety


def applicability(facts: FunctionFacts, params: Sequence[str], target_name: str, origins: Sequence[Origin],
                  aliases: Iterable[str], write: ast.AST, loops: Sequence[ast.AST],
                  callers_checked: bool = False) -> Tuple[Applicability, str]:
    """SAFE when nothing outside the rebinding can observe the mutation; else UNSAFE with the reason.

    ``callers_checked``: the project pass has checked every in-project call site and none reads what it
    passed afterwards (:mod:`.project`), so a parameter is as private as a local.
    """
    if isinstance(facts.func, ast.Module):
        return Applicability.UNSAFE, "module-level names can be imported by other code, which would no longer see the change"
    if callers_checked:
        params = ()
    if target_name in params:
        return Applicability.UNSAFE, f"`{target_name}` is a parameter: the caller would no longer see the change"
    path = facts.path_to(write)
    if any(isinstance(p, ast.Try) and any(c is child for c in p.finalbody) for p, child in zip(path, path[1:])):
        return Applicability.UNSAFE, "the write is in a `finally` block, after what the `try` block returns"
    if not facts.is_local(target_name) and not (callers_checked and facts.is_param(target_name)):
        return Applicability.UNSAFE, f"`{target_name}` comes from outside the function: it would no longer see the change"
    observers: Dict[str, str] = {a: a for a in aliases if a != target_name}
    for origin in origins:
        base = root_base_name(origin)
        if base is not None and base != target_name:
            observers.setdefault(base, origin.root_text)
    for name, what in sorted(observers.items()):
        if name in params:
            return Applicability.UNSAFE, (
                f"`{name}` is a parameter: the caller would no longer see the change to `{what}`")
        if not facts.is_local(name) and not (callers_checked and facts.is_param(name)):
            return Applicability.UNSAFE, (
                f"`{name}` comes from outside the function: other code would no longer see the change")
    key = frozenset(observers) | {target_name}
    start = (write.lineno, write.col_offset)
    end = (getattr(write, "end_lineno", write.lineno), getattr(write, "end_col_offset", 0))
    # outside loops, an alias made from the target after the write sees the new values either way
    # and a link made in an arm of an `if` that excludes the write never ran with it
    before = None if loops else start
    exclusive = _exclusive_spans(facts, write)
    closure_key = (key, before, tuple(exclusive) if before else ())
    if closure_key not in facts.closures:
        facts.closures[closure_key] = _alias_closure(facts, set(key), before, exclusive if before else ())
    watched = facts.closures[closure_key]
    loop_spans = [(loop.lineno, loop.end_lineno or loop.lineno) for loop in loops]
    fields = written_fields(origins)
    if fields:
        # a read of another field of a model output does not observe the written one, so the first load of
        # a kind no longer decides for the rest (what _candidate_loads assumes): every load is judged
        candidates = sorted((n for name in watched for n in facts.by_name.get(name, ((), ()))[1]),
                            key=lambda n: (n.lineno, n.col_offset))
    else:
        candidates = _candidate_loads(facts, watched, target_name, start, end, loop_spans, exclusive)
        stores = facts.attribute_stores(target_name)
        if stores:  # `x.tag = v` on the tensor object: not a kind _candidate_loads looks for
            seen = {id(n) for n in candidates}
            candidates = sorted(candidates + [n for n in stores if id(n) not in seen],
                                key=lambda n: (n.lineno, n.col_offset))
    for load in candidates:
        name = load.id
        pos = (load.lineno, load.col_offset)
        if start <= pos < end:
            continue  # the write itself
        if name in fields and _other_field(facts, load, fields[name]):
            continue  # `output.hidden_states`, `output["entropy"] = e`: another field of the output object
        if name == target_name and (pos < start or any(lo <= load.lineno <= hi for lo, hi in loop_spans)):
            attr = facts.parent(load)
            if isinstance(attr, ast.Attribute) and attr.value is load and isinstance(attr.ctx, (ast.Store, ast.Del)):
                # `x.tag = v`: Python state on the tensor object; the rebound name is a new object without it
                return Applicability.UNSAFE, (
                    f"`{name}.{attr.attr}` is set on the tensor object (line {load.lineno}): the rebound "
                    f"`{name}` would be a new tensor without it (AttributeError)")
        if facts.captured(load):
            return Applicability.UNSAFE, (
                f"`{name}` is used by a nested function, lambda or generator (line {load.lineno}), "
                "which would no longer see the change")
        in_loop = any(lo <= load.lineno <= hi for lo, hi in loop_spans)
        later = pos >= end or in_loop
        if later and name != target_name and not any(lo <= load.lineno <= hi for lo, hi in exclusive):
            return Applicability.UNSAFE, (
                f"`{name}` is read after the write (line {load.lineno}) and would no longer see the change")
        if (pos < start and not any(lo <= load.lineno <= hi for lo, hi in exclusive)) or in_loop:
            # after the write, the target holds the same values either way; a load in an arm of an
            # `if` that excludes the write never ran before it
            escape = facts.escape_of(load)
            if escape is not None:
                return Applicability.UNSAFE, (
                    f"`{name}` {escape} (line {load.lineno}), where the change would no longer be seen")
    return Applicability.SAFE, ""


#: fields of a model output that may hold the same tensor: ``last_hidden_state`` is usually the last
#: element of ``hidden_states`` (Hugging Face models append the final state to both)
_ALIASED_FIELDS = (frozenset({"last_hidden_state", "hidden_states", "encoder_last_hidden_state",
                              "encoder_hidden_states", "decoder_hidden_states"}),)


def _field_of(text: str) -> Optional[str]:
    """``logits`` for ``output.logits``, ``output["logits"]`` (and views of them); None for ``outputs[0]``."""
    head = text.split(".", 1)[0].split("[", 1)[0]
    rest = text[len(head):]
    if rest.startswith("."):
        name = rest[1:].split(".", 1)[0].split("[", 1)[0].split("(", 1)[0]
        return name if name.isidentifier() else None
    if rest[:2] in ('["', "['"):
        name = rest[2:].split(rest[1], 1)[0]
        return name if name.isidentifier() else None
    return None


def _field_group(name: str) -> FrozenSet[str]:
    for group in _ALIASED_FIELDS:
        if name in group:
            return group
    return frozenset({name})


def written_fields(origins: Sequence[Origin]) -> Dict[str, FrozenSet[str]]:
    """For each model output object the written tensor is a field of (``output`` of ``output.logits``),
    the fields it may be (with the fields that may share their tensor). An output object is a record:
    a different field holds a different tensor (issue 20, "a model output is an object with fields"),
    so reading ``output.hidden_states`` or storing ``output["entropy"]`` does not observe ``output.logits``.
    A base also reached as a whole (``outputs[0]``, the object itself) has no entry."""
    fields: Dict[str, Set[str]] = {}
    whole: Set[str] = set()
    for origin in origins:
        base = root_base_name(origin)
        if base is None:
            continue
        name = _field_of(origin.root_text) if origin.root is RootKind.MODEL_OUTPUT else None
        if name is None:
            whole.add(base)
        else:
            fields.setdefault(base, set()).update(_field_group(name))
    return {base: frozenset(names) for base, names in fields.items() if base not in whole}


def _other_field(facts: FunctionFacts, load: ast.Name, fields: FrozenSet[str]) -> bool:
    """``load`` reads or stores one named field of the object, not one of ``fields``: ``output.hidden_states``,
    ``output["entropy"] = e``. A method (``output.get("logits")``, ``output.to_tuple()``) may read any field."""
    parent = facts.parent(load)
    if isinstance(parent, ast.Attribute) and parent.value is load:
        grand = facts.parent(parent)
        if isinstance(grand, ast.Call) and grand.func is parent:
            return False
        return parent.attr not in fields
    if isinstance(parent, ast.Subscript) and parent.value is load and isinstance(parent.slice, ast.Constant) \
            and isinstance(parent.slice.value, str):
        return parent.slice.value not in fields
    return False


def _candidate_loads(facts: FunctionFacts, watched: Set[str], target_name: str, start: Tuple[int, int],
                     end: Tuple[int, int], loop_spans: Sequence[Tuple[int, int]],
                     exclusive: Sequence[Tuple[int, int]]) -> List[ast.Name]:
    """The loads of ``watched`` names that :func:`applicability` must judge, in source order: for each name,
    the first load of each kind that can make the fix unsafe (captured by a nested function; read after the
    write or in a loop around it; escaping before it or in such a loop). The first load that makes the fix
    unsafe is always among them, so the verdict (and its reason) is the one a scan of every load gives,
    at the cost of a few binary searches per watched name instead of the function's length."""
    inf = (float("inf"), 0)
    found: Dict[int, ast.Name] = {}

    def first(positions, nodes, lo, hi, skip_exclusive) -> None:
        i = bisect.bisect_left(positions, lo)
        while i < len(positions) and positions[i] < hi:
            pos = positions[i]
            if start <= pos < end:
                i = bisect.bisect_left(positions, end)
                continue
            span = next(((a, b) for a, b in exclusive if a <= pos[0] <= b), None) if skip_exclusive else None
            if span is not None:
                i = bisect.bisect_left(positions, (span[1] + 1, -1))
                continue
            found[id(nodes[i])] = nodes[i]
            return

    for name in watched:
        if name not in facts.by_name:
            continue
        first(*facts.captured_of(name), (-1, -1), inf, False)
        positions, nodes = facts.by_name[name]
        escaping = facts.escaping(name)
        if name != target_name:
            first(positions, nodes, end, inf, True)
        first(*escaping, (-1, -1), start, True)
        for lo, hi in loop_spans:
            if name != target_name:
                first(positions, nodes, (lo, -1), (hi + 1, -1), True)
            first(*escaping, (lo, -1), (hi + 1, -1), False)
    return sorted(found.values(), key=lambda n: (n.lineno, n.col_offset))


def _call_role(call: ast.Call, current: ast.AST) -> str:
    """What ``call`` does with ``current`` (its receiver, or an argument): "alias" (the result may share
    its storage), "fresh" (a new tensor or a number) or "escape" (the callee may keep a reference)."""
    if call.func is current:
        return "fresh" if isinstance(current, ast.Attribute) and current.attr in _FRESH_RESULTS else "alias"
    callee = _dotted(call.func) or ""
    name = _last_name(call.func) or ""
    if callee in _PURE_CALLEES:
        return "fresh"
    if callee in _RETURNS_ARGUMENT:
        return "alias"
    if callee.startswith(_TORCH_PREFIXES):
        return "fresh" if name in _FRESH_RESULTS else "alias"  # torch.as_tensor(x), torch.atleast_2d(x), ...
    if isinstance(call.func, ast.Attribute) and name in _FRESH_RESULTS:
        return "fresh"  # other.add(x), other.mul(x): tensor arithmetic
    return "escape"


def _climb(facts: FunctionFacts, node: ast.AST) -> Tuple[ast.AST, Optional[ast.Call]]:
    """Climb from a name through everything whose value may share its storage: attributes, items,
    calls that may return it. Returns the top and, if the climb stopped at a call that may keep
    a reference, that call."""
    current = node
    while True:
        parent = facts.parent(current)
        if isinstance(parent, ast.Subscript) and parent.value is current:
            current = parent
        elif isinstance(parent, ast.Attribute) and parent.value is current:
            if parent.attr in _NON_ALIAS_ATTRS:
                return current, None
            current = parent
        elif isinstance(parent, (ast.Call, ast.keyword)):
            call = parent if isinstance(parent, ast.Call) else facts.parent(parent)
            if not isinstance(call, ast.Call):
                return current, None
            role = _call_role(call, current)
            if role == "fresh":
                return current, None
            if role == "escape":
                return current, call
            current = call
        elif isinstance(parent, (ast.IfExp, ast.BoolOp, ast.Starred)) or \
                (isinstance(parent, ast.NamedExpr) and parent.value is current):
            current = parent
        else:
            return current, None


def _alias_chain_top(facts: FunctionFacts, node: ast.AST) -> ast.AST:
    return _climb(facts, node)[0]


def _alias_closure(facts: FunctionFacts, names: Set[str], before: Optional[Tuple[int, int]] = None,
                   exclusive: Sequence[Tuple[int, int]] = ()) -> Set[str]:
    """``names`` plus every name bound (anywhere in the function, or before ``before`` and outside the
    ``exclusive`` line spans) to an alias chain of one of them (:meth:`FunctionFacts.alias_edges`)."""
    edges = facts.alias_edges()
    watched = set(names)
    todo = list(watched)
    while todo:
        for pos, line, bound in edges.get(todo.pop(), ()):
            if before is not None and (pos >= before or any(lo <= line <= hi for lo, hi in exclusive)):
                continue
            for name in bound:
                if name not in watched:
                    watched.add(name)
                    todo.append(name)
    return watched


#: what autograd attaches to a tensor *object* (not its storage): a rewrite that rebinds the name to a
#: new tensor leaves it behind (the hook no longer fires, ``.grad`` stays on the old object)
TENSOR_OBJECT_STATE = frozenset({
    "register_hook", "register_post_accumulate_grad_hook", "retain_grad", "requires_grad_", "grad",
    "retains_grad", "_backward_hooks", "register_multi_grad_hook",
})


def _escape(facts: FunctionFacts, load: ast.Name) -> Optional[str]:
    """How the tensor named at ``load`` could be kept elsewhere, or None when it cannot."""
    attr = facts.parent(load)
    if isinstance(attr, ast.Attribute) and attr.value is load and attr.attr in TENSOR_OBJECT_STATE:
        # a hook or a retained grad belongs to this tensor object: the rebound name is another object
        return f"has `.{attr.attr}` on the tensor object"
    top, keeper = _climb(facts, load)
    if keeper is not None:
        return f"is passed to `{_dotted(keeper.func) or ast.unparse(keeper.func)}`, which may keep it"
    parent = facts.parent(top)
    if isinstance(getattr(top, "ctx", None), ast.Store):
        return None  # x[i] = v / x[i] += v: another write into the tensor, not a reference kept elsewhere
    if parent is None or isinstance(parent, (ast.Expr, ast.Compare, ast.BinOp, ast.UnaryOp, ast.Assert,
                                             ast.If, ast.While, ast.Return, ast.JoinedStr, ast.FormattedValue,
                                             ast.Call, ast.keyword, ast.Attribute)):
        return None  # discarded, compared, computed with, returned, or read through a fresh call/attribute
    if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and getattr(parent, "value", None) is top:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        if all(isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Starred, ast.Store))
               for t in targets for n in ast.walk(t)):
            return None  # bound to names: they are watched (alias closure)
        return "is stored in an attribute or item"
    if isinstance(parent, (ast.For, ast.AsyncFor)) and parent.iter is top:
        return None  # loop variables are watched (alias closure)
    if isinstance(parent, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
        return "is put in a container"
    if isinstance(parent, (ast.Yield, ast.YieldFrom)):
        return "is yielded"
    if isinstance(parent, (ast.AugAssign, ast.Subscript)):
        return "is stored in an attribute or item"
    return "is used in a way inplace-lint cannot follow"


def _exclusive_spans(facts: FunctionFacts, write: ast.AST) -> List[Tuple[int, int]]:
    """Line spans that cannot run after ``write``: the other arm of each ``if`` (other cases of each
    ``match``) around it, unless a loop around that ``if`` can come back to it."""
    path = facts.path_to(write)
    spans: List[Tuple[int, int]] = []
    for parent, child in zip(path, path[1:]):
        if isinstance(parent, _LOOPS):
            break  # from here inward, a later iteration can run the other arm after the write
        if isinstance(parent, ast.If):
            arms = [parent.body, parent.orelse]
        elif isinstance(parent, getattr(ast, "Match", ())):  # Python 3.10+
            arms = [case.body for case in parent.cases if case is not child]
        else:
            continue
        for arm in arms:
            if arm and child not in arm:
                spans.append((arm[0].lineno, arm[-1].end_lineno or arm[-1].lineno))
    return spans


# --------------------------------------------------------------------------- helpers


def _shares_a_line(stmt: ast.stmt, facts: FunctionFacts) -> bool:
    """Another statement sits on one of ``stmt``'s lines (``a = 1; x.div_(t)``): a rewrite replaces whole
    lines, so it would have to split them. A one-line suite (``if c: x.div_(t)``) is fine: it becomes a block.
    Siblings are in source order, so one that shares a line is a neighbour."""
    found = facts.siblings(stmt)
    if found is None:
        return False
    siblings, i = found
    return any(s.lineno <= (stmt.end_lineno or stmt.lineno) and (s.end_lineno or s.lineno) >= stmt.lineno
               for s in siblings[max(i - 1, 0):i] + siblings[i + 1:i + 2])


def _loop_variable(facts: FunctionFacts, node: ast.AST, name: str) -> bool:
    """``name`` is bound by a ``for`` loop (or comprehension) around ``node``: ``for t in x.unbind(0): t.sub_(m)``."""
    path = facts.path_to(node)
    for parent, child in zip(path, path[1:]):
        if isinstance(parent, (ast.For, ast.AsyncFor)) and child is not parent.iter:
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(parent.target)):
                return True
        if isinstance(parent, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            if any(isinstance(n, ast.Name) and n.id == name for g in parent.generators for n in ast.walk(g.target)):
                return True
    return False


def _reads_watched_outside(facts: FunctionFacts, stmt: ast.stmt, node: ast.AST, name: str,
                           origins: Sequence[Origin], aliases: Iterable[str]) -> bool:
    observers = set(aliases) | {name}
    observers |= {b for b in (root_base_name(o) for o in origins) if b is not None}
    watched = _alias_closure(facts, observers)
    inside = {id(n) for n in ast.walk(node)}
    return any(isinstance(n, ast.Name) and n.id in watched and id(n) not in inside for n in ast.walk(stmt))


def root_base_name(origin: Origin) -> Optional[str]:
    """``output`` for ``output.logits`` / ``output['logits']`` / ``outputs[0]``; None for temporaries."""
    text = origin.root_text
    if "(" in text:  # a call's result is a temporary nobody else holds
        return None
    head = text.split(".", 1)[0].split("[", 1)[0]
    return head if head.isidentifier() else None


def _count_name(stmt: ast.AST, name: str) -> int:
    return sum(1 for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id == name)


def _declarations(func: ast.AST) -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """Names declared ``global``/``nonlocal`` and names bound in ``func``'s own scope."""
    declared: Set[str] = set()
    assigned: Set[str] = set()
    stack: List[ast.AST] = list(getattr(func, "body", []))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            assigned.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            assigned.add(node.name)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return frozenset(declared), frozenset(assigned)


#: a call under one of these runs again with the same names (once per element, or each time it is called)
REPEATED = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda)


def kept_reason(origins: Iterable[Origin], kept: Dict[Tuple[str, int], str]) -> str:
    """Why one of ``origins`` (what an in-project call returned) is also held elsewhere, or ""."""
    if not kept:
        return ""
    for origin in origins:
        reason = kept.get((origin.root_text, origin.root_line))
        if reason:
            return reason
    return ""


def plan(facts: FunctionFacts, params: Sequence[str], kind: WriteKind, node: ast.AST, target: ast.expr,
         op_name: Optional[str], origins: Sequence[Origin], env_aliases: Dict[str, FrozenSet[Origin]],
         stmt: Optional[ast.stmt], loops: Sequence[ast.AST], callers_checked: bool = False,
         kept: Optional[Dict[Tuple[str, int], str]] = None, holders: Optional[Iterable[str]] = None) -> Optional[Fix]:
    """The fix for one finding, or None when it has no correct out-of-place form. ``kept``: roots of
    what in-project calls returned that is also held elsewhere (``FunctionSummary.kept``). ``holders``: the
    names of ``env_aliases`` that may hold one of ``origins``' roots (a superset; default: all of them)."""
    name = write_target_name(kind, target)
    if name is None:
        return None
    if name not in params and not facts.is_local(name):
        return None  # a closure, global or module-level name: rebinding it here would make it local
    if _loop_variable(facts, node, name):
        return None  # rebinding a loop variable is lost at the next iteration: the write would vanish
    fkind = fix_kind(kind, node, op_name, stmt, name, facts)
    if fkind is None:
        return None
    roots = {(o.root, o.root_text, o.root_line) for o in origins}
    candidates = env_aliases if holders is None else (k for k in holders if k in env_aliases)
    aliases = [k for k in candidates if "." not in k and "[" not in k and
               any((o.root, o.root_text, o.root_line) in roots for o in env_aliases[k])]
    applicable, reason = applicability(facts, params, name, origins, aliases, node, loops, callers_checked)
    held = kept_reason(origins, kept or {})
    if held:
        applicable, reason = Applicability.UNSAFE, f"`{name}` holds {held}"
    if fkind is FixKind.HOIST and _reads_watched_outside(facts, stmt, node, name, origins, aliases):
        return None  # another alias or the base is read in the same statement: moving the write reorders it
    if kind is WriteKind.SUBSCRIPT or (kind is WriteKind.METHOD and op_name not in ops.OUT_OF_PLACE_TWINS):
        message = f"clone `{name}` first, then write the copy"
    else:
        message = f"rebind `{name}` to the out-of-place result"
    scale = scaling(facts, kind, node, stmt, name) if fkind is FixKind.STATEMENT else None
    return Fix(applicable, fkind, message, reason, scaling=scale)


# --------------------------------------------------------------------------- the temperature idiom

#: shape ops that commute with an elementwise clamp (the temperature may be shaped before or after it)
_SHAPE_METHODS = frozenset({"unsqueeze", "view", "reshape"})


def scaling(facts: FunctionFacts, kind: WriteKind, node: ast.AST, stmt: Optional[ast.stmt],
            name: str) -> Optional[Scaling]:
    """The write as a ``scale_logits`` call, when that gives the same values, dtype and gradients
    (``inplace_lint.runtime.scale_logits``; verl PR 6935 and verl 0.9.1 ``_scale_logits_by_temperature``):

    - ``x.div_(T<shape ops>.clamp(min=EPS)<shape ops>.to(x.dtype))`` or ``x /= ...`` (the seed): the
      divisor is cast to ``x.dtype`` as ``scale_logits`` casts it, the clamp (``clamp(min=EPS)``,
      ``clamp(EPS)``, ``clamp_min(EPS)``, a number literal; optional) is elementwise and so commutes with
      ``unsqueeze``/``view``/``reshape`` (integer literal arguments), and ``broadcast="trailing"`` keeps
      the original's broadcast: ``scale_logits(x, T.unsqueeze(-1), eps=EPS, broadcast="trailing")``;
    - ``x.div_(v)`` / ``x /= v`` where ``v`` is a Python number: a positive number literal, or a name
      that only ever holds one (a parameter annotated ``float``/``int`` or a local bound only to number
      literals and ``float(...)``/``int(...)``), passed with ``eps=None`` (no clamp) unless a literal is
      above the default bound.

    Multiplication is never one: ``x * (1 / T)`` rounds differently from ``x / T``. None otherwise."""
    if kind is WriteKind.METHOD:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "div_"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == name
                and len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred)):
            return None
        operand = node.args[0]
    elif kind is WriteKind.AUGMENTED:
        if not (isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Div) and isinstance(node.target, ast.Name)):
            return None
        operand = node.value
    else:
        return None
    number = _number(facts, operand)
    if number is not None:
        return number
    # `.to(x.dtype)` last: the divisor has the target's dtype, as scale_logits casts it
    if not (_method_call(operand, "to") and len(operand.args) == 1 and not operand.keywords):
        return None
    dtype = operand.args[0]
    if not (isinstance(dtype, ast.Attribute) and dtype.attr == "dtype" and isinstance(dtype.value, ast.Name)
            and dtype.value.id == name):
        return None
    chain: List[ast.Call] = []
    base: ast.expr = operand.func.value
    while isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) and \
            base.func.attr in _SHAPE_METHODS | {"clamp", "clamp_min"}:
        chain.append(base)
        base = base.func.value
    chain.reverse()
    clamps = [c for c in chain if c.func.attr in ("clamp", "clamp_min")]
    if len(clamps) > 1 or _count_name(base, name):
        return None  # the temperature must not read the target (it would be read before the rewrite binds it)
    eps: Union[str, Tuple[int, int, int, int]] = "None"
    if clamps:
        eps_node = _clamp_bound(clamps[0])
        if eps_node is None:
            return None
        eps = _span(eps_node)
    spans = [_span(base)]
    for call in chain:
        if call in clamps:
            continue
        if call.keywords or not all(_int_literal(a) for a in call.args):
            return None
        receiver = call.func.value  # `.unsqueeze(-1)`: from the end of the receiver to the end of the call
        spans.append((receiver.end_lineno, receiver.end_col_offset, call.end_lineno, call.end_col_offset))
    return Scaling(tuple(spans), eps, True)


def _span(node: ast.AST) -> Tuple[int, int, int, int]:
    return node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0


def _method_call(node: ast.AST, method: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method


def _int_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def _number_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _clamp_bound(call: ast.Call) -> Optional[ast.expr]:
    """The lower bound of ``clamp(min=EPS)`` / ``clamp(EPS)`` / ``clamp_min(EPS)`` when it is a number literal
    and nothing else is clamped (no ``max``)."""
    if call.func.attr == "clamp_min":
        bound = call.args[0] if len(call.args) == 1 and not call.keywords else None
    elif len(call.args) == 1 and not call.keywords:
        bound = call.args[0]
    elif not call.args and len(call.keywords) == 1 and call.keywords[0].arg == "min":
        bound = call.keywords[0].value
    else:
        bound = None
    return bound if bound is not None and _number_literal(bound) else None


def _number(facts: FunctionFacts, operand: ast.expr) -> Optional[Scaling]:
    """``operand`` as the temperature of a ``scale_logits`` call when it is surely a Python number."""
    if _number_literal(operand):
        if not operand.value > 0:
            return None
        return Scaling((_span(operand),), "" if operand.value >= 1e-8 else "None", False)
    if not isinstance(operand, ast.Name):
        return None
    name = operand.id
    if name in facts.declared:
        return None
    args = getattr(facts.func, "args", None)
    params = [a for a in (args.posonlyargs + args.args + args.kwonlyargs if args else []) if a.arg == name]
    bindings = [s for s in facts.assigns if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
                                                for t in _targets(s) for n in ast.walk(t))]
    if any(isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == name
           for n in ast.walk(facts.func)):
        return None
    if params:
        annotation = params[0].annotation
        if not (isinstance(annotation, ast.Name) and annotation.id in ("float", "int")) or bindings:
            return None
        return Scaling((_span(operand),), "None", False)
    if not bindings or not all(isinstance(s, (ast.Assign, ast.AnnAssign)) and len(_targets(s)) == 1
                               and isinstance(_targets(s)[0], ast.Name) and _is_number_value(s.value)
                               for s in bindings):
        return None
    return Scaling((_span(operand),), "None", False)


def _targets(stmt: ast.AST) -> List[ast.expr]:
    if isinstance(stmt, ast.Assign):
        return list(stmt.targets)
    target = getattr(stmt, "target", None)
    return [target] if target is not None else []


def _is_number_value(value: Optional[ast.expr]) -> bool:
    if value is None:
        return False
    if _number_literal(value):
        return True
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("float", "int") \
        and len(value.args) == 1 and not value.keywords



def call_remedy(facts: FunctionFacts, params: Sequence[str], arg: ast.expr, call: ast.Call,
                origins: Sequence[Origin], env_aliases: Dict[str, FrozenSet[Origin]], loops: Sequence[ast.AST],
                twin: Optional[str], kept: bool = False) -> str:
    """What a caller can do about a helper's in-place write through the argument ``arg`` of ``call``
    (the helper's own fix is planned at its write): call the helper's out-of-place ``twin`` (a function
    of the same module or class, named without the trailing ``_``, with the same parameters, that writes
    none of them) and use what it returns, or give the helper a copy. Cloning a name first
    (``x = x.clone()``, then the call) keeps every later read of ``x`` seeing the helper's change; what
    stops seeing it (the view's base, another alias) is decided as for a rewrite at a write
    (:func:`applicability`), and said; a temporary passed to a helper that drops it (``kept`` False) shows
    the change only through its base, which a clone hides. No edit is made: the text is part of the finding's message."""
    options = []
    if twin is not None:
        options.append(f"call `{twin}()`, its out-of-place twin, and use what it returns")
    name = arg.id if isinstance(arg, ast.Name) else None
    if name is not None and (name in params or facts.is_local(name)) and not _loop_variable(facts, call, name):
        roots = {(o.root, o.root_text, o.root_line) for o in origins}
        aliases = [k for k, held in env_aliases.items()
                   if "." not in k and "[" not in k and any((o.root, o.root_text, o.root_line) in roots for o in held)]
        applicable, reason = applicability(facts, params, name, origins, aliases, call, loops)
        clone = f"clone `{name}` before the call (`{name} = {name}.clone()`)"
        if applicable is not Applicability.SAFE:
            clone += f", though {reason}"
        options.append(clone)
    elif not isinstance(arg, ast.Starred):
        text = short(arg)
        clone = f"pass `{text}.clone()`" if len(text) <= 40 else "pass a clone"
        base = arg
        while isinstance(base, (ast.Attribute, ast.Subscript, ast.Call)):
            base = base.func if isinstance(base, ast.Call) else base.value
        if not kept and isinstance(base, ast.Name) and base.id != "self" \
                and (base.id in params or facts.is_local(base.id)):
            # a temporary written by a helper that drops it: only its base shows the change, and a clone
            # hides it from every later read of the base
            end = (getattr(call, "end_lineno", call.lineno), getattr(call, "end_col_offset", 0))
            spans = [(loop.lineno, loop.end_lineno or loop.lineno) for loop in loops]
            later = [load.lineno for load in facts.loads if load.id == base.id and (
                (load.lineno, load.col_offset) >= end or any(lo <= load.lineno <= hi for lo, hi in spans))]
            if base.id in params:
                clone += f", though `{base.id}` is a parameter: the caller would no longer see the change"
            elif later:
                clone += f", though `{base.id}` is read after the call (line {min(later)}) and would no longer " \
                         "see the change"
        options.append(clone)
    return " or ".join(options)



# --------------------------------------------------------------------------- results kept elsewhere

#: decorators that neither keep what the function returns nor call it from elsewhere
_TRANSPARENT_DECORATORS = frozenset({
    "staticmethod", "classmethod", "abstractmethod", "override", "final", "overload", "wraps", "no_type_check",
    "no_grad", "inference_mode", "enable_grad", "set_grad_enabled", "compile", "script", "script_method",
    "ignore", "unused", "export", "disable", "custom_fwd", "custom_bwd", "autocast", "once_differentiable",
    "setter", "getter", "deleter", "property", "contextmanager", "asynccontextmanager", "jit", "njit",
    "deprecated", "torch_function",
})
#: decorators that keep each result and hand the same object to later calls (functools)
_CACHING_DECORATORS = frozenset({"lru_cache", "cache", "cached", "memoize", "memoized", "cached_method",
                                 "lru_cache_with_ttl", "cached_property"})


def decorator_effects(func: ast.AST) -> Tuple[str, str]:
    """(why the result is kept, which decorator may call the function from elsewhere) for ``func``'s
    decorators: ``@functools.lru_cache`` keeps each result and returns the same tensor to the next call
    with equal arguments (functools docs); a decorator not known to pass calls through replaces the
    function (a wrapper that may store results, a registry that calls it by name)."""
    kept = decorated = ""
    for dec in getattr(func, "decorator_list", ()):
        head = dec.func if isinstance(dec, ast.Call) else dec
        name = _last_name(head) or ""
        text = _dotted(head) or ast.unparse(head)
        if name in _TRANSPARENT_DECORATORS:
            continue
        if name in _CACHING_DECORATORS:
            kept = kept or f"`@{text}` keeps each result and returns the same tensor to later calls"
            continue
        kept = kept or f"`@{text}` replaces the function and may keep what it returns"
        decorated = decorated or f"@{text}"
    return kept, decorated


def _describe_keeper(facts: FunctionFacts, load: ast.Name) -> Optional[str]:
    """Where the object named at ``load`` is also put: ``self.last``, ``_LOG.append``, ... or None."""
    if facts.captured(load):
        return f"`{load.id}` is used by a nested function or generator (line {load.lineno})"
    top, keeper = _climb(facts, load)
    if keeper is not None:
        return f"`{load.id}` is passed to `{_dotted(keeper.func) or ast.unparse(keeper.func)}` (line {load.lineno})"
    parent = facts.parent(top)
    if isinstance(parent, (ast.Assign, ast.AnnAssign)) and getattr(parent, "value", None) is top:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        stored = [t for t in targets if not isinstance(t, ast.Name)]
        if stored:
            return f"`{load.id}` is also stored in `{ast.unparse(stored[0])}` (line {load.lineno})"
        return None
    escape = _escape(facts, load)
    return None if escape is None else f"`{load.id}` {escape} (line {load.lineno})"


def returned_elsewhere(facts: FunctionFacts, bases: Iterable[str] = ()) -> str:
    """Why what the function returns may also be reachable after it returns (it was stored in an
    attribute, a container, a global, passed to a call that may keep it, captured), or "".
    ``bases``: the objects the returned tensors are fields of (``out`` of a returned ``out.logits``)."""
    names: Set[str] = set(bases)
    for ret in facts.returns:
        value = ret.value
        tops = {id(value)}
        if isinstance(value, (ast.Tuple, ast.List)):
            tops |= {id(e) for e in value.elts}
        for n in ast.walk(value):
            if isinstance(n, ast.Name) and id(_alias_chain_top(facts, n)) in tops:
                names.add(n.id)
    for ret in facts.returns:
        top = ret.value
        while isinstance(top, (ast.Attribute, ast.Subscript)) and not (
                isinstance(top, ast.Attribute) and top.attr in _NON_ALIAS_ATTRS):
            top = top.value
        if top is not ret.value and isinstance(top, ast.Name) and (
                top.id in ("self", "cls") or not (facts.is_param(top.id) or facts.is_local(top.id))):
            # `return self._cur`, `return CACHE[k]`: the object stays where it was read from (an attribute of
            # another parameter is the caller's own object, judged at the caller)
            return f"it is `{ast.unparse(ret.value)}` (line {ret.lineno})"
    if not names:
        return ""
    if any(facts.is_param(n) or not facts.is_local(n) for n in names):
        return ""  # a parameter or a global: the caller's own reference (judged at the caller)
    watched = _alias_closure(facts, names)
    inside = {id(n) for ret in facts.returns for n in ast.walk(ret)}
    for load in facts.loads:
        if load.id not in watched or id(load) in inside:
            continue
        keeper = _describe_keeper(facts, load)
        if keeper is not None:
            return keeper
    return ""


#: the deepest simple statement (in ``ast`` levels, the statement itself being 1) whose fix is written.
#: The rewriter (libcst) walks a statement recursively: parsing, visiting and printing it took up to
#: about 10 Python frames per ``ast`` level (nested subscripts, ``a[a[a[...]]]``, the worst shape measured;
#: nested calls about 7), so with Python's default recursion limit of 1000 it failed from about 100
#: levels (140 nested calls: ``RecursionError``). 64 leaves room for the caller's own frames (a language
#: server, a test runner: a statement at the limit is still fixed from 300 frames down). Real code stays
#: below it: of 1.79M simple statements (Python 3.11's standard library, torch, sympy and the other installed
#: packages, verl 0.8.0), 31 are deeper, all generated tables (sympy, pip's idna data, pygls' types).
MAX_REWRITE_DEPTH = 64


def withdraw_unwritable(tree: ast.Module, findings: Sequence[Finding]) -> List[Finding]:
    """``findings`` with the fix withdrawn (``fix`` None, ``no_fix`` saying why) where the simple statement
    holding the write is nested deeper than :data:`MAX_REWRITE_DEPTH`.

    The one place that decides whether the rewriter can write a planned fix: the pipeline calls it on
    every file's findings before any surface sees them, so ``check``'s ``[fix: ...]`` note, JSON, SARIF,
    ``fix`` and the language server's quick fixes agree (a fix is advertised exactly when it is applied).
    ``tree`` is ``ast.parse`` of the findings' file. Iterative (no recursion, whatever the nesting)."""
    planned = sorted({(f.line, f.col) for f in findings if f.fix is not None})
    if not planned:
        return list(findings)
    deep: Set[Tuple[int, int]] = set()
    stack: List[List[ast.stmt]] = [tree.body]
    while stack:
        for stmt in stack.pop():
            end = (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0)
            lo = bisect.bisect_left(planned, (stmt.lineno, stmt.col_offset))
            hi = bisect.bisect_right(planned, end)
            if lo == hi:
                continue
            blocks = [getattr(stmt, name, None) for name in ("body", "orelse", "finalbody")]
            blocks += [h.body for h in getattr(stmt, "handlers", None) or []]
            blocks += [c.body for c in getattr(stmt, "cases", None) or []]
            blocks = [b for b in blocks if isinstance(b, list) and b and isinstance(b[0], ast.stmt)]
            if blocks:  # a compound statement: its writes are in its blocks (a write in a header has no fix)
                stack.extend(blocks)
            elif _deeper_than(stmt, MAX_REWRITE_DEPTH):
                deep.update(planned[lo:hi])
    if not deep:
        return list(findings)
    reason = f"the statement is nested more than {MAX_REWRITE_DEPTH} levels deep, too deep for the rewriter (libcst)"
    return [dataclasses.replace(f, fix=None, no_fix=reason) if f.fix is not None and (f.line, f.col) in deep else f
            for f in findings]


def _deeper_than(node: ast.AST, limit: int) -> bool:
    """Whether ``node``'s subtree has more than ``limit`` levels (``node`` alone: 1)."""
    stack = [(node, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return False
