"""Facts of the thirty-second session (set CX, labelled blind), each executed under torch.

- ``self.register_parameter("raw", nn.Parameter(w))`` (positional, or ``name=`` and torch's ``param=`` or
  gpytorch's ``parameter=``) makes ``self.raw`` a
  parameter, as ``self.raw = nn.Parameter(w)`` does: it requires grad.
- A call that is given such a parameter (``self.constraint.transform(self.raw)``, gpytorch's constrained
  hyperparameters; not a submodule's call, not a factory) returns a tensor that requires grad, bound to a name or
  returned by a ``@property``.
- A property's ``@name.setter`` is a second ``def`` of the name: it no longer stands for the getter, whose summary
  (what ``self.name`` returns) the callers read. alfi's ``SIMKernel.K_ff`` (``K = torch.exp(-sq_dist); K += jitter``
  with ``sq_dist`` divided by ``self.lengthscale``): labelled, missed before, raises at the backward.
"""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

SOURCE = '''import torch
from torch import nn


class Interval:
    def __init__(self, lower, upper):
        self.lower, self.upper = lower, upper

    def transform(self, x):
        return self.lower + (self.upper - self.lower) * torch.sigmoid(x)


class Kernel(nn.Module):
    def __init__(self):
        super().__init__()
        self.constraint = Interval(0.5, 3.5)
        self.register_parameter(name="raw_lengthscale", param=nn.Parameter(torch.zeros(1, 1)))
        self.register_parameter("raw_scale", nn.Parameter(torch.ones(1)))
        self.register_parameter("raw_frozen", nn.Parameter(torch.ones(1), requires_grad=False))

    @property
    def lengthscale(self):
        return self.constraint.transform(self.raw_lengthscale)

    @lengthscale.setter
    def lengthscale(self, value):
        self.raw_lengthscale.data.fill_(float(value))

    def covariance(self, x1, x2):
        sq_dist = torch.square(x1.view(-1, 1) - x2.view(-1)) / (2 * self.lengthscale)
        K = torch.exp(-sq_dist)
        K += 1e-3 * torch.eye(x1.shape[0])
        return K

    def scaled(self, x):
        s = self.constraint.transform(self.raw_scale)
        out = torch.exp(x / s)
        out += 1
        return out

    def frozen(self, x):
        out = torch.exp(x / self.raw_frozen)
        out += 1
        return out


def predict():
    k = Kernel()
    t = torch.linspace(0, 1, 4)
    return k.covariance(t, t), k.scaled(t), k.frozen(t)
'''


def test_a_registered_parameter_through_a_constrained_property():
    findings = analyze_source(SOURCE)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 32, 8), ("IPV006", 38, 8)]
    assert findings[0].message.startswith("`+=` writes in place to `K`, `torch.exp(-sq_dist)`, whose output autograd")
    kernel = load(SOURCE)["Kernel"]()
    t = torch.linspace(0, 1, 4)
    for name in ("covariance", "scaled"):
        out = getattr(kernel, name)(t, t) if name == "covariance" else kernel.scaled(t)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()
    assert not kernel.frozen(t).requires_grad  # (a frozen parameter: nothing requires grad, nothing is saved)
    kernel.lengthscale = 0.0
    assert torch.equal(kernel.raw_lengthscale.detach(), torch.zeros(1, 1))


EVAL_ONLY = '''import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(10, 4)
        self.out = nn.Linear(4, 10)

    def forward(self, targets, train_mode=True):
        if train_mode:
            return self.forward_train(targets)
        return self.forward_test(targets.shape[0])

    def forward_train(self, targets):
        return self.out(self.embedding(targets))

    def forward_test(self, n):
        seq = torch.zeros(n, 5, dtype=torch.long)
        outs = []
        for i in range(4):
            step = self.out(self.embedding(seq[:, : i + 1]))[:, -1]
            outs.append(step)
            seq[:, i + 1] = step.argmax(-1)
        return torch.stack(outs, 1)

    def greedy(self, n):
        seq = torch.zeros(n, 5, dtype=torch.long)
        for i in range(4):
            step = self.out(self.embedding(seq[:, : i + 1]))[:, -1]
            seq[:, i + 1] = step.argmax(-1)
        return step


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.decoder = Decoder()

    def forward(self, targets):
        if self.training:
            return self.decoder(targets)
        else:
            return self.decoder(targets, train_mode=False)

    def sample(self, targets):
        if not self.training:
            return self.decoder.greedy(targets.shape[0])
        return self.decoder.greedy(targets.shape[0]) * 2
'''


