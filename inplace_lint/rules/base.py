"""The rule type: one code, its detection predicate and its documentation in one place."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..findings import Origin


@dataclass(frozen=True)
class Rule:
    """A rule: its code, when it applies to a written tensor's origin, and its docs.

    Docs follow ruff's sections (What it does / Why is this bad? / Example /
    Use instead / Fix safety / References); ``inplace-lint rule CODE`` and the
    README table are generated from them.
    """

    code: str
    name: str
    summary: str
    #: short reason appended to every message of this rule
    advice: str
    applies: Callable[[Origin], bool]
    what: str
    why: str
    example: str
    use_instead: str
    fix_safety: str
    references: str
    #: the hazard exists with grad off too (so the rule is checked inside ``torch.no_grad()``)
    without_grad: bool = False

    def message(self, op: str, target: str, origin: Origin) -> str:
        return f"{op} writes in place to `{target}`, {origin.describe()}; {self.advice}"

    def document(self) -> str:
        return (
            f"# {self.code} ({self.name})\n\n{self.summary}\n\n"
            f"## What it does\n\n{self.what}\n\n## Why is this bad?\n\n{self.why}\n\n"
            f"## Example\n\n```python\n{self.example.strip()}\n```\n\n"
            f"## Use instead\n\n```python\n{self.use_instead.strip()}\n```\n\n"
            f"## Fix safety\n\n{self.fix_safety}\n\n## References\n\n{self.references}\n"
        )
