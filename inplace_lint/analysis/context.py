"""What the interpreter may ask of the project around it: the :class:`AnalysisContext` protocol.

The walk (:mod:`.dataflow` and the modules it is split into) sees the project only through this
interface; :class:`~.project.ModuleContext` implements it over a :class:`~.project.Project`,
and :mod:`.incremental` wraps it to record every question and answer. A walk with no context
(``ctx=None``) follows no calls.
"""
from __future__ import annotations

import pathlib
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Tuple

from .summaries import CallSite, FunctionSummary

#: ``(qualified name, static)`` of a method, or ``(qualified name, 0)`` of a function
Target = Tuple[str, Any]


class AnalysisContext(Protocol):
    """One file's view of its project while it is walked."""

    #: the module's dotted name and the file's path
    module: str
    path: str
    #: what the walk leaves: summaries of the functions defined here, call sites of in-project
    #: functions, and each function's (parameters, static)
    functions: Dict[str, FunctionSummary]
    calls: List[CallSite]
    params: Dict[str, Tuple[Tuple[str, ...], bool]]
    #: an open buffer's walk that reuses unchanged functions (:mod:`.incremental`), else None
    function_walk: Optional[Any]
    #: whether findings get fixes planned (off for a surface that shows findings only)
    plan_fixes: bool

    @property
    def root(self) -> Optional[pathlib.Path]:
        """The project root (other files' paths are shown relative to it), or None."""

    def resolve(self, qual: str) -> Optional[Tuple[str, str]]:
        """``("function"|"class"|"method"|"module", qualified name)`` of an in-project name, or None."""

    def function(self, qual: str) -> Optional[Target]:
        """The in-project function or method a dotted name calls, or None."""

    def method(self, cls_qual: str, name: str, skip_self: bool = False) -> Optional[Target]:
        """The method ``name`` seen from class ``cls_qual`` (its own, else its bases')."""

    def dispatch(self, cls_qual: str, name: str) -> Tuple[Tuple[str, bool], ...]:
        """Every method ``self.name(...)`` may run (the class's and its subclasses' overrides)."""

    def returns_string(self, qual: str) -> bool:
        """The top-level function ``qual`` always returns a string (:func:`.strings.returns_string`)."""

    def table(self, qual: str) -> Tuple[str, ...]:
        """The functions a top-level table of functions holds (``UPDATES = {"adapt": _adapt}``), qualified; empty
        when ``qual`` is no such table (:attr:`.summaries.ModuleIndex.tables`)."""

    def property_getters(self, cls_qual: str, name: str) -> Tuple[Tuple[str, bool], ...]:
        """The getters ``self.name`` runs when ``name`` is a ``@property``; empty otherwise."""

    def attribute_class(self, cls_qual: str, attr: str) -> Optional[str]:
        """The in-project class ``self.<attr>`` was built from in ``__init__``."""

    def attribute_builder(self, cls_qual: str, attr: str, default: bool = True) -> Optional[str]:
        """What ``self.<attr>`` was built from in ``__init__``, qualified (imports resolved, else the module's name);
        with ``default`` False, None for a torch layer class that is only an ``__init__`` parameter's default
        (``norm_layer=nn.LayerNorm``: a caller may pass another)."""

    def defer(self, qual: str, walk_body: Callable[[], None]) -> None:
        """Walk a top-level function's body when its summary is first asked for (else at :meth:`finish`)."""

    def finish(self) -> None:
        """Walk the deferred bodies nobody asked for."""

    def compiles_torchscript(self) -> bool:
        """The file compiles code with TorchScript (``torch.jit.script``): its writes get no fix."""

    def class_facts(self):
        """:meth:`.resolve.Resolver.class_facts`: the project's tensor subclasses (or a module making instances of
        one), and the groups of fields a function making a model's output returns one tensor under (a fix's
        safety reads them)."""

    def module_class(self, cls_qual: str) -> bool:
        """The class is surely an ``nn.Module`` (a base is torch's, or an in-project module class)."""

    def function_class(self, cls_qual: str) -> bool:
        """The class is a custom autograd ``Function`` through an in-project base."""

    def wrapper_function(self, qual: str) -> str:
        """``qual`` is an in-project decorator that calls what it decorates with the same arguments: "grad-off"
        when with grad off, "pass-through" otherwise, "" when it is not one."""

    def torch_layer_base(self, cls_qual: str) -> Optional[str]:
        """The ``torch.nn`` layer the class derives from through in-project bases (``"Linear"``), or None."""

    def plain_class(self, cls_qual: str) -> bool:
        """The class is surely no ``nn.Module``: its bases, followed through the project, are ``object`` or builtins."""

    def tensor_class(self, cls_qual: str) -> bool:
        """The class is a subclass of ``torch.Tensor`` (a base, followed through the project, is)."""

    def framework_runs_without_grad(self, cls_qual: str, method: str) -> bool:
        """A framework base of the class runs ``method`` with grad off (mmengine's ``BaseModel.predict``)."""

    def params_of(self, qual: str) -> Optional[Tuple[Tuple[str, ...], bool]]:
        """A function's (parameter names, static)."""

    def summary(self, qual: str) -> Optional[FunctionSummary]:
        """A function's summary (what it returns and writes in terms of its parameters)."""

    def index_classes(self) -> Mapping[str, Any]:
        """This module's classes: name -> (bases, methods)."""
