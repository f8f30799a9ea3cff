"""Facts from set CI (twenty-seventh session), each executed under torch.

- ``out = coords.clone()`` of a parameter annotated ``Tensor`` is a tensor computed from it, as ``coords * 1`` is: it
  requires grad when a caller passes one that does, so an op whose backward reads it (``out.clamp``, ``torch.log``)
  saved it, and a later write to it raises at backward (a guess the callers decide). A basic view of such a local read
  by the op (``out[..., 0, :].clamp(-1, 1)``) shares its storage and version counter: writing ``out`` afterwards raises
  too (pararnn's ``slstm_clamp_log_coords`` shape, set BZ). An index by a mask reads a copy: no finding. A clone of a
  parameter nothing says is a tensor (a NumPy array has no ``clone``, but another library's object may) is not taken.
- A parameter whose default is a number or a bool literal (``enable_time=True``, ``scale=1.0``) holds a number when a
  caller leaves it or passes one on: ``enable_time &= is_video`` rebinds, it writes nothing a caller sees (zetascale's
  space-time U-Net, set CI: five false IPV007 before). A parameter with no default written by ``x += b`` still is a
  write the caller sees.
"""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

SAVED_ERROR = "modified by an inplace operation"

CLAMPED = '''import torch


def clamp_first(coords: torch.Tensor):
    out = coords.clone()
    out[..., 0, :] = out[..., 0, :].clamp(-1, 1)
    return out


def clamp_then_zero(coords: torch.Tensor):
    out = coords.clone()
    low = out.clamp(-1, 1)
    out[0] = 0
    return out, low


def masked(coords: torch.Tensor, keep: torch.Tensor):
    out = coords.clone()
    low = out[keep].clamp(-1, 1)
    out[0] = 0
    return out, low


def unannotated(coords):
    out = coords.clone()
    low = out.clamp(-1, 1)
    out[0] = 0
    return out, low
'''


def test_a_clone_of_a_tensor_parameter_saved_by_an_op_then_written_is_reported():
    findings = analyze_source(CLAMPED)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 6, 4), ("IPV006", 13, 4)]
    assert findings[0].message == (
        "item assignment writes in place to `out`, which `out[..., 0, :].clamp` (line 6) saved for backward as its "
        "input: the backward raises (it does when `coords` requires grad)")
    assert findings[1].message.startswith("item assignment writes in place to `out`, which `out.clamp` (line 12) saved")
    mod = load(CLAMPED)
    for name in ("clamp_first", "clamp_then_zero"):
        coords = torch.randn(3, 2, 2, requires_grad=True)
        result = mod[name](coords)
        loss = sum(t.sum() for t in result) if isinstance(result, tuple) else result.sum()
        with pytest.raises(RuntimeError, match=SAVED_ERROR):
            loss.backward()
    # without grad nothing is saved: the same calls run and give the clamped values
    coords = torch.randn(3, 2, 2)
    assert torch.equal(mod["clamp_first"](coords)[..., 0, :], coords[..., 0, :].clamp(-1, 1))


def test_a_mask_index_reads_a_copy_and_the_write_is_legal():
    mod = load(CLAMPED)
    coords = torch.randn(3, 2, 2, requires_grad=True)
    keep = torch.tensor([False, True, True])
    out, low = mod["masked"](coords, keep)
    (out.sum() + low.sum()).backward()  # runs: `out[keep]` is a copy, not a view autograd saved
    assert torch.equal(coords.grad[1:], torch.ones(2, 2, 2) + ((coords[1:] > -1) & (coords[1:] < 1)).float())
    out, low = mod["unannotated"](torch.randn(3, 2, 2, requires_grad=True))
    with pytest.raises(RuntimeError, match=SAVED_ERROR):  # a tensor passed raises: the guess is left, not found
        (out.sum() + low.sum()).backward()


