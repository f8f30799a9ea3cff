"""Facts of the twenty-ninth session, each executed under torch.

- A list, tuple or dict that holds a tensor holds the object, not a copy: ``feats.append(x)`` and then an in-place
  layer on ``x`` (``x = self.relu(x)`` with ``nn.ReLU(inplace=True)``) changes ``feats``' element, so a later read
  of ``feats`` sees the layer's output (IPV007). In a loop, what a pass stores after the write is written by the
  next pass's layer. Not: a copy stored (``x.clone()``), a store on a branch that never reaches the write, a new
  list each pass.
"""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

HELD = '''import torch
from torch import nn


class Pyramid(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(2, 2, 3, padding=1) for _ in range(3)])
        self.relu = nn.ReLU(inplace=True)

    def stored_then_written(self, x):
        feats = []
        for conv in self.convs:
            x = conv(x)
            feats.append(x)
            x = self.relu(x)
        return feats

    def literal(self, x):
        x = self.convs[0](x)
        feats = [x]
        x = self.relu(x)
        return feats

    def next_pass(self, x):
        outs = []
        for conv in self.convs:
            x = self.relu(x)
            x = conv(x)
            outs.append(x)
        return outs

    def keyed(self, x):
        x = self.convs[0](x)
        outs = {"pre": x}
        x = self.relu(x)
        outs["post"] = x
        return outs["pre"]

    def copied(self, x):
        feats = []
        for conv in self.convs:
            x = conv(x)
            feats.append(x.clone())
            x = self.relu(x)
        return feats

    def other_branch(self, x, keep):
        feats = []
        x = self.convs[0](x)
        if keep:
            feats.append(x)
        else:
            x = self.relu(x)
        return feats

    def new_list_each_pass(self, x):
        for conv in self.convs:
            feats = []
            x = conv(x)
            x = self.relu(x)
            feats.append(x)
        return feats
'''


def test_a_container_holding_the_written_tensor_is_read_again():
    findings = analyze_source(HELD)
    assert [(f.code, f.line, f.col) for f in findings] == [
        ("IPV007", 16, 16), ("IPV007", 22, 12), ("IPV007", 28, 16), ("IPV007", 36, 12)]
    assert findings[0].message.startswith(
        "`nn.ReLU(inplace=True)` writes in place to `x`; `feats`, read again on line 17, holds the same tensor and "
        "sees the layer's output, not its input")
    assert "`outs`, read again on line 31" in findings[2].message
    mod = load(HELD)
    torch.manual_seed(0)
    model = mod["Pyramid"]().eval()
    x = torch.randn(1, 2, 5, 5)
    with torch.no_grad():
        # what the code means: each stored feature before its activation (the copy keeps it)
        meant = model.copied(x.clone())
        assert any((f < 0).any() for f in meant)
        got = model.stored_then_written(x.clone())
        assert all((f >= 0).all() for f in got)  # every stored element was rectified afterwards
        assert not all(torch.equal(a, b) for a, b in zip(got, meant))
        assert (model.literal(x.clone())[0] >= 0).all()
        assert (model.keyed(x.clone()) >= 0).all()
        # the next pass rectifies what the last pass stored: every stored output but the last
        outs = model.next_pass(x.clone())
        assert all((o >= 0).all() for o in outs[:-1]) and (outs[-1] < 0).any()
        pre = model.convs[0](x.clone())
        assert torch.equal(model.other_branch(x.clone(), True)[0], pre)


WHERE_INDEX = '''import torch


def proximal(x, lam):
    row_norm = torch.norm(x, p=2, dim=1)
    score = torch.clamp(row_norm - lam, min=0)
    index = torch.where(row_norm > 0)
    score[index] = score[index] / row_norm[index]
    return score.unsqueeze(1) * x


def sliced(x, lam):
    row_norm = torch.norm(x, p=2, dim=1)
    score = torch.clamp(row_norm - lam, min=0)
    score[1:] = score[1:] / row_norm[1:]
    return score.unsqueeze(1) * x
'''


