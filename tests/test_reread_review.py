"""IPV007 against a review's probes (twenty-first session): each case is run under torch as written and with every
module's ``inplace`` flag turned off; the rule reports exactly the cases whose values differ."""
from __future__ import annotations

import textwrap

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load

torch = pytest.importorskip("torch")

HEAD = """
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F


class M(nn.Module):
    def __init__(self, c=3):
        super().__init__()
        self.act = nn.ReLU(inplace=True)
        self.leaky = nn.LeakyReLU(0.2, True)
        self.alpha = nn.AlphaDropout(0.5, inplace=True)
        self.body = nn.Sequential(nn.ReLU(inplace=True), nn.Linear(c, c))
        self.proj = nn.Linear(c, c)
        self.ordered = nn.Sequential(OrderedDict([("act", nn.ReLU(inplace=True)), ("proj", nn.Linear(c, c))]))

"""

# (name, method body, reported): the method is `def f(self, x, flag)`
CASES = [
    ("early_return", """
        if flag:
            return self.body(x)
        return x + self.proj(x)""", False),
    ("loop_target_rebinds", """
        outs = []
        for feat in (x, x * 2):
            outs.append(feat.mean())
            outs.append(self.act(feat))
        return torch.stack([o.sum() for o in outs])""", False),
    ("comprehension_shadows", """
        feats = [self.act(x) for x in (x * 1, x * 2)]
        return feats[0] + feats[1], x""", False),
    ("metadata_calls", """
        y = self.act(x)
        return y + torch.zeros_like(x) + x.new_ones(x.shape), torch.is_tensor(x)""", False),
    ("alpha_dropout_never_in_place", """
        y = self.alpha(x)
        return y + x""", False),
    ("clamped_at_zero", """
        x = x.clamp(min=0)
        y = self.act(x)
        return y + x""", False),
    ("squared", """
        h = x ** 2
        y = self.act(h)
        return y + h""", False),
    ("positional_flag", """
        y = self.leaky(x)
        return y + x""", True),
    ("read_in_except_arm", """
        try:
            y = self.body(x)
        except RuntimeError:
            y = x
        return y + x""", True),
    ("method_receiver", """
        return x.add(self.body(x))""", True),
    ("read_in_finally", """
        try:
            y = self.act(x)
        finally:
            z = x * 2
        return y + z""", True),
    ("detached_before", """
        ref = x.detach()
        y = self.act(x)
        return y + ref""", True),
    ("view_before", """
        flat = x.view(-1)
        y = self.act(x)
        return y.sum() + flat.sum()""", True),
    ("cloned_before", """
        ref = x.clone()
        y = self.act(x)
        return y + ref""", False),
    ("functional_value_used", """
        h = F.relu(x, inplace=True)
        return self.proj(h) + x""", True),
    ("method_value_used", """
        h = x.relu_()
        return self.proj(h) + x""", True),
    ("written_on_purpose", """
        x.relu_()
        return self.proj(x) + x""", False),
    ("ordered_dict_stack", """
        y = self.ordered(x)
        return y + x""", True),
    ("next_pass", """
        outs = []
        for _ in range(2):
            outs.append(x.sum())
            outs.append(self.leaky(x).sum())
        return torch.stack(outs)""", True),
]


def _source(name: str, body: str) -> str:
    return HEAD + f"    def {name}(self, x, flag=False):" + textwrap.indent(textwrap.dedent(body), "        ") + "\n"


def _flat(out):
    items = out if isinstance(out, (tuple, list)) else (out,)
    return [torch.as_tensor(i).detach().clone().float() if not isinstance(i, list) else torch.stack(i).detach()
            for i in items]


@pytest.mark.parametrize("name, body, reported", CASES, ids=[c[0] for c in CASES])
def test_reported_exactly_where_the_values_differ(name, body, reported):
    source = _source(name, body)
    codes = [f.code for f in analyze_source(source)]
    assert (codes == ["IPV007"]) == reported and set(codes) <= {"IPV007"}, codes
    model = load(source)["M"]()
    model.train()
    # the same model written out of place: layers' flags off, and an in-place activation whose result is taken for a
    # new tensor (`h = ...`) in its out-of-place form; a write on its own line is meant, and stays
    plain = load(source.replace("h = F.relu(x, inplace=True)", "h = F.relu(x)").replace("h = x.relu_()",
                                                                                        "h = x.relu()"))["M"]()
    plain.load_state_dict(model.state_dict())
    plain.train()
    for layer in plain.modules():
        if hasattr(layer, "inplace"):
            layer.inplace = False
    torch.manual_seed(0)
    x0 = torch.randn(4, 3)
    results = []
    for m in (model, plain):
        torch.manual_seed(1)
        x = x0.clone()
        results.append((_flat(getattr(m, name)(x)), x))
    (got, _), (want, _) = results
    # (what this function computes; the caller's own tensor is written in every case, which callers may see)
    same = all(torch.allclose(a, b) for a, b in zip(got, want))
    assert same != reported
