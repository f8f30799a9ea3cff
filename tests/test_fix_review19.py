"""The nineteenth session's fix review (each executed under torch 2.13): three routes by which a "safe" rebinding
changed what the program computes.

- A binding later in a loop's body reaches the write on the next pass (``beta.mul_(0.5); beta = x``): the fix
  was planned from the loop's first pass alone. The second pass sees ``beta`` holding ``x``, read after the loop.
- Two tests of ``self.hold`` that the analysis takes to agree, with the flag flipped inside the loop by another
  route (``toggle(self)``). Which paths run is a guess a finding may rest on; a fix is safe only if it is safe on
  the paths the conditions exclude too.
- A helper that may return its argument, called with ``x`` bound to the caller's ``base`` (``x = base``,
  ``base.T``, ``base.view(-1)``), and ``base`` read after the call. The check "no caller reads what it passed"
  looked at ``x`` only, not at the names that share its storage.
- A memo keyed by ``id(y)``: state on the tensor object, which the rebound name is not.

Each fix is unsafe, and forced, the rewrite changes what ``observe()`` returns."""
from __future__ import annotations

import textwrap

import pytest

from inplace_lint.analysis import analyze_source
from inplace_lint.findings import Applicability
from inplace_lint.fixing import fix_code
from tests.executed import marked_line, observe

torch = pytest.importorskip("torch")

HEADER = "import contextlib\nimport copy\n\nimport torch\nfrom torch import nn\n\n\n"

#: (name, source after HEADER (the write marked `# <-`), reason start): each defines `observe()`
CASES = [
    ("a loop carries a binding back to the write", """
     class D(nn.Module):
         def __init__(self):
             super().__init__()
             self.lin = nn.Linear(3, 3)

         def forward(self, h, n: int = 3):
             x = self.lin(h)
             beta = torch.sqrt(x.abs() + 1.0)
             for _ in range(n):
                 beta.mul_(0.5)  # <-
                 beta = x
             return x


     def observe():
         torch.manual_seed(0)
         with torch.no_grad():
             return D()(torch.randn(2, 3))
     """, "`x` is read after the write"),
    ("a flag two tests read is flipped by a helper", """
     def toggle(m):
         m.hold = not m.hold


     class S(nn.Module):
         def __init__(self, hold: bool = False):
             super().__init__()
             self.hold = hold
             self.lin = nn.Linear(3, 3)

         def forward(self, h, n: int = 3):
             x = self.lin(h)
             beta = torch.sqrt(x.abs() + 1.0)
             for _ in range(n):
                 if not self.hold:
                     beta.mul_(0.5)  # <-
                 else:
                     beta = x
                 toggle(self)
             return beta, x


     def observe():
         torch.manual_seed(0)
         with torch.no_grad():
             return S()(torch.randn(2, 3))[1]
     """, "`x` is read after the write"),
    ("an augmented assignment reads the name the loop carries", """
     class D(nn.Module):
         def __init__(self):
             super().__init__()
             self.lin = nn.Linear(3, 3)

         def forward(self, h, n: int = 3):
             x = self.lin(h)
             beta = torch.sqrt(x.abs() + 1.0)
             for _ in range(n):
                 beta *= 0.5  # <-
                 beta = x
             return x


     def observe():
         torch.manual_seed(0)
         with torch.no_grad():
             return D()(torch.randn(2, 3))
     """, "`x` is read after the write"),
    ("a with statement may bind its argument", """
     class W(nn.Module):
         def __init__(self):
             super().__init__()
             self.lin = nn.Linear(3, 3)

         def forward(self, h, flag: bool = True):
             x = self.lin(h)
             beta = torch.sqrt(x.abs() + 1.0)
             if flag:
                 with contextlib.nullcontext(x) as beta:
                     pass
             beta.mul_(0.5)  # <-
             return x


     def observe():
         torch.manual_seed(0)
         with torch.no_grad():
             return W()(torch.randn(2, 3))
     """, "`x` "),
    ("a memo keyed by the tensor's identity", """
     class IdMemo(nn.Module):
         def __init__(self):
             super().__init__()
             self.lin = nn.Linear(3, 3)
             self.memo = {}

         def forward(self, h):
             y = torch.exp(self.lin(h))
             self.memo[id(y)] = 1.0
             y.mul_(2.0)  # <-
             return y * self.memo.get(id(y), 0.0)


     def observe():
         torch.manual_seed(0)
         with torch.no_grad():
             return IdMemo()(torch.randn(2, 3))
     """, "`y` has its identity read by `id(...)`"),
]

#: bindings the walk cannot follow that hand back the object they name
HANDED_BACK = ["[x for _ in range(1)][0]", "next(iter([x]))", "next(t for t in (x,))", "{'a': x}.get('a')",
               "[x].pop()", "(lambda: x)()", "copy.copy(x)", "max([x], key=id)", "types.SimpleNamespace(t=x).t",
               "typing.cast(torch.Tensor, x)", "dict(a=x)['a']", "next(itertools.chain([x]))",
               "torch.broadcast_tensors(x)[0]", "operator.getitem([x], 0)"]

