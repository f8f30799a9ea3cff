"""DTensor tests for inplace_lint.runtime on real gloo process groups (CPU).

World size 1 runs in this process; world size 2 runs in two spawned
processes that check against the single-process reference and report through
their exit code. Facts cited: docs/pytorch-facts.md#dtensor-mixing,
#dtensor-local-is-custom-function.
"""

import multiprocessing
import socket
import traceback

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available():  # pragma: no cover
    pytest.skip("torch.distributed is not available", allow_module_level=True)

from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor  # noqa: E402
from torch.distributed.tensor.parallel import ColwiseParallel, parallelize_module  # noqa: E402

from inplace_lint.runtime import inplace_hazard, out_of_place, scale_logits, setitem  # noqa: E402

CF_MSG = "is a view and is being modified inplace"
MIX_MSG = "mixed torch.Tensor and DTensor"
N, H, V = 4, 3, 8


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _init(rank, world_size, port):
    dist.init_process_group("gloo", rank=rank, world_size=world_size,
                            init_method=f"tcp://127.0.0.1:{port}")
    return init_device_mesh("cpu", (world_size,))


def _data(seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, N, H, generator=g)
    w = torch.randn(V, H, generator=g)
    t = torch.tensor([0.5, 0.0, 1.5, 2.0])  # a padding row carries 0
    upstream = torch.randn(N, V, generator=g)
    return x, w, t, upstream


def _reference(x, w, t, upstream, dtype=torch.float32):
    """Single-process reference: plain head, out-of-place scaling."""
    wr = w.clone().to(dtype).requires_grad_()
    logits = (x.to(dtype) @ wr.t()).squeeze(0)
    out = logits / t.clamp(min=1e-8).unsqueeze(-1).to(dtype)
    (out.float() * upstream).sum().backward()
    return out.detach(), wr.grad


def _head(mesh, w, *, sharded_output):
    head = torch.nn.Linear(H, V, bias=False)
    with torch.no_grad():
        head.weight.copy_(w)
    if sharded_output:  # vocab-sharded DTensor logits (docs/pytorch-facts.md#dtensor-mixing)
        plan = ColwiseParallel(output_layouts=Shard(-1), use_local_output=False)
    else:  # logits are a view made in the custom Function _ToTorchTensor (#dtensor-local-is-custom-function)
        plan = ColwiseParallel(output_layouts=Replicate(), use_local_output=True)
    return parallelize_module(head, mesh, plan)


def _as_plain(t):
    return t.full_tensor() if isinstance(t, DTensor) else t


def _check_tp_heads(mesh):
    """A tensor-parallel head, as a custom-Function view and as DTensor logits, reproduced and cured; values and weight grads vs reference."""
    x, w, t, upstream = _data()
    ref_out, ref_grad = _reference(x, w, t, upstream)

    # Replicate output, use_local_output=True -> custom-Function view
    head = _head(mesh, w, sharded_output=False)
    logits = head(x)
    assert not isinstance(logits, DTensor)
    with pytest.raises(RuntimeError, match=CF_MSG):
        logits.squeeze(0).div_(t.unsqueeze(-1))
    logits = head(x)
    out = scale_logits(logits.squeeze(0), t)
    (out * upstream).sum().backward()
    torch.testing.assert_close(out.detach(), ref_out)
    torch.testing.assert_close(_as_plain(head.weight.grad), ref_grad)

    # Shard(-1) output, use_local_output=False -> DTensor logits
    for keep_sharded in (False, True):
        head = _head(mesh, w, sharded_output=True)
        logits = head(x)
        assert isinstance(logits, DTensor)
        with pytest.raises(RuntimeError, match=MIX_MSG):
            logits.squeeze(0).div_(t.unsqueeze(-1))
        logits = head(x)
        out = scale_logits(logits.squeeze(0), t, keep_sharded=keep_sharded)
        if keep_sharded:
            assert isinstance(out, DTensor) and out.placements == (Shard(1),)
        else:
            assert not isinstance(out, DTensor)
        (_as_plain(out) * upstream).sum().backward()
        torch.testing.assert_close(_as_plain(out).detach(), ref_out)
        torch.testing.assert_close(_as_plain(head.weight.grad), ref_grad)


