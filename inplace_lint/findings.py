"""Frozen value types shared by the engine and every adapter: origins, findings, fixes."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Optional, Tuple, Union


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
    #: tensor_split/hsplit/vsplit/dsplit: a tuple of ordinary (slicing) views, each writable like ``x[a:b]``
    SLICED_VIEWS = "views by slicing"
    ELEMENT = "element"  # one element of a multi-output view, or a loop variable over a tensor
    EXPAND = "expanded view"
    ALIAS = "alias"  # the result of an in-place op is its receiver
    #: the same tensor, read by the backward of an op it was passed to with grad on (``torch.linalg.norm(x)``)
    SAVED_INPUT = "saved for backward by"
    #: the same tensor (or the base of the view passed), read by the backward of an op, run with grad on, for
    #: the gradient of *another* input that requires grad by evidence (``x`` in ``x * self.w``, ``self.fc(x)``):
    #: a later write fails at backward whether or not this tensor requires grad
    SAVED_FOR_OTHER = "saved for another input's gradient by"
    #: held at one position of a tuple or list literal (``return z, torch.logsumexp(x, 1)``): the text is
    #: ``(i)``; unpacking or indexing the tuple at ``i`` gives the tensor back, other positions do not
    TUPLE_ITEM = "tuple item"
    #: where an ``isinstance`` test found no tensor (``isinstance(y, TensorList)``): a parameter's placeholder
    #: there stands only for containers the caller passed (a ``chunk`` tuple, a model's output object); a single
    #: tensor passed for it never reaches that arm, and an origin with this step is no tensor
    NOT_TENSOR = "not a tensor here"
    #: where an ``isinstance`` test found an instance of a class other than ``torch.Tensor`` itself (a project
    #: tensor subclass, ``DTensor``): a parameter's placeholder there stands only for what the caller passed
    #: that may be such an instance; a torch factory's plain tensor passed for it never reaches that arm
    SUBCLASS_INSTANCE = "a tensor subclass instance here"
    #: where a test found it empty (``if x.numel() == 0: return x``): the same tensor, with no element a write
    #: reaches, so no two elements share memory (an expanded view there is no hazard; autograd's checks still run)
    EMPTY = "empty here"


#: steps that leave the tensor itself (not a view of it)
SAME_TENSOR_STEPS = frozenset({StepKind.ALIAS, StepKind.SAVED_INPUT, StepKind.SAVED_FOR_OTHER, StepKind.EMPTY})
#: steps recording that an op ran with grad on and its backward reads the tensor
SAVED_STEPS = frozenset({StepKind.SAVED_INPUT, StepKind.SAVED_FOR_OTHER})


def saver_text(op: str, layer: str = "") -> str:
    """A saved-input step's text: what read the tensor (``self.proj(...)``), and the torch layer that did when
    there is one (``self.proj(...) [nn.Linear]``); :func:`saver_parts` reads it back."""
    return f"{op} [{layer}]" if layer else op


def saver_parts(text: str) -> Tuple[str, str]:
    """``("self.proj(...)", "nn.Linear")`` for ``self.proj(...) [nn.Linear]``; the layer is "" when none."""
    op, _, layer = text.partition(" [")
    return op, layer[:-1] if layer.endswith("]") else layer


@dataclass(frozen=True)
class Step:
    """One link of an origin chain: ``.squeeze(0)`` on line 1111."""

    kind: StepKind
    text: str
    line: int
    no_grad: bool = False  # made while grad mode was off
    #: the file ``line`` is in; None for the file where the origin is used (a step taken in another file,
    #: inside a callee or a caller, names its file: :func:`inplace_lint.analysis.summaries.located`)
    path: Optional[str] = None


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
    #: the file ``root_line`` is in; None for the file where the origin is used (as ``Step.path``)
    path: Optional[str] = None
    #: when the root is risky only for some of the implementations a call may run (``self.kernel(x)``
    #: with ``kernel`` one of several project classes): which one, for the message
    condition: str = ""
    #: >= 0 for an op's output saved for backward whose input is known only as parameter ``guess_param`` of the
    #: function (nothing proves it requires grad): its callers decide (what they pass for it), -1 otherwise
    guess_param: int = -1
    #: the root is a guess that the value is a tensor (a parameter's ``torch.Tensor`` annotation, the receiver
    #: of ``x.chunk(2)``, arithmetic on such guesses): no evidence that it requires grad
    guessed: bool = False

    def derived_from(self, other: "Origin") -> bool:
        """This origin is ``other`` or a view of it: the same root, ``other``'s steps and maybe more."""
        return self.root is other.root and self.root_text == other.root_text and self.root_line == other.root_line \
            and self.path == other.path and self.steps[:len(other.steps)] == other.steps

    def extend(self, step: Step) -> "Origin":
        return Origin(self.root, self.root_text, self.root_line, self.steps[-7:] + (step,), self.root_no_grad,
                      self.certain_tensor, self.path, self.condition, self.guess_param, self.guessed)

    @property
    def is_container(self) -> bool:
        """A tuple of views (``x.chunk(2)``), a model's output object, or a tuple literal holding the tensor
        (:attr:`StepKind.TUPLE_ITEM`): not known to be one tensor."""
        if self.steps:
            return self.steps[-1].kind in (StepKind.MULTI_VIEW, StepKind.SLICED_VIEWS, StepKind.TUPLE_ITEM) or \
                self.has(StepKind.NOT_TENSOR)
        return self.root is RootKind.MODEL_OUTPUT_OBJECT

    @property
    def is_tensor(self) -> bool:
        return not self.is_container

    @property
    def grad_evidence(self) -> bool:
        """Something made the root require grad when grad was on: a model output, a custom Function's output,
        an op's output saved for backward, arithmetic on one of those (``logits * 2``), or a factory with
        ``requires_grad=True``. A root that is only a name (a parameter annotated ``torch.Tensor``, the
        receiver of ``x.chunk(2)``) is a guess that the value is a tensor, not that it requires grad."""
        # (a parameter's placeholder, ``"\x00param:i"``, is what a caller passes: not evidence by itself)
        return not (self.root_no_grad or self.root is RootKind.FRESH or self.guess_param >= 0 or self.guessed
                    or self.root_text.startswith("\x00"))

    def has(self, kind: StepKind) -> bool:
        return any(s.kind is kind for s in self.steps)

    def related(self) -> Tuple["Related", ...]:
        """The chain as locations: the root, then each view step (aliases left out), each in its own file
        (``path`` None: the file where the origin is used)."""
        root = f"{self.root.value} `{self.root_text}`" if self.root is not RootKind.TENSOR else f"`{self.root_text}`"
        out = [Related(root, self.root_line, path=self.path)] if self.root_line else []
        out += [Related(f"{s.kind.value} `{s.text}`", s.line, path=s.path) for s in self.steps
                if s.kind not in (StepKind.ALIAS, StepKind.EMPTY) and s.line]
        return tuple(out)

    def describe(self) -> str:
        """``a view (`.squeeze(0)`, line 1111) of model output `output.logits```."""
        root = f"{self.root.value} `{self.root_text}`"
        if self.root is RootKind.TENSOR:
            root = f"`{self.root_text}`"
        views = [s for s in self.steps if s.kind not in SAME_TENSOR_STEPS]
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
class Scaling:
    """A write that is the temperature idiom, ``logits.div_(T.clamp(min=eps).unsqueeze(-1).to(logits.dtype))``
    or ``logits /= <a Python number>``, which ``inplace_lint.runtime.scale_logits`` computes with the same
    values, dtype and gradients (the analysis proved the form; :mod:`inplace_lint.analysis.fixplan`).

    ``temperature``: the source spans (line 1-based, col 0-based as ``ast``: UTF-8 bytes; end line, end
    col) whose text, joined, is the temperature argument with the original's broadcast and without its
    clamp and cast (``temperature_rmpad`` + ``.unsqueeze(-1)``); ``eps``: the span of the clamp's bound as
    written (``1e-8``), or the text ``"None"`` when the original did not clamp, ``""`` when the default
    bound is exact (a literal temperature above it); ``trailing``: a tensor temperature, passed with
    ``broadcast="trailing"`` so it broadcasts as it did in the in-place division."""

    temperature: Tuple[Tuple[int, int, int, int], ...]
    eps: Union[str, Tuple[int, int, int, int]]
    trailing: bool


