"""Facts from set BO (twenty-first session), each executed under torch.

- An attribute built as one of several in-place activations keeps the one whose backward reads its output
  (orbit-torch's ``ConvBlock``: ``nn.ReLU(inplace=True)`` for "relu", ``nn.SiLU(inplace=True)`` for "silu").
- ``self.act = None`` then ``if activation is not None: self.act = ...``: a block built with ``activation=None``
  runs no activation, and a submodule built in two arms of ``__init__`` rules a path out only where both builds do.
- A submodule whose ``forward`` runs an in-place layer on its parameter writes what the caller passed (IPV007 at
  the call when the caller reads it again).
- A saved output written in place whose written value only feeds ``argmax`` cannot fail a backward.
"""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

BLOCKS = '''import torch
import torch.nn as nn


class ConvBlock(nn.Module):
    def __init__(self, c, norm="batch", activation="relu", pre_norm=False):
        super().__init__()
        self.pre_norm = pre_norm
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.norm = None
        if norm is not None:
            self.norm = nn.BatchNorm2d(c)
        self.act = None
        if activation is not None:
            if activation == "relu":
                self.act = nn.ReLU(inplace=True)
            elif activation == "silu":
                self.act = nn.SiLU(inplace=True)
            else:
                raise ValueError(activation)

    def forward(self, x):
        if self.pre_norm:
            if self.norm: x = self.norm(x)
            if self.act: x = self.act(x)
            x = self.conv(x)
        else:
            x = self.conv(x)
            if self.norm: x = self.norm(x)
            if self.act: x = self.act(x)
        return x


class Separable(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.depthwise = ConvBlock(c)
        self.pointwise = ConvBlock(c)

    def forward(self, x):
        identity = x
        out = self.depthwise(x)
        out = self.pointwise(out)
        out += identity
        return out


class Residual(nn.Module):
    def __init__(self, c, norm="batch", variant="original"):
        super().__init__()
        if variant == "original":
            self.conv1 = ConvBlock(c, norm)
            self.conv2 = ConvBlock(c, norm, activation=None)
        else:
            self.conv1 = ConvBlock(c, norm, pre_norm=True)
            self.conv2 = ConvBlock(c, norm, pre_norm=True)

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.conv2(out)
        out += identity
        return out
'''


def test_the_activation_whose_backward_reads_its_output_decides_and_a_build_without_one_is_clean():
    found = [(f.code, f.line, f.col) for f in analyze_source(BLOCKS)]
    # line 44: Separable's `out += identity` on the ReLU's saved output (raises); line 60: Residual's first block
    # writes `x` in place where it is built with `pre_norm=True` and no norm, and `identity` reads it again; not
    # line 62 (`out += identity`): conv2 is built without an activation, or with its convolution last
    assert ("IPV006", 44, 8) in found and ("IPV007", 60, 14) in found and not any(f[1] == 62 for f in found), found
    mod = load(BLOCKS)
    x = torch.randn(2, 4, 5, 5, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        mod["Separable"](4)(x * 1).sum().backward()
    for variant in ("original", "pre_act"):  # `out += identity` of line 62: conv2's output is never saved
        mod["Residual"](4, variant=variant)(x * 1).sum().backward()


def test_builds_made_in_the_same_arm_go_together():
    # conv1's 'original' output (the ReLU's, saved) never meets conv2's 'pre_act' build, whose activation writes its
    # input: the two are built in the same arm of `__init__` (docs/analysis.md, twenty-sixth session)
    assert not any(f.line == 25 for f in analyze_source(BLOCKS))
    mod = load(BLOCKS)
    for variant in ("original", "pre_act"):
        for norm in ("batch", None):
            x = torch.randn(2, 4, 5, 5, requires_grad=True)
            mod["Residual"](4, norm=norm, variant=variant)(x * 1).sum().backward()  # no build pairing raises


def test_a_block_that_runs_its_in_place_activation_first_writes_what_the_caller_reads_again():
    mod = load(BLOCKS)
    torch.manual_seed(0)
    block = mod["Residual"](4, norm=None, variant="pre_act")
    x0 = torch.randn(2, 4, 5, 5)
    x = x0.clone()
    block(x)
    assert not torch.equal(x, x0) and torch.equal(x, x0.relu())  # `identity` was rectified before `+=`
    x = x0.clone()
    mod["Residual"](4, norm="batch", variant="pre_act")(x)  # a norm first: the activation writes its output
    assert torch.equal(x, x0)


SAMPLER = '''import torch


def sample(logits, temperature):
    probs = torch.softmax(logits / temperature, dim=-1)
    q = torch.empty_like(probs).exponential_()
    tokens = probs.div_(q).argmax(dim=-1)
    return torch.where(temperature < 1e-5, logits.argmax(dim=-1), tokens)


def scaled(logits, temperature):
    probs = torch.softmax(logits, dim=-1)
    out = probs.div_(temperature)
    return out
'''


def test_a_saved_output_whose_written_value_only_feeds_argmax_is_not_reported():
    assert [(f.code, f.line) for f in analyze_source(SAMPLER)] == [("IPV006", 13)]
    mod = load(SAMPLER)
    logits = torch.randn(3, 7, requires_grad=True)
    tokens = mod["sample"](logits, torch.tensor(0.7))
    assert tokens.dtype == torch.int64 and not tokens.requires_grad  # nothing reaches the softmax's backward
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        mod["scaled"](logits, 2.0).sum().backward()
