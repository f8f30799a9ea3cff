"""Facts from set BS (twenty-second session), each executed under torch.

- A local bound to a view attribute of a parameter the class built (``AT = self._A.T``) requires grad: a matmul with
  it saves its other input, and a rollout that writes the next column of the buffer it read the last from raises at
  backward (flowtorch's linear control model, default use). The fix (a copy before each write) runs and gives the
  same values and gradients as the rollout written out of place.
- A tensor a function computes from a parameter annotated ``Tensor`` by arithmetic (``qu = matrix * 2``), or a
  factory's tensor filled or accumulated with values computed from one (``qu[..., 1] = m00 * 2``, ``s += c * h``),
  is a guess about that parameter, as one made by a torch op is: an op that saves it (or a view of it, by basic
  indexing only) as its input makes a later write raise when the parameter requires grad; the function's callers
  decide, as for other guesses (ebsdtorch's conversions, set BN; flowtorch's node weights).
- ``max``/``min`` along a dimension save the indices, not the input (the generated table merges the forms).
"""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from inplace_lint.fixing import fix_code
from tests.executed import load

torch = pytest.importorskip("torch")

ROLLOUT = '''import torch as pt


class Rollout(pt.nn.Module):
    def __init__(self, A):
        super().__init__()
        self._A = pt.nn.Parameter(A)

    def forward(self, x0, N: int):
        X = pt.zeros((x0.shape[0], x0.shape[1], N))
        AT = self._A.T
        X[:, :, 0] = x0 @ AT
        for n in range(1, N):
            X[:, :, n] = X[:, :, n - 1] @ AT
        return X
'''


def _reference(A, x0, N):
    cols = [x0 @ A.T]
    for _ in range(1, N):
        cols.append(cols[-1] @ A.T)
    return torch.stack(cols, dim=-1)


def test_a_rollout_through_a_parameters_transpose_is_reported_and_raises():
    assert [(f.code, f.line, f.col) for f in analyze_source(ROLLOUT)] == [("IPV006", 14, 12)]
    A = torch.randn(3, 3) * 0.5
    model = load(ROLLOUT)["Rollout"](A)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        model(torch.randn(2, 3), 4).sum().backward()


def test_the_rollouts_fix_gives_the_values_and_gradients_of_the_out_of_place_rollout():
    result = fix_code(ROLLOUT)
    assert "X = X.clone()" in result.new_source
    torch.manual_seed(0)
    A = torch.randn(3, 3) * 0.5
    x0 = torch.randn(2, 3)
    model = load(result.new_source)["Rollout"](A.clone())
    out = model(x0, 4)
    out.sum().backward()
    ref_A = A.clone().requires_grad_(True)
    ref = _reference(ref_A, x0, 4)
    ref.sum().backward()
    assert out.dtype == ref.dtype and torch.allclose(out, ref)
    assert torch.allclose(model._A.grad, ref_A.grad)


GUESS = '''import torch
from torch import Tensor


def fold(matrix: Tensor) -> Tensor:
    qu = matrix * 2
    qu[..., 0] = torch.abs(qu[..., 0])
    return qu
'''

CALLED_WITHOUT_GRAD = GUESS + '''

def table(n):
    return fold(torch.eye(n))
'''


def test_arithmetic_on_an_annotated_parameter_saved_as_an_input_is_a_guess_the_callers_decide():
    [found] = analyze_source(GUESS)
    assert (found.code, found.line, found.col) == ("IPV006", 7, 4)
    assert "`torch.abs` (line 7) saved for backward as its input" in found.message
    assert "(it does when `matrix` requires grad)" in found.message
    fold = load(GUESS)["fold"]
    fold(torch.randn(4, 3)).sum()  # (no grad: nothing saved)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        fold(torch.randn(4, 3, requires_grad=True)).sum().backward()
    # the only caller passes a factory's tensor, which needs no grad: the guess has nothing behind it
    assert [f.code for f in analyze_source(CALLED_WITHOUT_GRAD)] == []


MASKED = '''import torch
from torch import Tensor


def overdrive(waveform: Tensor, gain: float) -> Tensor:
    temp = waveform * gain
    mask = temp.abs() < 1
    temp[mask] = temp[mask] - (temp[mask] ** 3) / 3
    return temp
'''


def test_an_op_on_a_masked_copy_saves_the_copy_and_the_write_is_not_reported():
    # `temp[mask]` is advanced indexing: `** 3` saves a copy, and writing `temp` does not touch it (torchaudio's
    # overdrive, set REG2: a false finding of this session's first version of the fact)
    assert analyze_source(MASKED) == []
    waveform = torch.randn(2, 16, requires_grad=True)
    load(MASKED)["overdrive"](waveform, 2.0).sum().backward()
    assert waveform.grad is not None


FILLED = '''import torch
from torch import Tensor


def to_quaternion(matrix: Tensor) -> Tensor:
    m00 = matrix[..., 0, 0]
    m11 = matrix[..., 1, 1]
    qu = torch.empty(matrix.shape[:-2] + (4,), dtype=matrix.dtype)
    qu[..., 0] = m00 - m11
    qu[..., 1] = m00 + m11
    qu[..., 2] = m00 * m11
    qu[..., 3] = m11
    qu[..., 0] = torch.abs(qu[..., 0])
    return qu


def node_weights(areas: Tensor) -> Tensor:
    nodal = torch.zeros((areas.shape[0] + 1, areas.shape[1] + 1), dtype=areas.dtype)
    nodal[:-1, :-1] += areas
    nodal[1:, 1:] += areas
    weights = nodal / 2
    weights /= torch.max(weights)
    return weights
'''


