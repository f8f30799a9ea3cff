"""All rules, one module each. ``_REGISTRY`` is the one table from code to rule.

To add a rule: one module in this package, one line in ``_REGISTRY`` (see CONTRIBUTING.md, or
``python scripts/add_rule.py``). The order of ``_REGISTRY`` is ``PRIORITY``: which rule reports a
site whose target matches several, the more certain failure first.
"""
from __future__ import annotations

import importlib
from typing import Dict, Optional, Tuple

from .base import Example, Rule, Write

_REGISTRY = (
    "ipv004_expanded",
    "ipv002_custom_function_output",
    "ipv003_multi_output_view",
    "ipv005_no_grad_view",
    "ipv006_saved_output",
    "ipv001_model_output",
    "ipv007_reread_after_inplace_layer",
)

PRIORITY: Tuple[Rule, ...] = tuple(importlib.import_module(f"{__name__}.{m}").RULE for m in _REGISTRY)
RULES: Dict[str, Rule] = {r.code: r for r in sorted(PRIORITY, key=lambda r: r.code)}
#: a rule's page, under the project's address (:func:`inplace_lint.project_url`)
DOCS_PATH = "/blob/main/docs/rules.md#{code}"

__all__ = ["DOCS_PATH", "Example", "PRIORITY", "RULES", "Rule", "Write", "url"]


def url(code: str) -> Optional[str]:
    """The web page of ``code``'s documentation, or None when the package metadata names no project
    address (``inplace-lint rule CODE`` prints the same page)."""
    from .. import project_url

    base = project_url()
    return base + DOCS_PATH.format(code=code.lower()) if base else None
