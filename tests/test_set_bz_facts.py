"""Facts from the twenty-fourth session (the diagnoses of sets BM-BV's misses, and set BZ), each executed under torch.

- ``x.new_empty(...)`` (``new_zeros``, ``new_ones``, ``new_full``, ``new_tensor``) is a factory's tensor, as
  ``torch.empty(...)`` is: a view of it saved for another input's gradient, then written, makes the backward raise.
- ``x[..., :k, :]`` or ``x[:, :k]`` handed to a layer proves ``x`` a tensor (a list takes no tuple index), so the
  layer saved ``x``'s storage; ``x[-1]`` may be a list's item and proves nothing.
- A module's ``forward`` whose only in-project calls are its own class's ``self.forward(...)`` under ``torch.no_grad()``
  is not grad-off: ``nn.Module.__call__`` runs it wherever the module is called; a private helper called only there is.
"""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

MODIFIED = "modified by an inplace operation"

NEW_EMPTY = '''import torch


def basis(x: torch.Tensor):
    n = x.shape[-1]
    out = x.new_empty(x.shape[0], 1 << n)
    out[..., 0] = 1
    size = 1
    for k in range(n):
        prev = out[..., :size]
        out[..., 1:2 * size:2] = prev * x[..., k].unsqueeze(-1)
        size *= 2
    return out


def pair(x: torch.Tensor):
    out = x.new_zeros(x.shape[0], 2)
    out[..., 0] = 1
    out[..., 1] = x[..., 0] * x[..., 1]
    return out
'''


def test_a_factory_method_makes_a_tensor_here_whose_saved_view_a_write_breaks():
    found = analyze_source(NEW_EMPTY)
    assert [(f.code, f.line, f.col) for f in found] == [("IPV006", 11, 8)]
    assert "`prev * x[..., k].unsqueeze(-1)` (line 11) saved for backward" in found[0].message


