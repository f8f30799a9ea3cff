"""Facts from set AT (thirteenth session), executed under torch 2.13: a local bound to an ``nn.Parameter`` the
class built (``params = self.transform_params``) holds that parameter, a tensor that requires grad (neuroreg's
registration: the scale's product saves a block of the matrix, whose write raises at backward)."""
from __future__ import annotations

import textwrap

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load as _load

torch = pytest.importorskip("torch")

REGISTRATION = """
import torch
from torch import nn


class Register(nn.Module):
    def __init__(self):
        super().__init__()
        self.transform_params = nn.Parameter(torch.zeros(9))

    def matrix(self):
        params = self.transform_params
        mat = torch.eye(4)
        scale = torch.exp(params[6:9])
        mat[:3, :3] = mat[:3, :3] * scale.unsqueeze(0)
        return mat
"""


def test_a_local_bound_to_a_parameter_attribute_requires_grad():
    src = textwrap.dedent(REGISTRATION)
    [finding] = analyze_source(src)
    assert (finding.code, finding.line, finding.col) == ("IPV006", 15, 8)
    assert finding.message.startswith(
        "item assignment writes in place to `mat`, which `mat[:3, :3] * scale.unsqueeze(0)` (line 15) saved for "
        "backward to compute the gradient of an input that requires grad")
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _load(src)["Register"]().matrix().sum().backward()


def test_a_local_bound_to_a_buffer_is_no_parameter():
    src = textwrap.dedent(REGISTRATION).replace("self.transform_params = nn.Parameter(torch.zeros(9))",
                                                "self.register_buffer('transform_params', torch.zeros(9))")
    assert analyze_source(src) == []
    assert _load(src)["Register"]().matrix()[0, 0] == 1.0
