"""What an ``isinstance`` test says of a value: the arms of an ``if`` in which a name holds no tensor.

``if isinstance(y, TensorList): for yi in y: yi /= s`` loops over a container, not over a tensor (whose
loop would be ``unbind``, a multi-output view): in that arm ``y`` holds none of the tensors the analysis
followed into it. A class is a tensor class when it is ``torch.Tensor`` or a subclass (``nn.Parameter``,
``DTensor``, a project class with such a base); builtins, numpy, ``nn.Module`` and any other class are not.
"""
from __future__ import annotations

import ast
from typing import Callable, Dict, Optional, Sequence, Tuple

from ..findings import Step, StepKind
from .astutil import dotted_name, walk_ast
from .init_builds import DEFAULT_CLASS, default_builder, init_attributes
from .names import qualify_dotted
from .summaries import param_index, plain_tensor

#: bases that make a class no ``nn.Module`` (qualified, or as builtins are written)
PLAIN_BASES = frozenset({
    "object", "abc.ABC", "typing.Generic", "typing.Protocol", "typing.NamedTuple", "enum.Enum", "enum.IntEnum",
    "dict", "list", "tuple", "set", "str", "int", "Exception", "collections.OrderedDict", "collections.UserDict",
})
#: decorators that compile a function with TorchScript (what it does to a tensor is not eager torch's)
SCRIPT_DECORATORS = frozenset({"torch.jit.script", "jit.script"})
#: classes no tensor is an instance of (checked on torch 2.13: a tensor passes ``Iterable``, ``Sized``,
#: ``Container``, ``Collection``, ``Reversible``, ``Hashable`` and ``typing.SupportsFloat``, so those say nothing)
_NON_TENSOR_CLASSES = frozenset({
    "list", "tuple", "dict", "set", "frozenset", "str", "bytes", "bytearray", "int", "float", "bool", "complex",
    "range", "slice", "type", "Sequence", "Mapping", "MutableMapping", "MutableSequence", "Iterator", "Generator",
    "Callable", "Number", "Integral", "Real", "List", "Tuple", "Dict", "Set", "FrozenSet",
})
#: torch's subclasses of ``torch.Tensor`` that a factory's tensor is never an instance of
_TORCH_SUBCLASSES = frozenset({"DTensor", "Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"})
#: modules whose classes are never tensors
_NON_TENSOR_MODULES = frozenset({"builtins", "collections", "typing", "numbers", "numpy"})


def plain_bases(bases, plain_class: Callable[[str], bool]) -> bool:
    """Every base (``(as written, qualified, the project class it names or None)``) is a plain base
    (:data:`PLAIN_BASES`) or a project class ``plain_class`` says is plain: the one rule of
    :meth:`~.resolve.Resolver.plain_class` and :meth:`ClassFactsMixin.nested_class_plain`."""
    return all(base in PLAIN_BASES or qualified in PLAIN_BASES or (found is not None and plain_class(found))
               for base, qualified, found in bases)


def isinstance_subject(test: ast.expr) -> Optional[Tuple[ast.expr, ast.expr, bool]]:
    """``isinstance(x, C)`` -> (x, C, True); ``not isinstance(x, C)`` -> (x, C, False); else None."""
    positive = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, positive = test.operand, not positive
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" \
            and len(test.args) == 2 and not test.keywords:
        return test.args[0], test.args[1], positive
    return None


def torch_class_is_tensor(qual: str) -> bool:
    """A class of torch's: ``torch.Tensor``, ``nn.Parameter``, ``DTensor``, ``nn.Buffer`` are tensors;
    ``nn.Module``, ``torch.Size``, ``PackedSequence``, ``torch.dtype`` are not."""
    name = qual.rpartition(".")[2]
    return "Tensor" in name or name in ("Parameter", "UninitializedParameter", "Buffer", "UninitializedBuffer",
                                        "Variable")


