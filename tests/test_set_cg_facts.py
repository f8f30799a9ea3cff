"""Facts from set CG (twenty-sixth session), each executed under torch.

- A submodule whose ``forward`` stores into a parameter by a key that is surely a string (``state[full_key] = value``,
  ``full_key`` made by a function returning ``"{}.{}".format(...)``: fairseq's ``set_incremental_state``) writes a
  mapping: with nothing saying the parameter is a tensor, the caller's later read of what it passed is not reported
  (str2speech's MegaTTS decoder, set CG: three false IPV007). A slice write there (``x[:, 0] = 0``) still is, and so
  is an int, a mask or an index key (tests/test_review_s26.py).
- A call through a top-level table of functions (``UPDATES[kind](penalties, p_mult)``) runs one of the table's
  functions: each is a call site, so the callers decide a guess about a parameter (humancompatible-train's penalty
  updates, set CG: a multiplier that is a float at its only call; a false IPV006), and a caller passing a tensor
  that requires grad still meets the write.
- A saved tensor written after the op that saved it matters only when a backward reaches that op: the op's result
  stored into the items of a buffer made here (``dist[a:b] = torch.min(dist[a:b], d)``) is read only through that
  buffer, which is followed too; when every read ends without a gradient (``torch.multinomial``, a comparison) the
  write cannot fail (K-means++ in pytorch-segmentation-models-trainer, set BX: three dubious IPV006, executed).
- ``weights.view(n, 1, a).repeat(1, h, 1)`` of a parameter annotated ``Tensor`` is a tensor with its own storage: a
  product that saved it for another input's gradient makes a later write raise at backward (deepdow's
  ``portfolio_returns`` shape, set CG).
"""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

SAVED_ERROR = "modified by an inplace operation"

STATE = '''import torch
from torch import nn


def _key(module, key):
    return "{}.{}".format(module.__class__.__name__, key)


def set_state(module, state, key, value):
    if state is not None:
        full_key = _key(module, key)
        state[full_key] = value


class Attn(nn.Module):
    def forward(self, x, state=None):
        set_state(self, state, "k", x)
        return x * 2


class Zero(nn.Module):
    def forward(self, x):
        x[:, 0] = 0
        return x


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attn()
        self.ffn = Attn()
        self.zero = Zero()

    def forward(self, x, state=None):
        x = self.attn(x, state=state)
        x = self.ffn(x, state=state)
        return x

    def shortcut(self, x):
        y = self.zero(x)
        return x + y
'''


def test_a_keyed_store_into_a_parameter_through_a_submodule_is_not_a_tensor_write():
    assert [(f.code, f.line, f.col) for f in analyze_source(STATE)] == [("IPV007", 40, 12)]
    mod = load(STATE)
    layer = mod["Layer"]()
    state = {}
    x = torch.randn(2, 3)
    layer(x, state=state)  # the dict gets keys; no tensor the caller holds changed
    assert sorted(state) == ["Attn.k"] and torch.equal(state["Attn.k"], x * 2)
    x0 = torch.randn(2, 3)
    x = x0.clone()
    out = layer.shortcut(x)  # line 40: `Zero` writes the caller's `x`, which the sum reads again
    assert torch.equal(x[:, 0], torch.zeros(2)) and torch.equal(out[:, 0], torch.zeros(2))
    assert not torch.equal(out, x0 + x0)


TABLE = '''import torch
from torch import Tensor


def _adapt(penalties: Tensor, p_mult: Tensor, delta: float):
    b = (1 - p_mult) * penalties / (delta + 1e-8)
    penalties.mul_(p_mult).add_(b)


def _const(penalties: Tensor, p_mult: Tensor, delta: float):
    penalties.mul_(p_mult)


UPDATES = {"const": _const, "adapt": _adapt}


class Opt:
    def __init__(self, kind, K0):
        if kind not in UPDATES:  # (a membership test runs no function of the table)
            raise ValueError(kind)
        self.kind = kind
        self.K0 = K0
        self.K_schedule = lambda step, K: K

    def post(self, penalties, step):
        p_mult = self.K_schedule(step, self.K0)
        UPDATES[self.kind](penalties, p_mult, 0.1)
        return penalties
'''

TABLE_GRAD = TABLE + '''

def post(penalties, w):
    p_mult = w.sigmoid()
    UPDATES["adapt"](penalties, p_mult, 0.1)
    return penalties
'''


