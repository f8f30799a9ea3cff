"""The flake8 plugin without a project cache walks at the end only the function bodies a finding can come from
(:mod:`inplace_lint.analysis.relevance`): the findings must be the ones a whole walk gives."""
from __future__ import annotations

import ast
import pathlib

import pytest

from inplace_lint.analysis import api
from inplace_lint.analysis.api import analyze
from inplace_lint.analysis.relevance import bodies_needed

FIXTURES = sorted(pathlib.Path(__file__).resolve().parent.parent.joinpath("fixtures").rglob("*.py"))


def _key(findings):
    return [(f.line, f.col, f.code, f.message) for f in findings]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(p.parents[2])))
def test_walking_only_the_needed_bodies_gives_the_same_findings(path):
    source = path.read_text()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        pytest.skip("a fixture that does not parse")
    whole = analyze(tree, path=str(path), plan_fixes=False, source=source)
    lazy = analyze(tree, path=str(path), plan_fixes=False, source=source, bodies_on_demand=True)
    assert _key(lazy) == _key(whole)


SOURCE = '''import torch


def scale(x, t):
    x.div_(t)


def caller(model, ids, t):
    return scale(model(ids).logits, t)


def unrelated(d):
    d["k"] = 1
    n = 0
    for _ in range(3):
        n = n + 1
    return n


class Head:
    def helper(self, x):
        return x * 2

    def run(self, x):
        return self.helper(x)
'''


def test_the_bodies_needed_are_the_writers_and_those_naming_them():
    assert bodies_needed(ast.parse(SOURCE)) == frozenset({"scale", "caller"})


@pytest.mark.parametrize("line", ["    nn.ReLU(inplace=True)", "    nn.ReLU(True)", "    F.relu(x, True)"])
def test_an_inplace_layer_anywhere_walks_every_body(line):
    assert bodies_needed(ast.parse(SOURCE + "\n\ndef build(x):\n" + line + "\n")) is None


def test_a_forward_that_writes_walks_every_body():
    source = SOURCE + "\n\nclass Block:\n    def forward(self, x):\n        x += 1\n        return x\n"
    assert bodies_needed(ast.parse(source)) is None


def test_a_method_that_sums_with_keepdim_is_no_inplace_layer():
    assert bodies_needed(ast.parse(SOURCE + "\n\ndef total(x):\n    return x.sum(-1, True)\n")) == frozenset(
        {"scale", "caller"})


PLAIN_NAMES = '''import torch


def count(xs):
    n = 0
    for _ in xs:
        n += 1
    return n


def table(x):
    d = {}
    d["k"] = x
    d[x] = 1
    out = []
    out[0] = x
    return d, out


def summed(x):
    n = 0
    n += x
    return n


def rebound(x):
    d = {}
    d = x
    d[0] = 1


def param(d):
    d[0] = 1


def closure(x):
    n = 0

    def step():
        nonlocal n
        n += 1
    return n


def unpacked(x):
    n, m = 0, x
    n += 1


def item_update(x):
    d = {}
    d["k"] = x * 2
    d["k"] += 1
    return d
'''


def test_a_write_to_a_name_that_only_holds_a_number_or_a_container_needs_no_walk():
    # `n = 0; n += 1` keeps an int and `d = {}; d[k] = v` writes a dict: no tensor is written. `n += x` may make `n`
    # a tensor (the next `+=` writes it in place); a parameter, a name bound to anything else, `nonlocal`, an
    # unpacking: any value; `d["k"] += 1` adds in place to the dict's item, a tensor
    assert bodies_needed(ast.parse(PLAIN_NAMES)) == frozenset(
        {"summed", "rebound", "param", "closure", "unpacked", "item_update"})


def test_a_file_with_no_write_is_not_walked_and_a_module_level_write_is(monkeypatch):
    quiet = "import torch\n\n\ndef f(x):\n    return x.view(-1)\n\n\nCONFIG = {'a': 1}\n"
    loud = "import torch\n\nbase = torch.ones(3)\nx = base.expand(2, 3)\nx.add_(1)\n"
    with monkeypatch.context() as patched:
        patched.setattr(api, "Project", None)  # (no project is built for the quiet file: calling None would raise)
        assert analyze(ast.parse(quiet), plan_fixes=False, source=quiet, bodies_on_demand=True) == []
    found = analyze(ast.parse(loud), plan_fixes=False, source=loud, bodies_on_demand=True)
    assert [(f.code, f.line, f.col) for f in found] == [("IPV004", 5, 0)]


def test_a_bare_inplace_function_is_write_syntax():
    # `from torch import sigmoid_`: a call of a bare name ending in `_` writes as `x.sigmoid_()` does (the review's
    # probe: the file was skipped whole, and the whole walk reports it)
    source = "import torch\nfrom torch import sigmoid_\n\n\ndef f(x):\n    y = x.sigmoid()\n    sigmoid_(y)\n    return y\n"
    tree = ast.parse(source)
    assert bodies_needed(tree) == frozenset({"f"})
    whole = analyze(tree, plan_fixes=False, source=source)
    lazy = analyze(tree, plan_fixes=False, source=source, bodies_on_demand=True)
    assert [(f.code, f.line, f.col) for f in lazy] == [(f.code, f.line, f.col) for f in whole] == [("IPV006", 7, 4)]


LOOP_COUNTERS = '''def counted(xs):
    for i in range(3):
        i += 1
    for j, x in enumerate(xs):
        j += len(x)
    line = ""
    for x in xs:
        line += f"{x}"
    return line


def loop_tensor(xs):
    for x in xs:
        x += 1
'''


def test_range_and_enumerate_counters_and_strings_need_no_walk():
    # `for i in range(n)` and the index of `enumerate` are ints; `+=` of a string or f-string never meets a tensor
    # (it would raise); a loop variable over anything else may be a tensor (`for x in xs: x += 1` writes each)
    assert bodies_needed(ast.parse(LOOP_COUNTERS)) == frozenset({"loop_tensor"})
