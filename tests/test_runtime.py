"""Tests for inplace_lint.runtime on plain tensors (CPU, real torch).

Facts are cited by their anchor in docs/pytorch-facts.md.
"""

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from inplace_lint import runtime  # noqa: E402
from inplace_lint.runtime import (  # noqa: E402
    inplace_hazard,
    out_of_place,
    scale_logits,
    setitem,
)

from tests.torch_models import CF_MSG, ViewFn  # noqa: E402


class PassThroughFn(torch.autograd.Function):
    """Custom Function that returns its input as-is (docs/pytorch-facts.md#custom-function-view)."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g


class RecordOps(TorchDispatchMode):
    """Records (op, output dtype, output numel) of every aten op."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        outs = out if isinstance(out, (tuple, list)) else (out,)
        for o in outs:
            if isinstance(o, torch.Tensor):
                self.calls.append((str(func), o.dtype, o.numel()))
        return out


def _cf_logits(n=4, h=3, v=6, dtype=torch.float32, seed=0):
    """(1, n, v) logits made by a custom Function view (the verl crash shape)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, n, h, generator=g, dtype=dtype).requires_grad_()
    w = torch.randn(v, h, generator=g, dtype=dtype).requires_grad_()
    logits = ViewFn.apply(x @ w.t())
    return x, w, logits


# ---------------------------------------------------------------- packaging


def test_import_inplace_lint_does_not_import_torch():
    code = "import sys, inplace_lint; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------- scale_logits

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _temperature_cases():
    """(name, logits shape, temperature factory, reference divisor factory)."""
    n, b, s, v = 6, 2, 3, 5
    return [
        ("0d", (n, v), lambda: torch.tensor(0.7), lambda t: t),
        ("per_token_N", (n, v), lambda: torch.tensor([0.5, 0.0, 1.5, 2.0, 0.7, 1.0]),
         lambda t: t.unsqueeze(-1)),
        ("per_sample_B", (b, s, v), lambda: torch.tensor([0.5, 1.3]),
         lambda t: t.view(b, 1, 1)),
        ("per_token_BS", (b, s, v), lambda: torch.tensor([[0.5, 0.9, 0.0], [1.3, 2.0, 0.25]]),
         lambda t: t.unsqueeze(-1)),
        ("N1", (n, v), lambda: torch.tensor([0.5, 0.0, 1.5, 2.0, 0.7, 1.0]).unsqueeze(-1),
         lambda t: t),
        ("B11", (b, s, v), lambda: torch.tensor([0.5, 1.3]).view(b, 1, 1), lambda t: t),
        ("expanded_N", (n, v), lambda: torch.tensor([0.3]).expand(n), lambda t: t.unsqueeze(-1)),
    ]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", _temperature_cases(), ids=lambda c: c[0])
def test_scale_logits_values_dtype_and_input_unchanged(case, dtype):
    _, shape, make_t, ref_shape = case
    logits = torch.randn(shape, generator=torch.Generator().manual_seed(1)).to(dtype)
    t = make_t()
    before_l, before_t = logits.clone(), t.clone()
    out = scale_logits(logits, t)
    divisor = ref_shape(t).clamp(min=1e-8)
    # (a 0-dim temperature is not cast first: it does not promote the logits, as in `logits /= t`)
    ref = logits / (divisor if t.ndim == 0 else divisor.to(dtype))
    assert out.dtype == dtype and out.shape == logits.shape
    torch.testing.assert_close(out, ref, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(logits, before_l) and torch.equal(t, before_t)
    assert out.data_ptr() != logits.data_ptr()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_0dim_tensor_temperature_divides_as_the_in_place_division_does(dtype):
    # bf16 0.7 is 0.69921875: cast before dividing, about a fifth of bf16 logits round differently from
    # `logits /= torch.tensor(0.7)`, which the codemod's runtime style replaces
    logits = torch.randn(64, 50, generator=torch.Generator().manual_seed(3)).to(dtype)
    t = torch.tensor(0.7)
    expected = logits.clone()
    expected /= t
    out = scale_logits(logits, t, eps=None, inplace="auto")
    assert out.dtype == dtype and torch.equal(out, expected)
    if dtype is torch.bfloat16:
        assert not torch.equal(logits / t.to(dtype), expected)  # the cast this avoids changes values


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_scale_logits_python_temperature(dtype):
    logits = torch.randn(4, 7).to(dtype)
    before = logits.clone()
    out = scale_logits(logits, 0.7)
    assert out.dtype == dtype
    assert torch.equal(out, logits / 0.7)
    assert torch.equal(logits, before)
    # clamped at eps, out of place
    assert torch.equal(scale_logits(logits, 0.0, eps=0.5), logits / 0.5)


@pytest.mark.parametrize("one", [1, 1.0])
def test_scale_logits_temperature_one_returns_input_object(one):
    logits = torch.randn(3, 4)
    with RecordOps() as rec:
        out = scale_logits(logits, one)
    assert out is logits
    assert rec.calls == []  # nothing copied, nothing computed


def test_scale_logits_tensor_one_is_still_computed_out_of_place():
    logits = torch.randn(3, 4)
    out = scale_logits(logits, torch.tensor(1.0))
    assert out is not logits and torch.equal(out, logits)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_scale_logits_makes_no_full_size_fp32_copy(dtype):
    logits = torch.randn(64, 100).to(dtype)
    t = torch.rand(64) + 0.5
    with RecordOps() as rec:
        out = scale_logits(logits, t)
    assert out.dtype == dtype
    big_fp32 = [c for c in rec.calls if c[1] == torch.float32 and c[2] >= logits.numel()]
    assert big_fp32 == [], big_fp32
    # the naive form does make one, so the check can fail
    with RecordOps() as rec:
        _ = logits / t.unsqueeze(-1)
    assert any(c[1] == torch.float32 and c[2] == logits.numel() for c in rec.calls)


def test_scale_logits_never_uses_clamp_inplace_on_broadcast_temperature():
    t = torch.tensor([0.0]).expand(5)
    with pytest.raises(RuntimeError, match="single memory location"):
        torch.tensor([0.0]).expand(5).clamp_(min=1e-8)  # noqa: IPV004 (the bug: docs/pytorch-facts.md#expanded-overlap)
    out = scale_logits(torch.ones(5, 3), t, eps=0.25)
    assert torch.equal(out, torch.full((5, 3), 4.0))


@pytest.mark.parametrize(
    "lshape,tshape",
    [((4, 5), (3,)), ((4, 5), (5,)), ((2, 3, 5), (3,)), ((2, 3, 5), (2, 4)),
     ((4, 5), (4, 2)), ((2, 3, 5), (2, 1, 1, 1))],
)
def test_scale_logits_bad_temperature_shape_names_both_shapes(lshape, tshape):
    with pytest.raises(ValueError) as exc:
        scale_logits(torch.randn(lshape), torch.ones(tshape))
    assert str(tuple(lshape)) in str(exc.value) and str(tuple(tshape)) in str(exc.value)


def test_scale_logits_rejects_bad_arguments():
    with pytest.raises(TypeError):
        scale_logits(torch.ones(3, dtype=torch.long), 0.5)
    with pytest.raises(ValueError):
        scale_logits(torch.ones(3), 0.5, inplace="yes")
    with pytest.raises(TypeError):
        scale_logits(torch.ones(3), "0.5")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["rmpad", "padded"])
def test_scale_logits_gradients_match_reference(dtype, layout):
    g = torch.Generator().manual_seed(3)
    if layout == "rmpad":
        x0 = torch.randn(6, 4, generator=g)
        t0 = torch.rand(6, generator=g) + 0.5
        ref_view = lambda t: t.unsqueeze(-1)  # noqa: E731
    else:
        x0 = torch.randn(2, 3, 4, generator=g)
        t0 = torch.rand(2, generator=g) + 0.5
        ref_view = lambda t: t.view(2, 1, 1)  # noqa: E731
    w0 = torch.randn(5, 4, generator=g)
    upstream = torch.randn(*x0.shape[:-1], 5, generator=g).to(dtype)

    def run(fn):
        x = x0.to(dtype).requires_grad_()
        w = w0.to(dtype).requires_grad_()
        t = t0.clone().requires_grad_()
        out = fn(x @ w.t(), t)
        (out * upstream).float().sum().backward()
        return out.detach(), x.grad, w.grad, t.grad

    got = run(lambda lg, t: scale_logits(lg, t))
    ref = run(lambda lg, t: lg / ref_view(t).clamp(min=1e-8).to(dtype))
    for a, b in zip(got, ref):
        assert a is not None and a.dtype == b.dtype
        assert torch.equal(a, b)


def test_custom_function_crash_reproduced_and_cured():
    """verl crash shape: custom-Function view logits, .squeeze(0).div_(T)."""
    x, w, logits = _cf_logits()
    t = torch.tensor([0.5, 1.0, 2.0, 0.0])
    with pytest.raises(RuntimeError, match=CF_MSG) as exc:
        logits.squeeze(0).div_(t.unsqueeze(-1))
    assert "custom Function" in str(exc.value)

    x, w, logits = _cf_logits()
    out = scale_logits(logits.squeeze(0), t)
    out.sum().backward()
    assert x.grad is not None and w.grad is not None

    # reference: plain (non custom Function) logits, out of place
    x2, w2, _ = _cf_logits()
    ref = (x2 @ w2.t()).squeeze(0) / t.clamp(min=1e-8).unsqueeze(-1)
    ref.sum().backward()
    assert torch.equal(out.detach(), ref.detach())
    assert torch.equal(x.grad, x2.grad) and torch.equal(w.grad, w2.grad)


def test_passthrough_custom_function_crash_cured():
    x = torch.randn(1, 3, 4, requires_grad=True)
    logits = PassThroughFn.apply(x * 2)
    with pytest.raises(RuntimeError, match=CF_MSG):
        logits.squeeze(0).div_(0.5)  # noqa: IPV002 (reproduces the crash)
    out = scale_logits(logits.squeeze(0), 0.5)
    out.sum().backward()
    assert torch.equal(x.grad, torch.full_like(x, 4.0))


# ------------------------------------------------------------- out_of_place


def _tgt(dtype=torch.float32, shape=(4, 5), seed=0):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
    return x.to(dtype)


MASK = torch.tensor([[True, False, True, False, False]] * 4)
IDX = torch.tensor([[0, 1, 2, 3, 4]] * 4)

OP_CASES = [
    # (id, target dtype, op, args, kwargs)
    ("div_tensor", torch.float32, "div_", lambda: (torch.rand(4, 1) + 0.5,), {}),
    ("div_scalar", torch.bfloat16, "div_", lambda: (0.7,), {}),
    ("div_bf16_by_fp32", torch.bfloat16, "div_", lambda: (torch.rand(4, 1) + 0.5,), {}),
    ("div_fp16_by_fp32", torch.float16, "div_", lambda: (torch.rand(4, 5) + 0.5,), {}),
    ("div_bf16_by_fp32_0d", torch.bfloat16, "div_", lambda: (torch.tensor(0.3),), {}),
    ("div_floor", torch.float32, "div_", lambda: (0.3,), {"rounding_mode": "floor"}),
    ("mul_bf16_fp32", torch.bfloat16, "mul_", lambda: (torch.randn(5),), {}),
    ("add_alpha", torch.float32, "add_", lambda: (torch.randn(4, 5),), {"alpha": 2}),
    ("add_alpha_bf16", torch.bfloat16, "add_", lambda: (torch.randn(4, 5),), {"alpha": 2}),
    ("sub_alpha", torch.float32, "sub_", lambda: (torch.randn(5),), {"alpha": 0.5}),
    ("clamp_", torch.float32, "clamp_", lambda: (), {"min": -0.5, "max": 0.5}),
    ("clamp_tensor", torch.bfloat16, "clamp_", lambda: (), {"min": torch.zeros(5)}),
    ("masked_fill_", torch.float32, "masked_fill_", lambda: (MASK, float("-inf")), {}),
    ("masked_fill_bf16", torch.bfloat16, "masked_fill_", lambda: (MASK, 3.3), {}),
    ("addcmul_", torch.bfloat16, "addcmul_", lambda: (torch.randn(4, 5), torch.randn(5)),
     {"value": 0.5}),
    ("addcdiv_", torch.float32, "addcdiv_", lambda: (torch.randn(4, 5), torch.rand(5) + 1),
     {"value": 2}),
    ("pow_", torch.float32, "pow_", lambda: (2,), {}),
    ("pow_tensor_bf16", torch.bfloat16, "pow_", lambda: (torch.full((5,), 3.0),), {}),
    ("exp_", torch.bfloat16, "exp_", lambda: (), {}),
    ("sigmoid_", torch.float32, "sigmoid_", lambda: (), {}),
    ("relu_", torch.float32, "relu_", lambda: (), {}),
    ("lerp_", torch.float32, "lerp_", lambda: (torch.zeros(4, 5), 0.3), {}),
    ("nan_to_num_", torch.float32, "nan_to_num_", lambda: (), {"nan": 0.0}),
    ("index_fill_", torch.float32, "index_fill_", lambda: (1, torch.tensor([0, 2]), -1.0), {}),
    ("scatter_", torch.float32, "scatter_", lambda: (1, IDX.flip(1), torch.randn(4, 5)), {}),
    ("eq_", torch.float32, "eq_", lambda: (0.0,), {}),
    ("int_add_", torch.int64, "add_", lambda: (torch.tensor([1, 2, 3, 4, 5]),), {}),
    ("int_floor_divide_", torch.int64, "floor_divide_", lambda: (3,), {}),
    # clone-first ops
    ("zero_", torch.bfloat16, "zero_", lambda: (), {}),
    ("fill_", torch.float32, "fill_", lambda: (2.5,), {}),
    ("fill_0d", torch.bfloat16, "fill_", lambda: (torch.tensor(1.1),), {}),
    ("copy_", torch.bfloat16, "copy_", lambda: (torch.randn(5),), {}),
    ("normal_", torch.float32, "normal_", lambda: (), {"mean": 1.0, "std": 2.0}),
    ("uniform_", torch.bfloat16, "uniform_", lambda: (-1, 1), {}),
    ("bernoulli_", torch.float32, "bernoulli_", lambda: (0.3,), {}),
    ("fill_diagonal_", torch.float32, "fill_diagonal_", lambda: (7.0,), {}),
    ("float_power_", torch.float64, "float_power_", lambda: (2,), {}),
    # augmented assignment dunders
    ("__itruediv__", torch.bfloat16, "__itruediv__", lambda: (torch.rand(5) + 0.5,), {}),
    ("__imul__", torch.float32, "__imul__", lambda: (3,), {}),
    ("__isub__", torch.float16, "__isub__", lambda: (torch.randn(5),), {}),
]


@pytest.mark.parametrize("case", OP_CASES, ids=lambda c: c[0])
def test_out_of_place_matches_inplace_on_clone(case):
    _, dtype, op, make_args, kwargs = case
    if dtype == torch.int64:
        x = torch.arange(20).view(4, 5) * 7
    else:
        x = _tgt(dtype)
    before = x.clone()
    args = make_args()
    expected = x.clone()
    torch.manual_seed(11)
    getattr(expected, op)(*args, **kwargs)
    torch.manual_seed(11)
    got = out_of_place(x, op, *args, **kwargs)
    assert got.dtype == x.dtype and got.shape == x.shape
    torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(x, before), "target was mutated"
    assert got.data_ptr() != x.data_ptr()


def test_out_of_place_bf16_fp32_differs_from_naive_twin():
    """The naive ``x / y`` promotes to fp32; out_of_place keeps bf16 (in-place)."""
    x, y = _tgt(torch.bfloat16), torch.rand(4, 1) + 0.5
    assert (x / y).dtype == torch.float32
    assert out_of_place(x, "div_", y).dtype == torch.bfloat16


def test_out_of_place_mirrors_inplace_errors():
    xi = torch.arange(6)
    with pytest.raises(RuntimeError, match="can't be cast"):
        xi.clone().div_(2)
    with pytest.raises(RuntimeError, match="can't be cast"):
        out_of_place(xi, "div_", 2)
    x = torch.randn(3, 1)
    with pytest.raises(RuntimeError, match="broadcast shape"):
        x.clone().add_(torch.randn(3, 4))
    with pytest.raises(RuntimeError, match="broadcast shape"):
        out_of_place(x, "add_", torch.randn(3, 4))


@pytest.mark.parametrize("op", ["div", "add", "__add__", "__iadd___", "_", "requires_grad_",
                                "share_memory_", "set_", "detach_", "resize_", "t_",
                                "squeeze_"])
def test_out_of_place_rejects_non_mutating_names(op):
    with pytest.raises(ValueError):
        out_of_place(torch.randn(3), op)


def test_out_of_place_unknown_method_and_bad_mode():
    with pytest.raises(AttributeError):
        out_of_place(torch.randn(3), "no_such_op_")
    with pytest.raises(TypeError):
        out_of_place(torch.randn(3), None)
    with pytest.raises(ValueError):
        out_of_place(torch.randn(3), "mul_", 2, inplace="sometimes")


def test_out_of_place_unlisted_op_uses_clone_first(monkeypatch):
    monkeypatch.setattr(runtime.twins, "TWINS", {})
    x = torch.randn(4, 5)
    with RecordOps() as rec:
        got = out_of_place(x, "mul_", 3.0)
    assert any("clone" in c[0] for c in rec.calls)
    assert torch.equal(got, x * 3.0)
    with RecordOps() as rec:
        monkeypatch.undo()
        out_of_place(x, "mul_", 3.0)
    assert not any("clone" in c[0] for c in rec.calls)


@pytest.mark.parametrize(
    "op,args,kwargs",
    [("div_", (torch.tensor([[2.0], [0.5], [1.0], [4.0]]),), {}),
     ("mul_", (torch.tensor(1.5),), {}),
     ("add_", (torch.ones(6),), {"alpha": -2}),
     ("clamp_", (), {"min": -0.5}),
     ("masked_fill_", (torch.rand(4, 6) > 0.5, 0.0), {}),
     ("addcmul_", (torch.randn(4, 6), torch.randn(6)), {"value": 0.3})],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_out_of_place_on_custom_function_view(op, args, kwargs):
    x, w, logits = _cf_logits()
    view = logits.squeeze(0)
    with pytest.raises(RuntimeError, match=CF_MSG):
        getattr(view, op)(*args, **kwargs)

    x, w, logits = _cf_logits()
    got = out_of_place(logits.squeeze(0), op, *args, **kwargs)
    got.pow(2).sum().backward()

    x2, w2, _ = _cf_logits()
    ref = getattr((x2 @ w2.t()).squeeze(0), op[:-1])(*args, **kwargs)
    ref.pow(2).sum().backward()
    assert torch.equal(got.detach(), ref.detach())
    assert torch.equal(x.grad, x2.grad) and torch.equal(w.grad, w2.grad)


def test_out_of_place_inplace_true_mutates_like_original():
    x = torch.randn(3, 4)
    before = x.clone()
    out = out_of_place(x, "div_", 2.0, inplace=True)
    assert out is x and torch.equal(x, before / 2.0)
    _, _, logits = _cf_logits()
    with pytest.raises(RuntimeError, match=CF_MSG):
        out_of_place(logits.squeeze(0), "div_", 2.0, inplace=True)


# ----------------------------------------------------------------- setitem


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "index,value",
    [((slice(None), 0), float("-inf")),
     (MASK, 0.0),
     (1, torch.arange(5.0)),
     ((torch.tensor([0, 2]),), torch.full((5,), 9.5, dtype=torch.float64))],
    ids=["column", "mask", "row", "fancy_fp64_value"],
)
def test_setitem_values_dtype_and_no_mutation(index, value, dtype):
    x = _tgt(dtype)
    before = x.clone()
    expected = x.clone()
    expected[index] = value.to(dtype) if isinstance(value, torch.Tensor) else value
    got = setitem(x, index, value)
    assert got.dtype == dtype and torch.equal(got, expected)
    assert torch.equal(x, before)


def test_setitem_on_custom_function_view_with_gradients():
    x, w, logits = _cf_logits()
    mask = torch.rand(4, 6, generator=torch.Generator().manual_seed(5)) > 0.5
    with pytest.raises(RuntimeError, match=CF_MSG):
        view = logits.squeeze(0)
        view[mask] = 0.0
    x, w, logits = _cf_logits()
    got = setitem(logits.squeeze(0), mask, 0.0)
    got.pow(2).sum().backward()
    x2, w2, _ = _cf_logits()
    ref = (x2 @ w2.t()).squeeze(0).masked_fill(mask, 0.0)
    ref.pow(2).sum().backward()
    assert torch.equal(got.detach(), ref.detach())
    assert torch.equal(w.grad, w2.grad) and torch.equal(x.grad, x2.grad)


def test_setitem_inplace_true():
    x = torch.zeros(3)
    assert setitem(x, 1, 5.0, inplace=True) is x and x[1] == 5.0


# ------------------------------------------------- inplace_hazard / "auto"


def _cf_view():
    _, _, logits = _cf_logits()
    return logits.squeeze(0)


def _mv_view():
    base = torch.randn(4, 6, requires_grad=True) * 1
    return base.chunk(2)[0]


def _no_grad_view():
    base = torch.randn(4, 6, requires_grad=True) * 1
    with torch.no_grad():
        return base[1:]


def _leaf():
    return torch.randn(4, 6, requires_grad=True)


def _view_of_leaf():
    return torch.randn(4, 6, requires_grad=True)[:, 1:]


def _inference():
    with torch.inference_mode():
        return torch.randn(4, 6)


def _expanded():
    return torch.randn(4, 1).expand(4, 6)


def _saved_result():
    return torch.randn(4, 6, requires_grad=True).exp()


UNSAFE = [
    ("custom_function_view", _cf_view, "custom autograd Function"),
    ("multi_output_view", _mv_view, "several views"),
    ("no_grad_view", _no_grad_view, "no_grad"),
    ("leaf_requires_grad", _leaf, "leaf"),
    ("view_of_leaf", _view_of_leaf, "view of a leaf"),
    ("inference_tensor", _inference, "inference"),
    ("expanded", _expanded, "overlapping memory"),
    ("saved_result_exp", _saved_result, "saved for backward"),
]

SAFE = [
    ("plain", lambda: torch.randn(4, 6)),
    ("plain_nongrad_view", lambda: torch.randn(5, 6)[1:]),
    ("grad_nonleaf", lambda: torch.randn(4, 6, requires_grad=True) * 2),
    ("default_view_of_nonleaf", lambda: (torch.randn(1, 4, 6, requires_grad=True) * 2).squeeze(0)),
    ("chunk_without_grad", lambda: torch.randn(8, 6).chunk(2)[0]),  # no grad: docs/pytorch-facts.md#multi-output-view
]


def _check_raises_inplace(make, expect):
    """The unsafe condition is real: the in-place op raises now or at backward."""
    t = make()
    try:
        t.mul_(1.5)
        if t.requires_grad:
            t.sum().backward()
    except RuntimeError:
        return
    raise AssertionError(f"in-place on {expect} did not raise")


@pytest.mark.parametrize("case", UNSAFE, ids=lambda c: c[0])
def test_hazard_detected_and_real(case):
    _, make, words = case
    reason = inplace_hazard(make())
    assert reason is not None and words in reason, reason
    _check_raises_inplace(make, words)


@pytest.mark.parametrize("case", SAFE, ids=lambda c: c[0])
def test_no_hazard_on_safe_tensors(case):
    _, make = case
    assert inplace_hazard(make()) is None


@pytest.mark.parametrize("case", UNSAFE, ids=lambda c: c[0])
@pytest.mark.parametrize("api", ["out_of_place", "scale_logits", "setitem"])
def test_auto_goes_out_of_place_when_unsafe(case, api):
    _, make, _ = case
    x = make()
    before = x.detach().clone()
    if api == "out_of_place":
        out = out_of_place(x, "mul_", 0.5, inplace="auto")
        expected = before * 0.5
    elif api == "scale_logits":
        out = scale_logits(x, 2.0, inplace="auto")
        expected = before / 2.0
    else:
        out = setitem(x, (slice(None), 0), -1.0, inplace="auto")
        expected = before.clone()
        expected[:, 0] = -1.0
    assert out is not x and out.data_ptr() != x.data_ptr()
    assert torch.equal(out.detach(), expected)
    assert torch.equal(x.detach(), before)


@pytest.mark.parametrize("case", SAFE, ids=lambda c: c[0])
@pytest.mark.parametrize("api", ["out_of_place", "scale_logits", "setitem"])
def test_auto_goes_in_place_when_safe(case, api):
    _, make = case
    x = make()
    before = x.detach().clone()
    if api == "out_of_place":
        out = out_of_place(x, "mul_", 0.5, inplace="auto")
        expected = before * 0.5
    elif api == "scale_logits":
        out = scale_logits(x, torch.full((x.shape[0],), 2.0), inplace="auto")
        expected = before / 2.0
    else:
        out = setitem(x, (slice(None), 0), -1.0, inplace="auto")
        expected = before.clone()
        expected[:, 0] = -1.0
    assert out is x and out.data_ptr() == x.data_ptr()
    assert torch.equal(x.detach(), expected)


def test_auto_in_place_keeps_gradients_right():
    """Plain head output (k1): auto divides in place and gradients stay right."""
    x = torch.randn(5, 4)
    t = torch.rand(5) + 0.5
    w = torch.randn(6, 4, requires_grad=True)
    w_ref = w.detach().clone().requires_grad_()
    logits = x @ w.t()
    out = scale_logits(logits, t, inplace="auto")
    assert out is logits
    out.pow(2).sum().backward()
    ref = (x @ w_ref.t()) / t.unsqueeze(-1)
    ref.pow(2).sum().backward()
    assert torch.equal(out.detach(), ref.detach())
    assert torch.equal(w.grad, w_ref.grad)


def test_hazard_depends_on_operands_and_grad_mode():
    # multi-output view without grad is fine, unless the operand requires grad
    v = torch.randn(8, 6).chunk(2)[0]
    assert inplace_hazard(v) is None
    assert "several views" in inplace_hazard(v, torch.ones(6, requires_grad=True))
    # leaf under no_grad is fine (docs/pytorch-facts.md#leaf-requires-grad)
    leaf = torch.randn(3, requires_grad=True)
    with torch.no_grad():
        assert inplace_hazard(leaf) is None
        assert inplace_hazard(leaf[1:]) is None
    # custom-Function view made with grad on, modified under no_grad, fails later (docs/pytorch-facts.md#no-grad-view)
    v = _cf_view()
    with torch.no_grad():
        assert "custom autograd Function" in inplace_hazard(v)
    # ... but the whole pattern inside no_grad is fine (docs/pytorch-facts.md#grad-off)
    with torch.no_grad():
        assert inplace_hazard(_cf_view()) is None
    # inference tensor inside inference mode is fine
    t = _inference()
    with torch.inference_mode():
        assert inplace_hazard(t) is None
    # partial overlap with an operand
    y = torch.randn(6)
    assert "overlap" in inplace_hazard(y[1:], y[:-1])
    assert inplace_hazard(y, y) is None


def test_hazard_without_creation_meta_api(monkeypatch):
    monkeypatch.delattr(torch._C._autograd, "_get_creation_meta")
    assert "creation metadata" in inplace_hazard(_cf_view())
    assert "creation metadata" in inplace_hazard(_mv_view())
    assert inplace_hazard(torch.randn(5, 6)[1:]) is None  # no grad: nothing to record


def test_creation_meta_private_api_shape():
    """Pin what the private torch API returns in this torch (documented)."""
    getter = torch._C._autograd._get_creation_meta
    assert getter(_cf_view()).name == "IN_CUSTOM_FUNCTION"
    assert getter(_mv_view()).name == "MULTI_OUTPUT_NODE"
    assert getter(_no_grad_view()).name == "NO_GRAD_MODE"
    assert getter(torch.randn(3, 4)[1]).name == "DEFAULT"
    with pytest.raises(RuntimeError):
        getter(torch.randn(3))  # not a view: no view metadata
