"""IPV007 where the in-place layer is built outside the class's own ``self.x = nn.ReLU(inplace=True)``: a layer class
handed to the constructor, a module function that returns the stack, ``add_module`` on an empty stack. Each reported
class computes something else than the same model with ``inplace=False`` (the block's input was rectified before the
skip connection read it), each clean one the same (docs/pytorch-facts.md#inplace-layer-input)."""
import ast
import copy
import importlib.util

import pytest

from inplace_lint.analysis import analyze_source

torch = pytest.importorskip("torch")

FIXTURE = "fixtures/detect/IPV007/builders.py"
REPORTED = {"ActLayerDefault", "ActLayerGiven", "ActPartial", "HelperBuilt", "AddedFirst", "AddedFromConfig",
            "DenseBlock"}  # (`DenseLayer` only writes its input: `DenseBlock` reads it again)
CLEAN = {"ActLayerAfterNorm", "HelperBuiltPostAct", "AddedAfterConv"}


def _module(root):
    spec = importlib.util.spec_from_file_location("ipv007_builders", root / FIXTURE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _classes_reported(source):
    owner = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            for line in range(node.lineno, node.end_lineno + 1):
                owner[line] = node.name
    return {owner[f.line] for f in analyze_source(source) if f.code == "IPV007"}


def _build(module, name):
    cls = getattr(module, name)
    if name == "ActLayerGiven":
        return cls(3, torch.nn.ReLU)
    return cls(3, config="relu-batchnorm") if name == "DenseBlock" else cls(3)


def test_exactly_the_classes_whose_output_changes_are_reported(root):
    source = (root / FIXTURE).read_text()
    assert _classes_reported(source) == REPORTED
    module = _module(root)
    torch.manual_seed(1)
    x0 = torch.randn(2, 3, 5, 5)
    for name in sorted(REPORTED | CLEAN):
        torch.manual_seed(0)
        model = _build(module, name)
        plain = copy.deepcopy(model)
        for layer in plain.modules():
            if hasattr(layer, "inplace"):
                layer.inplace = False
        x = x0.clone()
        got = model(x)
        want = plain(x0.clone())
        assert got.shape == want.shape and torch.allclose(got, want) == (name in CLEAN), name
        assert torch.equal(x, x0) == (name in CLEAN), name  # the caller's tensor was rectified


def test_a_config_that_adds_the_relu_later_leaves_the_input_as_it_is(root):
    # the stack's first layer is what the config names first: both classes are reported for the config that may
    # name the in-place ReLU first (`DenseBlock`'s default names the norm first: a hazard on another path)
    module = _module(root)
    torch.manual_seed(1)
    x0 = torch.randn(2, 3, 5, 5)
    for cls in ("AddedFromConfig", "DenseBlock"):
        for config, changed in (("relu-batchnorm", True), ("batchnorm-relu", False)):
            x = x0.clone()
            out = getattr(module, cls)(3, config=config)(x)
            assert (not torch.equal(x, x0)) == changed, (cls, config)
            if cls == "DenseBlock":  # the concatenated skip half is what the ReLU wrote, or the input
                assert torch.equal(out[:, :3], torch.relu(x0) if changed else x0)


@pytest.mark.parametrize("source", [
    # the layer parameter's default takes no `inplace`, and nothing passes the flag: no in-place layer
    "import torch.nn as nn\nclass B(nn.Module):\n    def __init__(self, c, act_layer=nn.GELU):\n"
    "        super().__init__()\n        self.act = act_layer()\n    def forward(self, x):\n        return self.act(x) + x\n",
    # the default sets the flag, and this call clears it
    "import torch.nn as nn\nfrom functools import partial\nclass B(nn.Module):\n"
    "    def __init__(self, c, act=partial(nn.ReLU, inplace=True)):\n        super().__init__()\n"
    "        self.act = act(inplace=False)\n    def forward(self, x):\n        return self.act(x) + x\n",
    # a parameter that is not a layer class, called with `inplace=True`: unknown, not taken for a layer
    "import torch.nn as nn\nclass B(nn.Module):\n    def __init__(self, c, make):\n        super().__init__()\n"
    "        self.act = make(inplace=True)\n    def forward(self, x):\n        return self.act(x) + x\n",
    # the stack is changed after `add_module`: its first layer is not known
    "import torch.nn as nn\nclass B(nn.Module):\n    def __init__(self, c):\n        super().__init__()\n"
    "        self.body = nn.Sequential()\n        self.body.add_module('relu', nn.ReLU(inplace=True))\n"
    "        self.body.insert(0, nn.Conv2d(c, c, 1))\n    def forward(self, x):\n        return self.body(x) + x\n",
    # a module function whose returns start with different layers: not one first layer
    "import torch.nn as nn\ndef make(c, pre):\n    if pre:\n        return nn.Sequential(nn.ReLU(inplace=True))\n"
    "    return nn.Sequential(nn.Conv2d(c, c, 1))\nclass B(nn.Module):\n    def __init__(self, c):\n"
    "        super().__init__()\n        self.body = make(c, False)\n    def forward(self, x):\n        return self.body(x) + x\n",
])
def test_what_is_not_known_to_be_an_in_place_first_layer_is_not_reported(source):
    assert [f.code for f in analyze_source(source)] == []
