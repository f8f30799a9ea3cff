"""All rules, one module each; ``RULES`` is the one table from code to rule.

``PRIORITY`` says which rule reports a site whose target matches several: the
more certain failure first.
"""
from __future__ import annotations

from typing import Dict

from .base import Rule
from . import (
    ipv001_model_output,
    ipv002_custom_function_output,
    ipv003_multi_output_view,
    ipv004_expanded,
    ipv005_no_grad_view,
    ipv006_saved_output,
)

PRIORITY = (
    ipv004_expanded.RULE,
    ipv002_custom_function_output.RULE,
    ipv003_multi_output_view.RULE,
    ipv006_saved_output.RULE,
    ipv005_no_grad_view.RULE,
    ipv001_model_output.RULE,
)
RULES: Dict[str, Rule] = {r.code: r for r in sorted(PRIORITY, key=lambda r: r.code)}
DOCS_URL = "https://github.com/inplace-lint/inplace-lint/blob/main/docs/rules.md#{code}"


def url(code: str) -> str:
    return DOCS_URL.format(code=code.lower())
