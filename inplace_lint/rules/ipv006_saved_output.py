"""IPV006: in-place op on a tensor autograd saved for backward: an op's output, or an input it read.

What each op's backward reads comes from torch's derivative formulas (``ops.SAVED_FOR_BACKWARD``,
generated from derivatives.yaml; docs/pytorch-facts.md#saved-output and #saved-input).
"""
from ..findings import SAVED_STEPS, Origin, RootKind, StepKind, saver_parts
from .base import Example, Rule, Write, root_phrase, target_phrase


def _saved_input_step(origin: Origin):
    return next((s for s in reversed(origin.steps) if s.kind is StepKind.SAVED_INPUT), None)


def _saved_for_other_step(origin: Origin):
    return next((s for s in reversed(origin.steps) if s.kind is StepKind.SAVED_FOR_OTHER), None)


def applies(origin: Origin, write: Write) -> bool:
    # the grad mode that matters is the one the tensor was saved in (``grad_at_origin``): a root made with
    # grad off saved nothing, and a saved-input step is only recorded when the op ran with grad on
    if not origin.is_tensor:
        return False
    other = _saved_for_other_step(origin)
    if other is not None:
        # read for another input's gradient, and that input requires grad by evidence (checked where the op ran,
        # with grad on): whether this tensor requires grad does not matter
        return not other.no_grad
    if origin.root_no_grad:
        return False
    if origin.root is RootKind.SAVED_OUTPUT:
        return True
    # a tensor that requires grad by evidence (not only a name's guess), passed to an op whose backward reads it;
    # or a local computed from parameters alone by torch ops, marked under a guess its function's callers decide
    # (`Origin.guess_param`, with the condition naming the parameter: not any guess a call passes on)
    return (origin.grad_evidence or _marked_under_guess(origin)) and _saved_input_step(origin) is not None


def _marked_under_guess(origin: Origin) -> bool:
    """The origin :meth:`~inplace_lint.analysis.call_grad.CallGradMixin.mark_saved_input` made for an untracked
    local computed from parameters (a guess about ``guess_param``, saved on the line it was made), not a caller's
    guess handed on through a parameter."""
    return origin.guess_param >= 0 and origin.guessed and origin.condition is not None and bool(origin.steps) \
        and origin.steps[0].kind is StepKind.SAVED_INPUT and origin.steps[0].line == origin.root_line


def through_data(origin: Origin) -> bool:
    """The write goes through ``.data`` after the tensor was saved: autograd's version check does not see it."""
    saved = next((i for i, s in enumerate(origin.steps) if s.kind in SAVED_STEPS), -1)
    return any(s.text == ".data" for s in origin.steps[saved + 1:])


def message(write: Write, origin: Origin) -> str:
    if through_data(origin):
        return _message(write, origin).replace(": the backward raises", "") + (
            "; through `.data` the backward does not raise but silently uses the written values")
    return _message(write, origin)


def _message(write: Write, origin: Origin) -> str:
    other = _saved_for_other_step(origin)
    if other is not None:
        op, layer = saver_parts(other.text)
        what = f"`{op}`" + (f" (`{layer}`, line {other.line})" if layer else f" (line {other.line})")
        if origin.guess_param >= 0:  # the other input requires grad when a parameter does (its condition says which)
            return (f"{write.op} writes in place to `{write.target}`, which {what} saved for backward to compute the "
                    f"gradient of another input: the backward raises when that input requires grad, whether or not "
                    f"`{write.target}` itself requires grad")
        return (f"{write.op} writes in place to `{write.target}`, which {what} saved for backward to compute the "
                f"gradient of an input that requires grad: the backward raises, whether or not "
                f"`{write.target}` itself requires grad")
    step = _saved_input_step(origin)
    if origin.root is not RootKind.SAVED_OUTPUT and step is not None:
        what = f"`{write.target}`" if write.target == origin.root_text else \
            f"`{write.target}` ({root_phrase(origin)})"
        return (f"{write.op} writes in place to {what}, which `{step.text}` (line {step.line}) saved for "
                f"backward as its input: the backward raises")
    root = f"`{origin.root_text}`, whose output autograd saves for backward"
    text = f"{write.op} writes in place to {target_phrase(write, origin, root)}"
    if write.condition:  # in-place dropout writes only in training mode with p above 0
        return f"{text}; backward raises when {write.condition}"
    return text


