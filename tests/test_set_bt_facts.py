"""Facts from set BT (twenty-second session), each executed under torch on a one-process gloo group (CPU).

``DTensor.to_local()`` runs a custom autograd Function, but its output is a view autograd guards only when the
DTensor requires grad (docs/pytorch-facts.md#dtensor-local-is-custom-function). An optimizer's state never does:
torchtitan-npu's swap optimizers write the local shard of a momentum buffer they read from the optimizer's state,
directly or through a helper that unwraps it, and nothing raises. A DTensor read from an optimizer's state
(``X.state[p]``) is stored state; through a helper, what the call passes decides; a model's output kept in a dict or a
list still counts.
"""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available():  # pragma: no cover
    pytest.skip("torch.distributed is not available", allow_module_level=True)

SWAP = '''import torch
from torch.distributed.tensor import DTensor


def unwrap(tensor):
    if isinstance(tensor, DTensor):
        return tensor.to_local()
    return tensor


class Swap:
    def __init__(self, optimizer, param):
        self.optimizer = optimizer
        self.param = param

    def momentum(self):
        return self.optimizer.state[self.param].get("momentum_buffer")

    def load(self, cpu):
        unwrap(self.momentum()).copy_(cpu)

    def reset(self):
        state = self.optimizer.state.get(self.param, {})
        buf = state.get("momentum_buffer")
        buf.to_local().zero_()

    def restore(self, key, cpu):
        self.optimizer.state[self.param][key].to_local().copy_(cpu)


def scaled(model, x, t):
    logits = unwrap(model(x))
    logits.div_(t)
    return logits
'''


def test_stored_state_is_not_reported_and_a_models_output_through_the_helper_is():
    found = [(f.code, f.line) for f in analyze_source(SWAP)]
    assert found == [("IPV002", 33)], found


def test_the_optimizers_state_is_written_without_error_and_the_models_output_raises(mesh):
    from torch.distributed.tensor import DTensor, Shard

    mod = load(SWAP)
    param = torch.nn.Parameter(DTensor.from_local(torch.randn(4), mesh, [Shard(0)]))
    optimizer = torch.optim.SGD([param], lr=0.1, momentum=0.9)
    param.grad = DTensor.from_local(torch.ones(4), mesh, [Shard(0)])
    optimizer.step()  # (fills the momentum buffer, a DTensor)
    swap = mod["Swap"](optimizer, param)
    swap.load(torch.full((4,), 2.0))
    assert torch.equal(swap.momentum().to_local(), torch.full((4,), 2.0))
    swap.reset()
    assert torch.equal(swap.momentum().to_local(), torch.zeros(4))
    swap.restore("momentum_buffer", torch.ones(4))
    assert torch.equal(swap.momentum().to_local(), torch.ones(4))

    def model(x):  # a head whose output is a DTensor that requires grad
        return DTensor.from_local(x, mesh, [Shard(0)]) * param

    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        mod["scaled"](model, torch.randn(4), 2.0)


HELD = '''import torch


class Head(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.cache = {}

    def forward(self, x, t):
        self.cache["h"] = self.model(x)
        self.cache["h"].to_local().div_(t)
        return self.cache["h"]


def listed(model, x, t):
    outs = [model(x)]
    outs[0].to_local().div_(t)
    return outs[0]
'''


def test_a_models_output_kept_in_a_dict_or_a_list_is_still_reported(mesh):
    # only an optimizer's state (`X.state[...]`) is taken for stored state: a cache or a list may hold a model's output
    from torch.distributed.tensor import DTensor, Shard

    assert [(f.code, f.line) for f in analyze_source(HELD)] == [("IPV002", 12), ("IPV002", 18)]
    mod = load(HELD)
    w = torch.nn.Parameter(torch.randn(4))

    def model(x):
        return DTensor.from_local(x * w, mesh, [Shard(0)])

    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        mod["Head"](model)(torch.randn(4), 2.0)
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        mod["listed"](model, torch.randn(4), 2.0)


OPTIMIZER_LOOPS = '''import torch


def scale_moments(optimizer, factor):
    for st in optimizer.state.values():
        st["momentum_buffer"].to_local().mul_(factor)


def update(state, grad, beta=0.9):
    m = state["momentum_buffer"].to_local()
    m.lerp_(grad.to_local(), 1 - beta)
'''


def test_an_optimizers_states_in_a_loop_or_handed_to_a_helper_are_stored_state(mesh):
    # (a second review's false reports of the narrowed rule: a loop over `optimizer.state.values()`, a functional
    # update given the per-parameter state)
    from torch.distributed.tensor import DTensor, Shard

    assert analyze_source(OPTIMIZER_LOOPS) == []
    mod = load(OPTIMIZER_LOOPS)
    param = torch.nn.Parameter(DTensor.from_local(torch.randn(4), mesh, [Shard(0)]))
    optimizer = torch.optim.SGD([param], lr=0.1, momentum=0.9)
    param.grad = DTensor.from_local(torch.ones(4), mesh, [Shard(0)])
    optimizer.step()
    mod["scale_moments"](optimizer, 2.0)
    assert torch.equal(optimizer.state[param]["momentum_buffer"].to_local(), torch.full((4,), 2.0))
    mod["update"](optimizer.state[param], DTensor.from_local(torch.zeros(4), mesh, [Shard(0)]))
