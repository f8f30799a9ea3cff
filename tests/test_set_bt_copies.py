"""Facts from set BT (twenty-second session), each executed under torch.

- An op on ``t[mask]`` (a bool mask, or one combined bitwise: ``(a | b) & ~c``) saves a copy, not ``t``: a later
  write of ``t`` leaves the saved tensor as it was (pytorch3d's implicitron ray tracer, a false IPV006).
- A helper's write to what its caller passes, when that is the caller's own parameter (or a view of it), matters only
  if the parameter requires grad: a plain class's method whose callers pass nothing that does is tested as a write
  in it would be; so is a ``__call__`` of a class no visible class makes a module and that defines no ``forward``
  (maltorch's byte initializers, where the labeller found no hazard).
"""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

RAYS = '''import torch


def project(far, cam, rays: torch.Tensor, hit):
    dist = torch.sum(cam, dim=-1)
    inside = dist < far
    left = (inside | hit) & ~hit
    points = cam[left] + dist[left].unsqueeze(1) * rays[left]
    dist[left] = 0.0
    return points, dist
'''


def test_an_op_on_a_masked_item_saves_a_copy_and_a_later_write_is_not_reported():
    assert analyze_source(RAYS) == []
    project = load(RAYS)["project"]
    rays = torch.randn(6, 3, requires_grad=True)
    points, _ = project(torch.full((6,), 10.0), torch.rand(6, 3), rays, torch.zeros(6, dtype=torch.bool))
    assert points.shape == (6, 3)  # (every ray selected: the write below touches what the product read)
    points.sum().backward()  # (the mask's copy was saved, not `dist`)
    assert rays.grad is not None


PADDING = '''import torch


def pad(x, n: int):
    x[..., :n] = 0
    return x


class Init:
    def __init__(self, n: int):
        self.n = n

    def __call__(self, x: torch.Tensor):
        return [pad(x_i.unsqueeze(0), self.n) for x_i in x]


def direct(x: torch.Tensor):
    for x_i in x:
        x_i[:2] = 0
    return x
'''


def test_a_plain_class_passing_its_own_parameter_to_a_writing_helper_is_decided_by_its_callers():
    # `direct` is an entry point, whose annotated parameter stays a guess (reported, raising when `x` requires
    # grad); `Init.__call__` is a plain class's method nothing calls with grad: its helper's write is not reported
    assert [(f.code, f.line) for f in analyze_source(PADDING)] == [("IPV003", 19)]
    mod = load(PADDING)
    batch = torch.randint(0, 255, (2, 8)).float()
    mod["Init"](3)(batch)  # (bytes: no grad, no error)
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        mod["direct"](torch.randn(2, 8, requires_grad=True) * 1)


CALLABLE = '''import torch
from json import JSONDecoder as Base


def pad(x, n: int):
    x[..., :n] = 0
    return x


class Init(Base):
    def __init__(self, n: int):
        self.n = n

    def __call__(self, x: torch.Tensor):
        out = []
        for x_i in x:
            out.append(pad(x_i.unsqueeze(0), self.n))
        return out
'''


def test_a_callable_object_of_another_librarys_class_is_not_taken_for_a_modules_forward():
    # its base is not known to be plain, but it defines `__call__` and no class makes it a module: calling it runs
    # its own code, on what its callers hand it (maltorch's initializers, which the attacks hand `samples.data`)
    assert analyze_source(CALLABLE) == []
    out = load(CALLABLE)["Init"](2)(torch.randint(0, 255, (2, 6)).float())
    assert [o.shape for o in out] == [(1, 6), (1, 6)]


INDEX_COPIES = '''import torch


def by_nonzero(dist, cam, rays: torch.Tensor):
    idx = torch.nonzero(dist > 0.5).squeeze(1)
    points = cam[idx] + dist[idx].unsqueeze(1) * rays[idx]
    dist[idx] = 0.0
    return points


def by_all(dist, cam, rays: torch.Tensor):
    valid = (cam != 0).all(dim=-1)
    points = cam[valid] + dist[valid].unsqueeze(1) * rays[valid]
    dist[valid] = 0.0
    return points


def by_tuple(dist, cam, rays: torch.Tensor):
    sel = dist > 0.5
    points = cam[sel] + dist[sel.nonzero(as_tuple=True)].unsqueeze(1) * rays[sel, :]
    dist[sel] = 0.0
    return points
'''


def test_indexes_that_are_integer_or_bool_tensors_copy():
    # `nonzero(...)`, `.all(dim=-1)`, `nonzero(as_tuple=True)`: advanced indexing, so the product saved a copy
    # (an adversarial review of this session's facts; the same code was reported before it)
    assert analyze_source(INDEX_COPIES) == []
    mod = load(INDEX_COPIES)
    for name in ("by_nonzero", "by_all", "by_tuple"):
        rays = torch.randn(6, 3, requires_grad=True)
        mod[name](torch.rand(6) + 0.6, torch.rand(6, 3) + 0.1, rays).sum().backward()
        assert rays.grad is not None, name


ARGMAX = '''import torch


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, feats, scores):
        h = self.lin(feats)
        best = torch.argmax(scores)
        loss = torch.sin(h[best]).sum()
        h.add_(1.0)
        return loss
'''


def test_an_index_from_argmax_without_a_dimension_is_a_view():
    # 0-dim: `h[best]` selects as an integer does (`._base is h`), so `sin` saved a view of `h` (a second review's
    # regression of the index-copies fact, executed)
    assert [(f.code, f.line) for f in analyze_source(ARGMAX)] == [("IPV006", 13)]
    head = load(ARGMAX)["Head"]()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        head(torch.randn(4, 3), torch.randn(4)).backward()
