"""A local computed from a parameter annotated ``torch.Tensor`` stays a guess about that parameter when a loop
updates it with arithmetic on itself (``phi = phi - buf[:, p:p + 1] * phi``), and an index (``p``, the loop's
variable) is no read of a tensor: a slice of a buffer the update saved for ``phi``'s gradient, written on the next
pass, raises at backward when the caller's tensor requires grad (torchcast's partial autocorrelation, set BM).
Before, the update's reads of the loop variable and of the buffer (a factory's tensor) dropped the guess."""
from __future__ import annotations

import textwrap

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load, marked_line

torch = pytest.importorskip("torch")

UPDATE = textwrap.dedent("""\
    import torch


    def recurrence(series: torch.Tensor, n: int):
        phi = series.mean(0)
        buf = torch.zeros(series.shape[1], n)
        for p in range(n):
            buf[:, p] = 1.0  # <-
            phi = phi - buf[:, p:p + 1] * phi
        return phi
    """)


def test_a_buffer_saved_by_an_update_of_a_guess_is_reported_at_its_next_write_and_raises():
    [finding] = analyze_source(UPDATE)
    assert (finding.code, finding.line, finding.col) == ("IPV006", marked_line(UPDATE), 8)
    assert finding.message.startswith("item assignment writes in place to `buf`, which `buf[:, p:p + 1] * phi` "
                                      "(line 9) saved for backward")
    assert finding.message.endswith("(it does when `series` requires grad)")
    recurrence = load(UPDATE)["recurrence"]
    series = torch.randn(4, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        recurrence(series, 3).sum().backward()
    recurrence(torch.randn(4, 3), 3)  # (no grad: runs)


def test_an_update_of_a_local_made_from_numbers_alone_is_no_guess():
    """``phi`` made by a factory and a number parameter: nothing it is computed from can require grad."""
    code = UPDATE.replace("phi = series.mean(0)", "phi = torch.ones(series.shape[1], 1) * n")
    assert analyze_source(code) == []


THROUGH_HELPERS = textwrap.dedent("""\
    import torch


    def autocorrelation(series: torch.Tensor, n_lags: int) -> torch.Tensor:
        out = torch.stack([(series[:, :, k:] * series[:, :, :series.shape[2] - k]).sum(2).mean(0)
                           for k in range(n_lags + 1)], 1)
        return out / out[:, :1]


    def partial_autocorrelation(series: torch.Tensor, n_lags: int) -> torch.Tensor:
        autocorr = autocorrelation(series, n_lags)
        pac = torch.empty_like(autocorr)
        phi, pac[:, 0:2] = autocorr[:, 1:2], autocorr[:, 0:2]
        for p in range(2, n_lags + 1):
            pac[:, p] = phi.sum(1)  # <-
            phi = phi - pac[:, p:(p + 1)] * torch.flip(phi, dims=(1,))
            phi = torch.cat((phi, pac[:, p:p + 1]), dim=1)
        return pac
    """)


def test_a_guess_handed_back_by_a_project_helper_reaches_the_buffer_it_saves():
    """torchcast's partial autocorrelation, reduced (the released function reaches the series through more
    helpers, lists filled in loops and an FFT branch, and is still missed): what a project function computes
    from its annotated parameter (a comprehension over `range(...)` included) is a guess about the caller's
    parameter passed there, which a tuple unpacking and `torch.flip(phi)` keep."""
    [finding] = analyze_source(THROUGH_HELPERS)
    assert (finding.code, finding.line, finding.col) == ("IPV006", marked_line(THROUGH_HELPERS), 8)
    assert finding.message.endswith("(it does when `series` requires grad)")
    pac = load(THROUGH_HELPERS)["partial_autocorrelation"]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        pac(torch.randn(2, 3, 8, requires_grad=True), 4).sum().backward()


def test_a_helper_computing_from_a_number_hands_back_no_guess():
    code = THROUGH_HELPERS.replace("def autocorrelation(series: torch.Tensor, n_lags: int)",
                                   "def autocorrelation(series, n_lags: int)").replace(
        "def partial_autocorrelation(series: torch.Tensor, n_lags: int)", "def partial_autocorrelation(series, n_lags: int)")
    assert analyze_source(code) == []


@pytest.mark.parametrize("binding", [
    "h = h.detach()",  # truncated backpropagation through time
    "h = float(h.sum())",
    "h = torch.bucketize(h, torch.tensor([0.0]))",
])
def test_a_binding_that_needs_no_grad_drops_the_guess(binding):
    """A fix review's false findings (each executed: the backward runs): the guess was the union of every binding
    of the local, so it survived where the binding that reaches the saving op cannot require grad."""
    code = textwrap.dedent(f"""\
        import torch


        def smooth(x: torch.Tensor, n: int):
            h = x.mean(0)
            decay = torch.zeros(x.shape[1], n)
            for t in range(n):
                {binding}
                decay[:, t] = 0.9
                h = h - decay[:, t] * h + x[t]
            return h
        """)
    assert analyze_source(code) == []
    x = torch.randn(4, 3, requires_grad=True)
    out = load(code)["smooth"](x, 3)
    (out.sum() + x.sum()).backward()  # no error


def test_a_binding_made_without_grad_drops_the_guess():
    code = UPDATE.replace("    phi = series.mean(0)\n", "    with torch.no_grad():\n        phi = series.mean(0)\n")
    assert analyze_source(code) == []
    series = torch.randn(4, 3, requires_grad=True)
    (load(code)["recurrence"](series, 3).sum() + series.sum()).backward()  # no error
