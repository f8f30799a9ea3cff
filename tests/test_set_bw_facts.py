"""Facts from the twenty-third session's miss diagnoses (sets BM-BV) and set BW, each executed under torch.

- A container of leaves that require grad, held as an attribute (``self.params = {"mu": torch.tensor(0.1,
  requires_grad=True)}``), directly or through a base's ``__init__`` that stores what ``super().__init__(params)``
  passes: its items require grad (torchquantlib's stochastic models, set BW, default use: a calibration's backward
  raises). An import written without the package's name (``from models.base import Model``, the package run with its
  own folder on ``sys.path``) names the one project module whose name ends so.
- A parameter with no annotation that the function uses as a tensor (``v.exp()``, ``torch.cos(f0 * t)``, ``A =
  dictionary; torch.linalg.qr(A)``) is a guess, as one annotated ``Tensor`` is; one used only as an array or a
  number also allows (``g / g.max()``) is not.
- ``torch.as_tensor(t)`` of a tensor is ``t`` itself, grad and all.
- ``y = x.clone()`` and ``out = x.new_empty(...)`` are tensors made here; ``torch.flip(f)`` keeps ``f``'s guess;
  ``R.mT`` saved is ``R`` saved; ``evals[k - 1]`` with ``k: int`` is a view; a parameter that is surely a tensor,
  saved for another input's gradient and written in the same function, makes the backward raise whatever its
  caller passed for it.
- ``self.proc = Proc(d).to(device)`` still holds a ``Proc`` (``Module.to`` returns the module).
- The saved-input table covers ops on vectors and batches (``torch.mv``, ``dot``, ``bmm``): tests/test_saved_table.py.
"""
from __future__ import annotations

import pathlib

import pytest

from inplace_lint.analysis import analyze_source
from inplace_lint.analysis.project import Project
from inplace_lint.config import DEFAULT_SETTINGS
from tests.executed import load

torch = pytest.importorskip("torch")

MODIFIED = "modified by an inplace operation"

BASE = '''import torch


class Model:
    def __init__(self, params):
        self.params = params
'''

PATHS = '''import torch
from models.base import Model


class Drift(Model):
    def __init__(self, mu_init=0.0):
        params = {"mu": torch.tensor(mu_init, requires_grad=True)}
        super().__init__(params)

    def simulate(self, n: int, steps: int = 10):
        mu = self.params["mu"]
        S = torch.zeros(n, steps)
        S[:, 0] = 1.0
        for t in range(1, steps):
            dS = S[:, t - 1] * (mu * 0.1)
            S[:, t] = S[:, t - 1] + dS
        return S[:, -1]


class Fixed(Model):
    def __init__(self, mu_init=0.0):
        super().__init__({"mu": torch.tensor(mu_init)})

    def simulate(self, n: int, steps: int = 10):
        mu = self.params["mu"]
        S = torch.ones(n, steps)
        for t in range(1, steps):
            S[:, t] = S[:, t - 1] * (mu * 0.1)
        return S[:, -1]


class Direct:
    def __init__(self):
        self.w = {"a": torch.nn.Parameter(torch.ones(3))}

    def run(self, n: int):
        h = torch.ones(n)
        y = h * self.w["a"]
        h += 1
        return y
'''


def _package(root: pathlib.Path) -> dict:
    """BASE and PATHS as ``lib/models/{base,paths}.py``, the package importing its modules as ``models.*``."""
    models = root / "lib" / "models"
    models.mkdir(parents=True)
    (root / "lib" / "__init__.py").write_text("")
    (models / "__init__.py").write_text("")
    project = Project(DEFAULT_SETTINGS, root)
    for name, text in (("base.py", BASE), ("paths.py", PATHS)):
        (models / name).write_text(text)
        project.add_file(str(models / name), source=text)
    project.build()
    return {f.line: f.code for f in project.findings(str(models / "paths.py"))}


def test_items_of_a_container_of_leaves_handed_to_a_bases_init_require_grad(tmp_path):
    assert _package(tmp_path) == {16: "IPV006", 39: "IPV006"}


def test_the_simulated_paths_raise_at_backward_and_the_frozen_twin_does_not(tmp_path):
    names = load(BASE + PATHS.replace("from models.base import Model\n", ""))
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["Drift"](0.1).simulate(4).sum().backward()
    out = names["Fixed"](0.1).simulate(4)
    assert not out.requires_grad
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["Direct"]().run(3).sum().backward()


