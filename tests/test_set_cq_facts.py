"""Facts of the thirtieth session, each executed under torch.

- An item assignment into a parameter annotated as a list or a mapping (``x: dict[str, Tensor]``) stores a
  reference in the container, and so does one into a parameter that the caller passes a local list or dict: the
  caller's later read of the container sees the new entry, as the callee's ``-> None`` says it means, and no tensor
  was written (nugraph's planar and nexus modules update a feature dict by key; set CQ, two false IPV007 findings).
  A callee that writes through a mask (``x[mask] = 0``) into what the caller passes as a tensor still writes it.
"""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

KEYED = '''from typing import Dict, Optional

import torch
from torch import nn


class Planes(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.ModuleDict({"u": nn.Linear(4, 4), "v": nn.Linear(4, 4)})


class Plane(Planes):
    def forward(self, x: dict[str, torch.Tensor]) -> None:
        for p in self.net:
            x[p] = self.net[p](x[p])


class Typed(Planes):
    def forward(self, x: "Optional[Dict[str, torch.Tensor]]") -> None:
        for p in self.net:
            x[p] = self.net[p](x[p])


class Untyped(Planes):
    def forward(self, x) -> None:
        for p in self.net:
            x[p] = self.net[p](x[p])


class Masked(nn.Module):
    def forward(self, x, mask):
        x[mask] = 0.0


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.plane = Plane()
        self.typed = Typed()
        self.untyped = Untyped()
        self.masked = Masked()

    def forward(self, m):
        for _ in range(2):
            self.plane(m)
            self.typed(m)
        return m

    def local(self, x):
        m = {"u": self.enc(x), "v": self.enc(x)}
        self.untyped(m)
        return m

    def tensor(self, x, mask):
        h = self.enc(x)
        self.masked(h, mask)
        return h + x
'''


def test_an_item_stored_into_a_container_writes_no_tensor():
    findings = analyze_source(KEYED)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV007", 58, 8)]
    assert findings[0].message.startswith("item assignment in `Masked.forward()` (line 33) writes in place to `h`")
    mod = load(KEYED)
    torch.manual_seed(0)
    model = mod["Model"]()
    x = torch.randn(3, 4, requires_grad=True)
    m = {"u": model.enc(x), "v": model.enc(x)}
    before = dict(m)
    out = model(m)
    # the dict now holds new tensors, as meant; the tensors it held before were not written
    assert out is m and all(out[k] is not before[k] for k in m)
    assert torch.equal(before["u"], model.enc(x))
    sum(v.sum() for v in out.values()).backward()
    assert x.grad is not None
    m = model.local(x)
    assert set(m) == {"u", "v"}
    # the mask write changes the tensor the caller reads again
    mask = torch.tensor([True, False, True])
    with torch.no_grad():
        h = model.enc(x)
        assert not torch.equal(model.tensor(x, mask), h + x)


DICE = '''import torch
import torch.nn.functional as F
from torch import Tensor


def dice_loss(input: Tensor, target: Tensor, weight=None, eps=1e-6):
    num_classes = input.size(1)
    input = F.softmax(input, dim=1)
    target_one_hot = torch.stack([target == i for i in range(num_classes)], dim=1)
    target_one_hot = target_one_hot.to(torch.float)
    mask = target != -100
    input = input * mask.unsqueeze(1)
    target_one_hot = target_one_hot * mask.unsqueeze(1)
    intersection = input * target_one_hot
    dice = 1 - (2 * intersection + eps) / (input + target_one_hot + eps)
    if weight is not None:
        target_one_hot *= weight.view(1, -1, 1)
    return dice.mean()


def one_hot_loss(input: Tensor, target: Tensor, weight):
    t = F.one_hot(target, input.size(-1)).float()
    product = input.sigmoid() * t
    t *= weight
    return product.sum()


def converted_parameter(input: Tensor, target: Tensor, weight):
    t = target.float()
    product = input.sigmoid() * t
    t *= weight
    return product.sum()


def fresh_each_time(input: Tensor, target: Tensor, weight):
    t = F.one_hot(target, input.size(-1)).float()
    product = input.sigmoid() * t.clone()
    t *= weight
    return product.sum()
'''


