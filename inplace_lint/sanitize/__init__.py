"""Runtime sanitizer: the static rules observed in a running training step.

Three entry points (see ``docs/sanitizer.md``):

- ``with inplace_lint.sanitize.sanitize(): ...`` or ``@sanitize()`` on a function;
- ``python -m inplace_lint.sanitize [--output FILE] [--format text|json|sarif] SCRIPT [ARGS...]``;
- ``pytest --inplace-sanitize`` (a pytest plugin, registered through the ``pytest11`` entry point).

This package and :mod:`inplace_lint.runtime` are the only parts of inplace-lint that import torch.
This ``__init__`` does not: the pytest plugin lives beside it and is loaded by every pytest run in an
environment where inplace-lint is installed, so torch is imported only when a name below is used.

Modules:

- :mod:`.sanitizer` -- :class:`Sanitizer` (the torch function mode, module hooks, the check at each write);
- :mod:`.writes` -- which torch calls write which arguments (aten schemas), and the tensor facts read at a write;
- :mod:`.tracking` -- saved tensors (saved-tensor hooks) and top-level module outputs, by weak reference;
- :mod:`.sites` -- where in the user's code a write happened;
- :mod:`.results` -- :class:`RuntimeFinding`, its messages, :class:`InplaceHazardError`;
- :mod:`.report` -- the report in ``check``'s formats; :mod:`.pytest_plugin`, :mod:`.__main__` -- the entry points.
"""
from __future__ import annotations

from typing import Any

__all__ = ["sanitize", "Sanitizer", "RuntimeFinding", "InplaceHazardError", "write_report", "FORMATS"]

_LAZY = {
    "sanitize": ".sanitizer",
    "Sanitizer": ".sanitizer",
    "RuntimeFinding": ".results",
    "InplaceHazardError": ".results",
    "write_report": ".report",
    "FORMATS": ".report",
}


def __getattr__(name: str) -> Any:  # PEP 562: import torch only when the sanitizer is used
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
