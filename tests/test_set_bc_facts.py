"""A return computed from parameters alone (set BC: easyfsl's PT-MAP, ``power_transform(features, p)`` returning
``(features.relu() + 1e-6).pow(p)``): a new tensor that requires grad when what the call passes does. The
caller that passes a submodule's output gets a tensor that requires grad, so the ``exp`` output it writes in
place is saved for backward; one that passes a factory's tensor gets nothing, and its write is legal. Each
case executed under torch 2.13."""
from __future__ import annotations

import pathlib

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

FIXTURE = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "detect" / "IPV006" / "computed_return.py"


def test_the_write_after_a_computed_return_is_reported_where_the_caller_passes_grad_and_raises():
    source = FIXTURE.read_text()
    assert [(f.code, f.line, f.col) for f in analyze_source(source)] == [("IPV006", 27, 8), ("IPV006", 32, 8)]
    mod = load(source)
    model = mod["Transport"](torch.nn.Linear(4, 4))
    for method in (model.forward, model.centered_plan):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            method(torch.randn(3, 4)).sum().backward()
    plan = mod["uniform_plan"](3)  # a factory's tensor: nothing requires grad, the write is legal
    assert not plan.requires_grad and torch.allclose(plan.sum(), torch.tensor(1.0))


NOT_COMPUTED = """import torch
from torch import nn


def zeros_like_input(features):
    return features.new_zeros(features.shape) + 1


def as_ids(features):
    return features.argmax(-1) + 1


def noise(features):
    with torch.no_grad():
        return features * 2


class Head(nn.Module):
    def __init__(self, backbone):
        super().__init__()
        self.backbone = backbone

    def forward(self, x):
        a = torch.exp(zeros_like_input(self.backbone(x)))
        a /= a.sum()
        b = torch.exp(as_ids(self.backbone(x)).float())
        b /= b.sum()
        c = torch.exp(noise(self.backbone(x)))
        c /= c.sum()
        return a, b, c
"""


def test_a_factory_method_an_index_or_grad_off_computes_nothing_that_requires_grad():
    assert analyze_source(NOT_COMPUTED) == []
    mod = load(NOT_COMPUTED)
    a, b, c = mod["Head"](torch.nn.Linear(4, 4))(torch.randn(3, 4))
    assert not (a.requires_grad or b.requires_grad or c.requires_grad)  # so no backward reaches the writes
