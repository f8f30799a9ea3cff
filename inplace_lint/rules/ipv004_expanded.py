"""IPV004: in-place op on an expanded (broadcast) tensor."""
from ..findings import Origin, StepKind
from .base import Example, Rule, Write, target_phrase, root_phrase

#: in-place ops that skip PyTorch's overlap check: on an expanded tensor they write the base, which
#: is what captured-CUDA-graph code means to do (docs/pytorch-facts.md#expanded-overlap)
NO_OVERLAP_CHECK = frozenset({"fill_", "zero_"})


def applies(origin: Origin, write: Write) -> bool:
    return origin.has(StepKind.EXPAND) and origin.is_tensor and write.op_name not in NO_OVERLAP_CHECK


def message(write: Write, origin: Origin) -> str:
    target = target_phrase(write, origin, root_phrase(origin))
    if write.single_element:
        return (f"{write.op} to {target} silently writes its base `{origin.root_text}`: "
                f"every element of the expanded tensor changes")
    return f"{write.op} writes in place to {target}; its elements share memory, so this raises"


RULE = Rule(
    code="IPV004",
    name="inplace-on-expanded-tensor",
    severity="error",
    summary="In-place op on the result of `expand`, `expand_as` or `broadcast_to`.",
    applies=applies,
    message=message,
    without_grad=True,
    what=(
        "Finds in-place writes to a tensor made by `expand`, `expand_as` or `broadcast_to`, or a view "
        "of one, with or without grad. `fill_` and `zero_` are not reported: they skip the overlap check "
        "and write the base, which is usually the intent."
    ),
    why=(
        "An expanded tensor has stride 0 along the broadcast dims: many elements are one memory "
        "location. PyTorch raises `RuntimeError: unsupported operation: more than one element "
        "of the written-to tensor refers to a single memory location. Please clone() the tensor "
        "before performing the operation.` (once a silent bug: pytorch #4664). A broadcast "
        "temperature that is then `clamp_`ed hits this. Assigning a single element "
        "(`rs = r.expand(4); rs[0] = 1.0`) does not raise: it silently writes `r`, so every "
        "element of `rs` and the caller's `r` change (docs/pytorch-facts.md#expanded-overlap)."
    ),
    fix_safety="Safe when the expanded tensor's base is not read afterwards; otherwise unsafe.",
    references="pytorch #4664; PyTorch docs: torch.Tensor.expand; docs/pytorch-facts.md#expanded-overlap",
    invalid=(
        Example(
            """
            def clamp_temperature(temperature, n):
                t = temperature.expand(n)
                t.clamp_(min=1e-8)
                return t
            """,
            message="`clamp_` writes in place to `t`, an expanded view of `temperature`; its elements share "
                    "memory, so this raises",
            fix="""
                from inplace_lint.runtime import out_of_place

                def clamp_temperature(temperature, n):
                    t = temperature.expand(n)
                    t = out_of_place(t, "clamp_", min=1e-8)
                    return t
                """,
        ),
        Example(
            """
            def mark_first(r, t):
                rs = r.expand_as(t)
                rs[0] = 1.0
                return rs
            """,
            message="item assignment to `rs`, an expanded view of `r` silently writes its base `r`",
            fix="""
                from torch.distributed.tensor import DTensor

                def mark_first(r, t):
                    rs = r.expand_as(t)
                    if isinstance(rs, DTensor):
                        rs = rs.full_tensor()
                    rs = rs.clone()
                    rs[0] = 1.0
                    return rs
                """,
        ),
    ),
    valid=(
        """
        def clamp_temperature(temperature, n):
            t = temperature.expand(n)
            t = t.clamp(min=1e-8)
            return t
        """,
        """
        def reset_static_input(static_input, n):
            view = static_input.expand(n, -1)
            view.fill_(0.0)
        """,
    ),
)
