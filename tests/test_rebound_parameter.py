"""A parameter's name bound again, before the write, to a tensor the function makes itself
(``x = torch.sigmoid(self.norm(x)); x.mul_(2)``): the write does not reach the caller's tensor, and the loads of
``x`` before that binding (``self.norm(x)``) read the caller's tensor, not the written one. The fix is safe
(:func:`inplace_lint.analysis.fixplan.bindings.rebound_before`); before, it was unsafe as "`x` is a parameter".

Every route by which the caller's tensor may still reach the write keeps the fix unsafe, and forcing it changes
what the program computes (each executed under torch)."""
from __future__ import annotations

import textwrap

import pytest

from inplace_lint.analysis import analyze_source
from inplace_lint.findings import Applicability
from inplace_lint.fixing import fix_code
from tests.executed import load, marked_line, observe

torch = pytest.importorskip("torch")

HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"

BLOCK = HEADER + textwrap.dedent("""\
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(3)

        def forward(self, x):
            x = torch.sigmoid(self.norm(x))
            x.mul_(2)  # <-
            return x
    """)


def test_a_rebound_parameter_name_gets_a_safe_fix_with_the_same_values_and_gradients():
    [finding] = analyze_source(BLOCK)
    assert (finding.code, finding.line, finding.col) == ("IPV006", marked_line(BLOCK), 8)
    assert finding.fix.applicability is Applicability.SAFE, finding.fix.reason
    fixed = fix_code(BLOCK).new_source
    assert "        x = x.clone().mul_(2)  # <-\n" in fixed

    def run(src):
        torch.manual_seed(0)
        block = load(src)["Block"]()
        x = torch.randn(2, 3, requires_grad=True)
        out = block(x)
        out.sum().backward()
        return out.detach(), x.grad, block.norm.weight.grad

    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        run(BLOCK)
    reference = BLOCK.replace("x.mul_(2)  # <-", "x = x * 2")
    for got, want in zip(run(fixed), run(reference)):
        assert torch.equal(got, want) and got.dtype == want.dtype


SAFE = [
    ("the caller's tensor kept before the binding", """
     def f(x, keep):
         keep.append(x)
         x = torch.exp(x)
         x.mul_(2)  # <-
         return x


     def observe():
         keep = []
         x = torch.ones(3)
         out = f(x, keep)
         return torch.cat([out, keep[0], x])
     """),
    ("bound twice, the last binding a new tensor", """
     def f(x):
         x = x.view(-1)
         x = torch.exp(x)
         x.mul_(2)  # <-
         return x


     def observe():
         x = torch.ones(3)
         return torch.cat([f(x), x])
     """),
    ("bound again on each pass of a loop", """
     def f(x, keep, n: int = 3):
         for _ in range(n):
             keep.append(x)
             x = torch.exp(x)
             x.mul_(0.5)  # <-
         return x


     def observe():
         keep = []
         x = torch.ones(3)
         out = f(x, keep)
         return torch.cat([out, x, *keep])
     """),
]


SAFE += [
    ("bound to a tensor method's saved output", """
     class Gate(nn.Module):
         def __init__(self):
             super().__init__()
             self.norm = nn.LayerNorm(3)

         def forward(self, x, m):
             x = self.norm(x).softmax(-1)
             x.masked_fill_(m, 0.0)  # <-
             return x


     def observe():
         torch.manual_seed(0)
         x, m = torch.randn(2, 3), torch.tensor([[True, False, False], [False, True, False]])
         return torch.cat([Gate()(x, m), x])
     """),
]


@pytest.mark.parametrize("name, body", SAFE, ids=[c[0] for c in SAFE])
def test_a_binding_that_every_path_runs_makes_the_fix_safe_and_keeps_the_values(name, body):
    code, driver = (HEADER + textwrap.dedent(body)).split("\n\ndef observe")
    driver = "\n\ndef observe" + driver
    [finding] = [f for f in analyze_source(code) if f.line == marked_line(code)]
    assert finding.fix.applicability is Applicability.SAFE, finding.fix.reason
    fixed = fix_code(code).new_source
    with torch.no_grad():
        assert torch.equal(observe(code + driver), observe(fixed + driver))


