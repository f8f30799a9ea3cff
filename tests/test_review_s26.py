"""The twenty-sixth session's review (/work/notes/s26/review.md): probes where the session's first form of its facts
lost a finding of the code before it, each executed under torch (it raises at backward, or the caller reads a changed
tensor), and each found again by the mended facts:

- a store into a parameter hides a tensor write only when its key is surely a string (not an int, a name holding a
  mask or an index, an attribute, ``Optional[Tensor]``'s item) (k*);
- a table of functions is a table only when nothing but ``TABLE[key](...)`` uses it (``.get``, an alias, a loop over
  it, handing it on run its functions where no call site shows their arguments) (t*);
- a buffer an op's result is stored into is followed only when it is a new tensor (a factory, ``clone``), not a view
  (``torch.select``) or what ``torch.as_tensor`` gives back (b*);
- submodules built in the same arms go together only when no subclass has an ``__init__`` of its own (a*).

And the second review's (/work/notes/s26/review2.md, keys ``2*``): a string builtin shadowed, a decorated or redefined
"string function", a nested function shadowing one; ``setattr(self, ...)`` or ``self.add_module(...)`` in
``__init__``; a table reached through its module from another one (``tab.UPDATES[k](...)``, ``from tab import *``).
"""
from __future__ import annotations

import sys

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

