"""Fix planning in a long function looks up what it needs instead of scanning the function at each finding
(issue 21 item 3: 3,000 in-place statements in one function took 68 s). The indexes must not change any
finding: here every lookup (and every merge of branches) is replaced by the plain scan it stands for, on
generated functions that mix branches, loops, aliases, escapes, captures and hooks, and the findings (with
their fixes' applicability and reasons) must be the same. Speed itself is measured by benchmarks/bench_long_function.py.
"""
from __future__ import annotations

import ast
import random

import pytest

from inplace_lint.analysis import fixplan, reporting, statements
from inplace_lint.config import DEFAULT_SETTINGS
from inplace_lint.pipeline import check_source

STATEMENTS = [
    "{v} = model(h).logits.squeeze(0)", "{v}.div_(t)", "{v} /= t", "{w} = {v}.view(-1)", "{w}.mul_(2)",
    "keep.append({v})", "g({v})", "print({v}.sum())", "{v}[m] = 0", "{w} = {v}", "cb = lambda: {v}.sum()",
    "torch.relu_({v})", "{v}.add_(1)", "out = {v} + {w}", "{v}.register_hook(hook)", "yield {v}",
    "{v} = {v}.clone()", "{w} = {v}.float()", "a, b = {v}.chunk(2)", "a.div_(t)", "p = torch.exp({v}.div_(t))",
    "q = 1; {v}.mul_(t)",
]


def block(rng: random.Random, depth: int, n: int):
    lines = []
    for _ in range(n):
        r = rng.random()
        if depth < 3 and r < 0.12:
            lines.append("if c:")
            lines += ["    " + ln for ln in block(rng, depth + 1, rng.randint(1, 4))]
            if rng.random() < 0.5:
                lines.append("else:")
                lines += ["    " + ln for ln in block(rng, depth + 1, rng.randint(1, 4))]
        elif depth < 3 and r < 0.2:
            lines.append("for i in range(3):")
            lines += ["    " + ln for ln in block(rng, depth + 1, rng.randint(1, 4))]
        else:
            statement = rng.choice(STATEMENTS)
            if statement.startswith(("yield", "cb =", "g(")) and rng.random() < 0.7:
                statement = "pass"
            lines.append(statement.format(v=rng.choice("xyz"), w=rng.choice("uvw")))
    return lines


def generated(seed: int) -> str:
    rng = random.Random(seed)
    body = ["x = model(h).logits.squeeze(0)", "y = model(h).logits[0]", "z = model(h).hidden_states[-1]",
            "u = v = w = x", "keep = []"] + block(rng, 0, 40)
    return "import torch\n\ndef f(model, h, t, m, c, g, hook):\n" + "".join(f"    {ln}\n" for ln in body) + \
        "    return x\n"


def _scan_loads(facts, watched, *_):
    return [load for load in facts.loads if load.id in watched]


def _scan_closure(facts, names, before=None, exclusive=()):
    watched = set(names)
    changed = True
    while changed:
        changed = False
        for stmt in facts.assigns:
            if before is not None and ((stmt.lineno, stmt.col_offset) >= before
                                       or any(lo <= stmt.lineno <= hi for lo, hi in exclusive)):
                continue
            value = stmt.iter if isinstance(stmt, (ast.For, ast.AsyncFor)) else stmt.value
            if value is None:
                continue
            targets = [stmt.target] if not isinstance(stmt, ast.Assign) else stmt.targets
            bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if bound <= watched:
                continue
            for n in ast.walk(value):
                if isinstance(n, ast.Name) and n.id in watched and fixplan.facts.alias_chain_top(facts, n) in (value, stmt):
                    watched |= bound
                    changed = True
                    break
    return watched


def _scan_shares_a_line(stmt, facts):
    parent = facts.parent(stmt)
    for name in ("body", "orelse", "finalbody"):
        siblings = getattr(parent, name, None)
        if isinstance(siblings, list) and any(s is stmt for s in siblings):
            return any(s is not stmt and s.lineno <= (stmt.end_lineno or stmt.lineno)
                       and (s.end_lineno or s.lineno) >= stmt.lineno for s in siblings)
    return False


def _fold_merge(envs, big=()):
    out = {}
    for env in envs:
        for k, v in env.items():
            out[k] = statements.cap(out.get(k, statements.EMPTY) | v) if k in out else v
    return out


def findings(source):
    return [(f.code, f.line, f.col, f.message, f.fix and (f.fix.applicability, f.fix.kind, f.fix.message, f.fix.reason))
            for f in check_source(source, "m.py", DEFAULT_SETTINGS).findings]


@pytest.mark.parametrize("seed", range(40))
def test_indexes_give_the_findings_a_full_scan_gives(seed, monkeypatch):
    source = generated(seed)
    fast = findings(source)
    with monkeypatch.context() as patch:
        patch.setattr(fixplan.safety, "_candidate_loads", _scan_loads)
        patch.setattr(fixplan.safety, "alias_closure", _scan_closure)
        patch.setattr(fixplan.recipe, "alias_closure", _scan_closure)
        patch.setattr(fixplan.recipe, "_shares_a_line", _scan_shares_a_line)
        patch.setattr(reporting.ReportingMixin, "holders", lambda self, origins: None)  # plan scans the env
        patch.setattr(statements, "TOUCHED_MERGE", False)  # every merge folds every entry
        patch.setattr(statements, "merge", _fold_merge)
        slow = findings(source)
    assert fast == slow
    assert any(f[4] is not None for f in fast)


def test_the_generated_functions_reach_every_verdict():
    """The comparison above is not vacuous: the generated functions give safe fixes and each kind of reason."""
    reasons = set()
    for seed in range(40):
        for *_, fix in findings(generated(seed)):
            if fix is not None:
                reasons.add(fix[0].value if not fix[3] else fix[3].split("` ", 1)[1].split(" (line")[0])
    assert {"safe", "is read after the write", "is used by a nested function, lambda or generator",
            "is passed to `keep.append`, which may keep it", "has `.register_hook` on the tensor object",
            "is yielded"} <= reasons, reasons
