"""Issue 20, kind 6: aliases that are not names. A fix rebinds the written name; it is safe only when no
other reference to the written storage can be read afterwards. Each route below keeps another reference
(a cache, an attribute of a longer-lived object, a module-level container, a generator, a wrapper, a
decorator, a comprehension, Python state on the tensor object): the fix is marked unsafe with the
reference named, `fix` (safe fixes only) leaves the file alone, and the rewrite, applied anyway, is
shown under torch to change what the program computes, so "unsafe" is the right call.

In the other direction, a model output is an object with fields: a store into one field and a read of
another are not reads of the written one, so those fixes are safe, and they run with the same values
and gradients."""
from __future__ import annotations

import textwrap

import pytest

from inplace_lint.analysis import analyze_source
from inplace_lint.findings import Applicability
from inplace_lint.fixing import fix_code

torch = pytest.importorskip("torch")

#: the modules below call `model`, a name no import binds (so a model, as the analysis sees it); the
#: tests run them with this one
MODEL = """
import types
import torch

"""


def _model(n):
    import types
    return types.SimpleNamespace(logits=torch.arange(1.0, n + 1.0))

# (name, source (after MODEL), the written line, the reason): each module defines `observe()`
ROUTES = [
    ("lru_cache", """
     import functools


     @functools.lru_cache(maxsize=None)
     def cached(n):
         return model(n).logits


     def scaled(n, t):
         x = cached(n)
         x.div_(t)
         return x


     def observe():
         scaled(3, 2.0)
         return cached(3)
     """, 16, "`x` holds what `cached()` returns, which is also reachable elsewhere: `@functools.lru_cache` keeps "
              "each result and returns the same tensor to later calls"),
    ("functools.cache on a method's helper", """
     from functools import cache


     @cache
     def table(n):
         return model(n).logits


     def observe():
         x = table(4)
         x.mul_(3)
         return table(4) + x
     """, 16, "`x` holds what `table()` returns, which is also reachable elsewhere: `@cache` keeps each result and "
              "returns the same tensor to later calls"),
    ("self.last", """
     class Runner:
         def logits(self, n):
             out = model(n).logits
             self.last = out
             return out

         def scaled(self, n, t):
             x = self.logits(n)
             x.div_(t)
             return x


     def observe():
         r = Runner()
         r.scaled(3, 2.0)
         return r.last
     """, 14, "`x` holds what `logits()` returns, which is also reachable elsewhere: `out` is also stored in "
              "`self.last` (line 9)"),
    ("returns self.last", """
     class Runner:
         def logits(self, n):
             self.last = model(n).logits
             return self.last

         def scaled(self, n, t):
             x = self.logits(n)
             x.div_(t)
             return x


     def observe():
         r = Runner()
         r.scaled(3, 2.0)
         return r.last
     """, 13, "`x` holds what `logits()` returns, which is also reachable elsewhere: it is `self.last` (line 9)"),
    ("cached_property", """
     import functools


     class Runner:
         @functools.cached_property
         def logits(self):
             return model(3).logits

         def scaled(self, t):
             x = self.logits
             x.div_(t)
             return x


     def observe():
         r = Runner()
         r.scaled(2.0)
         return r.logits
     """, 16, "`x` holds what `logits()` returns, which is also reachable elsewhere: `@functools.cached_property` "
              "keeps each result and returns the same tensor to later calls"),
    ("self.cache dict", """
     class Runner:
         def __init__(self):
             self.cache = {}

         def logits(self, n):
             if n not in self.cache:
                 self.cache[n] = model(n).logits
             return self.cache[n]

         def scaled(self, n, t):
             x = self.logits(n)
             x.div_(t)
             return x


     def observe():
         r = Runner()
         r.scaled(3, 2.0)
         return r.logits(3)
     """, None, None),
    ("module-level list a helper appends to", """
     _SEEN = []


     def logits(n):
         out = model(n).logits
         _SEEN.append(out)
         return out


     def observe():
         x = logits(3)
         x.div_(2.0)
         return _SEEN[-1] + x
     """, 17, "`x` holds what `logits()` returns, which is also reachable elsewhere: `out` is passed to "
              "`_SEEN.append` (line 11)"),
    ("module-level dict", """
     _LAST = {}


     def logits(n):
         out = model(n).logits
         _LAST["logits"] = out
         return out


     def observe():
         x = logits(3)
         x.div_(2.0)
         return _LAST["logits"] + x
     """, 17, "`x` holds what `logits()` returns, which is also reachable elsewhere: `out` is also stored in "
              "`_LAST['logits']` (line 11)"),
    ("wrapper object a helper keeps", """
     class Box:
         def __init__(self, value):
             self.value = value


     def logits(n, keep):
         out = model(n).logits
         keep.append(Box(out))
         return out


     def observe():
         keep = []
         x = logits(3, keep)
         x.div_(2.0)
         return keep[0].value + x
     """, 20, "`x` holds what `logits()` returns, which is also reachable elsewhere: `out` is passed to `Box` "
              "(line 13)"),
    ("memoizing decorator", """
     def memo(fn):
         store = {}

         def inner(n):
             if n not in store:
                 store[n] = fn(n)
             return store[n]
         return inner


     @memo
     def logits(n):
         return model(n).logits


     def observe():
         x = logits(3)
         x.div_(2.0)
         return logits(3) + x
     """, 23, "`x` holds what `logits()` returns, which is also reachable elsewhere: `@memo` replaces the "
              "function and may keep what it returns"),
    ("a generator that keeps what it yields", """
     def stream(n, t):
         out = model(n).logits
         yield out
         out.div_(t)
         yield out


     def observe():
         first, second = list(stream(3, 2.0))
         return first + second
     """, 9, "`out` is yielded (line 8), where the change would no longer be seen"),
    ("SimpleNamespace holding it", """
     def observe():
         x = model(3).logits
         ns = types.SimpleNamespace(x=x)
         x.div_(2.0)
         return ns.x + x
     """, 9, "`x` is passed to `types.SimpleNamespace`, which may keep it (line 8), where the change would no "
              "longer be seen"),
    ("tuple holding it", """
     def observe():
         x = model(3).logits
         pair = (x, 1)
         x.div_(2.0)
         return pair[0] + x
     """, 9, "`x` is put in a container (line 8), where the change would no longer be seen"),
    ("dict holding it", """
     def observe():
         x = model(3).logits
         d = {"x": x}
         x.div_(2.0)
         return d["x"] + x
     """, 9, "`x` is put in a container (line 8), where the change would no longer be seen"),
    ("dataclass holding it", """
     import dataclasses


     @dataclasses.dataclass
     class Holder:
         value: torch.Tensor


     def observe():
         x = model(3).logits
         h = Holder(x)
         x.div_(2.0)
         return h.value + x
     """, 17, "`x` is passed to `Holder`, which may keep it (line 16), where the change would no longer be seen"),
    ("copy.copy of the output object", """
     import copy


     def observe():
         out = model(3)
         snap = copy.copy(out)
         x = out.logits
         x.div_(2.0)
         return snap.logits + x
     """, 13, "`out` is passed to `copy.copy`, which may keep it (line 11), where the change would no longer be seen"),
    ("registry decorator", """
     REGISTRY = {}


     def register(fn):
         REGISTRY[fn.__name__] = fn
         return fn


     @register
     def scale(x, t):
         x.div_(t)
         return x.sum()


     def caller(n, t):
         x = model(n).logits
         return scale(x, t)


     def observe():
         y = model(3).logits
         REGISTRY["scale"](y, 2.0)
         return y
     """, 16, "`x` is a parameter: the caller would no longer see the change"),
    ("comprehension passing the same object every step", """
     def scale(x, t):
         x.div_(t)
         return x.sum()


     def observe():
         x = model(3).logits
         return torch.stack([scale(x, t) for t in (2.0, 2.0)])
     """, 7, "`x` is a parameter: the caller would no longer see the change"),
    ("attribute set on the tensor", """
     def observe():
         x = model(3).logits
         x.scale = 2.0
         x.div_(x.scale)
         return x * x.scale
     """, 9, "`x.scale` is set on the tensor object (line 8): the rebound `x` would be a new tensor without it "
              "(AttributeError)"),
    # a tensor an op saved for the other input's gradient (`torch.mul(x, w)`, `w` requiring grad) may be any
    # tensor: the function did not make its storage
    ("saved for the other input: detach of another tensor", """
     def scaled(base):
         w = torch.ones(3, requires_grad=True)
         x = base.detach()
         y = torch.mul(x, w)
         x.add_(1)
         return y


     def observe():
         base = torch.arange(3.0)
         scaled(base)
         return base
     """, 10, "`x` may be `base` (line 8), a parameter: the caller would no longer see the change"),
    ("saved for the other input: from_numpy of an array", """
     import numpy as np


     def observe():
         arr = np.zeros(3, dtype=np.float32)
         x = torch.from_numpy(arr)
         w = torch.ones(3, requires_grad=True)
         y = torch.mul(x, w)
         x.add_(1)
         return torch.cat([torch.tensor(arr), y])
     """, 14, "`x` may share its storage with another tensor or array (`torch.from_numpy(arr)` shares the storage of what it is given), which would no longer see the change"),
    ("saved for the other input: module-level buffer", """
     BUFFER = torch.zeros(3)


     def observe():
         x = BUFFER
         w = torch.ones(3, requires_grad=True)
         y = torch.mul(x, w)
         x.add_(1)
         return torch.cat([BUFFER.clone(), y])
     """, 13, "`BUFFER` comes from outside the function: other code would no longer see the change"),
    ("saved for the other input: contiguous of the caller's tensor", """
     def scaled(inp):
         w = torch.ones(3, requires_grad=True)
         x = inp.contiguous()
         y = torch.mul(x, w)
         x.add_(1)
         return y


     def observe():
         inp = torch.arange(3.0)
         scaled(inp)
         return inp
     """, 10, "`x` may be `inp` (line 8), a parameter: the caller would no longer see the change"),
]


