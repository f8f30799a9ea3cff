"""The seed bug on a real training step: a small decoder-only LM whose output object holds the logits,
verl's ``logits_rmpad = output.logits.squeeze(0); logits_rmpad.div_(temperature)``, loss and backward, with
a plain head, a custom-Function head, and a tensor-parallel head (``ColwiseParallel`` on a world-size-1 gloo
group, whose ``to_local()`` is a custom Function)."""
import importlib.util
import pathlib
import socket

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from inplace_lint.sanitize import sanitize  # noqa: E402
from tests.torch_models import CF_MSG, ViewFn  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
HERE = pathlib.Path(__file__).resolve()
_spec = importlib.util.spec_from_file_location("bench_sanitize", ROOT / "benchmarks" / "bench_sanitize.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def line(marker):
    hits = [i for i, t in enumerate(HERE.read_text().splitlines(), 1) if t.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1
    return hits[0]


class ModelOutput(dict):
    __getattr__ = dict.__getitem__


class CausalLM(nn.Module):
    def __init__(self, head="plain", vocab=64, d=32):
        super().__init__()
        torch.manual_seed(0)
        self.body = bench.Decoder(vocab, d, layers=2, heads=4, seq=16)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.custom = head == "custom"

    def forward(self, ids):
        b = self.body
        x = b.tok(ids) + b.pos(torch.arange(ids.shape[1]))
        for block in b.blocks:
            x = block(x)
        logits = self.lm_head(b.ln(x))
        if self.custom:  # a fused head: its output is a view made inside a custom autograd Function
            logits = ViewFn.apply(logits)
        return ModelOutput(logits=logits)


def actor_step(model, ids, temperature):
    output = model(ids)
    logits_rmpad = output.logits.squeeze(0)
    logits_rmpad.div_(temperature.clamp(min=1e-8).unsqueeze(-1).to(logits_rmpad.dtype))  # seed
    logp = F.log_softmax(logits_rmpad[:-1], -1).gather(-1, ids[0, 1:].unsqueeze(-1))
    loss = -logp.mean()
    loss.backward()
    return loss


IDS = torch.randint(0, 64, (1, 16), generator=torch.Generator().manual_seed(1))
TEMPERATURE = torch.full((16,), 0.7)


def test_plain_head_runs_and_the_write_is_reported_as_ipv001():
    with sanitize() as s:
        loss = actor_step(CausalLM(), IDS, TEMPERATURE)
    assert torch.equal(loss, actor_step(CausalLM(), IDS, TEMPERATURE))  # unchanged by the sanitizer
    assert [(f.code, f.path, f.line) for f in s.findings] == [("IPV001", str(HERE), line("seed"))]


def test_custom_function_head_raises_as_in_pytorch_and_is_reported_as_ipv002():
    with sanitize() as s:
        with pytest.raises(RuntimeError, match=CF_MSG):
            actor_step(CausalLM("custom"), IDS, TEMPERATURE)
    assert [(f.code, f.line) for f in s.findings] == [("IPV002", line("seed"))]


@pytest.fixture
def mesh():
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    from torch.distributed.device_mesh import init_device_mesh

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dist.init_process_group("gloo", rank=0, world_size=1, init_method=f"tcp://127.0.0.1:{port}")
    try:
        yield init_device_mesh("cpu", (1,))
    finally:
        dist.destroy_process_group()


def test_tensor_parallel_head_is_reported_as_ipv002(mesh):
    from torch.distributed.tensor import Replicate
    from torch.distributed.tensor.parallel import ColwiseParallel, parallelize_module

    model = CausalLM()
    parallelize_module(model.lm_head, mesh, ColwiseParallel(output_layouts=Replicate()))
    with sanitize() as s:
        with pytest.raises(RuntimeError, match=CF_MSG):
            actor_step(model, IDS, TEMPERATURE)
    assert [(f.code, f.line) for f in s.findings] == [("IPV002", line("seed"))]


def test_dtensor_output_of_a_top_level_call_is_ipv001(mesh):
    from torch.distributed.tensor import DTensor, Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, parallelize_module

    head = nn.Linear(8, 16)
    parallelize_module(head, mesh, ColwiseParallel(output_layouts=Shard(-1), use_local_output=False))
    with sanitize() as s:
        logits = head(torch.randn(1, 4, 8))
        logits.squeeze(0).div_(0.7)  # dtensor-div (a 0-dim divisor: works on a DTensor)
        logits.full_tensor().sum().backward()
    assert isinstance(logits, DTensor)
    marker = "dtensor-div (a 0-dim divisor: works on a DTensor)"
    assert [(f.code, f.line) for f in s.findings] == [("IPV001", line(marker))]
