"""Facts from the twenty-fifth session (set BZ's last dubious findings), each executed under torch.

- An ``out=`` call on every path to a helper's write, consuming the written parameter, raises in the forward when
  that parameter requires grad ("functions with out=... arguments don't support automatic differentiation"), so the
  helper's write runs only on a tensor that does not: a caller passing a custom Function's output gets no IPV002
  there (torch-sla's halo exchange, set BZ). The same holds in one function, and for a loop over the same iterable
  as an earlier loop whose body ran the ``out=`` call (nothing rebound between): its body runs only where the first
  ran. A loop over another iterable, or one rebound between, keeps the finding.
"""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

VIEW_IN_FUNCTION = "was created inside a custom Function"
OUT_ERROR = "out=... arguments don't support automatic differentiation"

HALO = '''import torch


class Ident(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g


def exchange(x, idx, bufs, nbrs):
    for n in nbrs:
        torch.index_select(x, 0, idx, out=bufs[n])
    for n in nbrs:
        x.index_copy_(0, idx, bufs[n] * 2)
    return x


def exchange_other(x, idx, bufs, nbrs, others):
    for n in nbrs:
        torch.index_select(x, 0, idx, out=bufs[n])
    for n in others:
        x.index_copy_(0, idx, bufs[n] * 2)
    return x


def exchange_rebound(x, idx, bufs, nbrs):
    for n in nbrs:
        torch.index_select(x, 0, idx, out=bufs[n])
    nbrs = list(bufs)
    for n in nbrs:
        x.index_copy_(0, idx, bufs[n] * 2)
    return x


def run(a, idx, bufs, nbrs, others):
    y = Ident.apply(a)
    z = Ident.apply(a)
    w = Ident.apply(a)
    return exchange(y, idx, bufs, nbrs), exchange_other(z, idx, bufs, nbrs, others), exchange_rebound(w, idx, bufs, nbrs)


def local(a, idx, buf):
    y = Ident.apply(a)
    torch.index_select(y, 0, idx, out=buf)
    y.index_copy_(0, idx, buf * 2)
    return y


def local_twin(a, idx, buf):
    y = Ident.apply(a)
    if buf is not None:
        torch.index_select(y, 0, idx, out=buf)
    y.index_copy_(0, idx, buf * 2)
    return y
'''


def test_a_write_past_an_out_call_that_consumed_the_written_tensor_is_no_finding():
    found = analyze_source(HALO)
    assert [(f.code, f.line, f.col) for f in found] == [("IPV002", 26, 8), ("IPV002", 35, 8), ("IPV002", 57, 4)]
    assert found[0].message.startswith("`index_copy_` writes in place to `x`, the output of custom autograd Function")
    assert "passed by the call at line 43" in found[0].message


def test_the_out_call_raises_first_with_grad_and_the_other_loop_reaches_the_view_error():
    names = load(HALO)
    idx = torch.tensor([0, 1])
    a = torch.rand(4, 3, requires_grad=True)
    bufs = {0: torch.zeros(2, 3)}
    with pytest.raises(RuntimeError, match=OUT_ERROR):
        names["exchange"](names["Ident"].apply(a), idx, bufs, [0])
    with pytest.raises(RuntimeError, match=OUT_ERROR):
        names["local"](a, idx, torch.zeros(2, 3))
    with pytest.raises(RuntimeError, match=VIEW_IN_FUNCTION):
        names["exchange_other"](names["Ident"].apply(a), idx, bufs, [], [0])
    with pytest.raises(RuntimeError, match=VIEW_IN_FUNCTION):
        names["exchange_rebound"](names["Ident"].apply(a), idx, bufs, [])
    b = torch.rand(4, 3)
    before = b.clone()
    out = names["exchange"](names["Ident"].apply(b), idx, bufs, [0])
    assert torch.equal(out[:2], before[:2] * 2)


