"""The analysis: stdlib ``ast`` in, findings (with their planned fixes) out. Never imports torch.

- :mod:`.dataflow`: origins of values through a function (the interpreter).
- :mod:`.ops`, :mod:`._ops_generated`: op tables (generated from torch by ``scripts/generate_ops.py``).
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
