"""A finding without a fix says why, in the text note and in JSON (``Finding.no_fix``): IPV007 (the flag is set
where the layer is built) and a write in a project that compiles TorchScript (the rewrite is not scriptable)."""
from __future__ import annotations

import json

import pytest

from inplace_lint.adapters.cli import main
from inplace_lint.analysis.fix_planning import TORCHSCRIPT

LAYER = '''import torch.nn as nn


class Head(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.act = nn.ReLU(inplace=True)
        self.proj = nn.Linear(d, d)

    def forward(self, h):
        out = self.proj(self.act(h))
        return out + h
'''

LOSS = '''def binary_hinge(y_pred, y_true, margin=1.0):
    hinge = (margin - y_pred * (2 * y_true - 1)).relu()
    hinge *= y_true + 1
    return hinge.mean()
'''

SCRIPTED = '''import torch


@torch.jit.script
def swish(x):
    return x * torch.sigmoid(x)
'''


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "head.py").write_text(LAYER)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "loss.py").write_text(LOSS)
    return tmp_path


def test_ipv007_says_where_to_change_the_flag(project, capsys):
    assert main(["check", "head.py"]) == 1
    assert capsys.readouterr().out == (
        "head.py:11:25: IPV007 `nn.ReLU(inplace=True)` writes in place to `h`, which is read again on line 12: that "
        "read sees the layer's output, not its input [no fix: the flag is set where the layer is built: build it "
        "with `inplace=False`, or pass `h.clone()` here]\n")


def test_a_project_that_compiles_torchscript_gets_no_fix_and_is_told_why(project, tmp_path_factory, monkeypatch,
                                                                         capsys):
    assert main(["check", "--no-cache", "pkg"]) == 1
    assert capsys.readouterr().out.endswith("[fix: safe]\n")  # nothing scripted: the rewrite is safe
    other = tmp_path_factory.mktemp("scripted")  # (another project: the same package with a scripted function,
    (other / "pkg").mkdir()                      # which may call any of the package's)
    (other / "pkg" / "__init__.py").write_text("")
    (other / "pkg" / "loss.py").write_text(LOSS)
    (other / "pkg" / "act.py").write_text(SCRIPTED)
    monkeypatch.chdir(other)
    assert main(["check", "--no-cache", "--format", "json", "pkg"]) == 1
    [item] = json.loads(capsys.readouterr().out)
    assert (item["code"], item["fix"], item["no_fix"]) == ("IPV006", None, TORCHSCRIPT)


MIXED = LAYER + '''

def scale(model, ids, t):
    out = model(ids)
    logits = out.logits
    logits.div_(t)
    return out
'''


def test_fix_lists_what_it_left_in_source_order(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mixed.py").write_text(MIXED)
    assert main(["fix", "--no-cache", "mixed.py"]) == 1
    captured = capsys.readouterr()
    left = [line.split(":")[1] for line in (captured.out + captured.err).splitlines() if line.startswith("mixed.py:")]
    assert left == ["11", "18"], captured  # the IPV007 call (no fix), then the unsafe `div_` (skipped)


def test_flake8_shows_what_to_do_where_there_is_no_fix(tmp_path):
    import ast

    from inplace_lint.adapters.flake8_plugin import InplaceLintPlugin

    path = tmp_path / "head.py"
    path.write_text(LAYER)
    plugin = InplaceLintPlugin(ast.parse(LAYER), str(path), LAYER.splitlines(keepends=True))
    [(line, col, text, _)] = list(plugin.run())
    assert (line, col) == (11, 24) and text.endswith(
        "[no fix: the flag is set where the layer is built: build it with `inplace=False`, or pass `h.clone()` here]")
