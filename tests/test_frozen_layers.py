"""A frozen layer still saves an input that requires grad when its backward reads the input for the input's own
gradient: a convolution (its backward formula reads input and weight together, and a reflect pad reads it) or a
norm (its statistics), not ``nn.Linear`` (``grad @ weight``) nor the recurrent layers. The class freezes it (``requires_grad_(False)``, or
``p.requires_grad = False`` over its parameters), a generator's output goes through it (a perceptual loss), and the
output is then written in place: the backward raises. Reported only with evidence that the input requires grad
(a write to ``forward``'s own parameter is its callers' to decide). Executed under torch 2.13, every parameter of
each layer frozen, in train and eval mode."""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from inplace_lint.torch_facts import ops
from tests.executed import load

torch = pytest.importorskip("torch")
nn = pytest.importorskip("torch.nn")

SOURCE = """import torch
from torch import nn


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.gen = nn.Linear(8, 8)
        self.features = nn.Conv1d(1, 4, 3, padding=1)
        self.features.requires_grad_(False)

    def forward(self, z):
        fake = self.gen(z)
        feats = self.features(fake.unsqueeze(1))
        fake.clamp_(-1, 1)
        return feats


class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.gen = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)
        for p in self.norm.parameters():
            p.requires_grad = False

    def forward(self, z):
        fake = self.gen(z)
        feats = self.norm(fake)
        fake.clamp_(-1, 1)
        return feats


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.gen = nn.Linear(8, 8)
        self.head = nn.Linear(8, 8)
        self.head.requires_grad_(False)

    def forward(self, z):
        fake = self.gen(z)
        feats = self.head(fake)
        fake.clamp_(-1, 1)
        return feats


class Reflect(nn.Module):
    def __init__(self):
        super().__init__()
        self.gen = nn.Linear(8, 8)
        self.features = nn.Conv1d(1, 4, 3, padding=1, padding_mode="reflect")

    def forward(self, z):
        fake = self.gen(z)
        feats = self.features(fake.unsqueeze(1))
        fake.clamp_(-1, 1)
        return feats


class Circular(Reflect):
    def __init__(self):
        super().__init__()
        self.features = nn.Conv1d(1, 4, 3, padding=1, padding_mode="circular")


class Data(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.norm.requires_grad_(False)

    def forward(self, x):
        feats = self.norm(x)
        x.clamp_(-1, 1)
        return feats
"""


def test_a_frozen_convolution_or_norm_or_one_padding_first_still_saves_an_input_that_requires_grad():
    findings = analyze_source(SOURCE)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 15, 8), ("IPV006", 30, 8), ("IPV006", 57, 8)]
    assert "`self.features(...) [nn.Conv1d]` (line 14) saved for backward as its input" in findings[0].message
    assert "`self.norm(...) [nn.LayerNorm]` (line 29)" in findings[1].message
    mod = load(SOURCE)
    for model in (mod["Critic"](), mod["Norm"](), mod["Reflect"]()):  # (frozen, frozen, padding first)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            model(torch.randn(2, 8)).sum().backward()
    mod["Head"]()(torch.randn(2, 8)).sum().backward()  # (a frozen linear layer reads no input for its own gradient)
    mod["Circular"]()(torch.randn(2, 8)).sum().backward()  # (a circular pad copies)
    mod["Data"]()(torch.randn(2, 8)).sum()  # (data that needs no grad: nothing to raise)


@pytest.mark.parametrize("train", [True, False])
def test_the_table_of_layers_reading_their_own_input(train):
    cases = {"Linear": (nn.Linear(4, 4), (2, 4)), "Bilinear": (nn.Bilinear(4, 4, 4), (2, 4)),
             "Conv1d": (nn.Conv1d(4, 4, 3, padding=1), (2, 4, 4)), "Conv2d": (nn.Conv2d(4, 4, 3, padding=1), (2, 4, 4, 4)),
             "ConvTranspose1d": (nn.ConvTranspose1d(4, 4, 3, padding=1), (2, 4, 4)), "LayerNorm": (nn.LayerNorm(4), (2, 4)),
             "GroupNorm": (nn.GroupNorm(2, 4), (2, 4, 4)), "BatchNorm1d": (nn.BatchNorm1d(4), (2, 4)),
             "PReLU": (nn.PReLU(), (2, 4)), "LSTM": (nn.LSTM(4, 4, batch_first=True), (2, 3, 4)),
             "GRU": (nn.GRU(4, 4, batch_first=True), (2, 3, 4)), "InstanceNorm1d": (nn.InstanceNorm1d(4), (2, 4, 4)),
             "LazyConv1d": (nn.LazyConv1d(4, 3, padding=1), (2, 4, 4)), "LazyBatchNorm1d": (nn.LazyBatchNorm1d(), (2, 4))}
    raised = set()
    for name, (layer, shape) in cases.items():
        layer(torch.randn(*shape), torch.randn(*shape)) if name == "Bilinear" else layer(torch.randn(*shape))
        layer.train(train).requires_grad_(False)  # (a lazy layer is made by its first call)
        h = torch.randn(*shape, requires_grad=True) * 1
        out = layer(h, h) if name == "Bilinear" else layer(h)
        out = out[0] if isinstance(out, tuple) else out
        h.mul_(0.5)
        try:
            out.sum().backward()
        except RuntimeError:
            raised.add(name)
    assert raised == set(cases) & ops.LAYERS_READING_OWN_INPUT
    assert {"Linear", "LSTM", "GRU"}.isdisjoint(ops.LAYERS_READING_OWN_INPUT)