class RewriteForm(enum.Enum):
    """How a fix rewrites the write (the part of a :class:`Recipe` that no style changes)."""

    #: run the in-place ``method`` on a copy: ``x = x.clone().div_(t)`` (runtime style: ``out_of_place``)
    ON_COPY = "on a copy"
    #: copy first, then the write as written: ``x = x.clone()`` and ``x[m] = v`` or ``x.fill_(v)`` (an op with
    #: no out-of-place twin, item assignment; runtime style: ``out_of_place`` for a method)
    CLONE_FIRST = "clone first"
    #: the same function on a copy: ``x = torch.relu_(x.clone())``
    FUNCTION_ON_COPY = "function on a copy"
    #: the call without its ``inplace`` argument: ``x = F.relu(x)``
    DROP_INPLACE_FLAG = "drop the inplace flag"
    #: ``out=`` a fresh tensor like the target (the same dtype check and resize rules): ``out=torch.empty_like(x)``
    FRESH_OUT = "fresh out"


@dataclass(frozen=True)
class Recipe:
    """How a planned fix is written: decided once, by the analysis (:mod:`inplace_lint.analysis.fixplan.recipe`);
    the two printers of :mod:`inplace_lint.fix` (text and libcst) only print it, in the style asked for.

    ``kind``: a statement of its own or a write hoisted out of a larger statement; ``form``: the rewrite;
    ``method``: the in-place method the rewrite runs (``div_`` for ``x /= t``), ``""`` for other writes;
    ``scaling``: the write is the temperature idiom, which the runtime style writes as ``scale_logits``
    (None: it is not). What the style adds is printed from these: the runtime call for a ``method``, the
    DTensor guard on the operands (inline style), and the imports either needs."""

    kind: FixKind
    form: RewriteForm
    method: str = ""
    scaling: Optional[Scaling] = None


