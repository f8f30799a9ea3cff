"""The eighteenth session's fix review (each executed under torch 2.13): a written name that may hold the caller's
tensor because a call may return its argument. A helper with a path that returns its parameter (``if flag: return
x``, a view of it), a function returned as a value that is an identity (a project function, ``lambda x: x``,
``functools.partial``, ``torch.Tensor.requires_grad_``), and a view of an expanded view of a parameter taken by a
torch function (``torch.diagonal``): the walk keeps the parameter's placeholder in the written name's value, and the
fix is unsafe. Forced, the rewrite leaves the caller's tensor unchanged where the original changed it."""
from __future__ import annotations

import textwrap

import pytest

from inplace_lint.analysis import analyze_source
from inplace_lint.findings import Applicability
from inplace_lint.fixing import fix_code
from tests.executed import marked_line, observe

torch = pytest.importorskip("torch")

HEADER = "import functools\n\nimport torch\n\n\n"

#: (name, source after HEADER (the write marked `# <-`), reason start): each defines `observe()`, the caller's tensor
CASES = [
    ("a helper returns its parameter on a path", """
     def _maybe(x, flag):
         if flag:
             return x
         return torch.sigmoid(x)


     def f(x, k, flag):
         y = _maybe(x, flag)
         y.mul_(k)  # <-
         return y


     def observe():
         x = torch.ones(3)
         f(x, 2.0, True)
         return x
     """, "`y` may hold the tensor passed as `x`"),
    ("a helper returns a view of its parameter on a path", """
     def _flat(x, flag):
         if flag:
             return x.view(-1)
         return torch.sigmoid(x)


     def f(x, k, flag):
         y = _flat(x, flag)
         y.mul_(k)  # <-
         return y


     def observe():
         x = torch.ones(2, 3)
         f(x, 2.0, True)
         return x
     """, "`y` may hold the tensor passed as `x`"),
    ("a returned lambda is an identity", """
     def _sig(x):
         return torch.sigmoid(x)


     def get(name):
         if name == "sigmoid":
             return _sig
         return lambda x: x


     def f(x, name):
         fn = get(name)
         y = fn(x)
         y.mul_(2.0)  # <-
         return y


     def observe():
         x = torch.ones(3)
         f(x, "id")
         return x
     """, "`y` may hold the tensor passed as `x`"),
    ("a returned partial is an identity", """
     def _sig(x):
         return torch.sigmoid(x)


     def _ident(x):
         return x


     def get(name):
         if name == "sigmoid":
             return _sig
         return functools.partial(_ident)


     def f(x, name):
         fn = get(name)
         y = fn(x)
         y.mul_(2.0)  # <-
         return y


     def observe():
         x = torch.ones(3)
         f(x, "id")
         return x
     """, "`y` may hold the tensor passed as `x`"),
    ("a returned in-place method returns its receiver", """
     def _sig(x):
         return torch.sigmoid(x)


     def get(name):
         return _sig if name == "sigmoid" else torch.Tensor.requires_grad_


     def f(x, name):
         fn = get(name)
         y = fn(x)
         y.mul_(2.0)  # <-
         return y


     def observe():
         x = torch.ones(3)
         with torch.no_grad():  # (the returned `requires_grad_` makes `x` a leaf that requires grad)
             f(x, "id")
         return x.detach()
     """, "`y` may hold the tensor passed as `x`"),
    ("torch.diagonal of an expanded view of a parameter", """
     def f(x):
         u = torch.diagonal(x.unsqueeze(0).expand(2, 2, 3), 0, 0, 1).T
         s = u.var(-1)
         u -= u.mean(-1, keepdim=True)  # <-
         return u, s


     def observe():
         x = torch.arange(6.0).view(2, 3)
         f(x)
         return x
     """, "`u` may be `x` (line 8), a parameter"),  # (torch.diagonal's input: `fixplan.shared_base`)
]


def _src(body: str) -> str:
    return HEADER + textwrap.dedent(body)


@pytest.mark.parametrize("name, body, reason", CASES, ids=[c[0] for c in CASES])
def test_a_call_that_may_return_its_argument_makes_the_fix_unsafe(name, body, reason):
    # the analysis sees the code without its driver (whose constant arguments would decide each call), as a
    # library's caller it cannot see
    code, driver = _src(body).split("\n\ndef observe")
    driver = "\n\ndef observe" + driver
    line = marked_line(code)
    [finding] = [f for f in fix_code(code).unsafe_skipped if f.line == line]
    assert finding.fix.applicability is Applicability.UNSAFE and finding.fix.reason.startswith(reason), \
        finding.fix.reason
    assert fix_code(code).new_source is None
    forced = fix_code(code, unsafe_fixes=True).new_source
    assert forced is not None and not torch.equal(observe(code + driver), observe(forced + driver))


def test_a_returned_function_that_makes_a_new_tensor_keeps_its_safe_fix():
    src = _src("""
     def _sig(x):
         return torch.sigmoid(x)


     def get():
         return _sig


     def f(x):
         fn = get()
         y = fn(x)
         y.mul_(2.0)
         return y
     """)
    [finding] = analyze_source(src)
    assert finding.fix.applicability is Applicability.SAFE
