"""Facts from sets CJ, CK and CM (twenty-eighth session), each executed under torch.

- A layer built from an ``__init__`` parameter whose default is a torch layer class (timm's and vissl's
  ``norm_layer=nn.LayerNorm``, then ``self.norm2 = norm_layer(dim)``) may be that layer: what the default builds is
  reachable (a caller who passes nothing gets it), so ``x[:, 0:1] = self.norm2(x[:, 0:1])`` overwrites the input
  LayerNorm saved and the backward raises (vissl's XCiT class-attention block, set CJ). A subclass whose ``__init__``
  passes ``super().__init__`` another class may hold another layer; a subclass with no ``__init__`` of its own keeps
  the default. The default is never taken to say the attribute is *only* a plain torch layer (a caller may pass a
  layer whose output a custom Function made).
- A split of a factory tensor written with a value that requires grad raises at the write (IPV003).
- einops' ``repeat`` that adds an axis of its own is a stride-0 view of its input (spflow's channel map, set CM):
  an item write zeroes every repeat and the caller's tensor; a new axis folded into a group is a possible view.
"""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from inplace_lint.fixing import fix_code
from tests.executed import load

torch = pytest.importorskip("torch")

SAVED_ERROR = "modified by an inplace operation"

DEFAULT_NORM = '''from functools import partial

import torch
from torch import nn


class ClassAttentionBlock(nn.Module):
    def __init__(self, dim, norm_layer=nn.LayerNorm):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm2 = norm_layer(dim)

    def forward(self, x):
        x = x + self.fc(x)
        x[:, 0:1] = self.norm2(x[:, 0:1])
        return x


class WithEps(nn.Module):
    def __init__(self, dim, norm_layer=partial(nn.LayerNorm, eps=1e-6)):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = norm_layer(dim)

    def forward(self, x):
        x = x + self.fc(x)
        x[:, :1] = self.norm(x[:, :1])
        return x


class Rebound(nn.Module):
    def __init__(self, dim, norm_layer=nn.LayerNorm):
        super().__init__()
        norm_layer = nn.Identity
        self.fc = nn.Linear(dim, dim)
        self.norm = norm_layer(dim)

    def forward(self, x):
        x = x + self.fc(x)
        x[:, :1] = self.norm(x[:, :1])
        return x


class Identity(ClassAttentionBlock):
    def __init__(self, dim):
        super().__init__(dim, norm_layer=nn.Identity)


class Inherits(ClassAttentionBlock):
    pass
'''


def test_a_layer_built_from_a_parameter_default_torch_class_is_that_layer():
    findings = analyze_source(DEFAULT_NORM)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 15, 8), ("IPV006", 27, 8)]
    assert findings[0].message.startswith(
        "item assignment writes in place to `x`, which `self.norm2(...)` (`nn.LayerNorm`, line 15) saved for backward")
    mod = load(DEFAULT_NORM)
    for name in ("ClassAttentionBlock", "WithEps", "Inherits"):
        block = mod[name](4)
        with pytest.raises(RuntimeError, match=SAVED_ERROR):
            block(torch.randn(2, 3, 4)).sum().backward()
    for name in ("Rebound", "Identity"):  # (no LayerNorm: the same write is legal)
        block = mod[name](4)
        x = torch.randn(2, 3, 4, requires_grad=True)
        block(x).sum().backward()
        assert x.grad is not None


GRAD_VALUE = '''import torch
from torch import nn


class Tables(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(3))

    def table(self):
        table = torch.zeros(4, 3)
        a, b = table.split(2)
        a[0] = self.w * 2
        return table

    def rows(self):
        out = torch.zeros(2, 3)
        for row in out:
            row += self.w
        return out

    def unbound(self):
        first, second = torch.zeros(2, 3).unbind(0)
        first.add_(self.w)
        return first

    def chunked(self):
        a = torch.zeros(2, 3).chunk(2)[0]
        a.mul_(self.w)
        return a

    def grad_off(self):
        a, b = torch.zeros(4, 3).split(2)
        with torch.no_grad():
            a[0] = self.w * 2
        return a

    def detached(self):
        a, b = torch.zeros(4, 3).split(2)
        a[0] = self.w.detach() * 2
        return a

    def selected(self):
        a = torch.zeros(2, 3)[0]
        a += self.w
        return a
'''