def test_an_index_from_one_argument_where_copies():
    """``torch.where(c)`` is ``torch.nonzero(c, as_tuple=True)``: ``score[index]`` is advanced indexing, a copy,
    so the division saved the copy and the write of ``score`` leaves it alone (greatx's and graphwar's AMP
    proximal step, set CO: a false finding before). A slice is a view: the same write raises."""
    findings = analyze_source(WHERE_INDEX)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 15, 4)]
    mod = load(WHERE_INDEX)
    x = torch.randn(5, 3, requires_grad=True)
    mod["proximal"](x, 0.5).sum().backward()
    assert x.grad is not None
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        mod["sliced"](torch.randn(5, 3, requires_grad=True), 0.5).sum().backward()


CALIBRATED = '''import torch
import torch.nn.functional as F
from torch import nn


class Verbalizer(nn.Module):
    def __init__(self, ids):
        super().__init__()
        self.ids = nn.Parameter(torch.tensor(ids), requires_grad=False)
        self.proj = nn.Linear(4, 8)

    def process_logits(self, logits: torch.Tensor, **kwargs):
        words = self.project(logits, **kwargs)
        probs = self.normalize(words)
        probs = self.calibrate(probs=probs)
        return torch.log(probs + 1e-15)

    def project(self, logits: torch.Tensor, **kwargs) -> torch.Tensor:
        return logits[:, self.ids]

    def normalize(self, logits: torch.Tensor) -> torch.Tensor:
        return F.softmax(logits.reshape(logits.shape[0], -1), dim=-1).reshape(*logits.shape)

    def calibrate(self, probs: torch.Tensor, **kwargs) -> torch.Tensor:
        probs /= 2.0
        return probs

    def hidden(self, x):
        h = self.proj(x)
        probs = self.normalize(h)
        probs /= 2.0
        return probs

    def direct(self, logits: torch.Tensor):
        probs = self.normalize(logits[:, self.ids])
        probs /= 2.0
        return probs
'''


def test_a_guess_goes_through_an_item_of_a_parameter_and_a_name_bound_to_a_layer_output():
    """openprompt's calibrated verbalizer (set CO, labelled, non-default): the logits' label words
    (``logits[:, self.ids]``, a copy that requires grad when the logits do) go through two methods to a softmax
    whose output a third divides in place; the call passing ``**kwargs`` binds its positional arguments as any
    call does. And a name bound to a weighted layer's output (``h = self.proj(x)``) in any method requires grad,
    as the call itself does."""
    findings = analyze_source(CALIBRATED)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 25, 8), ("IPV006", 31, 8), ("IPV006", 36, 8)]
    assert "passed by the call at line 15" in findings[0].message
    assert "(it does when `logits` requires grad)" in findings[2].message
    mod = load(CALIBRATED)
    verbalizer = mod["Verbalizer"]([1, 3, 5])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        verbalizer.process_logits(torch.randn(2, 8, requires_grad=True)).sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        verbalizer.hidden(torch.randn(2, 4)).sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        verbalizer.direct(torch.randn(2, 8, requires_grad=True)).sum().backward()
    verbalizer.process_logits(torch.randn(2, 8)).sum()  # (no grad anywhere: nothing saved, it runs)


REVIEWED = '''import torch
from torch import nn


class Stages(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(2, 2, 3, padding=1) for _ in range(3)])
        self.relu = nn.ReLU(inplace=True)
        self.pool = nn.AvgPool2d(1)

    def tensor_buffer(self, x):
        out = x.new_zeros(2, *x.shape)
        out[0] = x
        x = self.relu(x)
        return out

    def both_arms(self, x, flag):
        feats = [x]
        if flag:
            x = self.pool(x)
        else:
            x = x * 2
        x = self.relu(x)
        return feats

    def in_with(self, x):
        feats = [x]
        with torch.enable_grad():
            x = x * 2
        x = self.relu(x)
        return feats

    def then_break(self, x):
        outs = []
        for conv in self.convs:
            x = self.relu(x)
            x = conv(x)
            outs.append(x)
            break
        return outs

    def replaced(self, x):
        feats = []
        feats.append(x)
        x = self.relu(x)
        feats[-1] = x
        return feats

    def sliced(self, x):
        feats = []
        feats.append(x[:, :1])
        x = self.relu(x)
        return feats

    def detached(self, x):
        feats = [x.detach()]
        x = self.relu(x)
        return feats

    def made_contiguous(self, x):
        feats = [x]
        x = x.contiguous()
        x = self.relu(x)
        return feats
'''


