"""``torch.pow(10.0, t)`` saves its output, as ``10.0 ** t`` does: a number to a tensor's power is ``pow.Scalar``,
whose backward reads its result and the exponent (torch's derivatives.yaml: ``pow_backward_exponent(grad, self,
exponent, result)``). A decibel gain computed so and clamped in place raises at backward; the operator form was
already reported, the function form was not (found while reading set BF's galmoss miss). A tensor to a number's power
(``torch.pow(t, 2)``) saves its input, not its output: clamping its output runs. Executed under torch 2.13."""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

SOURCE = """import torch


class Gain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.db = torch.nn.Linear(4, 1)

    def forward(self, x):
        g = torch.pow(10.0, self.db(x) / 20)
        g.clamp_(max=4.0)
        return x * g

    def operator(self, x):
        h = 10 ** (self.db(x) / 20)
        h.clamp_(max=4.0)
        return x * h

    def squared(self, x):
        s = torch.pow(self.db(x), 2)
        s.clamp_(max=4.0)
        return x * s
"""


def test_a_number_to_a_tensors_power_saves_its_output():
    findings = analyze_source(SOURCE)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 11, 8), ("IPV006", 16, 8)]
    assert "`torch.pow(10.0, self.db(x) / 20)`, whose output autograd saves for backward" in findings[0].message
    mod = load(SOURCE)
    gain = mod["Gain"]()
    for method in (gain.forward, gain.operator):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            method(torch.randn(3, 4)).sum().backward()
    gain.squared(torch.randn(3, 4)).sum().backward()
