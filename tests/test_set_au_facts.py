"""Facts from set AU (thirteenth session), executed under torch 2.13: a test that tells two names apart as objects
(``out.data_ptr() == data.data_ptr()``, ``out is data``) says, in the arm where they differ, that a conditional copy
(``out = data.type_as(grid)``) made a copy; and ``if out is tensor:`` with ``tensor`` annotated ``Tensor`` runs only
where ``out`` is no ``None`` (hf-deepali's ``grid_sample`` and ``round_decimals``: 6 false IPV004)."""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load as _load

torch = pytest.importorskip("torch")

SOURCE = """import torch
from torch import Tensor
from typing import Optional


def sample(data: Tensor, grid: Tensor, padding: float = 0.0) -> Tensor:
    if data.shape[0] != grid.shape[0]:
        data = data.expand(grid.shape[0], *data.shape[1:])
    out = data.type_as(grid)
    if padding != 0:
        if out.data_ptr() == data.data_ptr():
            out = out.sub(padding)
        else:
            out = out.sub_(padding)
    return out


def round_decimals(tensor: Tensor, decimals: int = 0, out: Optional[Tensor] = None) -> Tensor:
    scale = 10 ** decimals
    if out is tensor:
        tensor *= scale
    else:
        tensor = tensor * scale
    result = torch.round(tensor, out=out)
    result /= scale
    return result


def points(n: int) -> Tensor:
    return round_decimals(torch.rand(1, 3).expand(n, 3), 2)
"""

UNCHECKED = SOURCE.replace("""        if out.data_ptr() == data.data_ptr():
            out = out.sub(padding)
        else:
            out = out.sub_(padding)""", """        out = out.sub_(padding)""").replace("    if out is tensor:\n", "    if out is None:\n")


def test_writes_only_where_a_test_proved_a_copy_or_an_output_are_no_findings():
    assert analyze_source(SOURCE) == []
    module = _load(SOURCE)
    assert module["sample"](torch.ones(1, 3), torch.zeros(4, 3), 1.0).tolist() == [[0.0] * 3] * 4
    assert module["sample"](torch.ones(1, 3, dtype=torch.long), torch.zeros(4, 3), 1.0).shape == (4, 3)
    assert module["points"](3).shape == (3, 3)


def test_the_same_writes_unchecked_are_findings_that_raise():
    found = [(f.code, f.line, f.col) for f in analyze_source(UNCHECKED)]
    assert found == [("IPV004", 11, 14), ("IPV004", 18, 8)]
    module = _load(UNCHECKED)
    with pytest.raises(RuntimeError, match="single memory location"):
        module["sample"](torch.ones(1, 3), torch.zeros(4, 3), 1.0)
    with pytest.raises(RuntimeError, match="single memory location"):
        module["points"](3)
