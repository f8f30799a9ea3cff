"""What is advertised is what is applied (issue 8): a finding advertises a fix in a mode (safe, or
with --unsafe-fixes) and style if and only if ``fix`` in that mode and style applies it, and the
text ``fix`` writes equals the advertised edits applied. Checked on every fixture and on a generated
family: statement forms x suites (plain, if/for/while/with/try bodies, one-line suites) x styles.

Also: the text ``[fix: ...]`` note (plans only, no codemod) agrees with the edits; a finding's own
edits make a file that parses; a second ``fix`` changes nothing; the codemod's text path writes
exactly what its libcst path writes.
"""
from __future__ import annotations

import ast
import itertools
import pathlib

import pytest

from inplace_lint import floor
from inplace_lint.config import DEFAULT_SETTINGS
from inplace_lint.findings import Applicability
from inplace_lint.fix import attach
from inplace_lint.fix.edits import apply_edits
from inplace_lint.fixing import fix_code
from inplace_lint.pipeline import check_source

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures" / "fix").glob("*.in.py")) + sorted((ROOT / "fixtures" / "detect").rglob("*.py"))
STYLES = [("runtime", False), ("inline", False), ("runtime", True)]  # (style, memory_aware)

# ---------------------------------------------------------------- the generated family

#: statement forms on `x` (a view of a model output), as one or more lines at indentation 0
FORMS = {
    "method": "x.div_(t)",
    "method_kw": "x.add_(b, alpha=2)",
    "method_comment": "x.mul_(t)  # scale",
    "method_multiline": "x.masked_fill_(\n    m,  # mask\n    0.0,\n)",
    "augmented": "x /= t",
    "augmented_paren": "x *= (a + b)",
    "clone_first": "x.copy_(y)",
    "no_args": "x.zero_()",
    "subscript": "x[m] = 0",
    "function": "torch.relu_(x)",
    "inplace_kwarg": "F.relu(x, inplace=True)",
    "inplace_kwarg_assign": "x = F.relu(x, inplace=True)",
    "hoist": "p = torch.softmax(x.div_(t), -1)",
    "out_kwarg": "torch.div(x, b, out=x)",  # (`out=x` alone, `x` requiring grad, raises at the write: no fix)
    "unbound": "torch.Tensor.div_(x, t)",
    "semicolon": "q = 1; x.div_(t)",
}
#: suites around the statement: (header lines, indentation of the body, trailer lines)
SUITES = {
    "plain": ([], "", []),
    "if": (["if c:"], "    ", []),
    "for": (["for _ in range(2):"], "    ", []),
    "while": (["while c:"], "    ", ["    break"]),
    "with": (["with ctx:"], "    ", []),
    "try": (["try:"], "    ", ["except ValueError:", "    pass"]),
    "else": (["if c:", "    pass", "else:"], "    ", []),
    "one_line_if": (["if c: "], None, []),
    "one_line_for": (["for _ in range(1): "], None, []),
    "one_line_while": (["while c: "], None, []),
    "one_line_with": (["with ctx: "], None, []),
    "one_line_try": (["try: "], None, ["except ValueError: pass"]),
    "one_line_else": (["if c: pass", "else: "], None, []),
}


def family_source(form: str, suite: str) -> str:
    header, indent, trailer = SUITES[suite]
    stmt = FORMS[form]
    body = []
    if indent is None:  # one-line suite: the statement follows the last header's colon
        body = header[:-1] + [header[-1] + stmt]
    else:
        body = header + [indent + line for line in stmt.split("\n")]
    lines = ["x = model(h).logits.squeeze(0)"] + body + trailer + ["return x"]
    return ("import torch\nimport torch.nn.functional as F\n\n\n"
            "def f(model, h, t, b, m, y, a, c, ctx):\n" + "".join(f"    {ln}\n" for ln in "\n".join(lines).split("\n")))


FAMILY = sorted(itertools.product(FORMS, SUITES))


# ---------------------------------------------------------------- the invariant


def advertised(source, style, memory_aware, unsafe):
    findings = check_source(source, "m.py", DEFAULT_SETTINGS, fix_style=style, memory_aware=memory_aware).findings
    return findings, [f for f in findings if f.fix is not None and f.fix.edits and
                      (unsafe or f.fix.applicability is Applicability.SAFE)]


def check_invariant(source: str, style: str, memory_aware: bool) -> int:
    """Asserts the invariant for both modes; returns how many fixes were advertised (unsafe mode)."""
    plans = check_source(source, "m.py", DEFAULT_SETTINGS).findings
    count = 0
    for unsafe in (False, True):
        findings, shown = advertised(source, style, memory_aware, unsafe)
        # the plan (what `check` text output shows) and the edits agree
        planned = {(f.line, f.col) for f in plans if f.fix is not None and
                   (unsafe or f.fix.applicability is Applicability.SAFE)}
        assert {(f.line, f.col) for f in shown} == planned, "a planned fix has no edits (or the reverse)"
        for f in findings:
            if f.fix is not None:
                assert f.fix.edits, f"fix without edits at line {f.line}"
        result = fix_code(source, "m.py", style=style, unsafe_fixes=unsafe, memory_aware=memory_aware)
        assert result.error is None
        assert sorted((f.line, f.col) for f in result.applied) == sorted((f.line, f.col) for f in shown)
        expected = apply_edits(source, [e for f in shown for e in f.fix.edits]) if shown else source
        assert (result.new_source or source) == expected
        for f in shown:  # one quick fix alone gives a file that parses
            ast.parse(apply_edits(source, f.fix.edits))
        if result.new_source is not None:
            ast.parse(result.new_source)
            again = fix_code(result.new_source, "m.py", style=style, unsafe_fixes=unsafe, memory_aware=memory_aware)
            assert again.new_source is None, "a second fix changed the file again"
        count = len(shown)
    return count