FLAGS = '''import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, enable_time=True):
        is_video = x.ndim == 5
        enable_time &= is_video
        return self.lin(x) if enable_time else x


class Scaled(nn.Module):
    def forward(self, x, scale=1.0):
        scale *= 2
        return x * scale


class AddBias(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.ones(4))

    def forward(self, x):
        x += self.bias
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Block()
        self.b = Block()
        self.c = Scaled()
        self.d = AddBias()

    def forward(self, x, enable_time=True, scale=1.0):
        x = self.a(x, enable_time=enable_time)
        x = self.b(x, enable_time=enable_time)
        x = self.c(x, scale=scale)
        x = self.c(x, scale=scale)
        return x

    def shortcut(self, h):
        y = self.d(h)
        return h + y
'''


def test_an_augmented_assignment_on_a_number_default_is_no_write_a_caller_sees():
    assert [(f.code, f.line, f.col) for f in analyze_source(FLAGS)] == [("IPV007", 48, 12)]
    mod = load(FLAGS)
    net = mod["Net"]()
    x = torch.randn(2, 4)
    flag, scale = True, 1.0
    out = net(x, enable_time=flag, scale=scale)
    assert flag is True and scale == 1.0  # the callers' values are what they passed
    assert torch.allclose(out, x * 4)  # 2-D input: no time block; each Scaled doubles
    h = torch.zeros(2, 4)
    assert torch.equal(net.shortcut(h), torch.full((2, 4), 2.0))  # `h` was changed by the call: 1 + 1, not 0 + 1


LINEAR_ATTENTION = '''import torch
from torch import nn
from einops import rearrange


class LinearAttention(nn.Module):
    def __init__(self, dim, heads=2):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)

    def forward(self, x, mask=None):
        h = self.heads
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = map(lambda t: rearrange(t, "b n (h d) -> (b h) n d", h=h), (q, k, v))
        q, k = q.softmax(dim=-1), k.softmax(dim=-2)
        if mask is not None:
            k.masked_fill_(mask, 0.)
        context = torch.einsum("b n d, b n e -> b d e", q, k)
        return torch.einsum("b d e, b n d -> b n e", context, v)


class Swapped(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.to_qk = nn.Linear(dim, dim * 2, bias=False)

    def forward(self, x, mask):
        q, k = self.to_qk(x).chunk(2, dim=-1)
        k, q = map(lambda t: t.softmax(dim=-1), (q, k))
        k.masked_fill_(mask, 0.)
        return q * k
'''


def test_names_unpacked_from_a_map_of_a_lambda_get_the_body_on_each_item():
    findings = analyze_source(LINEAR_ATTENTION)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 18, 12), ("IPV006", 31, 8)]
    assert findings[0].message == ("`masked_fill_` writes in place to `k`, `k.softmax(dim=-2)`, whose output autograd "
                                   "saves for backward; backward raises when `mask is not None`")
    assert findings[1].message.startswith("`masked_fill_` writes in place to `k`, `q.softmax(dim=-1)`")
    mod = load(LINEAR_ATTENTION)
    torch.manual_seed(0)
    layer = mod["LinearAttention"](8)
    x = torch.randn(2, 5, 8)
    layer(x).sum().backward()  # no mask: nothing written
    mask = torch.zeros(4, 5, 4, dtype=torch.bool)
    mask[:, 0] = True
    with pytest.raises(RuntimeError, match=SAVED_ERROR):
        layer(x, mask).sum().backward()
    swapped = mod["Swapped"](4)
    with pytest.raises(RuntimeError, match=SAVED_ERROR):
        swapped(torch.randn(3, 4), torch.tensor([True, False, False, False])).sum().backward()


RECEIVER = '''import torch


def reciprocal(self, iters=3):
    """Attached to an encrypted tensor class as a method: `self` is that class's instance."""
    if self.sign() is None:
        return None
    result = 3 * (1 - 2 * self).exp() + 0.003
    for _ in range(iters):
        result += result - result.square().mul_(self)
    return result


def reciprocal_of(x, iters=3):
    if x.sign() is None:
        return None
    result = 3 * (1 - 2 * x).exp() + 0.003
    for _ in range(iters):
        result += result - result.square().mul_(x)
    return result
'''


