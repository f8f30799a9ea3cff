"""A saved output handed to a helper that casts it to integers (set BD: a demucs fork's ``save_audio``, whose
16-bit WAV branch is ``samples = i16_pcm(wav).float() / (2**15 - 1)``). The helper returns its argument only
where a test found it not floating point (``if wav.dtype.is_floating_point: return (wav.clamp_(-1, 1) *
32767).short()``, then ``return wav``): an integer tensor there, which no gradient passes through, so the call's
result does not hold the saved float output, and what the caller does with that result (a float copy, handed to
an encoder, returned) reaches no backward through it. A caller that also returns a sum of the output itself is
still reported, and its backward raises. Executed under torch 2.13."""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

SOURCE = """import torch


def i16_pcm(wav):
    if wav.dtype.is_floating_point:
        return (wav.clamp_(-1, 1) * (2**15 - 1)).short()
    return wav


def to_int8(wav):
    if not torch.is_floating_point(wav):
        return wav
    return (wav.clamp_(-1, 1) * 127).char()


def save(x, encode):
    wav = torch.tanh(x)
    samples = i16_pcm(wav).float() / (2**15 - 1)
    encode(samples)
    return samples


def save_bytes(x, encode):
    wav = torch.tanh(x)
    encode(to_int8(wav).numpy())


def save_and_return(x, encode):
    wav = torch.tanh(x)
    samples = i16_pcm(wav).float() / (2**15 - 1)
    encode(samples)
    return wav.sum()
"""


def test_a_helper_returning_its_argument_only_when_not_floating_point_hands_back_no_saved_output():
    findings = analyze_source(SOURCE)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 6, 16)]
    assert "passed by the call at line 30" in findings[0].message
    mod = load(SOURCE)
    kept = []
    x = torch.randn(8, requires_grad=True)
    assert not mod["save"](x * 3, kept.append).requires_grad  # nothing takes a gradient through the write
    mod["save_bytes"](x * 3, kept.append)
    assert kept[0].dtype == torch.float32 and kept[1].dtype.name == "int8"
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        mod["save_and_return"](x * 3, kept.append).backward()
    ids = torch.arange(4)  # the integer path returns its argument as it is
    assert mod["i16_pcm"](ids) is ids and mod["to_int8"](ids) is ids


NUMBER = """import torch


def norm(a):
    return torch.linalg.vector_norm(a).item()


class Step(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        g = self.fc(x)
        tau = 2.0 / max(norm(g), 1e-6)
        y = x - tau * g
        tau *= 0.5
        return y * tau
"""


def test_what_needs_no_grad_may_be_a_number_and_its_augmented_assignment_is_no_write():
    """A function that returns `.item()` needs no grad, and what a call of it returns may be a Python number (set
    AQ's invexapi step size, `2.0 / max(_norm(g1 - g2) / ..., 1e-6)`): `tau *= 0.5` rebinds a float."""
    assert analyze_source(NUMBER) == []
    step = load(NUMBER)["Step"]()
    step(torch.randn(2, 4)).sum().backward()  # legal: `tau` is a float
    assert step.fc.weight.grad is not None


def test_a_module_list_of_torch_stacks_ending_in_relu_gives_saved_outputs():
    """kaumena's decoder (set BD, default training): the fixture's two writes are found and raise at backward;
    the list of stacks that end in a convolution is legal."""
    import pathlib
    source = (pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "detect" / "IPV006"
              / "module_list_torch_stacks.py").read_text()
    assert [(f.code, f.line, f.col) for f in analyze_source(source)] == [("IPV006", 20, 12), ("IPV006", 32, 12)]
    mod = load(source)
    x, skip = torch.randn(2, 3, 4, 4), torch.randn(2, 3, 4, 4)
    for name in ("Indexed", "Looped"):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            mod[name](3, 2)(x, skip).sum().backward()
    model = mod["EndsInConv"](3, 2)
    model(x, skip).sum().backward()
    assert model.ups[0][1].weight.grad is not None