def test_a_converted_tensor_saved_for_another_input_is_written():
    """``t = torch.stack(...).to(torch.float)``, ``F.one_hot(y, n).float()`` and ``t = t * mask`` hold a tensor
    surely (a conversion returns its receiver or a copy): the product with the softmax saves it for the softmax's
    gradient, and the weighted write after it makes the backward raise (pixseg's Dice loss, set CQ: a miss). A copy
    saved (``t.clone()``) leaves ``t`` free to write."""
    findings = analyze_source(DICE)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 17, 8), ("IPV006", 24, 4), ("IPV006", 31, 4)]
    # (`t` may be the caller's `target`: no fix that would hide the write from it is safe)
    assert "`t` may be `target` (line 29), a parameter" in findings[2].fix.reason
    assert findings[0].message.startswith(
        "`*=` writes in place to `target_one_hot`, which `input * target_one_hot` (line 14) saved for backward to "
        "compute the gradient of another input")
    mod = load(DICE)
    logits = torch.randn(2, 3, 4, requires_grad=True)
    target = torch.randint(0, 3, (2, 4))
    mod["dice_loss"](logits, target).backward()  # no weight: nothing written
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        mod["dice_loss"](logits, target, torch.tensor([1.0, 2.0, 3.0])).backward()
    x = torch.randn(4, 3, requires_grad=True)
    y = torch.tensor([0, 2, 1, 1])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        mod["one_hot_loss"](x, y, torch.tensor(2.0)).backward()
    one_hot = torch.nn.functional.one_hot(y, 3)
    for target in (one_hot, one_hot.float()):  # a copy, or the caller's own tensor: saved and written either way
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            mod["converted_parameter"](x, target, torch.tensor(2.0)).backward()
    mod["fresh_each_time"](x, y, torch.tensor(2.0)).backward()


UNPACKED = '''import torch
from torch import nn


class Two(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)

    def forward(self, x):
        return self.a(x), self.a(x) * 2


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.two = Two()
        self.act = nn.ReLU(inplace=True)
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        x_v, x_e = self.two(x)
        x_v, x_e = self.act(x_v), self.act(x_e)
        return x_v, x_e

    def apart(self, x):
        x_v, x_e = self.two(x)
        x_v = self.act(x_v)
        return x_v + x_e

    def same(self, x):
        h = self.lin(x)
        keep = h
        h = self.act(h)
        return h + keep
'''


def test_two_elements_of_an_unpacked_result_are_two_tensors():
    """``x_v, x_e = self.two(x)``: the elements of what a module returned are two tensors, even where the analysis
    gives both the call's origin (dhg-bench's EHNN layers, set CR: two false IPV007 findings said `x_e` "holds the
    same tensor"). A name bound to the same tensor (``keep = h``) still sees the layer's output."""
    findings = analyze_source(UNPACKED)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV007", 34, 12)]
    assert "`keep`, read again on line 35, holds the same tensor" in findings[0].message
    mod = load(UNPACKED)
    torch.manual_seed(0)
    net = mod["Net"]()
    x = torch.randn(3, 4)
    with torch.no_grad():
        a, b = net.two(x)
        assert torch.equal(net.apart(x), a.relu() + b)  # `x_e` kept its negative values
        h = net.lin(x)
        assert torch.equal(net.same(x), 2 * h.relu())  # `keep` is the rectified tensor


NOT_A_STORE = '''from typing import Dict

import torch
from torch import nn


class Bump(nn.Module):
    def forward(self, x: Dict[str, torch.Tensor]) -> None:
        for k in x:
            x[k] += 1.0


class Zero(nn.Module):
    def forward(self, x) -> None:
        x[0] = 0.0


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.bump = Bump()
        self.zero = Zero()

    def forward(self, x):
        m = {"u": torch.sigmoid(self.enc(x))}
        self.bump(m)
        return m["u"].sum()

    def unpacked(self, x, raw: bool = True):
        m = {}
        if raw:
            m, n = x, 1
        self.zero(m)
        return m + 1


def loss(input: torch.Tensor, weight):
    scale = torch.get_num_threads() * 1.0
    product = input.log_softmax(1) * scale
    scale *= weight
    return product.sum() / scale
'''


