"""The rule type: a rule's whole story in one place.

A rule is its code, name and severity, the predicate that decides when a write is its business, the
one-clause message for the case at hand, its documentation (ruff's sections: What it does / Why is
this bad? / Example / Use instead / Fix safety / References) and executable examples (Fixit's
``VALID`` / ``INVALID``). The examples run as tests (``tests/test_rule_examples.py``), the first
INVALID one is the documented Example and the first VALID one is "Use instead", so the page
``inplace-lint rule CODE`` prints can never show code the linter does not handle as it says.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Callable, Optional, Tuple

from ..findings import SAME_TENSOR_STEPS, Origin, RootKind, StepKind, WriteKind

#: severities, as SARIF ``level`` and GitHub annotation commands spell them
SEVERITIES = ("error", "warning")


@dataclass(frozen=True)
class Write:
    """What the analysis knows about one in-place write, for a rule's predicate and message."""

    #: how the write is spelled, for messages: ``"`div_`"``, ``"`/=`"``, ``"item assignment"``
    op: str
    #: the in-place method it amounts to (``"div_"`` for ``x.div_(t)`` and ``x /= t``), if any
    op_name: Optional[str]
    kind: WriteKind
    #: source text of the written tensor
    target: str
    #: item assignment whose index has no slice and no ``...`` (``x[0] = v``, ``x[mask] = v``): torch
    #: writes it through select/index_put_, which skip the overlap check of expanded tensors
    point_index: bool = False
    #: the run-time condition under which the write happens at all, when the analysis can name it
    #: (``F.dropout(x, p, training=self.training, inplace=True)`` writes only in training mode with
    #: ``p`` above 0): messages say "raises when ..."
    condition: Optional[str] = None
    #: where a layer built with ``inplace=True`` wrote it (``self.block(x)``, hidden at the call): the first later
    #: load that may read what it wrote, as ``(text, line, col)`` (:func:`inplace_lint.analysis.rereads.read_again`)
    reread: Optional[Tuple[str, int, int]] = None
    #: the write reaches the base of a name bound to one output of ``split``/``chunk``/``unbind``, which is read
    #: again afterwards: ``(name, line of that read)`` (:mod:`inplace_lint.analysis.stale_views`)
    base_of: Optional[Tuple[str, int]] = None


@dataclass(frozen=True)
class Example:
    """An executable example: ``code`` is a whole module.

    For an INVALID example, ``message`` is a fragment the rule's finding must contain and ``fix`` is
    the exact text ``inplace-lint fix --unsafe-fixes`` (runtime style) makes of ``code``, or None when
    the finding has no fix.
    """

    code: str
    message: str = ""
    fix: Optional[str] = None

    @property
    def source(self) -> str:
        return textwrap.dedent(self.code).strip() + "\n"

    @property
    def fixed(self) -> Optional[str]:
        return None if self.fix is None else textwrap.dedent(self.fix).strip() + "\n"


def target_phrase(write: Write, origin: Origin, root_phrase: str) -> str:
    """```x`, a view of <root>``, or just ``<root>`` when the target is the root itself."""
    views = [s for s in origin.steps if s.kind not in SAME_TENSOR_STEPS]
    if not views:
        return root_phrase if write.target == origin.root_text else f"`{write.target}`, {root_phrase}"
    if views[-1].kind is StepKind.ELEMENT:
        noun = "an element of"
    elif all(s.kind is StepKind.MAY_ALIAS for s in views):
        noun = "a possible alias of"
    elif any(s.kind is StepKind.EXPAND for s in views):
        noun = "an expanded view of"
    else:
        noun = "a view of"
    if write.target == origin.root_text:  # output["logits"] = output["logits"].float(); output["logits"].div_(t)
        return f"{noun} {root_phrase}"
    return f"`{write.target}`, {noun} {root_phrase}"


def root_phrase(origin: Origin) -> str:
    if origin.root is RootKind.TENSOR:
        return f"`{origin.root_text}`"
    return f"{origin.root.value} `{origin.root_text}`"