NO_GRAD_VIEW = "A view was created in no_grad mode and is being modified inplace"


def test_a_split_output_of_a_factory_written_with_a_value_that_requires_grad_is_ipv003():
    findings = analyze_source(GRAD_VALUE)
    assert [(f.code, f.line, f.col) for f in findings] == [
        ("IPV003", 13, 8), ("IPV003", 19, 12), ("IPV003", 24, 8), ("IPV003", 29, 8)]
    assert findings[0].message == (
        "item assignment writes in place to `a`, one output of `.split(2)` of fresh tensor `torch.zeros(4, 3)` "
        "(written with a value that requires grad)")
    assert findings[1].message == (
        "`+=` writes in place to `row`, one output of the loop over fresh tensor `torch.zeros(2, 3)` "
        "(written with a value that requires grad)")
    # the table is returned: rewriting the write onto a copy would leave it zero
    assert findings[0].fix.applicability.value == "unsafe"
    tables = load(GRAD_VALUE)["Tables"]()
    for name in ("table", "rows", "unbound", "chunked"):
        with pytest.raises(RuntimeError, match=NO_GRAD_VIEW):
            getattr(tables, name)()
    # silent: grad off, a value that needs no grad, one select view
    assert torch.equal(tables.grad_off()[0], tables.w.detach() * 2)
    assert torch.equal(tables.detached()[0], tables.w.detach() * 2)
    assert tables.selected().requires_grad


def test_the_safe_fix_of_a_grad_valued_chunk_write_runs_and_keeps_the_gradient():
    new = fix_code(GRAD_VALUE, style="inline").new_source
    assert "        a = a.clone().mul_(_a_operand)\n" in new
    assert "        first = first.clone().add_(_first_operand)\n" in new
    tables = load(new)["Tables"]()
    out = tables.chunked()
    assert torch.equal(out, torch.zeros(1, 3))
    out.sum().backward()
    assert torch.equal(tables.w.grad, torch.zeros(3))  # (d(0 * w)/dw = 0)
    first = tables.unbound()
    assert torch.equal(first, tables.w.detach())
    first.sum().backward()
    assert torch.equal(tables.w.grad, torch.ones(3))


REVIEW = '''from functools import partial

import torch
from torch import nn


class NoAffine(nn.Module):
    def __init__(self, dim, norm_layer=partial(nn.LayerNorm, elementwise_affine=False)):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = norm_layer(dim)

    def forward(self, x):
        x = x * 2
        x[:, 0:1] = self.norm(x[:, 0:1])
        return x + self.fc(x)


class Act(nn.Module):
    def __init__(self, dim, act_layer=nn.ReLU):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.act = act_layer()

    def forward(self, x):
        h = self.act(self.fc(x))
        h += 1
        return h


class Gelu(Act):
    def __init__(self, dim):
        super().__init__(dim, act_layer=nn.GELU)


class Values(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4))

    def integer(self):
        a, b = torch.zeros(2, 4, dtype=torch.long).unbind(0)
        a.copy_(self.w)
        return a

    def factories(self):
        a, b = torch.zeros(2, 4).unbind(0)
        a.copy_(self.w.new_zeros(4) + torch.zeros_like(self.w))
        return a

    def keyword(self):
        a, b = torch.zeros(2, 4).unbind(0)
        a.addcmul_(torch.ones(4), tensor2=self.w)
        return a

    def integers(self):
        p, q = torch.arange(8).split(4)
        r, s = torch.randint(0, 5, (2, 4)).unbind(0)
        u, v = torch.zeros(2, 4).to(torch.long).unbind(0)
        p.copy_(self.w)
        r.copy_(self.w)
        u.copy_(self.w)
        return p, r, u
'''