def test_the_factory_method_case_raises_and_its_twin_runs():
    names = load(NEW_EMPTY)
    x = torch.rand(3, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["basis"](x).sum().backward()
    names["pair"](x).sum().backward()
    assert x.grad is not None


SLICED = '''import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.norm = nn.Identity()

    def forward(self, x):
        x = self.norm(x)
        h = self.lin(x[..., :3, :])
        x.mul_(2)
        return h

    def last(self, xs):
        xs = self.norm(xs)
        h = self.lin(xs[-1])
        xs.mul_(2)
        return h
'''


def test_a_sliced_tuple_index_proves_the_layer_saved_the_names_storage():
    found = analyze_source(SLICED)
    assert [(f.code, f.line, f.col) for f in found] == [("IPV006", 14, 8)]
    assert "`self.lin(...)` (`nn.Linear`, line 13) saved for backward" in found[0].message


def test_the_sliced_input_raises_at_backward():
    net = load(SLICED)["Net"](4)
    with pytest.raises(RuntimeError, match=MODIFIED):
        net(torch.rand(5, 4)).sum().backward()


FORWARD = '''import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        y = self.lin(x)
        x.mul_(2)
        return y

    def predict(self, x):
        with torch.no_grad():
            return self.forward(x)


class Twin(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def _body(self, x):
        y = self.lin(x)
        x.mul_(2)
        return y

    def predict(self, x):
        with torch.no_grad():
            return self._body(x)

    def forward(self, x):
        return self.lin(x)
'''


def test_a_forward_called_under_no_grad_only_by_its_own_class_is_still_called_with_grad():
    found = analyze_source(FORWARD)
    assert [(f.code, f.line, f.col) for f in found] == [("IPV006", 12, 8)]


def test_the_forward_raises_when_the_module_is_called_and_the_helper_under_no_grad_runs():
    names = load(FORWARD)
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["Net"](3)(torch.rand(2, 3)).sum().backward()
    twin = names["Twin"](3)
    assert not twin.predict(torch.rand(2, 3)).requires_grad


ADVANCED = '''import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.norm = nn.Identity()
        self.register_buffer("rows", torch.tensor([0, 2]))

    def forward(self, x):
        x = self.norm(x)
        x[self.rows, :] = self.lin(x[self.rows, :])
        return x
'''


def test_an_index_that_may_be_advanced_copies_and_proves_nothing_saved():
    assert analyze_source(ADVANCED) == []
    net = load(ADVANCED)["Net"](4)
    x = torch.rand(3, 4)
    net(x).sum().backward()
    assert net.lin.weight.grad is not None


# An in-place activation saves its output only when its input may require grad, as the out-of-place one does; the
# grad-CAM maps of cg-gnn are built from hooked `.data`, so nothing was saved (set BZ).
CAM = '''import torch
import torch.nn.functional as F


class CAM:
    def __init__(self):
        self.acts = []

    @staticmethod
    def _normalize(cams):
        cams -= cams.min(0).values
        cams /= cams.max(0).values + 1e-8
        return cams

    def __call__(self, weights):
        maps = (weights * torch.stack(self.acts, dim=1)).sum(dim=1)
        maps = F.relu(maps, inplace=True)
        return self._normalize(maps)


def scale(h: torch.Tensor, w: torch.Tensor):
    out = F.relu(h @ w, inplace=True)
    out /= out.max()
    return out
'''


def test_an_inplace_activation_of_an_input_nothing_says_requires_grad_saved_nothing():
    assert [(f.code, f.line, f.col) for f in analyze_source(CAM)] == [("IPV006", 23, 4)]


def test_the_map_of_data_normalises_and_the_activation_of_a_grad_input_raises():
    names = load(CAM)
    cam = names["CAM"]()
    cam.acts = [torch.rand(3), torch.rand(3)]
    assert cam(torch.rand(2)).max() <= 1.0
    w = torch.rand(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["scale"](torch.rand(3, 2), w).sum().backward()


# `self.helper(...)` of a method the class defines is no submodule's activation: its summary says what it returns
# (diffusionism's schedules, set BZ: arithmetic of schedule methods was taken to require grad); and what is computed
# from a parameter annotated `int` is no guess about it (a number never requires grad).
SCHEDULE = '''import torch
import torch.nn as nn


class Schedule(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("betas", torch.linspace(1e-4, 0.02, 10))

    def level(self, t: int):
        return self.betas[t] * 2

    def variance(self, t: int):
        v = torch.sqrt(self.level(t) + 1)
        v.square_()
        return v


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(2, 2)

    def forward(self, x):
        h = torch.sigmoid(self.net(x))
        h.square_()
        return h
'''


def test_a_method_of_the_class_is_not_taken_for_a_submodules_activation():
    assert [(f.code, f.line, f.col) for f in analyze_source(SCHEDULE)] == [("IPV006", 26, 8)]


def test_the_schedule_runs_and_the_submodules_saved_output_raises():
    names = load(SCHEDULE)
    assert float(names["Schedule"]().variance(3)) > 1.0
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["Model"]()(torch.rand(1, 2)).sum().backward()


# Two shapes the fix-safety cases of tests/test_rebound_parameter.py once used as vehicles: an in-place activation of a
# mapping's item and of a submodule's buffer. Nothing says either requires grad (a buffer never does), so nothing was
# saved and the later write is no finding; both run forward and backward.
UNTRACKED_INPUTS = '''import torch
import torch.nn as nn
import torch.nn.functional as F


def gate(z, batch):
    g = torch.sigmoid_(batch["gate"])
    g.mul_(2)
    return z * g


class Sub(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("h", torch.ones(3))


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = Sub()
        self.w = nn.Parameter(torch.ones(3))

    def forward(self):
        m = self.sub
        y = F.relu(m.h, inplace=True)
        y.mul_(2)
        return y * self.w
'''


def test_an_inplace_activation_of_an_item_or_a_buffer_saved_nothing():
    assert analyze_source(UNTRACKED_INPUTS) == []
    names = load(UNTRACKED_INPUTS)
    z = torch.ones(3, requires_grad=True)
    names["gate"](z, {"gate": torch.zeros(3)}).sum().backward()
    assert torch.equal(z.grad, torch.ones(3))
    m = names["M"]()
    m().sum().backward()
    assert torch.equal(m.w.grad, torch.full((3,), 2.0))


# philtorch's `polydiv` (set BZ): `r = u.clone()` written after `scale * r[..., k]` saved a view of it for the divisor's
# gradient (a binding of `r` below the loop cannot reach the loop), and its in-project caller hands it the filter's
# coefficients padded, `F.pad(a, (1, 0))`: a guess about the caller's own parameter, which the caller's callers decide.
# A tuple of floats computed from a parameter and unpacked by the callee is no tensor's rows (dagua's layout box).
POLYDIV = '''import torch
import torch.nn.functional as F


def polydiv(u: torch.Tensor, v: torch.Tensor):
    m = u.size(-1) - 1
    n = v.size(-1) - 1
    scale = v[..., 0].reciprocal()
    r = u.clone()
    q = []
    for k in range(0, m - n + 1):
        d = scale * r[..., k]
        q.append(d)
        r[..., k: k + n + 1] -= d.unsqueeze(-1) * v
    r = r[..., m - n + 1:]
    return torch.stack(q, dim=-1), r


def split_filter(b, a):
    return polydiv(b, F.pad(a, (1, 0), value=1.0))


def adjust(points, corner, length):
    down_x, down_y = corner
    for p in points:
        if p[0] < down_x:
            down_x -= 2.0
        if p[1] < down_y:
            down_y -= 2.0
    return length, (down_x, down_y)


def box(points, length, scale):
    return adjust(points, (scale * -1.0, scale * -1.0), length)
'''


def test_a_clone_written_after_its_view_was_saved_and_a_caller_handing_on_its_parameter():
    found = analyze_source(POLYDIV)
    assert [(f.code, f.line, f.col) for f in found] == [("IPV006", 14, 8)]
    assert "(it does when `v` requires grad)" in found[0].message


def test_the_division_raises_when_the_divisor_requires_grad_and_the_box_runs():
    names = load(POLYDIV)
    a = torch.tensor([0.5], requires_grad=True)
    with pytest.raises(RuntimeError, match=MODIFIED):
        q, r = names["split_filter"](torch.tensor([1.0, 2.0, 3.0, 4.0]), a)
        (q.sum() + r.sum()).backward()
    q, r = names["split_filter"](torch.tensor([1.0, 2.0, 3.0, 4.0]), a.detach())
    assert not q.requires_grad
    assert names["box"]([[-5.0, 1.0]], 4.0, 1.0) == (4.0, (-3.0, -1.0))


# diffusionism's schedules (set BZ): a coefficient looked up at the timesteps, `torch.gather(table, 0, t)`, is no value
# computed from `t` (an index operand is an integer tensor, never differentiable), and what `self.noise_scale(x, t)`
# returns is what that method's summary says, not a value computed from `x` and `t`: neither is a guess about `t`.
LOOKUP = '''import torch
import torch.nn as nn


def extract(v, t, shape):
    out = torch.gather(v, index=t, dim=0).float()
    return out.view([t.shape[0]] + [1] * (len(shape) - 1))


class Schedule(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("sigmas", torch.linspace(0.1, 1.0, 10))

    def noise_scale(self, x: torch.Tensor, t: torch.Tensor):
        return extract(self.sigmas, t, x.shape)

    def variance(self, x: torch.Tensor, t: torch.Tensor):
        v = torch.sqrt(self.noise_scale(x, t))
        v.square_()
        return v

    def drift(self, x: torch.Tensor, t: torch.Tensor):
        v = torch.sqrt(t * 2.0)
        v.square_()
        return v * x
'''


def test_a_lookup_at_an_index_and_a_methods_result_are_no_guess_about_the_index():
    found = analyze_source(LOOKUP)
    assert [(f.code, f.line, f.col) for f in found] == [("IPV006", 25, 8)]


def test_the_lookup_runs_with_grad_and_the_value_computed_from_t_raises_when_t_requires_grad():
    schedule = load(LOOKUP)["Schedule"]()
    x = torch.ones(3, 2, requires_grad=True)
    t = torch.tensor([1, 4, 9])
    (schedule.variance(x, t) * x).sum().backward()
    assert x.grad is not None
    with pytest.raises(RuntimeError, match=MODIFIED):
        schedule.drift(x, torch.rand(3, 1, requires_grad=True)).sum().backward()


# torchflint's `invert_` (set CA): `amin`/`amax` come from `try: from torch import amin, amax` with a fallback `def`
# under `except ImportError:` that runs only on an older torch, so they are torch's, which save their input and output;
# and a parameter an op saved lines before it is written in place is reported under its guess, as one saved and
# written on one line was.
INVERT = '''import torch
from torch import Tensor

try:
    from torch import amin, amax
except ImportError:
    def amin(input, dim=None, keepdim=False):
        return input.min()

    def amax(input, dim=None, keepdim=False):
        return input.max()


def invert_(input: Tensor, dim=None) -> Tensor:
    min_values = amin(input, dim=dim, keepdim=True)
    max_values = amax(input, dim=dim, keepdim=True)
    return input.neg_().add_(max_values.add_(min_values))


def invert(input: Tensor, dim=None) -> Tensor:
    min_values = amin(input, dim=dim, keepdim=True)
    max_values = amax(input, dim=dim, keepdim=True)
    return max_values - input + min_values
'''


def test_a_try_import_is_the_name_and_a_parameter_saved_lines_before_its_write_is_reported():
    found = analyze_source(INVERT)
    assert [(f.code, f.line, f.col) for f in found] == [("IPV006", 17, 11), ("IPV006", 17, 29)]
    assert "which `amax` (line 16) saved for backward as its input" in found[0].message
    assert "(it does when `input` requires grad)" in found[0].message
    assert "`amax(input, dim=dim, keepdim=True)`, whose output autograd saves for backward" in found[1].message


def test_invert_in_place_raises_on_an_input_that_requires_grad_and_the_copy_does_not():
    names = load(INVERT)
    w = torch.rand(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["invert_"](w * 2).sum().backward()
    names["invert"](w * 2).sum().backward()
    assert w.grad is not None


# torch-activation's adaptive activations (set BY): `_forward` runs only with `self.inplace` false (the base class's
# dispatch), so its `if self.inplace and hasattr(x, "copy_"): x.copy_(result)` arm is dead, as a bare `if self.inplace:`
# arm is; and a parameter written through `.data` after its own function saved it is no finding of its guess (nothing
# shows a backward runs through the op that saved it).
DISPATCH_AND = '''import torch
import torch.nn as nn


class Base(nn.Module):
    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return self._forward_inplace(x) if self.inplace else self._forward(x)


class Blu(Base):
    def _forward(self, x):
        result = torch.sqrt(x ** 2 + 1) - 1 + x
        if self.inplace and hasattr(x, "copy_"):
            x.copy_(result)
            return x
        return result

    def _forward_inplace(self, x):
        result = torch.sqrt(x ** 2 + 1) - 1
        x.add_(result)
        return x


def clip_complex(x: torch.Tensor, hi: float):
    y = torch.view_as_complex(x)
    mag = y.abs().clamp(max=hi)
    angle = y.angle()
    x.data.copy_(torch.view_as_real(torch.polar(mag, angle)))
    return x
'''


def test_an_and_joined_flag_test_the_dispatch_rules_out_and_a_data_write_are_no_findings():
    found = analyze_source(DISPATCH_AND)
    assert [(f.code, f.line, f.col) for f in found] == [("IPV006", 24, 8)]


def test_the_inplace_arm_raises_and_the_dispatched_copy_runs():
    names = load(DISPATCH_AND)
    h = torch.randn(5, requires_grad=True)
    names["Blu"](inplace=False)(h * 1.0).sum().backward()
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["Blu"](inplace=True)(h * 1.0).sum().backward()
    x = torch.randn(3, 2)
    assert torch.all(torch.view_as_complex(names["clip_complex"](x, 0.5)).abs() <= 0.5 + 1e-6)


# torch-sla's conjugate gradients (set BZ): an `out=` call on every path consumed a value computed from `b`; with `b`
# requiring grad it raises in the forward ("functions with out=... arguments don't support automatic
# differentiation"), so the later write cannot break a backward: no finding past it. Without the `out=` call the
# same loop is reported, and raises at backward.
CG = '''import torch


def cg(b: torch.Tensor, iters: int = 3):
    r = b.clone()
    z = r * 0.5
    rz = torch.dot(r, z)
    neg = torch.empty(())
    for _ in range(iters):
        alpha = rz / 2.0
        torch.neg(alpha, out=neg)
        r.add_(z, alpha=0.1)
    return r


def cg_plain(b: torch.Tensor, iters: int = 3):
    r = b.clone()
    z = r * 0.5
    rz = torch.dot(r, z)
    for _ in range(iters):
        alpha = rz / 2.0
        r.add_(z, alpha=0.1)
    return r + alpha
'''


def test_a_write_past_an_out_call_on_the_same_guess_is_no_finding():
    found = analyze_source(CG)
    assert [(f.code, f.line, f.col) for f in found] == [("IPV006", 22, 8)]


def test_the_out_call_raises_in_the_forward_and_the_plain_loop_at_backward():
    names = load(CG)
    b = torch.rand(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation"):
        names["cg"](b * 1.0)
    assert names["cg"](b.detach()).shape == (4,)
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["cg_plain"](b * 1.0).sum().backward()


# neuralrnn's `gram_schmidt_pt` (set CB): `mat[:i].t()` proves `mat` a tensor (a list's slice has no `.t()`), and
# `torch.norm(mat[0])` saves a row of it (an item of a parameter that is a tensor is a view), so the item assignments
# that follow make the backward raise when `mat` requires grad. A list of rows passed the same way is no finding.
GRAM = '''import torch


def gram_schmidt(mat):
    mat[0] = mat[0] / torch.norm(mat[0])
    for i in range(1, mat.shape[0]):
        mat[i] = mat[i] - (mat[:i].t() @ mat[:i] @ mat[i])
        mat[i] = mat[i] / torch.norm(mat[i])


def normalise_rows(rows):
    for i in range(len(rows)):
        rows[i] = rows[i] / torch.norm(rows[i])
'''


def test_a_sliced_parameter_used_as_a_tensor_and_its_saved_rows_written():
    found = analyze_source(GRAM)
    assert [(f.code, f.line, f.col) for f in found] == [("IPV006", 5, 4), ("IPV006", 7, 8), ("IPV006", 8, 8)]
    assert "which `torch.norm` (line 5) saved for backward as its input" in found[0].message


def test_gram_schmidt_raises_on_a_matrix_that_requires_grad_and_the_list_runs():
    names = load(GRAM)
    w = torch.rand(3, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match=MODIFIED):
        m = w * 1.0
        names["gram_schmidt"](m)
        m.sum().backward()
    rows = [w[0] * 1.0, w[1] * 1.0]
    names["normalise_rows"](rows)
    sum(r.sum() for r in rows).backward()


# The adversarial review (/work/notes/s24/review.md): an `out=` call in a loop that may run no pass, in a conditional
# expression, or of an op whose output has no gradient (`torch.gt`, which takes `out=` with grad on) leaves the later
# write a finding; a `try` whose other import may be what fails keeps the fallback's name.
OUT_ROUTES = '''import torch

try:
    from torch import amax
    import not_a_real_module_xyz
except ImportError:
    def amax(input, dim=None, keepdim=False):
        return input.detach().amax(dim=dim, keepdim=keepdim)


def after_loop(b: torch.Tensor, iters: int = 0):
    r = b.clone()
    z = r * 0.5
    rz = torch.dot(r, z)
    neg = torch.empty(())
    for _ in range(iters):
        torch.neg(rz / 2.0, out=neg)
    r.add_(z, alpha=0.1)
    return r + rz


def comparison(b: torch.Tensor, iters: int = 2):
    r = b.clone()
    z = r * 0.5
    rz = torch.dot(r, z)
    mask = torch.empty((), dtype=torch.bool)
    for _ in range(iters):
        torch.gt(rz / 2.0, 0.0, out=mask)
        r.add_(z, alpha=0.1)
    return r + rz


def normalise_(x: torch.Tensor):
    m = amax(x, dim=0, keepdim=True)
    x.div_(m)
    return x


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def embed(self, x):
        return self.lin(x)

    def forward(self, x):
        h = torch.sigmoid(self.embed(x))
        h.mul_(2)
        return h
'''


def test_the_review_routes_keep_their_findings_and_the_fallback_name():
    assert [(f.code, f.line) for f in analyze_source(OUT_ROUTES)] == [("IPV006", 18), ("IPV006", 29), ("IPV006", 49)]


def test_the_review_routes_raise_and_the_fallback_runs():
    names = load(OUT_ROUTES)
    b = torch.rand(3, requires_grad=True)
    for f in ("after_loop", "comparison"):
        with pytest.raises(RuntimeError, match=MODIFIED):
            names[f](b * 1.0).sum().backward()
    names["normalise_"](b * 1.0).sum().backward()
    with pytest.raises(RuntimeError, match=MODIFIED):
        names["Net"]()(torch.rand(2, 3)).sum().backward()


# torchzero's TensorList (set BP): `def ravel(self): return self.__class__(...)` returns no submodule's output (only an
# attribute `__init__` builds is a submodule), so `torch.cat(self.ravel())` of an optimizer's update is no activation.
TENSOR_LIST = '''import torch


class TensorList(list):
    def ravel(self):
        return self.__class__(t.ravel() for t in self)

    def to_vec(self):
        return torch.cat(self.ravel())


def clip_(tensor_: torch.Tensor, limit: float):
    norm = torch.linalg.vector_norm(tensor_)
    return tensor_.div_(max(1.0, float(norm) / limit))


def step(updates):
    ts = TensorList(updates)
    return clip_(ts.to_vec(), 1.0)
'''


def test_a_method_returning_a_new_instance_of_its_class_is_no_activation():
    import ast

    from inplace_lint.analysis.own_class import activation_methods
    classes = [n for n in ast.parse(TENSOR_LIST + OUT_ROUTES).body if isinstance(n, ast.ClassDef)]
    assert [activation_methods(c) for c in classes] == [frozenset(), frozenset({"embed"})]
    assert analyze_source(TENSOR_LIST) == []  # (its only caller passes updates, which need no grad)


def test_the_clip_of_updates_runs():
    names = load(TENSOR_LIST)
    out = names["step"]([torch.ones(2), torch.ones(3)])
    assert torch.allclose(out, torch.ones(5) / 5 ** 0.5)


# The review's worst older miss: a caller that passes an `nn.Parameter` attribute for the guessed input decided the
# guess "no grad" (nothing tracked is passed); `self.a` requires grad by evidence, so the callee's write is reported. A
# caller that passes a factory's tensor still decides it needs none.
PARAM_CALLER = '''import torch
import torch.nn as nn


def div(u: torch.Tensor, v: torch.Tensor):
    r = u.clone()
    d = v[0] * r[0]
    r[1] = 0.0
    return d


class Filt(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Parameter(torch.tensor([0.5, 1.0]))

    def forward(self, b):
        return div(b, self.a)
'''


def test_a_parameter_attribute_passed_for_a_guess_backs_it():
    found = analyze_source(PARAM_CALLER)
    assert [(f.code, f.line, f.col) for f in found] == [("IPV006", 8, 4)]
    only_data = PARAM_CALLER.replace("return div(b, self.a)", "return div(b, torch.ones(2))")
    assert analyze_source(only_data) == []


def test_the_module_caller_raises_at_backward():
    with pytest.raises(RuntimeError, match=MODIFIED):
        load(PARAM_CALLER)["Filt"]()(torch.rand(2)).backward()
