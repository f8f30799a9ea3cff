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