def _check_dtensor_ops(mesh):
    """Gather and keep-sharded paths of scale_logits / out_of_place / setitem."""
    g = torch.Generator().manual_seed(7)
    full = torch.randn(N, V, generator=g)
    t = torch.rand(N, generator=g) + 0.5
    mask = torch.rand(N, V, generator=g) > 0.5
    src = torch.randn(N, V, generator=g)

    for dtype in (torch.float32, torch.bfloat16):
        fl = full.to(dtype)
        dt = distribute_tensor(fl, mesh, [Shard(-1)])
        before = dt.full_tensor().clone()

        ref = fl / t.clamp(min=1e-8).unsqueeze(-1).to(dtype)
        got = scale_logits(dt, t)
        assert type(got) is torch.Tensor and got.dtype == dtype
        assert torch.equal(got, ref)
        got = scale_logits(dt, t, keep_sharded=True)
        assert isinstance(got, DTensor) and got.placements == (Shard(1),)
        assert got.dtype == dtype and torch.equal(got.full_tensor(), ref)
        # 0-d and Python temperatures mix fine (docs/pytorch-facts.md#dtensor-mixing); T == 1 is the input
        t0 = torch.tensor(0.7)
        assert torch.equal(_as_plain(scale_logits(dt, t0)), fl / t0)  # a 0-dim temperature is not cast first
        assert scale_logits(dt, 1) is dt

        cases = [
            ("div_", (t.unsqueeze(-1),), {}),
            ("masked_fill_", (mask, 0.0), {}),
            ("copy_", (src,), {}),
            ("add_", (src,), {"alpha": 2}),
        ]
        for op, args, kwargs in cases:
            expected = fl.clone()
            getattr(expected, op)(*args, **kwargs)
            got = out_of_place(dt, op, *args, **kwargs)
            assert type(got) is torch.Tensor and got.dtype == dtype, op
            assert torch.equal(got, expected), op
            got = out_of_place(dt, op, *args, keep_sharded=True, **kwargs)
            assert isinstance(got, DTensor) and got.placements == (Shard(1),), op
            assert got.dtype == dtype and torch.equal(got.full_tensor(), expected), op
            with pytest.raises(RuntimeError, match=MIX_MSG):
                getattr(distribute_tensor(fl, mesh, [Shard(-1)]), op)(*args, **kwargs)

        expected = fl.clone()
        expected[mask] = -1.0
        got = setitem(dt, mask, -1.0)
        assert type(got) is torch.Tensor and torch.equal(got, expected)
        got = setitem(dt, mask, -1.0, keep_sharded=True)
        assert isinstance(got, DTensor) and torch.equal(got.full_tensor(), expected)

        assert torch.equal(dt.full_tensor(), before), "input DTensor was mutated"

    # inplace=True on a DTensor target lifts the operand and writes into it (docs/pytorch-facts.md#dtensor-mixing)
    dt = distribute_tensor(full.clone(), mesh, [Shard(-1)])
    out = out_of_place(dt, "div_", t.unsqueeze(-1), inplace=True)
    assert out is dt and torch.equal(dt.full_tensor(), full / t.unsqueeze(-1))


def _check_dtensor_auto(mesh):
    g = torch.Generator().manual_seed(3)  # same data on every rank
    full = torch.randn(N, V, generator=g)
    t = torch.rand(N, generator=g) + 0.5
    dt = distribute_tensor(full.clone(), mesh, [Shard(-1)])
    assert inplace_hazard(dt) is None
    assert inplace_hazard(dt, t.unsqueeze(-1)) is not None
    assert "mixed" in inplace_hazard(dt, t.unsqueeze(-1))
    # mixing needed -> out of place, no error, input untouched
    out = scale_logits(dt, t, inplace="auto")
    assert out is not dt and torch.equal(_as_plain(out), full / t.unsqueeze(-1))
    out = out_of_place(dt, "mul_", t.unsqueeze(-1), inplace="auto")
    assert out is not dt and torch.equal(_as_plain(out), full * t.unsqueeze(-1))
    out = setitem(dt, full > 0, 0.0, inplace="auto")
    assert out is not dt
    assert torch.equal(dt.full_tensor(), full)
    # scalar / 0-d operand: no mixing -> in place on the DTensor itself
    out = scale_logits(dt, 2.0, inplace="auto")
    assert out is dt and torch.equal(dt.full_tensor(), full / 2.0)
    out = out_of_place(dt, "mul_", torch.tensor(4.0), inplace="auto")
    assert out is dt and torch.equal(dt.full_tensor(), full * 2.0)


# ------------------------------------------------------------ world size 1


@pytest.fixture(scope="module")
def mesh1():
    mesh = _init(0, 1, _free_port())
    yield mesh
    dist.destroy_process_group()


def test_ws1_tensor_parallel_heads_crash_and_cure(mesh1):
    _check_tp_heads(mesh1)


def test_ws1_dtensor_gather_and_keep_sharded(mesh1):
    _check_dtensor_ops(mesh1)


def test_ws1_dtensor_auto(mesh1):
    _check_dtensor_auto(mesh1)


def test_ws1_hazard_on_tp_view(mesh1):
    x, w, t, _ = _data()
    logits = _head(mesh1, w, sharded_output=False)(x)
    assert "custom autograd Function" in inplace_hazard(logits.squeeze(0))
    out = scale_logits(logits.squeeze(0), t, inplace="auto")
    assert out.data_ptr() != logits.data_ptr()


# ------------------------------------------------------------ world size 2


def _ws2_worker(rank, world_size, port, queue):
    try:
        torch.set_num_threads(1)
        mesh = _init(rank, world_size, port)
        try:
            _check_tp_heads(mesh)
            _check_dtensor_ops(mesh)
            _check_dtensor_auto(mesh)
            # the keep-sharded result really is sharded: each rank holds V/2
            dt = distribute_tensor(torch.randn(N, V, generator=torch.Generator().manual_seed(1)),
                                   mesh, [Shard(-1)])
            out = scale_logits(dt, torch.full((N,), 0.5), keep_sharded=True)
            assert out.to_local().shape == (N, V // world_size)
        finally:
            dist.destroy_process_group()
    except BaseException:
        queue.put((rank, traceback.format_exc()))
        raise SystemExit(1)
    queue.put((rank, None))


def test_ws2_spawned_processes_match_single_process_reference():
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_ws2_worker, args=(r, 2, port, queue)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=90)
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
