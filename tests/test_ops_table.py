"""The op tables: generated from torch, and the linter itself never imports torch."""
import pathlib
import subprocess
import sys

import pytest

from inplace_lint.torch_facts import ops


def test_generated_table_matches_installed_torch():
    pytest.importorskip("torch")
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "scripts"))
    from generate_ops import generate

    with open(ops.__file__.replace("ops.py", "_ops_generated.py")) as fh:
        assert fh.read() == generate(), "run `python scripts/generate_ops.py` and commit the result"


def test_table_contents():
    assert {"div_", "masked_fill_", "copy_", "index_put_", "zero_"} <= ops.TENSOR_INPLACE_METHODS
    assert not {"requires_grad_", "share_memory_", "detach_"} & ops.TENSOR_INPLACE_METHODS
    assert ops.OUT_OF_PLACE_TWINS["div_"] == "div" and "copy_" not in ops.OUT_OF_PLACE_TWINS
    assert "relu" in ops.INPLACE_KWARG_FUNCTIONS and "ReLU" in ops.INPLACE_KWARG_MODULES


def test_linter_does_not_import_torch():
    code = ("import sys, inplace_lint.adapters.cli, inplace_lint.adapters.flake8_plugin, inplace_lint.analysis;"
            "from inplace_lint.analysis import analyze_source;"
            "analyze_source('def f(o, t):\\n    o.logits.div_(t)\\n');"
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
