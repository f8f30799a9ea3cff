"""Function facts for fix planning: one pass over a function body (parents, loads, bindings, returns), and
the alias and escape rules built on it (what else may hold a tensor, and where it may be kept)."""
from __future__ import annotations

import ast
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from ...findings import Origin
from ...torch_facts import ops
from ..astutil import dotted_name as dotted, walk_ast
from ..astutil import inplace_flag_arg, last_name

#: a write under one of these is evaluated lazily, conditionally or out of order: never hoisted
NO_HOIST_PARENTS = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.BoolOp,
                     ast.IfExp, ast.Await, ast.NamedExpr, ast.Compare, ast.Dict)

HOIST_STATEMENTS = (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)

SIDE_EFFECTS = (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)

LOOPS = (ast.For, ast.AsyncFor, ast.While)

_CAPTURES = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.GeneratorExp, ast.ClassDef)

_PURE_CALLEES = frozenset({"len", "isinstance", "print", "str", "repr", "id", "type", "hasattr", "float",
                           "int", "bool", "format", "callable", "sum", "abs", "round", "any", "all"})

_RETURNS_ARGUMENT = frozenset({"max", "min"})

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

NON_ALIAS_ATTRS = frozenset({"shape", "dtype", "device", "ndim", "requires_grad", "grad_fn", "is_leaf", "layout",
                              "names", "grad", "is_cuda", "itemsize", "nbytes"})


class FunctionFacts:
    """What safety needs to know about one function body, computed once on its first finding."""

    def __init__(self, func: ast.AST) -> None:
        self.func = func
        self.parents: Dict[int, ast.AST] = {}
        self.loads: List[ast.Name] = []
        self.assigns: List[ast.stmt] = []
        #: positions of the values bound to plain names that the walk gave no tensor (set by the walk,
        #: :attr:`.dataflow.Scope.untracked_values`; read by :mod:`.sources`)
        self.untracked: Set[Tuple[int, int]] = set()
        self.tracked: Set[Tuple[int, int]] = set()
        self.unresolved: Set[Tuple[int, int]] = set()
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
        self._declarations: Optional[Tuple[FrozenSet[str], FrozenSet[str]]] = None
        # memos: a function with many findings must not cost findings x loads x depth (nor findings x
        # statements: each finding looks only at the names it watches, found through these indexes)
        self.escapes: Dict[int, Optional[str]] = {}
        self.closures: Dict[FrozenSet[str], Set[str]] = {}
        self._escaping: Dict[str, Tuple[List[Tuple[int, int]], List[ast.Name]]] = {}
        self._captured: Dict[str, Tuple[List[Tuple[int, int]], List[ast.Name]]] = {}
        self._alias_edges: Optional[Dict[str, List[Tuple[Tuple[int, int], int, FrozenSet[str]]]]] = None
        self._siblings: Optional[Dict[int, Tuple[List[ast.stmt], int]]] = None
        self._attr_stores: Optional[Dict[str, List[ast.Name]]] = None

    @property
    def declared(self) -> FrozenSet[str]:
        """Names declared ``global``/``nonlocal`` here (:func:`declarations`, on first use)."""
        if self._declarations is None:
            self._declarations = declarations(self.func)
        return self._declarations[0]

    @property
    def assigned(self) -> FrozenSet[str]:
        """Names bound in the function's own scope (:func:`declarations`, on first use)."""
        if self._declarations is None:
            self._declarations = declarations(self.func)
        return self._declarations[1]

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
                elif isinstance(parent, ast.Attribute) and parent.value is load and parent.attr == "__dict__" and (
                        isinstance(self.parents.get(id(parent)), ast.Subscript)
                        and isinstance(self.parents[id(parent)].ctx, (ast.Store, ast.Del))
                        or isinstance(self.parents.get(id(parent)), ast.Attribute)):
                    stores.setdefault(load.id, []).append(load)  # `x.__dict__["tag"] = v`, `x.__dict__.update(...)`
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
            self.escapes[id(load)] = escape(self, load)
        return self.escapes[id(load)]

    def escaping(self, name: str) -> Tuple[List[Tuple[int, int]], List[ast.Name]]:
        """The loads of ``name`` through which the tensor may be kept elsewhere (:func:`escape`)."""
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
                bound = frozenset(n.id for t in targets for n in walk_ast(t) if isinstance(n, ast.Name))
                sources = {n.id for n in walk_ast(value)
                           if isinstance(n, ast.Name) and alias_chain_top(self, n) in (value, stmt)}
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