# An adversarial review of the fact (/work/notes/s25/review.md, 17 probes) found `out=` calls that do not prove the
# written tensor requires no grad: on a detached copy, of an op that takes `out=` with grad on, with `out=None`, on a
# name that may hold another tensor, in a loop's `else:`, in a loop inside a loop that may run no pass, before the
# list is changed, over an iterable a call gives again, inside a context manager that swallows the error, past
# `torch.set_grad_enabled(False)`. Each keeps its finding and raises at backward.
MISLEADING_OUT = '''import contextlib
import torch


def detached(x, idx, buf):
    y = x.sigmoid()
    torch.index_select(y.detach(), 0, idx, out=buf)
    y.mul_(2)
    return y


def gradless_op(x, idx, buf):
    y = x.sigmoid()
    torch.histc(y, 3, out=buf)
    y.mul_(2)
    return y


def out_none(x, idx, buf):
    y = x.sigmoid()
    torch.index_select(y, 0, idx, out=None)
    y.mul_(2)
    return y


def either(x, idx, buf, c=True):
    z = x.sigmoid()
    w = x.detach()
    y = w if c else z
    torch.index_select(y, 0, idx, out=buf)
    z.mul_(2)
    return z


def loop_else(x, idx, bufs, nbrs=()):
    y = x.sigmoid()
    for n in nbrs:
        torch.index_select(y, 0, idx, out=bufs[n])
    else:
        y.mul_(2)
    return y


def outer_loop(x, idx, bufs, nbrs=(0,), outer=()):
    y = x.sigmoid()
    for _ in outer:
        for n in nbrs:
            torch.index_select(y, 0, idx, out=bufs[n])
    for n in nbrs:
        y.mul_(2)
    return y


def changed_between(x, idx, bufs, nbrs=None):
    nbrs = [] if nbrs is None else nbrs
    y = x.sigmoid()
    for n in nbrs:
        torch.index_select(y, 0, idx, out=bufs[n])
    nbrs.append(0)
    for n in nbrs:
        y.mul_(2)
    return y


def called_iterable(x, idx, bufs, q=None):
    q = [[0], []] if q is None else q
    y = x.sigmoid()
    for n in q.pop():
        torch.index_select(y, 0, idx, out=bufs[n])
    for n in q.pop():
        y.mul_(2)
    return y


def swallowed(x, idx, buf):
    y = x.sigmoid()
    with contextlib.suppress(RuntimeError):
        torch.index_select(y, 0, idx, out=buf)
    y.mul_(2)
    return y


def grad_mode_set(x, idx, buf):
    y = x.sigmoid()
    torch.set_grad_enabled(False)
    torch.index_select(y, 0, idx, out=buf)
    torch.set_grad_enabled(True)
    y.mul_(2)
    return y
'''


def test_an_out_call_that_proves_nothing_keeps_the_finding():
    found = analyze_source(MISLEADING_OUT)
    src = MISLEADING_OUT.splitlines()
    assert [(f.code, src[f.line - 1].strip()) for f in found] == [
        ("IPV006", "y.mul_(2)"), ("IPV006", "y.mul_(2)"), ("IPV006", "y.mul_(2)"), ("IPV006", "z.mul_(2)"),
        ("IPV006", "y.mul_(2)"), ("IPV006", "y.mul_(2)"), ("IPV006", "y.mul_(2)"), ("IPV006", "y.mul_(2)"),
        ("IPV006", "y.mul_(2)"), ("IPV006", "y.mul_(2)")]


@pytest.mark.parametrize("name", ["detached", "gradless_op", "out_none", "either", "loop_else", "outer_loop",
                                  "changed_between", "called_iterable", "swallowed", "grad_mode_set"])
