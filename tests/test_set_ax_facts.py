"""Facts from set AX (fourteenth session), executed under torch 2.13.

A local computed from the function's parameters by torch ops alone (``x = F.unfold(x, k).transpose(1, 2)``) is
left untracked, as any guess through a torch function is; when an op saves it as its own input (``x.var(-1)``),
a later in-place write raises at backward whenever the caller's tensor requires grad. It is now a guess about
those parameters, which the callers decide (pylocron's ``_xcorr2d`` under ``NormConv2d``: a default hazard in any
layer after a trainable one). The bindings read are those before the op (``x = fn(x, w)`` after it is not what
it read).
"""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

SOURCE = """import torch
import torch.nn.functional as F
from torch import Tensor, nn


def xcorr(x: Tensor, weight: Tensor, normalize: bool = False, eps: float = 1e-14) -> Tensor:
    h, w = x.shape[-2:]
    x = F.unfold(x, weight.shape[-2:])
    x = x.transpose(1, 2)
    if normalize:
        scale = (x.var(-1, unbiased=False, keepdim=True) + eps).rsqrt()
        x -= x.mean(-1, keepdim=True)
        x *= scale.expand_as(x)
    x = x @ weight.view(weight.shape[0], -1).t()
    return x.transpose(1, 2).reshape(x.shape[0], -1, h - weight.shape[-2] + 1, w - weight.shape[-1] + 1)


def factory_local(n: int, scale: Tensor) -> Tensor:
    x = torch.arange(n, dtype=torch.float32).expand(2, n).clone()
    s = x.var(-1, keepdim=True)
    x -= 1
    return s * scale


class NormConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(3, 2, 2, 2))

    def forward(self, x: Tensor) -> Tensor:
        return xcorr(x, self.weight, True)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 2, 3, padding=1)
        self.norm = NormConv()

    def forward(self, x: Tensor) -> Tensor:
        return self.norm(self.stem(x))
"""


def test_the_writes_after_a_saved_input_of_a_torch_made_local_are_findings_that_raise():
    findings = analyze_source(SOURCE)
    assert [(f.code, f.line, f.col + 1) for f in findings] == [("IPV006", 12, 9), ("IPV006", 13, 9)]
    assert findings[0].message.startswith("`-=` writes in place to `x`, which `x.var` (line 11) saved for backward "
                                          "as its input: the backward raises (it does when `x` requires grad)")
    torch.manual_seed(0)
    net = load(SOURCE)["Net"]()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        net(torch.randn(1, 1, 5, 5)).sum().backward()
    # a first layer on data that needs no grad: nothing saved needs it, and the backward runs
    net.norm(torch.randn(1, 2, 5, 5)).sum().backward()


def test_the_out_of_place_writes_give_the_same_values_and_a_gradient():
    fixed = SOURCE.replace("x -= x.mean(-1, keepdim=True)", "x = x - x.mean(-1, keepdim=True)").replace(
        "x *= scale.expand_as(x)", "x = x * scale.expand_as(x)")
    assert analyze_source(fixed) == []
    torch.manual_seed(0)
    before = load(SOURCE)["Net"]()
    after = load(fixed)["Net"]()
    after.load_state_dict(before.state_dict())
    data = torch.randn(1, 1, 5, 5)
    with torch.no_grad():
        expected = before(data)
    out = after(data)
    assert torch.allclose(out.detach(), expected)
    out.sum().backward()
    assert after.stem.weight.grad is not None


def test_a_binding_after_the_op_is_not_what_it_read():
    """``x = fn(x, w)`` after the write: the local read by ``x.var`` was still made by torch ops."""
    src = SOURCE.replace("    x = x @ weight.view(weight.shape[0], -1).t()\n",
                         "    x = (lambda a, b: a @ b.view(b.shape[0], -1).t())(x, weight)\n")
    assert [(f.code, f.line) for f in analyze_source(src)] == [("IPV006", 12), ("IPV006", 13)]
