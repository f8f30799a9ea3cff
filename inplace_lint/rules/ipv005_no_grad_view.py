"""IPV005: a view made with grad off, written in place after grad is back on."""
from ..findings import Origin, RootKind
from .base import Rule


def applies(origin: Origin) -> bool:
    return (
        origin.is_tensor
        and not origin.root_no_grad
        and origin.root is not RootKind.FRESH
        and any(s.no_grad for s in origin.steps)
    )


RULE = Rule(
    code="IPV005",
    name="inplace-on-no-grad-view",
    summary="In-place op, with grad on, on a view made inside `torch.no_grad()` of a tensor made outside it.",
    advice=(
        "a view made in no_grad mode cannot be modified in place with grad on when its base "
        "requires grad; use an out-of-place op"
    ),
    applies=applies,
    what=(
        "Finds views made inside `torch.no_grad()`, `torch.inference_mode()` or "
        "`torch.set_grad_enabled(False)` of a tensor that existed before the block, and written "
        "in place after the block (with grad on)."
    ),
    why=(
        "If the base requires grad, PyTorch raises `RuntimeError: A view was created in no_grad "
        "mode and is being modified inplace with grad mode enabled. ...`. Writes inside the block "
        "are not reported (grad is off there)."
    ),
    example="""
with torch.no_grad():
    head = hidden[:, -1]
head.mul_(scale)
""",
    use_instead="""
with torch.no_grad():
    head = hidden[:, -1]
head = head * scale
""",
    fix_safety="Safe when the base is not read afterwards; otherwise unsafe.",
    references="PyTorch docs: Autograd mechanics, Locally disabling gradient computation",
)
