"""The interpreter of origins: walks a stdlib ``ast`` module, function by function.

Every surface (flake8 plugin, CLI, codemod, editor) gets its findings through
:mod:`.api` (one module) or :mod:`.project` (which runs this walk over every file of a
project); none of them decides anything on its own. The walk needs no libcst parse and never imports
torch.

How it works: each function (and the module body) is walked statement by
statement with an environment mapping names (and dotted names such as
``self.logits``) to the set of :class:`~inplace_lint.findings.Origin` values they
may hold. The interpreter is split by job:

- :mod:`.statements`: control flow (loops, branches, ``def``/``class``, returns); :mod:`.binding`:
  assignments and targets; :mod:`.env`: origin sets and their merges;
- :mod:`.expressions`: expressions (views, items, attributes, ``.detach()``/``.data``);
- :mod:`.calls`: calls (torch ops through :mod:`.names`, tensor methods); :mod:`.project_calls`: calls of
  in-project functions (through :class:`.context.AnalysisContext`); :mod:`.call_grad`: grad at a call;
- :mod:`.grad`: grad contexts; :mod:`.model_outputs`: model-output heuristics; :mod:`.narrowing`: classes
  and types (``isinstance`` arms, nested classes' bases, TorchScript functions);
- :mod:`.reporting`: rule matching, findings and their fix plans.

Parameters are bound to placeholders, so each function leaves a summary
(:mod:`.summaries`) of what it returns and writes in terms of its parameters.
"""
from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from typing import FrozenSet, Dict, List, Optional, Sequence, Set, Tuple

from ..config import Settings
from ..findings import Origin, RootKind, Step, StepKind
from . import model_outputs
from .init_builds import layer_builders, stack_builders
from .call_grad import CallGradMixin
from .binding import BindingMixin
from .calls import CallsMixin
from .dispatch import DispatchMixin
from .loop_passes import LoopPassesMixin
from .tensor_kinds import TensorKindsMixin
from .context import AnalysisContext
from .expressions import ExpressionsMixin
from .branches import ConditionsMixin
from .blocks import BlocksMixin
from .handed_out import HandedOutMixin
from .local_conds import LocalConditionsMixin
from .narrowing import ClassFactsMixin
from .project_calls import ProjectCallsMixin
from .reporting import ReportingMixin
from .env import _MAX_ORIGINS, EMPTY
from .statements import StatementsMixin
from .out_calls import OutCallsMixin
from .built_arms import BuiltArmsMixin
from .strings import StringsMixin
from .exits import ExitsMixin
from .layer_elements import LayerElementsMixin
from .stale_views import StaleViewsMixin
from .dict_items import DictItemsMixin
from .own_class import OwnClassFacts, read_through
from .summaries import LocalFinding, ParamWrite, param_index, param_origin, parameters

RECURSION_LIMIT = 20000


@functools.lru_cache(maxsize=None)
def _handler(cls: type, prefix: str, node_type: type):
    """The ``eval_X``/``stmt_X`` method for a node type (cached: dispatch is the hot path)."""
    return getattr(cls, prefix + node_type.__name__, None)


def _arg_line(args: ast.arguments, name: str) -> int:
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        if a.arg == name:
            return a.lineno
    return 0


