"""IPV006: in-place op on the output of an op that saves its output for backward."""
from ..findings import Origin, RootKind
from .base import Rule


def applies(origin: Origin) -> bool:
    return origin.root is RootKind.SAVED_OUTPUT and origin.is_tensor and not origin.root_no_grad


RULE = Rule(
    code="IPV006",
    name="inplace-on-saved-output",
    summary="In-place op on what `exp`, `sigmoid`, `tanh`, `softmax`, `log_softmax`, `relu`, `sqrt`, `rsqrt` "
            "or `logsumexp` returns, or a view of it, with grad on.",
    advice=(
        "the op saved this output for its backward, so backward fails with \"one of the variables needed for "
        "gradient computation has been modified by an inplace operation\"; use an out-of-place op"
    ),
    applies=applies,
    what=(
        "Finds in-place writes, outside `torch.no_grad()`, to the result of an op whose backward reads its "
        "own output: `exp`, `sigmoid`, `tanh`, `softmax`, `log_softmax`, `relu`, `sqrt`, `rsqrt` and "
        "`logsumexp` (as methods, `torch.` or `F.` functions), and to views of it."
    ),
    why=(
        "The forward call succeeds; the error comes later, at `loss.backward()`: `RuntimeError: one of the "
        "variables needed for gradient computation has been modified by an inplace operation: [...], which "
        "is output 0 of ExpBackward0, is at version 1; expected version 0 instead.` The list was checked op "
        "by op on torch 2.13: the same write after `elu`, `gelu`, `silu`, `log`, `pow`, a Linear layer, "
        "`add` or `mul` is legal. A review bot caught this in TRL's `entropy_from_logits` "
        "(`probs = logps.exp(); probs.mul_(logps)`, TRL PR 7125)."
    ),
    example="""
probs = logps.exp()
probs.mul_(logps)
entropy = -probs.sum(-1)
""",
    use_instead="""
probs = logps.exp()
probs = probs * logps
entropy = -probs.sum(-1)
""",
    fix_safety="Safe when nothing else holds the output; the out-of-place form costs one copy.",
    references="TRL PR 7125 review; PyTorch docs: Autograd mechanics, In-place operations (saved tensors)",
)