UNSAFE = [
    ("bound only under a condition", """
     def f(x, c: bool):
         if c:
             x = torch.exp(x)
         x.mul_(2)  # <-
         return x


     def observe():
         x = torch.ones(3)
         f(x, False)
         return x
     """),
    ("the caller's tensor bound back after", """
     def f(x, c: bool):
         old = x
         x = torch.exp(x)
         if c:
             x = old
         x.mul_(2)  # <-
         return x


     def observe():
         x = torch.ones(3)
         f(x, True)
         return x
     """),
    ("a loop around the write binds the caller's tensor", """
     def f(x, y, n: int = 2):
         x = torch.exp(x)
         for _ in range(n):
             x.mul_(2)  # <-
             x = y
         return x


     def observe():
         y = torch.ones(3)
         f(torch.ones(3), y)
         return y
     """),
    ("either arm may be the caller's tensor", """
     def f(x, c: bool):
         x = torch.exp(x) if c else x
         x.mul_(2)  # <-
         return x


     def observe():
         x = torch.ones(3)
         f(x, False)
         return x
     """),
    ("a nested function binds the name", """
     def f(x, c: bool):
         keep = x

         def swap():
             nonlocal x
             x = keep

         x = torch.exp(x)
         if c:
             swap()
         x.mul_(2)  # <-
         return x


     def observe():
         x = torch.ones(3)
         f(x, True)
         return x
     """),
]



#: a fix review's routes (each broke the first version of the rule): the binding hands the caller's tensor back, or
#: keeps the new one somewhere the rebound name is not
UNSAFE += [
    (f"bound to {call}", f"""
     class Act(nn.Module):
         def __init__(self, inplace: bool = True):
             super().__init__()
             self.inplace = inplace
             self.act = nn.ReLU(inplace=True)

         def sigmoid(self, t):
             return t.sigmoid_()

         def forward(self, x):
             x = {call}
             x.mul_(2)  # <-
             return x


     def observe():
         x = torch.ones(3)
         Act()(x)
         return x
     """) for call in ("F.relu(x, inplace=True)", "torch.sigmoid_(x)", "F.leaky_relu(x, 0.1, True)",
                       "F.relu(x, inplace=self.inplace)", "self.act(x)", "self.sigmoid(x)", "torch.Tensor.exp_(x)")
] + [
    ("a helper that returns its argument in place", """
     def act(t):
         return torch.sigmoid_(t)


     def f(x):
         x = act(x)
         x.mul_(2)  # <-
         return x


     def observe():
         x = torch.ones(3)
         f(x)
         return x
     """),
    ("another name for the caller's tensor, written in place", """
     def f(x):
         h = x
         x = F.relu(h, inplace=True)
         x.mul_(2)  # <-
         return x


     def observe():
         x = torch.ones(3)
         f(x)
         return x
     """),
] + [
    (f"the new tensor also bound to {where}", f"""
     class Keep(nn.Module):
         def forward(self, x, d, outs):
             {binding}
             x.mul_(2)  # <-
             return x


     def observe():
         d, outs = {{}}, [None]
         keep = Keep()
         keep(torch.ones(3), d, outs)
         return torch.cat([getattr(keep, "cache", torch.zeros(3)), d.get("h", torch.zeros(3)),
                           outs[0] if outs[0] is not None else torch.zeros(3)])
     """) for where, binding in (("an attribute", "x = self.cache = torch.exp(x)"),
                                 ("a dict item", 'd["h"] = x = torch.exp(x)'),
                                 ("a list item", "x = outs[0] = torch.sigmoid(x)"))
] + [
    # (a buffer's relu saved nothing: no buffer requires grad, so the write is no finding; an attribute holding a
    # layer's output is the route that stays)
    ("a local bound to an attribute written in place (older than the rule)", """
     class M(nn.Module):
         def __init__(self):
             super().__init__()
             self.lin = nn.Linear(3, 3)

         def forward(self, x):
             self.h = self.lin(x)
             y = F.relu(self.h, inplace=True)
             y.mul_(2)  # <-
             return y


     def observe():
         torch.manual_seed(0)
         m = M()
         m(torch.ones(3))
         return m.h.detach()
     """),
    ("a local kept through a name bound inside its value (older than the rule)", """
     def f(z, keep):
         y = keep.append(e := torch.exp(z)) or e
         y.mul_(2)  # <-
         return y


     def observe():
         keep = []
         f(torch.ones(3), keep)
         return keep[0]
     """),
]


