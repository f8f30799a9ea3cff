"""A saved output read only through an integer dtype (``.short()``, ``.byte()``, ``.char()``) or through ``.data``
takes no gradient (set BA's demucs ``i16_pcm``: ``(wav.clamp_(-1, 1) * (2**15 - 1)).short()``): no backward
reaches the op that saved it, so writing it in place cannot fail; executed under torch 2.13."""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

SOURCE = """import torch


def pcm16(x):
    wav = torch.tanh(x)
    wav.clamp_(-0.5, 0.5)
    return (wav * (2**15 - 1)).short()


def as_bytes(x):
    img = torch.sigmoid(x)
    img.mul_(255)
    return img.byte()


def values(x):
    q = x.exp()
    q.div_(2)
    return q.data


def still_differentiable(x):
    p = torch.tanh(x)
    p.clamp_(-0.5, 0.5)
    return (p * 2).half()
"""


def test_a_saved_output_read_only_without_gradient_is_no_finding_and_a_half_cast_still_is():
    findings = analyze_source(SOURCE)
    assert [(f.code, f.line) for f in findings] == [("IPV006", 24)]
    mod = load(SOURCE)
    for name in ("pcm16", "as_bytes", "values"):
        x = torch.randn(8, requires_grad=True)
        out = mod[name](x)
        assert not out.requires_grad  # nothing can take a gradient through it: no backward reaches the op
    x = torch.randn(8, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        mod["still_differentiable"](x).float().sum().backward()
