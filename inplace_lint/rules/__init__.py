"""All rules, one module each. ``_REGISTRY`` is the one table from code to rule.

To add a rule: one module in this package, one line in ``_REGISTRY`` (see CONTRIBUTING.md, or
``python scripts/add_rule.py``). The order of ``_REGISTRY`` is ``PRIORITY``: which rule reports a
site whose target matches several, the more certain failure first.
"""
from __future__ import annotations

import importlib
from typing import Dict, Tuple

from .base import Example, Rule, Write

_REGISTRY = (
    "ipv004_expanded",
    "ipv002_custom_function_output",
    "ipv003_multi_output_view",
    "ipv006_saved_output",
    "ipv005_no_grad_view",
    "ipv001_model_output",
)

PRIORITY: Tuple[Rule, ...] = tuple(importlib.import_module(f"{__name__}.{m}").RULE for m in _REGISTRY)
RULES: Dict[str, Rule] = {r.code: r for r in sorted(PRIORITY, key=lambda r: r.code)}
DOCS_URL = "https://github.com/inplace-lint/inplace-lint/blob/main/docs/rules.md#{code}"

__all__ = ["DOCS_URL", "Example", "PRIORITY", "RULES", "Rule", "Write", "url"]


def url(code: str) -> str:
    return DOCS_URL.format(code=code.lower())