def test_what_a_container_store_is_not():
    """A review's probes (/work/notes/s30/review.md): ``x[k] += v`` adds in place to the stored tensor (the sigmoid's
    saved output: the backward raises), so it is no store; a name bound to a dict on one path and unpacked from a
    tensor on another may be the tensor; ``torch.get_num_threads() * 1.0`` is a number, not a tensor saved."""
    findings = analyze_source(NOT_A_STORE)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV007", 27, 8), ("IPV007", 34, 8)]
    mod = load(NOT_A_STORE)
    model = mod["Model"]()
    x = torch.randn(3, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        model(x).backward()
    ones = torch.ones(3, 4)
    assert not torch.equal(model.unpacked(ones), torch.full((3, 4), 2.0))  # row 0 of the caller's tensor zeroed
    mod["loss"](torch.randn(4, 3, requires_grad=True), 0.5).backward()


REGISTERED = '''import torch
import torch.nn.functional as F
from torch import Tensor, nn

LOSSES = {}


def register_loss():
    def wrapper(cls):
        LOSSES[cls.__name__] = cls
        return cls
    return wrapper


@register_loss()
class WeightedDice(nn.Module):
    def __init__(self, weight=None):
        super().__init__()
        self.weight = weight

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        input = F.softmax(input, dim=1)
        target_one_hot = F.one_hot(target, input.size(1)).float()
        intersection = input * target_one_hot
        if self.weight is not None:
            target_one_hot *= self.weight
        return 1 - intersection.mean()


def _test():
    loss = WeightedDice(torch.rand(3))
    print(loss(torch.rand(4, 3), torch.randint(0, 3, (4,))))
'''


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_registered_class_is_called_where_no_call_site_shows(newline):
    """A class defined under a call decorator (``@register_loss()``) is kept by a registry, and code that builds it
    from a name calls its instances where no call site shows: a self-test's call on ``torch.rand(...)`` is not all of
    its callers, so the guess that ``input`` may require grad stands (pixseg's ``DiceLoss``, set CQ, registered into
    ``CRITERION_ZOO``; its file has Windows line ends). Without the decorator the one visible call decides."""
    source = REGISTERED.replace("\n", newline)
    findings = analyze_source(source)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 26, 12)]
    plain = source.replace("@register_loss()" + newline, "")
    assert analyze_source(plain) == []
    mod = load(REGISTERED)
    loss = mod["LOSSES"]["WeightedDice"](torch.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss(torch.randn(4, 3, requires_grad=True), torch.tensor([0, 2, 1, 1])).backward()


STALE = '''import torch
from torch import nn


class Latent(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 6)
        self.dec = nn.Linear(6, 4)
        self.centroid = torch.zeros(3)


class Corrected(Latent):
    def forward(self, x):
        z = self.enc(x)
        c, u = z.split([3, 3], dim=1)
        z[:, 3:] = self.centroid
        return self.dec(z), u * 2


class Halves(Latent):
    def forward(self, x):
        z = self.enc(x)
        a, b = z.chunk(2, dim=1)
        z.mul_(2)
        return a.sum()


class ShapeOnly(Latent):
    def forward(self, x):
        z = self.enc(x)
        c, u = z.split([3, 3], dim=1)
        z[:, 3:] = self.centroid
        return self.dec(z), u.shape[1]


class TakenAfter(Latent):
    def forward(self, x):
        z = self.enc(x)
        z[:, 3:] = self.centroid
        c, u = z.split([3, 3], dim=1)
        return self.dec(z), u * 2


class NoGradBase(Latent):
    def forward(self, x):
        z = torch.zeros(2, 6)
        c, u = z.split([3, 3], dim=1)
        z[:, 3:] = 1.0
        return u * 2
'''


def test_a_multi_output_views_base_written_then_the_view_read():
    """``c, u = z.split(...)``, then ``z[:, 3:] = v`` (or ``z.mul_(2)``), then ``u`` used: the use raises "Output 1
    of SplitWithSizes is a view and its base or another view of its base has been modified inplace" (scmidas' batch
    correction, set CR, labelled: there the latent's grad is not followed through a dict's values, still missed).
    Not: the view read only for its shape, the split taken after the write, a base that needs no grad."""
    findings = analyze_source(STALE)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV003", 17, 8), ("IPV003", 25, 8)]
    assert findings[0].message == (
        "item assignment writes in place to `z`, the base of `u`, one output of `.split([3, 3], dim=1)` of "
        "`self.enc(x)`, which is read again on line 18: that read raises (a view of several outputs cannot be used "
        "once its base was changed in place)")
    assert findings[0].fix is None
    mod = load(STALE)
    x = torch.randn(2, 4)
    for name in ("Corrected", "Halves"):
        with pytest.raises(RuntimeError, match="is a view and its base or another view of its base has been modified"):
            mod[name]()(x)
    for name in ("ShapeOnly", "TakenAfter", "NoGradBase"):
        mod[name]()(x)


MATCHING = '''import torch
from torch import nn


class Matcher(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(4, 4)

    def forward(self, x, memo_embeds, memo_ids, keep):
        ids = torch.full((x.size(0),), -1, dtype=torch.long)
        scores = torch.mm(self.embed(x), memo_embeds.t()).softmax(dim=1)
        scores *= keep
        for i in range(x.size(0)):
            conf, memo_ind = torch.max(scores[i, :], dim=0)
            if conf > 0.1:
                ids[i] = memo_ids[memo_ind]
                scores[i + 1:, memo_ind] = 0
        return ids

    def scored(self, x, memo_embeds, keep):
        scores = torch.mm(self.embed(x), memo_embeds.t()).softmax(dim=1)
        scores *= keep
        return scores.sum()
'''


def test_a_saved_output_read_only_as_an_index_takes_no_gradient():
    """A tracker's association (mmtrack's quasi-dense tracker, set CS: three false IPV006 findings): the softmax's
    output is written in place, but every later read ends in a comparison (``conf > thr``) or an index
    (``memo_ids[memo_ind]``, ``scores[i + 1:, memo_ind] = 0``): no gradient reaches an index, so no backward reaches
    the softmax and the write cannot fail. A sum of the scores does take one."""
    findings = analyze_source(MATCHING)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 23, 8)]
    mod = load(MATCHING)
    model = mod["Matcher"]()
    x, memo = torch.randn(3, 4), torch.randn(5, 4)
    keep = torch.ones(3, 5)
    ids = model(x, memo, torch.arange(5), keep)
    assert ids.dtype == torch.long and ids.grad_fn is None
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        model.scored(x, memo, keep).backward()


