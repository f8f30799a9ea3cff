"""IPV005: a view made with grad off, written in place after grad is back on."""
from ..findings import Origin, RootKind
from .base import Example, Rule, Write, root_phrase


def applies(origin: Origin, write: Write) -> bool:
    return (
        origin.is_tensor
        and not origin.root_no_grad
        and origin.root is not RootKind.FRESH
        and any(s.no_grad for s in origin.steps)
    )


def message(write: Write, origin: Origin) -> str:
    step = next(s for s in origin.steps if s.no_grad)
    return (f"{write.op} writes in place, with grad on, to `{write.target}`, a view (`{step.text}`) "
            f"made under no_grad of {root_phrase(origin)}")


RULE = Rule(
    code="IPV005",
    name="inplace-on-no-grad-view",
    severity="warning",
    summary="In-place op, with grad on, on a view made inside `torch.no_grad()` of a tensor made outside it.",
    applies=applies,
    message=message,
    what=(
        "Finds views made inside `torch.no_grad()`, `torch.inference_mode()` or "
        "`torch.set_grad_enabled(False)` of a tensor that existed before the block, and written "
        "in place after the block (with grad on)."
    ),
    why=(
        "If the base requires grad, PyTorch raises `RuntimeError: A view was created in no_grad "
        "mode and is being modified inplace with grad mode enabled. ...` "
        "(docs/pytorch-facts.md#no-grad-view). Writes inside the block are not reported (grad is "
        "off there)."
    ),
    fix_safety="Safe when the base is not read afterwards; otherwise unsafe.",
    references="PyTorch docs: Autograd mechanics, Locally disabling gradient computation; "
               "docs/pytorch-facts.md#no-grad-view",
    invalid=(
        Example(
            """
            import torch

            def scale_last(hidden, scale):
                with torch.no_grad():
                    head = hidden[:, -1]
                head.mul_(scale)
                return head
            """,
            message="`mul_` writes in place, with grad on, to `head`, a view (`[:, -1]`) made under no_grad of "
                    "`hidden`",
            fix="""
                import torch
                try:
                    from torch.distributed.tensor import DTensor
                except ImportError:  # torch < 2.5
                    from torch.distributed._tensor import DTensor

                def scale_last(hidden, scale):
                    with torch.no_grad():
                        head = hidden[:, -1]
                    if isinstance(head, DTensor) and not isinstance(scale, DTensor) and getattr(scale, "ndim", 0) > 0:
                        head = head.full_tensor()
                    head = head.clone().mul_(scale)
                    return head
                """,
        ),
    ),
    valid=(
        """
        import torch

        def scale_last(hidden, scale):
            with torch.no_grad():
                head = hidden[:, -1]
            head = head * scale
            return head
        """,
        """
        import torch

        def scale_last(hidden, scale):
            with torch.no_grad():
                head = hidden[:, -1]
                head.mul_(scale)
            return head
        """,
    ),
)
