"""A fresh review's cases against fix safety and IPV006's saved table (each executed under torch 2.13):
another reference the rewrite would hide the write from (a set or a buffer's ``add``, a callee's ``global``,
an in-place call's input, a view passed to a helper, a method called through an untyped receiver, an
``nn.Identity`` head), a hoist past an expression that raises, writes that raise where they stand (so a
rewrite that runs on would hide the error), and outputs autograd does not save for some arguments."""
from __future__ import annotations

import textwrap

import pytest

from inplace_lint.analysis import analyze_source
from inplace_lint.findings import Applicability
from inplace_lint.fixing import fix_code
from tests.executed import marked_line, observe

torch = pytest.importorskip("torch")

HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"

#: (name, source after HEADER (the write marked `# <-`), unused, reason start): each defines `observe()`
UNSAFE = [
    ("set.add keeps the tensor", """
     def f(x):
         y = x.exp()
         seen = set()
         seen.add(y)
         y.add_(1)  # <-
         return seen


     def observe():
         return [t.detach() for t in f(torch.zeros(2, requires_grad=True))][0]
     """, None, "`y` is passed to `seen.add`"),
    ("a project buffer's add keeps it", """
     class Buffer:
         def __init__(self):
             self.items = []

         def add(self, t):
             self.items.append(t)


     def f(x, buf):
         y = x.exp()
         buf.add(y)
         y.mul_(2)  # <-
         return y


     def observe():
         buf = Buffer()
         f(torch.zeros(2, requires_grad=True), buf)
         return buf.items[0].detach()
     """, None, "`y` is passed to `buf.add`"),
    ("the callee keeps its result in a global", """
     _LAST = None


     def helper(x):
         global _LAST
         y = x.exp()
         _LAST = y
         return y


     def f(x):
         z = helper(x)
         z.add_(1)  # <-
         return z


     def observe():
         f(torch.zeros(2, requires_grad=True))
         return _LAST.detach()
     """, None, "`z` holds what `helper()` returns"),
    ("an in-place call returns its input", """
     def f(x):
         h = x * 1
         y = F.relu(h, inplace=True)
         y.mul_(2)  # <-
         return h


     def observe():
         return f(torch.ones(3, requires_grad=True)).detach()
     """, None, "`h` is read after the write"),
    ("torch.sigmoid_ returns its input", """
     def f(x):
         h = x * 1
         y = torch.sigmoid_(h)
         y.mul_(2)  # <-
         return h


     def observe():
         return f(torch.ones(3, requires_grad=True)).detach()
     """, None, "`h` is read after the write"),
    ("an nn.Identity head returns its input", """
     class Net(nn.Module):
         def __init__(self, project=False):
             super().__init__()
             self.body = nn.Linear(3, 3)
             self.proj_head = nn.Linear(3, 3) if project else nn.Identity()

         def forward(self, x, t):
             h = self.body(x)
             z = self.proj_head(h)
             z.div_(t)  # <-
             return z, h


     def observe():
         torch.manual_seed(0)
         return Net()(torch.ones(1, 3), 2.0)[1].detach()
     """, None, "`self.proj_head` may be a module that returns its input itself"),
    ("a helper given a view of a model output", """
     def scale(logits, t):
         logits.div_(t)  # <-
         return logits


     def caller(model, x):
         out = model(x)
         scale(out.view(-1), 2.0)
         return out


     def observe():
         torch.manual_seed(0)
         return caller(nn.Linear(3, 3), torch.ones(1, 3)).detach()
     """, None, "`logits` is a parameter"),
    ("a public method called through a receiver of unknown class", """
     class Scaler:
         def scale(self, logits, t):
             logits.div_(t)  # <-
             return logits

         def run(self, model, x):
             out = model(x)
             return self.scale(out, 2.0)


     def other(scaler, model, x):
         out = model(x)
         scaler.scale(out, 2.0)
         return out


     def observe():
         torch.manual_seed(0)
         return other(Scaler(), nn.Linear(3, 3), torch.ones(1, 3)).detach()
     """, None, "`logits` is a parameter"),
]


def _src(body: str) -> str:
    return HEADER + textwrap.dedent(body)


@pytest.mark.parametrize("name, body, line, reason", UNSAFE, ids=[c[0] for c in UNSAFE])
def test_another_reference_makes_the_fix_unsafe_and_applying_it_changes_values(name, body, line, reason):
    src = _src(body)
    [finding] = [f for f in fix_code(src).unsafe_skipped if f.line == marked_line(src)]
    assert finding.fix.applicability is Applicability.UNSAFE and finding.fix.reason.startswith(reason), \
        finding.fix.reason
    assert fix_code(src).new_source is None
    forced = fix_code(src, unsafe_fixes=True).new_source
    assert forced is not None and not torch.equal(observe(src), observe(forced))