def test_the_self_of_a_function_outside_a_class_is_no_guess_of_a_tensor():
    # the same body on a parameter used as a tensor is a guess its callers decide; on `self` of a function
    # attached to a class elsewhere (crypten's approximations on its encrypted tensor, set CI) it is not
    assert [(f.code, f.line, f.col) for f in analyze_source(RECEIVER)] == [("IPV006", 19, 8)]
    mod = load(RECEIVER)
    x = (torch.rand(4) + 0.5).requires_grad_()
    with pytest.raises(RuntimeError, match=SAVED_ERROR):  # with a torch tensor the guess holds
        mod["reciprocal_of"](x).sum().backward()


RETRY = '''import torch


def flagged(H: torch.Tensor, n: int):
    err = True
    while err:
        try:
            H1 = torch.linalg.cholesky(H)
            H = H1
            err = False
        except RuntimeError:
            H[n - 1] = torch.eye(n)[n - 1]
    return H


def broken_out(H: torch.Tensor, n: int):
    while True:
        try:
            H = torch.linalg.cholesky(H)
            break
        except RuntimeError:
            H[n - 1] = torch.eye(n)[n - 1]
    return H


def raised_after(H: torch.Tensor, check):
    try:
        H = torch.linalg.cholesky(H)
        check(H)
    except RuntimeError:
        H[0] = 0
    return H


def written_after(H: torch.Tensor):
    err = True
    while err:
        try:
            H = torch.linalg.cholesky(H)
            err = False
        except RuntimeError:
            H = H + torch.eye(H.shape[-1])
    H[0] = 0
    return H
'''


def test_a_handler_starts_before_the_statement_that_raised_and_a_pass_that_leaves_reaches_only_the_exit():
    findings = analyze_source(RETRY)
    # the handlers of `flagged` and `broken_out` write only the matrix given; the factor reaches the handler
    # of `raised_after` (`check` may raise after it was bound) and the write after `written_after`'s loop
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 31, 8), ("IPV006", 43, 4)]
    assert all("`torch.linalg.cholesky(H)`, whose output autograd saves" in f.message for f in findings)
    mod = load(RETRY)
    for name in ("flagged", "broken_out"):
        bad = torch.tensor([[1.0, 2.0], [2.0, 1.0]], requires_grad=True)  # not positive-definite: one retry
        H = bad.clone()
        out = mod[name](H, 2)
        out.sum().backward()  # runs: the handler wrote the clone it was given, nothing autograd saved
        assert torch.equal(out, torch.eye(2))  # the retry factored [[1, 2], [0, 1]], whose lower half is I

    def check(factor):
        raise RuntimeError("rejected")
    for name, args in (("raised_after", (check,)), ("written_after", ())):
        H = (torch.eye(2) * 4).requires_grad_()
        with pytest.raises(RuntimeError, match=SAVED_ERROR):
            mod[name](H, *args).sum().backward()


CG = '''import torch
from torch import Tensor
from typing import Optional


def solve(A, D_inv, b: Tensor, n: int, x0: Optional[Tensor] = None):
    def cg_iterations(x, r, z, p, rz_old, Ap, iters):
        for _ in range(iters):
            torch.mv(A, p, out=Ap)
            alpha = rz_old / torch.vdot(p, Ap)
            x.add_(p, alpha=alpha)
            r.add_(Ap, alpha=-alpha)
            torch.mul(D_inv, r, out=z)
            rz_new = torch.vdot(r, z)
            p.mul_(rz_new / rz_old)
            p.add_(z)
            rz_old = rz_new
        return x, r, z, p, rz_old

    if x0 is None:
        x = torch.zeros(n)
        r = b.clone()
    else:
        x = x0.clone()
        r = b - A @ x
    z = D_inv * r
    p = z.clone()
    Ap = torch.zeros(n)
    rz_old = torch.vdot(r, z)
    x, r, z, p, rz_old = cg_iterations(x, r, z, p, rz_old, Ap, 3)
    return x
'''