PROBES = {
    "k1": ("corrupts", [('IPV007', 18)], '''# keyed: submodule writes x[idx] = 0 with idx an int-tensor name; caller reads x again
import torch
from torch import nn


class Drop(nn.Module):
    def forward(self, x, idx):
        x[idx] = 0
        return x * 2


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = Drop()

    def forward(self, x, idx):
        y = self.drop(x, idx)
        return x + y


def run():
    x = torch.ones(4)
    out = Net()(x, torch.tensor([1, 2]))
    # intended x + 2x = 3 everywhere; corrupted where idx
    return out.tolist()
'''),
    "k4": ("corrupts", [('IPV007', 19)], '''# keyed: a boolean-mask held in a name: x[mask] = 0 inside a submodule; caller reads x again
import torch
from torch import nn


class Clip(nn.Module):
    def forward(self, x):
        mask = x < 0
        x[mask] = 0
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.clip = Clip()

    def forward(self, x):
        y = self.clip(x)
        return y - x   # intended relu(x) - x


def run():
    x = torch.tensor([-1.0, 2.0])
    return Net()(x).tolist()  # intended [1, 0]
'''),
    "k7": ("corrupts", [('IPV007', 19)], '''# keyed: the caller's argument is surely a tensor (torch.randn result / annotated) - callee does x[i] = 0
import torch
from torch import nn, Tensor


class Reset(nn.Module):
    def forward(self, h, i):
        h[i] = 0.0
        return h


class Cell(nn.Module):
    def __init__(self):
        super().__init__()
        self.reset = Reset()

    def forward(self, x: Tensor):
        h = torch.tanh(x).detach().clone()
        new = self.reset(h, 0)
        return new + h


def run():
    x = torch.ones(3)
    r = Cell()(x)
    t = torch.tanh(torch.ones(3))
    return r.tolist(), "intended", (torch.cat([torch.zeros(1), t[1:]]) + t).tolist()
'''),
    "k10": ("corrupts", [('IPV007', 21)], '''# keyed: the written parameter is annotated Optional[Tensor] / Tensor | None
from typing import Optional

import torch
from torch import Tensor, nn


class Reset(nn.Module):
    def forward(self, h: Optional[Tensor], i: int) -> Optional[Tensor]:
        if h is not None:
            h[i] = 0.0
        return h


class Cell(nn.Module):
    def __init__(self):
        super().__init__()
        self.reset = Reset()

    def forward(self, h: Tensor):
        new = self.reset(h, 0)
        return new + h


def run():
    return Cell()(torch.ones(3)).tolist()  # intended [1,2,2]
'''),
    "t1": ("raises", [('IPV006', 8)], '''# table: one float call through UPDATES[k](...), and a grad-tensor call through UPDATES.get(k)(...)
import torch
from torch import Tensor


def _adapt(penalties: Tensor, p_mult: Tensor, delta: float):
    b = (1 - p_mult) * penalties / (delta + 1e-8)
    penalties.mul_(p_mult).add_(b)


def _const(penalties: Tensor, p_mult: Tensor, delta: float):
    penalties.mul_(p_mult)


UPDATES = {"const": _const, "adapt": _adapt}


def step_float(penalties):
    UPDATES["adapt"](penalties, 0.5, 0.1)
    return penalties


def step_learned(penalties, w):
    UPDATES.get("adapt")(penalties, w.sigmoid(), 0.1)
    return penalties


def run():
    step_float(torch.ones(3))
    w = torch.zeros(3, requires_grad=True)
    step_learned(torch.ones(3), w).sum().backward()
    return "no raise"
'''),
    "t2": ("raises", [('IPV006', 8)], '''# table: float call via UPDATES[k](...) and grad call via fn = UPDATES[k]; fn(...)
import torch
from torch import Tensor


def _adapt(penalties: Tensor, p_mult: Tensor, delta: float):
    b = (1 - p_mult) * penalties / (delta + 1e-8)
    penalties.mul_(p_mult).add_(b)


UPDATES = {"adapt": _adapt}


def step_float(penalties):
    UPDATES["adapt"](penalties, 0.5, 0.1)
    return penalties


def step_learned(penalties, w):
    fn = UPDATES["adapt"]
    fn(penalties, w.sigmoid(), 0.1)
    return penalties


def run():
    step_float(torch.ones(3))
    w = torch.zeros(3, requires_grad=True)
    step_learned(torch.ones(3), w).sum().backward()
    return "no raise"
'''),
    "t3": ("raises", [('IPV006', 8), ('IPV006', 13)], '''# table: float call via TABLE[i](...) and grad call via for f in TABLE: f(...)
import torch
from torch import Tensor


def _adapt(penalties: Tensor, p_mult: Tensor):
    b = (1 - p_mult) * penalties
    penalties.mul_(p_mult).add_(b)


def _scale(penalties: Tensor, p_mult: Tensor):
    b = p_mult * penalties
    penalties.mul_(p_mult).add_(b)


TABLE = [_adapt, _scale]


def step_float(penalties, i):
    TABLE[i](penalties, 0.5)
    return penalties


def step_all(penalties, w):
    for f in TABLE:
        f(penalties, w.sigmoid())
    return penalties


def run():
    step_float(torch.ones(3), 0)
    w = torch.zeros(3, requires_grad=True)
    step_all(torch.ones(3), w).sum().backward()
    return "no raise"
'''),
    "t5": ("raises", [('IPV006', 8)], '''# table: float call via UPDATES[k](...) ; table passed as an argument and called there with a grad tensor
import torch
from torch import Tensor


def _adapt(penalties: Tensor, p_mult: Tensor):
    b = (1 - p_mult) * penalties
    penalties.mul_(p_mult).add_(b)


UPDATES = {"adapt": _adapt}


def step_float(penalties):
    UPDATES["adapt"](penalties, 0.5)
    return penalties


def apply(table, penalties, w):
    table["adapt"](penalties, w.sigmoid())
    return penalties


def step_learned(penalties, w):
    return apply(UPDATES, penalties, w)


def run():
    step_float(torch.ones(3))
    w = torch.zeros(3, requires_grad=True)
    step_learned(torch.ones(3), w).sum().backward()
    return "no raise"
'''),
    "b2": ("raises", [('IPV006', 13), ('IPV006', 14)], '''# buffer-follow: the "buffer" is torch.narrow(...) of another tensor (a view), and that other tensor is returned
import torch


def spread(x: torch.Tensor, k: int):
    n = x.shape[0]
    centroids = torch.zeros((k, x.shape[1]))
    centroids[0] = x[0]
    store = torch.full((2, n), float("inf"))
    min_sq = torch.select(store, 0, 0)
    for i in range(1, k):
        dist = torch.cdist(x, centroids[i - 1:i]).squeeze(1)
        min_sq[0:n] = torch.min(min_sq[0:n], dist)
        centroids[i] = x[torch.multinomial(min_sq.detach(), 1)]
    return centroids, store


def run():
    torch.manual_seed(0)
    x = torch.randn(10, 2, requires_grad=True)
    c, s = spread(x, 3)
    (c.sum() + s[0].sum()).backward()
    return "no raise"
'''),
    "b3": ("raises", [('IPV006', 9)], '''# buffer-follow: the buffer is torch.as_tensor(param): same storage as the caller's tensor
import torch


def update(x: torch.Tensor, centroids: torch.Tensor, running: torch.Tensor):
    n = x.shape[0]
    buf = torch.as_tensor(running)
    dist = torch.cdist(x, centroids[0:1]).squeeze(1)
    buf[0:n] = torch.min(buf[0:n], dist)
    centroids[0] = x[torch.multinomial(buf.detach(), 1)]   # writes what cdist saved
    return centroids


def run():
    torch.manual_seed(0)
    x = torch.randn(10, 2, requires_grad=True)
    c = torch.zeros(2, 2)
    running = torch.full((10,), 100.0)
    update(x, c, running)
    running.sum().backward()
    return "no raise"
'''),
    "a1": ("raises", [('IPV006', 25), ('IPV007', 46)], '''import torch
import torch.nn as nn


class ConvBlock(nn.Module):
    def __init__(self, c, norm="batch", activation="relu", pre_norm=False):
        super().__init__()
        self.pre_norm = pre_norm
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.norm = None
        if norm is not None:
            self.norm = nn.BatchNorm2d(c)
        self.act = None
        if activation is not None:
            if activation == "relu":
                self.act = nn.ReLU(inplace=True)
            elif activation == "silu":
                self.act = nn.SiLU(inplace=True)
            else:
                raise ValueError(activation)

    def forward(self, x):
        if self.pre_norm:
            if self.norm: x = self.norm(x)
            if self.act: x = self.act(x)
            x = self.conv(x)
        else:
            x = self.conv(x)
            if self.norm: x = self.norm(x)
            if self.act: x = self.act(x)
        return x


class Residual(nn.Module):
    def __init__(self, c, norm="batch", variant="original"):
        super().__init__()
        if variant == "original":
            self.conv1 = ConvBlock(c, norm)
            self.conv2 = ConvBlock(c, norm, activation=None)
        else:
            self.conv1 = ConvBlock(c, norm, pre_norm=True)
            self.conv2 = ConvBlock(c, norm, pre_norm=True)

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.conv2(out)
        out = out + identity
        return out


class Hybrid(Residual):
    """overrides __init__: conv1 'original' (ReLU output saved), conv2 'pre_act' with no norm (ReLU_ on its input)"""
    def __init__(self, c):
        nn.Module.__init__(self)
        self.conv1 = ConvBlock(c, None)
        self.conv2 = ConvBlock(c, None, pre_norm=True)


def run():
    x = torch.randn(2, 4, 5, 5, requires_grad=True)
    Hybrid(4)(x * 1).sum().backward()
    return "no raise"
'''),
    "a7": ("raises", [('IPV006', 25), ('IPV007', 46)], '''import torch
import torch.nn as nn


class ConvBlock(nn.Module):
    def __init__(self, c, norm="batch", activation="relu", pre_norm=False):
        super().__init__()
        self.pre_norm = pre_norm
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.norm = None
        if norm is not None:
            self.norm = nn.BatchNorm2d(c)
        self.act = None
        if activation is not None:
            if activation == "relu":
                self.act = nn.ReLU(inplace=True)
            elif activation == "silu":
                self.act = nn.SiLU(inplace=True)
            else:
                raise ValueError(activation)

    def forward(self, x):
        if self.pre_norm:
            if self.norm: x = self.norm(x)
            if self.act: x = self.act(x)
            x = self.conv(x)
        else:
            x = self.conv(x)
            if self.norm: x = self.norm(x)
            if self.act: x = self.act(x)
        return x


class Residual(nn.Module):
    def __init__(self, c, norm=None, variant="original"):
        super().__init__()
        if variant == "original":
            self.conv1 = ConvBlock(c, norm)
            self.conv2 = ConvBlock(c, norm, activation=None)
        else:
            self.conv1 = ConvBlock(c, norm, pre_norm=True)
            self.conv2 = ConvBlock(c, norm, pre_norm=True)

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.conv2(out)
        out = out + identity
        return out


class PreActTail(Residual):
    """super().__init__ builds 'original'; this subclass then swaps in a pre-activation conv2"""
    def __init__(self, c):
        super().__init__(c, None, "original")
        self.conv2 = ConvBlock(c, None, pre_norm=True)


def run():
    x = torch.randn(2, 4, 5, 5, requires_grad=True)
    PreActTail(4)(x * 1).sum().backward()
    return "no raise"
'''),
    "2s2": ("corrupts", [('IPV007', 20)], '''# s2: a module-level function named str (an index normaliser) shadows the builtin
import torch
from torch import nn

def str(i):
    return i.long()


class Drop(nn.Module):
    def forward(self, x, idx):
        x[str(idx)] = 0
        return x * 2

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = Drop()

    def forward(self, x, idx):
        y = self.drop(x, idx)
        return x + y


def run():
    x = torch.ones(4)
    out = Net()(x, torch.tensor([1, 2]))
    return out.tolist()  # intended all 3.0

'''),
    "2s3": ("corrupts", [('IPV007', 27)], '''# s3: a top-level function whose returns are strings, wrapped by a decorator that turns them into an index tensor
import torch
from torch import nn

def as_index(fn):
    def wrap(*a):
        return torch.tensor([int(c) for c in fn(*a).split(",")])
    return wrap


@as_index
def key_of(i):
    return ",".join([repr(int(v)) for v in i])


class Drop(nn.Module):
    def forward(self, x, idx):
        x[key_of(idx)] = 0
        return x * 2

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = Drop()

    def forward(self, x, idx):
        y = self.drop(x, idx)
        return x + y


def run():
    x = torch.ones(4)
    out = Net()(x, torch.tensor([1, 2]))
    return out.tolist()  # intended all 3.0

'''),
    "2s6": ("corrupts", [('IPV007', 22)], '''# s6: a nested def with the same name as a top-level string function
import torch
from torch import nn

def key_of(i):
    return "k" + repr(i)


class Drop(nn.Module):
    def forward(self, x, idx):
        def key_of(i):
            return i
        x[key_of(idx)] = 0
        return x * 2

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = Drop()

    def forward(self, x, idx):
        y = self.drop(x, idx)
        return x + y


def run():
    x = torch.ones(4)
    out = Net()(x, torch.tensor([1, 2]))
    return out.tolist()  # intended all 3.0

'''),
    "2s7": ("corrupts", [('IPV007', 24)], '''# s7: key_of defined twice at top level; the second (live) one returns the index
import torch
from torch import nn

def key_of(i):
    return "k" + repr(i)


def key_of(i):  # noqa: F811
    return i.long()


class Drop(nn.Module):
    def forward(self, x, idx):
        x[key_of(idx)] = 0
        return x * 2

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = Drop()

    def forward(self, x, idx):
        y = self.drop(x, idx)
        return x + y


def run():
    x = torch.ones(4)
    out = Net()(x, torch.tensor([1, 2]))
    return out.tolist()  # intended all 3.0

'''),
    "2a2": ("raises", [('IPV006', 26), ('IPV007', 48)], '''# setattr in __init__ rebuilds conv2 after the arms
import torch
import torch.nn as nn


class ConvBlock(nn.Module):
    def __init__(self, c, norm="batch", activation="relu", pre_norm=False):
        super().__init__()
        self.pre_norm = pre_norm
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.norm = None
        if norm is not None:
            self.norm = nn.BatchNorm2d(c)
        self.act = None
        if activation is not None:
            if activation == "relu":
                self.act = nn.ReLU(inplace=True)
            elif activation == "silu":
                self.act = nn.SiLU(inplace=True)
            else:
                raise ValueError(activation)

    def forward(self, x):
        if self.pre_norm:
            if self.norm: x = self.norm(x)
            if self.act: x = self.act(x)
            x = self.conv(x)
        else:
            x = self.conv(x)
            if self.norm: x = self.norm(x)
            if self.act: x = self.act(x)
        return x


class Residual(nn.Module):
    def __init__(self, c, norm=None, variant="original"):
        super().__init__()
        if variant == "original":
            self.conv1 = ConvBlock(c, norm)
            self.conv2 = ConvBlock(c, norm, activation=None)
        else:
            self.conv1 = ConvBlock(c, norm, pre_norm=True)
            self.conv2 = ConvBlock(c, norm, pre_norm=True)
        setattr(self, "conv2", ConvBlock(c, norm, pre_norm=True))

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.conv2(out)
        out = out + identity
        return out


def run():
    x = torch.randn(2, 4, 5, 5, requires_grad=True)
    Residual(4)(x * 1).sum().backward()
    return "no raise"

'''),
    "2a5": ("raises", [('IPV006', 26), ('IPV007', 48)], '''# add_module rebuilds conv2 after the arms
import torch
import torch.nn as nn


class ConvBlock(nn.Module):
    def __init__(self, c, norm="batch", activation="relu", pre_norm=False):
        super().__init__()
        self.pre_norm = pre_norm
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.norm = None
        if norm is not None:
            self.norm = nn.BatchNorm2d(c)
        self.act = None
        if activation is not None:
            if activation == "relu":
                self.act = nn.ReLU(inplace=True)
            elif activation == "silu":
                self.act = nn.SiLU(inplace=True)
            else:
                raise ValueError(activation)

    def forward(self, x):
        if self.pre_norm:
            if self.norm: x = self.norm(x)
            if self.act: x = self.act(x)
            x = self.conv(x)
        else:
            x = self.conv(x)
            if self.norm: x = self.norm(x)
            if self.act: x = self.act(x)
        return x


class Residual(nn.Module):
    def __init__(self, c, norm=None, variant="original"):
        super().__init__()
        if variant == "original":
            self.conv1 = ConvBlock(c, norm)
            self.conv2 = ConvBlock(c, norm, activation=None)
        else:
            self.conv1 = ConvBlock(c, norm, pre_norm=True)
            self.conv2 = ConvBlock(c, norm, pre_norm=True)
        self.add_module("conv2", ConvBlock(c, norm, pre_norm=True))

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.conv2(out)
        out = out + identity
        return out


def run():
    x = torch.randn(2, 4, 5, 5, requires_grad=True)
    Residual(4)(x * 1).sum().backward()
    return "no raise"

'''),
}


