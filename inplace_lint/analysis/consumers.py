"""Whether what reads a saved output ever takes a gradient through it.

A write to a tensor an op saved for backward fails only when a backward reaches that op. When every read of
the tensor ends in something without a gradient (``torch.multinomial``, ``argmax``, a comparison, ``.item()``,
``len``, ``.detach()``, its ``.device`` or ``.shape``, numpy), no backward does, and the write is legal
(docs/pytorch-facts.md#saved-output). A read is followed through out-of-place torch ops, indexing and
arithmetic, and through a plain name the result is bound to (``probs = probs ** (1 / t)`` then
``torch.multinomial(probs, 1)``), or each name a tuple of results is unpacked to (``values, indices =
torch.topk(scores, k)``, then ``values[i].item()``); a read in the other arm of an ``if`` whose arm holds the write (with no
loop around it) cannot run on the same pass. Anything else (a return, a call of other code, a container,
an attribute) may reach a loss, and is a reader with a gradient.
"""
from __future__ import annotations

import ast
from typing import Callable, Dict, Iterable, Optional, Set, Tuple

from .astutil import dotted_name

#: ops and methods whose result has no gradient (it is an index, a sample, a bool or an integer tensor, a
#: number, or a copy out of autograd)
GRADLESS_CONSUMERS = frozenset({
    "multinomial", "argmax", "argmin", "argsort", "item", "tolist", "nonzero", "searchsorted", "bucketize",
    "isnan", "isinf", "isfinite", "long", "int", "short", "byte", "char", "bool", "eq", "ne", "lt", "le", "gt", "ge",
    "any", "all",
    "count_nonzero", "numpy", "detach", "tobytes", "is_floating_point", "is_complex", "equal", "allclose", "isclose",
})
#: builtins that make a Python number, string or count of a tensor (``float(t)``; not the ``t.float()`` method,
#: which keeps the gradient)
_GRADLESS_BUILTINS = frozenset({"len", "float", "int", "bool", "str", "repr", "print"})
#: builtins whose result is one of their tensor arguments, or computed from them with a gradient
_FLOWS_ON_BUILTINS = frozenset({"max", "min", "abs", "sum"})
#: methods that take a gradient through the tensor, or keep it for one
_GRADIENT_METHODS = frozenset({"backward", "register_hook", "retain_grad"})
#: namespaces whose functions are out-of-place tensor ops (``torch.autograd.grad`` and ``torch.func`` are not)
_OP_NAMESPACES = frozenset({"torch", "F", "torch.nn.functional", "nn.functional", "torch.linalg", "torch.special",
                            "torch.fft"})
#: a tensor's metadata, read without its values
_METADATA = frozenset({"device", "dtype", "shape", "ndim", "is_cuda", "requires_grad", "grad_fn", "layout",
                       "is_sparse"})
#: tensor methods that read its size or layout, not its values
SIZE_METHODS = frozenset({"size", "dim", "numel", "nelement", "element_size", "stride", "is_contiguous",
                          "get_device"})
_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.comprehension)
#: builtins that read every local name
_READ_EVERY_NAME = ("locals", "vars", "eval", "exec")
_MAX_DEPTH = 16
#: the name :func:`flows_into` gives a value that a ``return`` hands back (with ``returned``)
RETURNED = "<return>"
#: ``callee(call, argument)``: what an in-project call does with an argument (:meth:`.grad_reads.GradReadsMixin.
#: callee_reads`): "gradless" (no read takes a gradient), "returned" (and it may reach the call's result), or None
Callee = Callable[[ast.Call, ast.AST], Optional[str]]


def _an_index(node: ast.AST, parent: Optional[ast.AST], parents: Dict[int, ast.AST]) -> bool:
    """``node`` is (a part of) the index of a subscript: ``i`` in ``x[i]``, ``x[:, i]``, ``x[a:i]``."""
    if isinstance(parent, (ast.Tuple, ast.Slice)):
        node, parent = parent, parents.get(id(parent))
        if isinstance(parent, ast.Tuple):
            node, parent = parent, parents.get(id(parent))
    return isinstance(parent, ast.Subscript) and parent.slice is node


