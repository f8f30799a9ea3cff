"""Runtime sanitizer: each hazard found at its line with its code in a small training step; legal writes
not reported; the program's behaviour (values, gradients, exceptions) unchanged; nothing kept alive.

Lines are found by their marker comment (``# <marker>``) in this file, so the tests say which line must
be reported without hard-coding numbers.
"""
import gc
import pathlib
import weakref

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from inplace_lint.sanitize import InplaceHazardError, sanitize  # noqa: E402
from tests.torch_models import CF_MSG, ViewFn  # noqa: E402

HERE = pathlib.Path(__file__).resolve()
SOURCE = HERE.read_text(encoding="utf-8").splitlines()


def line(marker: str) -> int:
    """1-based line of the one line of this file that ends with ``# <marker>``."""
    hits = [i for i, text in enumerate(SOURCE, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def found(s, path=HERE):
    """``[(code, line)]`` of the sanitizer's findings in ``path``."""
    return [(f.code, f.line) for f in s.findings if pathlib.Path(f.path).resolve() == pathlib.Path(path)]


# --- a small model: plain head or custom-Function head, output object like transformers' ModelOutput ---------


class ModelOutput(dict):
    """A dict whose keys are also attributes, as ``transformers.utils.ModelOutput``."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError as exc:
            raise AttributeError(name) from exc


class TinyLM(nn.Module):
    def __init__(self, vocab=11, d=8, custom_head=False, inplace_act=False):
        super().__init__()
        torch.manual_seed(0)
        self.emb = nn.Embedding(vocab, d)
        self.proj = nn.Linear(d, d)
        self.bias = nn.Parameter(torch.zeros(d))
        self.act = nn.ReLU(inplace=True) if inplace_act else nn.GELU()
        self.head = nn.Linear(d, vocab)
        self.custom_head = custom_head

    def forward(self, ids):
        h = self.proj(self.emb(ids))
        h += self.bias  # legal: a submodule's output written inside the model's own forward
        h = self.act(h)
        logits = self.head(h)
        if self.custom_head:  # a fused / tensor-parallel head: its output is a view made in a custom Function
            logits = ViewFn.apply(logits)
        return ModelOutput(logits=logits)


def ids():
    return torch.tensor([[1, 2, 3, 4, 5]])


def seed_step(model, temperature=0.7):
    """verl's shape: logits of the model output, squeezed, divided in place by the temperature."""
    output = model(ids())
    logits_rmpad = output.logits.squeeze(0)
    logits_rmpad.div_(temperature)  # seed-div
    loss = F.cross_entropy(logits_rmpad, ids()[0])
    loss.backward()
    return loss


def plain_step(model, temperature=0.7):
    output = model(ids())
    logits = output.logits.squeeze(0) / temperature
    loss = F.cross_entropy(logits, ids()[0])
    loss.backward()
    return loss


# --- each hazard, at its line ----------------------------------------------------------------------------------


def test_seed_with_plain_head_is_ipv001_and_the_step_is_unchanged():
    reference = TinyLM()
    seed_step(reference)
    model = TinyLM()
    with sanitize() as s:
        loss = seed_step(model)
    assert found(s) == [("IPV001", line("seed-div"))]
    f = s.findings[0]
    assert f.op == "div_" and f.count == 1 and f.target == "logits_rmpad.div_(temperature)"
    assert "on a view of `output.logits` of a top-level `TinyLM` call that its output object still holds" in f.message
    # the write ran as it would have: same loss, same gradients
    ref_loss = seed_step(TinyLM())
    assert torch.equal(loss, ref_loss)
    for p, q in zip(model.parameters(), reference.parameters()):
        assert torch.equal(p.grad, q.grad)


def test_seed_with_custom_function_head_is_ipv002_and_pytorch_still_raises():
    with sanitize() as s:
        with pytest.raises(RuntimeError, match=CF_MSG):
            seed_step(TinyLM(custom_head=True))
    assert found(s) == [("IPV002", line("seed-div"))]


def test_multi_output_view_ipv003():
    x = torch.randn(4, 6, requires_grad=True)
    with sanitize() as s:
        h = x * 2
        first, second = h.chunk(2)
        with pytest.raises(RuntimeError, match="multiple views"):
            first.mul_(2)  # ipv003-chunk
        for row in h:
            with pytest.raises(RuntimeError, match="multiple views"):
                row.add_(1)  # ipv003-loop
            break
    assert found(s) == [("IPV003", line("ipv003-chunk")), ("IPV003", line("ipv003-loop"))]


def test_overlapping_memory_ipv004_also_where_pytorch_is_silent():
    x = torch.randn(3, 4, requires_grad=True)
    t = torch.tensor([0.5, 2.0, 0.0]).unsqueeze(-1)
    with sanitize() as s:
        temperature = t.expand(3, 4)
        with pytest.raises(RuntimeError, match="single memory location"):
            temperature.clamp_(min=1e-8)  # ipv004-clamp
        base = torch.zeros(1)
        wide = base.expand(3)
        wide.fill_(2.0)  # not reported, as in `check`: fills the base, which is usually the intent
        wide[0] = 5.0  # ipv004-setitem
        with pytest.warns(UserWarning, match="masked_fill_ on expanded tensors is deprecated"):
            wide.masked_fill_(torch.tensor([False, True, False]), 7.0)  # ipv004-masked-fill
        (x / temperature).sum().backward()
    assert found(s) == [("IPV004", line("ipv004-clamp")), ("IPV004", line("ipv004-setitem")),
                        ("IPV004", line("ipv004-masked-fill"))]
    assert base.item() == 7.0  # PyTorch let the item assignment and masked_fill_ through: the base changed
    assert "PyTorch raises" in s.findings[0].message
    assert all("silently writes the base" in f.message for f in s.findings[1:])


def test_view_made_in_no_grad_ipv005():
    x = torch.randn(4, requires_grad=True)
    with sanitize() as s:
        h = x * 1
        with torch.no_grad():
            head = h[:2]
        with pytest.raises(RuntimeError, match="no_grad mode"):
            head += 1  # ipv005-write
    assert found(s) == [("IPV005", line("ipv005-write"))]
    assert s.findings[0].op == "+=" and s.findings[0].write_kind.name == "AUGMENTED"


def test_saved_output_ipv006_reported_at_the_write_not_at_backward():
    logits = torch.randn(3, 5, requires_grad=True)
    with sanitize() as s:
        logps = F.log_softmax(logits * 1, dim=-1)
        probs = logps.exp()
        probs.mul_(logps)  # ipv006-write (TRL #7125: exp saves its output)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            probs.sum().backward()
    assert found(s) == [("IPV006", line("ipv006-write (TRL #7125: exp saves its output)"))]


class Entropy(torch.autograd.Function):
    """Saves its input for backward, as verl's vocab-parallel entropy does (verl #1970)."""

    @staticmethod
    def forward(ctx, logits):
        ctx.save_for_backward(logits)
        p = logits.softmax(-1)
        return -(p * p.log()).sum(-1)

    @staticmethod
    def backward(ctx, g):
        (logits,) = ctx.saved_tensors
        p = logits.softmax(-1)
        return g.unsqueeze(-1) * -p * (p.log() - (p * p.log()).sum(-1, keepdim=True))


def test_tensor_saved_by_a_custom_function_ipv006():
    x = torch.randn(2, 5, requires_grad=True)
    with sanitize() as s:
        logits = x * 1
        entropy = Entropy.apply(logits)
        logits.div_(0.5)  # ipv006-saved-input
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            entropy.sum().backward()
    assert found(s) == [("IPV006", line("ipv006-saved-input"))]


def test_input_saved_by_gather_ipv006():
    scores = torch.randn(3, 5, requires_grad=True)
    idx = torch.tensor([[0], [2], [4]])
    with sanitize() as s:
        h = scores * 1
        picked = torch.gather(h, -1, idx)
        h.div_(2.0)  # ipv006-gather (gather saves its input)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            picked.sum().backward()
    assert found(s) == [("IPV006", line("ipv006-gather (gather saves its input)"))]


def test_write_through_data_on_a_saved_tensor_is_ipv006_and_stays_silent_as_in_pytorch():
    x = torch.randn(4, requires_grad=True)
    with sanitize() as s:
        y = x.sigmoid()
        y.data.mul_(2)  # ipv006-data
        y.sum().backward()  # PyTorch does not see `.data` writes: no error, a wrong gradient
    assert found(s) == [("IPV006", line("ipv006-data"))]


def test_inplace_kwarg_and_out_kwarg_writes():
    x = torch.randn(4, 6, requires_grad=True)
    with sanitize() as s:
        h = (x * 1).exp()
        F.relu(h, inplace=True)  # inplace-kwarg
        torch.add(x.detach(), 1, out=h.detach())  # out-kwarg
        with pytest.raises(RuntimeError):
            h.sum().backward()
    got = {(f.code, f.line, f.write_kind.name) for f in s.findings}
    assert got == {("IPV006", line("inplace-kwarg"), "INPLACE_KWARG"), ("IPV006", line("out-kwarg"), "OUT_KWARG")}


def test_writes_through_torch_ops_are_seen_by_their_schema():
    x = torch.randn(4, requires_grad=True)
    with sanitize() as s:
        y = x.exp()
        torch.ops.aten.mul_.Tensor(y, torch.full((4,), 2.0))  # ops-overload
        torch.ops.aten.add_(y, 1.0)  # ops-packet
        torch.ops.aten.add(y, 1.0)  # not a write
    assert found(s) == [("IPV006", line("ops-overload")), ("IPV006", line("ops-packet"))]
    assert [f.op for f in s.findings] == ["mul_", "add_"]


def test_count_adds_up_over_steps_and_raise_option():
    model = TinyLM()
    with sanitize() as s:
        for _ in range(3):
            seed_step(model)
    assert [(f.code, f.line, f.count) for f in s.findings] == [("IPV001", line("seed-div"), 3)]
    assert "(seen 3 times at run time)" in s.findings[0].to_finding().message

    model = TinyLM()
    with sanitize(raise_on_finding=True) as s:
        output = model(ids())
        before = output.logits.clone()
        with pytest.raises(InplaceHazardError, match=f"{HERE.name}:{line('raise-div')}: IPV001"):
            output.logits.squeeze(0).div_(2.0)  # raise-div
    assert torch.equal(output.logits, before)  # raised before the write


def test_decorator_form_and_user_line_inside_a_helper_file(tmp_path):
    @sanitize()
    def step():
        return seed_step(TinyLM())

    step()  # no crash; the decorator enters and leaves the mode
    s = sanitize()
    for _ in range(2):
        with s:
            step()  # nested: the outer sanitizer sees the same writes
    assert found(s) == [("IPV001", line("seed-div"))] and s.findings[0].count == 2


# --- legal writes: not reported ------------------------------------------------------------------------------


def test_legal_inplace_writes_are_not_reported():
    model = TinyLM(inplace_act=True)  # nn.ReLU(inplace=True) on a submodule output inside forward
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sgd = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    with sanitize() as s:
        for _ in range(2):
            plain_step(model)
            opt.step()  # optimizer updates: parameters written under no_grad
            sgd.step()
            opt.zero_grad()
            sgd.zero_grad()
        fresh = torch.zeros(5)
        fresh.add_(1)  # a fresh tensor
        fresh[0] = 3.0
        fresh /= 2
        with torch.no_grad():  # grad off: rollout / log-prob paths
            output = model(ids())
            output.logits.squeeze(0).div_(0.7)
        x = torch.randn(3, 4, requires_grad=True)
        y = x * 2
        y[0].mul_(2)  # a single select view of a non-leaf (legal in PyTorch)
        z = model.head(torch.randn(1, 8))  # a module called alone: the tensor it returns, written
        F.relu(z, inplace=True)
        (y.sum() + z.sum()).backward()
    assert s.findings == []


def test_backward_errors_unchanged_and_legal_gradients_equal():
    x = torch.randn(4, requires_grad=True)
    lin = nn.Linear(4, 4)
    with sanitize():
        y = lin(x)
        F.relu(y, inplace=True)  # legal (docs/pytorch-facts.md#saved-output): relu's output is not saved by the linear
        y.sum().backward()
    reference = x.grad.clone()
    x.grad = None
    y = lin(x)
    F.relu(y, inplace=True)
    y.sum().backward()
    assert torch.equal(x.grad, reference)


# --- nothing kept alive ---------------------------------------------------------------------------------------


def test_keeps_no_tensor_alive():
    from inplace_lint.sanitize import tracking

    saved_before = dict(tracking.SAVED)
    model = TinyLM()
    s = sanitize()
    with s:
        output = model(ids())
        view = output.logits.squeeze(0)
        view.div_(0.5)
        probs = (view * 1).exp()
        probs.mul_(2)
        refs = [weakref.ref(t) for t in (output.logits, view, probs)]
        out_ref = weakref.ref(output)
        del output, view, probs
    assert {f.code for f in s.findings} == {"IPV001", "IPV006"}
    gc.collect()
    assert [r() for r in refs] == [None, None, None] and out_ref() is None
    assert tracking.SAVED == saved_before and s._outputs == {}  # the graph is gone: so are its records


def test_torch_func_needs_saved_tensors_off_and_disabled_hooks_are_respected():
    x = torch.randn(3)
    with sanitize(saved_tensors=False) as s:
        g = torch.func.grad(lambda t: t.sin().sum())(x)  # refuses to run under saved-tensor hooks
        y = torch.randn(3, requires_grad=True).exp()
        y.mul_(2)  # IPV006 is not looked for without the hooks
    assert torch.allclose(g, x.cos()) and s.findings == []
    with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
        with sanitize() as s:  # entered where PyTorch disabled the hooks: runs without them
            v = torch.randn(4, requires_grad=True)
            v.chunk(2)[0].clone()
    assert s.findings == []


class TupleLM(TinyLM):
    def forward(self, ids):
        return (super().forward(ids).logits, ids.float())


def test_model_output_held_by_a_tuple_or_dropped():
    with sanitize() as s:
        outputs = TupleLM()(ids())
        outputs[0].mul_(2)  # tuple-item
        logits = TinyLM()(ids()).logits.squeeze(0)  # the output object is dropped at once: no later reader
        logits.div_(0.7)
        loss = (outputs[0].sum() + logits.sum())
        loss.backward()
    assert found(s) == [("IPV001", line("tuple-item"))]
    assert "in-place `mul_` on `output[0]` of a top-level `TupleLM` call" in s.findings[0].message


def test_an_internal_error_of_the_sanitizer_does_not_change_the_program(monkeypatch):
    def broken(*args):
        raise ValueError("bug in a check")

    with sanitize() as s:
        monkeypatch.setattr(s, "_check", broken)
        x = torch.ones(3)
        x.add_(1)
    assert torch.equal(x, torch.full((3,), 2.0))
    assert s.internal_errors == ["add_: ValueError('bug in a check')"]


def test_double_backward_is_unchanged():
    def grads():
        x = torch.tensor([0.3, -1.2, 2.0], requires_grad=True)
        y = (x.sigmoid() * x.tanh()).sum()
        (g,) = torch.autograd.grad(y, x, create_graph=True)
        (h,) = torch.autograd.grad(g.sum(), x)
        return g.detach(), h

    reference = grads()
    with sanitize() as s:
        got = grads()
    assert all(torch.equal(a, b) for a, b in zip(reference, got)) and s.findings == []


def test_output_replaced_by_a_forward_hook_is_the_model_output():
    head = nn.Linear(8, 11)
    head.register_forward_hook(lambda module, args, out: ModelOutput(logits=out * 1))  # as wrappers do
    with sanitize() as s:
        output = head(torch.randn(1, 3, 8))
        output.logits.squeeze(0).div_(0.7)  # hooked-output
        output.logits.sum().backward()
    assert found(s) == [("IPV001", line("hooked-output"))]


def test_augmented_item_assignment_is_one_finding():
    with sanitize() as s:
        outputs = TupleLM()(ids())
        outputs[0][0, 0] += 1  # aug-item: a view's add_, then __setitem__ on output[0], both on this line
        outputs[0].sum().backward()
    assert found(s) == [("IPV001", line("aug-item: a view's add_, then __setitem__ on output[0], both on this line"))]
    assert s.findings[0].count == 2  # two writes, one site


def test_a_tensor_returned_by_every_call_has_one_record():
    class Cached(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.out = None

        def forward(self, x):
            if self.out is None:
                self.out = self.lin(x)
            return (self.out,)

    model = Cached()
    with sanitize() as s:
        for _ in range(5):
            model(torch.randn(2, 3))
    assert sum(len(records) for records in s._outputs.values()) == 1