#: (name, source after HEADER (the write marked `# <-`), unused, what the original raises there)
RAISES_AT_WRITE = [
    ("hoisted past a subscript that raises", """
     def f(x, t, w):
         y = x.exp()
         z = w[5] + y.div_(t)  # <-
         return z
     """, None, KeyError),
    ("hoisted past a key that is missing", """
     def f(x, t, w):
         y = x.exp()
         z = w["mask"] * y.div_(t)  # <-
         return z
     """, None, KeyError),
    ("an operand overlaps the written tensor", """
     def f(x, t, w):
         y = x.exp()
         y.add_(y.t())  # <-
         return y
     """, None, RuntimeError),
    ("a leaf that requires grad", """
     def f(x, t, w):
         v = torch.ones(2, 2, requires_grad=True)
         z = torch.log(v) * x
         v.add_(1)  # <-
         return z
     """, None, RuntimeError),
    ("out= a tensor that requires grad", """
     def f(x, t, w):
         y = x.exp()
         torch.mul(t, t, out=y)  # <-
         return y
     """, None, RuntimeError),
]


@pytest.mark.parametrize("name, body, line, error", RAISES_AT_WRITE, ids=[c[0] for c in RAISES_AT_WRITE])
def test_a_write_that_raises_before_any_backward_gets_no_fix(name, body, line, error):
    src = _src(body)
    [finding] = [f for f in analyze_source(src) if f.line == marked_line(src)]
    assert finding.fix is None
    assert fix_code(src, unsafe_fixes=True).new_source is None
    namespace: dict = {}
    exec(compile(src, "<case>", "exec"), namespace)
    with pytest.raises(error):
        namespace["f"](torch.ones(2, 2, requires_grad=True), torch.ones(2, 2), {})


#: outputs autograd does not save for these arguments, and expansions that broadcast nothing: no finding
NOT_SAVED = """
def powers(x):
    y = torch.linalg.matrix_power(x, 2)
    y.add_(1)
    z = x.matrix_power(3)
    z.mul_(2)
    return y + z


def hard_sample(x):
    y = F.gumbel_softmax(x, tau=1.0, hard=True)
    y.add_(1)
    return y


def nuclear(x):
    y = torch.linalg.matrix_norm(x, ord="nuc")
    y.add_(1)
    z = torch.norm(x, p="nuc")
    z.mul_(2)
    w = x.norm(p="nuc")
    w.mul_(2)
    return y + z + w


def medians(x):
    v, i = x.median(dim=0)
    v.add_(1)
    return v


def same_shape(x):
    y = x.expand_as(x)
    y.add_(1)
    t = x * 1
    u = t.expand(t.shape)
    u.mul_(2)
    s = x * 1
    v = s.expand(-1, -1)
    v.add_(1)
    return y.sum() + t.sum() + s.sum()
"""


def test_outputs_not_saved_for_these_arguments_get_no_finding_and_backpropagate():
    src = HEADER + NOT_SAVED
    assert analyze_source(src) == []
    namespace: dict = {}
    exec(compile(src, "<case>", "exec"), namespace)
    for name in ("powers", "hard_sample", "nuclear", "medians", "same_shape"):
        x = (torch.eye(3) * 2 + 0.1).requires_grad_()
        namespace[name](x * 1).sum().backward()  # no "modified by an inplace operation"
        assert x.grad is not None
    x = (torch.eye(3) * 2 + 0.1).requires_grad_()
    y = torch.linalg.matrix_power(x, -1)  # a negative power is an inverse: its output is saved
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_a_full_reduction_saves_its_output():
    """``h.max()`` / ``torch.min(h)`` (no ``dim``, one tensor) save their output, though their ``dim`` and
    two-tensor forms do not (a review's miss, executed)."""
    src = HEADER + textwrap.dedent("""
        def peak(model, x):
            h = model(x).logits
            m = h.max()
            m.mul_(2)  # <-
            return m


        def dims(model, x):
            h = model(x).logits
            v = torch.max(h, h * 2)
            v.mul_(2)
            return v
        """)
    assert [(f.line, f.code) for f in analyze_source(src)] == [(marked_line(src), "IPV006")]
    h = torch.randn(3, requires_grad=True)
    for reduce in (lambda t: t.max(), lambda t: torch.min(t)):
        m = reduce(h * 1)
        m.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            m.backward()
    v = torch.max(h * 1, h * 2)
    v.mul_(2)
    v.sum().backward()  # the two-tensor form saves its inputs, not its output


@pytest.mark.parametrize("tail", [";", "  ;  # note", " \\\n    # a comment line"])
def test_a_statement_ending_in_a_semicolon_or_continuation_advertises_no_fix(tail):
    from inplace_lint.config import DEFAULT_SETTINGS
    from inplace_lint.pipeline import check_source

    src = f"import torch\n\n\ndef f(x, t):\n    y = x.exp()\n    y.div_(t){tail}\n    return y\n"
    [finding] = check_source(src, "m.py", DEFAULT_SETTINGS).findings
    assert finding.fix is None and finding.no_fix.startswith("the statement ends with")
    assert fix_code(src, unsafe_fixes=True).new_source is None
