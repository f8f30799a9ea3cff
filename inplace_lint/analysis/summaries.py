"""Function summaries: what a function does to its parameters and returns, in terms of its parameters.

A summary is computed by walking the function once with each parameter bound to a
*placeholder* origin (``Origin(TENSOR, "\\0param:i")``); whatever reaches a return
or an in-place write from a placeholder is recorded relative to parameter ``i``.
Callers substitute their arguments' origins for the placeholders (Pysa-style
per-function summaries). Everything here is a frozen value, so summaries can be
compared (for the fixpoint) and pickled (for the on-disk cache).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Dict, FrozenSet, List, Optional, Tuple

from ..findings import SAVED_STEPS, Finding, Fix, Origin, RootKind, Step, StepKind, WriteKind

OriginSet = FrozenSet[Origin]
PARAM_PREFIX = "\x00param:"


def parameters(args) -> list:
    """A ``def``'s parameters (``ast.arg``) in Python's order, which is the order of their indexes: positional-only,
    positional, ``*args``, keyword-only, ``**kwargs``."""
    return args.posonlyargs + args.args + ([args.vararg] if args.vararg else []) + args.kwonlyargs + (
        [args.kwarg] if args.kwarg else [])


def parameter_names(args) -> Tuple[str, ...]:
    """:func:`parameters`' names, ``*args`` and ``**kwargs`` marked with their stars: a call binds no argument to
    them by position or by keyword (``f(a, b, c)`` gives ``b`` and ``c`` to ``*rest`` as a tuple's items, and
    never to a keyword-only parameter after it)."""
    return tuple(("*" if a is args.vararg else "**" if a is args.kwarg else "") + a.arg for a in parameters(args))


def param_origin(index: int, line: int) -> Origin:
    """The placeholder for parameter ``index`` (position in the def's parameter list)."""
    return Origin(RootKind.TENSOR, f"{PARAM_PREFIX}{index}", line, certain_tensor=False)


FUNC_PREFIX = "\x00func:"


def function_ref(qual: str, bound: int, line: int) -> Origin:
    """A name bound to an in-project function (``func = _single_tensor_adam``): called later, it calls that."""
    return Origin(RootKind.FRESH, f"{FUNC_PREFIX}{bound}:{qual}", line, root_no_grad=True)


#: the qualified name of a returned callable the analysis does not follow but that may return its argument
#: (``lambda x: x``, ``functools.partial(f)``, ``torch.Tensor.requires_grad_``): calling it passes its arguments through
PASS_THROUGH = "<pass-through>"


def function_of(origin: Origin) -> Optional[Tuple[str, int]]:
    text = origin.root_text
    if text.startswith(FUNC_PREFIX):
        bound, _, qual = text[len(FUNC_PREFIX):].partition(":")
        return qual, int(bound)
    return None


def no_grad_value(origins) -> bool:
    """Every origin is known and needs no grad (a factory's tensor, arithmetic on one, made under no_grad)."""
    return bool(origins) and all(o.root_no_grad and param_index(o) is None and function_of(o) is None
                                 for o in origins)


def derived_any(made: frozenset, held: frozenset) -> bool:
    """Some origin in ``made`` is one in ``held`` or a view of it (``pos = pos[:, :k]``, ``ts = ts.float()``, which
    may return ``ts`` itself): the arm bound no copy, so what it holds still reaches the other arm's tensor."""
    return any(m.derived_from(h) for m in made for h in held)


def param_index(origin: Origin) -> Optional[int]:
    text = origin.root_text
    if text.startswith(PARAM_PREFIX):
        return int(text[len(PARAM_PREFIX):])
    return None


def located_steps(steps: Tuple[Step, ...], path: str) -> Tuple[Step, ...]:
    """``steps`` with the file of each that does not name one yet: ``path``."""
    if all(s.path is not None for s in steps):
        return steps
    return tuple(s if s.path is not None else replace(s, path=path) for s in steps)


def located(origin: Origin, path: str) -> Origin:
    """``origin`` with its root and steps in files named: those not named yet are in ``path``. Lines
    travel from file to file (a callee's view steps in its summary, a caller's argument in a call
    site); each names its file so a related location never points at the line of another file."""
    if origin.path is not None and all(s.path is not None for s in origin.steps):
        return origin
    return replace(origin, path=origin.path or path, steps=located_steps(origin.steps, path))


def element_kind(origin: Origin) -> StepKind:
    """The step one element of ``origin`` adds: a plain view of a tuple of slicing views (``tensor_split``),
    else an element (of a multi-output view op's result, or a row of a tensor iterated)."""
    return StepKind.VIEW if origin.steps and origin.steps[-1].kind is StepKind.SLICED_VIEWS else StepKind.ELEMENT


def is_tuple_item(origin: Origin) -> bool:
    """``origin`` is held at one position of a tuple or list literal (its last step is a tuple item)."""
    return bool(origin.steps) and origin.steps[-1].kind is StepKind.TUPLE_ITEM


def tuple_item_at(origin: Origin, position: Optional[int]) -> Optional[Origin]:
    """The tensor a tuple item holds, taken at ``position`` of the tuple (None: any position, as iterating
    or an index we cannot read takes it); None when it sits at another position."""
    held_at = origin.steps[-1].text.strip("()")
    if position is not None and held_at != "*" and int(held_at) != position:
        return None  # (`*` is any position: the items of `*args`)
    return replace(origin, steps=origin.steps[:-1])


def ran_without_grad(steps: Tuple[Step, ...]) -> Tuple[Step, ...]:
    """A callee's steps on its parameter when the call itself runs with grad off (``with torch.no_grad():
    _normalize(x)``): every view made without grad, and no op saved anything (a saved-input step is only
    recorded for an op that ran with grad on)."""
    return tuple(s if s.no_grad else replace(s, no_grad=True) for s in steps if s.kind not in SAVED_STEPS)


def plain_tensor(origin: Origin) -> bool:
    """``origin`` is surely an exact ``torch.Tensor``, no subclass: what a torch factory made (``torch.zeros``),
    or a view of it (a torch op on a subclass instance returns the subclass, a factory cannot)."""
    if origin.root is not RootKind.FRESH or param_index(origin) is not None or not origin.root_text.startswith("torch."):
        return False
    # (`torch.zeros_like(sub)`, `torch.as_tensor(sub)` of a subclass instance return the subclass)
    return origin.root_text[len("torch."):].split("(", 1)[0] in _PLAIN_FACTORIES


#: torch factories that take no tensor argument: what they return is an exact ``torch.Tensor``
_PLAIN_FACTORIES = frozenset({"zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange",
                              "linspace", "logspace", "eye", "empty_strided", "tril_indices", "triu_indices"})


def with_steps(origin: Origin, steps: Tuple[Step, ...]) -> Origin:
    """``origin`` followed by ``steps`` (what a callee did to its parameter). A tuple literal the caller passed
    (``[mel, post, gate]``), unpacked or indexed by the callee, gives back the element at that position; at
    another position it stays a tuple item, which no rule takes for a tensor."""
    for step in steps:
        if step.kind is StepKind.NOT_TENSOR and origin.is_container and not origin.has(StepKind.NOT_TENSOR):
            continue  # the container the caller passed is what reached the callee's non-tensor arm
        if step.kind is StepKind.SUBCLASS_INSTANCE:
            if plain_tensor(origin):  # a factory's plain tensor never reaches the callee's subclass arm
                origin = origin.extend(Step(StepKind.NOT_TENSOR, step.text, step.line, path=step.path))
            continue
        if is_tuple_item(origin) and step.kind in (StepKind.ELEMENT, StepKind.VIEW):
            taken = step.text[1:-1] if step.text.startswith("[") and step.text.endswith("]") else None
            if step.text != "iteration" and (taken is None or not taken.isdigit()):
                return origin
            item = tuple_item_at(origin, None if step.text == "iteration" else int(taken))
            if item is None:
                return origin
            origin = item
            continue
        origin = origin.extend(step)
    return origin


@dataclass(frozen=True)
class ParamWrite:
    """An in-place write, inside function ``func``, to parameter ``index`` or a view of it (``steps``)."""

    func: str
    index: int
    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    op: str
    kind: WriteKind
    steps: Tuple[Step, ...]
    target: str
    no_grad: bool
    #: the written parameter (or a view of it) is returned or read after the write inside the function:
    #: the write is the function's own business, reported in the function (naming the call site); else
    #: the function is a mutating helper and the write is reported at each call
    kept: bool = False
    #: the helper whose parameter this write reaches, for writes that pass through a call: (name, path,
    #: line, col) of the write
    via: Optional[Tuple[str, str, int, int]] = None
    #: the in-place method the write amounts to, and whether it is an item write without a slice
    #: (:class:`inplace_lint.rules.Write`)
    op_name: Optional[str] = None
    point_index: bool = False
    #: parameters whose default value skips the write (``if temperature != 1.0: logits.div_(temperature)``
    #: with ``temperature=1.0``): a call that does not pass them never reaches it
    guard: Tuple[int, ...] = ()
    #: the run-time condition under which the write happens (:attr:`inplace_lint.rules.Write.condition`)
    condition: Optional[str] = None
    #: the conditions on the function's parameters on the path to the write (:mod:`.conditions`): a call whose
    #: constant arguments make one false never reaches it (``strategy='peak'`` where the write is under
    #: ``strategy == 'rms'``)
    when: Tuple[tuple, ...] = ()
    fix: Optional[Fix] = field(default=None, compare=False)
    #: the fix when every caller is checked (see ``CallSite.unread``)
    fix_if_callers: Optional[Fix] = field(default=None, compare=False)
    #: the written parameter is known to be a tensor (annotated ``Tensor``): what a caller passes for it is
    #: one, even a model call's result known only as an object (``input += adj`` in a loss's ``forward``)
    on_tensor: bool = False
    #: the write is a call of a layer built with ``inplace=True`` (its class, ``nn.ReLU``): a caller that reads what
    #: it passed after the call sees the layer's output (IPV007)
    layer: Optional[str] = None
    #: parameters an ``out=`` call consumed on every path to the write (:meth:`.dataflow.Scope.out_consumed`):
    #: a caller whose argument for one requires grad whenever the write's hazard holds never reaches the write
    #: (the call raised in the forward)
    past_out: Tuple[int, ...] = ()
    #: an item assignment whose index is surely a string (``d[f"..."] = v``, ``d[key] = v`` with ``key`` made by a
    #: function returning ``"{}.{}".format(...)``: :mod:`.strings`), on a parameter not known as a tensor: a
    #: mapping, which no tensor rule applies to (fairseq's ``incremental_state[full_key] = v``)
    keyed: bool = False
    #: an augmented assignment on the parameter itself, whose default is a number or a bool (``enable_time &=
    #: is_video`` with ``enable_time=True``): a rebinding unless a caller passes what is known to be a tensor
    number: bool = False


@dataclass(frozen=True)
class CallSite:
    """A call of an in-project function, as the caller saw it."""

    caller: str
    callee: str
    path: str
    line: int
    col: int
    #: (parameter index, origins of the argument bound to it), placeholders of the caller's own
    #: parameters included
    args: Tuple[Tuple[int, OriginSet], ...]
    no_grad: bool
    #: a callable handed to a model call (``model(x, logits_processor=f)``): it receives the output
    callback: bool = False
    #: parameter indexes whose argument is a name the caller never reads (nor lets escape) after the call
    unread: FrozenSet[int] = frozenset()
    #: parameter indexes the call passes an argument to (None: unknown, e.g. ``*args``)
    bound: Optional[FrozenSet[int]] = None
    #: (parameter index, value) for each argument that is a literal (``no_grad=True``, ``strategy='peak'``)
    constants: Tuple[Tuple[int, object], ...] = ()
    #: (parameter index, index of the caller's own parameter passed for it, that one's literal default as
    #: ``(value,)`` or ``()``): ``no_grad=no_grad`` hands the callee's condition on to the caller's callers
    passed: Tuple[Tuple[int, int, tuple], ...] = ()
    #: parameter indexes whose argument is true only with grad off (``inplace_safe=inplace_safe`` with
    #: ``inplace_safe = not torch.is_grad_enabled()``: :func:`.grad.is_grad_off_flag`)
    grad_off_args: FrozenSet[int] = frozenset()
    #: (index, literal default) of the caller's own parameters the call runs only when true (``if
    #: inplace_safe: self.block(z)``: :func:`.conditions.needs_true`)
    guards: Tuple[Tuple[int, tuple], ...] = ()
    #: for a call of a submodule built with constant arguments (``self.conv2 = ConvBlock(c, c, activation=None)``):
    #: what it was built with, one entry per build (``(("=activation", (None,)), ("#0", ())),``;
    #: :func:`.init_args.builder_facts`), which decides the conditions on its ``__init__`` flags
    #: (:data:`.conditions.INIT`)
    built: Optional[Tuple[Tuple[Tuple[str, tuple], ...], ...]] = None


@dataclass(frozen=True)
class FunctionSummary:
    qual: str
    params: Tuple[str, ...]
    #: origins the function may return (placeholders for "parameter i or a view of it")
    returns: OriginSet = frozenset()
    writes: Tuple[ParamWrite, ...] = ()
    #: decorated with a grad-off decorator, a custom Function's forward/backward, an optimizer's method
    declared_no_grad: bool = False
    #: parameters whose mutation a finding's fix would hide from the caller (fix safety needs callers)
    observed: FrozenSet[int] = frozenset()
    #: a ``@staticmethod`` (no bound first argument)
    static: bool = False
    #: why what the function returns may also be held elsewhere after the call (a cache, ``self.last``,
    #: a module-level list, a decorator that replaces the function); "" when nothing else keeps it
    kept: str = ""
    #: a decorator that replaces or registers the function: it may be called where no call site shows
    decorated: str = ""
    #: returned origins that only some paths give: (origin, the condition tuples of those paths), each
    #: condition (parameter index, truth needed, truth of its literal default or None). A call whose constant
    #: arguments (or the defaults it leaves) contradict every path does not get that origin
    returns_when: Tuple[Tuple[Origin, Tuple[tuple, ...]], ...] = ()
    #: parameters an op or a layer in the function read for the gradient of its other input that requires grad
    #: (``self.fc(x)``): (parameter index, what read it, its line); the caller's argument is then saved too
    saves: Tuple[Tuple[int, str, int], ...] = ()
    #: parameters every read of which ends without a gradient (:func:`.consumers.param_reads`), or in a return
    #: (``flows_out``): what a caller passes for them reaches no backward through this function
    gradless: FrozenSet[int] = frozenset()
    #: of ``gradless``, those a return may hand back (the caller follows the call's result)
    flows_out: FrozenSet[int] = frozenset()
    #: parameters a return that nothing tracks computes a new tensor from, by torch ops, tensor methods and
    #: arithmetic alone (``return (x.relu() + eps).pow(p)``): it requires grad when what a call passes for one
    #: of them does (:meth:`.param_guesses.ParamGuessesMixin.note_computed_return`)
    computed: FrozenSet[int] = frozenset()
    #: every return gives what needs no grad (an index, a factory's tensor, arithmetic under ``torch.no_grad()``,
    #: a number, None): what a call returns needs none, whatever it is given
    no_grad_result: bool = False

    def digest(self) -> str:
        """Stable across processes (for the cache): what callers read from this summary."""
        try:
            return self.__dict__["_digest"]
        except KeyError:
            value = self._compute_digest()
            object.__setattr__(self, "_digest", value)  # a frozen value: computed once
            return value

    def _compute_digest(self) -> str:
        if not self.returns and not self.writes and not self.observed and not self.kept and not self.decorated \
                and not self.saves and not self.gradless and not self.computed \
                and not self.no_grad_result:
            return ""
        parts = sorted(repr(o) for o in self.returns)
        parts += [repr(w) for w in self.returns_when]
        parts += sorted(repr((w.index, w.line, w.col, w.kind.value, w.steps, w.kept, w.op, w.no_grad, w.condition))
                        for w in self.writes)
        parts.append(repr(sorted(self.observed)))
        parts.append(repr((self.kept, self.decorated)))
        if self.saves:
            parts.append(repr(self.saves))
        if self.gradless:
            parts.append(repr((sorted(self.gradless), sorted(self.flows_out))))
        if self.computed or self.no_grad_result:
            parts.append(repr(("computed", sorted(self.computed), self.no_grad_result)))
        return hashlib.sha1("\n".join(parts).encode()).hexdigest()


@dataclass
class LocalFinding:
    """A finding made while walking its own file, before project-wide filtering."""

    finding: Finding
    func: str
    #: with grad off the rule would not apply (it is dropped where every caller runs with grad off)
    grad_rule: bool
    #: parameters whose callers must be checked for the safe fix below to apply
    observed: FrozenSet[int] = frozenset()
    fix_if_callers: Optional[Fix] = None
    #: the write sits in ``with torch.no_grad() if flag else nullcontext():``: (parameter index, truth that
    #: turns grad off, truth of its literal default or None); dropped where every call makes it so
    grad_cond: Optional[tuple] = None
    #: the rule applies only through an output saved for backward whose input is computed from these
    #: parameters (unknown whether any requires grad): kept only where an in-project call passes something that
    #: requires grad for one of them (``torch.norm(pred - target)`` needs either to, not the first)
    guess_params: Optional[Tuple[int, ...]] = None
    #: every origin that makes the rule apply is a guess from parameter ``param_rooted`` itself (its
    #: ``torch.Tensor`` annotation, or a view taken of it): where every caller is known, what they pass
    #: decides instead (:meth:`.project.Project.findings`)
    param_rooted: Optional[int] = None
    #: (index, literal default) of the function's parameters the write runs only when true (``if
    #: inplace_safe: z += ...``): dropped where one of them is true only with grad off at every call
    guards: Tuple[Tuple[int, tuple], ...] = ()


@dataclass
class ModuleIndex:
    """What the project needs to know about a module without walking function bodies."""

    module: str
    path: str
    is_package: bool = False
    imports: Dict[str, str] = field(default_factory=dict)
    functions: Dict[str, Tuple[str, ...]] = field(default_factory=dict)  # name -> params
    #: class name -> (qualified bases, method name -> (params, static))
    classes: Dict[str, Tuple[Tuple[str, ...], Dict[str, Tuple[Tuple[str, ...], bool]]]] = field(default_factory=dict)
    #: class name -> attribute -> the dotted name of the class ``__init__`` builds it from
    #: (``self.runner = ModelRunner(...)`` -> ``{"runner": "ModelRunner"}``)
    attributes: Dict[str, Dict[str, str]] = field(default_factory=dict)
    #: names this module uses as a value, not as the callee of a call (``HANDLERS = {"s": scale}``,
    #: ``self.fn = self._scale``, ``partial(scale, ...)``, ``getattr(m, "scale")``): a function named so
    #: may be called where no call site shows it, so its callers are never "all checked"
    #: (None until needed when the text was not at hand: computed from the tree then); one string,
    #: ``"\\nname\\nother\\n"`` (:func:`.refs.refs_text`), not a set: it is cheap to read from the cache
    value_refs: Optional[str] = None
    #: class name -> names of its ``@property`` / ``@cached_property`` getters (``self.name`` calls them)
    properties: Dict[str, FrozenSet[str]] = field(default_factory=dict)
    #: top-level functions that are pass-through decorators (:func:`.resolve.passes_through`): a function
    #: they decorate is still called, with the same arguments, by its callers
    wrappers: FrozenSet[str] = frozenset()
    #: of those, the ones that call it with grad off (``with torch.no_grad(): return f(*args, **kwargs)``): a
    #: function they decorate runs with grad off, as under ``@torch.no_grad()``
    grad_off_wrappers: FrozenSet[str] = frozenset()
    #: top-level classes whose body defines ``__torch_function__``, and ``class_facts.SUBCLASSING`` when the module
    #: makes tensor-subclass instances the index cannot name (:func:`.class_facts.torch_function_classes`)
    torch_function_classes: FrozenSet[str] = frozenset()
    #: groups (sorted tuples) of fields that a function making a model's output returns one tensor under
    #: (:func:`.class_facts.shared_output_fields`)
    shared_fields: Tuple[Tuple[str, ...], ...] = ()
    #: lines of the forward-hook registrations whose hook may keep the output it receives
    #: (:func:`.class_facts.output_hooks`)
    output_hooks: Tuple[int, ...] = ()
    #: names handed to ``torch.jit.script`` (``torch.jit.script(Net())``, ``torch.jit.script(fn)``):
    #: :func:`.class_facts.scripted_names`
    scripted: FrozenSet[str] = frozenset()
    #: top-level names bound to a literal dict, list or tuple whose items are all names (``UPDATES = {"adapt":
    #: _adapt, "const": _const}``) -> those names, qualified: a call ``UPDATES[kind](...)`` may run any of them
    #: (:func:`.resolve.function_tables`)
    tables: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    #: top-level functions whose every ``return`` gives a string (:func:`.strings.string_functions`): ``d[f(k)] = v``
    #: stores into a mapping
    string_functions: FrozenSet[str] = frozenset()


@dataclass
class FileResult:
    """Everything the project pass keeps per file (and caches by content hash)."""

    path: str
    module: str
    digest: str
    index: ModuleIndex
    functions: Dict[str, FunctionSummary] = field(default_factory=dict)
    calls: List[CallSite] = field(default_factory=list)
    findings: List[LocalFinding] = field(default_factory=list)
    #: summaries this file's walk read: qualified name -> digest seen ("" when absent or trivial)
    deps: Dict[str, str] = field(default_factory=dict)
    error: Optional[str] = None
