"""The DTensor guard decides at run time, on the actual operands (issue 21 item 2).

Four patterns, each fixed in both styles, run forward and backward on a real gloo mesh (world size 1 in
one spawned process, world size 2 in two) with DTensor inputs and with plain inputs, against the
out-of-place form computed on plain tensors: same values and gradients, and never a DTensor-vs-plain mix
the original did not have (the MoE router's output stays a DTensor: ``experts_weights * rw`` would raise
"mixed torch.Tensor and DTensor" had the fix gathered ``rw``).

- router: ``rw = softmax(scores); rw /= rw.sum(-1, keepdim=True); return experts_weights * rw`` (IPV006:
  the original raises at backward, softmax saved its output);
- seed: ``logits.div_(temperature.clamp(min=1e-8).unsqueeze(-1).to(logits.dtype))`` on a model output
  view, by a plain per-token temperature (the DTensor is gathered, the upstream fix) and by a replicated
  DTensor temperature (two DTensors: nothing is gathered);
- a Python number (``t: float``) and a 0-dim tensor: a DTensor divides by them as it is and stays one.
"""
from __future__ import annotations

import multiprocessing
import os
import socket
import textwrap
import traceback

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available():  # pragma: no cover
    pytest.skip("torch.distributed is not available", allow_module_level=True)

from inplace_lint.fixing import fix_code  # noqa: E402

SOURCES = {
    "router": """\
        import torch


        def run(scores, experts_weights):
            rw = torch.softmax(scores, dim=-1)
            rw /= rw.sum(-1, keepdim=True)
            return experts_weights * rw
        """,
    "seed": """\
        def run(model, h, temperature):
            logits = model(h).logits.squeeze(0)
            logits.div_(temperature.clamp(min=1e-8).unsqueeze(-1).to(logits.dtype))
            return logits
        """,
    "number": """\
        def run(model, h, t: float):
            logits = model(h).logits.squeeze(0)
            logits /= t
            return logits
        """,
    "zero_dim": """\
        def run(model, h, t):
            logits = model(h).logits.squeeze(0)
            logits.div_(t)
            return logits
        """,
}
#: the out-of-place form of each, run on plain tensors (the reference)
OUT_OF_PLACE = {
    "router": lambda scores, w: w * (torch.softmax(scores, -1) / torch.softmax(scores, -1).sum(-1, keepdim=True)),
    "seed": lambda h, t: h.squeeze(0) / t.clamp(min=1e-8).unsqueeze(-1).to(h.dtype),
    "number": lambda h, t: h.squeeze(0) / t,
    "zero_dim": lambda h, t: h.squeeze(0) / t,
}
STYLES = ("inline", "runtime")
N, V = 4, 6


def _rewrites():
    out = {}
    for name, src in SOURCES.items():
        for style in STYLES:
            result = fix_code(textwrap.dedent(src), f"{name}.py", style=style)
            assert result.error is None and len(result.applied) == 1, (name, style, result)
            out[(name, style)] = result.new_source
    return out


def _leaves(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(1, N, V, generator=g).requires_grad_(), torch.rand(N, V, generator=g).requires_grad_(),
            torch.linspace(0.5, 2.0, N), torch.randn(N, V, generator=g))


