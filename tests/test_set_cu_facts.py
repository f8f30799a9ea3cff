"""Facts of the thirty-first session (sets CU and CV, labelled blind), each executed under torch.

- The indices of ``torch.sort``/``topk`` taken where the op runs (``torch.sort(x, 1)[1]``, ``.indices``) leave the
  values unread: no backward reaches the op, so a write into the indices it saved is legal (bindsnet's vote,
  set CV: a false IPV006). Unpacked, with the values read on, the same write raises.
- A value added or multiplied into a name in place (``times *= n / times.max()``) flows on with that name; a
  reading of the name after it is bound again to a value with no gradient from the old one
  (``times = torch.ceil(times).long()``) reads something else: the saved input is never read by a backward
  (bindsnet's rank-order encoding, set CV: a false IPV006). Bound again on one path only, or with the
  old value kept by another name, the write still raises.
"""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

SOURCE = '''import torch


def vote(spikes: torch.Tensor, n_labels: int) -> torch.Tensor:
    rates = spikes.sum(1) / n_labels
    predictions = torch.sort(rates, dim=1, descending=True)[1][:, 0]
    predictions[rates.sum(1) == 0] = -1
    return predictions


def top_indices(x: torch.Tensor, k: int) -> torch.Tensor:
    top = torch.topk(x.exp(), k).indices
    top[0] = 0
    last = torch.sort(x.exp(), 1)[-1]
    last[0] = 0
    return top, last


def sorted_values_kept(x: torch.Tensor):
    rates = x.exp()
    res = rates.sort(dim=1)
    idx = res[1]
    idx[:, 0] = 0
    return res[0].sum()


def rank_order(datum: torch.Tensor, time: int) -> torch.Tensor:
    datum = datum.flatten()
    times = torch.zeros(datum.numel())
    times[datum != 0] = 1 / datum[datum != 0]
    times *= time / times.max()
    times = torch.ceil(times).long()
    return times


def carried(datum: torch.Tensor, time: int) -> torch.Tensor:
    times = datum.flatten() * 2
    times *= time / times.max()
    times = times * 2
    return times


def in_one_arm(datum: torch.Tensor, time: int, flag: bool = False) -> torch.Tensor:
    times = datum.flatten() * 2
    times *= time / times.max()
    if flag:
        times = torch.ceil(times).long()
    return times


def kept_alias(datum: torch.Tensor, time: int) -> torch.Tensor:
    times = datum.flatten() * 2
    keep = times
    times *= time / times.max()
    times = torch.ceil(times).long()
    return keep
'''


def test_dropped_values_and_a_name_bound_again_without_grad():
    findings = analyze_source(SOURCE)
    assert [(f.code, f.line, f.col) for f in findings] == [
        ("IPV006", 23, 4), ("IPV006", 38, 4), ("IPV006", 45, 4), ("IPV006", 54, 4)]
    mod = load(SOURCE)
    grad = torch.rand(3, 4, requires_grad=True)
    assert not mod["vote"](torch.rand(2, 3, 4, requires_grad=True), 2).requires_grad
    assert not any(t.requires_grad for t in mod["top_indices"](grad, 2))
    assert mod["rank_order"](torch.rand(5, requires_grad=True), 10).dtype == torch.long
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        mod["sorted_values_kept"](torch.rand(3, 4, requires_grad=True)).backward()
    for name in ("carried", "in_one_arm", "kept_alias"):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            mod[name](torch.rand(5, requires_grad=True), 10).sum().backward()


SELF = '''import torch


def squared(x: torch.Tensor) -> torch.Tensor:
    a = torch.tanh(x) * 2
    a.mul_(a)
    return a


def power(x: torch.Tensor, scale: float) -> torch.Tensor:
    amplitude = torch.tanh(x) * 2
    return amplitude.mul_(amplitude).mean(dim=-1) / scale


def doubled(x: torch.Tensor) -> torch.Tensor:
    a = torch.tanh(x) * 2
    a.add_(a)
    return a


def dropped(x: torch.Tensor) -> float:
    a = torch.tanh(x) * 2
    a.mul_(a)
    return a.sum().item()


def by_keyword(x: torch.Tensor) -> torch.Tensor:
    a = torch.tanh(x) * 2
    a.mul_(other=a)
    return a


def augmented(x: torch.Tensor) -> torch.Tensor:
    a = torch.tanh(x) * 2
    a *= a
    return a


def sign(x: torch.Tensor) -> torch.Tensor:
    a = torch.tanh(x) * 2
    a.copysign_(a)
    return a


def detached(x: torch.Tensor) -> torch.Tensor:
    a = torch.tanh(x) * 2
    a.mul_(a)
    a = a.detach()
    return a
'''


def test_an_inplace_op_whose_argument_is_its_receiver():
    """``a.mul_(a)``: ``mul``'s backward reads each input for the other's gradient, and here both are the receiver,
    which the op then overwrites: the backward raises (cplxmodule's Welch power spectrum, ``amplitude.mul_(amplitude)``,
    set CV, labelled; there on ``abs(fft)`` of a project helper's window view, which no guess reaches: still missed).
    ``add_`` and ``copysign_`` read no input for the receiver's gradient; a result read only by ``.item()``, or bound
    again to its ``.detach()``, takes no backward. ``a.mul_(other=a)`` and ``a *= a`` are the same write (a review's
    probes, /tmp/rev31b/review.md)."""
    findings = analyze_source(SELF)
    assert [(f.code, f.line, f.col) for f in findings] == [
        ("IPV006", 6, 4), ("IPV006", 12, 11), ("IPV006", 29, 4), ("IPV006", 35, 4)]
    assert "which `a.mul_` (line 6) saved for backward" in findings[0].message
    mod = load(SELF)
    for name, args in (("squared", ()), ("power", (2.0,)), ("by_keyword", ()), ("augmented", ())):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            mod[name](torch.rand(3, 8, requires_grad=True), *args).sum().backward()
    mod["doubled"](torch.rand(3, 8, requires_grad=True)).sum().backward()
    assert mod["dropped"](torch.rand(3, 8, requires_grad=True)) > 0
    mod["sign"](torch.rand(3, 8, requires_grad=True)).sum().backward()  # (copysign's backward reads neither input)
    assert not mod["detached"](torch.rand(3, 8, requires_grad=True)).requires_grad


WALRUS = '''def temper(model, x, t):
    out = model(x)
    logits = out.logits
    logits.div_(s := t * 2)
    return logits, s
'''


@pytest.mark.parametrize("style, line", [("inline", "    _logits_operand = (s := t * 2)\n"),
                                         ("runtime", '    logits = out_of_place(logits, "div_", s := t * 2)\n')])
def test_a_walrus_operand_is_held_in_brackets(style, line):
    """The operand held in a temporary before the DTensor guard is an assignment expression: `_x_operand = s := t`
    does not parse, so the fix was dropped for the whole file (a review's probe, /tmp/rev31/review.md B1). Held as
    `(s := t * 2)` it binds `s` as before; the fixed function returns the same values and leaves the output alone."""
    from types import SimpleNamespace

    from inplace_lint.fixing import fix_code

    fixed = fix_code(WALRUS, style=style).new_source
    assert line in fixed
    mod = load(WALRUS)
    new = load(fixed)
    model = lambda x: SimpleNamespace(logits=x * 1)  # noqa: E731
    x = torch.arange(4.0)
    (a, s1), (b, s2) = mod["temper"](model, x, 1.5), new["temper"](model, x, 1.5)
    assert torch.equal(a, b) and s1 == s2 == 3.0
