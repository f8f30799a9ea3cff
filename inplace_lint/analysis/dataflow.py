"""The analysis engine: finds in-place writes to views and model outputs in a stdlib ``ast`` tree.

Every surface (flake8 plugin, CLI, codemod, editor) calls :func:`analyze`; none of
them decides anything on its own. The engine needs no libcst parse and never
imports torch, so a file without findings costs one ``ast`` walk.

How it works: each function (and the module body) is walked statement by
statement with an environment mapping names (and dotted names such as
``self.logits``) to the set of :class:`~inplace_lint.findings.Origin` values they
may hold. Assignments, tuple unpacking, ``for`` targets, comprehensions, walrus,
``with`` and ``try`` blocks update it; ``if``/``try`` branches and loop bodies are
merged (a name *may* hold any origin of any branch). View ops extend an origin;
any other call or operator makes a fresh value with no origin, which is why
``x = x / t`` or ``x.clone()`` ends the chain. At each in-place write the target's
origins are matched against the rules in :data:`inplace_lint.rules.PRIORITY`.
"""
from __future__ import annotations

import ast
import functools
import sys
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from ..config import DEFAULT_SETTINGS, Settings
from ..findings import Finding, Origin, RootKind, Step, StepKind, WriteKind
from ..rules import PRIORITY, Write
from . import fixplan, ops
from .astutil import dotted_name
from .astutil import last_name as _last_name

OriginSet = FrozenSet[Origin]
EMPTY: OriginSet = frozenset()
_MAX_ORIGINS = 12
_RECURSION_LIMIT = 20000

#: namespaces whose functions take the tensor as first argument (``torch.squeeze(x, 0)``)
_TORCH_NAMESPACES = frozenset(
    {"torch", "torch.nn.functional", "F", "nn.functional", "torch.special", "torch.linalg", "torch.fft"}
)
_TENSOR_CLASS = frozenset({"torch.Tensor", "Tensor"})
_AUTOGRAD_FUNCTION_METHODS = frozenset({"forward", "backward", "setup_context", "jvp", "vjp"})
_FUNCTIONAL_NAMESPACES = frozenset({"F", "torch.nn.functional", "nn.functional"})
#: ``with``/decorator names that change grad mode; ``triton`` kernels are not PyTorch code
_TRITON_DECORATORS = frozenset({"jit", "autotune", "heuristics"})


def analyze(tree: ast.Module, settings: Settings = DEFAULT_SETTINGS) -> List[Finding]:
    """Return the findings in ``tree``, sorted by position.

    ``tree`` is what ``ast.parse`` returns (flake8 hands plugins the same).
    Positions are ``ast``'s: 1-based lines, 0-based columns.
    """
    sink: Dict[Tuple[int, int], Finding] = {}
    limit = sys.getrecursionlimit()
    # deeply nested code (long call chains, nested brackets) must not crash a whole flake8 run
    sys.setrecursionlimit(max(limit, _RECURSION_LIMIT))
    try:
        _Scope(settings, sink, params=(), func=tree).run_body(tree.body)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(sink.values(), key=lambda f: (f.line, f.col, f.code))


def analyze_source(source: str, settings: Settings = DEFAULT_SETTINGS, filename: str = "<unknown>") -> List[Finding]:
    """Parse ``source`` and analyze it. Raises ``SyntaxError`` (or ``ValueError`` for NUL bytes)."""
    return analyze(ast.parse(source, filename=filename), settings)


# --------------------------------------------------------------------------- helpers