STALE_MORE = '''import torch
from torch import nn


class Latent(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 6)


class ReadWithoutGrad(Latent):
    def forward(self, x):
        z = self.enc(x)
        c, u = z.split([3, 3], dim=1)
        z.mul_(2)
        with torch.no_grad():
            s = u * 2
        return z.sum(), s, u.item() if u.numel() == 1 else (u > 0), f"{u}"


class DetachedThenUsed(Latent):
    def forward(self, x):
        z = self.enc(x)
        c, u = z.split([3, 3], dim=1)
        z.mul_(2)
        kept = u.detach()
        return kept, u.sum() > 0


class WrittenWithoutGrad(Latent):
    def forward(self, x):
        z = self.enc(x)
        c, u = z.split([3, 3], dim=1)
        with torch.no_grad():
            z.mul_(2)
        return u * 2


class ThroughAView(Latent):
    def forward(self, x):
        z = self.enc(x)
        c, u = z.split([3, 3], dim=1)
        flat = z.view(-1)
        flat.mul_(2)
        return u * 2


class SplitOfACopy(Latent):
    def forward(self, x):
        z = self.enc(x)
        c, u = z.double().split([3, 3], dim=1)
        z.mul_(2)
        return u * 2
'''


def test_which_reads_of_a_stale_view_raise():
    """A review's probes (/work/notes/s30/review2.md): a read under ``no_grad``, ``u.item()``, ``u > 0`` and
    ``f"{u}"`` make no autograd node and do not raise; ``u.detach()`` first and ``u.sum() > 0`` after does; a write
    under ``no_grad`` moves the version counter all the same; a write through a named view of the base reaches it;
    a split of a copy (``z.double()``) is not a view of ``z``."""
    findings = analyze_source(STALE_MORE)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV003", 25, 8), ("IPV003", 35, 12), ("IPV003", 44, 8)]
    assert "which is read again on line 27" in findings[0].message
    mod = load(STALE_MORE)
    x = torch.randn(2, 4)
    for name in ("DetachedThenUsed", "WrittenWithoutGrad", "ThroughAView"):
        with pytest.raises(RuntimeError, match="is a view and its base or another view of its base has been modified"):
            mod[name]()(x)
    for name in ("ReadWithoutGrad", "SplitOfACopy"):
        mod[name]()(x)


@pytest.mark.parametrize("decorator, registered", [
    ("@register_loss(\n)", True),  # a call split over lines
    ("@register_loss()  # noqa: E302", True),
    ("@register_loss", True),  # the registering function itself is handed the class
    ("@LOSSES.register", True),
    ("@functools.total_ordering", False),
    ("@dataclasses.dataclass(eq=False)", False),  # keeps nothing: the visible call still decides
    ("@six.add_metaclass(type)", False),
])
def test_which_class_decorators_register(decorator, registered):
    """A review's probes (/work/notes/s30/review2.md): only a registry's decorator call (a callee named for
    registering) hands the class to callers no call site shows; read from the tree, so a multi-line call or a comment
    after it counts, and a docstring's example does not."""
    source = REGISTERED.replace("@register_loss()", decorator).replace(
        "import torch\n", "import dataclasses\nimport functools\n\nimport six\nimport torch\n", 1)
    source = source.replace('class WeightedDice(nn.Module):\n', 'class WeightedDice(nn.Module):\n    """'
                            '@register_loss()\n    class WeightedDice"""\n\n', 1) if not registered else source
    assert bool(analyze_source(source)) is registered