@pytest.mark.parametrize("name", sorted(PROBES))
def test_a_review_probe_keeps_its_finding_and_is_a_hazard(name):
    outcome, expected, source = PROBES[name]
    assert [(f.code, f.line) for f in analyze_source(source)] == expected
    run = load(source)["run"]
    if outcome == "raises":
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            run()
    else:  # what the caller read, against what the code means (each probe's comment)
        assert run() == CORRUPTED[name]


#: what each corrupting probe's caller reads, where the code means: k1 3.0 everywhere, k4 [1.0, 0.0], k7
#: [tanh(1), ...], k10 [1.0, 2.0, 2.0]
CORRUPTED = {
    "k1": [3.0, 0.0, 0.0, 3.0],
    "k4": [0.0, 0.0],
    "k7": ([0.0, pytest.approx(1.5231883525848389), pytest.approx(1.5231883525848389)], "intended",
           [pytest.approx(0.7615941762924194), pytest.approx(1.5231883525848389), pytest.approx(1.5231883525848389)]),
    "k10": [0.0, 2.0, 2.0],
    # the second review's: each means 3.0 everywhere
    "2s2": [3.0, 0.0, 0.0, 3.0], "2s3": [3.0, 0.0, 0.0, 3.0], "2s6": [3.0, 0.0, 0.0, 3.0], "2s7": [3.0, 0.0, 0.0, 3.0],
}


