"""Issue 20: the facts sets H to K named, executed under torch (each clean fixture was reported before its
fact was built; the reported twin beside it raises as its message says)."""
from __future__ import annotations

import math
import importlib.util
import pathlib

import pytest

torch = pytest.importorskip("torch")

DETECT = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "detect"


def _load(relative):
    spec = importlib.util.spec_from_file_location(relative.replace("/", "_")[:-3], DETECT / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Model(torch.nn.Module):
    """A model whose output object has `logits`: a Linear(4, 4) head, or the layer given (an embedding)."""

    def __init__(self, head=None):
        super().__init__()
        self.head = head if head is not None else torch.nn.Linear(4, 4)

    def forward(self, x):
        return type("Out", (), {"logits": self.head(x)})()


def test_loop_over_a_container_found_by_isinstance_backpropagates():
    clean = _load("clean/isinstance_container.py")
    w = torch.randn(3, 4, requires_grad=True)
    rows = clean.TensorList([w[0] * 2, w[1] * 2])
    out = clean.rescale(rows, 2.0)
    sum(r.sum() for r in out).backward()
    assert torch.equal(w.grad[:2], torch.ones(2, 4)) and torch.equal(w.grad[2], torch.zeros(4))
    # a tensor takes the other arm: divided out of place, or (`rescale_not_tensor`) returned as it is
    for rescale, grad in ((clean.rescale, 1.0), (clean.rescale_sequence, 1.0), (clean.rescale_not_tensor, 2.0),
                          (clean.rescale_after_return, 1.0)):
        x = torch.randn(2, 4, requires_grad=True)
        rescale(x * 2, 2.0).sum().backward()
        assert torch.equal(x.grad, torch.full((2, 4), grad))


def test_loop_over_a_tensor_found_by_isinstance_raises():
    reported = _load("IPV003/isinstance_tensor_arm.py")
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        reported.caller(_Model(), torch.randn(2, 4))


def test_torchscript_loop_over_a_tensor_is_select_not_unbind():
    clean = _load("clean/scripted_loop.py")
    x, w = torch.randn(3, 2), torch.randn(2, 4, requires_grad=True)
    data, index = torch.ones(3, 2), torch.tensor([0, 3])
    out = clean.caller(x, w, data, index)
    out.sum().backward()  # legal: one `select` view per step
    assert torch.allclose(w.grad, x.sum(0, keepdim=True).T.expand(2, 4))
    assert torch.allclose(out, (x @ w).detach() + torch.zeros(3, 4).index_add_(1, index, data))

    def eager(image, data, index):  # the same loop, not scripted: `unbind`'s views
        for image_row, data_row in zip(image, data):
            image_row.index_add_(0, index, data_row)
        return image

    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        eager(x @ w, data, index)


def test_varargs_are_a_tuple_and_keyword_only_parameters_get_no_positional_argument():
    clean = _load("clean/varargs.py")
    w = torch.randn(2, 3, 4, requires_grad=True)
    prompts = torch.ones(2, 2, 4)
    out = clean.run_blocks(w * 2, prompts)  # unpacking the tuple gives the tensor itself: writing it is legal
    out.sum().backward()
    assert torch.equal(w.grad, torch.full((2, 3, 4), 2.0))
    model = _Model()
    x = torch.randn(2, 4)
    logits = model(x).logits
    before = logits.detach().clone()
    clean.accumulate(x, logits)  # `logits` is one of `*extra`; `target` stays None and nothing is written
    assert torch.equal(logits.detach(), before)


def _lm():
    return _Model(torch.nn.Embedding(10, 6))


def test_a_softmax_read_only_by_sampling_may_be_written_and_a_returned_one_may_not():
    torch.manual_seed(0)
    clean = _load("clean/sampled_probs.py")
    reported = _load("IPV006/sampled_probs_returned.py")
    ids = torch.tensor([1, 2, 3])
    for kwargs in ({}, {"temperature": 0.5, "top_k": 3}):
        token = clean.sample(_lm(), ids, **kwargs)  # the logits require grad; nothing takes one through probs
        assert isinstance(token, int) and 0 <= token < 6
    token, probs = reported.sample(_lm(), ids)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        probs.sum().backward()


def test_reads_in_the_other_arm_of_an_if_do_not_run_with_the_write_unless_a_loop_repeats_them():
    import ast

    from inplace_lint.analysis.consumers import exclusive

    tree = ast.parse("if c:\n    a = p * 2\nelse:\n    p[0] = 1\nfor i in r:\n    if c:\n        b = q * 2\n"
                     "    else:\n        q[0] = 1\n")
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    loads = {n.id: n for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
             and n.lineno in (2, 7)}  # `p * 2`, `q * 2`
    writes = [n for n in ast.walk(tree) if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Subscript)]
    assert exclusive(loads["p"], writes[0], parents)
    assert not exclusive(loads["q"], writes[1], parents)  # an earlier pass of the loop read it


def test_keyword_only_parameter_after_varargs_gets_no_positional_argument_across_files(tmp_path):
    from inplace_lint.config import DEFAULT_SETTINGS
    from inplace_lint.workspace import ProjectMode, project_findings

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("def accumulate(x, *extra, target=None):\n    if target is not None:\n"
                                    "        target.mul_(2.0)\n    return x\n")
    main = pkg / "main.py"
    main.write_text("from .helpers import accumulate\n\n\ndef caller(model, x):\n    logits = model(x).logits\n"
                    "    accumulate(x, x, logits)\n    accumulate(x, target=logits)\n")
    found = project_findings(main.read_text(), str(main), DEFAULT_SETTINGS, ProjectMode(enabled=True, cache_dir=None))
    assert [(f.code, f.line) for f in found] == [("IPV001", 7)]  # by keyword only: `logits` is one of `*extra`


def test_an_arm_that_raises_sends_nothing_past_the_if():
    clean = _load("clean/raising_arm.py")
    reported = _load("IPV006/passing_arm.py")
    x = torch.randn(1, 2, 4, 4)
    clean.Net(2)(x).sum().backward()  # every returned value is a pooling output: the write is legal
    reported.Net(2)(x).sum().backward()  # `avg`: legal too
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        reported.Net(2)(x, pool_type="none").sum().backward()  # the `relu_` output, which ReLU saved


