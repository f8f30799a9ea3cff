"""IPV002: in-place op on the output of a custom autograd Function or a DTensor's local tensor."""
from ..findings import Origin, RootKind
from .base import Example, Rule, Write, target_phrase


def applies(origin: Origin, write: Write) -> bool:
    return origin.root is RootKind.CUSTOM_FUNCTION and origin.is_tensor and not origin.root_no_grad


def message(write: Write, origin: Origin) -> str:
    # Say what is known: the output of the Function, not "a view made inside it" (whether the
    # Function returns a view is decided at run time; docs/pytorch-facts.md#custom-function-view)
    text = origin.root_text
    if text.endswith((".to_local()", ".full_tensor()")):
        method = text.rsplit(".", 1)[1]
        root = f"`{text}` (`DTensor.{method}` runs a custom autograd Function)"
    elif ".apply(" in text:
        root = f"the output of custom autograd Function `{text}`"
    else:  # an in-project function that returns one (its summary says so)
        root = f"what `{text}` returns, a custom autograd Function's output"
    return f"{write.op} writes in place to {target_phrase(write, origin, root)}"


RULE = Rule(
    code="IPV002",
    name="inplace-on-custom-function-output",
    severity="error",
    summary="In-place op on what `Fn.apply(...)`, `dt.to_local()` or `dt.full_tensor()` returns, or a view of it.",
    applies=applies,
    message=message,
    what=(
        "Finds in-place writes, with grad on, to the result of a custom `torch.autograd.Function` "
        "(`SomeFn.apply(...)`), of `DTensor.to_local()` or of `DTensor.full_tensor()` "
        "(both go through the custom Function `_ToTorchTensor`), and to views of them. "
        "`.detach()` and `.data` end the chain (docs/pytorch-facts.md#detach-ends-tracking)."
    ),
    why=(
        "When the Function returns a view of its input (or the input as-is), autograd "
        "cannot rebase the custom backward, and the in-place op raises `RuntimeError: Output 0 "
        "of ... is a view and is being modified inplace. This view was created inside a "
        "custom Function ...` (docs/pytorch-facts.md#custom-function-view). `to_local()` always "
        "returns such a view (docs/pytorch-facts.md#dtensor-local-is-custom-function). A DTensor "
        "guard (`x = x.full_tensor()`) followed by an in-place op still raises for this reason: "
        "the guard only works with an out-of-place op after it."
    ),
    fix_safety="Safe when the Function's input and other aliases are not read afterwards; otherwise unsafe.",
    references=(
        "PyTorch pull 56093 (view+inplace on custom Function outputs made an error); DeepSpeed #846; "
        "verl PR 6935; docs/pytorch-facts.md#custom-function-view"
    ),
    invalid=(
        Example(
            """
            def sharpen(logits, temperature):
                local = logits.full_tensor()
                local.div_(temperature)
                return local
            """,
            message="`div_` writes in place to `local`, `logits.full_tensor()` (`DTensor.full_tensor()` runs a "
                    "custom autograd Function)",
            fix="""
                try:
                    from torch.distributed.tensor import DTensor
                except ImportError:  # torch < 2.5
                    from torch.distributed._tensor import DTensor

                def sharpen(logits, temperature):
                    local = logits.full_tensor()
                    if isinstance(local, DTensor) and not isinstance(temperature, DTensor) and getattr(temperature, "ndim", 0) > 0:
                        local = local.full_tensor()
                    local = local.clone().div_(temperature)
                    return local
                """,
        ),
        Example(
            """
            import torch

            class Identity(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x.view_as(x)

                @staticmethod
                def backward(ctx, grad):
                    return grad

            def double(x):
                y = Identity.apply(x)
                y.mul_(2)
                return y
            """,
            message="`mul_` writes in place to `y`, the output of custom autograd Function `Identity.apply(...)`",
            fix="""
                import torch

                class Identity(torch.autograd.Function):
                    @staticmethod
                    def forward(ctx, x):
                        return x.view_as(x)

                    @staticmethod
                    def backward(ctx, grad):
                        return grad

                def double(x):
                    y = Identity.apply(x)
                    y = y.clone().mul_(2)
                    return y
                """,
        ),
    ),
    valid=(
        """
        def sharpen(logits, temperature):
            local = logits.full_tensor()
            local = local / temperature
            return local
        """,
        """
        def sharpen(logits, temperature):
            local = logits.full_tensor().clone()
            local.div_(temperature)
            return local
        """,
    ),
)
