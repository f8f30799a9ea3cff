"""IPV002: in-place op on the output of a custom autograd Function or a DTensor's local view."""
from ..findings import Origin, RootKind
from .base import Rule


def applies(origin: Origin) -> bool:
    return origin.root is RootKind.CUSTOM_FUNCTION and origin.is_tensor and not origin.root_no_grad


RULE = Rule(
    code="IPV002",
    name="inplace-on-custom-function-output",
    summary="In-place op on what `Fn.apply(...)`, `dt.to_local()` or `dt.full_tensor()` returns, or a view of it.",
    advice=(
        "PyTorch forbids in-place ops on a view made inside a custom autograd Function "
        "when grad is on; use an out-of-place op or clone() first"
    ),
    applies=applies,
    what=(
        "Finds in-place writes to the result of a custom `torch.autograd.Function` "
        "(`SomeFn.apply(...)`), of `DTensor.to_local()` or of `DTensor.full_tensor()` "
        "(both go through the custom Function `_ToTorchTensor`), and to views of them."
    ),
    why=(
        "When the Function returns a view of its input (or the input as-is), autograd "
        "cannot rebase the custom backward, and the in-place op raises `RuntimeError: Output 0 "
        "of ... is a view and is being modified inplace. This view was created inside a "
        "custom Function ...`. A DTensor guard (`x = x.full_tensor()`) followed by an in-place "
        "op still raises for this reason: the guard only works with an out-of-place op after it."
    ),
    example="""
local = logits.full_tensor()
local.div_(temperature)
""",
    use_instead="""
local = logits.full_tensor()
local = local / temperature.to(local.dtype)
""",
    fix_safety="Safe when the Function's input and other aliases are not read afterwards; otherwise unsafe.",
    references="PyTorch pull 56093 (view+inplace on custom Function outputs made an error); DeepSpeed #846; verl PR 6935",
)