def test_what_a_container_holds_is_decided_on_every_path():
    """A fresh helper's review of the first form (/tmp/REV29): an item store into a tensor (a copy of the values),
    a name bound to other storage on every path (both arms of an ``if``, a ``with`` body) and a store followed by
    ``break`` were reported, an element replaced after the write too; a view stored (``x[:, :1]``,
    ``x.detach()``) and the name bound to its own storage (``x.contiguous()``) were missed."""
    findings = analyze_source(REVIEWED)
    assert [(f.code, f.line) for f in findings] == [("IPV007", 53), ("IPV007", 58), ("IPV007", 64)]
    assert findings[0].message.endswith("`feats`, read again on line 54, holds the same tensor and sees the layer's "
                                        "output, not its input")
    mod = load(REVIEWED)
    model = mod["Stages"]().eval()
    torch.manual_seed(0)
    x = torch.randn(1, 2, 4, 4)
    with torch.no_grad():
        assert (model.tensor_buffer(x.clone())[0] < 0).any()
        for flag in (True, False):
            assert (model.both_arms(x.clone(), flag)[0] < 0).any()
        assert (model.in_with(x.clone())[0] < 0).any()
        assert (model.then_break(x.clone())[0] < 0).any()
        for name in ("sliced", "detached", "made_contiguous"):  # each stored element was rectified afterwards
            assert (getattr(model, name)(x.clone())[0] >= 0).all()


def test_where_indexes_by_keyword_and_with_integer_values():
    src = '''import torch


def by_keyword(x):
    n = torch.norm(x, dim=1)
    s = torch.clamp(n - 0.1, min=0)
    idx = torch.where(condition=n > 0)
    s[idx] = s[idx] / n[idx]
    return s.sum()


def integer_values(x):
    n = torch.norm(x, dim=1)
    s = torch.clamp(n - 0.1, min=0)
    idx = torch.where(n > 0, 1, 0)
    s[idx] = s[idx] / n[idx]
    return s.sum()
'''
    assert analyze_source(src) == []
    mod = load(src)
    for name in ("by_keyword", "integer_values"):
        x = torch.randn(4, 3, requires_grad=True)
        mod[name](x).backward()
        assert x.grad is not None


INHERITED = '''import torch
from torch import nn
from torch.nn import TransformerDecoderLayer


class DecoderLayer(TransformerDecoderLayer):
    def __init__(self, d, heads):
        super().__init__(d, heads, 16, 0.0)

    def infer(self, tgt):
        tgt = self.norm2(tgt)
        tgt += self.linear2(self.activation(self.linear1(tgt)))
        return self.norm3(tgt)


class EncoderLayer(nn.TransformerEncoderLayer):
    def __init__(self, d, heads):
        super().__init__(d, heads, 16, 0.0)
        self.linear1 = nn.Identity()

    def step(self, x):
        x = self.norm1(x)
        x += self.linear2(torch.cat([self.linear1(x)] * 4, dim=-1))
        return x
'''


def test_a_subclass_of_a_torch_transformer_layer_holds_the_layers_torchs_init_built():
    """pero-ocr's decoder layer (set CP, labelled, non-default) subclasses ``nn.TransformerDecoderLayer`` and calls
    ``self.linear1`` that torch's ``__init__`` built: an ``nn.Linear``, which saves its input, so ``tgt += ...`` of
    its result raises at backward. A subclass that builds the attribute again holds its own."""
    from inplace_lint.torch_facts import ops

    for cls in (torch.nn.TransformerEncoderLayer, torch.nn.TransformerDecoderLayer):
        built = {name: type(layer).__name__ for name, layer in cls(4, 1).named_children()}
        assert ops.TORCH_LAYER_ATTRIBUTES[cls.__name__] == built
    built = {}
    for attention in (torch.nn.MultiheadAttention(4, 1), torch.nn.MultiheadAttention(4, 1, kdim=3, vdim=3)):
        built.update({name: "Parameter" for name, _ in attention.named_parameters(recurse=False)})
        built.update({name: type(layer).__mro__[1].__name__ if type(layer).__name__.startswith("NonDynamically")
                      else type(layer).__name__ for name, layer in attention.named_children()})
    assert ops.TORCH_LAYER_ATTRIBUTES["MultiheadAttention"] == built
    findings = analyze_source(INHERITED)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 12, 8)]
    assert "`self.linear1(...)` (`nn.Linear`, line 12) saved for backward" in findings[0].message
    mod = load(INHERITED)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        mod["DecoderLayer"](4, 1).infer(torch.randn(3, 2, 4)).sum().backward()
    x = torch.randn(3, 2, 4, requires_grad=True)
    mod["EncoderLayer"](4, 1).step(x).sum().backward()  # (its own `linear1`, an Identity: nothing saved `x`)
    assert x.grad is not None