def flows_into(load: ast.AST, parents: Dict[int, ast.AST], callee: Optional[Callee] = None,
               returned: bool = False, own_storage: Optional[Callable[[str], bool]] = None) -> Optional[Set[str]]:
    """Where the value ``load`` reads goes: None when something may take a gradient through it; else the plain
    names it is bound to (empty: it ends without a gradient, or is only written). ``callee`` judges an argument
    of a call of the project's own code; with ``returned``, a ``return`` gives :data:`RETURNED` (the callers
    follow the call's result). ``own_storage(name)``: the local ``name`` holds a tensor with storage of its own
    (``buf = torch.full(...)``), so a value stored into its items (``buf[a:b] = value``) is read only through
    ``name``, which is then followed."""
    node = load
    for _ in range(_MAX_DEPTH):
        parent = parents.get(id(node))
        if isinstance(parent, ast.Compare):
            return set()
        if isinstance(parent, ast.Attribute) and parent.value is node:
            if parent.attr in _METADATA or parent.attr in ("indices", "data"):
                # `torch.topk(h, k).indices`: integers; `h.data`: the values out of autograd
                return set()
            call = parents.get(id(parent))
            if not (isinstance(call, ast.Call) and call.func is parent):
                return None
            if parent.attr in _GRADIENT_METHODS:
                return None
            if parent.attr in GRADLESS_CONSUMERS or parent.attr in SIZE_METHODS:
                return set()
            node = call  # a method's result flows on (`p.sum(-1).argmax()`)
            continue
        if isinstance(parent, ast.Call) and (any(a is node for a in parent.args)
                                             or any(k.value is node for k in parent.keywords)):
            name = dotted_name(parent.func) or ""
            head, _, last = name.rpartition(".")
            if head in _OP_NAMESPACES and (last.endswith("_") or any(k.arg == "out" for k in parent.keywords)):
                return None  # `torch.index_put_(buf, i, x)`, `torch.add(a, x, out=b)`: written into another tensor
            if (last in GRADLESS_CONSUMERS and head in _OP_NAMESPACES) or (not head and last in _GRADLESS_BUILTINS) \
                    or head.split(".")[0] in ("np", "numpy"):
                return set()
            if not head and last in _FLOWS_ON_BUILTINS:
                node = parent  # `max(1.01 * wav.abs().max(), 1)`: one of its arguments, or their sum
                continue
            if head not in _OP_NAMESPACES:
                verdict = callee(parent, node) if callee is not None else None
                if verdict == "gradless":
                    return set()
                if verdict == "returned":
                    node = parent  # (the project's function may hand it back: its result flows on)
                    continue
                return None  # other code (or autograd itself): it may keep the tensor or take a gradient
            node = parent  # an out-of-place torch op: its result flows on
            continue
        if isinstance(parent, ast.Subscript) and parent.value is node:
            if isinstance(parent.ctx, ast.Store):
                return set()  # the base of another write, not a read
            node = parent
            continue
        if _an_index(node, parent, parents):
            return set()  # `memo_ids[memo_ind]`, `scores[:i, memo_ind] = 0`: no gradient reaches an index
        if isinstance(parent, (ast.BinOp, ast.UnaryOp)):
            node = parent
            continue
        if isinstance(parent, ast.Expr):
            return set()  # a value dropped where it is made: nothing can take a gradient through it
        if returned and isinstance(parent, ast.Return):
            return {RETURNED}
        if isinstance(parent, ast.AugAssign) and parent.value is node and isinstance(parent.target, ast.Name):
            return {parent.target.id}  # `times *= n / times.max()`: it flows into the name written, followed on
        if isinstance(parent, ast.Assign) and parent.value is node:
            names = set()
            if own_storage is not None and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Subscript) \
                    and isinstance(parent.targets[0].value, ast.Name) and own_storage(parent.targets[0].value.id):
                return {parent.targets[0].value.id}  # K-means++'s `dist[a:b] = torch.min(dist[a:b], d)`
            for target in parent.targets:
                # `values, indices = torch.topk(scores, k)`: each name holds a part of the result, and is followed
                parts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
                parts = [p.value if isinstance(p, ast.Starred) else p for p in parts]
                if not all(isinstance(p, ast.Name) for p in parts):
                    return None
                names.update(p.id for p in parts)
            return names
        return None
    return None


