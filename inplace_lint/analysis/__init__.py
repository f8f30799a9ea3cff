"""The analysis: stdlib ``ast`` in, findings (with their planned fixes) out. Never imports torch.

Entry points
- :mod:`.api`: ``analyze`` / ``analyze_source``: one module (a project of one file).
- :mod:`.project`: the project fixpoint (every file walked until the summaries settle, each through
  a ``ModuleContext``);
  :mod:`.across_calls`: the pass across calls (grad-off functions, parameter origins, fix safety
  from callers); :mod:`.resolve`: indexes, imports, class hierarchy, dispatch (:mod:`.decorators`:
  pass-through decorators; :mod:`.refs`: names used other than as a resolved callee); :mod:`.roots`: a file's project root and module name.
- :mod:`.parallel_build`: the walks of a large project in worker processes; :mod:`.cache`: the on-disk
  cache (``docs/analysis.md``); :mod:`.incremental`: an open buffer walked again function by function.

The interpreter (one function at a time)
- :mod:`.dataflow`: ``Scope`` and ``walk_module``; it sees the project only through
  :class:`.context.AnalysisContext` (:mod:`.context`).
- its jobs: :mod:`.statements` (control flow, scopes), :mod:`.blocks` (``with``/``try``/``match``, the grad
  mode a block sets), :mod:`.binding` (assignments, targets), :mod:`.expressions`, :mod:`.calls` (torch ops,
  tensor methods), :mod:`.project_calls` (in-project callees and their summaries), :mod:`.handed_out`
  (functions handed to other code as values, ``partial``), :mod:`.call_grad` (grad at a call, what a call
  saves for backward),
  :mod:`.branches` (what a branch test states: conditions on parameters and on ``__init__`` flags),
  :mod:`.reporting` (rule matching, findings); :mod:`.env`: origin sets and merges; :mod:`.names` resolves names through imports;
  :mod:`.astutil`: small ``ast`` helpers.
- facts: :mod:`.grad` (grad contexts, flags true only with grad off), :mod:`.grad_flags` (such flags passed
  across calls), :mod:`.model_outputs` (model-output heuristics), :mod:`.narrowing` (classes and types:
  ``isinstance`` arms, plain classes, TorchScript functions), :mod:`.init_builds` (what ``__init__`` builds:
  attributes, ``ModuleList`` elements),
  :mod:`.summaries` (what a function returns and writes, in terms of its parameters).
- :mod:`.fixplan`: which findings have a fix and whether it is safe.

The op tables live in :mod:`inplace_lint.torch_facts` (generated from torch).
``analyze``/``analyze_source`` are loaded on first use, so importing this package stays cheap.
"""
from typing import TYPE_CHECKING, Any

__all__ = ["analyze", "analyze_source"]

if TYPE_CHECKING:  # pragma: no cover
    from .api import analyze, analyze_source  # noqa: F401


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