def _call_role(call: ast.Call, current: ast.AST, facts: Optional["FunctionFacts"] = None) -> str:
    """What ``call`` does with ``current`` (its receiver, or an argument): "alias" (the result may share
    its storage), "fresh" (a new tensor or a number) or "escape" (the callee may keep a reference). A method
    named like tensor arithmetic on another receiver (``other.add(x)``) is arithmetic only where that receiver
    is surely a tensor (:func:`_surely_tensor`): ``seen.add(x)`` on a set, ``buffer.add(x)`` keep ``x``."""
    if call.func is current:
        return "fresh" if isinstance(current, ast.Attribute) and current.attr in _FRESH_RESULTS else "alias"
    callee = dotted(call.func) or ""
    name = last_name(call.func) or ""
    if callee == "sum" and (len(call.args) > 1 and current is call.args[1]
                            or any(k.arg == "start" and k.value is current for k in call.keywords)):
        return "alias"  # `sum(extra, logits)` with `extra` empty returns `logits` itself
    if callee in _PURE_CALLEES:
        return "fresh"
    if callee in _RETURNS_ARGUMENT:
        return "alias"
    if callee.startswith(_TORCH_PREFIXES):
        flag = inplace_flag_arg(call, name)
        if any(k.arg is None or k.arg == "out" and k.value is current for k in call.keywords) \
                or any(isinstance(a, ast.Starred) for a in call.args):
            return "alias"  # `F.relu(x, **kw)`, `F.relu(*args)`: `inplace=True` or `out=x` may be among them
        if name.endswith("_") or (flag is not None and not (isinstance(flag, ast.Constant) and flag.value is False)):
            # torch.sigmoid_(h), F.relu(h, inplace=True), F.relu(h, self.inplace): the result is (or may be) `h`
            return "alias"
        return "fresh" if name in _FRESH_RESULTS else "alias"  # torch.as_tensor(x), torch.atleast_2d(x), ...
    if isinstance(call.func, ast.Attribute) and name in _FRESH_RESULTS \
            and _surely_tensor(call.func.value, facts, 0):
        return "fresh"  # other.add(x), other.mul(x) on a tensor: tensor arithmetic
    return "escape"


def _surely_tensor(node: ast.AST, facts: Optional["FunctionFacts"], depth: int) -> bool:
    """``node`` is a tensor by its syntax: a ``torch.*`` call's result, a tensor method's result on one
    (``torch.ones(3).add(x)``), arithmetic with one, an item of one, or a name every binding of which in the
    function is one of those. Parameters, attributes and other calls are not known."""
    if depth > 4:
        return False
    if isinstance(node, ast.Call):
        callee = dotted(node.func) or ""
        if callee.startswith(_TORCH_PREFIXES):
            return True
        return isinstance(node.func, ast.Attribute) and node.func.attr in _FRESH_RESULTS \
            and _surely_tensor(node.func.value, facts, depth + 1)
    if isinstance(node, ast.BinOp):
        return _surely_tensor(node.left, facts, depth + 1) or _surely_tensor(node.right, facts, depth + 1)
    if isinstance(node, ast.Subscript):
        return _surely_tensor(node.value, facts, depth + 1)
    if isinstance(node, ast.Name) and facts is not None and node.id in facts.assigned \
            and node.id not in facts.declared:
        values = []
        for stmt in facts.assigns:
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in stmt.targets):
                values.append(stmt.value)
            elif isinstance(stmt, (ast.AnnAssign, ast.NamedExpr)) and isinstance(stmt.target, ast.Name) \
                    and stmt.target.id == node.id:
                values.append(stmt.value)
            elif any(isinstance(t, ast.Name) and t.id == node.id for t in _bound_names(stmt)):
                return False  # a loop variable, a tuple target: not known
        return bool(values) and all(v is not None and _surely_tensor(v, facts, depth + 1) for v in values)
    return False


def _bound_names(stmt: ast.stmt) -> List[ast.Name]:
    """The names a ``for`` binds, or those inside an assignment's tuple targets."""
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [n for n in walk_ast(stmt.target) if isinstance(n, ast.Name)]
    return [n for t in getattr(stmt, "targets", []) if not isinstance(t, ast.Name)
            for n in walk_ast(t) if isinstance(n, ast.Name)]

def climb(facts: FunctionFacts, node: ast.AST) -> Tuple[ast.AST, Optional[ast.Call]]:
    """Climb from a name through everything whose value may share its storage: attributes, items,
    calls that may return it. Returns the top and, if the climb stopped at a call that may keep
    a reference, that call."""
    current = node
    while True:
        parent = facts.parent(current)
        if isinstance(parent, ast.Subscript) and parent.value is current:
            current = parent
        elif isinstance(parent, ast.Attribute) and parent.value is current:
            if parent.attr in NON_ALIAS_ATTRS:
                return current, None
            current = parent
        elif isinstance(parent, (ast.Call, ast.keyword)):
            call = parent if isinstance(parent, ast.Call) else facts.parent(parent)
            if not isinstance(call, ast.Call):
                return current, None
            role = _call_role(call, current, facts)
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

def alias_chain_top(facts: FunctionFacts, node: ast.AST) -> ast.AST:
    return climb(facts, node)[0]

