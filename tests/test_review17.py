"""An adversarial review of set BF/BG's facts (a stack's first layer saves its input; a name bound by an unpacking
is no torch-made tensor), each case executed under torch 2.13: the tool reports exactly the cases whose backward
raises "modified by an inplace operation". The cases (tests/review17/) were written for this review.

- A ``Sequential`` changed after it is built (an item stored, ``insert``, ``del``), handed to a helper, changed
  through a loop's name or frozen by ``apply`` is no longer read by its first layer (false findings before).
- A walrus rebinding a loop name drops the element's layer (a false finding before).
- A leading ``nn.Identity`` hands its input on: the layer after it decides (a miss before).
- ``torch_made`` refuses only a binding whose value is known and not a torch op: ``lo, hi = torch.maximum(...),
  torch.minimum(...)``, a walrus and ``lo: Tensor = torch.maximum(...)`` are torch-made again (the review found
  the first version of the mend lost them), ``lo, hi = float(a), float(b)`` is not."""
from __future__ import annotations

import importlib.util
import pathlib

import pytest

from inplace_lint.analysis import analyze_source

torch = pytest.importorskip("torch")

CASES = pathlib.Path(__file__).resolve().parent / "review17"


def _raises(path: pathlib.Path) -> bool:
    spec = importlib.util.spec_from_file_location(f"review17_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(0)
    try:
        mod.run().sum().backward()
    except RuntimeError as exc:
        assert "modified by an inplace operation" in str(exc)
        return True
    return False


@pytest.mark.parametrize("path", sorted(CASES.glob("*.py")), ids=lambda p: p.stem)
def test_reported_exactly_when_the_backward_raises(path):
    findings = analyze_source(path.read_text())
    assert {f.code for f in findings} <= {"IPV006"}
    assert bool(findings) == _raises(path)