@pytest.mark.parametrize("style, memory_aware", STYLES)
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_fixture(path, style, memory_aware):
    check_invariant(path.read_text(encoding="utf-8"), style, memory_aware)


@pytest.mark.parametrize("style, memory_aware", STYLES)
def test_generated_family(style, memory_aware):
    fixed = {}
    for form, suite in FAMILY:
        source = family_source(form, suite)
        try:
            fixed[(form, suite)] = check_invariant(source, style, memory_aware)
        except AssertionError as exc:
            raise AssertionError(f"{form} in {suite} ({style}, memory_aware={memory_aware}):\n{source}\n{exc}")
    # the family is not vacuous: every form but the semicolon one has a fix in every suite
    assert {k for k, n in fixed.items() if not n} == {("semicolon", s) for s in SUITES}, \
        sorted(k for k, n in fixed.items() if not n)


def test_family_size():
    assert len(FAMILY) * len(STYLES) == len(FORMS) * len(SUITES) * 3 == 624


def both_printers(source, style, memory_aware, monkeypatch):
    """The findings of one check (their fixes' recipes planned once) printed by the text printer where it
    covers the statement, and by the libcst printer alone: the two printers of the same recipes."""
    findings = check_source(source, "m.py", DEFAULT_SETTINGS).findings
    tree, torch_floor = ast.parse(source), floor.for_path("m.py").torch
    fast = attach.attach_edits(source, tree, findings, style, memory_aware, torch_floor)
    with monkeypatch.context() as patch:
        patch.setattr(attach, "print_text", lambda *args: False)
        slow = attach.attach_edits(source, tree, findings, style, memory_aware, torch_floor)
    return fast, slow


@pytest.mark.parametrize("form, suite", FAMILY)
def test_text_path_writes_what_libcst_writes(form, suite, monkeypatch):
    source = family_source(form, suite)
    for style, memory_aware in STYLES:
        fast, slow = both_printers(source, style, memory_aware, monkeypatch)
        assert [f.fix and f.fix.edits for f in fast] == [f.fix and f.fix.edits for f in slow], style


@pytest.mark.parametrize("operand", ["t", "2", "-1.5", "t.clamp(min=1e-8).unsqueeze(-1).to(x.dtype)", "a + b * c",
                                     "a and b or c", "self.scale", "temps[i]", "torch.ones(3)", "math.pi", "f(t)",
                                     "(t)", "x > 0", "*args", "t, alpha=s", "'s'", "None", "...", "f'{t}'"])
@pytest.mark.parametrize("style, memory_aware", STYLES)
def test_text_path_operands(operand, style, memory_aware, monkeypatch):
    """The guard's operand rule in the text path (ast) and the libcst path agree."""
    source = ("import math\nimport torch\n\ndef f(model, h, t, a, b, c, s, temps, i, args):\n"
              f"    x = model(h).logits.squeeze(0)\n    x.mul_({operand})\n    return x\n")
    fast, slow = both_printers(source, style, memory_aware, monkeypatch)
    assert [f.fix and f.fix.edits for f in fast] == [f.fix and f.fix.edits for f in slow]


# ---------------------------------------------------------------- the two disagreements of issue 8


def test_one_line_suites_are_fixed_as_advertised():
    source = ("def f(model, h, T):\n    x = model(h).logits.squeeze(0)\n    if T != 1: x.div_(T)\n"
              "    for _ in range(1): x /= 2\n    return x\n")
    [a, b] = check_source(source, "m.py", DEFAULT_SETTINGS, fix_style="runtime").findings
    assert a.fix.applicability is b.fix.applicability is Applicability.SAFE
    assert fix_code(source, style="runtime").new_source == (
        "from inplace_lint.runtime import out_of_place, scale_logits\n\n"
        "def f(model, h, T):\n    x = model(h).logits.squeeze(0)\n    if T != 1:\n"
        '        x = out_of_place(x, "div_", T)\n    for _ in range(1):\n        x = scale_logits(x, 2, inplace="auto")\n'
        "    return x\n")


def test_module_built_inplace_advertises_no_fix():
    source = ("import torch.nn as nn\n\nclass Pooler(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
              "        self.dropout = nn.Dropout(0.1, inplace=True)\n\n    def forward(self, backbone, px):\n"
              "        pooled = backbone(px).pooler_output\n        return self.dropout(pooled)\n")
    [finding] = check_source(source, "m.py", DEFAULT_SETTINGS).findings
    assert (finding.line, finding.fix) == (10, None)
    result = fix_code(source, unsafe_fixes=True)
    assert result.new_source is None and result.unfixed == [finding]
