"""A module function that builds one torch layer and returns it (``def conv3x3(i, o): return nn.Conv1d(...)``, or
torchaudio's ``_get_conv1d_layer``, which binds the layer, initialises it and returns it) builds that layer:
``self.conv = conv3x3(...)`` is an ``nn.Conv1d`` whose call saves its input for the weights' gradient, and so is
the first layer of ``nn.Sequential(conv3x3(...), ...)`` in a ``ModuleList`` (set BL's gladiaio-torchaudio
Tacotron2 with ``mask_padding=True``, missed before). Executed under torch 2.13: each write makes the backward
raise."""
from __future__ import annotations

import ast

import pytest

from inplace_lint.analysis import analyze_source
from inplace_lint.analysis.init_builds import layer_builders
from tests.executed import load

torch = pytest.importorskip("torch")

SOURCE = """import torch
from torch import nn
import torch.nn.functional as F


def conv3x3(i, o):
    return nn.Conv1d(i, o, 3, padding=1)


def _get_conv1d_layer(i, o, gain="linear"):
    layer = torch.nn.Conv1d(i, o, 3, padding=1)
    torch.nn.init.xavier_uniform_(layer.weight, gain=torch.nn.init.calculate_gain(gain))
    return layer


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.conv = conv3x3(4, 4)

    def forward(self, h):
        x = self.lin(h).transpose(1, 2)
        y = self.conv(x)
        x.mul_(2)
        return x + y


class Postnet(nn.Module):
    def __init__(self, n: int = 2):
        super().__init__()
        self.convolutions = nn.ModuleList()
        for i in range(n):
            self.convolutions.append(nn.Sequential(_get_conv1d_layer(4, 4), nn.BatchNorm1d(4)))

    def forward(self, x):
        for i, conv in enumerate(self.convolutions):
            x = F.dropout(torch.tanh(conv(x)), 0.5, training=self.training)
        return x


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.postnet = Postnet()

    def forward(self, h):
        mel = self.lin(h).transpose(1, 2)
        post = self.postnet(mel)
        mel.masked_fill_(mel > 10, 0.0)
        return mel + post
"""


def test_a_layer_a_module_function_builds_saves_its_input():
    findings = analyze_source(SOURCE)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 25, 8), ("IPV006", 51, 8)]
    assert "`self.conv(...)` (`nn.Conv1d`, line 24) saved for backward" in findings[0].message
    assert "`self.postnet(...)` (`nn.Conv1d`, line 50) saved for backward" in findings[1].message
    mod = load(SOURCE)
    for name in ("Block", "Model"):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            mod[name]()(torch.randn(2, 5, 4)).sum().backward()


def test_which_functions_build_one_layer():
    tree = ast.parse(SOURCE + '''

def norm(c):
    return nn.BatchNorm1d(c, affine=False)


def either(i, o, k):
    if k:
        return nn.Conv1d(i, o, 3)
    return nn.Linear(i, o)


def gen(i, o):
    yield nn.Conv1d(i, o, 3)
''')
    assert layer_builders(tree) == {"conv3x3": "nn.Conv1d", "_get_conv1d_layer": "torch.nn.Conv1d"}