def no_tensor_arms(test: ast.expr, not_tensor: Callable[[ast.expr], bool]) -> Tuple[Optional[str], Optional[str]]:
    """(the name that holds no tensor in the ``if``'s body, the one in its ``else``), each or None.
    ``not_tensor(C)``: the class expression ``C`` names no tensor class (so ``isinstance(x, C)`` true means ``x``
    is no tensor). ``isinstance(x, torch.Tensor)`` false does too; ``a and isinstance(x, list)`` narrows the
    body, ``a or not isinstance(x, list)`` the else."""
    found = _one(test, not_tensor)
    if found is not None:
        return found
    if isinstance(test, ast.BoolOp):
        parts = [_one(v, not_tensor) for v in test.values]
        if isinstance(test.op, ast.And):
            return next((p[0] for p in parts if p is not None and p[0]), None), None
        return None, next((p[1] for p in parts if p is not None and p[1]), None)
    return None, None


#: conditional copies that return their receiver itself when they copy nothing (`reshape` and `flatten` return
#: another view object, which an identity test tells apart although it shares the storage)
_SELF_OR_COPY = (".to(", ".type_as(", ".type(", ".float(", ".double(", ".half(", ".bfloat16(", ".contiguous(",
                 ".cpu(", ".cuda(", ".long(", ".int(")


