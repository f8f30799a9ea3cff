"""Issue 10, one test per kind: the small input, the exact rewrite or "no fix", and where it runs,
the result under torch. (Items 8 and 9 are messages and IPV004 scope; item 10 is the parser error;
item 11 is ``benchmarks/bench_fix.py``.)"""
from __future__ import annotations

import os
import textwrap

import pytest

from inplace_lint.adapters.cli import main
from inplace_lint.config import DEFAULT_SETTINGS
from inplace_lint.fixing import fix_code
from inplace_lint.pipeline import check_source

STYLES = [("runtime", False), ("inline", False), ("runtime", True)]


def _no_fix(src):
    findings = check_source(src, "m.py", DEFAULT_SETTINGS).findings
    assert findings and all(f.fix is None for f in findings)
    for style, memory_aware in STYLES:
        assert fix_code(src, style=style, unsafe_fixes=True, memory_aware=memory_aware).new_source is None


# ------------------------------------------------------------------ 1. writes through a loop variable


@pytest.mark.parametrize("src", [
    "def f(x, m):\n    for t in x.unbind(0):\n        t.sub_(m)\n    return x\n",
    "def f(model, h):\n    out = model(h)\n    for row in out.logits.squeeze(0):\n        row.mul_(2)\n    return out\n",
    "def f(x, m):\n    for t in x.unbind(0): t.sub_(m)\n    return x\n",
])
def test_loop_variable_gets_no_fix(src):
    _no_fix(src)


# ------------------------------------------------------------------ 2. names that are not local


@pytest.mark.parametrize("src", [
    "def f(model, h, T):\n    x = model(h).logits.squeeze(0)\n\n    def scale():\n        x.div_(T)\n\n"
    "    scale()\n    return x\n",
    "import torch\nX = torch.zeros(3, 4).expand(2, 3, 4)\n\ndef f(T):\n    X.div_(T)\n",
])
def test_closure_and_module_names_get_no_fix(src):
    _no_fix(src)


# ------------------------------------------------------------------ 4. raise where the original raises

RAISING = [
    # (code, inputs): the original raises RuntimeError on plain tensors
    ("def f(model, h):\n    ids = model(h).logits.squeeze(0)\n    ids /= 2\n    return ids\n", "int"),
    ("def f(model, h):\n    ids = model(h).logits.squeeze(0)\n    ids.mul_(0.5)\n    return ids\n", "int"),
    ("def f(model, h, b):\n    x = model(h).logits.squeeze(0)\n    x.add_(b)\n    return x\n", "grow"),
    ("import torch\n\ndef f(model, h, a, b):\n    x = model(h).logits.squeeze(0)\n    torch.div(x, b, out=x)\n"
     "    return x\n", "out"),
]


@pytest.mark.parametrize("style, memory_aware", STYLES)
@pytest.mark.parametrize("src, kind", RAISING)
def test_rewrite_raises_where_the_original_raises(src, kind, style, memory_aware):
    torch = pytest.importorskip("torch")

    def run(code):
        namespace = {}
        exec(compile(code, "<m>", "exec"), namespace)
        if kind == "int":
            base = torch.arange(6).reshape(1, 6)
            return namespace["f"](lambda h: type("O", (), {"logits": base}), None)
        if kind == "grow":
            base = torch.ones(1, 1, 6)
            return namespace["f"](lambda h: type("O", (), {"logits": base}), None, torch.ones(3, 1, 6))
        base = torch.zeros(1, 2, 3, dtype=torch.int64)
        return namespace["f"](lambda h: type("O", (), {"logits": base}), None, torch.ones(2, 3), torch.full((2, 3), 3.0))

    with pytest.raises(RuntimeError):
        run(src)
    new = fix_code(src, style=style, unsafe_fixes=True, memory_aware=memory_aware).new_source
    assert new is not None
    with pytest.raises(RuntimeError):
        run(new)


def test_out_kwarg_rewrite_text():
    src = RAISING[3][0]
    assert "    x = torch.div(x, b, out=torch.empty_like(x))\n" in fix_code(src).new_source
    # `out=x` where `x` requires grad and is no input raises at the write ("functions with out=... arguments
    # don't support automatic differentiation"), and a fresh `out` would not: no fix
    assert fix_code(src.replace("torch.div(x, b", "torch.div(a, b"), unsafe_fixes=True).new_source is None


# ------------------------------------------------------------------ 5. inplace=True rebinding, one-line suites


