"""IPV003: in-place op on an element of split/chunk/unbind, or on the loop variable over a tensor."""
from ..findings import Origin, RootKind, StepKind
from .base import Rule


def applies(origin: Origin) -> bool:
    return origin.has(StepKind.ELEMENT) and origin.is_tensor and origin.root is not RootKind.FRESH


RULE = Rule(
    code="IPV003",
    name="inplace-on-multi-output-view",
    summary="In-place op on one output of `split`, `chunk`, `unbind`, `tensor_split`, or on `for t in tensor`.",
    advice="in-place on one output of a multi-output view raises when its base requires grad; use an out-of-place op",
    applies=applies,
    what=(
        "Finds in-place writes to an element of a multi-output view op (`split`, `chunk`, "
        "`unbind`, `tensor_split`, `hsplit`, ...), by index, by tuple unpacking or as the loop "
        "variable of `for t in x.chunk(n)`, and to the loop variable of `for row in tensor` "
        "(iterating a tensor unbinds it)."
    ),
    why=(
        "Autograd cannot track an in-place change to one of several views made by one op. "
        "With a base that requires grad it raises `RuntimeError: Output 0 of SplitBackward0 is "
        "a view and is being modified inplace. This view is the output of a function that "
        "returns multiple views. Such functions do not allow the output views to be modified "
        "inplace.` (torchvision `make_grid`, pytorch #48149)."
    ),
    example="""
for row in images:
    row.sub_(row.min())
""",
    use_instead="""
images = torch.stack([row - row.min() for row in images])
""",
    fix_safety="Unsafe: the in-place write also changes the base, which the out-of-place form does not.",
    references="pytorch #48149, #36608; PyTorch docs: Tensor Views",
)
