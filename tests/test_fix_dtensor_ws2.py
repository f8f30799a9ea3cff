"""Rewritten code on a real 2-process gloo mesh (CPU): the inline DTensor guard does not gather a
target whose operand is itself a DTensor (issue 10 item 3: ``probs.mul_(log_probs)`` with both from
DTensor logits), and gathers a target divided by a plain temperature (the seed), for Shard(0),
Shard(1) and Replicate placements, in every style; values and gradients match the plain reference."""
from __future__ import annotations

import multiprocessing
import socket
import traceback

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available():  # pragma: no cover
    pytest.skip("torch.distributed is not available", allow_module_level=True)

from inplace_lint.fixing import fix_code  # noqa: E402

ENTROPY = ("def entropy(logits):\n    probs = logits.softmax(-1)\n    log_probs = logits.log_softmax(-1)\n"
           "    probs.mul_(log_probs)\n    return -probs.sum(-1)\n")
SEED = ("def scale(model, h, temperature):\n    output = model(h)\n    logits = output.logits.squeeze(0)\n"
        "    logits.div_(temperature.unsqueeze(-1))\n    return logits\n")
STYLES = [("runtime", False), ("inline", False), ("runtime", True)]


def _rewrites():
    return {(name, style, aware): fix_code(src, style=style, memory_aware=aware, unsafe_fixes=True).new_source
            for name, src in (("entropy", ENTROPY), ("seed", SEED)) for style, aware in STYLES}


def _check(rank, world, mesh, rewrites):
    from torch.distributed.tensor import DTensor, Replicate, Shard

    for placement in (Shard(0), Shard(1), Replicate()):
        for (name, style, aware), code in rewrites.items():
            namespace = {}
            exec(compile(code, f"<{name}>", "exec"), namespace)
            w = torch.linspace(-2, 2, 4 * 6).reshape(4, 6).requires_grad_()
            full = w * 1.0
            local = full if isinstance(placement, Replicate) else full.chunk(world, dim=placement.dim)[rank]
            if name == "entropy":
                logits = DTensor.from_local(local, mesh, [placement], run_check=False)
                out = namespace["entropy"](logits)
            else:
                logits = DTensor.from_local(local.unsqueeze(0), mesh,
                                            [placement if isinstance(placement, Replicate) else Shard(placement.dim + 1)],
                                            run_check=False)
                out = namespace["scale"](lambda h: type("O", (), {"logits": logits}), None, torch.linspace(0.5, 2, 4))
            out = out.full_tensor() if isinstance(out, DTensor) else out
            out.sum().backward()
            ref_w = torch.linspace(-2, 2, 4 * 6).reshape(4, 6).requires_grad_()
            if name == "entropy":
                ref = -(ref_w.softmax(-1) * ref_w.log_softmax(-1)).sum(-1)
            else:
                ref = ref_w / torch.linspace(0.5, 2, 4).unsqueeze(-1)
            ref.sum().backward()
            where = f"{name} {style} memory_aware={aware} {placement}"
            torch.testing.assert_close(out.detach(), ref.detach(), msg=where)
            # each rank's gradient reaches its own slice of w (the local tensor it passed to from_local)
            if isinstance(placement, Replicate):
                torch.testing.assert_close(w.grad, ref_w.grad, msg=where)
            else:
                torch.testing.assert_close(w.grad.chunk(world, dim=placement.dim)[rank],
                                           ref_w.grad.chunk(world, dim=placement.dim)[rank], msg=where)


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


def test_rewrites_on_a_two_process_mesh():
    rewrites = _rewrites()
    assert "    if isinstance(probs, DTensor) and not isinstance(log_probs, DTensor) and getattr(log_probs, \"ndim\", 0) > 0:\n" in rewrites[("entropy", "inline", False)]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(r, 2, port, rewrites, queue)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    reports = {}
    while not queue.empty():
        rank, err = queue.get()
        reports[rank] = err
    for p in procs:
        if p.is_alive():
            p.kill()
    errors = [f"rank {r}:\n{e}" for r, e in reports.items() if e]
    assert not errors, "\n".join(errors)
    assert [p.exitcode for p in procs] == [0, 0], reports
