"""Every rewrite is right or absent (issue 10), as a property over a generated family, run under torch:

    in-place op (div_, mul_, add_, sub_)
  x operand kind (Python float, Python int, same-dtype tensor, wider-dtype tensor, int tensor,
                  broadcasting-up tensor, DTensor)
  x target dtype (float32 with gradients, int64)
  x statement form (method, augmented assignment, hoisted call, one-line suite)
  x style (runtime, inline, runtime --memory-aware)

For each member the original runs where in place is legal (a view of a non-leaf tensor that requires
grad, or of an int tensor); the rewrite must be absent, or raise the same error class where the
original raises (a result dtype that cannot be cast back, a shape that would grow), and otherwise give
the same values, dtype and gradients. DTensor members: target and operand are DTensors (Shard(0) on a
1-process gloo mesh, as the upstream case ``probs.mul_(log_probs)``), compared with the same code on
plain tensors.
"""
from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")

from inplace_lint.fixing import fix_code  # noqa: E402

OPS = {"div_": "/=", "mul_": "*=", "add_": "+=", "sub_": "-="}
OPERANDS = ("float", "int", "same", "wider", "int_tensor", "broadcast_up", "dtensor")
TARGETS = ("float32", "int64")
FORMS = ("method", "augmented", "hoist", "one_line_suite")
STYLES = (("runtime", False), ("inline", False), ("runtime", True))

FAMILY = [m for m in itertools.product(OPS, OPERANDS, TARGETS, FORMS, STYLES)
          if not (m[1] == "dtensor" and m[2] == "int64")]


def source(op: str, form: str) -> str:
    call = f"x.{op}(b)"
    statement = {
        "method": f"    {call}\n",
        "augmented": f"    x {OPS[op]} b\n",
        "hoist": f"    y = torch.neg({call})\n",
        "one_line_suite": f"    if c: {call}\n",
    }[form]
    result = "x, y" if form == "hoist" else "x, x"
    return (f"import torch\n\n\ndef f(model, h, b, c=True):\n    x = model(h).logits.squeeze(0)\n"
            f"{statement}    return {result}\n")


def operand(kind: str, dtype: torch.dtype):
    g = torch.Generator().manual_seed(3)
    return {
        "float": 0.5,
        "int": 2,
        "same": (torch.rand(2, 6, generator=g) + 0.5).to(dtype) if dtype.is_floating_point
        else torch.randint(1, 4, (2, 6), generator=g),
        "wider": torch.rand(6, generator=g, dtype=torch.float64) + 0.5,
        "int_tensor": torch.randint(1, 4, (2, 6), generator=g),
        "broadcast_up": torch.rand(3, 2, 6, generator=g) + 0.5,
        "dtensor": torch.rand(2, 6, generator=g) + 0.5,
    }[kind]


def run(code: str, dtype: torch.dtype, kind: str, mesh=None):
    """Run ``f`` from ``code``; returns ("raises", error class) or ("ok", outputs, dtype, grad)."""
    namespace: dict = {}
    exec(compile(code, "<family>", "exec"), namespace)
    g = torch.Generator().manual_seed(7)
    if dtype.is_floating_point:
        w = (torch.rand(1, 2, 6, generator=g) + 0.5).requires_grad_()
        base = w * 1.0  # a non-leaf: in place on its view is legal
    else:
        w = None
        base = torch.randint(1, 9, (1, 2, 6), generator=g)
    b = operand(kind, dtype)
    if mesh is not None:
        from torch.distributed.tensor import DTensor, Shard

        base = DTensor.from_local(base, mesh, [Shard(1)], run_check=False)
        b = DTensor.from_local(b, mesh, [Shard(0)], run_check=False)

    class Output:
        logits = base

    try:
        outs = namespace["f"](lambda h: Output, None, b)
    except (RuntimeError, TypeError, NotImplementedError) as exc:
        return ("raises", type(exc))
    outs = [o.full_tensor() if hasattr(o, "full_tensor") else o for o in outs]
    grad = None
    if w is not None and outs[0].requires_grad:
        weights = torch.linspace(-1, 1, outs[0].numel()).reshape(outs[0].shape)
        (sum((o.float() * weights).sum() for o in outs)).backward()
        grad = w.grad
    return ("ok", [o.detach() for o in outs], outs[0].dtype, grad)


def test_family_size():
    assert len(FAMILY) == 4 * 7 * 2 * 4 * 3 - 4 * 4 * 3 == 624


@pytest.mark.parametrize("op", OPS)
def test_every_rewrite_is_right_or_absent(op, mesh):
    rewrites = {}
    checked = absent = 0
    for _, kind, target, form, (style, memory_aware) in [m for m in FAMILY if m[0] == op]:
        code = source(op, form)
        key = (form, style, memory_aware)
        if key not in rewrites:
            rewrites[key] = fix_code(code, "family.py", style=style, memory_aware=memory_aware,
                                     unsafe_fixes=True).new_source
        rewritten = rewrites[key]
        if rewritten is None:
            absent += 1
            continue
        dtype = torch.float32 if target == "float32" else torch.int64
        on_mesh = mesh if kind == "dtensor" else None
        expected = run(code, dtype, kind)  # plain tensors: where the original in-place op is legal
        got = run(rewritten, dtype, kind, on_mesh)
        where = f"{op} {kind} {target} {form} {style}{' memory-aware' if memory_aware else ''}:\n{rewritten}"
        assert got[0] == expected[0], where + f"\noriginal {expected}, rewrite {got}"
        if expected[0] == "raises":
            assert issubclass(got[1], expected[1]) or issubclass(expected[1], got[1]), where
        else:
            assert got[2] == expected[2], where
            for g, e in zip(got[1], expected[1]):
                torch.testing.assert_close(g, e, rtol=0, atol=0, msg=where)
            if expected[3] is not None:
                torch.testing.assert_close(got[3], expected[3], rtol=0, atol=0, msg=where)
        checked += 1
    assert absent == 0 and checked == len([m for m in FAMILY if m[0] == op])