def _src(body: str) -> str:
    return MODEL + textwrap.dedent(body)


def _observe(code: str):
    namespace: dict = {"model": _model}
    exec(compile(code, "<route>", "exec"), namespace)
    try:
        return namespace["observe"]()
    except AttributeError as e:
        return f"AttributeError: {e}"


@pytest.mark.parametrize("name, body, line, reason", ROUTES, ids=[r[0] for r in ROUTES])
def test_alias_route_fix_is_unsafe_or_absent(name, body, line, reason):
    src = _src(body)
    findings = analyze_source(src)
    if line is None:
        assert all(f.fix is None for f in findings)  # `self.cache[n]` is not followed: no finding, no fix
    else:
        [finding] = [f for f in findings if f.line == line]
        assert finding.fix is not None and finding.fix.applicability is Applicability.UNSAFE
        assert finding.fix.reason == reason
    assert fix_code(src).new_source is None  # safe fixes only: nothing changes


@pytest.mark.parametrize("style", ["inline", "runtime"])
@pytest.mark.parametrize("name, body, line, reason", [r for r in ROUTES if r[2] is not None],
                         ids=[r[0] for r in ROUTES if r[2] is not None])
def test_alias_route_is_real_under_torch(name, body, line, reason, style):
    """Applied anyway (``--unsafe-fixes``), the rewrite changes what the program computes: the route
    is a real second reference, not a false alarm."""
    src = _src(body)
    new = fix_code(src, style=style, unsafe_fixes=True).new_source
    assert new is not None and new != src
    before, after = _observe(src), _observe(new)
    if isinstance(before, str) or isinstance(after, str):
        assert before != after
    else:
        assert not torch.equal(before, after), name