def test_review_probes_of_the_two_facts():
    findings = analyze_source(REVIEW)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 27, 8), ("IPV003", 53, 8)]
    assert findings[0].message.startswith("`+=` writes in place to `h`, `self.act(self.fc(x))`, whose output autograd")
    mod = load(REVIEW)
    x = torch.randn(2, 3, 4)
    mod["NoAffine"](4)(x).sum().backward()  # (LayerNorm without weights saves nothing this write changes)
    with pytest.raises(RuntimeError, match=SAVED_ERROR):  # ReLU saved its output
        mod["Act"](4)(x).sum().backward()
    mod["Gelu"](4)(x).sum().backward()  # (a subclass passing GELU: nothing saved is written)
    values = mod["Values"]()
    assert values.integer().dtype == torch.long  # an integer tensor takes no grad: the copy converts
    assert all(t.dtype == torch.long for t in values.integers())
    assert not values.factories().requires_grad
    with pytest.raises(RuntimeError, match=NO_GRAD_VIEW):
        values.keyword()


OR_IDIOM = '''from functools import partial

import torch
from torch import nn


class OrIdiom(nn.Module):
    def __init__(self, dim, norm_layer=None, act_layer=None):
        super().__init__()
        norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-6)
        act_layer = act_layer or nn.Sigmoid
        self.fc = nn.Linear(dim, dim)
        self.norm = norm_layer(dim)
        self.act = act_layer()

    def forward(self, x):
        x = x + self.fc(x)
        x[:, 0:1] = self.norm(x[:, 0:1])
        h = self.act(x)
        h.mul_(2)
        return h


class IfNone(nn.Module):
    def __init__(self, dim, norm_layer=None):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.LayerNorm
        self.fc = nn.Linear(dim, dim)
        self.norm = norm_layer(dim)

    def forward(self, x):
        x = x + self.fc(x)
        x[:, 0:1] = self.norm(x[:, 0:1])
        return x


class Mixed(nn.Module):
    def __init__(self, dim, norm_layer=None, plain=False):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.LayerNorm
        if plain:
            norm_layer = nn.Identity
        self.fc = nn.Linear(dim, dim)
        self.norm = norm_layer(dim)

    def forward(self, x):
        x = x + self.fc(x)
        x[:, 0:1] = self.norm(x[:, 0:1])
        return x


class Factory(nn.Module):
    def __init__(self, dim, norm_layer=None):
        super().__init__()
        norm_layer = get_norm(norm_layer)
        self.fc = nn.Linear(dim, dim)
        self.norm = norm_layer(dim)

    def forward(self, x):
        x = x + self.fc(x)
        x[:, 0:1] = self.norm(x[:, 0:1])
        return x


def get_norm(layer):
    return layer or nn.Identity
'''


def test_timms_or_idiom_and_an_if_none_default_are_the_class_they_name():
    findings = analyze_source(OR_IDIOM)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 18, 8), ("IPV006", 20, 8), ("IPV006", 34, 8)]
    mod = load(OR_IDIOM)
    for name in ("OrIdiom", "IfNone", "Mixed"):
        with pytest.raises(RuntimeError, match=SAVED_ERROR):
            mod[name](4)(torch.randn(2, 3, 4)).sum().backward()
    # `Mixed` binds the parameter to two classes (a flag picks one): not followed, a miss accepted; `Factory` asks a
    # function, whose default is `nn.Identity`: silent, and the same write runs
    mod["Factory"](4)(torch.randn(2, 3, 4)).sum().backward()


EINOPS_REPEAT = '''import torch
from einops import repeat


def map_channels(output_ids, channels):
    mapped = repeat(output_ids, "b f -> b f i", i=len(channels))
    for i, c in enumerate(channels):
        if c == 1:
            mapped[..., i] = 0
    return mapped


def folded(output_ids, n):
    mapped = repeat(output_ids, "b f -> b (f i)", i=n)
    mapped[:, 0] = 0
    return mapped


def unit(output_ids):
    mapped = repeat(output_ids, "b f -> b f 1")
    mapped[..., 0] = 0
    return mapped


def scaled(x: torch.Tensor, n: int):
    y = repeat(x, "b f -> b f i", i=n)
    y.mul_(2)
    return y


def merged(x):
    y = repeat(x, "b f -> (f b) i", i=2)
    y[:, 0] = 0
    return y
'''