@dataclass(frozen=True)
class Fix:
    """A planned rewrite of one finding; the engine decides it (``recipe``), the codemod only writes the syntax.

    ``applicability`` is SAFE when nothing that could observe the mutation (the view's base,
    another alias, a caller) is read afterwards; ``reason`` says why it is UNSAFE.
    """

    applicability: Applicability
    recipe: Recipe
    message: str
    reason: str = ""
    #: the text edits that apply this fix, in source order, non-overlapping; filled once per file by
    #: :func:`inplace_lint.fix.attach.attach_edits`; every surface reads these, none re-derives them
    edits: Tuple[Edit, ...] = ()

    @property
    def kind(self) -> FixKind:
        return self.recipe.kind

    @property
    def scaling(self) -> Optional[Scaling]:
        """The write is the temperature idiom: the runtime style calls ``scale_logits`` (None: it is not)."""
        return self.recipe.scaling

    def checked(self, callers: int) -> "Fix":
        """This fix, made safe by checking its ``callers`` (in-project call sites), saying so in its message."""
        return replace(self, message=f"{self.message} (safe: callers in this project checked: {callers})", reason="")


@dataclass(frozen=True)
class Related:
    """A location that explains a finding: a step of its origin chain, or a call site that makes it risky.

    ``line`` is 1-based, ``col`` 0-based (as ``ast``); ``path`` is None for the finding's own file.
    """

    message: str
    line: int
    col: int = 0
    path: Optional[str] = None
    #: ``HELPER_WRITE``: the finding is at a call and stands for this write inside the called helper
    #: (fixing that write, where it is reported too, fixes the call's finding as well)
    role: Optional[str] = None


#: :attr:`Related.role` of the write a finding at a call stands for
HELPER_WRITE = "helper-write"


def helper_write(finding: "Finding") -> Optional[Related]:
    """The write inside a helper that ``finding`` (at the call) stands for, if it is such a finding."""
    first = finding.related[0] if finding.related else None
    return first if first is not None and first.role == HELPER_WRITE else None


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
    #: nested deeper than the rewriter takes, or the rewrite needs a name the module does not import
    #: (:func:`inplace_lint.analysis.fixplan.withdraw_unwritable`)
    no_fix: str = field(default="", compare=False)

    @property
    def text(self) -> str:
        return f"{self.code} {self.message}"