def test_a_generator_consumed_with_next_gets_no_finding():
    """What a generator yields is not followed into its consumer: no finding there, so no fix."""
    src = _src("""
     def stream(n):
         out = model(n).logits
         yield out


     def observe():
         x = next(stream(3))
         x.div_(2.0)
         return x
     """)
    assert [f for f in analyze_source(src) if f.line == 14] == []


# ------------------------------------------------------------------ fields of a model output

OUTPUT = """
import torch

"""


class Output(dict):
    """A Hugging Face ModelOutput in miniature: a dict whose keys are also attributes."""
    __getattr__ = dict.__getitem__

    def __setattr__(self, key, value):
        self[key] = value


def _output_model(h):
    hidden = h * 2.0
    return Output(logits=hidden @ h.T, hidden_states=(h, hidden))

FIELDS = [
    # (body, written line, what the test reads)
    ("""
     def f(h, t):
         output = model(h)
         logits = output.logits
         logits.div_(t)
         output["entropy"] = logits.logsumexp(-1)
         return logits, output.hidden_states[-1], output["entropy"]
     """, 8),
    ("""
     def f(h, t):
         output = model(h)
         logits = output["logits"].squeeze(0)
         logits.div_(t)
         output.scaled = True
         return logits, output["hidden_states"][0], output.scaled
     """, 8),
]


