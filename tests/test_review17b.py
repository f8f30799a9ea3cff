"""A review of set BH's facts (an empty path; a function returned as a value), each case executed under torch
2.13 as a script (its ``__main__`` prints ``RAISE`` when a write or backward raises). The cases (tests/review17b/)
were written for this review; each is a hazard, and the tool reports it:

- autograd's checks still raise on an empty tensor (a saved output written, one output of ``split``, a view made
  under ``no_grad``, a custom Function's view): the empty path drops only expanded views, and marks a parameter
  returned there (``StepKind.EMPTY``) so that only an expanded view a caller passed is none;
- a name bound again in a loop around the ``return`` or by a nested function (``nonlocal``) is not empty there;
- a function returned as a value (``get_activation(...)``, a bound method, a decorator's wrapper) is called where
  the returned value is called, with what that call passes: its guess is decided there, not dropped."""
from __future__ import annotations

import contextlib
import io
import pathlib
import runpy

import pytest

from inplace_lint.analysis import analyze_source

torch = pytest.importorskip("torch")

CASES = pathlib.Path(__file__).resolve().parent / "review17b"


@pytest.mark.parametrize("path", sorted(CASES.glob("*.py")), ids=lambda p: p.stem)
def test_each_hazard_is_reported_and_raises(path):
    findings = analyze_source(path.read_text())
    assert len(findings) == 1 and findings[0].code in {"IPV002", "IPV003", "IPV004", "IPV005", "IPV006"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(path), run_name="__main__")
    assert "RAISE" in out.getvalue()
