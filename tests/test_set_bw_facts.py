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


def _project_findings(root: pathlib.Path, files: dict, path: str) -> list:
    """``files`` (path under ``root`` -> text) written, with an empty ``__init__.py`` in each folder they are in, and
    built as one project: the findings of ``path``."""
    project = Project(DEFAULT_SETTINGS, root)
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        for folder in target.relative_to(root).parents:
            if folder != pathlib.Path("."):
                (root / folder / "__init__.py").touch()
        target.write_text(text)
        project.add_file(str(target), source=text)
    project.build()
    return project.findings(str(root / path))


def _package(root: pathlib.Path) -> dict:
    """BASE and PATHS as ``lib/models/{base,paths}.py``, the package importing its modules as ``models.*``."""
    found = _project_findings(root, {"lib/models/base.py": BASE, "lib/models/paths.py": PATHS}, "lib/models/paths.py")
    return {f.line: f.code for f in found}


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


EINSUM = '''import torch
import torch.nn as nn


def contract(w: torch.Tensor):
    h = torch.zeros(3, 4)
    y = torch.einsum("ij,jk->ik", h, w)
    h += 1
    return y


def contract_sums(w: torch.Tensor):
    h = torch.zeros(3, 4)
    y = torch.einsum("ij,k->", h, w)
    h += 1
    return y


class Cell(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 4)

    def forward(self, n: int):
        h = torch.zeros(n, 4)
        y = h @ self.lstm.weight_hh_l0[:4].T
        h += 1
        return y
'''


def test_einsum_operands_and_a_recurrent_layers_weights():
    """``torch.einsum`` with two operands reads each for the other's gradient, unless a label of one is summed away
    before the product (then the product reads the sum); an LSTM's ``weight_hh_l0`` requires grad."""
    assert [(f.code, f.line) for f in analyze_source(EINSUM)] == [("IPV006", 8), ("IPV006", 27)]
    names = load(EINSUM)
    w = torch.randn(4, 5, requires_grad=True)
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["contract"](w).sum().backward()
    names["contract_sums"](torch.randn(5, requires_grad=True)).backward()
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["Cell"]()(2).sum().backward()


PLAIN = '''import torch


def flip_signs(u, v):
    signs = torch.sign(u[0])
    u *= signs
    v *= signs[:, None]
    return u, v


class PCA:
    def fit(self, X):
        U, S, Vt = torch.linalg.svd(X, full_matrices=False)
        U, Vt = flip_signs(U, Vt)
        self.components = Vt
        return self


def pca(X):
    U, S, Vt = torch.linalg.svd(X, full_matrices=False)
    return flip_signs(U, Vt)
'''


def test_a_plain_classs_guess_handed_to_a_helper_is_decided_as_in_the_method(tmp_path):
    """``U, S, Vt = torch.linalg.svd(X)`` in a plain class's method is a guess about ``X`` that nothing backs: written by
    the method it is not reported, and handed to a helper that writes it neither (TALENT's ``TorchPCA``, set BX);
    the same from a free function is (its callers, or a user, may pass an ``X`` that requires grad)."""
    found = _project_findings(tmp_path, {"pk/m.py": PLAIN}, "pk/m.py")
    assert [(f.line, f.code) for f in found] == [(6, "IPV006"), (7, "IPV006")]
    assert all("passed by the call at line 21" in f.message for f in found)
    names = load(PLAIN)
    X = torch.randn(4, 3, requires_grad=True)
    u, vt = names["pca"](X)
    with pytest.raises(RuntimeError, match=MODIFIED):
        (u.sum() + vt.sum()).backward()
    assert names["PCA"]().fit(torch.randn(4, 3)).components.shape == (3, 3)


