"""A message states the condition under which the written name holds the risky value, beside the write's own path
(set BL's satellite-cloud-generator: ``cloud`` is an expanded view only where ``channel_magnitude_shift == 0``,
since ``if shift != 0: cloud = w * cloud`` makes a new tensor first). Executed under torch 2.13: with the default
``shift`` the write is harmless, with ``shift=0.0`` channel 0's roll lands on every channel."""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

SOURCE = """import torch


def add_cloud(x, b: int, c: int, shift=0.05, offset=2):
    cloud = (x.unsqueeze(1) * 2).expand(b, c, 4, 4)
    if shift != 0.0:
        cloud = torch.ones(c)[:, None, None] * cloud
    if offset != 0:
        cloud[:, 0] = torch.roll(cloud[:, 0], 1, dims=-2)
    return cloud
"""


def test_the_message_states_where_the_name_holds_the_expanded_view():
    [finding] = analyze_source(SOURCE)
    assert (finding.code, finding.line, finding.col) == ("IPV004", 9, 8)
    assert finding.message.endswith("when `offset!=0` and `shift==0.0`"), finding.message
    add_cloud = load(SOURCE)["add_cloud"]
    x = torch.arange(32.0).view(2, 4, 4)
    rolled = add_cloud(x, 2, 3, shift=0.0)
    # channel 0 was to be rolled; every channel shares its memory, so all are
    assert torch.equal(rolled[:, 1], rolled[:, 0]) and not torch.equal(rolled[:, 1], x * 2)
    kept = add_cloud(x, 2, 3)
    assert torch.equal(kept[:, 1], x * 2)


def test_a_name_that_holds_the_view_on_every_path_states_no_extra_condition():
    src = SOURCE.replace("    if shift != 0.0:\n        cloud = torch.ones(c)[:, None, None] * cloud\n", "")
    [finding] = analyze_source(src)
    assert finding.message.endswith("when `offset!=0`"), finding.message
