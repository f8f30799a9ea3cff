"""The codemod: exact rewritten text for every fixture and style, idempotence, and proof that the
rewrite runs under torch where the original raises, with the same values, dtypes and gradients.

Fixtures: ``fixtures/fix/<case>.in.py`` and its expected ``<case>.<style>.out.py``
(``python scripts/regen_fix_fixtures.py`` rewrites them; review the diff). Each ``in`` file
defines ``run(model, hidden, temperature)`` (code under test, calling the model itself) and ``reference(logits, temperature)``
(the out-of-place result computed by hand), and ``CASE`` (input shape, dtype, DTensor check).
"""
from __future__ import annotations

import importlib.util
import pathlib
from types import SimpleNamespace

import pytest

from inplace_lint.fixing import fix_code

FIX = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "fix"
CASES = sorted(p.name[: -len(".in.py")] for p in FIX.glob("*.in.py"))
RUNNABLE = [c for c in CASES if not c.startswith("unsafe")]
STYLES = ("runtime", "inline")


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("case", CASES)
def test_rewritten_text_is_exact(case, style):
    source = (FIX / f"{case}.in.py").read_text()
    result = fix_code(source, f"{case}.py", style=style, unsafe_fixes=case.startswith("unsafe"))
    assert result.error is None
    assert result.new_source == (FIX / f"{case}.{style}.out.py").read_text()


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("case", CASES)
def test_second_run_changes_nothing(case, style):
    rewritten = (FIX / f"{case}.{style}.out.py").read_text()
    result = fix_code(rewritten, f"{case}.py", style=style, unsafe_fixes=True)
    assert result.error is None and result.new_source is None and not result.applied


def test_unsafe_fix_not_applied_by_default():
    source = (FIX / "unsafe.in.py").read_text()
    result = fix_code(source, "unsafe.py")
    assert result.new_source is None
    [finding] = result.unsafe_skipped
    assert finding.line == 8
    assert finding.fix.reason == "`output` is read after the write (line 9) and would no longer see the change"


# --------------------------------------------------------------------------- execution harness

torch = pytest.importorskip("torch")
from tests.torch_models import CF_MSG, ViewFn  # noqa: E402


class TinyLM(torch.nn.Module):
    """Logits come out of a custom autograd Function (or, with a mesh, as a vocab-sharded DTensor)."""

    def __init__(self, dtype, hidden=6, vocab=11):
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        self.head = torch.nn.Linear(hidden, vocab, dtype=dtype)
        with torch.no_grad():
            self.head.weight.copy_(torch.randn(vocab, hidden, generator=generator))
            self.head.bias.copy_(torch.randn(vocab, generator=generator))

    def forward(self, h, mesh=None, plain=False):
        logits = self.head(h)
        if mesh is not None:
            from torch.distributed.tensor import DTensor, Shard

            return SimpleNamespace(logits=DTensor.from_local(logits, mesh, [Shard(-1)]))
        return SimpleNamespace(logits=logits if plain else ViewFn.apply(logits))


def _load(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(f"fixture_{path.stem.replace('.', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _inputs(case: dict):
    dtype = case.get("dtype", torch.float32)
    batch, seq = case.get("batch", (1, 5))
    generator = torch.Generator().manual_seed(1)
    h = torch.randn(batch, seq, 6, generator=generator).to(dtype)
    n = batch if batch > 1 else seq
    temperature = torch.linspace(0.5, 1.5, n)
    return dtype, h, temperature


def _run_with_grads(fn, model, h, temperature, **forward):
    model.zero_grad()
    h = h.clone().requires_grad_()
    out = fn(lambda hidden: model(hidden, **forward), h, temperature)
    weights = torch.linspace(-1, 1, out.numel()).reshape(out.shape).to(out.dtype)
    (out * weights).sum().backward()
    return out.detach(), h.grad.clone(), model.head.weight.grad.clone()


def _reference(module, model, h, temperature):
    return _run_with_grads(lambda forward, hidden, t: module.reference(forward(hidden).logits, t),
                           model, h, temperature, plain=True)


def _assert_same(got, ref):
    for g, r in zip(got, ref):
        assert g.dtype == r.dtype
        torch.testing.assert_close(g, r, rtol=0, atol=0)


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("case", RUNNABLE)
def test_rewrite_runs_where_original_raises(case, style):
    original = _load(FIX / f"{case}.in.py")
    rewritten = _load(FIX / f"{case}.{style}.out.py")
    dtype, h, temperature = _inputs(original.CASE)
    model = TinyLM(dtype)
    with pytest.raises(RuntimeError, match=CF_MSG):
        original.run(model, h.clone().requires_grad_(), temperature)
    got = _run_with_grads(rewritten.run, model, h, temperature)
    assert got[0].dtype == dtype
    _assert_same(got, _reference(original, model, h, temperature))


@pytest.mark.parametrize("style", STYLES)
def test_item_assignment_of_a_number_on_a_dtensor_raises_as_the_original(style, mesh):
    """``x[:, 0] = -1e4`` mixes nothing (a number), so the guard gathers nothing (issue 21 item 2); a
    vocab-sharded DTensor has no sharding strategy for that fill, so the rewrite raises where the
    original raises, with the same error."""
    original = _load(FIX / "clone_first.in.py")
    rewritten = _load(FIX / f"clone_first.{style}.out.py")
    dtype, h, temperature = _inputs(original.CASE)
    model = TinyLM(dtype)
    for module in (original, rewritten):
        with pytest.raises(NotImplementedError, match="does not have a sharding strategy"):
            module.run(lambda hidden: model(hidden, mesh=mesh), h.clone().requires_grad_(), temperature)


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("case", [c for c in RUNNABLE if c not in ("inplace_kwarg", "clone_first")])
def test_rewrite_gathers_vocab_sharded_dtensor(case, style, mesh):
    """Shard(-1) logits on a real gloo group: the original mixes a DTensor with a plain tensor and raises;
    the rewrite gathers (``full_tensor()``) and matches the plain reference, gradients included."""
    original = _load(FIX / f"{case}.in.py")
    rewritten = _load(FIX / f"{case}.{style}.out.py")
    dtype, h, temperature = _inputs(original.CASE)
    model = TinyLM(dtype)
    with pytest.raises((RuntimeError, NotImplementedError)):
        original.run(lambda hidden: model(hidden, mesh=mesh), h.clone().requires_grad_(), temperature)
    got = _run_with_grads(rewritten.run, model, h, temperature, mesh=mesh)
    _assert_same(got, _reference(original, model, h, temperature))


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("case", RUNNABLE)
def test_safe_rewrite_matches_the_original_where_it_runs(case, style):
    """With a plain head the original in-place code runs: a safe rewrite must give the same values,
    dtypes and gradients (and the model's parameters stay untouched by both)."""
    original = _load(FIX / f"{case}.in.py")
    rewritten = _load(FIX / f"{case}.{style}.out.py")
    dtype, h, temperature = _inputs(original.CASE)
    model = TinyLM(dtype)
    weight = model.head.weight.detach().clone()
    if original.CASE.get("plain_fails_at_backward"):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            _run_with_grads(original.run, model, h, temperature, plain=True)
        expected = _reference(original, model, h, temperature)
    else:
        expected = _run_with_grads(original.run, model, h, temperature, plain=True)
    _assert_same(_run_with_grads(rewritten.run, model, h, temperature, plain=True), expected)
    assert torch.equal(model.head.weight.detach(), weight)