FROZEN = '''import torch
import torch.nn as nn


class Listed(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.ParameterList([nn.Parameter(torch.ones(3))])
        for p in self.w:
            p.requires_grad_(False)

    def forward(self, n: int):
        h = torch.ones(n)
        y = h * self.w[0]
        h += 1
        return y


class Base:
    def __init__(self, params):
        self.params = params
        for v in self.params.values():
            v.requires_grad_(False)


class Frozen(Base):
    def __init__(self):
        super().__init__({"mu": torch.tensor(0.1, requires_grad=True)})

    def step(self, n: int):
        h = torch.ones(n)
        y = h * self.params["mu"]
        h += 1
        return y


class Keeps:
    def __init__(self, params):
        self.params = params


class Detached(Keeps):
    def __init__(self):
        params = {"mu": torch.tensor(0.1, requires_grad=True)}
        super().__init__(params)
        self.params = {k: v.detach() for k, v in params.items()}

    def step(self, n: int):
        h = torch.ones(n)
        y = h * self.params["mu"]
        h += 1
        return y


class Explicit(Keeps):
    def __init__(self):
        Keeps.__init__(self, [torch.nn.Parameter(torch.ones(3)) for _ in range(2)])

    def step(self, n: int):
        h = torch.ones(n, 3)
        y = h * self.params[0]
        h += 1
        return y


def pick(x: torch.Tensor, k: int = 1):
    k = torch.tensor([k, k])
    evals = torch.linalg.eigvalsh(x.T @ x)
    loss = evals[k - 1]
    loss *= -1
    return loss
'''


def test_an_adversarial_reviews_frozen_containers_rebound_ints_and_explicit_base_inits():
    """Set BW's facts, broken by a review (/tmp/REV23, every probe executed): a container frozen in ``__init__`` (or by
    the base that stores it), a subclass that binds the attribute again after ``super().__init__``, an ``int``
    parameter bound to a tensor (its index is advanced indexing, a copy) are not reported; ``Base.__init__(self,
    [...])`` of a list comprehension of parameters is."""
    assert [(f.code, f.line) for f in analyze_source(FROZEN)] == [("IPV006", 62)]
    names = load(FROZEN)
    assert not names["Listed"]()(3).requires_grad
    assert not names["Frozen"]().step(3).requires_grad
    assert not names["Detached"]().step(3).requires_grad
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["Explicit"]().step(2).sum().backward()
    names["pick"](torch.randn(4, 3, requires_grad=True), 2).sum().backward()


def test_a_vendored_copy_deeper_down_is_not_the_package_an_import_names(tmp_path):
    """``from mylayers.act import Act`` in ``app/net.py`` with a copy at ``app/third_party/mylayers/act.py``: an
    installed ``mylayers`` runs, not the copy (only a top-level package's folder on ``sys.path`` is taken)."""
    files = {"app/net.py": NET, "app/third_party/mylayers/act.py": ACT}
    assert _project_findings(tmp_path, files, "app/net.py") == []


NET = '''import torch
import torch.nn as nn
from mylayers.act import Act


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = Act()
        self.w = nn.Parameter(torch.ones(3))

    def forward(self, n: int):
        p = self.act(self.w * torch.ones(n, 3))
        y = p * 2
        p.fill_(0)
        return y
'''
ACT = '''import torch
import torch.nn as nn


class Act(nn.Module):
    def forward(self, x):
        return torch.softmax(x, -1)
'''


LAST_PASS = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x, bias: float):
        for n, layer in enumerate(self.layers):
            x = layer(x)
            if n < len(self.layers) - 1:
                x = F.relu(x)
        x[:, 0] += bias
        return x


class Every(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x, bias: float):
        for i in range(len(self.layers)):
            x = self.layers[i](x)
            if i != len(self.layers):
                x = F.relu(x)
        x[:, 0] += bias
        return x
'''


LAST_PASS_FORMS = '''import torch
import torch.nn as nn


class Else(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x, bias: float):
        for n, layer in enumerate(self.layers):
            x = layer(x)
            if n == len(self.layers) - 1:
                pass
            else:
                x = torch.sigmoid(x)
        x[:, 0] += bias
        return x


class Flipped(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x, bias: float):
        for n, layer in enumerate(self.layers):
            x = layer(x)
            if len(self.layers) - 1 > n:
                x = torch.sigmoid(x)
        x[:, 0] += bias
        return x


class OnlyLast(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x, bias: float):
        for n, layer in enumerate(self.layers):
            x = layer(x)
            if n == len(self.layers) - 1:
                x = torch.sigmoid(x)
        x[:, 0] += bias
        return x