def test_each_misleading_out_call_runs_and_the_backward_raises(name):
    names = load(MISLEADING_OUT)
    x = torch.rand(4, requires_grad=True)
    bufs = {0: torch.empty(1)}
    buf = torch.empty(3) if name == "gradless_op" else torch.empty(1)
    try:
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            arg = bufs if name in ("loop_else", "outer_loop", "changed_between", "called_iterable") else buf
            names[name](x, torch.tensor([0]), arg).sum().backward()
    finally:
        torch.set_grad_enabled(True)


# A class's own facts are computed when first read (analysis/own_class.py), with the names as they stood at the
# `class` statement: a binding further down the class body (`nn = None`) is the class's own, which its methods never
# see (they read the module's `nn`). The review's probe lost this finding when the facts read the names late.
CLASS_BODY_REBINDS = '''import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.Sigmoid()

    def forward(self, x):
        y = self.act(x)
        y.mul_(2)
        return y

    nn = None
'''


def test_a_name_bound_later_in_the_class_body_does_not_change_its_facts():
    found = analyze_source(CLASS_BODY_REBINDS)
    assert [(f.code, f.line, f.col) for f in found] == [("IPV006", 12, 8)]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        load(CLASS_BODY_REBINDS)["M"]()(torch.rand(4, requires_grad=True)).sum().backward()


# What an `out=` call's input requires grad with on every path (`_must_from`): `rz` bound twice, both times from `b`
# (torch-sla's CG loop, whose `rz_old = rz_new` carries it around), still proves `b` needs no grad past the call; one
# binding that detaches does not.
CARRIED = '''import torch


def cg(b: torch.Tensor, iters: int = 3):
    r = b.clone()
    z = r * 0.5
    rz = torch.dot(r, z)
    neg = torch.empty(())
    for _ in range(iters):
        alpha = rz / 2.0
        torch.neg(alpha, out=neg)
        r.add_(z, alpha=0.1)
        rz = torch.dot(r, z)
    return r


def cg_detached(b: torch.Tensor, iters: int = 3):
    r = b.clone()
    z = r * 0.5
    rz = torch.dot(r, z)
    neg = torch.empty(())
    for _ in range(iters):
        alpha = rz / 2.0
        torch.neg(alpha, out=neg)
        r.add_(z, alpha=0.1)
        rz = torch.dot(r, z).detach()
    return r
'''


def test_an_input_bound_twice_from_the_same_guess_still_proves_it():
    found = analyze_source(CARRIED)
    assert [(f.code, f.line, f.col) for f in found] == [("IPV006", 25, 8)]
    names = load(CARRIED)
    b = torch.rand(4, requires_grad=True)
    with pytest.raises(RuntimeError, match=OUT_ERROR):
        names["cg"](b * 1.0)
    with pytest.raises(RuntimeError, match=OUT_ERROR):
        names["cg_detached"](b * 1.0)  # (its first pass still raises: the finding is about what the analysis can tell)


@pytest.mark.parametrize("op", ["histc", "floor_divide", "heaviside", "multinomial", "signbit", "eq"])
def test_ops_whose_output_has_no_gradient_take_out_with_grad_on(op):
    # (out_calls._GRADLESS_OUT: such a call proves nothing about its input's grad; a differentiable op raises)
    x = torch.rand(6, requires_grad=True) + 0.5
    calls = {
        "histc": lambda: torch.histc(x, bins=4, out=torch.empty(4)),
        "floor_divide": lambda: torch.floor_divide(x, 2.0, out=torch.empty(6)),
        "heaviside": lambda: torch.heaviside(x, torch.tensor(0.5), out=torch.empty(6)),
        "multinomial": lambda: torch.multinomial(x, 2, out=torch.empty(2, dtype=torch.long)),
        "signbit": lambda: torch.signbit(x, out=torch.empty(6, dtype=torch.bool)),
        "eq": lambda: torch.eq(x, x, out=torch.empty(6, dtype=torch.bool)),
    }
    calls[op]()
    with pytest.raises(RuntimeError, match=OUT_ERROR):
        torch.floor(x, out=torch.empty(6))