def exclusive(load: ast.AST, write: ast.AST, parents: Dict[int, ast.AST]) -> bool:
    """``load`` and ``write`` sit in different arms of one ``if``, with no loop around it: one pass runs one."""
    arm_of: Dict[int, str] = {}
    child = write
    node = parents.get(id(write))
    while node is not None:
        if isinstance(node, ast.If):
            arm_of[id(node)] = _arm(node, child)
        child, node = node, parents.get(id(node))
    child = load
    node = parents.get(id(load))
    while node is not None:
        if id(node) in arm_of:
            arms = {arm_of[id(node)], _arm(node, child)} if isinstance(node, ast.If) else set()
            if arms != {"body", "orelse"}:
                return False
            up = parents.get(id(node))
            while up is not None:
                if isinstance(up, _LOOPS):
                    return False
                up = parents.get(id(up))
            return True
        child, node = node, parents.get(id(node))
    return False


def _not_float_here(load: ast.AST, parents: Dict[int, ast.AST]) -> bool:
    """``load`` reads a name in the arm of an ``if`` whose test finds it not floating point (the ``else`` of
    ``if x.dtype.is_floating_point:``, ``x.is_floating_point()``, ``torch.is_floating_point(x)``; the body of
    ``if not ...:``): an integer or bool tensor there, which no gradient passes through, so the saved float
    tensor being asked about never reaches that read (demucs's ``i16_pcm`` returns its argument only there).
    A complex tensor is not floating point either and may require grad: taken as absent."""
    name = getattr(load, "id", None)
    child, node = load, parents.get(id(load))
    while node is not None and name is not None:
        if isinstance(node, ast.If) and child is not node.test:
            test, negated = _float_test(node.test)
            if test == name and any(s is child for s in (node.body if negated else node.orelse)):
                # (`wav = torch.tanh(x)` after the test: the name may hold the float output there)
                return not _rebound(name, load, parents)
        for block in (getattr(node, "body", None), getattr(node, "orelse", None)):
            if isinstance(block, list) and any(s is child for s in block):
                # after `if x.dtype.is_floating_point: return ...` (its body leaves): x is not floating point here
                for stmt in block[:next(i for i, s in enumerate(block) if s is child)]:
                    if isinstance(stmt, ast.If) and not stmt.orelse and stmt.body \
                            and isinstance(stmt.body[-1], (ast.Return, ast.Raise)) and _float_test(stmt.test) == (name, False):
                        return not _rebound(name, load, parents)
        child, node = node, parents.get(id(node))
    return False


def _rebound(name: str, load: ast.AST, parents: Dict[int, ast.AST]) -> bool:
    """``name`` is bound anywhere in the function ``load`` sits in (not only passed in as a parameter)."""
    root = parents.get(id(load))
    while root is not None and not isinstance(root, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)):
        root = parents.get(id(root))
    return root is None or any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
                               for n in ast.walk(root))