def alias_closure(facts: FunctionFacts, names: Set[str], before: Optional[Tuple[int, int]] = None,
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

def escape(facts: FunctionFacts, load: ast.Name) -> Optional[str]:
    """How the tensor named at ``load`` could be kept elsewhere, or None when it cannot."""
    attr = facts.parent(load)
    if isinstance(attr, ast.Attribute) and attr.value is load and attr.attr in TENSOR_OBJECT_STATE:
        # a hook or a retained grad belongs to this tensor object: the rebound name is another object
        return f"has `.{attr.attr}` on the tensor object"
    call = facts.parent(load)
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "id" and call.args \
            and call.args[0] is load:
        # `memo[id(y)] = ...`: state keyed on the tensor object, which the rebound name is not
        return "has its identity read by `id(...)`"
    top, keeper = climb(facts, load)
    if keeper is not None:
        return f"is passed to `{dotted(keeper.func) or ast.unparse(keeper.func)}`, which may keep it"
    parent = facts.parent(top)
    while isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.UAdd):
        top, parent = parent, facts.parent(parent)  # `+x` is `x` itself (`Tensor.__pos__`): `self.k = +x` keeps it
    if isinstance(getattr(top, "ctx", None), ast.Store):
        return None  # x[i] = v / x[i] += v: another write into the tensor, not a reference kept elsewhere
    if isinstance(parent, ast.BinOp) and _container(parent.right if parent.left is top else parent.left):
        # `outs + (t,)`, `out | {"t": t}`: a new tuple or dict holding the same objects
        return f"is copied into a new container by `{ast.unparse(parent)}`"
    if parent is None or isinstance(parent, (ast.Expr, ast.Compare, ast.BinOp, ast.UnaryOp, ast.Assert,
                                             ast.If, ast.While, ast.Return, ast.JoinedStr, ast.FormattedValue,
                                             ast.Call, ast.keyword, ast.Attribute)):
        return None  # discarded, compared, computed with, returned, or read through a fresh call/attribute
    if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and getattr(parent, "value", None) is top:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        if all(isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Starred, ast.Store))
               for t in targets for n in walk_ast(t)):
            return None  # bound to names: they are watched (alias closure)
        return "is stored in an attribute or item"
    if isinstance(parent, (ast.For, ast.AsyncFor)) and parent.iter is top:
        if any(not isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Starred)) for n in walk_ast(parent.target)
               if not isinstance(n, (ast.expr_context,))):
            return "has its items stored in an attribute or item by the loop's target"  # `for self.last in x:`
        return None  # loop variables are watched (alias closure)
    if isinstance(parent, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
        return "is put in a container"
    if isinstance(parent, (ast.Yield, ast.YieldFrom)):
        return "is yielded"
    if isinstance(parent, (ast.AugAssign, ast.Subscript)):
        return "is stored in an attribute or item"
    return "is used in a way inplace-lint cannot follow"

def _container(node: ast.AST) -> bool:
    """A tuple, list, dict or set display or comprehension, or a call of their constructors."""
    return isinstance(node, (ast.Tuple, ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)) or (
        isinstance(node, ast.Call) and dotted(node.func) in ("tuple", "list", "dict", "set"))

def exclusive_spans(facts: FunctionFacts, write: ast.AST) -> List[Tuple[int, int]]:
    """Line spans that cannot run after ``write``: the other arm of each ``if`` (other cases of each
    ``match``) around it, unless a loop around that ``if`` can come back to it."""
    path = facts.path_to(write)
    spans: List[Tuple[int, int]] = []
    for parent, child in zip(path, path[1:]):
        if isinstance(parent, LOOPS):
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

def loop_variable(facts: FunctionFacts, node: ast.AST, name: str) -> bool:
    """``name`` is bound by a ``for`` loop (or comprehension) around ``node``: ``for t in x.unbind(0): t.sub_(m)``."""
    path = facts.path_to(node)
    for parent, child in zip(path, path[1:]):
        if isinstance(parent, (ast.For, ast.AsyncFor)) and child is not parent.iter:
            if any(isinstance(n, ast.Name) and n.id == name for n in walk_ast(parent.target)):
                return True
        if isinstance(parent, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            if any(isinstance(n, ast.Name) and n.id == name for g in parent.generators for n in walk_ast(g.target)):
                return True
    return False

def root_base_name(origin: Origin) -> Optional[str]:
    """``output`` for ``output.logits`` / ``output['logits']`` / ``outputs[0]``; None for temporaries."""
    text = origin.root_text
    if "(" in text:  # a call's result is a temporary nobody else holds
        return None
    head = text.split(".", 1)[0].split("[", 1)[0]
    return head if head.isidentifier() else None

def count_name(stmt: ast.AST, name: str) -> int:
    return sum(1 for n in walk_ast(stmt) if isinstance(n, ast.Name) and n.id == name)

def declarations(func: ast.AST) -> Tuple[FrozenSet[str], FrozenSet[str]]:
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


def module_names(tree: ast.Module) -> Set[str]:
    """Names bound by imports anywhere in the module (``torch``, ``F``, ``math``), at the top level: never tensors."""
    out: Set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            out.update((a.asname or a.name.split(".")[0]) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.update((a.asname or a.name) for a in node.names if a.name[:1].islower() or a.name in ("F",))
    return out