TAB = '''import torch
from torch import Tensor


def _adapt(penalties: Tensor, p_mult: Tensor, delta: float):
    b = (1 - p_mult) * penalties / (delta + 1e-8)
    penalties.mul_(p_mult).add_(b)


def _const(penalties: Tensor, p_mult: Tensor, delta: float):
    penalties.mul_(p_mult)


UPDATES = {"const": _const, "adapt": _adapt}


def step_float(penalties):
    UPDATES["adapt"](penalties, 0.5, 0.1)
    return penalties
'''
USERS = {"module": '''# t2: `from pkg import tab` then tab.UPDATES["adapt"](grad...)
import torch
from pkg import tab


def step_learned(penalties, w):
    tab.UPDATES["adapt"](penalties, w.sigmoid(), 0.1)
    return penalties


def run():
    tab.step_float(torch.ones(3))
    w = torch.zeros(3, requires_grad=True)
    step_learned(torch.ones(3), w).sum().backward()
    return "no raise"
''', "star": '''# t1: star import of the table module, grad call through .get
import torch
from pkg.tab import *  # noqa


def step_learned(penalties, w):
    UPDATES.get("adapt")(penalties, w.sigmoid(), 0.1)
    return penalties


def run():
    step_float(torch.ones(3))
    w = torch.zeros(3, requires_grad=True)
    step_learned(torch.ones(3), w).sum().backward()
    return "no raise"
'''}


@pytest.mark.parametrize("how", sorted(USERS))
def test_a_table_reached_from_another_module_is_no_table(tmp_path, how, monkeypatch):
    from inplace_lint.analysis.project import Project
    from inplace_lint.config import DEFAULT_SETTINGS
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "tab.py").write_text(TAB)
    (pkg / "user.py").write_text(USERS[how])
    project = Project(DEFAULT_SETTINGS, tmp_path)
    for path in sorted(pkg.glob("*.py")):
        project.add_file(str(path), source=path.read_text())
    project.build()
    assert [(f.code, f.line) for f in project.findings(str(pkg / "tab.py"))] == [("IPV006", 7)]
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    for name in ("pkg.user", "pkg.tab", "pkg"):
        sys.modules.pop(name, None)
    user = importlib.import_module("pkg.user")
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        user.run()