def test_relu_inplace_rebinding_is_fixed():
    src = ("import torch.nn.functional as F\n\ndef f(model, h):\n    h = model(h).logits\n"
           "    h = F.relu(h, inplace=True)\n    return h\n")
    [finding] = check_source(src, "m.py", DEFAULT_SETTINGS).findings
    assert finding.fix is not None
    for style, memory_aware in STYLES:
        assert fix_code(src, style=style, unsafe_fixes=True, memory_aware=memory_aware).new_source == \
            src.replace("F.relu(h, inplace=True)", "F.relu(h)")


def test_one_line_suite_rewrite_runs():
    torch = pytest.importorskip("torch")
    src = ("def f(model, h, T):\n    x = model(h).logits.squeeze(0)\n    if T != 1: x.div_(T)\n"
           "    for _ in range(1): x /= 2\n    return x\n")
    for style, memory_aware in STYLES:
        new = fix_code(src, style=style, memory_aware=memory_aware).new_source
        namespace = {}
        exec(compile(new, "<m>", "exec"), namespace)
        w = torch.rand(1, 2, 3).requires_grad_()
        out = namespace["f"](lambda h: type("O", (), {"logits": w * 1.0}), None, torch.tensor(4.0))
        torch.testing.assert_close(out, (w * 1.0).squeeze(0) / 4.0 / 2, rtol=0, atol=0)


# ------------------------------------------------------------------ 6. the module's own `DTensor`


def test_inline_guard_imports_the_real_dtensor_under_a_free_name():
    torch = pytest.importorskip("torch")
    src = ("DTensor = None\n\ndef f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)\n"
           "    return x\n")
    new = fix_code(src, style="inline").new_source
    assert new == ("try:\n    from torch.distributed.tensor import DTensor as _DTensor\n"
                   "except ImportError:  # torch < 2.5\n    from torch.distributed._tensor import DTensor as _DTensor\n"
                   "\nDTensor = None\n\n"
                   "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n"
                   "    if isinstance(x, _DTensor) and not isinstance(t, _DTensor) and getattr(t, \"ndim\", 0) > 0:\n        x = x.full_tensor()\n"
                   "    x = x.clone().div_(t)\n    return x\n")
    namespace = {}
    exec(compile(new, "<m>", "exec"), namespace)
    w = torch.rand(1, 2, 3)
    out = namespace["f"](lambda h: type("O", (), {"logits": w}), None, 2.0)
    torch.testing.assert_close(out, w.squeeze(0) / 2.0, rtol=0, atol=0)


def test_an_existing_real_import_is_reused():
    src = ("from torch.distributed.tensor import DTensor\n\ndef f(model, h, t):\n"
           "    x = model(h).logits.squeeze(0)\n    x.div_(t)\n    return x\n")
    new = fix_code(src, style="inline").new_source
    assert new.startswith("from torch.distributed.tensor import DTensor\n\ndef f(")
    assert "    if isinstance(x, DTensor) and not isinstance(t, DTensor) and getattr(t, \"ndim\", 0) > 0:\n" in new


# ------------------------------------------------------------------ 7. symlinks


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
@pytest.mark.parametrize("through", ["file", "directory"])
def test_fix_through_a_symlink_writes_the_target_and_keeps_the_link(tmp_path, through):
    bad = "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)\n    return x\n"
    real = tmp_path / "real"
    real.mkdir()
    target = real / "m.py"
    target.write_text(bad)
    links = tmp_path / "links"
    links.mkdir()
    link = links / "m.py"
    link.symlink_to(target)
    (real / "also.py").symlink_to(target)  # a second link beside the target, in the same walk
    arg = str(link) if through == "file" else str(tmp_path)
    assert main(["fix", "-q", arg]) == 0
    assert link.is_symlink() and (real / "also.py").is_symlink()
    assert os.readlink(link) == str(target)
    assert "    x = x.clone().div_(t)\n" in target.read_text()
    fixed = target.read_text()
    assert main(["fix", "-q", arg]) == 0 and target.read_text() == fixed


# ------------------------------------------------------------------ 12. no redundant outer cast


def test_seed_inline_rewrite_has_no_redundant_cast():
    src = ("def f(output, temperature_rmpad):\n    logits_rmpad = output.logits.squeeze(0)\n"
           "    logits_rmpad.div_(temperature_rmpad.clamp(min=1e-8).unsqueeze(-1).to(logits_rmpad.dtype))\n")
    new = fix_code(src, style="inline", unsafe_fixes=True).new_source
    assert ("    _logits_rmpad_operand = temperature_rmpad.clamp(min=1e-8).unsqueeze(-1).to(logits_rmpad.dtype)\n"
            ) in new
    assert "    logits_rmpad = logits_rmpad.clone().div_(_logits_rmpad_operand)\n" in new
    assert ").to(logits_rmpad.dtype)).to(" not in new