@pytest.mark.parametrize("style", ["inline", "runtime"])
@pytest.mark.parametrize("body, line", FIELDS)
def test_other_fields_of_the_output_do_not_make_the_fix_unsafe(body, line, style):
    """Found on verl forks: `output["entropy"] = ...` and `output.hidden_states` counted as reads of
    `output.logits`. The fix is safe, and the rewrite gives the same values and gradients."""
    src = OUTPUT + textwrap.dedent(body)
    [finding] = [f for f in analyze_source(src) if f.line == line]
    assert finding.fix.applicability is Applicability.SAFE, finding.fix.reason
    new = fix_code(src, style=style).new_source
    assert new is not None and new != src

    def run(code):
        namespace: dict = {"model": _output_model}
        exec(compile(code, "<fields>", "exec"), namespace)
        h = torch.tensor([[1.0, -2.0, 0.5]], requires_grad=True)
        out = namespace["f"](h, 2.0)
        tensors = [o for o in out if isinstance(o, torch.Tensor)]
        sum(t.sum() for t in tensors).backward()
        return [t.detach() for t in tensors], h.grad

    (before, g0), (after, g1) = run(src), run(new)
    assert len(before) == len(after)
    for a, b in zip(before, after):
        assert a.dtype == b.dtype and torch.equal(a, b)
    assert torch.equal(g0, g1)


@pytest.mark.parametrize("read, reason", [
    ('output["logits"]', "`output` is read after the write (line 6) and would no longer see the change"),
    ("output.get('logits')", "`output` is read after the write (line 6) and would no longer see the change"),
    ("output[0]", "`output` is read after the write (line 6) and would no longer see the change"),
    ("output.to_tuple()", "`output` is read after the write (line 6) and would no longer see the change"),
])
def test_the_written_field_or_the_whole_output_is_still_a_read(read, reason):
    src = textwrap.dedent(f"""
    def f(model, h, t):
        output = model(h)
        logits = output.logits
        logits.div_(t)
        return logits, {read}
    """)
    [finding] = analyze_source(src)
    assert (finding.fix.applicability, finding.fix.reason) == (Applicability.UNSAFE, reason)


def test_hidden_state_fields_may_share_a_tensor():
    """``last_hidden_state`` is usually ``hidden_states[-1]``: a read of one is a read of the other."""
    src = textwrap.dedent("""
    def f(model, h, t):
        output = model(h)
        x = output.last_hidden_state
        x.div_(t)
        return x, output.hidden_states
    """)
    [finding] = analyze_source(src)
    assert finding.fix.applicability is Applicability.UNSAFE
