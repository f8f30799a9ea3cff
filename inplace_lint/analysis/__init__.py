"""The analysis: stdlib ``ast`` in, findings (with their planned fixes) out. Never imports torch.

- :mod:`.dataflow`: origins of values through a function (the interpreter), split by job into
  :mod:`.statements`, :mod:`.expressions`, :mod:`.calls`, :mod:`.grad`, :mod:`.model_outputs`,
  :mod:`.reporting`; :mod:`.names` resolves names through imports.
- :mod:`.summaries`, :mod:`.project`: function summaries, calls resolved across the project, the
  project pass (grad-off functions, parameter origins, fix safety from callers); :mod:`.cache`: the
  on-disk cache (``docs/analysis.md``); :mod:`.incremental`: an open buffer walked again function by
  function (the language server).
- The op tables live in :mod:`inplace_lint.torch_facts` (generated from torch).
- :mod:`.fixplan`: which findings have a fix and whether it is safe.

``analyze``/``analyze_source`` are loaded on first use, so the op tables can be imported
(by the config and the runtime) without the interpreter.
"""
from typing import TYPE_CHECKING, Any

__all__ = ["analyze", "analyze_source"]

if TYPE_CHECKING:  # pragma: no cover
    from .dataflow import analyze, analyze_source  # noqa: F401


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import dataflow

        return getattr(dataflow, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