def test_a_call_through_a_table_of_functions_lets_its_callers_decide():
    assert analyze_source(TABLE) == []
    mod = load(TABLE)
    pen = torch.ones(3)
    mod["Opt"]("adapt", 0.5).post(pen, 0)  # a float multiplier: nothing is saved, nothing raises
    assert torch.allclose(pen, torch.full((3,), 0.5 + 0.5 / (0.1 + 1e-8)))
    found = [(f.code, f.line) for f in analyze_source(TABLE_GRAD)]
    assert found == [("IPV006", 7)], found
    mod = load(TABLE_GRAD)
    w = torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=SAVED_ERROR):
        mod["post"](torch.ones(3), w).sum().backward()


REPEAT = '''import torch


def portfolio(weights: torch.Tensor, y: torch.Tensor, rebalance: bool = False):
    n, h, a = y.shape
    w = weights.view(n, 1, a).repeat(1, h, 1)
    if not rebalance:
        unscaled = (1 + y).cumprod(1)[:, :-1, :] * w[:, 1:, :]
        w[:, 1:, :] = unscaled / unscaled.sum(2, keepdim=True)
    return (y * w).sum(-1)


def spread(weights, y):
    w = weights.repeat(1, 3)
    unscaled = y * w
    w.mul_(2)
    return unscaled
'''


def test_a_repeated_copy_of_a_tensor_parameter_saved_for_another_input_is_a_tensor():
    found = [(f.code, f.line, f.col) for f in analyze_source(REPEAT)]
    # not `spread`: nothing says `weights` is a tensor (`ndarray.repeat` exists), so neither is `w`
    assert found == [("IPV006", 9, 8)], found
    mod = load(REPEAT)
    y = torch.rand(2, 4, 3, requires_grad=True)
    weights = torch.full((2, 3), 1 / 3)
    with pytest.raises(RuntimeError, match=SAVED_ERROR):
        mod["portfolio"](weights, y).sum().backward()
    mod["portfolio"](weights, y.detach()).sum()  # data that needs no grad: nothing saved, nothing raises


KMEANS = '''import torch


def init_centroids(x: torch.Tensor, k: int):
    n = x.shape[0]
    centroids = torch.zeros((k, x.shape[1]))
    centroids[0] = x[0]
    min_sq = torch.full((n,), float("inf"))
    for i in range(1, k):
        latest = centroids[i - 1:i]
        dist = torch.cdist(x, latest).squeeze(1)
        min_sq[0:n] = torch.min(min_sq[0:n], dist.pow(2))
        idx = torch.multinomial(min_sq, 1)
        centroids[i] = x[idx]
    return centroids


def spread(x: torch.Tensor, k: int):
    centroids = torch.zeros((k, x.shape[1]))
    centroids[0] = x[0]
    min_sq = torch.full((x.shape[0],), float("inf"))
    for i in range(1, k):
        dist = torch.cdist(x, centroids[i - 1:i]).squeeze(1)
        min_sq[:] = torch.min(min_sq, dist)
        centroids[i] = x[torch.multinomial(min_sq, 1)]
    return centroids, min_sq
'''


def test_a_saved_tensor_whose_op_no_backward_reaches_may_be_written():
    found = [(f.code, f.line) for f in analyze_source(KMEANS)]
    # `spread` returns `min_sq`, which holds `torch.min`'s result: a backward through it reaches the op
    assert found == [("IPV006", 24), ("IPV006", 25)], found
    mod = load(KMEANS)
    torch.manual_seed(0)
    x = torch.randn(10, 2, requires_grad=True)
    mod["init_centroids"](x, 3).sum().backward()  # backward reaches `x` through the indexing only
    assert x.grad is not None
    centroids, min_sq = mod["spread"](x, 3)
    with pytest.raises(RuntimeError, match=SAVED_ERROR):
        (centroids.sum() + min_sq.sum()).backward()


GUESS = '''import torch
from torch import Tensor, nn


class Schedule(nn.Module):
    def term(self, x: Tensor, t: Tensor) -> Tensor:
        return torch.sqrt_(2 * t) * 1

    def level(self, x: Tensor, t: Tensor) -> Tensor:
        return torch.sqrt_(2 * t)

    def drift(self, x: Tensor, t: Tensor, score: Tensor) -> Tensor:
        return x - self.level(x, t).square_() * score
'''


def test_a_finding_on_a_guess_about_a_parameter_names_the_parameter():
    [found] = analyze_source(GUESS)
    assert (found.code, found.line, found.col) == ("IPV006", 13, 19)
    assert found.message == ("`square_` writes in place to `self.level(x, t)`, `level(...)`, whose output autograd "
                             "saves for backward (it does when `t` requires grad)")
    schedule = load(GUESS)["Schedule"]()
    x, score = torch.randn(3), torch.randn(3)
    schedule.drift(x, torch.rand(3), score)  # a time that needs no grad: nothing saved
    t = torch.rand(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=SAVED_ERROR):
        schedule.drift(x, t, score).sum().backward()
