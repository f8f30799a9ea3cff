"""A Python number bound by an unpacking is not a tensor a torch op made (set BF: torchspin's resonance-field
search, ``B_lo, B_hi = float(exp.Range[0]), float(exp.Range[1])``, then ``H0 - B_lo * muzL``, then Brent's method
on the bounds, ``b += d``). ``B_lo`` is a float: ``B_lo * muzL`` saves no tensor of it, and the helper's ``b +=
d`` rebinds a number. Before, :meth:`CallGradMixin.torch_made` took a name stored by an unpacking as bound only to
torch ops (it checked plain ``=`` targets alone), so ``B_lo`` was held saved for ``muzL``'s gradient and the
helper's two writes were reported. A local bound by ``=`` to a torch op alone is still one (the guessed finding
below). Executed under torch 2.13."""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

SOURCE = """import torch


def _search(H0, muzL, a, b):
    for _ in range(3):
        if abs(b - a) > 1e-3:
            b += (a - b) / 2
        H_b = H0 - b * muzL
    return b


def fields(H0: torch.Tensor, mux: torch.Tensor, bounds):
    muzL = 0.5 * mux
    B_lo, B_hi = float(bounds[0]), float(bounds[1])
    H_lo = H0 - B_lo * muzL
    H_hi = H0 - B_hi * muzL
    return _search(H0, muzL, B_lo, B_hi), H_lo, H_hi


def fields_tensor(H0: torch.Tensor, mux: torch.Tensor, bounds):
    muzL = 0.5 * mux
    B_lo = torch.ones(3)
    H_lo = H0 - B_lo * muzL
    B_lo += 1
    return H_lo
"""


def test_numbers_bound_by_an_unpacking_are_no_saved_tensors():
    findings = analyze_source(SOURCE)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 24, 4)]
    assert "`B_lo * muzL`" in findings[0].message and "when `mux` requires grad" in findings[0].message
    mod = load(SOURCE)
    mux = torch.randn(3, requires_grad=True)
    b, H_lo, H_hi = mod["fields"](torch.randn(3), mux, (0.0, 1.0))
    assert isinstance(b, float)
    (H_lo.sum() + H_hi.sum()).backward()  # nothing saved was written
    assert mux.grad is not None
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        mod["fields_tensor"](torch.randn(3), torch.randn(3, requires_grad=True), None).sum().backward()