RULE = Rule(
    code="IPV006",
    name="inplace-on-saved-output",
    severity="warning",
    summary="In-place op on a tensor autograd saved for backward: the output of `exp`, `softmax`, `sqrt`, "
            "`torch.cdist`, `norm`, ... (or a view of it), or an input that `torch.linalg.norm`, `log`, `pow`, "
            "... read, written after the op ran with grad on.",
    applies=applies,
    message=message,
    grad_at_origin=True,
    what=(
        "Finds in-place writes to a tensor whose backward is still to run and reads it: the result of an op "
        "whose backward reads its own output (`exp`, `sigmoid`, `tanh`, `softmax`, `log_softmax`, `relu`, "
        "`sqrt`, `rsqrt`, `logsumexp`, `torch.cdist`, `Tensor.norm`, `std`, `prod`, `reciprocal`, the "
        "`torch.linalg` decompositions and norms, ..., and the outputs of a tuple-returning op its backward "
        "reads: `q, r = torch.linalg.qr(a)`, `torch.linalg.eigh`, `svd`), and to views of it; and a tensor that "
        "may require grad "
        "(a model output, a tensor computed from one, a parameter annotated `torch.Tensor` whose callers pass "
        "one) after it was passed to an op whose backward reads that input (`x /= torch.linalg.norm(x)`); and "
        "any tensor an op or a `torch.nn` layer read to compute the gradient of its *other* input, once that "
        "input requires grad (`h = self.proj(x); x.masked_fill_(m, 0)`, `y = x * self.scale; x += 1`: the "
        "layer's weights, the parameter). "
        "Which op saves what is generated from torch's own derivative formulas (derivatives.yaml), not a "
        "hand-made list. The op must have run with grad on; the write may be inside `torch.no_grad()`: that "
        "does not help (then no fix is offered)."
    ),
    why=(
        "The forward call succeeds; the error comes later, at `loss.backward()`: `RuntimeError: one of the "
        "variables needed for gradient computation has been modified by an inplace operation: [...], which "
        "is output 0 of ExpBackward0, is at version 1; expected version 0 instead.` Each entry of the table "
        "is executed on torch 2.13 (docs/pytorch-facts.md#saved-output, #saved-input, "
        "#grad-off-write-of-saved): the same write after `elu`, `gelu`, `silu`, `pow`, a Linear layer, `add` "
        "or `mul` is legal. An input read only for another input's gradient (`x` in `x @ w`, a row `t[j]` in "
        "`p * t[j]`) is saved too, whether or not it requires grad itself: a later write to it (or to another row "
        "of its base) is reported when that other input requires grad by evidence, or is computed from a "
        "parameter annotated `torch.Tensor` (then the callers decide, and the message says which parameter: \"it "
        "does when `expiry` requires grad\"). An integer index or bool mask an op's backward reads (`h.gather(1, idx)`, "
        "`F.nll_loss(logp, labels)`, `torch.where(mask, a, b)`, `masked_fill`, `index_select`, `scatter_add`, "
        "`self.table[pos]` with a tensor `pos`: docs/pytorch-facts.md#saved-index) is saved the same way: written in place "
        "after the op ran with grad on, while the op's float input requires grad by evidence, it is reported. "
        "A review bot caught this in TRL's `entropy_from_logits` (`probs = logps.exp(); "
        "probs.mul_(logps)`, TRL PR 7125). It is a warning: when nothing that requires grad reaches the op, "
        "nothing raises. Whether the op's input requires grad needs evidence: a model or submodule output, "
        "arithmetic on one, or, for a parameter, a caller in the project that passes one; an input nothing "
        "speaks for is unknown and not reported. An in-place dropout of such an output "
        "(`F.dropout(probs, self.p, self.training, inplace=True)`, or an `nn.Dropout(inplace=True)` "
        "module applied to it) writes only in training mode with a dropout probability above 0 "
        "(docs/pytorch-facts.md#dropout): the message names that condition, \"backward raises when "
        "`self.training` is true and the dropout probability `self.p` is above 0\", and a call that "
        "passes `training=False` or `p=0` is not reported. Written through `.data` (`probs.data.masked_fill_(...)`) "
        "the write does not raise at all: `.data` has its own version counter, so the backward silently uses the "
        "written values and the gradients are wrong (docs/pytorch-facts.md#detach-ends-tracking; coqui-tts' "
        "dynamic-convolution attention); the message says so."
    ),
    fix_safety="Safe when nothing else holds the tensor; the out-of-place form costs one copy. No fix for a write "
               "inside `torch.no_grad()` (the copy would need no grad and the backward would lose that path), nor "
               "for one through `.data` (whether the backward should see the new values is the author's choice).",
    references="TRL PR 7125 review; PyTorch docs: Autograd mechanics, In-place operations (saved tensors); "
               "derivatives.yaml; docs/pytorch-facts.md#saved-output, #saved-input",
    invalid=(
        Example(
            """
            def entropy(model, ids):
                logits = model(ids).logits
                probs = logits.softmax(-1)
                log_probs = logits.log_softmax(-1)
                probs.mul_(log_probs)
                return -probs.sum(-1)
            """,
            message="`mul_` writes in place to `probs`, `logits.softmax(-1)`, whose output autograd saves for "
                    "backward",
            fix="""
                try:
                    from torch.distributed.tensor import DTensor
                except ImportError:  # torch < 2.5
                    from torch.distributed._tensor import DTensor

                def entropy(model, ids):
                    logits = model(ids).logits
                    probs = logits.softmax(-1)
                    log_probs = logits.log_softmax(-1)
                    if isinstance(probs, DTensor) and not isinstance(log_probs, DTensor) and getattr(log_probs, "ndim", 0) > 0:
                        probs = probs.full_tensor()
                    probs = probs.clone().mul_(log_probs)
                    return -probs.sum(-1)
                """,
        ),
        Example(
            """
            import torch.nn.functional as F

            def attend(scores, p, training):
                probs = scores.softmax(-1)
                F.dropout(probs, p, training, inplace=True)
                return probs
            """,
            message="`F.dropout(..., inplace=True)` writes in place to `probs`, `scores.softmax(-1)`, whose output "
                    "autograd saves for backward; backward raises when `training` is true and the dropout "
                    "probability `p` is above 0",
            fix="""
                import torch.nn.functional as F

                def attend(scores, p, training):
                    probs = scores.softmax(-1)
                    probs = F.dropout(probs, p, training)
                    return probs
                """,
        ),
        Example(
            """
            import torch

            def embed(model, ids):
                h = model(ids).last_hidden_state * 2
                h /= torch.linalg.norm(h, dim=-1, keepdim=True)
                return h
            """,
            message="`/=` writes in place to `h` (`model(ids).last_hidden_state * 2`), which `torch.linalg.norm` "
                    "(line 5) saved for backward as its input",
            fix="""
                import torch
                try:
                    from torch.distributed.tensor import DTensor
                except ImportError:  # torch < 2.5
                    from torch.distributed._tensor import DTensor

                def embed(model, ids):
                    h = model(ids).last_hidden_state * 2
                    _h_operand = torch.linalg.norm(h, dim=-1, keepdim=True)
                    if isinstance(h, DTensor) and not isinstance(_h_operand, DTensor) and getattr(_h_operand, "ndim", 0) > 0:
                        h = h.full_tensor()
                    h = h.clone().div_(_h_operand)
                    return h
                """,
        ),
        Example(
            """
            import torch

            def pairwise(x, centers):
                d = torch.cdist(x, centers)
                d.clamp_(min=1e-6)
                return d
            """,
            message="`clamp_` writes in place to `d`, `torch.cdist(x, centers)`, whose output autograd saves for "
                    "backward",
            fix="""
                import torch

                def pairwise(x, centers):
                    d = torch.cdist(x, centers)
                    d = d.clone().clamp_(min=1e-6)
                    return d
                """,
        ),
    ),
    valid=(
        """
        def entropy(model, ids):
            logits = model(ids).logits
            probs = logits.softmax(-1)
            log_probs = logits.log_softmax(-1)
            return -(probs * log_probs).sum(-1)
        """,
        """
        def gelu_then_scale(x, scale):
            h = x.gelu()
            h.mul_(scale)
            return h
        """,
        """
        import torch.nn.functional as F

        def attend_eval(scores):
            probs = scores.softmax(-1)
            F.dropout(probs, 0.1, training=False, inplace=True)
            return probs
        """,
        """
        import torch

        def project(x: torch.Tensor, w):
            y = x @ w
            x.mul_(2)
            return y
        """,
    ),
)