def test_a_factory_filled_from_an_annotated_parameter_is_a_guess_about_it():
    # item writes of values computed from `matrix` make the factory's tensor require grad when `matrix` does: `abs`
    # saves a view of it, which the next write of the same statement's target changes (ebsdtorch's `om2qu`); `max`
    # saves its input (flowtorch's node weights, set BS)
    found = [(f.code, f.line, f.col) for f in analyze_source(FILLED)]
    assert found == [("IPV006", 13, 4), ("IPV006", 22, 4)], found
    mod = load(FILLED)
    for fn, shape in ((mod["to_quaternion"], (5, 3, 3)), (mod["node_weights"], (4, 5))):
        fn(torch.rand(*shape)).sum()  # (no grad: nothing saved)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            fn(torch.rand(*shape, requires_grad=True)).sum().backward()


REDUCTIONS = '''import torch


def along_dim():
    x = torch.randn(4, 3, requires_grad=True) * 2
    v, i = x.max(dim=0)
    x.mul_(2)
    return v


def whole():
    x = torch.randn(4, 3, requires_grad=True) * 2
    v = x.max()
    x.mul_(2)
    return v


def positional_dim():
    x = torch.randn(4, 3, requires_grad=True) * 2
    v = torch.min(x, 1).values
    x.mul_(2)
    return v
'''


def test_max_along_a_dimension_saves_indices_not_its_input():
    # the generated table merges `max()`, `max(dim)` and `max(other)`: only the first and last read the input (an
    # anomalib heatmap loop, `im_map.max(dim=0)` then a write of `im_map`, was a false finding of this session's guess)
    assert [(f.code, f.line) for f in analyze_source(REDUCTIONS)] == [("IPV006", 14)]
    mod = load(REDUCTIONS)
    mod["along_dim"]().sum().backward()
    mod["positional_dim"]().sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        mod["whole"]().sum().backward()


SERIES = '''import torch
from torch import Tensor


def angle(ho: Tensor) -> Tensor:
    h = (ho ** 2).sum(-1)
    s = torch.zeros_like(h)
    for i in range(3):
        s += 0.1 * h ** i
    w = 2 * torch.arccos(torch.clamp(s, -1.0, 1.0))
    step = w - torch.sin(w)
    w -= step
    return w
'''


def test_a_factory_accumulated_from_an_annotated_parameter_is_a_guess_about_it():
    # `s += ...` of values computed from `ho` (ebsdtorch's `ho2ax`, set BN): `sin` saves `w`, which `-=` then writes
    assert [(f.code, f.line) for f in analyze_source(SERIES)] == [("IPV006", 12)]
    angle = load(SERIES)["angle"]
    angle(torch.rand(5, 3) * 0.5)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        angle((torch.rand(5, 3) * 0.5).requires_grad_()).sum().backward()


BOUNDED = '''import torch
from torch import Tensor


def max_roughness(thicknesses: Tensor, coef: float = 0.5):
    out = torch.ones(thicknesses.shape[0], thicknesses.shape[1] + 1) * float("inf")
    boundary = thicknesses * coef
    out[:, :-1] = boundary
    out[:, 1:] = torch.minimum(out[:, 1:], boundary)
    return out
'''


def test_a_tensor_saved_two_ways_is_shown_the_same_way_under_every_hash_seed(tmp_path):
    # `torch.minimum` saves `out[:, 1:]` both as its input and for `boundary`'s gradient: two origins alike but for the
    # step's kind, which the message showed by the hash seed (reflectorch's roughness prior, set BQ)
    import subprocess
    import sys

    path = tmp_path / "bounded.py"
    path.write_text(BOUNDED)
    outputs = set()
    for seed in ("1", "2", "3", "4"):
        run = subprocess.run([sys.executable, "-m", "inplace_lint", "check", "--no-cache", str(path)],
                             capture_output=True, text=True, env={**__import__("os").environ, "PYTHONHASHSEED": seed})
        outputs.add(run.stdout)
    [shown] = outputs
    assert ":9:5: IPV006" in shown
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        load(BOUNDED)["max_roughness"](torch.rand(3, 4, requires_grad=True)).sum().backward()


NAMED_DIMS = '''import torch


def peak(dim: int = -1):
    y = torch.randn(4, 3, requires_grad=True) * 2
    v, i = torch.max(y, dim)
    y.mul_(0.5)
    return v.sum() + y.sum()


def middle():
    y = torch.randn(5, 3, requires_grad=True) * 2
    m = y.median(dim=0).values
    y.add_(1)
    return m.sum() + y.sum()
'''


def test_a_dimension_named_by_an_int_parameter_and_median_along_it_save_indices():
    assert analyze_source(NAMED_DIMS) == []
    mod = load(NAMED_DIMS)
    mod["peak"]().backward()
    mod["middle"]().backward()


COUNTED = '''import torch
from torch import Tensor


def sines(matrix: Tensor) -> Tensor:
    qu = matrix * 2
    for i in range(3):
        qu[..., i] = torch.sin(qu[..., i])
    return qu
'''


def test_a_range_counter_as_an_index_is_basic_indexing():
    # `qu[..., i]` with `i` from `range(3)`: an integer, so a view `sin` saved (an adversarial review's miss)
    assert [(f.code, f.line) for f in analyze_source(COUNTED)] == [("IPV006", 8)]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        load(COUNTED)["sines"](torch.randn(4, 3, requires_grad=True)).sum().backward()