'''


def test_the_last_pass_in_its_other_forms():
    """``if n == len(S) - 1: pass`` with the activation in the ``else``, and ``len(S) - 1 > n``, leave the last layer's
    output past the loop (a second review's false reports); an activation only on the last pass reaches it."""
    assert [(f.code, f.line) for f in analyze_source(LAST_PASS_FORMS)] == [("IPV006", 45)]
    names = load(LAST_PASS_FORMS)
    for cls in ("Else", "Flipped"):
        names[cls]()(torch.randn(2, 4), 1.0).sum().backward()
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["OnlyLast"]()(torch.randn(2, 4), 1.0).sum().backward()


def test_an_arm_the_counter_rules_out_on_the_last_pass_does_not_reach_past_the_loop():
    """``if n < len(self.layers) - 1: x = F.relu(x)`` runs on every pass but the last: past the loop ``x`` is the last
    layer's output, which ``Linear`` does not save (TALENT's HyperFast network, set BX); a test that holds on the last
    pass too (``i != len(S)``) leaves the activation's output there."""
    assert [(f.code, f.line) for f in analyze_source(LAST_PASS)] == [("IPV006", 30)]
    names = load(LAST_PASS)
    names["Head"]()(torch.randn(2, 4), 1.0).sum().backward()
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["Every"]()(torch.randn(2, 4), 1.0).sum().backward()


DISPATCH = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Base(nn.Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def _forward(self, x):
        raise NotImplementedError

    def _forward_inplace(self, x):
        raise NotImplementedError

    def forward(self, x):
        return self._forward_inplace(x) if self.inplace else self._forward(x)


class Shifted(Base):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.alpha = nn.Parameter(torch.ones(1))

    def _forward(self, x):
        if self.inplace:
            y = x * self.alpha
            s = torch.sin(y)
            y.mul_(2)
            return y * s
        return self.alpha * F.relu(x)

    def _forward_inplace(self, x):
        y = x * self.alpha
        s = torch.sin(y)
        y.mul_(2)
        return y * s


class Direct(nn.Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace
        self.alpha = nn.Parameter(torch.ones(1))

    def forward(self, x):
        if self.inplace:
            F.relu_(x)
            x.mul_(self.alpha)
            return x
        return self.alpha * F.relu(x)
'''


def test_an_arm_the_base_classs_dispatch_rules_out_is_dead(tmp_path):
    """``forward`` runs ``_forward`` only when ``self.inplace`` is false: its ``if self.inplace:`` arm never runs
    (torch-activation, set BY); ``_forward_inplace``'s writes and a module that tests its own flag are reported."""
    found = _project_findings(tmp_path, {"pk/m.py": DISPATCH}, "pk/m.py")
    assert [(f.line, f.code) for f in found] == [(37, "IPV006"), (50, "IPV006")]
    names = load(DISPATCH)
    x = torch.randn(4, requires_grad=True)
    names["Shifted"]()(x * 1).sum().backward()
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["Shifted"](inplace=True)(x * 1).sum().backward()
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["Direct"](inplace=True)(x * 1).sum().backward()


SAVED_HERE = '''import torch
import torch.nn as nn


class Isru(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Parameter(torch.ones(1))

    def forward(self, z):
        z.div_(torch.sqrt(1 + self.a * z ** 2))
        return z


class IsruCopy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Parameter(torch.ones(1))

    def forward(self, z):
        return z / torch.sqrt(1 + self.a * z ** 2)
'''


def test_a_modules_input_saved_by_its_own_op_then_written_is_reported_under_its_guess(tmp_path):
    """``z ** 2`` saves ``z``; ``z.div_(...)`` then makes the backward raise when ``z`` requires grad, as an
    activation does: no call decides it, and a module's ``forward`` keeps the guess (torch-activation's ISRU and MEF
    with ``inplace=True``, set BY)."""
    found = _project_findings(tmp_path, {"pk/m.py": SAVED_HERE}, "pk/m.py")
    assert [(f.line, f.code) for f in found] == [(11, "IPV006")]
    assert "(it does when `z` requires grad)" in found[0].message
    names = load(SAVED_HERE)
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["Isru"]()(x * 1).sum().backward()
    names["IsruCopy"]()(x * 1).sum().backward()
