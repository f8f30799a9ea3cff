"""``check --fix`` says how many findings it fixed (as ruff's "N fixed"), on stderr, before what is left."""
from __future__ import annotations

from inplace_lint.adapters.cli import main

SOURCE = '''def scale(model, ids, t):
    logits = model(ids).logits
    logits.div_(t)
    return logits


def keep(model, ids, t):
    out = model(ids)
    logits = out.logits
    logits.div_(t)
    return out
'''


def test_check_fix_counts_what_it_fixed(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(SOURCE)
    assert main(["check", "--fix", "--no-cache", "m.py"]) == 1  # the unsafe one is left
    captured = capsys.readouterr()
    assert "Fixed 1 finding in 1 file." in captured.err
    assert [line.split(":")[1] for line in captured.out.splitlines()] == ["17"]  # (the guard import added lines)
    assert main(["check", "--fix", "--no-cache", "-q", "m.py"]) == 1  # nothing more to fix: nothing said
    assert "Fixed" not in capsys.readouterr().err