#: statement forms that hand `x` back to `beta` (the `if flag:` arm's body)
HANDED_STATEMENTS = [
    "d = {'a': x}\n            beta = d['a']",
    "xs = []\n            xs.append(x)\n            beta = xs[0]",
    "get = lambda: x\n            beta = get()",
    "with contextlib.nullcontext((x, 1)) as (beta, _):\n                pass",
    "match x:\n                case beta:\n                    pass",
]

#: bindings of fresh tensors: the fix stays safe
FRESH = ["torch.cat([x, x])", "self.lin(x)", "[t.exp() for t in [x]][0]", "dict(a=x.exp())['a']",
         "torch.stack([t * 2 for t in [x, x]])",
         # a binding the next line replaces never reaches the write
         "next(iter([x]))\n            beta = torch.sigmoid(self.lin(h))"]

HANDED = """import contextlib
import copy
import itertools
import operator
import types
import typing

import torch
from torch import nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, h, flag: bool = True):
        x = self.lin(h)
        beta = torch.sqrt(x.abs() + 1.0)
        if flag:
            beta = EXPR
        beta.mul_(0.5)  # <-
        return x
"""

HANDED_DRIVER = """

def observe():
    torch.manual_seed(0)
    with torch.no_grad():
        return M()(torch.randn(2, 3))
"""

#: the caller's route to its own tensor: `x` is bound to it, or to a view of it
CALLER_ROUTES = ["base", "base.T", "base.view(-1)"]

CALLER = """
def _maybe(x, flag):
    if flag:
        return x
    return torch.sigmoid(x)


def _scale(x, k, flag):
    y = _maybe(x, flag)
    y.mul_(k)  # <-
    return y


class C(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, h, k, flag):
        base = self.lin(h)
        x = ROUTE
        y = _scale(x, k, flag)
        return y, base


def observe():
    torch.manual_seed(0)
    with torch.no_grad():
        return C()(torch.randn(2, 3), 2.0, True)[1]
"""


def _unsafe_and_changes(code: str, driver: str, reason: str) -> None:
    line = marked_line(code)
    [finding] = [f for f in fix_code(code).unsafe_skipped if f.line == line]
    assert finding.fix.applicability is Applicability.UNSAFE and finding.fix.reason.startswith(reason), \
        finding.fix.reason
    forced = fix_code(code, unsafe_fixes=True).new_source
    assert forced is not None and not torch.equal(observe(code + driver), observe(forced + driver))


@pytest.mark.parametrize("name, body, reason", CASES, ids=[c[0] for c in CASES])
def test_another_route_to_the_written_tensor_makes_the_fix_unsafe(name, body, reason):
    code, driver = (HEADER + textwrap.dedent(body)).split("\n\ndef observe")
    _unsafe_and_changes(code, "\n\ndef observe" + driver, reason)


@pytest.mark.parametrize("route", CALLER_ROUTES)
def test_a_caller_that_reads_what_its_argument_shares_storage_with_keeps_the_fix_unsafe(route):
    code, driver = (HEADER + CALLER.replace("ROUTE", route)).split("\n\ndef observe")
    _unsafe_and_changes(code, "\n\ndef observe" + driver, "`y` may hold the tensor passed as `x`")


def test_a_caller_that_passes_a_temporary_leaves_the_fix_safe():
    # the same helper and a caller that passes `self.lin(h)` itself: every caller is checked, none can read it after
    code = (HEADER + CALLER.replace("        x = ROUTE\n        y = _scale(x, k, flag)\n",
                                    "        y = _scale(self.lin(h), k, flag)\n")).split("\n\ndef observe")[0]
    assert [(f.line, f.fix.applicability) for f in analyze_source(code)] == [(marked_line(code), Applicability.SAFE)]


@pytest.mark.parametrize("expr", HANDED_BACK)
def test_a_binding_that_may_hand_back_another_local_makes_the_fix_unsafe(expr):
    # (the reason names `x`: read after the write, or an earlier read that lets it out of sight)
    _unsafe_and_changes(HANDED.replace("EXPR", expr), HANDED_DRIVER, "`x` ")


def test_a_torch_op_of_another_local_is_no_route_to_it():
    code = HANDED.replace("EXPR", "torch.cat([x, x])[:2]")
    [finding] = analyze_source(code)
    assert finding.fix.applicability is Applicability.SAFE, finding.fix.reason


@pytest.mark.parametrize("block", HANDED_STATEMENTS)
def test_a_statement_that_may_hand_back_another_local_makes_the_fix_unsafe(block):
    _unsafe_and_changes(HANDED.replace("beta = EXPR", block), HANDED_DRIVER, "`x` ")


@pytest.mark.parametrize("expr", FRESH)
def test_a_binding_of_a_fresh_tensor_leaves_the_fix_safe(expr):
    [finding] = analyze_source(HANDED.replace("EXPR", expr))
    assert finding.fix.applicability is Applicability.SAFE, finding.fix.reason


def test_a_value_handed_back_later_in_a_loop_reaches_the_write_on_the_next_pass():
    code = HANDED.replace("""        if flag:
            beta = EXPR
        beta.mul_(0.5)  # <-""", """        for _ in range(3):
            beta.mul_(0.5)  # <-
            beta = typing.cast(torch.Tensor, x)""")
    _unsafe_and_changes(code, HANDED_DRIVER, "`x` ")
