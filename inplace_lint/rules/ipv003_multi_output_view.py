"""IPV003: in-place op on an element of split/chunk/unbind, or on the loop variable over a tensor."""
from ..findings import Origin, RootKind, StepKind
from .base import Example, Rule, Write, root_phrase


#: an origin's condition where the value written makes the write raise: an output of ``split`` (or ``unbind``, the
#: loop over a tensor) of a tensor that needs no grad (a factory's) written with a value that requires grad raises
#: "A view was created in no_grad mode ... This view is the output of a function that returns multiple views"
#: (docs/pytorch-facts.md#multi-output-view-grad-value)
GRAD_VALUE_WRITTEN = "written with a value that requires grad"


def applies(origin: Origin, write: Write) -> bool:
    return origin.has(StepKind.ELEMENT) and origin.is_tensor and (
        origin.root is not RootKind.FRESH or origin.condition == GRAD_VALUE_WRITTEN)


def message(write: Write, origin: Origin) -> str:
    views = [s for s in origin.steps if s.kind in (StepKind.MULTI_VIEW, StepKind.ELEMENT)]
    how = next((f"`{s.text}`" for s in views if s.kind is StepKind.MULTI_VIEW), None)
    source = f"{how} of {root_phrase(origin)}" if how else f"the loop over {root_phrase(origin)}"
    if write.base_of is not None:
        name, line = write.base_of
        return (f"{write.op} writes in place to `{write.target}`, the base of `{name}`, one output of {source}, "
                f"which is read again on line {line}: that read raises (a view of several outputs cannot be used "
                f"once its base was changed in place)")
    return f"{write.op} writes in place to `{write.target}`, one output of {source}"


RULE = Rule(
    code="IPV003",
    name="inplace-on-multi-output-view",
    severity="warning",
    summary="In-place op on one output of `split`, `chunk`, `unbind`, or on `for t in tensor`.",
    applies=applies,
    message=message,
    what=(
        "Finds in-place writes to an element of a multi-output view op (`split`, `chunk`, "
        "`unbind`, `split_with_sizes`), by index, by tuple unpacking or as the loop "
        "variable of `for t in x.chunk(n)`, and to the loop variable of `for row in tensor` "
        "(iterating a tensor unbinds it; in a `torch.jit.script` function it is indexed, one `select` view "
        "per step, which may be written). Looping over what an `isinstance` test found to be a list or "
        "another non-tensor class is a loop over its items. The outputs of `tensor_split`, `hsplit`, "
        "`vsplit` and `dsplit` are ordinary slicing views (torch 2.13), followed as views of their base. "
        "Also a write to the base of such an output (or through a view of the base) when the function uses that "
        "output again afterwards in an op autograd records: that use raises (`Output 1 of SplitWithSizes is a view "
        "and its base or another view of its base has been modified inplace`); a read of its shape, `.detach()`, "
        "`.item()`, a comparison or a use under `no_grad` does not."
    ),
    why=(
        "Autograd cannot track an in-place change to one of several views made by one op. "
        "With a base that requires grad it raises `RuntimeError: Output 0 of Split is "
        "a view and is being modified inplace. This view is the output of a function that "
        "returns multiple views. Such functions do not allow the output views to be modified "
        "inplace.` (torchvision `make_grid`, pytorch #48149; docs/pytorch-facts.md#multi-output-view). "
        "With a base that needs none (a factory's zeros), writing a value that requires grad raises too: "
        "`A view was created in no_grad mode and is being modified inplace with grad mode enabled. This view "
        "is the output of a function that returns multiple views.` "
        "(docs/pytorch-facts.md#multi-output-view-grad-value)."
    ),
    fix_safety=(
        "Unsafe: the in-place write also changes the base, which the out-of-place form does not. "
        "A write through a loop variable has no automatic fix (rebinding the loop variable would "
        "make the loop do nothing)."
    ),
    needs_evidence=True,
    references="pytorch #48149, #36608; PyTorch docs: Tensor Views; docs/pytorch-facts.md#multi-output-view",
    invalid=(
        Example(
            """
            def rotate_half(qk, scale):
                q, k = qk.chunk(2, dim=-1)
                q.mul_(scale)
                return q, k
            """,
            message="`mul_` writes in place to `q`, one output of `.chunk(2, dim=-1)` of `qk`",
            fix="""
                try:
                    from torch.distributed.tensor import DTensor
                except ImportError:  # torch < 2.5
                    from torch.distributed._tensor import DTensor

                def rotate_half(qk, scale):
                    q, k = qk.chunk(2, dim=-1)
                    if isinstance(q, DTensor) and not isinstance(scale, DTensor) and getattr(scale, "ndim", 0) > 0:
                        q = q.full_tensor()
                    q = q.clone().mul_(scale)
                    return q, k
                """,
        ),
        Example(
            """
            def normalize(images):
                for row in images.unbind(0):
                    row.sub_(row.min())
                return images
            """,
            message="`sub_` writes in place to `row`, one output of `.unbind(0)` of `images`",
            fix=None,
        ),
    ),
    valid=(
        """
        def rotate_half(qk, scale):
            q, k = qk.chunk(2, dim=-1)
            q = q * scale
            return q, k
        """,
        """
        def first_row(x):
            head = x[0]
            head.mul_(2)
            return x
        """,
    ),
)
