"""Tests of a local that a later test repeats (:mod:`inplace_lint.analysis.local_conds`), each executed under
torch 2.13: a value made, or left, under one test of a local does not reach a write under a test that the same
value cannot meet (botorch's initialisation strategy, gromo's pseudo-inverse flag copied to another local); a
test of a name bound again in a loop, or of a list that is appended to, decides nothing."""
from __future__ import annotations

import textwrap

import pytest

from inplace_lint.analysis import analyze_source
from tests.executed import load as _load
from inplace_lint.analysis.local_conds import conflict

torch = pytest.importorskip("torch")

STRATEGY = """
import torch


def init(opt: dict, n: int):
    strategy = opt.get("strategy", "spaced")
    cands = torch.zeros(n, 3)
    if strategy == "relax":
        cands = torch.rand(1, 3).expand(n, 3)
    if strategy == "spaced":
        cands[:, 0] = 1.0
    return cands
"""


def test_a_string_local_tested_twice_against_two_constants():
    src = textwrap.dedent(STRATEGY)
    assert analyze_source(src) == []
    init = _load(src)["init"]
    assert init({"strategy": "spaced"}, 3)[:, 0].tolist() == [1.0, 1.0, 1.0]
    assert init({"strategy": "relax"}, 3).shape == (3, 3)


def test_the_write_under_a_test_the_expanded_value_meets_stays_a_finding():
    src = textwrap.dedent(STRATEGY).replace('if strategy == "spaced":', 'if strategy != "spaced":')
    [finding] = analyze_source(src)
    assert (finding.code, finding.line, finding.col) == ("IPV004", 11, 8)
    with pytest.raises(RuntimeError, match="single memory location"):
        _load(src)["init"]({"strategy": "relax"}, 3)


PSEUDO_INVERSE = """
import torch
from torch import Tensor


def delta(s: Tensor, m: Tensor, force: bool = False):
    d = None
    if not force:
        try:
            d = torch.linalg.solve(s, m).t()
        except RuntimeError:
            force = True
    if force:
        d = (torch.linalg.pinv(s) @ m).t()
    if not force:
        return d
    d.zero_()
    return d
"""


def test_a_flag_bound_again_in_a_handler_keeps_its_later_tests_correlated():
    src = textwrap.dedent(PSEUDO_INVERSE)
    assert analyze_source(src) == []
    delta = _load(src)["delta"]
    s = torch.eye(2, requires_grad=True)
    for force in (False, True):
        delta(s, torch.ones(2, 2), force).sum().backward()


