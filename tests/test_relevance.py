"""The flake8 plugin without a project cache walks at the end only the function bodies a finding can come from
(:mod:`inplace_lint.analysis.relevance`): the findings must be the ones a whole walk gives."""
from __future__ import annotations

import ast
import pathlib

import pytest

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
