"""Facts from set AW (fourteenth session), executed under torch 2.13.

- An output saved for backward whose input is computed from several parameters is a guess about each of them: a
  caller that passes a tensor requiring grad for any one of them makes the write raise (torch-em's contrastive
  loss: ``torch.norm(embeddings - cluster_means_spatial)`` then ``variance *= mask``, where the loss passes the
  model's embeddings second). The guess used to be about the first parameter only, whose caller passed a mean.
- ``x.expand([1, s[0]])`` with ``s = x.shape`` adds only a size-1 dimension: a plain view, no IPV004 (torchness's
  single-token encoder, a false IPV004 whose write was a split output's, IPV003, instead).
"""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

LOSS = """import torch
from torch import nn


def variance_term(means, emb, target, norm, ignore_labels=None):
    spatial = means[target]
    spatial = spatial.permute(1, 0)
    variance = torch.norm(emb - spatial, norm, dim=0)
    if ignore_labels is not None:
        variance *= (target != ignore_labels[0]).float()
    return variance.sum()


class Loss(nn.Module):
    def forward(self, input_: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        loss = 0.0
        for emb, tgt in zip(input_, target):
            means = torch.stack([emb[:, tgt == k].mean(1) for k in range(3)])
            loss = loss + variance_term(means, emb, tgt, 2, ignore_labels=[0])
        return loss
"""


def _inputs():
    torch.manual_seed(0)
    emb = torch.randn(2, 4, 6, requires_grad=True)
    target = torch.tensor([[0, 1, 2, 0, 1, 2], [2, 1, 0, 0, 1, 2]])
    return emb, target


def test_a_saved_output_of_two_parameters_is_reported_when_the_second_is_passed_grad():
    findings = analyze_source(LOSS)
    assert [(f.code, f.line, f.col + 1) for f in findings] == [("IPV006", 10, 9)]
    assert "backward raises when `ignore_labels is not None`" in findings[0].message
    emb, target = _inputs()
    loss = load(LOSS)["Loss"]()(emb, target)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_the_out_of_place_fix_gives_the_same_loss_and_a_gradient():
    fixed = LOSS.replace("variance *= (target != ignore_labels[0]).float()",
                         "variance = variance * (target != ignore_labels[0]).float()")
    assert [f.line for f in analyze_source(fixed)] == []
    emb, target = _inputs()
    with torch.no_grad():
        expected = load(LOSS)["Loss"]()(emb, target)
    loss = load(fixed)["Loss"]()(emb, target)
    assert torch.equal(loss.detach(), expected)
    loss.backward()
    assert emb.grad is not None and emb.grad.shape == emb.shape


EXPAND = """import torch


def single_token(inp, pos):
    shape = inp.shape
    if len(shape) == 1:
        inp = inp.expand([1, shape[0]])
    out = inp.clone() if pos is None else inp
    out += pos
    return out


def repeated(n, pos):
    x = torch.zeros(4)
    shape = x.shape
    y = x.expand(n, shape[0])
    y += pos
    return y
"""


def test_an_expand_that_adds_only_a_unit_dimension_is_no_overlap():
    findings = analyze_source(EXPAND)
    assert [(f.code, f.line) for f in findings] == [("IPV004", 17)]
    module = load(EXPAND)
    x = torch.zeros(4)
    out = module["single_token"](x, torch.arange(4.0))
    assert out.tolist() == [[0.0, 1.0, 2.0, 3.0]] and x.tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="single memory location"):
        module["repeated"](3, torch.ones(3, 4))
    assert module["repeated"](1, torch.ones(1, 4)).tolist() == [[1.0] * 4]
