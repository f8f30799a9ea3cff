"""A fix exists exactly when it has edits, in every format (issue 16): whether a planned fix can be written is
settled once, on ``ast``, before any surface sees the findings (``fixplan.withdraw_unwritable``), so the text
``[fix: ...]`` note, JSON, SARIF and ``fix`` agree. The 140-deep call nest is in tests/test_fix_robust.py; here
an ``out=`` write in a module that imports ``add`` but not ``torch``: its rewrite would name
``torch.empty_like``, so the text used to say ``[fix: safe]`` while JSON and ``fix`` had no edit."""
from __future__ import annotations

import json

import pytest

from inplace_lint.adapters.cli import main

NO_TORCH = "the rewrite passes `out=torch.empty_like(...)`, and the module does not import `torch`"
MESSAGE = "IPV001 `add(..., out=...)` writes in place to `x`, a view of model output `model(h).logits`"
SOURCE = ("from torch import add\n\n\ndef f(model, h, t):\n    x = model(h).logits.squeeze(0)\n"
          "    add(x, t, out=x)\n    return x\n")


@pytest.fixture
def path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(SOURCE)
    return tmp_path / "m.py"


def test_text_says_no_fix_and_why(path, capsys):
    assert main(["check", "m.py"]) == 1
    assert capsys.readouterr().out == f"m.py:6:5: {MESSAGE} [no fix: {NO_TORCH}]\n"


def test_json_and_sarif_have_no_fix(path, capsys):
    assert main(["check", "--format", "json", "m.py"]) == 1
    [item] = json.loads(capsys.readouterr().out)
    assert (item["location"], item["fix"], item["no_fix"]) == ({"row": 6, "column": 5}, None, NO_TORCH)
    assert main(["check", "--format", "sarif", "m.py"]) == 1
    [result] = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    assert "fixes" not in result and result["properties"] == {"noFix": NO_TORCH}


@pytest.mark.parametrize("style", ["inline", "runtime"])
def test_fix_leaves_it_and_says_why(path, capsys, style):
    assert main(["fix", "--style", style, "--unsafe-fixes", "m.py"]) == 1
    captured = capsys.readouterr()
    assert captured.out == f"m.py:6:5: {MESSAGE} [no automatic fix: {NO_TORCH}]\n"
    assert path.read_text() == SOURCE


def test_with_torch_imported_every_format_has_the_fix(path, capsys):
    path.write_text("import torch\n" + SOURCE)
    assert main(["check", "m.py"]) == 1
    assert capsys.readouterr().out == f"m.py:7:5: {MESSAGE} [fix: safe]\n"
    assert main(["check", "--format", "json", "m.py"]) == 1
    [item] = json.loads(capsys.readouterr().out)
    assert [e["content"] for e in item["fix"]["edits"]] == ["    x = add(x, t, out=torch.empty_like(x))\n"]
    assert main(["fix", "m.py"]) == 0
    assert path.read_text() == "import torch\n" + SOURCE.replace("add(x, t, out=x)", "x = add(x, t, out=torch.empty_like(x))")