DECODER = '''import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self, n=10, d=4, max_length=5):
        super().__init__()
        self.embedding = nn.Embedding(n, d)
        self.fc = nn.Linear(d, n)
        self.max_length = max_length

    def step(self, tokens):
        return self.embedding(tokens)

    def forward(self, batch_size):
        input_var = torch.zeros(batch_size, self.max_length).long()
        logits = []
        for di in range(1, self.max_length):
            outputs = self.step(tokens=input_var[:, :di])
            logits.append(self.fc(outputs).log_softmax(dim=-1)[:, -1, :])
            input_var[:, di] = logits[-1].topk(1)[1].squeeze()
        return torch.stack(logits, dim=1)

    @torch.no_grad()
    def generate(self, batch_size):
        input_var = torch.zeros(batch_size, self.max_length).long()
        for di in range(1, self.max_length):
            outputs = self.step(tokens=input_var[:, :di])
            input_var[:, di] = self.fc(outputs)[:, -1, :].argmax(-1)
        return input_var
'''


def test_an_embedding_saves_its_indices():
    """``nn.Embedding`` saves its index tensor for its weight's gradient: a free-running decoder that writes the next
    token into the buffer a slice of which it just embedded makes the backward raise (openspeech's transformer
    decoder with ``teacher_forcing_ratio < 1``, set CS, labelled). Under ``no_grad`` nothing is saved."""
    findings = analyze_source(DECODER)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 21, 12)]
    assert "`self.step(...)` (`nn.Embedding`, line 19) saved for backward" in findings[0].message
    mod = load(DECODER)
    decoder = mod["Decoder"]()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        decoder(2).sum().backward()
    assert decoder.generate(2).shape == (2, 5)


RESIDUAL = '''import torch
from torch import nn
import torch.nn.functional as F


class ResidualBlock(nn.Module):
    def __init__(self, c, dropout_p=0, up=False):
        super().__init__()
        if not up:
            self.block = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(False),
                                       nn.Dropout2d(dropout_p))
        else:
            self.block = nn.Sequential(nn.ConvTranspose2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(False),
                                       nn.Dropout2d(dropout_p))

    def forward(self, x):
        identity = x
        out = self.block(x)
        out += identity
        return F.relu(out)


class Kernel(nn.Module):
    def __init__(self, d, metric="cosine"):
        super().__init__()
        if metric == "cosine":
            self.weight = nn.Parameter(torch.randn(1, d))
        elif metric == "attention":
            self.proj = nn.Linear(d, d)
        elif metric == "rbf":
            self.precision = nn.Parameter(torch.ones(1, 1))
        self.metric = metric

    def similarity(self, emb, mask):
        attention = torch.cdist(emb, emb)
        attention = torch.exp(-0.5 * attention * (self.precision ** 2))
        attention.masked_fill_(mask, 0.0)
        return attention
'''


def test_a_stack_ending_in_a_zero_rate_dropout_returns_its_activation():
    """A Sequential whose last layer is a dropout of rate 0 (a literal, or an ``__init__`` parameter defaulting to 0)
    returns the layer's before it: here the ReLU's output, which the ReLU saved; ``out += identity`` then raises at the
    backward (ctunet's residual block, set CT, labelled; the attribute is built in both arms of an ``if``, alike). An
    ``nn.Parameter`` built in a later arm of an ``elif`` chain in ``__init__`` is one too: ``self.precision ** 2`` is
    evidence that the kernel requires grad whatever its input (graph4nlp's RBF kernel, set CT, labelled)."""
    findings = analyze_source(RESIDUAL)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 19, 8), ("IPV006", 37, 8)]
    assert findings[1].message.endswith("whose output autograd saves for backward")
    mod = load(RESIDUAL)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        mod["ResidualBlock"](2)(torch.randn(1, 2, 4, 4)).sum().backward()
    mod["ResidualBlock"](2, dropout_p=0.5)(torch.randn(1, 2, 4, 4)).sum().backward()  # a new tensor: no hazard
    kernel = mod["Kernel"](3, "rbf")
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        kernel.similarity(torch.randn(4, 3), torch.eye(4, dtype=torch.bool)).sum().backward()