def test_a_clone_keeps_the_history_an_out_call_then_raises_on():
    # `p = z.clone()` requires grad when `z` does: with `b` requiring grad the helper's `torch.mv(A, p, out=Ap)`
    # raises in the forward, before the writes the saved `r` and `z` would make fail (torch-sla's compiled CG, set BZ)
    assert analyze_source(CG) == []
    mod = load(CG)
    A = torch.tensor([[4.0, 1.0], [1.0, 3.0]])
    D_inv = 1 / torch.diagonal(A)
    b = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation"):
        mod["solve"](A, D_inv, b, 2)
    x = mod["solve"](A, D_inv, b.detach(), 2)
    assert torch.allclose(A @ x, b.detach(), atol=1e-5)


REGISTRY = '''import torch
from torch import nn

REGISTRY = {"torch": nn.Linear}
MANY = {"linear": nn.Linear, "identity": nn.Identity}


class Block(nn.Module):
    def __init__(self, dim, kind="torch"):
        super().__init__()
        self.fc = REGISTRY[kind](dim, dim)

    def forward(self, x):
        h = x * 2
        y = self.fc(h)
        h.add_(1)
        return y


class Either(nn.Module):
    def __init__(self, dim, kind="linear"):
        super().__init__()
        self.fc = MANY[kind](dim, dim) if kind == "linear" else MANY[kind]()

    def forward(self, x):
        h = x * 2
        y = self.fc(h)
        h.add_(1)
        return y
'''


def test_a_layer_built_from_a_table_of_one_class_is_that_class():
    # `self.fc = REGISTRY[kind](dim, dim)` with `REGISTRY = {"torch": nn.Linear}`: an `nn.Linear`, which saves its
    # input for its weight's gradient (zetascale's `FC_CLASS_REGISTRY`, set CI); a table of two classes says nothing
    findings = analyze_source(REGISTRY)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 16, 8)]
    assert "`self.fc(...)` (`nn.Linear`, line 15) saved for backward" in findings[0].message
    mod = load(REGISTRY)
    x = torch.randn(2, 4)  # no grad needed on the input: the weight's gradient reads `h`
    with pytest.raises(RuntimeError, match=SAVED_ERROR):
        mod["Block"](4)(x).sum().backward()
    with pytest.raises(RuntimeError, match=SAVED_ERROR):  # the same with the table's Linear: left unknown, unfound
        mod["Either"](4)(x).sum().backward()


def test_a_table_of_classes_another_module_imports_says_nothing(tmp_path, monkeypatch):
    # the second review's r02 (/work/notes/s27/review2.md): `plugins.py` replaces the table's class with one whose
    # forward saves nothing; the table, imported there, is no evidence of an `nn.Linear`
    import importlib
    import sys

    from inplace_lint.analysis.project import Project
    from inplace_lint.config import DEFAULT_SETTINGS
    layers = REGISTRY.split("\n\nclass Either")[0] + "\n"
    plugins = '''import torch
from torch import nn

from .layers import REGISTRY


class FrozenLinear(nn.Module):
    def __init__(self, dim, dim2):
        super().__init__()
        self.register_buffer("w", torch.randn(dim2, dim))

    def forward(self, x):
        return x @ self.w.t()


REGISTRY["torch"] = FrozenLinear
'''
    pkg = tmp_path / "regpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "layers.py").write_text(layers)
    (pkg / "plugins.py").write_text(plugins)
    project = Project(DEFAULT_SETTINGS, tmp_path)
    for path in sorted(pkg.glob("*.py")):
        project.add_file(str(path), source=path.read_text())
    project.build()
    assert project.findings(str(pkg / "layers.py")) == []
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("regpkg.plugins", "regpkg.layers", "regpkg"):
        sys.modules.pop(name, None)
    importlib.import_module("regpkg.plugins")
    block = importlib.import_module("regpkg.layers").Block(4)
    block(torch.randn(2, 4, requires_grad=True)).sum().backward()  # runs: the frozen layer saved nothing
