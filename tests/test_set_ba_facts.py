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


PIPELINE = """import torch


def i16_pcm(wav):
    if wav.dtype.is_floating_point:
        return (wav.clamp_(-1, 1) * (2**15 - 1)).short()
    return wav


def encode(wav, sink):
    channels, length = wav.shape
    wav = i16_pcm(wav)
    sink.append(wav.data.cpu().numpy().tobytes())


def prevent_clip(wav, mode="rescale"):
    if mode == "none":
        return wav
    if mode == "rescale":
        wav = wav / max(1.01 * wav.abs().max(), 1)
    elif mode == "tanh":
        wav = torch.tanh(wav)
    return wav


def save_audio(wav, sink, clip="rescale"):
    wav = prevent_clip(wav, mode=clip)
    encode(wav, sink)


def train_step(wav, sink):
    out = torch.tanh(wav)
    encode(out, sink)
    return out.sum()
"""


def test_a_saved_output_handed_to_functions_that_read_it_without_gradient_saves_nothing_reachable():
    """demucs's ``save_audio``: ``torch.tanh``'s output goes to ``encode``, whose ``i16_pcm`` clamps it in place and
    casts it to int16; nothing differentiable reads it, so no backward reaches ``tanh`` (the summaries'
    ``gradless``). ``train_step`` also returns a sum of it: that backward raises, and is still found."""
    findings = analyze_source(PIPELINE)
    assert [(f.code, f.line) for f in findings] == [("IPV006", 6), ("IPV006", 33)]
    assert "passed by the call at line 12" in findings[0].message and "train_step" not in findings[0].message
    mod = load(PIPELINE)
    sink: list = []
    wav = torch.randn(2, 16, requires_grad=True)
    mod["save_audio"](wav, sink, clip="tanh")  # runs; nothing it returns or keeps takes a gradient
    assert len(sink) == 1 and wav.grad is None
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        mod["train_step"](torch.randn(2, 16, requires_grad=True), []).backward()


REACHED_OTHERWISE = """import torch


def encode(t):
    t.clamp_(-1, 1)
    return int((t * 100).long().sum())


def bump(idx):
    idx.add_(1)
    return int(idx.sum())


def walrus():
    x = torch.randn(5, requires_grad=True)
    loss = (h := x.exp()).sum()
    encode(h)
    loss.backward()


def sorted_indices():
    x = torch.randn(5, requires_grad=True)
    v, i = x.sort()
    bump(i)
    (v * 2).sum().backward()
"""


def test_a_saved_output_that_a_backward_reaches_otherwise_is_still_found():
    """A review's cases (/work/notes/rev15.md): the value also flows on where it is bound (``(h := x.exp()).sum()``),
    or the op's other output runs its backward (``v, i = x.sort()``: the backward through ``v`` reads ``i``). Only
    ``name = <expression>`` bindings are judged by the callees' summaries."""
    findings = analyze_source(REACHED_OTHERWISE)
    assert [(f.code, f.line) for f in findings] == [("IPV006", 5), ("IPV006", 10)]
    assert "passed by the call at line 17" in findings[0].message
    assert "passed by the call at line 24" in findings[1].message
    mod = load(REACHED_OTHERWISE)
    for name in ("walrus", "sorted_indices"):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            mod[name]()


def test_origins_alike_but_for_the_implementation_they_name_sort_the_same_in_every_process():
    """``self.conditioner(...)`` from each project class it may be: the origins differ only in their condition
    (``raises when `conditioner` is `MADE` ...``). Their order, and so the one a message names, followed the hash
    seed (strnn's findings named another class from run to run); the order is total now."""
    from inplace_lint.analysis.env import _MAX_ORIGINS, cap, origin_key
    from inplace_lint.findings import Origin, RootKind

    made = [Origin(RootKind.MODEL_OUTPUT_OBJECT, "self.conditioner(...)", 30,
                   condition=f"raises when `conditioner` is `C{i}`, whose forward returns `self.net(...)`")
            for i in range(_MAX_ORIGINS + 3)]
    in_order = sorted(made, key=origin_key)
    assert in_order == sorted(reversed(made), key=origin_key) == sorted(made, key=lambda o: o.condition)
    kept = cap(made)
    assert kept == cap(list(reversed(made))) and len(kept) == _MAX_ORIGINS