def _check(rank, world, mesh, rewrites):
    from torch.distributed.tensor import DTensor, Replicate, Shard

    def to_dt(full, placement):
        local = full if isinstance(placement, Replicate) else full.chunk(world, dim=placement.dim)[rank]
        return DTensor.from_local(local, mesh, [placement], run_check=False)

    def grad_part(grad, placement):
        return grad if isinstance(placement, Replicate) else grad.chunk(world, dim=placement.dim)[rank]

    for (name, style), code in rewrites.items():
        namespace = {}
        exec(compile(code, f"<{name} {style}>", "exec"), namespace)
        fixed = namespace["run"]
        cases = []  # (inputs kind, placement of the sharded operand, temperature kind)
        if name == "router":
            cases = [("plain", None, None), ("dtensor", Shard(0), None), ("dtensor", Replicate(), None),
                     ("dtensor", Shard(1), None)]
        elif name == "seed":
            cases = [("plain", None, "plain"), ("dtensor", Shard(2), "plain"), ("dtensor", Shard(1), "plain"),
                     ("dtensor", Replicate(), "dtensor")]
        else:
            cases = [("plain", None, None), ("dtensor", Shard(2), None), ("dtensor", Shard(1), None)]
        for kind, placement, temp_kind in cases:
            where = f"{name} {style} {kind} {placement} temperature={temp_kind} world={world}"
            h, w, t, upstream = _leaves(0)
            if name == "number":
                t = 0.75
            elif name == "zero_dim":
                t = torch.tensor(0.75)
            if name == "router":
                sw = h.squeeze(0) * 1.0
                ww = w * 1.0
                if kind == "dtensor":
                    sw, ww = to_dt(sw, placement), to_dt(ww, placement)
                out = fixed(sw, ww)
                expect_dtensor = kind == "dtensor"
            else:
                head = h * 1.0
                if kind == "dtensor":
                    head = to_dt(head, placement)
                temperature = t
                if temp_kind == "dtensor":
                    temperature = DTensor.from_local(t, mesh, [Replicate()], run_check=False)
                out = fixed(lambda x: type("Out", (), {"logits": x}), head, temperature)
                # a plain temperature with dimensions is the only mix: gathered (verl PR 6935);
                # a number, a 0-dim tensor or a DTensor temperature leaves the DTensor as it is
                expect_dtensor = kind == "dtensor" and temp_kind != "plain"
            assert isinstance(out, DTensor) == expect_dtensor, where
            full = out.full_tensor() if isinstance(out, DTensor) else out
            (full * upstream).sum().backward()
            rh, rw_, rt, _ = _leaves(0)
            if name == "router":
                ref = OUT_OF_PLACE[name](rh.squeeze(0), rw_)
            else:
                ref = OUT_OF_PLACE[name](rh, t if name in ("number", "zero_dim") else rt)
            (ref * upstream).sum().backward()
            torch.testing.assert_close(full.detach(), ref.detach(), rtol=0, atol=0, msg=where)
            assert full.dtype == ref.dtype, where
            dim_of = {None: None}
            if kind == "plain" or isinstance(placement, Replicate):
                torch.testing.assert_close(h.grad, rh.grad, msg=where)
                if name == "router":
                    torch.testing.assert_close(w.grad, rw_.grad, msg=where)
            else:
                # each rank's gradient reaches its own slice of the leaf (the local tensor it passed)
                dim = placement.dim + (1 if name == "router" else 0)
                torch.testing.assert_close(grad_part(h.grad, Shard(dim)), grad_part(rh.grad, Shard(dim)), msg=where)
                if name == "router":
                    torch.testing.assert_close(grad_part(w.grad, placement), grad_part(rw_.grad, placement), msg=where)
            del dim_of


def _worker(rank, world, port, rewrites, queue):
    try:
        torch.set_num_threads(1)
        dist.init_process_group("gloo", rank=rank, world_size=world, init_method=f"tcp://127.0.0.1:{port}")
        from torch.distributed.device_mesh import init_device_mesh

        try:
            _check(rank, world, init_device_mesh("cpu", (world,)), rewrites)
        finally:
            dist.destroy_process_group()
    except BaseException:
        queue.put((rank, traceback.format_exc()))
        raise SystemExit(1)
    queue.put((rank, None))
    # leave without running the interpreter's teardown: gloo's threads may still be winding down then, and the C++
    # runtime aborts the process ("terminate called without an active exception", exit -6) after the rank has
    # reported success (seen once in a fresh-clone CI run, twenty-fifth session); the report is flushed first
    queue.close()
    queue.join_thread()
    os._exit(0)


def test_router_gathers_nothing_in_the_inline_style():
    """The operand that reads the target is held in a temporary first, and the guard tests it."""
    fixed = _rewrites()[("router", "inline")]
    assert "    _rw_operand = rw.sum(-1, keepdim=True)\n" \
           "    if isinstance(rw, DTensor) and not isinstance(_rw_operand, DTensor) and " \
           "getattr(_rw_operand, \"ndim\", 0) > 0:\n        rw = rw.full_tensor()\n" \
           "    rw = rw.clone().div_(_rw_operand)\n" in fixed


def test_original_router_raises_at_backward():
    ns = {}
    exec(textwrap.dedent(SOURCES["router"]), ns)
    h, w, _, upstream = _leaves(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (ns["run"](h.squeeze(0) * 1.0, w) * upstream).sum().backward()


@pytest.mark.parametrize("world", [1, 2])
def test_guard_decides_on_the_operands_on_a_gloo_mesh(world):
    rewrites = _rewrites()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(r, world, port, rewrites, queue)) for r in range(world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    reports = {}
    while not queue.empty():
        rank, err = queue.get()
        reports[rank] = err
    for p in procs:
        if p.is_alive():
            p.kill()
    errors = [f"rank {r}:\n{e}" for r, e in reports.items() if e]
    assert not errors, "\n".join(errors)
    assert sorted(reports) == list(range(world)), reports  # every rank ran its checks to the end
    assert [p.exitcode for p in procs] == [0] * world, reports
