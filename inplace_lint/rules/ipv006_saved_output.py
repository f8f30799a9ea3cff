"""IPV006: in-place op on the output of an op that saves its output for backward."""
from ..findings import Origin, RootKind
from .base import Example, Rule, Write, target_phrase


def applies(origin: Origin, write: Write) -> bool:
    return origin.root is RootKind.SAVED_OUTPUT and origin.is_tensor and not origin.root_no_grad


def message(write: Write, origin: Origin) -> str:
    root = f"`{origin.root_text}`, whose output autograd saves for backward"
    text = f"{write.op} writes in place to {target_phrase(write, origin, root)}"
    if write.condition:  # in-place dropout writes only in training mode with p above 0
        return f"{text}; backward raises when {write.condition}"
    return text


RULE = Rule(
    code="IPV006",
    name="inplace-on-saved-output",
    severity="warning",
    summary="In-place op on what `exp`, `sigmoid`, `tanh`, `softmax`, `log_softmax`, `relu`, `sqrt`, `rsqrt` "
            "or `logsumexp` returns, or a view of it, with grad on.",
    applies=applies,
    message=message,
    what=(
        "Finds in-place writes, outside `torch.no_grad()`, to the result of an op whose backward reads its "
        "own output: `exp`, `sigmoid`, `tanh`, `softmax`, `log_softmax`, `relu`, `sqrt`, `rsqrt` and "
        "`logsumexp` (as methods, `torch.` or `F.` functions), and to views of it."
    ),
    why=(
        "The forward call succeeds; the error comes later, at `loss.backward()`: `RuntimeError: one of the "
        "variables needed for gradient computation has been modified by an inplace operation: [...], which "
        "is output 0 of ExpBackward0, is at version 1; expected version 0 instead.` The list was checked op "
        "by op on torch 2.13 (docs/pytorch-facts.md#saved-output): the same write after `elu`, `gelu`, "
        "`silu`, `log`, `pow`, a Linear layer, `add` or `mul` is legal. A review bot caught this in TRL's "
        "`entropy_from_logits` (`probs = logps.exp(); probs.mul_(logps)`, TRL PR 7125). It is a warning: "
        "when the input does not require grad, nothing raises. An in-place dropout of such an output "
        "(`F.dropout(probs, self.p, self.training, inplace=True)`, or an `nn.Dropout(inplace=True)` "
        "module applied to it) writes only in training mode with a dropout probability above 0 "
        "(docs/pytorch-facts.md#dropout): the message names that condition, \"backward raises when "
        "`self.training` is true and the dropout probability `self.p` is above 0\", and a call that "
        "passes `training=False` or `p=0` is not reported."
    ),
    fix_safety="Safe when nothing else holds the output; the out-of-place form costs one copy.",
    references="TRL PR 7125 review; PyTorch docs: Autograd mechanics, In-place operations (saved tensors); "
               "docs/pytorch-facts.md#saved-output",
    invalid=(
        Example(
            """
            def entropy(logits):
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

                def entropy(logits):
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
    ),
    valid=(
        """
        def entropy(logits):
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
    ),
)