ITERATED = '''import torch
from torch import nn


class Discriminator(nn.Module):
    def __init__(self, layers=3, act="LeakyReLU"):
        super().__init__()
        self.conv_layers = nn.ModuleList()
        for i in range(layers - 1):
            block = [nn.Conv1d(2, 2, 3, padding=1), getattr(nn, act)(inplace=True)]
            self.conv_layers += block
        self.conv_layers += [nn.Conv1d(2, 1, 3, padding=1)]
        self.features = nn.Sequential(nn.Conv1d(2, 2, 3, padding=1), nn.ReLU(inplace=True), nn.Conv1d(2, 2, 1))
        self.head = nn.Sequential(nn.ReLU(inplace=True), nn.Conv1d(2, 2, 1))
        self.taps = (0,)
        self.pooled = nn.Sequential(nn.Conv1d(2, 2, 1), nn.ReLU(), nn.MaxPool1d(2), nn.ReLU(inplace=True))
        self.dropped = nn.Sequential(nn.Conv1d(2, 2, 1), nn.Dropout(0.5, inplace=True))
        self.pool = nn.MaxPool1d(2)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x, return_fmaps=False):
        fmaps = []
        for f in self.conv_layers:
            x = f(x)
            if return_fmaps:
                fmaps.append(x)
        if return_fmaps:
            return [x], fmaps
        return x

    def every(self, x):
        feats = []
        for layer in self.features:
            x = layer(x)
            feats.append(x)
        return feats

    def tapped(self, x):
        feats = []
        for i, layer in enumerate(self.features):
            x = layer(x)
            if i in self.taps:
                feats.append(x)
        return feats

    def copied(self, x):
        feats = []
        for layer in self.features:
            x = layer(x)
            feats.append(x.clone())
        return feats

    def first_only(self, x):
        feats = []
        for layer in self.head:
            x = layer(x)
            feats.append(x)
        return feats

    def sliced(self, x):
        feats = []
        for layer in self.features[1:]:
            x = layer(x)
            feats.append(x)
        return feats

    def after_a_relu(self, x):
        feats = []
        for layer in self.pooled:
            x = layer(x)
            feats.append(x)
        return feats

    def dropout(self, x):
        feats = []
        for layer in self.dropped:
            x = layer(x)
            feats.append(x)
        return feats

    def pooled_then_relu(self, x):
        feats = []
        x = self.pool(torch.relu(x))
        feats.append(x)
        x = self.relu(x)
        return feats
'''


