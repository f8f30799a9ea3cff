"""Frozen value types shared by the engine and every adapter: origins, findings, fixes."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Optional, Tuple


class RootKind(enum.Enum):
    """Where a tracked tensor's storage comes from."""

    MODEL_OUTPUT_OBJECT = "model output object"  # what ``model(...)`` returns (may be a tuple/dict/ModelOutput)
    MODEL_OUTPUT = "model output"  # a tensor field or item of it: ``output.logits``, ``outputs[0]``
    CUSTOM_FUNCTION = "custom autograd Function output"  # ``Fn.apply(...)``, ``dt.to_local()``, ``dt.full_tensor()``
    SAVED_OUTPUT = "output saved for backward"  # x.exp(), x.softmax(-1), torch.sigmoid(x): backward reads it
    FRESH = "fresh tensor"  # ``torch.zeros(...)`` and other factories without ``requires_grad=True``
    TENSOR = "tensor"  # any other base, named by its expression


class StepKind(enum.Enum):
    VIEW = "view"
    MAY_ALIAS = "may-alias"  # reshape/contiguous/float/to: self or a view when no copy is needed
    MULTI_VIEW = "multi-output view"  # split/chunk/unbind: a tuple of views
    ELEMENT = "element"  # one element of a multi-output view, or a loop variable over a tensor
    EXPAND = "expanded view"
    ALIAS = "alias"  # the result of an in-place op is its receiver


@dataclass(frozen=True)
class Step:
    """One link of an origin chain: ``.squeeze(0)`` on line 1111."""

    kind: StepKind
    text: str
    line: int
    no_grad: bool = False  # made while grad mode was off


@dataclass(frozen=True)
class Origin:
    """Why a value is risky to write in place: a root and the view steps taken from it."""

    root: RootKind
    root_text: str
    root_line: int
    steps: Tuple[Step, ...] = ()
    #: the root was created while grad mode was off (so it does not require grad)
    root_no_grad: bool = False
    #: False when the root is a guess (``obj.chunk(2)`` on an untracked ``obj`` may be a TensorDict):
    #: then only writes that prove a tensor (``*_`` methods) are reported, not ``x[k] = v`` or ``x += v``
    certain_tensor: bool = True

    def extend(self, step: Step) -> "Origin":
        return Origin(self.root, self.root_text, self.root_line, self.steps[-7:] + (step,), self.root_no_grad,
                      self.certain_tensor)

    @property
    def is_container(self) -> bool:
        """A tuple of views (``x.chunk(2)``) or a model's output object, not known to be one tensor."""
        if self.steps:
            return self.steps[-1].kind is StepKind.MULTI_VIEW
        return self.root is RootKind.MODEL_OUTPUT_OBJECT

    @property
    def is_tensor(self) -> bool:
        return not self.is_container

    def has(self, kind: StepKind) -> bool:
        return any(s.kind is kind for s in self.steps)

    def related(self) -> Tuple["Related", ...]:
        """The chain as locations: the root, then each view step (aliases left out)."""
        root = f"{self.root.value} `{self.root_text}`" if self.root is not RootKind.TENSOR else f"`{self.root_text}`"
        out = [Related(root, self.root_line)] if self.root_line else []
        out += [Related(f"{s.kind.value} `{s.text}`", s.line) for s in self.steps
                if s.kind is not StepKind.ALIAS and s.line]
        return tuple(out)

    def describe(self) -> str:
        """``a view (`.squeeze(0)`, line 1111) of model output `output.logits```."""
        root = f"{self.root.value} `{self.root_text}`"
        if self.root is RootKind.TENSOR:
            root = f"`{self.root_text}`"
        views = [s for s in self.steps if s.kind is not StepKind.ALIAS]
        if not views:
            return f"{root} (line {self.root_line})"
        chain = " -> ".join(f"`{s.text}`" for s in views)
        noun = "an element" if views[-1].kind is StepKind.ELEMENT else (
            "an expanded view" if self.has(StepKind.EXPAND) else "a view")
        if all(s.kind is StepKind.MAY_ALIAS for s in views):
            noun = "a possible alias"
        return f"{noun} ({chain}, line {views[-1].line}) of {root}"


class WriteKind(enum.Enum):
    METHOD = "method"  # x.div_(t), torch.Tensor.div_(x, t)
    FUNCTION = "function"  # torch.relu_(x), F.relu_(x)
    AUGMENTED = "augmented assignment"  # x /= t
    SUBSCRIPT = "subscript assignment"  # x[m] = v, x[i] += v
    INPLACE_KWARG = "inplace=True"  # F.relu(x, inplace=True), nn.ReLU(inplace=True)(x)
    OUT_KWARG = "out="  # torch.add(a, b, out=x)


class Applicability(enum.Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


class FixKind(enum.Enum):
    #: the write is a statement of its own: replace it by a rebinding (``x = x / t``)
    STATEMENT = "statement"
    #: the write is used as a value inside a simple statement: rebind first, then use the name
    HOIST = "hoist"


@dataclass(frozen=True)
class Edit:
    """Replace the text from (``line``, ``col``) to (``end_line``, ``end_col``) by ``content``.

    Lines are 1-based; columns are 0-based *character* offsets into the line (not UTF-8 bytes, not
    UTF-16 units: each surface converts once, at its edge). An insertion has start == end.
    """

    line: int
    col: int
    end_line: int
    end_col: int
    content: str


@dataclass(frozen=True)
class Fix:
    """A planned rewrite of one finding; the engine decides it, the codemod only writes the syntax.

    ``applicability`` is SAFE when nothing that could observe the mutation (the view's base,
    another alias, a caller) is read afterwards; ``reason`` says why it is UNSAFE.
    """

    applicability: Applicability
    kind: FixKind
    message: str
    reason: str = ""
    #: the text edits that apply this fix, in source order, non-overlapping; filled once per file by
    #: the codemod (:mod:`inplace_lint.fix.codemod`); every surface reads these, none re-derives them
    edits: Tuple[Edit, ...] = ()


@dataclass(frozen=True)
class Related:
    """A location that explains a finding: a step of its origin chain, or a call site that makes it risky.

    ``line`` is 1-based, ``col`` 0-based (as ``ast``); ``path`` is None for the finding's own file.
    """

    message: str
    line: int
    col: int = 0
    path: Optional[str] = None


@dataclass(frozen=True)
class Finding:
    """One reported site. ``line`` is 1-based, ``col`` 0-based (as ``ast``); flake8 adds 1 to ``col``."""

    code: str
    line: int
    col: int
    end_line: int
    end_col: int
    message: str
    op: str  # `div_`, `/=`, ...
    write_kind: WriteKind
    target: str  # source text of the written tensor
    origin: Origin
    fix: Optional[Fix] = field(default=None, compare=False)
    #: where the origin came from (root, view steps, call sites), for SARIF relatedLocations,
    #: LSP relatedInformation, JSON and the text output's note lines
    related: Tuple[Related, ...] = field(default=(), compare=False)
    #: why there is no fix, where that is worth telling the user (``fix`` is then None): the statement is
    #: nested deeper than the rewriter takes (:func:`inplace_lint.analysis.fixplan.withdraw_unwritable`)
    no_fix: str = field(default="", compare=False)

    @property
    def text(self) -> str:
        return f"{self.code} {self.message}"
