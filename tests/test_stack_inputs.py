"""A stack a module builds saves its input when its first layer does (set BG: torchaudio's Tacotron2, whose
``forward`` runs ``self.postnet(mel_specgram)``, a ``ModuleList`` of ``nn.Sequential(conv, batch norm)`` run in a
loop, then writes ``mel_specgram.masked_fill_(mask, 0.0)`` under ``if self.mask_padding:``). The first convolution
saved ``mel_specgram`` for its weight's gradient, so the backward raises. The same for ``self.net(x)`` with
``self.net = nn.Sequential(nn.Linear(...), ...)`` and ``self.convs[i](x)``. Not when the class freezes a stack of linear layers, nor when the first layer saves no
input (``nn.Dropout``, ``nn.ReLU``). Executed under torch 2.13."""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

SOURCE = """import torch
from torch import nn


class Postnet(nn.Module):
    def __init__(self, n, k):
        super().__init__()
        self.convolutions = nn.ModuleList()
        for i in range(k):
            self.convolutions.append(nn.Sequential(nn.Conv1d(n, n, 5, padding=2), nn.BatchNorm1d(n)))

    def forward(self, x):
        for i, conv in enumerate(self.convolutions):
            x = torch.tanh(conv(x)) if i < len(self.convolutions) - 1 else conv(x)
        return x


class Indexed(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.convs = nn.ModuleList([nn.Sequential(nn.Linear(n, n), nn.ReLU()) for _ in range(2)])

    def forward(self, x):
        return self.convs[1](self.convs[0](x))


class Plain(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n, n), nn.Tanh())
        self.drop = nn.Sequential(nn.Dropout(0.1), nn.Linear(n, n))

    def forward(self, x, y):
        return self.net(x) + self.drop(y)


class Model(nn.Module):
    def __init__(self, n, mask_padding=False):
        super().__init__()
        self.decoder = nn.Linear(n, n)
        self.postnet = Postnet(n, 3)
        self.indexed = Indexed(n)
        self.plain = Plain(n)
        self.mask_padding = mask_padding

    def forward(self, mel, mask):
        mel_specgram = self.decoder(mel)
        post = mel_specgram + self.postnet(mel_specgram)
        if self.mask_padding:
            mel_specgram.masked_fill_(mask, 0.0)
        return mel_specgram, post

    def indexed_step(self, mel):
        h = self.decoder(mel)
        out = self.indexed(h)
        h.mul_(0.5)
        return out

    def plain_step(self, mel):
        h = self.decoder(mel)
        g = self.decoder(mel)
        out = self.plain(h, g)
        h.mul_(0.5)
        g.mul_(0.5)
        return out
"""


def test_a_stack_whose_first_layer_saves_its_input_saves_it():
    findings = analyze_source(SOURCE)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 50, 12), ("IPV006", 56, 8),
                                                            ("IPV006", 63, 8)]
    assert "`self.postnet(...)` (`nn.Conv1d`, line 48)" in findings[0].message
    assert "when `self.mask_padding=True`" in findings[0].message
    mod = load(SOURCE)
    torch.manual_seed(0)
    mask = torch.zeros(2, 6, 6, dtype=torch.bool)
    mask[..., 4:] = True
    model = mod["Model"](6, mask_padding=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        sum(t.sum() for t in model(torch.randn(2, 6, 6), mask)).backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        model.indexed_step(torch.randn(3, 6)).sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        model.plain_step(torch.randn(3, 6)).sum().backward()
    g = model.decoder(torch.randn(3, 6))
    out = model.plain.drop(g)  # (a dropout first saves no input: the write below is harmless)
    g.mul_(0.5)
    out.sum().backward()


def test_a_frozen_linear_stack_saves_no_input():
    # (a frozen `nn.Linear` saves no input; a frozen convolution or batch norm still does when its input requires
    # grad, as their backward formula reads input and weight together: not asserted here)
    frozen = SOURCE.replace("for _ in range(2)])\n", "for _ in range(2)])\n"
                            "        self.convs.requires_grad_(False)\n")
    assert [(f.code, f.line) for f in analyze_source(frozen)] == [("IPV006", 51), ("IPV006", 64)]
    mod = load(frozen)
    model = mod["Model"](6)
    model.indexed_step(torch.randn(3, 6)).sum().backward()  # nothing saved was written
