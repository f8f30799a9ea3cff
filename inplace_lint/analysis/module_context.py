"""What one file's walk reads from and leaves in the project: :class:`ModuleContext`.

It implements :class:`~.context.AnalysisContext` (what the interpreter sees) over a
:class:`~.project.Project`, and records what the walk depended on (``deps``: a summary, a
function not found, a dispatch's targets) so the fixpoint knows when to walk the file again.
"""
from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from .resolve import ABSENT, DISPATCH, _targets_digest
from .summaries import CallSite, FunctionSummary

if TYPE_CHECKING:  # pragma: no cover
    from .project import Project


class ModuleContext:
    """What one file's walk reads from and leaves in the project (an :class:`~.context.AnalysisContext`)."""

    def __init__(self, project: Project, module: str, path: str, is_package: bool = False) -> None:
        self.project = project
        self.module = module
        self.path = path
        self.functions: Dict[str, FunctionSummary] = {}
        self.calls: List[CallSite] = []
        self.deps: Dict[str, str] = {}
        self.params: Dict[str, Tuple[Tuple[str, ...], bool]] = {}
        #: resolutions of names to in-project functions (builtins like `len` are looked up once)
        self._functions: Dict[str, Optional[Tuple[str, int]]] = {}
        #: an open buffer's walk that reuses unchanged functions (:mod:`.incremental`), else None
        self.function_walk = None

    def call_sites(self) -> List[CallSite]:
        """``calls`` with one site per call (a loop's second pass records its calls again: the later
        record, which saw the values carried around the loop, replaces the earlier)."""
        out: Dict[tuple, CallSite] = {}
        for site in self.calls:
            key = (site.caller, site.callee, site.line, site.col, site.callback)
            out[key] = site
        return list(out.values()) if len(out) != len(self.calls) else self.calls

    @property
    def root(self) -> Optional[pathlib.Path]:
        return self.project.root

    def resolve(self, qual: str) -> Optional[Tuple[str, str]]:
        return self.project.resolve(qual)

    def index_classes(self):
        index = self.project.indexes.get(self.module)
        return index.classes if index is not None else {}

    def function(self, qual: str):
        if qual in self.params:
            return qual, 0
        try:
            return self._functions[qual]
        except KeyError:
            missing: List[str] = []
            found = self._functions[qual] = self.project.function(qual, missing)
            if found is None:
                for name in missing:  # not (yet) in its module: walked again when it appears
                    self.deps.setdefault(name, ABSENT)
            return found

    def method(self, cls_qual: str, name: str, skip_self: bool = False):
        return self.project.method(cls_qual, name, skip_self)

    def property_getters(self, cls_qual: str, name: str) -> Tuple[Tuple[str, bool], ...]:
        """``self.name`` where the class (or a base) defines ``name`` as a ``@property``: the getter and its
        overrides (as for a call ``self.name()``); empty when it is not a property."""
        found = self.project.method(cls_qual, name)
        if not found:
            return ()
        module, _, cls_name = found[0].rpartition(".")[0].rpartition(".")
        index = self.project.indexes.get(module)
        if index is None or name not in index.properties.get(cls_name, ()):
            return ()
        return self.dispatch(cls_qual, name)

    def dispatch(self, cls_qual: str, name: str) -> Tuple[Tuple[str, bool], ...]:
        """:meth:`Project.dispatch`; the walk depends on the answer (a new override walks it again)."""
        targets = self.project.dispatch(cls_qual, name)
        self.deps[f"{DISPATCH}{cls_qual}\x00{name}"] = _targets_digest(targets)
        return targets

    def attribute_class(self, cls_qual: str, attr: str) -> Optional[str]:
        return self.project.attribute_class(cls_qual, attr)

    def attribute_builder(self, cls_qual: str, attr: str) -> Optional[str]:
        return self.project.attribute_builder(cls_qual, attr)

    def params_of(self, qual: str):
        return self.params.get(qual) or self.project.params_of(qual)

    def summary(self, qual: str) -> Optional[FunctionSummary]:
        summary = self.functions.get(qual)
        if summary is None:
            summary = self.project.summaries.get(qual)
            self.deps[qual] = summary.digest() if summary else ""
        return summary
