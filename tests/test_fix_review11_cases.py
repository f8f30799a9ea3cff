"""The eleventh session's review of "safe" fixes (each case executed under torch 2.13): an alias made by unary
plus (``+x`` is ``x`` itself), names read through ``eval``, a write inside a ``torch.jit.script`` function (no
rewrite TorchScript compiles), and ``x += ndarray``, which is no in-place write at all."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from inplace_lint.analysis import analyze_source
from inplace_lint.findings import Applicability
from inplace_lint.fixing import fix_code

torch = pytest.importorskip("torch")
nn = torch.nn

HEADER = "import numpy as np\nimport torch\nfrom torch import nn\n\n\n"


def _src(body: str) -> str:
    return HEADER + textwrap.dedent(body)


def _observe(code: str):
    namespace: dict = {}
    exec(compile(code, "<case>", "exec"), namespace)
    return namespace["observe"]()


UNSAFE = [
    ("unary plus is the same tensor", """
     def f(model, h, t):
         logits = model(h)
         alias = +logits
         logits.div_(t)
         return alias


     def observe():
         torch.manual_seed(0)
         model = getattr(nn, "Linear")(3, 3)  # (a model the analysis cannot see)
         return f(model, torch.ones(1, 3), 2.0).detach()
     """, "`alias`"),
    ("eval reads any local name", """
     def f(model, h, t):
         out = model(h)
         logits = out.squeeze(0)
         logits.div_(t)
         return eval("out")


     def observe():
         torch.manual_seed(0)
         model = getattr(nn, "Linear")(3, 3)  # (a model the analysis cannot see)
         return f(model, torch.ones(1, 3), 2.0).detach()
     """, "`eval(...)` (line 11) may read any local name"),
]


@pytest.mark.parametrize("name, body, reason", UNSAFE, ids=[c[0] for c in UNSAFE])
def test_an_alias_the_rewrite_would_leave_behind_makes_the_fix_unsafe(name, body, reason):
    src = _src(body)
    line = next(i for i, text in enumerate(src.splitlines(), 1) if "div_(t)" in text)
    [finding] = [f for f in analyze_source(src) if f.line == line]
    assert finding.fix.applicability is Applicability.UNSAFE and finding.fix.reason.startswith(reason), \
        finding.fix.reason
    assert fix_code(src).new_source is None
    forced = fix_code(src, unsafe_fixes=True).new_source
    assert forced is not None and not torch.equal(_observe(src), _observe(forced))


def test_a_write_in_a_scripted_function_is_reported_without_a_fix(tmp_path, monkeypatch):
    src = _src("""
     @torch.jit.script
     def entropy(logits: torch.Tensor) -> torch.Tensor:
         probs = torch.softmax(logits, -1)
         logp = torch.log_softmax(logits, -1)
         probs.mul_(logp)
         return -probs.sum(-1)
     """)
    [finding] = analyze_source(src)
    assert (finding.code, finding.line, finding.fix) == ("IPV006", 11, None)
    assert fix_code(src, unsafe_fixes=True).new_source is None
    (tmp_path / "scripted_case.py").write_text(src)  # (TorchScript reads the function's source file)
    monkeypatch.syspath_prepend(str(tmp_path))
    import scripted_case  # TorchScript compiles the original

    logits = torch.randn(2, 5, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        scripted_case.entropy(logits).sum().backward()


def test_adding_a_numpy_array_rebinds_the_name_and_is_no_finding():
    src = _src("""
     def f(model, h):
         x = model(h)
         x += np.ones(x.shape[-1], dtype=np.float32)
         return x
     """)
    assert analyze_source(src) == []
    namespace: dict = {}
    exec(compile(src, "<case>", "exec"), namespace)
    model = torch.nn.Linear(3, 3)
    h = torch.ones(1, 3)
    with torch.no_grad():  # (with grad on, NumPy's reflected add raises: it cannot read a tensor that needs grad)
        assert torch.allclose(namespace["f"](model, h), model(h) + 1)
        y = model(h)
        held = y
        y += np.ones(3, dtype=np.float32)
        assert y is not held and torch.equal(held, model(h))  # the tensor y held is unchanged


# ---- a review of the session's analysis facts (52 executed cases); each case below was answered wrongly


def _findings(src: str):
    return [(f.line, f.code) for f in analyze_source(src)]


def _run(src: str, name: str, *args):
    namespace: dict = {}
    exec(compile(src, "<case>", "exec"), namespace)
    return namespace[name](*args)


def test_grad_turned_back_on_inside_a_grad_off_arm_calls_with_grad():
    src = _src("""
     class Block(nn.Module):
         def __init__(self, d):
             super().__init__()
             self.proj = nn.Linear(d, d)

         def forward(self, h):
             if not torch.is_grad_enabled():
                 torch.set_grad_enabled(True)
                 self._adapt(h)
                 torch.set_grad_enabled(False)
             return self.proj(h)

         def _adapt(self, h):
             g = self.proj(h).sigmoid()
             g[:, 0] = 1.0
             (h * g).sum().backward()
     """)
    assert _findings(src) == [(21, "IPV006")]
    block = _run(src, "Block", 4)
    with torch.no_grad(), pytest.raises(RuntimeError, match="modified by an inplace operation"):
        block(torch.randn(2, 4))


def test_a_loop_continue_gated_on_grad_does_not_gate_what_follows_the_loop():
    src = _src("""
     def f(proj, hs):
         for h in hs:
             if torch.is_grad_enabled():
                 continue
             print(h.shape)
         e = proj(hs[0]).exp()
         e.mul_(2)
         return e.sum()
     """)
    assert _findings(src) == [(13, "IPV006")]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _run(src, "f", nn.Linear(4, 4), [torch.randn(2, 4)]).backward()


def test_a_requires_grad_gate_ends_when_the_gated_tensor_is_made_to_require_grad():
    src = _src("""
     def input_grad(model, x):
         assert not x.requires_grad
         x.requires_grad_(True)
         a, b = x.chunk(2, dim=-1)
         a.mul_(2)
         return model(torch.cat([a, b], -1)).sum()
     """)
    assert _findings(src) == [(11, "IPV003")]
    with pytest.raises(RuntimeError, match="Output 0 of Split"):
        _run(src, "input_grad", nn.Linear(4, 4), torch.randn(2, 4)).backward()


@pytest.mark.parametrize("tail", ["""
     @torch.jit.script
     def loss(logits: torch.Tensor) -> torch.Tensor:
         return entropy(logits).mean()
     """, """
     def build():
         return torch.jit.script(entropy)
     """], ids=["a helper of a scripted function", "scripted by a call"])
def test_no_fix_in_a_file_that_compiles_torchscript(tail):
    src = _src("""
     def entropy(logits: torch.Tensor) -> torch.Tensor:
         probs = torch.softmax(logits, -1)
         probs.mul_(torch.log_softmax(logits, -1))
         return -probs.sum(-1)
     """ + tail)
    [finding] = analyze_source(src)
    assert (finding.code, finding.fix) == ("IPV006", None)