def test_the_origin_a_finding_shows_does_not_depend_on_the_hash_seed(tmp_path):
    import os
    import subprocess
    import sys

    # two origins of one rank reach the write through the call (torchmetrics' `weight`): the same one is shown
    (tmp_path / "agg.py").write_text(
        "import torch\n\n\ndef check(x, weight):\n    weight[torch.isnan(x)] = 1\n    return weight\n\n\n"
        "def update(value, weight=None):\n    if weight is None:\n        weight = torch.ones_like(value)\n"
        "    elif not isinstance(weight, torch.Tensor):\n        weight = torch.as_tensor(weight)\n"
        "    weight = torch.broadcast_to(weight, value.shape)\n    return check(value, weight)\n")
    root = pathlib.Path(__file__).resolve().parent.parent
    outputs = set()
    for seed in ("1", "2", "3", "4", "5"):
        proc = subprocess.run([sys.executable, "-m", "inplace_lint", "check", "--no-cache", "agg.py"], cwd=tmp_path,
                              capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(root), "PYTHONHASHSEED": seed})
        assert "IPV004" in proc.stdout, proc.stdout + proc.stderr
        outputs.add(proc.stdout)
    assert len(outputs) == 1


def test_an_arm_whose_name_is_dereferenced_later_dies_before_the_write():
    clean = _load("clean/none_arm_dereferenced.py")
    reported = _load("IPV006/none_arm_survives.py")
    torch.manual_seed(0)
    hidden = torch.randn(2, 5, 3, requires_grad=True)
    mask, length = torch.ones(2, 1, 5), torch.tensor([2.0, 3.0])
    # with a mask the write is to the product, a fresh tensor: backward runs
    alphas, _ = clean.Predictor(3)(hidden, mask, length)
    alphas.sum().backward()
    assert hidden.grad is not None
    # without one, `mask.squeeze(-1)` raises before the sigmoid output is written
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'squeeze'"):
        clean.Predictor(3)(hidden, None, length)
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'sum'"):
        clean.Predictor(3).scale(hidden)
    # the twin reads `mask` only under a test: without one the saved sigmoid output is written
    for run in (lambda p: p(hidden, None, length)[0], lambda p: p.early(hidden, None, True),
                lambda p: p.rebound(hidden)):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            run(reported.Predictor(3)).sum().backward()


def test_an_input_saved_by_an_op_nothing_differentiable_reads_may_be_written():
    clean = _load("clean/saved_input_saver_unread.py")
    reported = _load("IPV006/saved_input_saver_read.py")
    x, mask = torch.randn(2, 4), torch.ones(2, 4)
    for run in (lambda m: clean.unread(m, x), lambda m: clean.indexed(m, x, mask), lambda m: clean.dropped(m, x)):
        model = _Model()
        run(model).sum().backward()  # legal: no backward reaches `torch.linalg.norm`
        assert model.head.weight.grad is not None
    for run in (lambda m: reported.scaled(m, x), lambda m: reported.indexed_and_read(m, x, mask)):
        profile, norm = run(_Model())
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            (profile.sum() + norm.sum()).backward()


def test_a_factory_tensor_never_reaches_an_arm_for_a_tensor_subclass():
    clean = _load("clean/subclass_instance_arm.py")
    reported = _load("IPV004/subclass_instance_arm.py")
    storage = clean.fill(3)  # `from_tensor` copied the expanded zeros: row 0 alone is written
    assert type(storage).__name__ == "Buffer" and storage.stride() == (4, 1)
    assert torch.equal(storage.as_subclass(torch.Tensor), torch.tensor([[1.0] * 4, [0.0] * 4, [0.0] * 4]))
    assert torch.equal(clean.local(3), torch.zeros(3, 4))  # the arm does not run
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        reported.fill(3)


def test_in_place_activations_that_read_their_output_make_a_later_write_raise():
    clean = _load("clean/inplace_activation_modules.py")
    reported = _load("IPV006/inplace_activation_modules.py")
    x = torch.randn(2, 4, requires_grad=True)
    clean.Block(4)(x).sum().backward()
    assert x.grad is not None
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        reported.Block(4)(x).sum().backward()
    for act in (torch.nn.LeakyReLU(inplace=True), torch.nn.ELU(inplace=True), torch.nn.SELU(inplace=True),
                torch.nn.CELU(inplace=True), torch.nn.RReLU(inplace=True)):
        out = act(torch.nn.Linear(4, 4)(x))
        out += 1
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()


def test_an_init_function_returns_the_parameter_it_filled():
    reported = _load("IPV006/init_returns_parameter.py")
    model = reported.Model(4)
    assert isinstance(model.attention.Wa, torch.nn.Parameter)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        model(torch.tensor([[0, 1], [2, 3]]), torch.tensor([True, False])).sum().backward()


def test_what_a_framework_runs_without_grad_may_write_and_raises_with_grad(monkeypatch):
    import sys
    import types

    mmengine, model = types.ModuleType("mmengine"), types.ModuleType("mmengine.model")
    model.BaseModel = torch.nn.Module  # mmengine's loops call `test_step` -> `predict` under `torch.no_grad()`
    monkeypatch.setitem(sys.modules, "mmengine", mmengine)
    monkeypatch.setitem(sys.modules, "mmengine.model", model)
    clean = _load("clean/framework_predict.py")
    reported = _load("IPV006/framework_predict.py")
    x = torch.randn(2, 4)
    with torch.no_grad():  # as mmengine's `TestLoop.run_iter` runs it
        feats = clean.Estimator()(x, mode="predict")
    assert torch.allclose(feats.norm(dim=-1), torch.ones(2))
    for estimator in (clean.Estimator(), reported.Estimator()):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            estimator(x, mode="predict").sum().backward()  # with grad on, the write raises


def test_a_cast_of_a_submodule_output_still_requires_grad():
    reported = _load("IPV006/submodule_output_cast.py")
    for dtype in (torch.float32, torch.bfloat16):  # the cast returns the same tensor, or a copy with grad
        router = reported.Router(4, 3).to(dtype)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            router(torch.randn(2, 4), torch.zeros(3)).sum().backward()


def test_an_in_place_method_that_saves_its_output_makes_a_later_write_raise():
    clean = _load("clean/inplace_method_saved.py")
    reported = _load("IPV006/inplace_method_saved.py")
    x = torch.randn(2, 4, requires_grad=True)
    clean.Head()(x).sum().backward()
    assert x.grad is not None
    for run in (lambda: reported.sigmoid_(torch.nn.Linear(4, 4)(x)), lambda: reported.Head()(x),
                lambda: reported.PartlyActivated()(x)):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            run().sum().backward()