def test_a_layer_list_iterated_writes_what_an_earlier_pass_stored():
    """nnsvs' PWG discriminator (set CP, labelled, non-default): ``for f in self.conv_layers: x = f(x);
    fmaps.append(x)`` over convolutions each followed by ``getattr(nn, act)(inplace=True)``: the activation's pass
    rectifies the convolution output the previous pass stored (``fmaps[0] is fmaps[1]``). Not reported: a store an
    ``if`` on the loop's own index guards (which passes store is the data's), a copy stored, a list whose only in-place
    layer comes first (it writes the loop's input, which nothing stored)."""
    findings = analyze_source(ITERATED)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV007", 24, 16), ("IPV007", 34, 16),
                                                           ("IPV007", 77, 16)]
    assert findings[2].message.endswith("when `self.dropped` is in training mode")
    assert findings[0].message.startswith(
        "`getattr(nn, act)(inplace=True)` in `self.conv_layers` writes in place to `x`; `fmaps`, read again on line 28 "
        "(on some paths), holds the same tensor")
    mod = load(ITERATED)
    torch.manual_seed(0)
    model = mod["Discriminator"]()
    x = torch.randn(1, 2, 8)
    with torch.no_grad():
        _, fmaps = model(x.clone(), return_fmaps=True)
        conv = model.conv_layers[0](x)
        assert fmaps[0] is fmaps[1] and not torch.equal(fmaps[0], conv)  # the first convolution's output, rectified
        feats = model.every(x.clone())
        assert feats[0] is feats[1]
        assert (model.copied(x.clone())[0] < 0).any()
        tapped = model.tapped(x.clone())[0]  # (a conv index tapped: rectified too; left to the data, not reported)
        assert (tapped >= 0).all()
        first = model.first_only(x.clone())
        assert first[0] is not first[1]
        # (a review's probes, /work/notes/s29: a slice whose first element is the in-place layer, a ReLU after a
        # ReLU's pooled output, a dropout in eval mode change nothing stored)
        sliced = model.sliced(x.clone())
        assert sliced[0] is not sliced[1] and (sliced[0] >= 0).all()  # (stored after its own pass wrote it)
        pooled = model.after_a_relu(x.clone())
        assert torch.equal(pooled[2], pooled[3]) and pooled[2] is pooled[3]
        assert (model.pooled_then_relu(x.clone())[0] >= 0).all()
        model.eval()
        assert (model.dropout(x.clone())[0] < 0).any()


STORES = '''import torch
from torch import nn


class Stores(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(2, 2, 3, padding=1) for _ in range(2)])
        self.relu = nn.ReLU(inplace=True)

    def item(self, x):
        feats = [None, None]
        feats[0] = x
        x = self.relu(x)
        return feats

    def added(self, x):
        feats = []
        feats += [x]
        x = self.relu(x)
        return feats

    def extended(self, x):
        feats = []
        feats.extend([x])
        x = self.relu(x)
        return feats

    def inserted(self, x):
        feats = []
        feats.insert(0, x)
        x = self.relu(x)
        return feats

    def augmented(self, x):
        feats = [x]
        x = self.relu(x)
        feats[0] += 1
        return x

    def stored_only(self, x):
        outs = {"pre": x}
        x = self.relu(x)
        outs["post"] = x
        return x

    def in_a_helper(self, x):
        feats = []

        def keep():
            feats.append(x)
        x = self.relu(x)
        return feats

    def alias_both_arms(self, x, flag):
        identity = x
        if flag:
            x = x + 1
        else:
            x = x * 2
        x = self.relu(x)
        return identity

    def write_in_an_arm(self, x, flag):
        feats = [x]
        if flag:
            x = x + 1
        else:
            x = self.relu(x)
        return feats

    def returned_in_the_pass(self, x):
        outs = []
        for conv in self.convs:
            x = self.relu(x)
            x = conv(x)
            outs.append(x)
            return outs
        return outs
'''


def test_each_way_a_container_holds_the_tensor():
    """The stores a list or dict keeps a reference by (an item, ``+=``, ``extend``, ``insert``), a store into it or a
    change of an element that reads nothing more of the written tensor, a store a nested function would make, and a
    pass that returns what it stored (no next pass writes it)."""
    findings = analyze_source(STORES)
    assert [(f.code, f.line) for f in findings] == [("IPV007", 14), ("IPV007", 20), ("IPV007", 26), ("IPV007", 32),
                                                    ("IPV007", 37), ("IPV007", 69)]
    assert "`feats`, read again on line 70, holds" in findings[5].message  # (not "on some paths": this arm writes)
    assert "`feats`, read again on line 38" in findings[4].message  # (`feats[0] += 1` reads the element)
    mod = load(STORES)
    torch.manual_seed(0)
    model = mod["Stores"]()
    x = torch.randn(1, 2, 4, 4)
    for name in ("item", "added", "extended", "inserted"):
        assert (getattr(model, name)(x.clone())[0] >= 0).all()  # the stored input, rectified afterwards
    with torch.no_grad():
        assert (model.returned_in_the_pass(x.clone())[0] < 0).any()
        assert (model.alias_both_arms(x.clone(), True) < 0).any() and (model.alias_both_arms(x.clone(), False) < 0).any()
        assert (model.write_in_an_arm(x.clone(), False)[0] >= 0).all()