def test_code_reached_only_from_the_eval_branch_runs_for_inference():
    """A call made in the ``else`` of ``if self.training:`` runs the callee in eval mode: a greedy decoding loop
    reached only so (directly, or through a ``train_mode`` flag the eval branch alone passes false) writes its token
    buffer for inference, as the same loop written in that branch would (toddleocr's RobustScanner heads, set CX:
    two findings labelled not hazards). ``greedy`` is also called from the training branch: still reported."""
    findings = analyze_source(EVAL_ONLY)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 32, 12)]
    head = load(EVAL_ONLY)["Head"]()
    targets = torch.randint(0, 10, (2, 5))
    head(targets).sum().backward()  # training: teacher forcing, no buffer written
    head.eval()
    with torch.no_grad():
        assert head(targets).shape == (2, 4, 10)
    head.train()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        head.sample(targets).sum().backward()  # (the greedy loop under grad: its write raises)


FEATURE_DICT = '''import torch
from torch import nn


class Generator(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(1, dim))

    def forward(self, left_h, right_h):
        zero_lines = torch.nonzero(torch.sum(left_h, 1) == 0)
        if len(zero_lines) > 0:
            left_h[zero_lines, :] += 1e-8
        return (left_h * self.weight) @ right_h.t()


class Model(nn.Module):
    def __init__(self, dim, node_types, relations):
        super().__init__()
        self.node_types = node_types
        self.non_linear = nn.ReLU()
        nnmd = nn.ModuleDict
        self.generators, self.aggregators = nnmd({}), nnmd({})
        self.encoder = nnmd({t: nn.Linear(dim, dim) for t in node_types})
        for src, rel, dst in relations:
            self.generators[rel] = Generator(dim)

    def forward(self, feats, relations):
        mapped = dict()
        for t in self.node_types:
            mapped[t] = self.non_linear(self.encoder[t](feats[t]))
        out = []
        for src, rel, dst in relations:
            out.append(self.generators[rel](mapped[src], mapped[dst]))
        return torch.stack(out).sum()
'''


def test_a_relu_output_through_a_dict_of_features_and_a_module_dict():
    """openhgnn's HGSL (set CX, labelled at default use, executed by the labeller: a ReLU output row that is all zero
    is nudged in place, and the backward raises): the features are items of a local dict stored under the node type
    (a computed key: any later read of an item may be one), the generators items of a ``ModuleDict`` built empty in a
    tuple assignment through a local alias (``nnmd = nn.ModuleDict``) and filled in a loop, and the encoder an item of
    another ``ModuleDict`` (its call an activation, as a submodule's is)."""
    findings = analyze_source(FEATURE_DICT)
    assert [(f.code, f.line, f.col) for f in findings] == [("IPV006", 13, 12)]
    assert "passed by the call at line 34" in findings[0].message
    model = load(FEATURE_DICT)["Model"](4, ["a", "b"], [("a", "r", "b")])
    feats = {"a": torch.randn(3, 4), "b": torch.randn(3, 4)}
    with torch.no_grad():
        model.encoder["a"].weight.zero_()
        model.encoder["a"].bias.fill_(-1.0)  # (every row of the ReLU's output is zero)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        model(feats, [("a", "r", "b")]).backward()


def test_the_kernel_fix_keeps_the_values_and_the_backward_runs():
    """``K += jitter`` fixed out of place (``K = K.clone().add_(jitter)``): the covariance is the same, the exp output
    the backward reads is left alone, and the lengthscale gets its gradient."""
    from inplace_lint.fixing import fix_code

    fixed = fix_code(SOURCE, select=["IPV006"]).new_source
    assert "        _K_operand = 1e-3 * torch.eye(x1.shape[0])\n" in fixed
    assert "        K = K.clone().add_(_K_operand)\n" in fixed
    old, new = load(SOURCE)["Kernel"](), load(fixed)["Kernel"]()
    t = torch.linspace(0, 1, 4)
    with torch.no_grad():
        expected = old.covariance(t, t)
    got = new.covariance(t, t)
    assert torch.equal(got, expected) and got.dtype == expected.dtype
    got.sum().backward()
    assert new.raw_lengthscale.grad is not None and torch.isfinite(new.raw_lengthscale.grad).all()