def _short(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _call_text(node: ast.Call, method: str) -> str:
    """``.squeeze(0)``; long argument lists are elided."""
    args = ", ".join([ast.unparse(a) for a in node.args] + [ast.unparse(k) for k in node.keywords])
    if len(args) > 30:
        args = "..."
    return f".{method}({args})"


def _kw(node: ast.Call, name: str) -> Optional[ast.expr]:
    for k in node.keywords:
        if k.arg == name:
            return k.value
    return None


def _is_str_constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _inplace_flag(node: ast.Call, name: str) -> bool:
    """``F.relu(x, inplace=True)`` or ``F.relu(x, True)`` (by the parameter's position)."""
    where = ops.inplace_argument(name, len(node.args), [k.arg for k in node.keywords])
    return _is_true(_kw(node, "inplace") if where == "inplace" else None if where is None else node.args[where])


def _is_true(node: Optional[ast.expr]) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _is_false(node: Optional[ast.expr]) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _is_basic_index(node: ast.expr) -> bool:
    """Slices, integer constants, ``None`` and ``...`` make a view; anything else may be a tensor index (a copy)."""
    elts = node.elts if isinstance(node, ast.Tuple) else [node]
    for e in elts:
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            e = e.operand
        if not (isinstance(e, ast.Slice) or (isinstance(e, ast.Constant) and not isinstance(e.value, str))):
            return False
    return True


def _index_text(node: ast.expr) -> str:
    if isinstance(node, ast.Tuple):
        text = ", ".join(ast.unparse(e) for e in node.elts)
    else:
        text = ast.unparse(node)
    return f"[{text if len(text) <= 30 else '...'}]"


def _key(node: ast.AST) -> Optional[str]:
    """Environment key of a name, dotted name or constant item: ``x``, ``self.x``, ``output['logits']``."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and \
            isinstance(node.slice.value, (str, int)):
        base = dotted_name(node.value)
        return f"{base}[{node.slice.value!r}]" if base is not None else None
    return dotted_name(node)


def _cap(origins: Iterable[Origin]) -> OriginSet:
    s = frozenset(origins)
    if len(s) <= _MAX_ORIGINS:
        return s
    return frozenset(sorted(s, key=_origin_key)[:_MAX_ORIGINS])


def _origin_key(o: Origin):
    return (o.root_line, o.root_text, len(o.steps), tuple(s.text for s in o.steps), o.root.value)


def _merge(envs: Sequence[Dict[str, OriginSet]]) -> Dict[str, OriginSet]:
    out: Dict[str, OriginSet] = {}
    for env in envs:
        for k, v in env.items():
            out[k] = _cap(out.get(k, EMPTY) | v) if k in out else v
    return out


def _grad_mode_of(node: ast.expr) -> Optional[bool]:
    """False for ``torch.no_grad()``-like contexts/decorators, True for ``enable_grad()``, None otherwise."""
    call = node if isinstance(node, ast.Call) else None
    name = _last_name(call.func if call else node)
    if name in ops.NO_GRAD_CONTEXTS:
        if call and (call.args and _is_false(call.args[0]) or _is_false(_kw(call, "mode"))):
            return None  # inference_mode(False)
        return False
    if name == ops.SET_GRAD_CONTEXT and call and call.args:
        if _is_false(call.args[0]):
            return False
        if _is_true(call.args[0]):
            return True
    if name == ops.ENABLE_GRAD_CONTEXT:
        return True
    return None


def _is_triton_kernel(fn: ast.AST) -> bool:
    for dec in getattr(fn, "decorator_list", ()):
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = dotted_name(target) or ""
        if name.split(".")[0] in ("triton", "tl") or name in _TRITON_DECORATORS:
            return True
    return False


def _inplace_module(call: ast.AST) -> Optional[str]:
    """``nn.ReLU(inplace=True)`` -> ``nn.ReLU``."""
    if isinstance(call, ast.Call) and _last_name(call.func) in ops.INPLACE_KWARG_MODULES and _is_true(_kw(call, "inplace")):
        return ast.unparse(call.func)
    return None


def _class_inplace_modules(cls: ast.ClassDef) -> Dict[str, str]:
    """``self.act = nn.ReLU(inplace=True)`` in a method body of the class -> {"self.act": "nn.ReLU"}.

    Only statements directly in a method's body are scanned (where ``__init__`` builds its modules):
    a full walk of every class would cost more than the rest of the analysis.
    """
    found = {}
    for item in cls.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        # __init__ is walked whole (modules built under an `if`); other methods only at their top level
        nodes = ast.walk(item) if item.name == "__init__" else item.body
        for node in nodes:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                module = _inplace_module(node.value)
                if module:
                    for t in node.targets:
                        key = dotted_name(t)
                        if key and key.startswith("self."):
                            found[key] = module
    return found


# --------------------------------------------------------------------------- the walker


@dataclass
class _Scope:
    """Walks one function (or module) body; nested functions get a scope of their own."""

    settings: Settings
    sink: Dict[Tuple[int, int], Finding]
    params: Sequence[str]
    #: the function (or module) whose body this scope walks; fix safety scans it for later reads
    func: Optional[ast.AST] = None
    env: Dict[str, OriginSet] = field(default_factory=dict)
    no_grad: bool = False
    #: names bound while grad was off, in the current no-grad region
    nograd_bound: Set[str] = field(default_factory=set)
    inplace_modules: Dict[str, str] = field(default_factory=dict)
    stmt_stack: List[ast.stmt] = field(default_factory=list)
    loop_stack: List[ast.AST] = field(default_factory=list)
    #: the class body of a ``torch.autograd.Function`` subclass
    autograd_function: bool = False
    #: per-function facts for fix safety, built on a function's first finding (shared by nested scopes)
    facts_cache: Dict[int, "fixplan.FunctionFacts"] = field(default_factory=dict)

    # ---- statements

    def run_body(self, body: Sequence[ast.stmt]) -> None:
        for stmt in body:
            self.stmt(stmt)

    def stmt(self, node: ast.stmt) -> None:
        self.stmt_stack.append(node)
        try:
            handler = _handler(type(self), "stmt_", type(node))
            if handler is not None:
                handler(self, node)
                return
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.eval(child)
        finally:
            self.stmt_stack.pop()

    def stmt_Expr(self, node: ast.Expr) -> None:
        self.eval(node.value)

    def stmt_Return(self, node: ast.Return) -> None:
        self.eval(node.value)

    def stmt_Pass(self, node) -> None:
        pass

    stmt_Break = stmt_Continue = stmt_Global = stmt_Nonlocal = stmt_Pass

    def stmt_Assign(self, node: ast.Assign) -> None:
        value = self.eval(node.value)
        module = _inplace_module(node.value)
        for target in node.targets:
            if module and isinstance(target, ast.Name):
                self.inplace_modules[target.id] = module
            self.assign(target, node.value, value)

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.assign(node.target, node.value, self.eval(node.value))

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        value_origins = self.eval(node.value)
        op = _AUG_OPS.get(type(node.op), "op=")
        target = node.target
        if isinstance(target, ast.Subscript):
            base = self.eval(target.value)
            self.eval(target.slice)
            if not _is_str_constant(target.slice):
                self.report(node, WriteKind.SUBSCRIPT, f"`{op}` on an item", target.value, base)
        elif isinstance(target, (ast.Name, ast.Attribute)):
            origins = self.eval(target)
            self.report(node, WriteKind.AUGMENTED, f"`{op}`", target, origins, ops.AUGMENTED_INPLACE.get(op))
        del value_origins

    def stmt_For(self, node: ast.For) -> None:
        self._loop(node, lambda: self.bind_iter(node.target, node.iter))

    stmt_AsyncFor = stmt_For

    def stmt_While(self, node: ast.While) -> None:
        self._loop(node, lambda: self.eval(node.test))

    def _loop(self, node, head) -> None:
        before = dict(self.env)
        self.loop_stack.append(node)
        try:
            for _ in range(2):  # a second pass sees values carried around the loop
                head()
                self.run_body(node.body)
                self.env = _merge([before, self.env])
        finally:
            self.loop_stack.pop()
        self.run_body(node.orelse)

    def stmt_If(self, node: ast.If) -> None:
        # an elif chain is walked as a loop, not by recursion (generated code has chains of hundreds)
        arms: List[Dict[str, OriginSet]] = []
        current = node
        while True:
            self.eval(current.test)
            before = dict(self.env)
            self.run_body(current.body)
            arms.append(self.env)
            self.env = before
            orelse = current.orelse
            if len(orelse) == 1 and isinstance(orelse[0], ast.If):
                current = orelse[0]
                continue
            self.run_body(orelse)
            arms.append(self.env)
            break
        self.env = _merge(arms)

    def stmt_Try(self, node) -> None:
        before = dict(self.env)
        self.run_body(node.body)
        self.run_body(node.orelse)
        branches = [self.env]
        for handler in node.handlers:
            self.env = _merge([before, branches[0]])
            if handler.name:
                self.env[handler.name] = EMPTY
            self.run_body(handler.body)
            branches.append(self.env)
        self.env = _merge(branches)
        self.run_body(node.finalbody)

    stmt_TryStar = stmt_Try

    def stmt_With(self, node) -> None:
        grad = None
        for item in node.items:
            self.eval(item.context_expr)
            mode = self.grad_mode_of(item.context_expr)
            grad = mode if mode is not None else grad
            if item.optional_vars is not None:
                self.assign(item.optional_vars, None, EMPTY)
        if grad is None:
            self.run_body(node.body)
            return
        saved = (self.no_grad, self.nograd_bound)
        self.no_grad = not grad
        self.nograd_bound = set() if self.no_grad else self.nograd_bound
        try:
            self.run_body(node.body)
        finally:
            self.no_grad, self.nograd_bound = saved

    stmt_AsyncWith = stmt_With

    def stmt_Match(self, node) -> None:
        self.eval(node.subject)
        before = dict(self.env)
        branches = []
        for case in node.cases:
            self.env = dict(before)
            if case.guard is not None:
                self.eval(case.guard)
            self.run_body(case.body)
            branches.append(self.env)
        self.env = _merge(branches + [before])

    def stmt_FunctionDef(self, node) -> None:
        for dec in node.decorator_list:
            self.eval(dec)
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.eval(default)
        self.bind_name(node.name, EMPTY)
        if _is_triton_kernel(node):
            return
        no_grad = self.no_grad
        if self.autograd_function and node.name in _AUTOGRAD_FUNCTION_METHODS and not self.settings.report_in_no_grad:
            no_grad = True  # autograd runs a custom Function's forward and backward with grad off
        for dec in node.decorator_list:
            mode = self.grad_mode_of(dec)
            if mode is not None:
                no_grad = not mode
        self.child_scope(node.args, no_grad, node).run_body(node.body)

    stmt_AsyncFunctionDef = stmt_FunctionDef

    def stmt_ClassDef(self, node: ast.ClassDef) -> None:
        for expr in node.decorator_list + node.bases + [k.value for k in node.keywords]:
            self.eval(expr)
        scope = _Scope(self.settings, self.sink, params=(), func=None, env=dict(self.env), no_grad=self.no_grad,
                       facts_cache=self.facts_cache, inplace_modules={**self.inplace_modules, **_class_inplace_modules(node)})
        scope.autograd_function = any(_last_name(b) == "Function" for b in node.bases)
        scope.run_body(node.body)
        self.bind_name(node.name, EMPTY)

    def stmt_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            key = dotted_name(target)
            if key is not None:
                self.env.pop(key, None)
            else:
                self.eval(target)

    def stmt_Import(self, node) -> None:
        for alias in node.names:
            self.bind_name((alias.asname or alias.name).split(".")[0], EMPTY)

    stmt_ImportFrom = stmt_Import

    def grad_mode_of(self, node: ast.expr) -> Optional[bool]:
        """The grad mode a context/decorator sets; ``report-in-no-grad`` treats all code as grad-enabled."""
        return None if self.settings.report_in_no_grad else _grad_mode_of(node)

    # ---- scopes

    def child_scope(self, args: ast.arguments, no_grad: bool, func: Optional[ast.AST]) -> "_Scope":
        """A nested function: it reads the enclosing names (closures); its parameters shadow them."""
        names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
        names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
        env = dict(self.env)
        for name in names:
            env.pop(name, None)
            if name in self.settings.model_output_params:
                env[name] = frozenset({Origin(RootKind.MODEL_OUTPUT_OBJECT, name, _arg_line(args, name))})
        return _Scope(self.settings, self.sink, params=tuple(names), func=func, env=env, no_grad=no_grad,
                      facts_cache=self.facts_cache, inplace_modules=dict(self.inplace_modules))

    # ---- binding

    def bind_name(self, key: str, origins: OriginSet) -> None:
        if origins:
            self.env[key] = origins
        else:
            self.env.pop(key, None)
        if self.no_grad:
            self.nograd_bound.add(key)

    def assign(self, target: ast.expr, value_node: Optional[ast.expr], value: OriginSet) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value_node, (ast.Tuple, ast.List)) and len(value_node.elts) == len(target.elts) and \
                    not any(isinstance(e, ast.Starred) for e in target.elts + value_node.elts):
                # a, b = x.squeeze(0), y: values were evaluated as part of the tuple; re-evaluate per element
                for t, v in zip(target.elts, value_node.elts):
                    self.assign(t, v, self.eval_quiet(v))
                return
            for i, elt in enumerate(target.elts):
                if isinstance(elt, ast.Starred):
                    self.assign(elt.value, None, _cap(o for o in value if o.is_container))
                else:
                    self.assign(elt, None, self.element_of(value, f"[{i}]", elt.lineno))
            return
        if isinstance(target, ast.Starred):
            self.assign(target.value, None, value)
            return
        if isinstance(target, ast.Subscript):
            base = self.eval(target.value)
            self.eval(target.slice)
            if not _is_str_constant(target.slice):  # x["key"] = v: a mapping, not a tensor
                self.report(target, WriteKind.SUBSCRIPT, "item assignment", target.value, base)
            key = _key(target)
            if key is not None and not any(o.is_tensor for o in base):
                self.bind_name(key, value)  # output["logits"] = ... on a dict-like model output
            return
        key = dotted_name(target)
        if key is not None:
            self.bind_name(key, value)
        else:
            self.eval(target)

    def bind_iter(self, target: ast.expr, iterable: ast.expr) -> None:
        """Bind a ``for``/comprehension target to the elements of ``iterable``."""
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.args:
            fname = iterable.func.id
            if fname == "enumerate":
                for extra in iterable.args[1:] + [k.value for k in iterable.keywords]:
                    self.eval(extra)
                if isinstance(target, ast.Tuple) and len(target.elts) == 2:
                    self.assign(target.elts[0], None, EMPTY)
                    self.bind_iter(target.elts[1], iterable.args[0])
                else:
                    self.eval(iterable.args[0])
                    self.assign(target, None, EMPTY)
                return
            if fname == "zip" and isinstance(target, ast.Tuple) and len(target.elts) == len(iterable.args):
                for t, it in zip(target.elts, iterable.args):
                    self.bind_iter(t, it)
                return
            if fname in ("reversed", "list", "tuple") and len(iterable.args) == 1:
                self.bind_iter(target, iterable.args[0])
                return
        if isinstance(iterable, (ast.List, ast.Tuple, ast.Set)):
            # for s in [a, b]: s is a or b itself
            elements: Set[Origin] = set()
            for elt in iterable.elts:
                elements |= self.eval(elt)
            self.assign(target, None, _cap(elements))
            return
        origins = self.eval(iterable)
        self.assign(target, None, self.element_of(origins, "for ... in", getattr(target, "lineno", 0)))

    def element_of(self, origins: OriginSet, text: str, line: int) -> OriginSet:
        """What one element (unpacked, iterated) of a value with ``origins`` holds."""
        out = []
        for o in origins:
            if o.root is RootKind.MODEL_OUTPUT_OBJECT and not o.steps:
                # loss, logits = model(x): each element may be a tensor, a dict or a number
                out.append(Origin(RootKind.MODEL_OUTPUT, f"{o.root_text}{text if text.startswith('[') else '[...]'}",
                                  line, root_no_grad=o.root_no_grad or self.no_grad, certain_tensor=False))
            else:
                out.append(o.extend(Step(StepKind.ELEMENT, text if text.startswith("[") else "iteration", line, self.no_grad)))
        return _cap(out)

    # ---- expressions

    def eval_quiet(self, node: ast.expr) -> OriginSet:
        """Evaluate an expression already evaluated once (no findings, no bindings)."""
        saved = (self.sink, dict(self.env), set(self.nograd_bound))
        self.sink = {}
        try:
            return self.eval(node)
        finally:
            self.sink, self.env, self.nograd_bound = saved

    def eval(self, node: Optional[ast.AST]) -> OriginSet:
        if node is None:
            return EMPTY
        handler = _handler(type(self), "eval_", type(node))
        if handler is not None:
            return handler(self, node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.eval(child)
            elif isinstance(child, ast.keyword):
                self.eval(child.value)
        return EMPTY

    def eval_Constant(self, node: ast.Constant) -> OriginSet:
        return EMPTY

    def eval_BinOp(self, node: ast.BinOp) -> OriginSet:
        # a + b + c + ... nests to the left: walk it as a loop, in evaluation order
        rights = []
        while isinstance(node, ast.BinOp):
            rights.append(node.right)
            node = node.left
        self.eval(node)
        for right in reversed(rights):
            self.eval(right)
        return EMPTY  # an out-of-place result: a fresh tensor

    def eval_UnaryOp(self, node: ast.UnaryOp) -> OriginSet:
        self.eval(node.operand)
        return EMPTY

    def eval_Compare(self, node: ast.Compare) -> OriginSet:
        self.eval(node.left)
        for comparator in node.comparators:
            self.eval(comparator)
        return EMPTY

    def eval_Tuple(self, node) -> OriginSet:
        for elt in node.elts:
            self.eval(elt)
        return EMPTY

    eval_List = eval_Set = eval_Tuple

    def eval_Dict(self, node: ast.Dict) -> OriginSet:
        for part in node.keys + node.values:
            if part is not None:
                self.eval(part)
        return EMPTY

    def eval_Name(self, node: ast.Name) -> OriginSet:
        return self.env.get(node.id, EMPTY)

    def eval_Attribute(self, node: ast.Attribute) -> OriginSet:
        key = dotted_name(node)
        if key is not None and key in self.env:
            return self.env[key]
        recv = self.eval(node.value)
        attr = node.attr
        if attr in ops.VIEW_ATTRIBUTES:
            return self.view_of(node.value, recv, StepKind.VIEW, f".{attr}", node.lineno)
        if attr in self.settings.model_output_fields and self._is_model_output_receiver(node.value, recv, attr):
            return frozenset({Origin(RootKind.MODEL_OUTPUT, _short(node), node.lineno, root_no_grad=self.no_grad)})
        return EMPTY

    def _is_model_output_receiver(self, recv_node: ast.expr, recv: OriginSet, attr: str) -> bool:
        if any(o.root is RootKind.MODEL_OUTPUT_OBJECT and not o.steps for o in recv):
            return True
        name = _last_name(recv_node)
        if name in self.settings.model_output_names:
            return True
        # `.logits` of any name is a model output, but not of an arbitrary call (Categorical(logits=x).logits)
        return attr == "logits" and isinstance(recv_node, (ast.Name, ast.Attribute, ast.Subscript)) \
            and not (isinstance(recv_node, ast.Name) and recv_node.id in ("self", "cls"))

    def eval_Subscript(self, node: ast.Subscript) -> OriginSet:
        key = _key(node)
        if key is not None and key in self.env:
            return self.env[key]
        recv = self.eval(node.value)
        self.eval(node.slice)
        index = node.slice
        if not recv:
            if self.no_grad and _is_basic_index(index):
                return self.view_of(node.value, recv, StepKind.VIEW, _index_text(index), node.lineno)
            return EMPTY
        out = []
        text = _index_text(index)
        for o in recv:
            if o.root is RootKind.MODEL_OUTPUT_OBJECT and not o.steps:
                # outputs["logits"] is a tensor; outputs[0] usually is, but may be a dict or a number
                if isinstance(index, ast.Constant) and index.value in self.settings.model_output_fields:
                    out.append(Origin(RootKind.MODEL_OUTPUT, _short(node), node.lineno, root_no_grad=self.no_grad))
                elif isinstance(index, ast.Constant) and isinstance(index.value, int):
                    out.append(Origin(RootKind.MODEL_OUTPUT, _short(node), node.lineno, root_no_grad=self.no_grad,
                                      certain_tensor=False))
            elif o.is_container:
                out.append(o.extend(Step(StepKind.ELEMENT, text, node.lineno, self.no_grad)))
            elif _is_basic_index(index):
                out.append(o.extend(Step(StepKind.VIEW, text, node.lineno, self.no_grad)))
        return _cap(out)

    def eval_NamedExpr(self, node: ast.NamedExpr) -> OriginSet:
        value = self.eval(node.value)
        self.bind_name(node.target.id, value)
        return value

    def eval_IfExp(self, node: ast.IfExp) -> OriginSet:
        self.eval(node.test)
        return _cap(self.eval(node.body) | self.eval(node.orelse))

    def eval_BoolOp(self, node: ast.BoolOp) -> OriginSet:
        out: Set[Origin] = set()
        for v in node.values:
            out |= self.eval(v)
        return _cap(out)

    def eval_Starred(self, node: ast.Starred) -> OriginSet:
        return self.eval(node.value)

    def eval_Await(self, node: ast.Await) -> OriginSet:
        return self.eval(node.value)

    def eval_Lambda(self, node: ast.Lambda) -> OriginSet:
        scope = self.child_scope(node.args, self.no_grad, None)
        scope.eval(node.body)
        return EMPTY

    def _comprehension(self, node, parts: Sequence[ast.expr]) -> OriginSet:
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

    def eval_ListComp(self, node) -> OriginSet:
        return self._comprehension(node, [node.elt])

    eval_SetComp = eval_GeneratorExp = eval_ListComp

    def eval_DictComp(self, node) -> OriginSet:
        return self._comprehension(node, [node.key, node.value])

    # ---- calls

    def eval_Call(self, node: ast.Call) -> OriginSet:
        func = node.func
        # evaluate arguments first (their own writes come first, as at run time)
        args = [self.eval(a) for a in node.args]
        kwargs = {k.arg: self.eval(k.value) for k in node.keywords}

        if isinstance(func, ast.Attribute):
            ns = dotted_name(func.value)
            if ns in _TENSOR_CLASS and node.args:
                # torch.Tensor.div_(x, t) is x.div_(t)
                return self.method_call(node, func.attr, node.args[0], args[0])
            if ns in _TORCH_NAMESPACES:
                return self.function_call(node, func.attr, args, kwargs)
            recv = self.eval(func.value)
            inplace_module = self.inplace_modules.get(dotted_name(func) or "")
            if inplace_module and node.args:
                self.report(node, WriteKind.INPLACE_KWARG, f"`{inplace_module}(inplace=True)`", node.args[0], args[0])
                return args[0]
            return self.method_call(node, func.attr, func.value, recv)

        if isinstance(func, ast.Call):
            self.eval(func)
            module = _inplace_module(func)
            if module and node.args:
                self.report(node, WriteKind.INPLACE_KWARG, f"`{module}(inplace=True)`", node.args[0], args[0])
                return args[0]
            return EMPTY

        if isinstance(func, ast.Name):
            if func.id == "getattr" and len(node.args) == 2 and _is_str_constant(node.args[1]):
                # getattr(out, "logits") is out.logits
                attribute = ast.copy_location(ast.Attribute(value=node.args[0], attr=node.args[1].value,
                                                            ctx=ast.Load()), node)
                ast.fix_missing_locations(attribute)
                return self.eval_Attribute(attribute)
            module = self.inplace_modules.get(func.id)
            if module and node.args:
                self.report(node, WriteKind.INPLACE_KWARG, f"`{module}(inplace=True)`", node.args[0], args[0])
                return args[0]
            if self.settings.is_model_call_name(func.id):
                return frozenset({Origin(RootKind.MODEL_OUTPUT_OBJECT, f"{func.id}(...)", node.lineno,
                                         root_no_grad=self.no_grad)})
            return EMPTY
        self.eval(func)
        return EMPTY

    def function_call(self, node: ast.Call, name: str, args: List[OriginSet], kwargs: Dict[str, OriginSet]) -> OriginSet:
        """``torch.<name>(...)`` / ``F.<name>(...)``."""
        qual = ast.unparse(node.func)
        out_node = _kw(node, "out")
        if out_node is not None and not isinstance(out_node, (ast.Tuple, ast.List)):
            self.report(node, WriteKind.OUT_KWARG, f"`{qual}(..., out=...)`", out_node, kwargs.get("out", EMPTY))
            return kwargs.get("out", EMPTY)
        first = node.args[0] if node.args else _kw(node, "input")
        first_origins = args[0] if node.args else kwargs.get("input", EMPTY)
        if first is None:
            return EMPTY
        functional = dotted_name(node.func.value) in _FUNCTIONAL_NAMESPACES
        if name in (ops.FUNCTIONAL_INPLACE_FUNCTIONS if functional else ops.TORCH_INPLACE_FUNCTIONS):
            self.report(node, WriteKind.FUNCTION, f"`{qual}`", first, first_origins,
                        f"{'F' if functional else 'torch'}.{name}")
            return first_origins
        if name in ops.INPLACE_KWARG_FUNCTIONS and _inplace_flag(node, name):
            position = ops.INPLACE_POSITION.get(name, -1)
            training = _kw(node, "training")
            if training is None and name.startswith(("dropout", "alpha_dropout", "feature_alpha_dropout")) \
                    and len(node.args) > position - 1 >= 0:
                training = node.args[position - 1]
            if name.startswith(("dropout", "alpha_dropout", "feature_alpha_dropout")) and _is_false(training):
                return first_origins  # F.dropout(training=False, inplace=True) writes nothing
            self.report(node, WriteKind.INPLACE_KWARG, f"`{qual}(..., inplace=True)`", first, first_origins)
            return first_origins
        if name in ops.SAVES_OUTPUT and not _inplace_flag(node, name):
            return frozenset({Origin(RootKind.SAVED_OUTPUT, _short(node), node.lineno, root_no_grad=self.no_grad)})
        if name in ops.FACTORY_FUNCTIONS:
            if _is_true(_kw(node, "requires_grad")):
                return frozenset({Origin(RootKind.TENSOR, _short(node), node.lineno, root_no_grad=self.no_grad)})
            return frozenset({Origin(RootKind.FRESH, _short(node), node.lineno, root_no_grad=True)})
        if name in ops.VIEW_METHODS or name in ops.MAY_ALIAS_METHODS or name in ops.MULTI_VIEW_METHODS \
                or name in ops.EXPAND_METHODS:
            return self.method_call(node, name, first, first_origins, functional=True)
        return EMPTY

    def method_call(self, node: ast.Call, name: str, recv_node: ast.expr, recv: OriginSet,
                    functional: bool = False) -> OriginSet:
        """``recv.<name>(...)``; ``functional`` for ``torch.<name>(recv, ...)`` (the receiver is surely a tensor)."""
        line = node.lineno
        if name in ops.TENSOR_INPLACE_METHODS:
            self.report(node, WriteKind.METHOD, f"`{name}`", recv_node, recv, name)
            return _cap(o.extend(Step(StepKind.ALIAS, f".{name}()", line)) for o in recv if o.is_tensor)
        if name in ops.VIEW_METHODS:
            return self.view_of(recv_node, recv, StepKind.VIEW, _call_text(node, name), line)
        if name in ops.MAY_ALIAS_METHODS:
            if name == "contiguous":  # an expanded (stride-0) tensor is never contiguous: this copies it
                recv = _cap(o for o in recv if not o.has(StepKind.EXPAND))
            return self.view_of(recv_node, recv, StepKind.MAY_ALIAS, _call_text(node, name), line)
        if name in ops.EXPAND_METHODS:
            return self.view_of(recv_node, recv, StepKind.EXPAND, _call_text(node, name), line, any_base=True)
        if name in ops.MULTI_VIEW_METHODS:
            # str.split(",") and str.split() are not tensor splits
            tensor_like = recv or name != "split" or functional or _tensor_split_args(node)
            if not tensor_like:
                return EMPTY
            return self.view_of(recv_node, recv, StepKind.MULTI_VIEW, _call_text(node, name), line, any_base=True)
        if name in ops.SAVES_OUTPUT:
            return frozenset({Origin(RootKind.SAVED_OUTPUT, _short(node), line, root_no_grad=self.no_grad)})
        if name in ops.DTENSOR_LOCAL_METHODS:
            return frozenset({Origin(RootKind.CUSTOM_FUNCTION, _short(node), line, root_no_grad=self.no_grad)})
        if name == "apply" and (_last_name(recv_node) or "a").lstrip("_")[:1].isupper():
            return frozenset({Origin(RootKind.CUSTOM_FUNCTION, f"{_short(recv_node)}.apply(...)", line,
                                     root_no_grad=self.no_grad)})
        if name == "forward" and self.settings.is_model_call_name(_last_name(recv_node) or ""):
            return frozenset({Origin(RootKind.MODEL_OUTPUT_OBJECT, f"{_short(recv_node)}.forward(...)", line,
                                     root_no_grad=self.no_grad)})
        if self.settings.is_model_call_name(name) and not recv:
            return frozenset({Origin(RootKind.MODEL_OUTPUT_OBJECT, f"{_short(node.func)}(...)", line,
                                     root_no_grad=self.no_grad)})
        return EMPTY

    def view_of(self, recv_node: ast.expr, recv: OriginSet, kind: StepKind, text: str, line: int,
                any_base: bool = False) -> OriginSet:
        """Extend ``recv``'s origins by a view step; views of untracked bases start a chain when it matters."""
        step = Step(kind, text, line, self.no_grad)
        if recv:
            return _cap(o.extend(step) for o in recv if o.is_tensor or kind is not StepKind.MAY_ALIAS)
        if any_base or (self.no_grad and kind is StepKind.VIEW):
            key = dotted_name(recv_node)
            made_in_no_grad = self.no_grad and (key is None or key in self.nograd_bound)
            certain = kind is not StepKind.MULTI_VIEW  # expand/broadcast_to and view ops exist on tensors only
            root = Origin(RootKind.TENSOR, _short(recv_node), line, root_no_grad=made_in_no_grad, certain_tensor=certain)
            return frozenset({root.extend(step)})
        return EMPTY

    # ---- reporting

    def report(self, node: ast.AST, kind: WriteKind, op: str, target: ast.expr, origins: OriginSet,
               op_name: Optional[str] = None) -> None:
        """Report the write at ``node`` if ``target``'s origins match a rule; ``op_name`` is the in-place
        method it amounts to (``div_`` for ``x.div_(t)`` and ``x /= t``), for fix planning."""
        tensors = [o for o in origins if o.is_tensor]
        if kind in (WriteKind.AUGMENTED, WriteKind.SUBSCRIPT):
            tensors = [o for o in tensors if o.certain_tensor]
        if not tensors:
            return
        write = Write(op, op_name, kind, _short(target), _point_index(node, kind))
        for rule in PRIORITY:
            if self.no_grad and not (rule.without_grad or self.settings.report_in_no_grad):
                continue
            matching = [o for o in tensors if rule.applies(o, write)]
            if not matching:
                continue
            origin = min(matching, key=_origin_key)
            key = (node.lineno, node.col_offset)
            if key not in self.sink:
                self.sink[key] = Finding(
                    code=rule.code, line=node.lineno, col=node.col_offset,
                    end_line=node.end_lineno or node.lineno, end_col=node.end_col_offset or node.col_offset,
                    message=rule.message(write, origin), op=op, write_kind=kind,
                    target=write.target, origin=origin, fix=self.plan_fix(node, kind, target, op_name, list(origins)),
                    related=origin.related(),
                )
            return

    def plan_fix(self, node: ast.AST, kind: WriteKind, target: ast.expr, op_name: Optional[str],
                 origins: Sequence[Origin]):
        if self.func is None:
            return None  # class bodies
        facts = self.facts_cache.get(id(self.func))
        if facts is None:
            facts = self.facts_cache[id(self.func)] = fixplan.FunctionFacts(self.func)
        stmt = self.stmt_stack[-1] if self.stmt_stack else None
        return fixplan.plan(facts, self.params, kind, node, target, op_name, origins, self.env, stmt,
                            self.loop_stack)


@functools.lru_cache(maxsize=None)
def _handler(cls: type, prefix: str, node_type: type):
    """The ``eval_X``/``stmt_X`` method for a node type (cached: dispatch is the hot path)."""
    return getattr(cls, prefix + node_type.__name__, None)


def _point_index(node: ast.AST, kind: WriteKind) -> bool:
    """Item assignment whose index has no slice and no ``...`` (``x[0] = v``, ``x[mask] += v``)."""
    if kind is not WriteKind.SUBSCRIPT:
        return False
    sub = node if isinstance(node, ast.Subscript) else getattr(node, "target", None)
    if not isinstance(sub, ast.Subscript):
        return False
    parts = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
    return not any(isinstance(e, ast.Slice) or (isinstance(e, ast.Constant) and e.value is Ellipsis) for e in parts)


def _arg_line(args: ast.arguments, name: str) -> int:
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        if a.arg == name:
            return a.lineno
    return 0


def _tensor_split_args(node: ast.Call) -> bool:
    """``x.split(3)``, ``x.split([2, 1], dim=-1)``: tensor-style arguments, not ``str.split(sep)``."""
    if _kw(node, "dim") is not None or _kw(node, "split_size") is not None or _kw(node, "split_size_or_sections") is not None:
        return True
    if not node.args:
        return False
    first = node.args[0]
    if isinstance(first, ast.Constant):
        return isinstance(first.value, int) and not isinstance(first.value, bool)
    return isinstance(first, (ast.List, ast.Tuple, ast.BinOp))


_AUG_OPS = {getattr(ast, name): symbol for name, symbol in ops.AST_AUGMENTED.items()}  # one operator table (ops.OPERATORS)
