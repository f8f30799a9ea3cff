"""A helper that returns its argument only where that argument is empty hands back no expanded view
(set BH: deepvisiontools' box helpers, ``if boxes.numel() == 0: return boxes`` before building new boxes, were
given an expanded tensor, and their caller's ``clamp_`` on the result was reported as a write to an expanded view:
4 false findings). No element of an empty tensor is written, so no two elements share memory; the write runs.
Not when the test may hold for a tensor that is not empty (``or``), nor when the name is bound again before the
``return``. Executed under torch 2.13."""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

SOURCE = """import torch


def sanitize(boxes):
    if boxes.numel() == 0:
        return boxes
    return torch.stack([boxes[..., 0], boxes[..., 1]], dim=-1)


def sanitize_len(boxes):
    if not len(boxes) or boxes.shape[0] == 0:
        return boxes
    return boxes * 1


def keep(boxes):
    if boxes.numel() == 0 or boxes.shape[-1] == 2:
        return boxes
    return torch.stack([boxes[..., 0], boxes[..., 1]], dim=-1)


def rebound(boxes, other):
    if len(boxes) == 0:
        boxes = other
        return boxes
    return boxes * 2


def clip(props, k, other):
    rep = props[:, None, :].expand(-1, k, 2)
    a = sanitize(rep)
    a.clamp_(0, 1)
    b = sanitize_len(rep)
    b.clamp_(0, 1)
    return a, b


def clip_kept(props, k):
    rep = props[:, None, :].expand(-1, k, 2)
    c = keep(rep)
    c.clamp_(0, 1)
    return c


def clip_rebound(props, k):
    rep = props[:, None, :].expand(-1, k, 2)
    d = rebound(rep[:0], rep)
    d.clamp_(0, 1)
    return d
"""


def test_a_helper_returning_its_argument_only_when_empty_hands_back_nothing_written():
    findings = analyze_source(SOURCE)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV004", 41, 4), ("IPV004", 48, 4)]
    mod = load(SOURCE)
    for props in (torch.rand(3, 2), torch.rand(0, 2)):
        mod["clip"](props, 4, None)  # (an empty tensor written in place: nothing raises)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        mod["clip_kept"](torch.rand(3, 2), 4)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        mod["clip_rebound"](torch.rand(3, 2), 4)


NEWTON_SCHULZ = """import torch
from torch import Tensor


def ns_loop(X: Tensor, steps: int = 3) -> Tensor:
    B = torch.empty(X.shape[0], X.shape[0])
    for _ in range(steps):
        A = X @ X.mT
        B.copy_(A @ A)
        B.mul_(0.5).add_(A, alpha=-0.5)
        X = 1.5 * X + B @ X
    return X


def _get_fn(strategy: str):
    if strategy == "ns":
        return ns_loop
    raise ValueError(strategy)


def zeropower(G: Tensor, strategy: str = "ns") -> Tensor:
    fn = _get_fn(strategy)
    return fn(G / (G.norm() + 1e-7))


class Muon(torch.optim.Optimizer):
    def __init__(self, params, lr=0.02):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(zeropower(p.grad), alpha=-group["lr"])
"""


def test_a_function_returned_as_a_value_is_called_by_whoever_receives_it():
    """muonium's ``_get_orthogonalization_fn`` returns its Newton-Schulz loop, which ``zeropower`` calls with what
    it got, and the optimizer calls ``zeropower`` on gradients: the call through the returned reference decides the
    loop's guess about ``X`` (annotated ``Tensor``), and a gradient needs no grad. The same loop, not returned
    anywhere, is an entry point and keeps it."""
    assert analyze_source(NEWTON_SCHULZ) == []
    entry = NEWTON_SCHULZ.replace("        return ns_loop\n", "        return None\n")
    assert [(f.code, f.line) for f in analyze_source(entry)] == [("IPV006", 9), ("IPV006", 10)]
    mod = load(NEWTON_SCHULZ)
    w = torch.nn.Parameter(torch.randn(4, 4))
    (w.sum() ** 2).backward()
    before = w.detach().clone()
    mod["Muon"]([w]).step()  # (on a gradient, which needs no grad: runs)
    assert not torch.equal(w.detach(), before)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        mod["ns_loop"](torch.randn(4, 4, requires_grad=True)).sum().backward()  # (a caller nobody sees)
