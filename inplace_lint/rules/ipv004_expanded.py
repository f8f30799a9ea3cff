"""IPV004: in-place op on an expanded (broadcast) tensor."""
from ..findings import Origin, StepKind
from .base import Rule


def applies(origin: Origin) -> bool:
    return origin.has(StepKind.EXPAND) and origin.is_tensor


RULE = Rule(
    code="IPV004",
    name="inplace-on-expanded-tensor",
    summary="In-place op on the result of `expand`, `expand_as` or `broadcast_to`.",
    advice=(
        "its elements share memory, so the write raises with or without grad; "
        "use an out-of-place op or clone() first"
    ),
    applies=applies,
    without_grad=True,
    what="Finds in-place writes to a tensor made by `expand`, `expand_as` or `broadcast_to`, or a view of one.",
    why=(
        "An expanded tensor has stride 0 along the broadcast dims: many elements are one memory "
        "location. PyTorch raises `RuntimeError: unsupported operation: more than one element "
        "of the written-to tensor refers to a single memory location. Please clone() the tensor "
        "before performing the operation.` (once a silent bug: pytorch #4664). A broadcast "
        "temperature that is then `clamp_`ed hits this."
    ),
    example="""
t = temperature.expand(n)
t.clamp_(min=1e-8)
""",
    use_instead="""
t = temperature.expand(n)
t = t.clamp(min=1e-8)
""",
    fix_safety="Safe when the expanded tensor's base is not read afterwards; otherwise unsafe.",
    references="pytorch #4664; PyTorch docs: torch.Tensor.expand",
)
