"""Issue 20: the facts behind three clean fixtures, executed under torch (each clean fixture was reported
before its fact was built; the reported twin beside it raises as its message says)."""
from __future__ import annotations

import importlib.util
import pathlib

import pytest

torch = pytest.importorskip("torch")

DETECT = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "detect"


def _load(relative):
    spec = importlib.util.spec_from_file_location(relative.replace("/", "_")[:-3], DETECT / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return type("Out", (), {"logits": self.lin(x)})()


def test_loop_over_a_container_found_by_isinstance_backpropagates():
    clean = _load("clean/isinstance_container.py")
    w = torch.randn(3, 4, requires_grad=True)
    rows = clean.TensorList([w[0] * 2, w[1] * 2])
    out = clean.rescale(rows, 2.0)
    sum(r.sum() for r in out).backward()
    assert torch.equal(w.grad[:2], torch.ones(2, 4)) and torch.equal(w.grad[2], torch.zeros(4))
    # a tensor takes the other arm: divided out of place, or (`rescale_not_tensor`) returned as it is
    for rescale, grad in ((clean.rescale, 1.0), (clean.rescale_sequence, 1.0), (clean.rescale_not_tensor, 2.0),
                          (clean.rescale_after_return, 1.0)):
        x = torch.randn(2, 4, requires_grad=True)
        rescale(x * 2, 2.0).sum().backward()
        assert torch.equal(x.grad, torch.full((2, 4), grad))


def test_loop_over_a_tensor_found_by_isinstance_raises():
    reported = _load("IPV003/isinstance_tensor_arm.py")
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        reported.caller(_Model(), torch.randn(2, 4))


def test_torchscript_loop_over_a_tensor_is_select_not_unbind():
    clean = _load("clean/scripted_loop.py")
    x, w = torch.randn(3, 2), torch.randn(2, 4, requires_grad=True)
    data, index = torch.ones(3, 2), torch.tensor([0, 3])
    out = clean.caller(x, w, data, index)
    out.sum().backward()  # legal: one `select` view per step
    assert torch.allclose(w.grad, x.sum(0, keepdim=True).T.expand(2, 4))
    assert torch.allclose(out, (x @ w).detach() + torch.zeros(3, 4).index_add_(1, index, data))

    def eager(image, data, index):  # the same loop, not scripted: `unbind`'s views
        for image_row, data_row in zip(image, data):
            image_row.index_add_(0, index, data_row)
        return image

    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        eager(x @ w, data, index)