def test_a_none_arm_that_writes_or_is_caught_before_the_dereference_stays_alive():
    reported = _load("IPV006/none_arm_survives.py")
    for run in (reported.written_before_the_dereference, reported.dereference_suppressed, reported.dunder_of_none,
                reported.rebound_by_a_walrus, reported.rebound_by_a_closure, reported.annotation_not_run,
                reported.rebound_by_an_import):
        w = torch.randn(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out = run(w)
            (out[0] if isinstance(out, tuple) else out).sum().backward()


def test_review_cases_of_the_new_facts_run_as_their_fixtures_say(monkeypatch):
    import sys
    import types

    saver = _load("IPV006/saved_input_saver_read.py")
    x = torch.randn(2, 4)
    profile, buf = saver.scattered_norms(_Model(), x, torch.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        buf.sum().backward()  # the norm written into `buf` reaches the backward
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        saver.read_through_locals(_Model(), x)["profile_norm"].sum().backward()

    subclass = _load("IPV004/subclass_instance_arm.py")
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        subclass.legacy_type_class(3)
    buf = torch.zeros(2, 4).as_subclass(subclass.Buffer)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        subclass.like_a_subclass(buf, 3)

    clean = _load("clean/inplace_activation_modules.py")
    w = torch.randn(2, 4, requires_grad=True)
    clean.jitter(w).sum().backward()
    router = clean.DetachedRouter(4, 3)
    scores = router(w, torch.ones(3))  # nothing requires grad past `.detach()`: the write saves nothing
    assert not scores.requires_grad
    assert torch.allclose(scores, torch.sigmoid(router.gate(w)).detach() + 1)

    mmengine, model = types.ModuleType("mmengine"), types.ModuleType("mmengine.model")
    model.BaseModel = torch.nn.Module
    monkeypatch.setitem(sys.modules, "mmengine", mmengine)
    monkeypatch.setitem(sys.modules, "mmengine.model", model)
    adapted = _load("IPV006/framework_predict_enable_grad.py")
    with torch.no_grad(), pytest.raises(RuntimeError, match="modified by an inplace operation"):
        adapted.Adapted().predict(torch.randn(2, 4))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        adapted.PredictsInTraining().loss(torch.randn(2, 4)).backward()


def test_functions_handed_out_as_values_run_on_what_their_users_pass():
    clean = _load("clean/handed_out_callables.py")
    reported = _load("IPV006/handed_out_callables.py")
    p = torch.nn.Parameter(torch.randn(3))
    p.grad = torch.randn(3)
    sqr_avg = torch.zeros_like(p.grad.data).addcmul_(p.grad.data, p.grad.data)  # the optimizer's own state
    for step in clean.build().steps:
        step(p.data, 0.1, sqr_avg, 1e-8)  # nothing requires grad: legal
    assert clean.REGISTRY["fp8"] is clean.quantize and clean.TABLE["exp1"] is clean.table_entry
    for run in (lambda x: reported.entropy_from_logits(x), lambda x: reported.caller(lambda ids: type(
            "Out", (), {"logits": x * 1})(), None)):
        x = torch.randn(2, 4, requires_grad=True)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            run(x).sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        reported.Head()(torch.randn(2, 4, requires_grad=True)).sum().backward()


def test_a_helpers_guess_about_its_parameter_is_decided_by_what_its_caller_passes():
    clean = _load("clean/helper_guess_stays_a_guess.py")
    reported = _load("IPV006/helper_guess_stays_a_guess.py")
    weights = torch.randn(2, 32)  # what the registry's users quantize: weights without grad
    assert torch.isfinite(clean.QUANTIZERS["int8"](weights, 2.0)).all()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        reported.fake_quantize_logits(_Model(), torch.randn(2, 4)).sum().backward()


def test_dtensor_state_of_a_plain_class_may_be_written_and_an_activations_local_tensor_may_not(mesh):
    from torch.distributed.tensor import DTensor, Replicate, distribute_tensor

    clean = _load("clean/plain_class_dtensor_state.py")
    reported = _load("IPV002/module_dtensor_output.py")
    store = clean.ShardedMoments()
    store.moments["exp_avg"] = distribute_tensor(torch.ones(4), mesh, [Replicate()])
    store.reset("exp_avg")  # optimizer state: nothing requires grad, the write is legal
    assert torch.equal(store.moments["exp_avg"].to_local(), torch.zeros(4))
    linear = torch.nn.Linear(4, 4)
    head = reported.Head(lambda x: DTensor.from_local(linear(x), mesh, [Replicate()]))
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        head(torch.randn(2, 4), 2.0)


def test_an_input_saved_for_the_other_inputs_gradient_raises_when_written_and_its_twins_run():
    reported = _load("IPV006/saved_for_other_input.py")
    clean = _load("clean/saved_for_other_input.py")
    torch.manual_seed(0)
    enc = reported.Encoder(4)
    runs = [  # every input needs no grad: the layer's weights (a parameter) do
        lambda: enc(torch.randn(3, 4), torch.rand(3, 4) > 0.5),
        lambda: enc.partial_conv(torch.randn(1, 3, 5, 5)),
        lambda: enc.scaled(torch.randn(3, 4)),
        lambda: enc.residual(torch.randn(3, 4)),
        lambda: reported.Gate(4)(torch.randn(3, 4), torch.randn(3, 4)),
        lambda: reported.Positions(4)(torch.randn(3, 4), torch.rand(3, 4) > 0.5),
        lambda: reported.Mixer(4)(torch.randn(1, 3, 5)),
        lambda: reported.Mixer(4).pair(torch.randn(3, 4), torch.randn(3, 4)),
        lambda: reported.Mixer(4).gated(torch.randn(3, 4), torch.randn(3, 4)),
    ]
    for run in runs:
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            run().sum().backward()
    plain = clean.PlainEncoder(4)
    optim = torch.optim.SGD(plain.parameters(), lr=0.1)
    for out in (plain(torch.randn(3, 4), torch.rand(3, 4) > 0.5), plain.rms(torch.randn(3, 4))):
        out.sum().backward()
    x = torch.randn(3, 4)
    with torch.no_grad():
        expected = plain.proj(x) + 2 * x
    assert torch.allclose(plain.frozen(x.clone()), expected)  # the layer ran without grad: it saved nothing
    assert torch.equal(plain.plain(x.clone()), x)  # nothing requires grad: the write is legal
    assert torch.equal(plain.unread(x.clone()), x * 4)
    assert torch.allclose(plain.steps(x.clone(), optim), x * 0.125)
    clean.PlainPositions(4)(torch.randn(3, 4), torch.rand(3, 4) > 0.5).sum().backward()
    nothing = clean.NoWeights(4)
    x = torch.randn(3, 4)
    before = x.clone()
    h = nothing(x)  # nothing requires grad: the write after it is legal, and `h` is what `x` gave before
    assert not h.requires_grad and torch.equal(x, before * 2)
    assert torch.allclose(h, nothing.norm(before) + nothing.group(before) + nothing.head(before) + before)
    nothing.padded(torch.randn(2, 4, 5)).sum().backward()
    assert torch.allclose(clean.fit(torch.ones(2, 3), 2), torch.full((3,), 1 - 0.1 * 2 - 0.1 * 1))
    mixer = clean.PlainMixer(4)
    mixer(torch.randn(3, 4), torch.tensor([0, 2])).sum().backward()
    x = torch.randn(3, 4)
    assert not mixer.gated(x, torch.randn(3, 4)).requires_grad  # the gate needs no grad: nothing was saved
    router = clean.Router(4)
    top, feats = router(torch.randn(3, 4), [torch.randn(3, 4), torch.randn(3, 4)])
    feats[-1].sum().backward()
    assert top.dtype == torch.int64
    hidden = plain.listed([torch.randn(3, 4), torch.randn(3, 4)])
    hidden[-1].sum().backward()


def test_a_saved_output_of_a_tuple_returning_op_raises_when_written_and_its_twins_run():
    reported = _load("IPV006/saved_tuple_outputs.py")
    clean = _load("clean/saved_tuple_outputs.py")
    torch.manual_seed(0)
    layer = reported.Orthogonal(4)
    for run in (lambda: layer(torch.zeros(4, 4)), lambda: layer.spectrum(torch.randn(4, 2)), layer.strongest):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            run().sum().backward()
    # the rewrite the tool offers as safe (`q = q * ...`) gives the same values, and a gradient
    q, r = torch.linalg.qr(layer.weight)
    fixed = q * torch.sign(torch.diagonal(r)).unsqueeze(0)
    with torch.no_grad():
        expected = torch.linalg.qr(layer.weight)[0] * torch.sign(torch.diagonal(torch.linalg.qr(layer.weight)[1]))
    assert torch.allclose(fixed, expected)
    fixed.sum().backward()
    assert layer.weight.grad is not None
    out, order = clean.Orthogonal(4)(torch.randn(3, 4))
    out.sum().backward()
    assert order.dtype == torch.int64
    query = torch.randn(2, 5, 3, requires_grad=True)
    for run in (lambda: reported.knn(query, query.detach() + 1, 2, 5)[0],
                lambda: reported.median_gap(query.sum(-1))):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            run().sum().backward()
    with torch.no_grad():  # with grad off topk saved nothing: the shifted indices are the out-of-place ones
        distances, shifted = reported.knn(query, query + 1, 2, 5)
        assert torch.equal(shifted, torch.topk(torch.cdist(query, query + 1), 2, largest=False).indices + 5)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        reported.rotations(2)[0].sum().backward()
    rotated, m = clean.rotations(2)  # the copy taken with grad on: the backward runs
    rotated.sum().backward()
    with torch.no_grad():  # and with grad off the SVD saved nothing: the write in place gives the same values
        flip = torch.ones(2, dtype=torch.bool)
        same = clean.procrustes(m.detach() * 2, flip) + clean.procrustes_expression(m.detach() * 2, flip)
    assert torch.allclose(same, rotated.detach())


def test_a_submodule_flag_copied_in_init_is_decided_by_the_constructor_arguments():
    reported = _load("IPV006/submodule_flag_from_init.py")
    clean = _load("clean/submodule_flag_from_init.py")
    x = torch.randn(2, 3, 5, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        reported.Block(3)(x * 1).sum().backward()
    clean.PlainBlock(3)(x * 1).sum().backward()  # built with relu=False: the conv output is not saved
    assert x.grad is not None


def test_a_closure_store_into_the_enclosing_dict_is_not_a_write_to_the_nested_functions_argument():
    clean = _load("clean/closure_over_parameter.py")
    reported = _load("IPV003/closure_over_parameter.py")
    packed = torch.arange(6.0, requires_grad=True) * 1
    stored = clean.Attention().load({}, "", packed)
    assert torch.equal(torch.cat([stored["q"], stored["k"], stored["v"]]), packed)
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        reported.load_projection(torch.arange(6.0, requires_grad=True))


def test_a_solver_dispatched_inside_a_function_subclass_forward_runs_with_grad_off():
    clean = _load("clean/function_subclass_dispatch.py")
    reported = _load("IPV006/function_subclass_dispatch.py")
    a = torch.eye(3) * 0.5
    b = torch.randn(3, 2, requires_grad=True)
    out = clean.solve(a, b)  # the forward ran with grad off: the write saved nothing it breaks
    out.sum().backward()
    assert torch.equal(b.grad, torch.ones(3, 2))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        reported.residual(a, b).sum().backward()


def test_a_torch_layer_subclass_saves_its_input_for_the_inherited_weight():
    reported = _load("IPV006/torch_layer_subclass.py")
    clean = _load("clean/torch_layer_subclass.py")
    torch.manual_seed(0)
    made = reported.Made(3)
    for run in (lambda: made.inverse(torch.randn(2, 3)), lambda: made.project(torch.randn(2, 3))):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            run().sum().backward()
    plain = clean.PlainMade(3)
    u = torch.randn(2, 3, requires_grad=True)
    plain.inverse(u).sum().backward()  # the weight is frozen, the mask a buffer: nothing saved `x`
    assert u.grad is not None and plain.frozen.weight.grad is None


def test_a_pass_through_decorator_leaves_the_callers_to_decide():
    clean = _load("clean/pass_through_decorator.py")
    reported = _load("IPV003/pass_through_decorator.py")
    params = [torch.nn.Parameter(torch.randn(3)) for _ in range(2)]
    sum((p * p).sum() for p in params).backward()
    grads = [p.grad.clone() for p in params]
    old = [torch.zeros(3) for _ in params]
    clean.correction(params, old, 0.5)  # lists of gradients: each item written in place, legally
    for p, g, o in zip(params, grads, old):
        assert torch.allclose(p.grad, g * 1.5) and torch.equal(o, g)
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        reported.caller(torch.nn.Linear(3, 3), torch.randn(2, 3))


def test_a_negated_guess_keeps_its_parameter():
    reported = _load("IPV006/negated_guess.py")
    clean = _load("clean/negated_guess.py")
    sigmas = torch.rand(2, 4, requires_grad=True)
    reported.transmittance(sigmas, torch.full((2, 4), 0.5)).sum().backward()  # no prefix: nothing written
    for run in (lambda: reported.transmittance(sigmas, torch.full((2, 4), 0.5), torch.rand(2, 4)),
                lambda: reported.survival(sigmas * 2)):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            run().sum().backward()
    out = clean.occupancy(4)  # made without grad: the write is legal and gives the product
    assert not out.requires_grad
    assert torch.allclose(out, torch.exp(-torch.cumsum(torch.full((4,), 0.5), -1)))


def test_a_torch_activation_or_stack_output_is_saved_and_other_stacks_are_torch_layers():
    reported = _load("IPV006/torch_stack_outputs.py")
    clean = _load("clean/torch_stack_outputs.py")
    torch.manual_seed(0)
    head = reported.Head(4)
    x = torch.randn(3, 4)
    for attr, write in (("act", lambda y: y.clamp_(1e-6, 1 - 1e-6)), ("gate", lambda y: y.clamp_(1e-6, 1 - 1e-6)),
                        ("probs", lambda y: y.add_(1e-8))):
        y = getattr(head, attr)(head.proj(x))
        write(y)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
    body = clean.Body(4)
    body(x).sum().backward()  # the writes are legal: nothing saved those outputs
    assert body.net[0].weight.grad is not None


def test_frozen_or_replaced_inherited_weights_save_no_input():
    clean = _load("clean/torch_layer_subclass_frozen.py")
    torch.manual_seed(0)
    net = clean.Net(3)
    x = torch.randn(2, 3)
    net(x).sum().backward()  # the writes after the layers are legal: nothing saved `x` for a gradient
    assert net.stop.bias.grad is not None and net.stop.weight.grad is None


def test_arithmetic_on_a_model_output_object_is_the_output_tensor():
    reported = _load("IPV006/model_output_arithmetic.py")
    clean = _load("clean/model_output_arithmetic.py")
    torch.manual_seed(0)
    model, x = torch.nn.Linear(4, 4), torch.randn(3, 4)
    for run in (lambda: reported.reweighted(model, x, 0.5), lambda: reported.scaled(model, x)):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            run().sum().backward()
    assert not clean.reweighted(model, x, 0.5).requires_grad
    clean.scaled(model, x).sum().backward()
    assert model.weight.grad is not None


def test_indices_of_an_op_whose_values_reach_no_backward_are_free_to_write():
    clean = _load("clean/tuple_values_gradless.py")
    model = torch.nn.Linear(4, 3)
    head = lambda priors: type("Out", (), {"logits": model(priors)})()  # noqa: E731
    picked = clean.match(head, torch.randn(5, 4), -10.0)
    assert picked.dtype == torch.int64 and picked.shape == (5,)
    # the same write when the values reach the loss raises at backward
    v, i = model(torch.randn(5, 4)).max(1, keepdim=True)
    i.squeeze_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        v.sum().backward()


def test_a_project_decorator_that_calls_with_grad_off_makes_its_function_grad_off():
    clean = _load("clean/grad_off_decorator.py")
    model = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4)
    out = clean.step(model, x)  # the body ran with grad off: nothing was saved, the write is legal
    assert not out.requires_grad
    with torch.no_grad():
        assert torch.allclose(out, model(x).softmax(-1) ** 2)


def test_a_flag_true_only_with_grad_off_runs_its_branch_without_grad():
    clean = _load("clean/grad_off_flag.py")
    torch.manual_seed(0)
    model = clean.Model(4)
    x = torch.randn(2, 4)
    model.train()
    expected = model(x)  # the out-of-place branches, with grad: backward works
    expected.sum().backward()
    assert model.head.weight.grad is not None
    model.eval()
    with torch.no_grad():  # the flag is true: the in-place branches run, with grad off, same values
        assert torch.allclose(model(x), expected.detach())
    model(x).sum().backward()  # eval with grad on: the flag is false, the out-of-place branches run
    # the twin: a caller that passes `True` by hand runs the in-place branch with grad on
    reported = _load("IPV006/flag_not_grad_off.py")
    block = reported.Block(4)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        block(x, inplace_safe=True).sum().backward()


def test_a_negative_integer_index_is_a_view_and_a_bool_index_a_copy():
    from inplace_lint.analysis.expressions import is_basic_index
    import ast

    def basic(text):
        return is_basic_index(ast.parse(f"x[{text}]", mode="eval").body.slice)

    assert [basic(t) for t in ("-1", "0, :2", "..., None", "True", "False", "idx", "-k", "1.0")] == \
        [True, True, True, False, False, False, False, False]
    x = torch.randn(2, 3)
    assert x[-1]._base is x and x[0, :2]._base is x and x[..., None]._base is x
    assert x[True]._base is None and x[True].shape == (1, 2, 3)
    clean = _load("clean/bool_index_copies.py")
    reported = _load("IPV001/negative_index_view.py")
    logits = torch.randn(2, 3)
    model = lambda ids: type("Out", (), {"logits": logits})()  # noqa: E731
    before = logits.clone()
    clean.masked(model, None)
    assert torch.equal(logits, before)  # the copy was written, not the output
    reported.last_step(model, None)
    assert torch.equal(logits[-1], before[-1] / 2)  # the view wrote the model output


def test_a_loop_over_a_module_list_runs_its_class_forward():
    reported = _load("IPV006/module_list_elements.py")
    stack = reported.Stack(4, 2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        stack(torch.randn(2, 4)).sum().backward()


def test_an_indexed_module_list_element_and_module_dict_elements_run_their_class_forward():
    reported = _load("IPV006/module_dict_elements.py")
    clean = _load("clean/module_dict_elements.py")
    for module in (reported.Indexed(4, 2), reported.Heads(4, ["a", "b"])):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            module(torch.randn(2, 4)).sum().backward()
    torch.manual_seed(0)
    indexed, heads = clean.Indexed(4, 2), clean.Heads(4, ["a", "b"])
    x = torch.randn(2, 4, requires_grad=True)
    (indexed(x).sum() + heads(x).sum()).backward()  # nothing saved the written outputs: backward runs
    h = x.detach()
    for block in indexed.blocks:
        h = block.proj(h) + 1.0
    assert torch.allclose(indexed(x.detach()), h)
    assert torch.allclose(heads(x.detach()), sum(2.0 * m.proj(x.detach()) for m in heads.heads.values()))


def test_shape_only_inplace_ops_on_an_expanded_tensor_write_nothing():
    clean = _load("clean/expanded_metadata_inplace.py")
    speaker = torch.randn(1, 3)
    before = speaker.clone()
    emb = clean.batch_of_one(speaker, 4)
    assert emb.shape == (1, 4, 3) and emb.stride()[1:] == (0, 1) and torch.equal(speaker, before)
    grid = clean.columns(torch.arange(3.0).unsqueeze(0), 2)
    assert torch.equal(grid, torch.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]))
    out = clean.broadcast_embedding(torch.tensor([3.0, 4.0]), 2)
    assert out.shape == (2, 1, 2) and torch.allclose(out, torch.tensor([0.6, 0.8]).expand(2, 1, 2))
    with pytest.raises(RuntimeError, match="single memory location"):
        speaker.expand(4, -1).mul_(2.0)  # a data write on the same view raises


def test_a_callable_handed_to_an_imported_function_named_like_a_model_gets_no_model_output():
    clean = _load("clean/imported_function_named_like_model.py")
    torch.manual_seed(0)
    experts = [torch.nn.Linear(4, 4) for _ in range(2)]
    x = torch.randn(3, 4)
    perm = torch.tensor([4, 0, 5, 1, 2, 3])

    def run(permute):
        for e in experts:
            e.zero_grad()
        output = torch.cat([e(x) for e in experts])  # what the experts' module returns: nothing saves it
        out = permute(output)
        out.pow(2).sum().backward()
        return out.detach(), [e.weight.grad.clone() for e in experts]

    def out_of_place(output):
        permuted = torch.empty_like(output)
        permuted[perm] = output
        return permuted

    in_place, grads = run(lambda output: clean.ExpertStyle(perm)._output_fn(output, None))
    expected, expected_grads = run(out_of_place)
    assert torch.equal(in_place, expected)
    assert all(torch.allclose(a, b) for a, b in zip(grads, expected_grads))


class _ViewOfInput(torch.autograd.Function):
    """A fused head's kernel that returns a view of its input: its output is a custom Function's view."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


def test_a_model_call_indexed_as_an_array_is_its_output_tensor():
    reported = _load("IPV001/model_call_array_view.py")
    clean = _load("clean/model_call_tuple_slice.py")
    lin = torch.nn.Linear(4, 4)
    fused = lambda ids: _ViewOfInput.apply(lin(ids))  # noqa: E731
    with pytest.raises(RuntimeError, match="view was created inside a custom Function"):
        reported.last_step_logits(fused, torch.randn(2, 3, 4), 2.0)
    with pytest.raises(RuntimeError, match="view was created inside a custom Function"):
        reported.Boundary(fused).periodic(torch.randn(3, 4), torch.randn(3, 4), 0)
    with pytest.raises(RuntimeError, match="view was created inside a custom Function"):
        reported.first_channel(fused, torch.randn(1, 4))
    # with a plain head the write is legal, and changes the output the model returned
    out = lin(torch.randn(2, 3, 4))
    logits = reported.last_step_logits(lambda ids: out, None, 2.0)
    assert logits.untyped_storage().data_ptr() == out.untyped_storage().data_ptr()
    assert torch.equal(out[:, -1, :], logits)
    assert clean.rest_of_outputs(lambda ids: (1, 2, 3), None) == (2, 3, None)
    ids = torch.randn(2, 3, 4)
    assert torch.equal(clean.sample_next(fused, ids, 2.0), torch.argmax(lin(ids)[:, -1, :], dim=-1))


def test_an_early_return_in_training_mode_leaves_an_eval_only_in_place_path():
    clean = _load("clean/eval_only_after_training_return.py")
    torch.manual_seed(0)
    block = clean.PartialConv(4, 2)
    x = torch.randn(1, 4, 5, 5)
    xg = x.clone().requires_grad_()
    block.train()
    trained = block(xg)
    trained.sum().backward()  # the training path is out of place: backward runs
    block.eval()
    with torch.no_grad():  # inference, as the eval-only path is meant: same values, written in place
        assert torch.allclose(block(x.clone()), trained.detach())
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        block(x.clone()).sum().backward()  # eval mode with grad on (not how the module is used) raises


def test_a_grad_off_flag_bound_by_partial_runs_the_branch_without_grad():
    clean = _load("clean/grad_off_flag_partial.py")
    torch.manual_seed(0)
    model = clean.Model(4)
    x = torch.randn(2, 4)
    model.eval()
    with torch.no_grad():  # the flag is true: the in-place branch runs, with grad off
        fast = model(x, None)
    model.train()
    xg = x.clone().requires_grad_()
    model(xg, None).sum().backward()  # the flag is false: nothing in place, backward works
    assert torch.equal(xg.grad, torch.ones(2, 4))
    # the in-place branch by hand, with grad on, raises as the twin's message says
    block = model.stack.blocks[0]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        block(x, inplace_safe=True).sum().backward()
    assert fast.shape == (2, 4)


def test_operators_and_layer_subclasses_save_what_the_rule_says():
    reported = _load("IPV006/operator_saved_facts.py")
    clean = _load("clean/operator_saved_facts.py")
    for module in (reported.Proj(4), reported.Scaled(4), reported.Doubled(4, 4)):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            module(torch.randn(2, 4)).sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        reported.exponent_written(_Model(), torch.randn(2, 4)).sum().backward()
    x = torch.randn(2, 4)
    rotate = clean.Rotate(4)
    assert torch.allclose(rotate(x.clone()), x)  # a buffer needs no grad: nothing is saved for it
    frozen = clean.Frozen(4)
    xg = torch.randn(2, 4, requires_grad=True)
    frozen(xg * 1).sum().backward()  # the frozen weight saves nothing: the write is legal, backward runs
    assert xg.grad is not None
    assert torch.equal(clean.powers(3), torch.tensor([2, 3, 5]))


def test_an_operation_object_called_in_inference_mode_runs_its_own_call_there():
    clean = _load("clean/inference_op_call.py")
    reported = _load("IPV006/op_call_with_grad.py")
    model = torch.nn.Linear(4, 5)
    out = clean.Generator(model)(torch.randn(2, 4))  # inference mode: the in-place edit is legal
    assert out.is_inference() and torch.isinf(out[:, 0]).all()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        reported.train_step(model, torch.randn(2, 4)).sum().backward()


def test_a_loss_that_shifts_the_model_output_in_place_corrupts_metrics_and_raises_with_a_saving_head():
    reported = _load("IPV001/loss_shifts_model_output.py")
    torch.manual_seed(0)
    head = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LogSoftmax(dim=-1))
    trainer = reported.Trainer(head, 3)
    x, y = torch.randn(5, 4), torch.tensor([0, 1, 2, 0, 1])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        trainer.training_step((x, y))[0].backward()
    plain = reported.Trainer(torch.nn.Linear(4, 3), 3)  # a plain head: no error, but the metric saw shifted logits
    with torch.no_grad():
        expected = (plain.model(x).argmax(-1) == y).float().mean()
        shifted = (plain.model(x) + plain.loss_fn.adjustments).argmax(-1)
    loss, accuracy = plain.training_step((x, y))
    assert torch.equal(accuracy, (shifted == y).float().mean())
    assert not torch.equal(shifted, plain.model(x).argmax(-1)) or torch.equal(accuracy, expected)


def test_a_copy_under_a_flag_is_what_a_write_under_the_same_flag_reaches():
    clean = _load("clean/clone_under_same_flag.py")
    data = torch.tensor([[5, 0, 7, 5, 3], [1, 0, 2, 3, 4]])
    # the write runs only on the copy: no error, and each document's positions restart after its end token
    assert clean.position_ids_for(data, 0, True, False).tolist() == [[0, 1, 0, 1, 2], [0, 1, 0, 1, 2]]
    # without the flag the expanded tensor is returned unwritten
    assert clean.position_ids_for(data, 0, False, True).tolist() == [[0, 1, 2, 3, 4]] * 2
    flagged = _load("IPV004/clone_under_other_flag.py")
    assert flagged.shifted_when_not_copied(data, True).tolist() == [[0, 1, 2, 3, 4]] * 2
    with pytest.raises(RuntimeError, match="single memory location"):
        flagged.shifted_when_not_copied(data, False)  # the reported write: the expanded tensor, batch 2
    with pytest.raises(RuntimeError, match="single memory location"):
        flagged.shifted_unconditionally(data, False)


def _stub_mmengine(monkeypatch):
    import sys
    import types

    mmengine, model, evaluator = (types.ModuleType(n) for n in ("mmengine", "mmengine.model", "mmengine.evaluator"))
    model.BaseModel = torch.nn.Module
    evaluator.BaseMetric = object
    for name, module in (("mmengine", mmengine), ("mmengine.model", model), ("mmengine.evaluator", evaluator)):
        monkeypatch.setitem(sys.modules, name, module)


def test_the_predict_arm_of_an_mmengine_forward_and_a_metric_run_without_grad(monkeypatch):
    _stub_mmengine(monkeypatch)
    clean = _load("clean/framework_predict_arm.py")
    reported = _load("IPV003/framework_loss_arm.py")
    torch.manual_seed(0)
    mattor = clean.Mattor()
    x = torch.randn(2, 4)
    with torch.no_grad():  # as mmengine's `ValLoop.run_iter` runs `val_step` -> `forward(mode='predict')`
        alphas = mattor(x, mode="predict")
    expected = (mattor.head(x).sigmoid().clamp(0, 1) * 255).round()
    assert torch.equal(torch.stack(alphas), expected.detach())
    with pytest.raises(RuntimeError, match="Output 0 of Unbind is a view"):
        mattor(x, mode="predict")  # with grad on (not how mmengine runs it) the row write raises
    metric = clean.SlicedDistance()
    with torch.no_grad():
        metric.process(None, [{"feats": mattor.head(x)}])
    feats = mattor.head(x).detach()
    assert metric.compute_metrics(metric.results)["spread"] == pytest.approx(
        float((feats - feats.mean(dim=1, keepdim=True)).abs().mean()), rel=1e-6)
    with pytest.raises(RuntimeError, match="Output 0 of Unbind is a view"):
        reported.Mattor()(x, mode="loss")  # the training arm: the loop row of a Linear's output


def test_a_weighted_torch_layer_output_requires_grad_so_its_chunks_may_not_be_written():
    clean = _load("clean/weighted_layer_out_of_place.py")
    reported = _load("IPV003/weighted_layer_output.py")
    torch.manual_seed(0)
    x = torch.randn(5, 8)
    attention = clean.FusedAttention(8)
    out = attention(x)
    out.sum().backward()  # out of place: backward runs
    q, k, _ = attention.qkv(x).detach().chunk(3, dim=-1)
    assert torch.allclose(attention.scores(x), (q * attention.scale) @ k.T)  # grad off: the in-place form is legal
    fused = reported.FusedAttention(8)
    fused.load_state_dict(attention.state_dict())
    with pytest.raises(RuntimeError, match="Output 0 of Split is a view"):
        fused(x)
    with pytest.raises(RuntimeError, match="Output 0 of Unbind is a view"):
        reported.RowNorm(8)(x)
    with torch.no_grad():  # the same code where nothing requires grad: same values as the out-of-place form
        assert torch.allclose(fused(x), attention(x))


def test_a_getattr_flag_left_at_its_default_skips_the_saved_sigmoid():
    clean = _load("clean/getattr_flag.py")
    torch.manual_seed(0)
    decoder = clean.Decoder(4)
    h = torch.randn(3, 4)
    logits = decoder(h)
    logits.sum().backward()  # the Linear's output, clamped in place: backward runs
    expected = decoder.presence_head.layer(decoder.norm(h)).squeeze(-1).clamp(-10.0, 10.0)
    assert torch.allclose(logits, expected)
    decoder.presence_head.sigmoid = True  # the arm the default never takes: the saved sigmoid output is written
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        decoder(h).sum().backward()


def test_a_view_bound_under_a_flag_is_no_copy_and_a_frozen_embedding_needs_no_grad():
    reported = _load("IPV004/view_under_flag_is_no_copy.py")
    tokens = torch.zeros(2, 6, dtype=torch.long)
    with pytest.raises(RuntimeError, match="single memory location"):
        reported.build_positions(tokens, 4, True)  # the slice still views the expanded positions
    with pytest.raises(RuntimeError, match="single memory location"):
        reported.broadcast_timesteps(torch.tensor([0.5]), 3, True)  # float() of a float tensor is the tensor
    clean = _load("clean/frozen_embedding_chunk.py")
    torch.manual_seed(0)
    model = clean.FrozenWordFeatures(10, 4)
    ids = torch.tensor([[1, 2, 3]])
    model(ids).sum().backward()  # the frozen table's output needs no grad: the in-place half-scaling is legal
    h = model.embed(ids)
    expected = model.head(torch.cat([h[..., :2] * 0.5, h[..., 2:]], dim=-1).mean(1))
    assert torch.allclose(model(ids), expected)
    assert model.head.weight.grad is not None and model.embed.weight.grad is None


def test_an_mmengine_train_step_that_calls_the_predict_arm_runs_it_with_grad(monkeypatch):
    _stub_mmengine(monkeypatch)
    reported = _load("IPV006/framework_predict_in_train_step.py")
    model = reported.ConsistencyRestorer()
    data = {"inputs": torch.randn(1, 3, 4, 4), "data_samples": torch.rand(1, 3, 4, 4)}
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        model.train_step(data)
    with torch.no_grad():  # as mmengine's val loop runs the same arm: legal
        assert model(data["inputs"], mode="predict").shape == (1, 3, 4, 4)


def test_a_functional_linear_of_a_layers_weights_requires_grad_so_its_chunks_may_not_be_written():
    reported = _load("IPV003/layer_subclass_functional.py")
    torch.manual_seed(0)
    attention = reported.Attention(8)
    x = torch.randn(2, 5, 8)
    with pytest.raises(RuntimeError, match="Output 0 of Split is a view"):
        attention(x)
    with torch.no_grad():  # where nothing requires grad, the same code runs and scales the query
        out = attention(x)
        q, k, v = attention.qkv(x).chunk(3, dim=-1)
        assert torch.allclose(out, ((q * attention.scale) @ k.transpose(-2, -1)).softmax(-1) @ v)


def test_functional_unfold_is_a_copy_and_tensor_unfold_a_view():
    clean = _load("clean/functional_unfold_copy.py")
    reported = _load("IPV006/tensor_unfold_view.py")
    x = torch.randn(2, 1, 5, requires_grad=True)
    seg = clean.segment(x)
    seg.sum().backward()
    expected = torch.nn.functional.unfold(torch.sigmoid(x.detach()).unsqueeze(1), kernel_size=(1, 3)) * 2
    assert torch.allclose(seg.detach(), expected)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        reported.windows(torch.randn(2, 5, requires_grad=True)).sum().backward()


def test_a_chunk_of_an_untracked_value_is_written_legally():
    clean = _load("clean/chunk_of_untracked_value.py")
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    inputs, labels = torch.randn(2, 4), torch.tensor([0, 2])
    alpha = clean.step_sizes(model, inputs, labels, lambda x, g: x - 0.1 * g)
    adv = inputs.clone().requires_grad_()
    (grad,) = torch.autograd.grad(torch.nn.functional.cross_entropy(model(adv), labels), adv)
    a0 = (torch.cat((inputs, inputs), 0) - 0.1 * grad.repeat(2, 1)).norm(dim=1).clamp(min=1e-8)
    assert torch.allclose(alpha, a0[:2] / (a0[2:] + a0[:2]))


def test_grad_imported_from_torch_autograd_frees_the_graph_before_the_write():
    clean = _load("clean/imported_grad_consumes_graph.py")
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    inputs, labels = torch.randn(2, 4), torch.tensor([0, 1])
    delta = clean.sparse_attack(model, inputs, labels)  # runs: the write follows the backward that read `delta`
    expected = torch.zeros_like(inputs)
    for _ in range(3):
        d = expected.clone().requires_grad_()
        loss = torch.nn.functional.cross_entropy(model(inputs + d), labels) + d.square().mean()
        (g,) = torch.autograd.grad(loss, d)
        expected = expected - 0.1 * g
        expected[expected.abs() < 1e-3] = 0
    assert torch.allclose(delta, expected)


def test_an_op_read_only_by_a_print_saves_nothing_a_backward_reads(capsys):
    clean = _load("clean/saved_input_only_printed.py")
    torch.manual_seed(0)
    block = clean.Block(4)
    x = torch.randn(2, 4)
    loud = block(x, verbose=True)
    loud.sum().backward()  # the printed max and norm are not on the loss's path: backward runs
    grads = [p.grad.clone() for p in block.parameters()]
    block.zero_grad()
    block(x).sum().backward()
    assert all(torch.equal(a, p.grad) for a, p in zip(grads, block.parameters()))
    assert "max:" in capsys.readouterr().out


def test_an_init_flag_set_by_a_subclass_or_a_parent_is_not_decided_by_the_constructor_constants():
    reported = _load("IPV006/init_flag_set_elsewhere.py")
    torch.manual_seed(0)
    h = torch.randn(3, 4)
    for decoder in (reported.Decoder(4), reported.ProbabilityDecoder(4)):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            decoder(h).sum().backward()
    plain = reported.ProbabilityDecoder(4, probabilities=False)  # the flag left off: the Linear's output, legal
    plain(h).sum().backward()


def test_a_frozen_projection_of_raw_inputs_needs_no_grad():
    clean = _load("clean/frozen_projection_features.py")
    torch.manual_seed(0)
    features = clean.FourierFeatures(2, 3)
    coords = torch.rand(4, 2)
    head = torch.nn.Linear(6, 1)
    out = head(features(coords))
    out.sum().backward()  # the frozen projection's halves written in place: backward runs
    h = 2 * math.pi * features.proj(coords)
    assert torch.allclose(features(coords), torch.cat([h[:, :3].sin(), h[:, 3:].cos()], dim=-1))
    assert features.proj.weight.grad is None and head.weight.grad is not None


def test_a_method_called_only_where_grad_is_off_may_write_its_activations():
    clean = _load("clean/grad_off_arm_callee.py")
    torch.manual_seed(0)
    stack = clean.PairStack(4, 2)
    h = torch.randn(2, 6, 4)
    out = stack(h)
    out.sum().backward()  # the autograd path: backward runs
    with torch.no_grad():  # the in-place path: the same values
        assert torch.allclose(stack(h), out)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        e = stack.blocks[0].norm(h).exp()  # the same writes with grad on would break the backward
        e += 1
        e.sum().backward()
    reported = _load("IPV006/grad_off_arm_helper_also_with_grad.py")
    block = reported.GatedBlock(4)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        block(h).sum().backward()  # the call made with grad on
    with torch.no_grad():
        block(h)  # the other call: legal


def test_a_requires_grad_gate_lets_what_follows_write_views_of_the_gated_tensor():
    clean = _load("clean/requires_grad_gate.py")
    torch.manual_seed(0)
    scaler = clean.Scaler(4)
    h = torch.randn(3, 4)
    with torch.no_grad():
        y, rows = scaler(h)
        z = scaler.proj(h)
    expected = z.exp() * 2.0
    expected = torch.cat([expected[:, :2].clamp(max=1.0), expected[:, 2:]], dim=-1)
    assert torch.allclose(y, expected) and torch.allclose(rows, z / z.norm(dim=1, keepdim=True))
    with pytest.raises(AssertionError):  # with grad on the gate stops the call before any write
        scaler(h)
    with pytest.raises(ValueError):
        clean.normalize_rows(scaler.proj(h))
    reported = _load("IPV003/requires_grad_asserted.py")
    with pytest.raises(RuntimeError, match="Output 0 of Split is a view"):
        reported.halve_first(scaler.proj(h))


def test_dropout_returns_its_input_with_a_zero_rate_or_out_of_training():
    reported = _load("IPV006/dropout_returns_input.py")
    clean = _load("clean/dropout_new_tensor.py")
    torch.manual_seed(0)
    x = torch.randn(3, 4)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        reported.Block(4)(x).sum().backward()  # nn.Dropout(0.0): the write reaches ReLU's saved output
    lin = torch.nn.Linear(4, 4)
    for run in (lambda: reported.gate(lin, x), lambda: reported.frozen_gate(lin, x)):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            run().sum().backward()
    clean.gate(lin, x, 0.2).sum().backward()  # a rate above 0 in training: a new tensor
    clean.fixed_rate(lin, x).sum().backward()
    clean.Net(4)(x).sum().backward()  # built with dropout=0.2: legal, so not reported

def test_broadcast_to_called_by_name_is_an_expanded_view():
    reported = _load("IPV004/broadcast_to_by_name.py")
    m = torch.zeros(1, 3)
    with pytest.raises(RuntimeError, match="single memory location"):
        reported.rows(m, 4)
    same = torch.broadcast_to(m, m.shape)
    same[0] = 2.0  # to its own shape: nothing shares memory, the write is legal
    assert torch.equal(m, torch.full((1, 3), 2.0))