EVIDENCE = '''import torch


def comb(t, f0):
    a = torch.tanh(torch.cos(f0 * t))
    a *= 2
    return a


def solve(od, dictionary):
    A = dictionary
    Q, R = torch.linalg.qr(A)
    rhs = od @ Q
    c = torch.zeros_like(rhs)
    for k in range(3):
        term = (c[..., k + 1:] * R[:, k, k + 1:][:, None, :]).sum(dim=-1)
        c[..., k] = rhs[..., k] - term
    return c


def normalise(gradient):
    gradient = gradient - gradient.min()
    gradient /= gradient.max()
    return gradient


def scale(values):
    values = torch.as_tensor(values)
    std = torch.std(values, dim=0)
    std[std == 0] = 1.0
    return values / std


def scale_copy(values):
    values = torch.tensor(values)
    std = torch.std(values, dim=0)
    std[std == 0] = 1.0
    return values / std
'''


def test_a_parameter_used_as_a_tensor_is_a_guess_and_one_used_as_an_array_is_not():
    assert [(f.code, f.line) for f in analyze_source(EVIDENCE)] == [
        ("IPV006", 6), ("IPV006", 17), ("IPV006", 30)]


def test_the_evidence_cases_raise_with_inputs_that_require_grad_and_the_array_case_runs():
    names = load(EVIDENCE)
    t = torch.linspace(0, 1, 5, requires_grad=True)
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["comb"](t, 2.0).sum().backward()
    d = torch.randn(2, 3, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["solve"](torch.randn(2, 4, 3), d).sum().backward()
    v = torch.randn(4, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["scale"](v).sum().backward()
    import numpy as np
    assert names["normalise"](np.array([1.0, 3.0])).max() == 1.0
    with pytest.raises(RuntimeError, match="does not require grad"):
        names["scale_copy"](v.detach()).sum().backward()


LOCAL = '''import torch


def comb(x: torch.Tensor, gain: torch.Tensor, lag: int):
    y = x.clone()
    y[..., lag:] += gain * y[..., :-lag]
    return y


def fir(x: torch.Tensor, gain: torch.Tensor, size: int):
    y = x.clone()
    t = torch.arange(size, dtype=x.dtype) - size // 2
    f = gain * torch.sinc(t)
    f = torch.flip(f, (-1,))
    for i in range(x.shape[-1] - size):
        y[..., i + size - 1] = (y[..., i:i + size] * f[None, :]).sum() + x[..., i]
    return y


def resid(x: torch.Tensor, code: torch.Tensor):
    R = x.clone()
    z = torch.matmul(R.mT, code)
    R -= 1.0
    return z


def update_atom(dictionary: torch.Tensor, code: torch.Tensor, k: int):
    d_k = dictionary[..., k]
    z_k = code[..., k]
    old = torch.matmul(z_k[..., None], d_k[..., None, :])
    dictionary[..., k] = 0.0
    return old


def update_atom_copy(dictionary: torch.Tensor, code: torch.Tensor, k: int):
    d_k = dictionary[..., k].clone()
    z_k = code[..., k]
    old = torch.matmul(z_k[..., None], d_k[..., None, :])
    dictionary[..., k] = 0.0
    return old


def pick(x: torch.Tensor, k: int = 1):
    evals = torch.linalg.eigvalsh(x.T @ x)
    loss = evals[k - 1]
    loss *= -1
    return loss
'''


def test_copies_reorderings_attribute_views_int_indexes_and_saved_parameters():
    assert [(f.code, f.line) for f in analyze_source(LOCAL)] == [
        ("IPV006", 6), ("IPV006", 16), ("IPV006", 23), ("IPV006", 31), ("IPV006", 46)]


def test_each_local_case_raises_and_the_copy_twin_does_not():
    names = load(LOCAL)
    gain = torch.tensor(0.5, requires_grad=True)
    code = torch.randn(2, 3, 3, requires_grad=True)
    cases = [lambda: names["comb"](torch.randn(2, 6), gain, 2),
             lambda: names["fir"](torch.randn(2, 8), gain, 3),
             lambda: names["resid"](torch.randn(2, 3, 3), code),
             lambda: names["update_atom"](torch.randn(2, 3, 3), code, 1),
             lambda: names["pick"](torch.randn(4, 3, requires_grad=True), 2)]
    for case in cases:
        with pytest.raises(RuntimeError, match=MODIFIED):
            case().sum().backward()
    names["update_atom_copy"](torch.randn(2, 3, 3), code, 1).sum().backward()
    assert code.grad is not None


MOVED = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Proc(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return F.softmax(self.fc(x), dim=-1)


class Agent(nn.Module):
    def __init__(self, d, device="cpu"):
        super().__init__()
        self.proc = Proc(d).to(device)
        self.head = nn.Linear(d, d).to(device)

    def forward(self, x):
        probs = self.proc(x)
        out = probs * 2
        probs.fill_(0)
        logits = self.head(x)
        logits.fill_(0)
        return out, logits
'''


def test_a_module_moved_to_a_device_is_still_its_class():
    assert [(f.code, f.line) for f in analyze_source(MOVED)] == [("IPV006", 24)]
    out, logits = load(MOVED)["Agent"](3)(torch.randn(2, 3))
    with pytest.raises(RuntimeError, match=MODIFIED):
        out.sum().backward()