def copy_arms(test: ast.expr) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """``if out.data_ptr() == data.data_ptr():`` / ``if out is data:`` (``!=``, ``is not``): the names compared, in
    the arm where they are different objects with different storage (the else, or the body of the negated test),
    where neither holds what a conditional copy (``out = data.type_as(grid)``, ``.to``, ``.contiguous``) returned
    as its input itself: there it returned a copy (hf-deepali's ``grid_sample`` writes ``out`` in place only then)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and len(test.comparators) == 1):
        return (), ()
    op = test.ops[0]
    if isinstance(op, (ast.Is, ast.IsNot)):
        names = tuple(dotted_name(n) for n in (test.left, test.comparators[0]))
    elif isinstance(op, (ast.Eq, ast.NotEq)):
        names = tuple(dotted_name(n.func.value) if isinstance(n, ast.Call) and not n.args
                      and isinstance(n.func, ast.Attribute) and n.func.attr == "data_ptr" else None
                      for n in (test.left, test.comparators[0]))
    else:
        return (), ()
    if None in names:
        return (), ()
    return (names, ()) if isinstance(op, (ast.IsNot, ast.NotEq)) else ((), names)


def instance_arms(test: ast.expr, is_class: Callable[[ast.expr], bool]) -> Tuple[Optional[str], Optional[str]]:
    """(the name ``isinstance`` says is an instance of a class ``is_class`` accepts in the ``if``'s body, the one
    in its ``else``), each or None: ``isinstance(x, C)``, ``not isinstance(x, C)``, and either in an ``and``
    (the body) or an ``or`` (the else)."""
    def one(part: ast.expr) -> Optional[Tuple[Optional[str], Optional[str]]]:
        found = isinstance_subject(part)
        if found is None:
            return None
        subject, classes, positive = found
        key = dotted_name(subject)
        members = classes.elts if isinstance(classes, ast.Tuple) else [classes]
        if key is None or not members or not all(is_class(c) for c in members):
            return None
        return (key, None) if positive else (None, key)

    found = one(test)
    if found is not None:
        return found
    if isinstance(test, ast.BoolOp):
        parts = [one(v) for v in test.values]
        if isinstance(test.op, ast.And):
            return next((p[0] for p in parts if p is not None and p[0]), None), None
        return None, next((p[1] for p in parts if p is not None and p[1]), None)
    return None, None


def _one(test: ast.expr, not_tensor: Callable[[ast.expr], bool]) -> Optional[Tuple[Optional[str], Optional[str]]]:
    found = isinstance_subject(test)
    if found is None:
        return None
    subject, classes, positive = found
    key = dotted_name(subject)
    if key is None:
        return None
    members = classes.elts if isinstance(classes, ast.Tuple) else [classes]
    if members and all(not_tensor(c) for c in members):
        return (key, None) if positive else (None, key)
    if len(members) == 1 and _is_tensor_name(classes):
        return (None, key) if positive else (key, None)
    return None, None


def _is_tensor_name(node: ast.expr) -> bool:
    name = dotted_name(node)
    return name in ("torch.Tensor", "Tensor")


def class_is_not_tensor(qual: Optional[str], imported: bool) -> bool:
    """Whether the class named ``qual`` (imports resolved; ``imported``: through an import), not one of the
    project's, is surely no tensor class: a builtin or ``collections.abc``/``typing``/``numbers``/numpy class no
    tensor passes, or a torch class that is no tensor (``nn.Module``, ``torch.Size``). Anything else (another
    library's name, which may be a tuple of classes or an alias of ``torch.Tensor``) is unknown."""
    if qual is None:
        return False  # a local value (`cls = type(x)`): unknown
    head, _, name = qual.rpartition(".")
    if qual.split(".")[0] == "torch":
        return not torch_class_is_tensor(qual)
    if not imported:
        return qual in _NON_TENSOR_CLASSES
    return head.split(".")[0] in _NON_TENSOR_MODULES and name in _NON_TENSOR_CLASSES | {"ndarray", "generic"}


class ClassFactsMixin:
    """What the walk knows of classes and types (a part of :class:`~.dataflow.Scope`): ``isinstance`` arms,
    nested classes' bases, TorchScript-compiled functions."""

    def holds_no_tensor(self, key: str) -> None:
        """Where an ``isinstance`` test says ``key`` holds no tensor (:mod:`.narrowing`): none of the single
        tensors it held is followed there (a loop over it is over a container's items, not ``unbind``); what
        is known to be a container (``x.chunk(2)``, a model's output object) stays, and a parameter's
        placeholder stands there only for the containers its callers pass (:attr:`StepKind.NOT_TENSOR`)."""
        held = self.env.get(key)
        if held:
            kept = frozenset(o if o.is_container else o.extend(Step(StepKind.NOT_TENSOR, "isinstance", o.root_line))
                             for o in held if o.is_container or param_index(o) is not None)
            if kept != held:
                self.hold(key, kept)

    def type_arms(self, test: ast.expr):
        """What ``test`` says of names in each arm of an ``if``: ([(how, name)] for the body, [...] for the else),
        ``how`` one of :meth:`holds_no_tensor`, :meth:`holds_subclass_instance`."""
        body, orelse = [], []
        for how, (in_body, in_else) in ((self.holds_no_tensor, no_tensor_arms(test, self.not_tensor_class)),
                                        (self.holds_subclass_instance, instance_arms(test, self.subclass_of_tensor))):
            if in_body:
                body.append((how, in_body))
            if in_else:
                orelse.append((how, in_else))
        copies_body, copies_else = copy_arms(test)
        for copies, arm in ((copies_body, body), (copies_else, orelse)):
            if copies:
                a, b = copies
                arm.extend([((lambda key, other=b: self.holds_copy(key, other)), a),
                            ((lambda key, other=a: self.holds_copy(key, other)), b)])
        return body, orelse

    def narrow(self, facts) -> None:
        """Apply what :meth:`type_arms` found for an arm."""
        for how, key in facts:
            how(key)

    def holds_copy(self, key: str, other: str) -> None:
        """Where a test found ``key`` another object than ``other`` (:func:`copy_arms`): what a conditional copy of
        ``other`` itself returned (``key = other.type_as(g)``) was a copy, not ``other``; a conditional copy of a
        view of ``other`` (``other[1:].contiguous()``) may still be that view, with another ``data_ptr()``."""
        held, compared = self.env.get(key), self.env.get(other)
        if held and compared:
            kept = frozenset(o for o in held if not (
                o.steps and o.steps[-1].kind is StepKind.MAY_ALIAS and o.steps[-1].text.startswith(_SELF_OR_COPY)
                and any(o.derived_from(c) and len(o.steps) == len(c.steps) + 1 for c in compared)))
            if kept != held:
                self.hold(key, kept)

    def holds_subclass_instance(self, key: str) -> None:
        """Where an ``isinstance`` test says ``key`` is an instance of a class other than ``torch.Tensor`` itself
        (a project class, ``DTensor``, ``nn.Parameter``): a tensor a torch factory made (:func:`plain_tensor`)
        is not what it holds there; a parameter's placeholder stands only for what is no such tensor
        (:attr:`StepKind.SUBCLASS_INSTANCE`). tensordict's ``MemoryMappedTensor.from_tensor`` returns its input
        only when it is a ``MemoryMappedTensor``; ``empty`` passes it a ``torch.zeros(()).expand(shape)``."""
        held = self.env.get(key)
        if held:
            kept = frozenset(o.extend(Step(StepKind.SUBCLASS_INSTANCE, "isinstance", o.root_line))
                             if param_index(o) is not None else o for o in held if not plain_tensor(o))
            if kept != held:
                self.hold(key, kept)

    def subclass_of_tensor(self, node: ast.expr) -> bool:
        """The class expression ``node`` names a class no exact ``torch.Tensor`` is an instance of, that may be a
        tensor class: a project class (one with no tensor base is :meth:`not_tensor_class`'s), or a torch tensor
        class other than ``torch.Tensor`` (``DTensor``, ``nn.Parameter``)."""
        dotted = dotted_name(node)
        if dotted is None:
            return False
        qual, imported, here = self._qualified(dotted)
        if self.ctx is not None:
            found = self.ctx.resolve(here)
            if found is not None:
                return found[0] == "class" and self.ctx.tensor_class(found[1])
        if qual is not None and qual.split(".")[0] == "torch":
            # (not the legacy type classes: a float CPU tensor is an instance of `torch.FloatTensor`)
            return qual.rpartition(".")[2] in _TORCH_SUBCLASSES
        return False

    def not_tensor_class(self, node: ast.expr) -> bool:
        """The class expression ``node`` (in ``isinstance(x, node)``) names no tensor class: a project class
        with no ``torch.Tensor`` base, a builtin, torch's ``nn.Module``, another library's class."""
        dotted = dotted_name(node)
        if dotted is None:
            return False
        qual, imported, here = self._qualified(dotted)
        if self.ctx is not None:
            found = self.ctx.resolve(here)
            if found is not None:
                return found[0] == "class" and not self.ctx.tensor_class(found[1])
        return class_is_not_tensor(qual, imported)

    def _qualified(self, dotted: str) -> Tuple[Optional[str], bool, str]:
        """``dotted`` (a name as this module writes it): :func:`~.names.qualify_dotted`'s (qualified name,
        imported), and the name to resolve in the project (through the imports, else in this module)."""
        qual, imported = qualify_dotted(dotted, self.names, self.is_local_name)
        module = self.ctx.module if self.ctx is not None else ""
        return qual, imported, qual if imported and qual else f"{module}.{dotted}"

    def nested_class_builders(self, node: ast.ClassDef) -> Optional[Dict[str, str]]:
        """For a class inside a function or class: what its ``__init__`` built each ``self.<attr>`` from,
        qualified as :meth:`~.resolve.Resolver.attribute_builder` does for a top-level class; None otherwise."""
        if self.ctx is None or self.qual == self.ctx.module:
            return None
        out = {}
        for attr, dotted in init_attributes(node).items():
            mark = DEFAULT_CLASS if dotted.startswith(DEFAULT_CLASS) else ""
            qual = default_builder(mark + self._qualified(dotted[len(mark):])[2])  # (as `attribute_builder` reads it)
            if qual is not None:
                out[attr] = qual
        return out

    def nested_class_plain(self, node: ast.ClassDef) -> Optional[bool]:
        """For a class inside a function or class (the project indexes top-level classes only): whether each
        base is plain (:data:`PLAIN_BASES`, or a plain project class); None for a top-level class."""
        if self.ctx is None or self.qual == self.ctx.module:
            return None
        bases = []
        for base in node.bases:
            dotted = dotted_name(base)
            if dotted is None:
                return False  # `Base[T]`, `make_base()`: unknown
            qual, _, here = self._qualified(dotted)
            found = self.ctx.resolve(here)
            bases.append((dotted, qual, found[1] if found is not None and found[0] == "class" else None))
        return plain_bases(bases, self.ctx.plain_class)

    def scripted_function(self, node) -> bool:
        """``node`` (a ``def``) is compiled by ``torch.jit.script``."""
        return any(qualify_dotted(dotted_name(d.func if isinstance(d, ast.Call) else d), self.names,
                                  self.is_local_name)[0] in SCRIPT_DECORATORS for d in node.decorator_list)


# --- `if x is not None:` whose other arm dies -------------------------------------------------------------

#: expressions whose parts are evaluated only sometimes: a dereference inside them proves nothing
_LAZY = (ast.IfExp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
#: statements that may leave the block, so a dereference after them need not run
_EXITS = (ast.Return, ast.Break, ast.Continue)


def none_test(test: ast.expr) -> Optional[Tuple[str, bool]]:
    """``x is not None`` -> ("x", True); ``x is None`` -> ("x", False); else None."""
    if isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and len(test.ops) == 1 \
            and isinstance(test.ops[0], (ast.Is, ast.IsNot)) \
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
        return test.left.id, isinstance(test.ops[0], ast.IsNot)
    return None


def _binds(nodes, name: str) -> bool:
    for node in nodes:
        for sub in walk_ast(node):
            if isinstance(sub, ast.Name) and sub.id == name and not isinstance(sub.ctx, ast.Load):
                return True
            if isinstance(sub, (ast.Global, ast.Nonlocal)) and name in sub.names:
                return True
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub.name == name:
                return True
            if isinstance(sub, (ast.Import, ast.ImportFrom)) and any(
                    (a.asname or a.name.split(".")[0]) == name for a in sub.names):
                return True
    return False


def _may_leave(stmt: ast.stmt) -> bool:
    """``stmt`` holds a ``return``/``break``/``continue`` (outside nested functions), or an exception handler."""
    stack = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, _EXITS) or isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            return True
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                stack.append(child)
    return False


def _may_write(stmt: ast.stmt) -> bool:
    """``stmt`` may write a tensor in place or hand one out before a later statement runs: an augmented or
    item assignment, a ``*_`` call, ``inplace=``/``out=``, a ``yield``, or a call of anything but a method of a
    value or a builtin (a helper or submodule may write its argument)."""
    for node in walk_ast(stmt):
        if isinstance(node, (ast.AugAssign, ast.Yield, ast.YieldFrom, ast.Await)):
            return True
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            return True
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else (func.id if isinstance(func, ast.Name) else "")
            if name.endswith("_") and not name.endswith("__"):
                return True
            if any(k.arg in ("inplace", "out") or k.arg is None for k in node.keywords):
                return True
            if isinstance(func, ast.Name) and name not in _SAFE_BUILTINS:
                return True
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
                return True
    return False


#: builtins that write no tensor
_SAFE_BUILTINS = frozenset({"len", "int", "float", "bool", "str", "repr", "print", "isinstance", "getattr", "hasattr",
                            "min", "max", "abs", "range", "tuple", "list", "dict", "set", "sum", "any", "all",
                            "zip", "enumerate", "sorted", "round", "type", "id", "format"})
#: context managers that never suppress an exception (their ``__exit__`` returns a false value)
_NON_SUPPRESSING = frozenset({"no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "autocast",
                              "nullcontext", "record_function", "device", "stream", "sdpa_kernel", "open"})


def non_suppressing(item: ast.withitem) -> bool:
    """``with torch.no_grad():``, ``with autocast(False):``: a context manager known not to swallow an error."""
    expr = item.context_expr
    func = expr.func if isinstance(expr, ast.Call) else expr
    name = func.attr if isinstance(func, ast.Attribute) else (func.id if isinstance(func, ast.Name) else "")
    return name in _NON_SUPPRESSING


def _dereferences(node: ast.AST, name: str) -> bool:
    """Evaluating ``node`` surely reads an attribute (not a dunder, which None has too) or an item of ``name``, or
    calls it (each raises on None): parts evaluated only sometimes (the arms of ``a if c else b``, the operands of
    ``and``/``or`` after the first, lambdas, comprehensions) are not looked at."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name:
        return not (node.attr.startswith("__") and node.attr.endswith("__"))
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == name:
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
        return True
    if isinstance(node, ast.IfExp):
        return _dereferences(node.test, name)
    if isinstance(node, ast.BoolOp):
        return _dereferences(node.values[0], name)
    if isinstance(node, _LAZY):
        return False
    return any(_dereferences(child, name) for child in ast.iter_child_nodes(node))


_GO_ON = object()


def _block_dereferences(block, name: str):
    """True: running ``block`` from its start surely dereferences ``name`` before anything may write a tensor
    (:func:`_may_write`), rebinds ``name``, leaves or could catch the error; None: undecided; ``_GO_ON``: the
    block ran to its end with none of these."""
    for stmt in block:
        if any(isinstance(n, ast.NamedExpr) and n.target.id == name for n in walk_ast(stmt)):
            return None  # `(m := ..., m.sum())`: which comes first is not read here
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if _binds([stmt], name) or any(_dereferences(d, name) for d in stmt.decorator_list):
                return None  # (a `nonlocal` rebinding inside it, too)
            continue
        if isinstance(stmt, (ast.If, ast.While)):
            head = [stmt.test]
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            head = [stmt.iter]
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            if not all(non_suppressing(item) for item in stmt.items):
                return None  # `with contextlib.suppress(AttributeError):` may swallow the error
            if any(_dereferences(item.context_expr, name) for item in stmt.items):
                return True
            if _binds([item.optional_vars for item in stmt.items if item.optional_vars is not None], name):
                return None
            found = _block_dereferences(stmt.body, name)
            if found is not _GO_ON:
                return found
            continue
        elif isinstance(stmt, ast.AnnAssign):
            head = [part for part in (stmt.value, stmt.target) if part is not None]  # a local's annotation is not run
        elif isinstance(stmt, (ast.Assert, ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom, ast.Delete)):
            if _binds([stmt], name):
                return None
            continue  # an `assert` may be compiled out
        elif isinstance(stmt, ast.Match) or type(stmt).__name__ == "TryStar" or isinstance(stmt, ast.Try):
            return None
        else:
            head = [stmt]  # a simple statement: evaluated whole (the value of an assignment before its targets)
        if any(_dereferences(h, name) for h in head):
            return True
        if _binds([stmt], name) or _may_leave(stmt) or _may_write(stmt):
            return None
    return _GO_ON


def none_arm_dies(node: ast.If, rest: Optional[Sequence[ast.stmt]]) -> Optional[bool]:
    """For ``if x is not None: <body>`` (or ``if x is None: <body>``) with at most an ``else``, and ``rest``, the
    statements after it in its block (None: unknown, or an enclosing ``try`` may catch an error): whether the
    arm in which ``x`` is None (the else arm: True; the body: False) cannot reach ``rest``'s end, because
    ``rest`` surely dereferences ``x`` (``x.squeeze(-1)``: ``AttributeError`` on None) before anything rebinds
    it, leaves the block or may write a tensor; None otherwise (also when that arm binds ``x``).

    funasr's CIF predictor: ``if mask is not None: alphas = alphas * mask`` then ``mask = mask.squeeze(-1)``:
    with ``mask`` None the call raises before ``alphas`` (a saved ``relu`` output there) is written."""
    found = none_test(node.test)
    if found is None or rest is None:
        return None
    name, positive = found
    if _binds(node.orelse if positive else node.body, name) or _block_dereferences(rest, name) is not True:
        return None
    return positive