def _float_test(test: ast.expr) -> Tuple[Optional[str], bool]:
    """(the name a floating-point test asks about, whether it is negated with ``not``)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _float_test_of(test.operand), True
    return _float_test_of(test), False


def _float_test_of(test: ast.expr) -> Optional[str]:
    """The name whose floating-point dtype ``test`` asks about, or None."""
    if isinstance(test, ast.Attribute) and test.attr == "is_floating_point" and isinstance(test.value, ast.Attribute) \
            and test.value.attr == "dtype" and isinstance(test.value.value, ast.Name):
        return test.value.value.id  # `x.dtype.is_floating_point`
    if isinstance(test, ast.Call) and not test.keywords and isinstance(test.func, ast.Attribute) \
            and test.func.attr == "is_floating_point":
        if not test.args and isinstance(test.func.value, ast.Name):
            return test.func.value.id  # `x.is_floating_point()`
        if len(test.args) == 1 and isinstance(test.args[0], ast.Name) and dotted_name(test.func.value) == "torch":
            return test.args[0].id  # `torch.is_floating_point(x)`
    return None


def _arm(node: ast.If, child: ast.AST) -> str:
    if any(s is child for s in node.body):
        return "body"
    if any(s is child for s in node.orelse):
        return "orelse"
    return "test"


def only_gradless_readers(names: Iterable[str], loads_of, parents: Dict[int, ast.AST], write: ast.AST,
                          skip: Set[int], captured: Set[int], params: Iterable[str],
                          declared: Iterable[str] = (), unread: bool = False, callee: Optional[Callee] = None,
                          own_storage: Optional[Callable[[str], bool]] = None,
                          stale: Optional[Callable[[ast.AST], bool]] = None) -> bool:
    """Every read of ``names`` (``loads_of(name)``: its loads), followed through the names it is bound to,
    ends without a gradient; and there is one (``unread``: or there is none). ``skip``: ids of the write's own
    loads; ``captured``: loads inside nested functions and lambdas (run at another time: a reader with a
    gradient); ``declared``: names declared ``global``/``nonlocal`` (bound there, the value outlives the
    function); ``params``: the caller holds them too; ``own_storage``: :func:`flows_into`'s; ``stale(load)``: the load
    reads a value the name was bound to afterwards, not the one followed (not judged)."""
    found = _follow(names, loads_of, parents, captured, set(params) | set(declared), callee,
                    lambda load: id(load) in skip or exclusive(load, write, parents) or (
                        stale is not None and stale(load)), own_storage=own_storage)
    return found is not None and (found[0] or unread)


def param_reads(name: str, loads_of, parents: Dict[int, ast.AST], captured: Set[int], declared: Iterable[str],
                callee: Optional[Callee] = None) -> Optional[bool]:
    """How a function reads its parameter ``name``: None when a read may take a gradient through it (or keep
    it); else whether it may be returned (True), every read ending without a gradient otherwise (False). A
    summary's ``gradless``/``flows_out`` (what its callers' :func:`flows_into` asks through ``callee``)."""
    found = _follow([name], loads_of, parents, captured, set(declared), callee, returned=True)
    return None if found is None else found[1]


def _follow(names: Iterable[str], loads_of, parents: Dict[int, ast.AST], captured: Set[int], held: Set[str],
            callee: Optional[Callee], passed=None, returned: bool = False,
            own_storage: Optional[Callable[[str], bool]] = None) -> Optional[Tuple[bool, bool]]:
    """Every read of ``names``, followed through the names it is bound to (:func:`flows_into`): None when one
    may take a gradient (or a name is ``held`` elsewhere, or the function reads every name); else (something read
    them, a ``return`` hands them back). ``passed(load)``: a load not to judge."""
    if any(loads_of(reader) for reader in _READ_EVERY_NAME):
        return None  # `locals()`, `vars()`, `eval(...)`: any name may be read, by anything
    todo = list(names)
    seen = set(todo)
    read = back = False
    while todo:
        name = todo.pop()
        if name in held:
            return None
        for load in loads_of(name):
            if passed is not None and passed(load) or _not_float_here(load, parents):
                continue
            if id(load) in captured:
                return None
            targets = flows_into(load, parents, callee, returned, own_storage)
            if targets is None:
                return None
            read = True
            if RETURNED in targets:
                back = True
            for target in targets - seen - {RETURNED}:
                seen.add(target)
                todo.append(target)
    return read, back
