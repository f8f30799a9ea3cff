"""IPV007 on its fixture, executed: each reported method computes something else than the same model built with
``inplace=False``, and each clean one computes the same values (docs/pytorch-facts.md#inplace-layer-input)."""
import copy
import importlib.util

import pytest

from inplace_lint.analysis import analyze_source

torch = pytest.importorskip("torch")

FIXTURE = "fixtures/detect/IPV007/reread.py"
REPORTED = {"xception", "same_statement", "alias", "dropout", "nested_first", "next_pass", "one_branch_rebinds",
            "forward"}  # (`PassThrough.forward`, `ConformerLayer.forward`)
CLEAN = {"rebound", "every_branch_rebinds", "shape_only", "never_negative", "first_layer_not_inplace", "other_branch"}


def _module(root):
    spec = importlib.util.spec_from_file_location("ipv007_reread", root / FIXTURE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _outputs(model, name, x):
    torch.manual_seed(3)  # (the same dropout mask for both models)
    # (`one_branch_rebinds` reads the written `x` where `flag` is false; `other_branch` writes where it is true)
    flags = {"one_branch_rebinds": False, "every_branch_rebinds": True, "other_branch": True}
    args = (x, flags[name]) if name in flags else (x,)
    out = getattr(model, name)(*args)
    flat = []
    for item in out if isinstance(out, (tuple, list)) else (out,):
        flat.append(item.detach().clone() if isinstance(item, torch.Tensor) else torch.tensor(float(item is True)
                                                                                           if isinstance(item, bool) else item))
    return flat


def _same(a, b):
    return len(a) == len(b) and all(x.shape == y.shape and torch.allclose(x, y) for x, y in zip(a, b))


def test_the_fixture_reports_exactly_the_methods_that_change_values(root):
    module = _module(root)
    source = (root / FIXTURE).read_text()
    findings = [f for f in analyze_source(source) if f.code == "IPV007"]
    methods = {}
    for node in __import__("ast").parse(source).body:
        for item in getattr(node, "body", []):
            if hasattr(item, "lineno"):
                for line in range(item.lineno, item.end_lineno + 1):
                    methods[line] = getattr(item, "name", "")
    assert {methods[f.line] for f in findings} == REPORTED

    torch.manual_seed(0)
    model = module.Entry(4)
    model.train()
    plain = copy.deepcopy(model)
    for layer in plain.modules():
        if hasattr(layer, "inplace"):
            layer.inplace = False
    torch.manual_seed(1)
    x0 = torch.randn(2, 4, 5, 5)
    for name in sorted((REPORTED - {"forward"}) | CLEAN):  # (Entry's methods; PassThrough below)
        got = _outputs(model, name, x0.clone())
        want = _outputs(plain, name, x0.clone())
        assert _same(got, want) == (name in CLEAN), name


def test_a_read_of_the_written_tensor_after_the_call_raises_when_autograd_saved_it(root):
    module = _module(root)
    model = module.Entry(4)
    x = torch.randn(2, 4, 5, 5, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        model.saved_first(x * 1).sum().backward()


def test_a_layer_that_may_hand_its_input_back_makes_the_skip_connection_read_what_the_activation_wrote(root):
    module = _module(root)
    torch.manual_seed(0)
    resid0 = torch.randn(2, 3, 5)
    for norm, changed in ((False, True), (True, False)):
        block = module.PassThrough(3, norm=norm)
        plain = copy.deepcopy(block)
        plain.act.inplace = False
        resid = resid0.clone()
        got = block(resid)
        want = plain(resid0.clone())
        assert (not torch.equal(resid, resid0)) == changed  # `lambda t: t` hands `resid` itself to the ReLU
        assert (not torch.allclose(got, want)) == changed, norm


def test_a_submodule_that_writes_its_input_changes_the_residual_the_caller_reads(root):
    module = _module(root)
    torch.manual_seed(0)
    x0 = torch.randn(2, 5, 3)
    keep = torch.ones(2, 3, 5, dtype=torch.bool)
    keep[1, :, 3:] = False  # padded frames of the second item
    for normalize_before, changed in ((False, True), (True, False)):
        x = x0.clone()
        module.ConformerLayer(3, normalize_before)(x, keep)
        assert (not torch.equal(x, x0)) == changed  # `residual` is `x`: its padded frames were zeroed


def test_a_block_built_from_a_list_that_starts_with_the_in_place_relu_rectifies_its_input(root):
    module = _module(root)
    torch.manual_seed(0)
    x0 = torch.randn(2, 3, 5, 5)
    for cls, changed in (("ListBuilt", True), ("ListBuiltFixed", False)):
        x = x0.clone()
        getattr(module, cls)(3)(x)
        assert (not torch.equal(x, x0)) == changed, cls  # the skip connection read the rectified input


def test_the_skip_input_of_a_unet_block_whose_list_starts_with_the_in_place_relu_is_rectified(root):
    module = _module(root)
    torch.manual_seed(0)
    x0 = torch.randn(2, 3, 4, 4)
    for outermost, changed in ((False, True), (True, False)):
        x = x0.clone()
        out = module.UnetBlock(3, outermost)(x)
        assert (not torch.equal(x, x0)) == changed
        if changed:  # the concatenated skip half is the rectified input, not the input
            assert torch.equal(out[:, :3], torch.nn.functional.leaky_relu(x0, 0.2))