#: a second fix review's routes: flags passed unpacked, `out=`, function forms of in-place and view ops on an
#: attribute or item of a parameter or a global, annotated bindings, a plain attribute alias, `getattr`, an unpacking
#: second target, a loop that stores the rows
UNSAFE += [
    ("an inplace flag passed in **kw", """
     def f(x, **kw):
         x = F.relu(x, **kw)
         x.mul_(2)  # <-
         return x


     def observe():
         x = torch.ones(3)
         f(x, inplace=True)
         return x
     """),
    ("arguments unpacked from a tuple", """
     def f(x, inplace: bool = True):
         x = F.relu(*(x, inplace))
         x.mul_(2)  # <-
         return x


     def observe():
         x = torch.ones(3)
         f(x)
         return x
     """),
    ("an annotated binding to an in-place call on an attribute", """
     class Block(nn.Module):
         def __init__(self):
             super().__init__()
             self.fc = nn.Linear(3, 3)

         def forward(self, x):
             self.pre = self.fc(x)
             act: torch.Tensor = F.relu(self.pre, inplace=True)
             act.mul_(2)  # <-
             return act


     def observe():
         torch.manual_seed(0)
         m = Block()
         with torch.no_grad():
             m(torch.ones(2, 3))
         return m.pre
     """),
    ("an in-place call on what getattr gives", """
     class M(nn.Module):
         def __init__(self):
             super().__init__()
             self.fc = nn.Linear(3, 3)

         def forward(self, x, name: str = "pre"):
             setattr(self, name, self.fc(x))
             y = F.relu(getattr(self, name, self.fc(x)), inplace=True)
             y.mul_(2)  # <-
             return y


     def observe():
         torch.manual_seed(0)
         m = M()
         with torch.no_grad():
             m(torch.ones(2, 3))
         return m.pre
     """),
    ("an attribute bound to a local", """
     class Attn(nn.Module):
         def forward(self, scores, mask):
             self.attn = torch.softmax(scores, -1)
             attn = self.attn
             attn.mul_(mask)  # <-
             return attn


     def observe():
         m = Attn()
         m(torch.zeros(1, 2), torch.tensor([[1.0, 0.0]]))
         return m.attn
     """),
    ("an unpacking target beside an attribute", """
     class M(nn.Module):
         def forward(self, z):
             y, = self.cache = (torch.exp(z),)
             y.mul_(2)  # <-
             return y


     def observe():
         m = M()
         m(torch.zeros(2))
         return m.cache[0]
     """),
    ("the rows kept by a loop's target", """
     class M(nn.Module):
         def forward(self, x):
             x = torch.exp(x)
             for self.last_row in x:
                 pass
             x.mul_(2)  # <-
             return x


     def observe():
         m = M()
         m(torch.zeros(2, 2))
         return m.last_row
     """),
]