def test_einops_repeat_adding_an_axis_of_its_own_is_an_expanded_view():
    pytest.importorskip("einops")
    findings = analyze_source(EINOPS_REPEAT)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV004", 9, 12), ("IPV004", 27, 4)]
    assert findings[0].message.startswith(
        "item assignment writes in place to `mapped`, an expanded view of `output_ids`; raises when `repeat(...)`")
    mod = load(EINOPS_REPEAT)
    ids = torch.tensor([[2], [1]])
    out = mod["map_channels"](ids, [1, 3])
    # spflow's channel map (set CM): the write zeroes every repeat and the caller's ids
    assert ids.tolist() == [[0], [0]] and out.tolist() == [[[0, 0]], [[0, 0]]]
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        mod["scaled"](torch.ones(2, 3), 2)
    # folded into a group: a copy where `f` > 1 (a view where `f` is 1: read as a possible view, no IPV004)
    ids = torch.arange(6).reshape(2, 3)
    mod["folded"](ids, 2)
    assert ids.tolist() == [[0, 1, 2], [3, 4, 5]]
    ids = torch.tensor([[2], [1]])
    mod["unit"](ids)  # (a new axis of size 1 shares no element)
    assert ids.tolist() == [[0], [0]]
    ids = torch.arange(6).reshape(2, 3)
    mod["merged"](ids)  # (axes merged into a group after a permute: a copy, no IPV004)
    assert ids.tolist() == [[0, 1, 2], [3, 4, 5]]


DEFAULT_ONLY_MAY = '''import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, d, v, head_layer=nn.Linear):
        super().__init__()
        self.lm_head = head_layer(d, v)

    def forward(self, h, t):
        logits = self.lm_head(h)
        logits.div_(t)
        return logits


class Direct(nn.Module):
    def __init__(self, d, v):
        super().__init__()
        self.lm_head = nn.Linear(d, v)

    def forward(self, h, t):
        logits = self.lm_head(h)
        logits.div_(t)
        return logits


class Base(nn.Module):
    def __init__(self, d, norm_layer=nn.LayerNorm):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.norm = norm_layer(d)


class Plain(Base):
    def __init__(self, d):
        super().__init__(d, norm_layer=nn.Identity)

    def forward(self, x):
        x = x + self.fc(x)
        x[:, 0:1] = self.norm(x[:, 0:1])
        return x


class Kept(Base):
    def forward(self, x):
        x = x + self.fc(x)
        x[:, 0:1] = self.norm(x[:, 0:1])
        return x
'''


def test_a_default_class_never_withdraws_a_finding_and_a_subclass_init_drops_it():
    findings = analyze_source(DEFAULT_ONLY_MAY)
    # `Head`: a caller may pass a head whose output a custom Function made, so the model-call guess stays (the same
    # attribute built as `nn.Linear` itself is torch's own code: `Direct` is silent); `Plain` passes `nn.Identity` to
    # `super().__init__` and writes in its own `forward`: silent; `Kept` has no `__init__`: the LayerNorm
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV001", 12, 8), ("IPV006", 47, 8)]
    mod = load(DEFAULT_ONLY_MAY)
    x = torch.randn(2, 3, 4)
    mod["Plain"](4)(x).sum().backward()
    with pytest.raises(RuntimeError, match=SAVED_ERROR):
        mod["Kept"](4)(x).sum().backward()


NESTED = '''import torch
from torch import nn


def make(dim):
    class Inner(nn.Module):
        def __init__(self, dim, norm_layer=nn.LayerNorm):
            super().__init__()
            self.fc = nn.Linear(dim, dim)
            self.norm2 = norm_layer(dim)

        def forward(self, x):
            x = x + self.fc(x)
            x[:, 0:1] = self.norm2(x[:, 0:1])
            return x
    return Inner(dim)
'''


def test_a_class_inside_a_function_reads_its_default_layer_class_too():
    findings = analyze_source(NESTED)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 14, 12)]
    with pytest.raises(RuntimeError, match=SAVED_ERROR):
        load(NESTED)["make"](4)(torch.randn(2, 3, 4)).sum().backward()
