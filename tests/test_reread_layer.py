"""IPV007 on its fixture, executed: each reported method computes something else than the same model built with
``inplace=False``, and each clean one computes the same values (docs/pytorch-facts.md#inplace-layer-input)."""
import copy
import importlib.util

import pytest

from inplace_lint.analysis import analyze_source

torch = pytest.importorskip("torch")

FIXTURE = "fixtures/detect/IPV007/reread.py"
REPORTED = {"xception", "same_statement", "alias", "dropout", "nested_first", "next_pass", "one_branch_rebinds"}
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
    for name in sorted(REPORTED | CLEAN):
        got = _outputs(model, name, x0.clone())
        want = _outputs(plain, name, x0.clone())
        assert _same(got, want) == (name in CLEAN), name


def test_a_read_of_the_written_tensor_after_the_call_raises_when_autograd_saved_it(root):
    module = _module(root)
    model = module.Entry(4)
    x = torch.randn(2, 4, 5, 5, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        model.saved_first(x * 1).sum().backward()