def test_without_the_repeated_test_the_solve_output_is_written():
    src = textwrap.dedent(PSEUDO_INVERSE).replace("    if not force:\n        return d\n", "")
    [finding] = analyze_source(src)
    assert (finding.code, finding.line, finding.col) == ("IPV006", 15, 4)
    s = torch.eye(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _load(src)["delta"](s, torch.ones(2, 2)).sum().backward()


COPIED = """
import torch
from torch import Tensor


def scaled(x: Tensor, flag: bool = False):
    if x.sum() > 0:
        flag = True
    use = flag
    y = x * 2
    if not use:
        y = x.exp()
    if flag:
        y.mul_(2)
    return y
"""


def test_a_flag_copied_to_another_local_is_the_same_test():
    src = textwrap.dedent(COPIED)
    assert analyze_source(src) == []
    x = torch.ones(2, requires_grad=True)
    for sign in (1, -1):
        _load(src)["scaled"](sign * x).sum().backward()


def test_a_list_appended_to_between_two_tests_decides_nothing():
    src = textwrap.dedent("""
    import torch
    from torch import Tensor


    def mutated(x: Tensor):
        seen = []
        y = x * 2
        if not seen:
            y = x.exp()
        seen.append(1)
        if seen:
            y.mul_(2)
        return y
    """)
    [finding] = analyze_source(src)
    assert (finding.code, finding.line, finding.col) == ("IPV006", 13, 8)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _load(src)["mutated"](torch.ones(2, requires_grad=True)).sum().backward()


def test_a_name_bound_again_in_the_loop_decides_nothing():
    src = textwrap.dedent("""
    import torch
    from torch import Tensor


    def looped(x: Tensor):
        flag = False
        y = x * 2
        for i in range(2):
            if flag:
                y.mul_(2)
            if not flag:
                y = x.exp()
            flag = True
        return y
    """)
    [finding] = analyze_source(src)
    assert (finding.code, finding.line, finding.col) == ("IPV006", 11, 12)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _load(src)["looped"](torch.ones(2, requires_grad=True)).sum().backward()


@pytest.mark.parametrize("a, b, expected", [
    (("local:1", True, (), "==", "a"), ("local:1", True, (), "==", "b"), True),
    (("local:1", True, (), "==", "a"), ("local:1", False, (), "==", "b"), False),
    (("local:1", True, (), "", None), ("local:1", False, (), "", None), True),
    (("local:1", True, (), "is", None), ("local:1", True, (), "", None), True),
    (("local:1", True, (), "==", 0), ("local:1", True, (), "is", False), False),
    (("local:1", True, (), "in", ("a", "b")), ("local:1", True, (), "==", "b"), False),
    (("local:1", True, (), "in", ("a", "b")), ("local:1", True, (), "==", "c"), True),
    (("local:1", True, (), ">", 1), ("local:1", True, (), "<", 3), False),
    (("local:1", True, (), "==", "a"), ("local:2", True, (), "==", "b"), False),
])
def test_which_two_tests_no_value_meets(a, b, expected):
    assert conflict(a, b) is expected


# A review's cases (each raises at backward with `i == 0`): a test's negation stated by `if ...: raise/return` holds
# only for the rest of its block, and a binding the walk makes otherwise than by assignment renews the ident.
MODULE = """
import contextlib
import torch
from torch import nn


def pick(i):
    return "a" if i == 0 else "b"


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, inp, i: int):
        y = self.lin(inp)
BODY
        return x
"""

BODIES = {
    "raise caught by a handler": """
        s = pick(i)
        x = y + 0
        if s == "a":
            x = y.exp()
        try:
            if s == "a":
                raise RuntimeError("fallback")
        except RuntimeError:
            pass
        x.mul_(2)""",
    "raise swallowed by a context manager": """
        s = pick(i)
        x = y + 0
        if s == "a":
            x = y.exp()
        with contextlib.suppress(RuntimeError):
            if s == "a":
                raise RuntimeError("fallback")
        x.mul_(2)""",
    "a finally block runs on the return path": """
        s = pick(i)
        x = y + 0
        if s == "a":
            x = y.exp()
        try:
            if s == "a":
                return x
        finally:
            x.mul_(2)""",
    "a return in a loop that may run no pass": """
        s = pick(i)
        x = y + 0
        if s == "a":
            x = y.exp()
        for _ in range(i):
            if s == "a":
                return x
        x.mul_(2)""",
    "a counter bumped by augmented assignment": """
        n = 0
        x = y + 0
        if n == 0:
            x = y.exp()
        n += 1
        if n == 1:
            x.mul_(2)""",
    "a match pattern captures the name again": """
        s = pick(i)
        x = y + 0
        if s == "a":
            x = y.exp()
        match {"k": "b"}:
            case {"k": s}:
                pass
        if s == "b":
            x.mul_(2)""",
    "a comparison of tensors is a tensor an in-place op can flip": """
        flag = y.sum() > -100
        x = y + 0
        if flag:
            x = y.exp()
        flag.logical_not_()
        if not flag:
            x.mul_(2)""",
}


@pytest.mark.parametrize("case", sorted(BODIES))
def test_a_condition_that_may_no_longer_hold_decides_nothing(case):
    src = textwrap.dedent(MODULE).replace("BODY", textwrap.indent(textwrap.dedent(BODIES[case]).strip("\n"), " " * 8))
    line = next(n for n, text in enumerate(src.splitlines(), 1) if "x.mul_(2)" in text)
    found = [(f.code, f.line) for f in analyze_source(src)]
    assert found == [("IPV006", line)]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _load(src)["M"]()(torch.ones(2, 3), 0).sum().backward()