def default_message(write: Write, origin: Origin) -> str:
    """One clause: ``"`div_` writes in place to `x`, a view of model output `out.logits`"``, and the
    condition under which the write happens, when it has one (``..., when `training` is true``)."""
    text = f"{write.op} writes in place to {target_phrase(write, origin, root_phrase(origin))}"
    return f"{text}, when {write.condition}" if write.condition else text


@dataclass(frozen=True)
class Rule:
    """One rule. ``applies(origin, write)`` decides; ``message(write, origin)`` says why, in one clause."""

    code: str
    name: str
    severity: str
    summary: str
    applies: Callable[[Origin, Write], bool]
    what: str
    why: str
    fix_safety: str
    references: str
    #: examples the rule must report (the first is the documented Example)
    invalid: Tuple[Example, ...]
    #: modules the rule must leave clean (the first is the documented "Use instead")
    valid: Tuple[str, ...]
    message: Callable[[Write, Origin], str] = default_message
    #: the hazard exists with grad off too (so the rule is checked inside ``torch.no_grad()``)
    without_grad: bool = False
    #: the grad mode that matters is the one the origin was made in, not the write's: a tensor saved for
    #: backward by a graph built with grad on fails that backward when it is written inside
    #: ``torch.no_grad()`` too (docs/pytorch-facts.md#grad-off-write-of-saved); the rule's ``applies`` checks
    #: the origin's grad mode itself
    grad_at_origin: bool = False
    #: the hazard needs the base to require grad, and a guess is no evidence of that: a write whose every
    #: matching origin is only a guess that a value made in the function is a tensor (``torch.chunk(a0, 2)`` of
    #: what nothing tracks), with no evidence that it requires grad and not made from a parameter (whose callers
    #: decide), is not reported (docs/analysis.md, "Requires grad needs evidence")
    needs_evidence: bool = False
    #: the rule is about who reads the written tensor again, not about what made it risky (IPV007): its findings
    #: get no fix (what to change is said instead, :attr:`.findings.Finding.no_fix`), no condition of the origin,
    #: the read as their related location, and at a helper's call no call-site remedy (a clone there would be
    #: what the helper writes)
    about_readers: bool = False

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"{self.code}: severity must be one of {SEVERITIES}, got {self.severity!r}")
        if not self.invalid or not self.valid:
            raise ValueError(f"{self.code}: a rule needs at least one INVALID and one VALID example")

    @property
    def example(self) -> str:
        return self.invalid[0].source

    @property
    def use_instead(self) -> str:
        """The rewrite ``inplace-lint fix`` makes of the Example (so the page suggests what the tool does), or,
        when the Example has no fix, the first VALID module."""
        fixed = self.invalid[0].fixed
        return fixed if fixed is not None else textwrap.dedent(self.valid[0]).strip() + "\n"

    @property
    def use_instead_note(self) -> str:
        if self.invalid[0].fixed is None:
            return ""
        return ("This is what `inplace-lint fix` writes for the example (the default runtime style; "
                "`--style inline` writes plain torch instead: the same in-place op on a copy, "
                "`x = x.clone().div_(t)`, after a DTensor guard). A plain out-of-place operator such as "
                "`x / t` is not the same: it promotes the dtype (bf16 / fp32 gives fp32) and returns a value "
                "where the in-place op raises; see docs/fixes.md.\n\n")

    def document(self) -> str:
        return (
            f"# {self.code} ({self.name})\n\n{self.summary}\n\nSeverity: {self.severity}.\n\n"
            f"## What it does\n\n{self.what}\n\n## Why is this bad?\n\n{self.why}\n\n"
            f"## Example\n\n```python\n{self.example}```\n\n"
            f"## Use instead\n\n```python\n{self.use_instead}```\n\n{self.use_instead_note}"
            f"## Fix safety\n\n{self.fix_safety}\n\n## References\n\n{self.references}\n"
        )