@read_through
@dataclass
class Scope(OutCallsMixin, StatementsMixin, BlocksMixin, BindingMixin, ExpressionsMixin, CallsMixin, ProjectCallsMixin, HandedOutMixin, CallGradMixin,
            ReportingMixin, ClassFactsMixin, ConditionsMixin, LocalConditionsMixin, TensorKindsMixin,
            LoopPassesMixin, DispatchMixin, BuiltArmsMixin, StringsMixin, ExitsMixin, LayerElementsMixin,
            StaleViewsMixin, DictItemsMixin):
    """Walks one function (or module, or class) body; nested functions get a scope of their own."""

    settings: Settings
    sink: Dict[Tuple[int, int], LocalFinding]
    params: Sequence[str]
    #: the function (or module) whose body this scope walks; fix safety scans it for later reads
    func: Optional[ast.AST] = None
    env: Dict[str, frozenset] = field(default_factory=dict)
    no_grad: bool = False
    #: names bound while grad was off, in the current no-grad region
    nograd_bound: Set[str] = field(default_factory=set)
    inplace_modules: Dict[str, str] = field(default_factory=dict)
    #: loop variables over a layer list an element of which writes in place (:mod:`.layer_elements`) -> the loop, the
    #: layer
    some_pass_layers: Dict[str, Tuple[ast.AST, str]] = field(default_factory=dict)
    stmt_stack: List[ast.stmt] = field(default_factory=list)
    loop_stack: List[ast.AST] = field(default_factory=list)
    #: the statement lists being walked, innermost last, each with the index of the statement being walked
    blocks: List[list] = field(default_factory=list)
    #: per loop being walked, innermost last: the values that left a pass (:mod:`.exits`); per ``try`` body being
    #: walked: the values a handler may start with
    loop_exits: List[dict] = field(default_factory=list)
    try_points: List[list] = field(default_factory=list)
    #: the class body of a ``torch.autograd.Function`` subclass / of a class whose methods run grad-off
    autograd_function: bool = False
    class_no_grad: bool = False
    in_class: bool = False
    #: in a class body: the methods its own code calls as ``self.<name>(...)`` outside ``forward``
    self_called: FrozenSet[str] = frozenset()
    #: in a class body and its methods: what the class's own code says (:class:`~.own_class.OwnClassFacts`), read
    #: as ``frozen_layers``, ``init_flags``, ... (:func:`~.own_class.read_through`); None outside a class
    own_class: Optional[OwnClassFacts] = None
    #: positions of the values bound to plain names that the walk gives no tensor (``beta = next(iter([x]))``): a
    #: fix may not assume what such a binding holds (:mod:`.fixplan.sources`)
    untracked_values: Set[Tuple[int, int]] = field(default_factory=set)
    #: and those it gives a tensor (a binding in neither, not walked yet, counts as not tracked)
    tracked_values: Set[Tuple[int, int]] = field(default_factory=set)
    #: positions of the calls the walk could not resolve (a builtin, a library's function, a method of what it
    #: does not know): their result may be an argument (:mod:`.fixplan.sources`)
    unresolved_calls: Set[Tuple[int, int]] = field(default_factory=set)
    #: the module's top-level functions that build one torch layer and return it -> its dotted name
    #: (:func:`~.init_builds.layer_builders`)
    layer_builders: Dict[str, str] = field(default_factory=dict)
    #: the module's top-level functions that return an ``nn.Sequential`` they build -> what each return's stack may
    #: start with (:func:`~.init_builds.stack_builders`)
    stack_builders: Dict[str, List[List[ast.expr]]] = field(default_factory=dict)
    #: per-function facts for fix safety, built on a function's first finding (shared by nested scopes)
    facts_cache: Dict[int, object] = field(default_factory=dict)
    #: imported names -> what they name (:mod:`.names`)
    names: Dict[str, str] = field(default_factory=dict)
    #: the project around this walk (:class:`.context.AnalysisContext`); None walks without following calls
    ctx: Optional[AnalysisContext] = None
    qual: str = "<module>"
    package: str = ""
    cls_qual: Optional[str] = None
    #: for a nested class's body and methods (not in the module's index), whether its bases make it plain
    #: (:meth:`~.resolve.Resolver.plain_class`); None: ask the project
    class_plain: Optional[bool] = None
    #: for a nested class's body and methods: what its ``__init__`` built each ``self.<attr>`` from
    class_builders: Optional[Dict[str, str]] = None
    #: walking a function compiled by ``torch.jit.script`` (or one nested in it): TorchScript iterates a
    #: tensor by indexing it (``select``, one view per step), not by ``unbind``
    scripted: bool = False
    self_name: Optional[str] = None
    #: nested and module-level functions visible here: name -> qualified name
    local_funcs: Dict[str, str] = field(default_factory=dict)
    returns: frozenset = EMPTY
    param_writes: List[ParamWrite] = field(default_factory=list)
    observed: Set[int] = field(default_factory=set)
    #: why the write being reported gets no fix, when planning says (:data:`.fix_planning.TORCHSCRIPT`)
    withheld: str = ""
    #: a plain name bound to a view of another plain name (``v = x[:, :2]``, ``v = x.view(-1)``) -> that name:
    #: an op that saves one saves the storage both share (:meth:`~.call_grad.CallGradMixin.note_view`)
    view_bases: Dict[str, str] = field(default_factory=dict)
    #: parameter index -> (what read it, line): :attr:`~.summaries.FunctionSummary.saves`
    saved_params: Dict[int, Tuple[str, int]] = field(default_factory=dict)
    #: False while re-evaluating an expression (no findings, no summary records)
    recording: bool = True
    #: parameters annotated with a type that is not a model output (``output: QAct``)
    typed_params: Set[str] = field(default_factory=set)
    #: plain names bound in this scope or an enclosing one (they shadow imports and literal guesses)
    assigned: Set[str] = field(default_factory=set)
    #: names bound, in a module's ``forward``, to what a submodule returned (``outputs = self.backbone(x)``,
    #: the callee not matching the model-call patterns): intermediate activations, not model outputs,
    #: whatever their name (see :mod:`.model_outputs`)
    submodule_results: Set[str] = field(default_factory=set)
    #: names bound, in any method, to what one of torch's layers with weights returned (``gate = self.proj(h)``):
    #: evidence that the other input of an op requires grad (:meth:`~.call_grad.CallGradMixin.needs_grad`)
    #: only; in a method other than ``forward`` (an inference helper its callers may run under ``no_grad``)
    #: it is not taken as evidence for a saved output
    layer_results: Set[str] = field(default_factory=set)
    #: loop variables, in a module's ``forward``, over one of its own attributes (``for module in self.enc:``,
    #: ``zip(self.blocks, states)``): its submodules, whose calls return activations whatever the name
    submodule_names: Set[str] = field(default_factory=set)
    #: names bound to a grad-mode context (``ctx = torch.no_grad() if no_grad else nullcontext()``), for a
    #: later ``with ctx:``
    grad_contexts: Dict[str, ast.expr] = field(default_factory=dict)
    #: (root text, root line) of what an in-project call returned -> why it is also held elsewhere
    #: (``FunctionSummary.kept``): a fix that rebinds a name holding it is unsafe
    kept_roots: Dict[Tuple[str, int], str] = field(default_factory=dict)
    #: the root of what a call of a submodule built in several arms of ``__init__`` returned -> (those arms, the arms
    #: whose build may return it) (:mod:`.built_arms`)
    arm_origins: Dict[str, Tuple[FrozenSet[tuple], FrozenSet[tuple]]] = field(default_factory=dict)
    #: walking the branch a module takes in eval mode only (``else`` of ``if self.training:``): guess, its
    #: writes run for inference, so only the rules that hold without grad apply to them
    eval_branch: bool = False
    #: walking code that runs only where ``torch.is_grad_enabled()`` was false (``if not
    #: torch.is_grad_enabled(): return self._forward_no_grad(x)``): grad is surely off there, so a call made
    #: there is recorded as made with grad off, as under ``torch.no_grad()`` (a callee every call of which is
    #: made so runs with grad off: :class:`~.across_calls.AcrossCalls`)
    grad_off_arm: bool = False
    #: names (and dotted names) known, in the branch being walked, not to require grad (the ``else`` of
    #: ``if x.requires_grad:``): writes to them, or to views of them, need no autograd rule
    nograd_keys: Set[str] = field(default_factory=set)
    #: an in-place call's saved output (root text, line) -> the name it wrote and returned (``h`` in ``y =
    #: F.relu(h, inplace=True)``): a rebinding fix of a write to ``y`` would hide it from ``h``
    inplace_inputs: Dict[Tuple[str, int], str] = field(default_factory=dict)
    #: the conditions on parameters under which the statement being walked runs: (parameter index, the
    #: truth value the test needs, the truth of the parameter's literal default or None) for ``if flag:``,
    #: ``if not flag:``, ``a if flag else b``; a return records them (callee summaries are specialised for
    #: the constant arguments of each call: :meth:`.project_calls.ProjectCallsMixin.project_call`)
    path_conds: Tuple[tuple, ...] = ()
    #: origin -> the condition tuples of the returns that give it; origins some return gives unconditionally
    return_conds: Dict[Origin, Set[tuple]] = field(default_factory=dict)
    uncond_returns: Set[Origin] = field(default_factory=set)
    #: :attr:`.summaries.FunctionSummary.computed`, from the returns walked so far
    computed_returns: Set[int] = field(default_factory=set)
    #: a ``yield`` was walked (a generator), a block with grad off was walked (what it made may be returned)
    generator: bool = False
    grad_off_block: bool = False
    #: the return statements walked, and those whose value surely needs no grad (:meth:`.param_guesses.
    #: ParamGuessesMixin.note_return`): all of them makes :attr:`.summaries.FunctionSummary.no_grad_result`
    return_count: int = 0
    gradless_returns: int = 0
    #: a step (or a root) made by a statement walked under :attr:`path_conds` -> those conditions: a value
    #: bound in ``if n == 3: y = y.expand(s)`` and returned after the ``if`` is returned only when ``n == 3``
    made_conds: Dict[object, Tuple[tuple, ...]] = field(default_factory=dict)
    #: name -> (origin, condition) pairs: after ``if reset: ids = ids.clone()`` (no ``else``) the name holds the
    #: expanded ``ids`` only where ``reset`` is false, so a write under ``if reset:`` further on cannot reach it
    #: (:meth:`.binding.BindingMixin.reachable`); dropped when the name is bound again
    reach_conds: Dict[str, List[Tuple[Origin, tuple]]] = field(default_factory=dict)
    #: the conditions on locals (:mod:`.local_conds`) under which the statement being walked runs; never in a
    #: summary or a finding (they say nothing to a caller)
    local_conds: Tuple[tuple, ...] = ()
    #: plain name -> the ident of its binding (renewed at each binding, shared by a copy ``a = b``)
    cond_ids: Dict[str, int] = field(default_factory=dict)
    #: idents whose value is immutable (a truth or order test of it stays true until the name is bound again)
    stable_idents: Set[int] = field(default_factory=set)
    #: as :attr:`made_conds`, for the conditions on locals
    local_made: Dict[object, Tuple[tuple, ...]] = field(default_factory=dict)
    #: what one walk of the function gives, kept for the walk: names bound in each loop (by ``id`` of its node),
    #: names shared with nested functions (key None), the values of plain names (key "bindings":
    #: :meth:`.call_grad.CallGradMixin._bindings`)
    local_cond_cache: Dict[object, object] = field(default_factory=dict)
    #: inside ``with torch.no_grad() if flag else nullcontext():`` on a parameter ``flag``: the condition
    #: (index, truth, default truth) that turns grad off (see ``LocalFinding.grad_cond``)
    grad_cond: Optional[tuple] = None
    #: (first line, last line, condition) of each ``with`` block whose grad mode a parameter decides: what is
    #: made there needs grad only when the condition is false
    grad_cond_spans: List[Tuple[int, int, tuple]] = field(default_factory=list)
    #: local names bound to an instance of an in-project class (``step = BeamStep(...)``): name -> class;
    #: ``step.advance(...)`` dispatches to the class's method (and its overrides), so a method called only
    #: from a grad-off function (an ``@torch.inference_mode()`` ``__call__``) is grad-off too
    local_instances: Dict[str, str] = field(default_factory=dict)
    #: local names bound to an element of a ``ModuleList`` of torch stacks (``for up in self.us:``): name -> the
    #: functional op each element's output comes from (:meth:`.binding.BindingMixin.element_stack`)
    local_stacks: Dict[str, str] = field(default_factory=dict)
    #: local names bound to an element of such a ``ModuleList`` whose first layer saves its input -> that layer
    local_input_layers: Dict[str, str] = field(default_factory=dict)
    #: names bound to a bool tensor (a comparison, ``torch.logical_or(...)``, views of one)
    bool_names: Set[str] = field(default_factory=set)
    #: names bound, on every path to here, to a value true only with grad off
    #: (:func:`.grad.is_grad_off_flag`): ``if flag:`` runs its body with grad off, and a call that passes
    #: one hands that on (``CallSite.grad_off_args``)
    grad_off_flags: Set[str] = field(default_factory=set)
    #: names a nested function declares ``nonlocal`` or ``global``: a call may rebind them, so none is a flag
    shared_names: Set[str] = field(default_factory=set)
    #: parameters bound, somewhere in the walk, to a value that is not made from what the caller passed
    #: (``x = proj(x)``): a guess rooted at one is not left to the callers (:meth:`summary`)
    rebound_params: Set[str] = field(default_factory=set)
    #: how many times a ``def`` walked here replaced a different summary of the same function (a loop
    #: that redefines a function it called earlier must be walked again: :meth:`_loop_state`)
    redefined: int = 0
    #: the sink keys of this scope's findings whose ``param_rooted`` is set
    rooted_keys: List[Tuple[int, int]] = field(default_factory=list)
    #: parameters (guesses) an ``out=`` call on every path so far consumed -> the loops whose bodies it is in (None:
    #: the function's): it raises in the forward when they require grad, so code past it there runs only when they
    #: do not (:meth:`~.reporting.ReportingMixin.report`)
    out_guesses: Dict[int, list] = field(default_factory=dict)
    #: the same for the roots of the origins the ``out=`` calls consumed (:func:`~.out_calls._root`)
    out_roots: Dict[tuple, list] = field(default_factory=dict)
    #: every value bound to a name here (:meth:`bind_name`), in order, and the environment the scope
    #: started with: what :meth:`holders` indexes (a fix plan looks up the names that may hold the
    #: target's origin there instead of scanning the whole environment at each finding)
    bindings: List[Tuple[str, frozenset]] = field(default_factory=list)
    initial_env: Dict[str, frozenset] = field(default_factory=dict)
    root_index: Optional[Dict[tuple, Set[str]]] = None
    indexed: int = 0

    #: keys that may hold more origins than the cap (see :func:`.env.merge`)
    big: Set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.initial_env = dict(self.env)
        self.big = {k for k, v in self.initial_env.items() if len(v) > _MAX_ORIGINS}

    def _handler(self, prefix: str, node_type: type):
        return _handler(type(self), prefix, node_type)

    def is_param(self, name: str) -> bool:
        return name in self.params

    def is_local_name(self, head: str) -> bool:
        return head in self.env or head in self.params or head in self.local_funcs or head in self.assigned

    def new_scope(self, params, func, env, no_grad, inplace_modules, qual) -> "Scope":
        return Scope(self.settings, self.sink, params=params, func=func, env=env, no_grad=no_grad,
                     facts_cache=self.facts_cache, inplace_modules=inplace_modules, names=dict(self.names),
                     ctx=self.ctx, qual=qual, package=self.package, local_funcs=dict(self.local_funcs),
                     cls_qual=self.cls_qual, class_plain=self.class_plain, class_builders=self.class_builders,
                     scripted=self.scripted, self_name=self.self_name, assigned=set(self.assigned),
                     own_class=self.own_class, layer_builders=self.layer_builders,
                     stack_builders=self.stack_builders, self_called=self.self_called)

    def child_scope(self, args: ast.arguments, no_grad: bool, func: Optional[ast.AST], qual: str,
                    bound_first: bool = False) -> "Scope":
        """A nested function: it reads the enclosing names (closures); its parameters shadow them.
        ``bound_first``: a method's ``self``/``cls`` (no placeholder: it is never a tensor)."""
        every = parameters(args)
        names = [a.arg for a in every]
        # the enclosing function's parameter placeholders stand for *its* callers' arguments, numbered by *its*
        # parameter list: read in the nested function (a closure over `state_dict`), one would be taken for the
        # nested function's own parameter at that position; they are dropped (unknown here)
        env = dict(self.env)
        if any(param_index(o) is not None for held in env.values() for o in held):
            env = {k: kept for k, held in env.items()
                   if (kept := frozenset(o for o in held if param_index(o) is None))}
        typed = set()
        for index, a in enumerate(every):
            name = a.arg
            env.pop(name, None)
            held = set()
            if self.ctx is not None and not (index == 0 and bound_first):
                held.add(param_origin(index, a.lineno))
            if a is args.vararg or a is args.kwarg:
                # a tuple (or dict) of what the call passed: its annotation (`*xs: torch.Tensor`) types the items;
                # `*args`' items are what the call passed (any position: `(*)`), iterated or indexed as they are
                if held and a is args.vararg:
                    held = {o.extend(Step(StepKind.TUPLE_ITEM, "(*)", a.lineno)) for o in held}
                if held:
                    env[name] = frozenset(held)
                continue
            if name in self.settings.model_output_params:
                if model_outputs.annotation_allows_guess(a.annotation) and not model_outputs.used_as_list(func, name):
                    held.add(Origin(RootKind.MODEL_OUTPUT_OBJECT, name, a.lineno))
                else:
                    typed.add(name)
            if model_outputs.is_tensor_annotation(a.annotation):
                held.add(Origin(RootKind.TENSOR, name, a.lineno, guessed=True))
            if held:
                env[name] = frozenset(held)
        scope = self.new_scope(tuple(names), func, env, no_grad, dict(self.inplace_modules), qual)
        scope.typed_params = typed
        for name in names:  # a parameter shadows the module's function of that name (`embed=False`)
            scope.local_funcs.pop(name, None)
        return scope


def walk_module(tree: ast.Module, settings: Settings, ctx: Optional[AnalysisContext] = None, module: str = "<module>",
                package: str = "") -> Dict[Tuple[int, int], LocalFinding]:
    """Walk a module's body once; returns the findings keyed by position (summaries go to ``ctx``)."""
    import sys

    sink: Dict[Tuple[int, int], LocalFinding] = {}
    limit = sys.getrecursionlimit()
    # deeply nested code (long call chains, nested brackets) must not crash a whole flake8 run
    sys.setrecursionlimit(max(limit, RECURSION_LIMIT))
    try:
        scope = Scope(settings, sink, params=(), func=tree, ctx=ctx, qual=module, package=package,
                      layer_builders=layer_builders(tree), stack_builders=stack_builders(tree))
        scope.run_body(tree.body)
        if ctx is not None:
            ctx.finish()  # the function bodies no caller asked for yet
    finally:
        sys.setrecursionlimit(limit)
    return sink
