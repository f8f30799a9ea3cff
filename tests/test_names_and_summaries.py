"""Name resolution through imports, and what function summaries record (issue 9, items 1-5)."""
from __future__ import annotations

import ast
import pathlib

from inplace_lint.analysis import analyze_source
from inplace_lint.analysis.names import import_bindings, qualify
from inplace_lint.findings import Applicability

FIXTURE = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "detect" / "IPV001" / "across_calls.py"


def _bind(code: str, package: str = ""):
    return import_bindings(ast.parse(code).body[0], package)


def test_import_bindings():
    assert _bind("import torch.nn.functional as Fn") == {"Fn": "torch.nn.functional"}
    # (what binds no name of its own is kept under a key no name can be: the module still counts as imported)
    assert _bind("import torch.nn.functional") == {"torch": "torch", "*torch.nn.functional": "torch.nn.functional"}
    assert _bind("from torch.nn.functional import relu_ as r, gelu") == {
        "r": "torch.nn.functional.relu_", "gelu": "torch.nn.functional.gelu"}
    assert _bind("from .ops import scale_", "rl") == {"scale_": "rl.ops.scale_"}
    assert _bind("from .. import ops", "rl.sub") == {"ops": "rl.ops"}
    assert _bind("from numpy import *") == {"*numpy": "numpy"}
    assert _bind("from ._knn import *", "pkg.ops") == {"*pkg.ops._knn": "pkg.ops._knn"}


def test_qualify():
    names = {"np": "numpy", "Fn": "torch.nn.functional"}
    local = {"x"}.__contains__
    assert qualify(ast.parse("np.exp", mode="eval").body, names, local) == ("numpy.exp", True)
    assert qualify(ast.parse("Fn.relu_", mode="eval").body, names, local) == ("torch.nn.functional.relu_", True)
    assert qualify(ast.parse("x.exp", mode="eval").body, names, local) == (None, False)
    # unimported snippets: F and torch are read literally
    assert qualify(ast.parse("F.relu", mode="eval").body, names, local) == ("torch.nn.functional.relu", False)


def test_shadowing_an_import_ends_it():
    source = (
        "import torch.nn.functional as F\n"
        "def f(model, x, t):\n"
        "    F = object()\n"
        "    F.relu_(model(x).logits)\n"
        "def g(model, x):\n"
        "    F.relu_(model(x).logits)\n"
    )
    assert [(f.line, f.code) for f in analyze_source(source)] == [(6, "IPV001")]


def test_callee_finding_names_the_call_site_and_its_fix_checked_the_callers():
    findings = {f.line: f for f in analyze_source(FIXTURE.read_text(), filename=str(FIXTURE))}
    inside = findings[16]
    assert inside.message.endswith("model output `model_forward_step(...)`, passed by the call at line 13")
    assert inside.related[0].line == 13 and inside.related[0].message.startswith("call site passing")
    assert inside.fix is not None and inside.fix.applicability is Applicability.SAFE
    assert "callers in this project checked: 1" in inside.fix.message
    at_call = findings[41]
    assert at_call.message.startswith("`div_` in `scale_()` (line 36) writes in place to `out.logits.squeeze(0)`")
    assert at_call.fix is None  # the write is in the helper: nothing to rewrite at the call


def test_a_caller_that_reads_what_it_passed_keeps_the_fix_unsafe():
    source = (
        "def scale(logits, t):\n"
        "    logits.div_(t)\n"
        "    return logits\n"
        "def step(model, ids, t):\n"
        "    out = model(ids).logits\n"
        "    y = scale(out, t)\n"
        "    return y, out\n"
    )
    (finding,) = analyze_source(source)
    assert (finding.line, finding.code) == (2, "IPV001")
    assert finding.fix.applicability is Applicability.UNSAFE


def test_writes_pass_through_helpers_of_helpers():
    source = (
        "def inner_(x, t):\n"
        "    x.mul_(t)\n"
        "def outer_(x, t):\n"
        "    inner_(x, t)\n"
        "def step(model, ids, t):\n"
        "    outer_(model(ids).logits, t)\n"
    )
    (finding,) = analyze_source(source)
    assert (finding.line, finding.code) == (6, "IPV001")
    assert "`mul_` in `inner_()` (line 2)" in finding.message
