"""A view, its base and every other view of that base share one version counter
(docs/pytorch-facts.md#shared-version-counter): an op that saved one of them for backward is failed by an in-place
write to any of them. An in-place ReLU on ``x.real`` saves its output, which is ``x.real`` itself; the second
in-place ReLU on ``x.imag`` bumps the counter ``x.real`` shares (set BI's leibniz ``ComplexReLU``, missed before).
The same holds for a row saved as a matmul's input (``x[0] @ w``) and then a sibling row written, and for a saved
in-place ``sigmoid_`` of ``x[0]`` and then ``x`` or a name bound to ``x[1]`` written. Items of a Python list are
separate tensors: writing ``xs[1]`` after saving ``xs[0]`` runs, and is not reported. Executed under torch 2.13."""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

SOURCE = """import torch
import torch.nn as nn


class ComplexReLU(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = nn.ReLU(inplace=True)

    def forward(self, input):
        return self.relu(input.real) + 1j * self.relu(input.imag)


class Rows(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))
        self.v = nn.Parameter(torch.randn(4, 4))

    def sibling_saved_input(self, h):
        x = h @ self.v
        y = x[0] @ self.w
        x[1].zero_()
        return y

    def sibling_names(self, h):
        x = h @ self.v
        a = x[0]
        b = x[1]
        y = a @ self.w
        b.zero_()
        return y

    def base_after_item_sigmoid(self, h):
        x = h @ self.v
        x[0].sigmoid_()
        x.mul_(2)
        return x

    def sibling_name_after_item_sigmoid(self, h):
        x = h @ self.v
        w = x[1]
        x[0].sigmoid_()
        w.mul_(2)
        return x

    def list_items(self, h):
        xs = [h @ self.v, h @ self.w]
        a = xs[0]
        b = xs[1]
        a.sigmoid_()
        b.zero_()
        return a + b
"""


def test_a_write_to_any_view_of_a_base_fails_what_another_view_saved():
    findings = analyze_source(SOURCE)
    assert [(f.code, f.line, f.col) for f in findings] == [
        ("IPV006", 11, 44), ("IPV006", 23, 8), ("IPV006", 31, 8), ("IPV006", 37, 8), ("IPV006", 44, 8)]
    assert "writes in place to `input.imag`, a view of `self.relu(input.real)`" in findings[0].message
    mod = load(SOURCE)
    relu = mod["ComplexReLU"]()
    z = torch.randn(3, 4, dtype=torch.cfloat, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        relu(z * 1).abs().sum().backward()
    rows = mod["Rows"]()
    for name in ("sibling_saved_input", "sibling_names", "base_after_item_sigmoid", "sibling_name_after_item_sigmoid"):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            getattr(rows, name)(torch.randn(3, 4)).sum().backward()
    rows.list_items(torch.randn(3, 4)).sum().backward()


TORCH_FUNCTION_VIEWS = """import torch
import torch.nn as nn


class Rows(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))
        self.v = nn.Parameter(torch.randn(4, 4))

    def forward(self, h):
        z = h @ self.v
        a = torch.select(z, 0, 0)
        b = torch.narrow(z, 0, 1, 1)
        y = a @ self.w
        b.zero_()
        return y
"""


def test_views_taken_by_torch_functions_share_their_base_counter():
    # `torch.select(z, 0, 0)` and `torch.narrow(z, ...)` are views of `z` as `z.select(...)` is (before, the
    # walk took them for views of the name `torch`)
    assert [(f.code, f.line, f.col) for f in analyze_source(TORCH_FUNCTION_VIEWS)] == [("IPV006", 16, 8)]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        load(TORCH_FUNCTION_VIEWS)["Rows"]()(torch.randn(4, 4)).sum().backward()
