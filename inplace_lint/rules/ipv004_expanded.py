"""IPV004: in-place op on an expanded (broadcast) tensor."""
from ..findings import Origin, StepKind, WriteKind
from ..torch_facts import ops
from .base import Example, Rule, Write, target_phrase, root_phrase

#: in-place ops that skip PyTorch's overlap check and fill the whole tensor: on an expanded tensor
#: they write the base, which is what captured-CUDA-graph code means to do (not reported;
#: docs/pytorch-facts.md#expanded-overlap)
FILLS = frozenset({"fill_", "zero_"})
#: in-place ops that skip the overlap check but write some elements: they silently write the base
#: (reported, saying so); item assignment without a slice (``x[0] = v``, ``x[mask] = v``) is one too
SILENT_BASE_WRITES = frozenset({"masked_fill_", "index_fill_", "index_put_"})


def applies(origin: Origin, write: Write) -> bool:
    # `unsqueeze_`, `t_`, `resize_`, `set_` (:data:`ops.METADATA_INPLACE_METHODS`) change the tensor's shape,
    # strides or storage and write no element: no overlap check runs, the base keeps its values
    # (docs/pytorch-facts.md#expanded-overlap)
    return origin.has(StepKind.EXPAND) and not origin.has(StepKind.EMPTY) and origin.is_tensor \
        and write.op_name not in FILLS \
        and write.op_name not in ops.METADATA_INPLACE_METHODS


def message(write: Write, origin: Origin) -> str:
    target = target_phrase(write, origin, root_phrase(origin))
    if write.point_index or write.op_name in SILENT_BASE_WRITES:
        op = "item assignment to" if write.kind is WriteKind.SUBSCRIPT else f"{write.op} on"
        text = (f"{op} {target}, silently writes its base `{origin.root_text}`: "
                f"every element that shares the memory changes")
        if write.kind is WriteKind.SUBSCRIPT:
            # `x[0] = v` picks a view and copies into it: the copy raises when a broadcast dimension is left in
            # that view (`zeros(3, 1).expand(3, 4)[0] = 1`); a mask or tensor index goes through `index_put_`,
            # which never raises (docs/pytorch-facts.md#expanded-overlap)
            text += "; with an integer index it raises instead when the part written keeps a broadcast dimension"
        return text
    expand = next(s for s in origin.steps if s.kind is StepKind.EXPAND)
    # `x.expand(1, 4)` of a (1, 4) tensor repeats nothing: the write is legal (a batch of 1 trains fine)
    text = (f"{write.op} writes in place to {target}; raises when `{expand.text}` makes a size-1 dimension "
            f"larger than 1 (its elements then share memory)")
    if write.kind is WriteKind.SUBSCRIPT:
        # `zeros(3, 1).expand(3, 4)[:, 0] = 1` writes one element per row, each its own location: no error
        text += "; where the part written holds each shared element once, it silently writes the base instead"
    return text


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
        "and write the base, which is usually the intent. Nor are in-place ops that change only the shape, "
        "strides or storage (`unsqueeze_`, `t_`, `transpose_`, `resize_`, `set_`): they write no element."
    ),
    why=(
        "An expanded tensor has stride 0 along the broadcast dims: many elements are one memory "
        "location. PyTorch raises `RuntimeError: unsupported operation: more than one element "
        "of the written-to tensor refers to a single memory location. Please clone() the tensor "
        "before performing the operation.` (once a silent bug: pytorch #4664). A broadcast "
        "temperature that is then `clamp_`ed hits this. It raises only when the expand makes a "
        "dimension of size 1 larger than 1: `x.expand(b, -1)` with `b == 1` repeats nothing and the write "
        "is legal (a DPO loss expanded over a per-device batch of 1 trains; a batch of 2 raises), so the "
        "message states the condition: \"raises when `.expand(b, -1)` makes a size-1 dimension larger "
        "than 1\". Item assignment without a slice "
        "(`rs = r.expand(4); rs[0] = 1.0`, `rs[mask] = v`), `masked_fill_`, `index_fill_` and "
        "`index_put_` do not raise: they silently write `r`, so every element of `rs` and the "
        "caller's `r` change; an integer index raises instead when the part it writes keeps a broadcast "
        "dimension (`zeros(3, 1).expand(3, 4)[0] = 1`), and the message says so "
        "(docs/pytorch-facts.md#expanded-overlap)."
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
            message="`clamp_` writes in place to `t`, an expanded view of `temperature`; raises when "
                    "`.expand(n)` makes a size-1 dimension larger than 1 (its elements then share memory)",
            fix="""
                def clamp_temperature(temperature, n):
                    t = temperature.expand(n)
                    t = t.clone().clamp_(min=1e-8)
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
            message="item assignment to `rs`, an expanded view of `r`, silently writes its base `r`: every element "
                    "that shares the memory changes; with an integer index it raises instead when the part "
                    "written keeps a broadcast dimension",
            fix="""
                def mark_first(r, t):
                    rs = r.expand_as(t)
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
        """
        def batch_of_one(speaker, n):
            emb = speaker.expand(n, -1)
            emb.unsqueeze_(0)
            return emb
        """,
    ),
)