#: a third review's routes, older than the rebound rule but for `+x`: a local dict or object the written tensor is
#: an item of, a local that is another name for an outside object, a tuple of attributes, a `:=` binding inside an
#: expression that stores it, and `+x`, which is `x` itself
UNSAFE += [
    ("an item of a local dict read after the write", """
     def f(scores, mask):
         out = {}
         out["attn"] = torch.softmax(scores, -1)
         attn = out["attn"]
         attn.mul_(mask)  # <-
         return out["attn"].sum().reshape(1)


     def observe():
         return f(torch.zeros(1, 2), torch.tensor([[1.0, 0.0]]))
     """),
    ("an item of a local dict returned", """
     def ppo_stats(logp, old_logp, eps: float = 0.2):
         stats = {}
         stats["ratio"] = torch.exp(logp - old_logp)
         ratio = stats["ratio"]
         ratio.clamp_(1 - eps, 1 + eps)  # <-
         return ratio.mean(), stats


     def observe():
         return ppo_stats(torch.tensor([0.0, 1.0, -1.0]), torch.zeros(3))[1]["ratio"]
     """),
    ("an item of a caller's list bound to a local", """
     class Attn(nn.Module):
         def forward(self, scores, mask, caches, i: int):
             cache = caches[i]
             cache["attn"] = torch.softmax(scores, -1)
             attn = cache["attn"]
             attn.mul_(mask)  # <-
             return attn


     def observe():
         caches = [{}]
         Attn()(torch.zeros(1, 2), torch.tensor([[1.0, 0.0]]), caches, 0)
         return caches[0]["attn"]
     """),
    ("a tuple of an attribute and another value", """
     class Attn(nn.Module):
         def forward(self, scores, mask):
             self.attn = torch.softmax(scores, -1)
             attn, m = self.attn, mask
             attn.mul_(m)  # <-
             return attn


     def observe():
         a = Attn()
         a(torch.zeros(1, 2), torch.tensor([[1.0, 0.0]]))
         return a.attn
     """),
    ("a := binding passed to a call that keeps it", """
     def f(h, keep):
         keep.append(y := torch.exp(h))
         y.mul_(2)  # <-
         return y


     def observe():
         keep = []
         f(torch.zeros(3), keep)
         return keep[0]
     """),
    ("`+x`, the tensor itself, stored", """
     class M(nn.Module):
         def forward(self, x):
             x = torch.exp(x)
             self.k = +x
             x.mul_(2)  # <-
             return x


     def observe():
         m = M()
         m(torch.zeros(3))
         return m.k
     """),
]


#: a fourth review's routes: a module's method named like a tensor op, built where the class cannot say what it is
UNSAFE += [
    (f"a submodule {how}", f"""
     class Block(nn.Module):
         def __init__(self, act_layer=nn.ReLU, act: str = "ReLU"):
             super().__init__()
             self.relu = {built}

         def forward(self, x):
             x = self.relu(x)
             x.mul_(2)  # <-
             return x


     def observe():
         x = torch.tensor([-1.0, 1.0, 2.0])
         Block()(x)
         return x
     """) for how, built in (("built by a layer class given as a default", "act_layer(inplace=True)"),
                             ("built by getattr(nn, name)", "getattr(nn, act)(inplace=True)"))
]


@pytest.mark.parametrize("name, body", UNSAFE, ids=[c[0] for c in UNSAFE])
def test_a_route_that_may_bring_the_callers_tensor_back_keeps_the_fix_unsafe(name, body):
    code, driver = (HEADER + textwrap.dedent(body)).split("\n\ndef observe")
    driver = "\n\ndef observe" + driver
    line = marked_line(code)
    found = [f for f in analyze_source(code) if f.line == line]
    assert found, "no finding at the write"
    assert found[0].fix.applicability is Applicability.UNSAFE, found[0].fix.reason
    forced = fix_code(code, unsafe_fixes=True).new_source
    with torch.no_grad():
        assert not torch.equal(observe(code + driver), observe(forced + driver))


def test_a_torch_submodule_function_is_no_holder_of_the_written_tensor():
    """verl 0.8.0's torchtitan engine binds the written name again after the write with
    `torch.nested.narrow(logits, ...)`: `torch.nested` is a module, not an attribute of a parameter holding the
    tensor, so the fix its callers make safe stays safe (a first version of the holder check took it for one)."""
    code = HEADER + textwrap.dedent("""\
        def scale(logits, t, starts, lengths):
            logits.div_(t)  # <-
            logits = torch.nested.narrow(logits, 1, starts, lengths, layout=torch.jagged)
            return logits


        def caller(model, x, t, starts, lengths):
            out = model(x)
            return scale(out.logits, t, starts, lengths)
        """)
    [finding] = analyze_source(code)
    assert (finding.code, finding.line) == ("IPV001", marked_line(code))
    assert finding.fix.applicability is Applicability.SAFE, finding.fix.reason