# ------------------------------------------------------------------ issue 8: decided once


def test_fix_runs_the_analysis_once(monkeypatch):
    from inplace_lint import pipeline

    calls = []
    real = pipeline.analyze
    monkeypatch.setattr(pipeline, "analyze", lambda *a, **k: calls.append(1) or real(*a, **k))
    src = "".join(f"def f{i}(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)\n    return x\n"
                  for i in range(5))
    result = fix_code(src)
    assert len(result.applied) == 5 and calls == [1]


# ------------------------------------------------------------------ 3. DTensor operands (inline guard)


ENTROPY = textwrap.dedent("""\
    def entropy(logits):
        probs = logits.softmax(-1)
        log_probs = logits.log_softmax(-1)
        probs.mul_(log_probs)
        return -probs.sum(-1)
    """)


@pytest.mark.parametrize("placement", ["Shard(0)", "Shard(1)", "Replicate()"])
@pytest.mark.parametrize("style, memory_aware", STYLES)
def test_dtensor_operand_is_not_mixed_with_a_gathered_target(placement, style, memory_aware, mesh):
    import torch
    from torch.distributed.tensor import DTensor, Replicate, Shard  # noqa: F401

    new = fix_code(ENTROPY, style=style, memory_aware=memory_aware).new_source
    if style == "inline":
        assert "    if isinstance(probs, DTensor) and not isinstance(log_probs, DTensor) and getattr(log_probs, \"ndim\", 0) > 0:\n" in new
    namespace = {}
    exec(compile(new, "<m>", "exec"), namespace)
    w = torch.linspace(-2, 2, 12).reshape(3, 4).requires_grad_()
    logits = DTensor.from_local(w * 1.0, mesh, [eval(placement)], run_check=False)
    out = namespace["entropy"](logits)
    out = out.full_tensor() if isinstance(out, DTensor) else out
    out.sum().backward()
    w_ref = torch.linspace(-2, 2, 12).reshape(3, 4).requires_grad_()
    expected = -(w_ref.softmax(-1) * w_ref.log_softmax(-1)).sum(-1)
    expected.sum().backward()
    torch.testing.assert_close(out.detach(), expected.detach())
    torch.testing.assert_close(w.grad, w_ref.grad)


SCALAR_ON_DTENSOR = textwrap.dedent("""\
    def scaled(model, h, temperature, weight):
        logits = model(h).logits
        logits.div_(temperature)
        return logits * weight
    """)
ITEM_ON_DTENSOR = textwrap.dedent("""\
    def halve_first(model, h):
        logits = model(h).logits
        logits[0] *= 0.5
        return logits
    """)


@pytest.mark.parametrize("style, memory_aware", STYLES)
def test_a_dtensor_that_works_as_it_is_is_not_gathered(style, memory_aware, mesh):
    """A DTensor divided by a Python number, or one item scaled by a literal, works in place: the rewrite
    must keep it a DTensor (a gathered target next to the DTensor `weight` would raise "mixed")."""
    import types

    import torch
    from torch.distributed.tensor import DTensor, Shard

    w = torch.linspace(-2, 2, 12).reshape(3, 4)

    def model(d):
        return types.SimpleNamespace(logits=d * 1.0)

    for src, args in ((SCALAR_ON_DTENSOR, lambda d: (model, d, 2.0, d)), (ITEM_ON_DTENSOR, lambda d: (model, d))):
        new = fix_code(src, style=style, memory_aware=memory_aware, unsafe_fixes=True).new_source
        assert new is not None and new != src
        original, rewritten = {}, {}
        exec(compile(src, "<orig>", "exec"), original)
        exec(compile(new, "<new>", "exec"), rewritten)
        name = "scaled" if src is SCALAR_ON_DTENSOR else "halve_first"
        dt = DTensor.from_local(w.clone(), mesh, [Shard(1)], run_check=False)
        want = original[name](*args(dt))
        got = rewritten[name](*args(DTensor.from_local(w.clone(), mesh, [Shard(1)], run_check=False)))
        assert isinstance(want, DTensor) and isinstance(got, DTensor), new
        torch.testing.assert_close(got.full_tensor(), want.full_tensor())
