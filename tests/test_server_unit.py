"""The language server's functions called in-process: what an edit costs, and the IPV000 diagnostic's range."""
from __future__ import annotations

import pytest

pytest.importorskip("pygls")
from inplace_lint.adapters import server  # noqa: E402

SOURCE = "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)\n"


def test_unchanged_text_is_not_analysed_again(monkeypatch, tmp_path):
    calls = []
    real = server.check_source
    monkeypatch.setattr(server, "check_source", lambda *a, **k: calls.append(1) or real(*a, **k))
    path = str(tmp_path / "m.py")
    first = server.diagnostics_for(SOURCE, path)
    assert server.diagnostics_for(SOURCE, path) == first  # a re-open, or the findings a code action needs
    assert server.findings_for(SOURCE, path)[0].code == "IPV001"
    assert len(calls) == 1
    server.diagnostics_for(SOURCE + "\n", path)  # an edit is analysed
    assert len(calls) == 2
    (tmp_path / "setup.cfg").write_text("[inplace_lint]\nignore = IPV001\n")
    assert server.diagnostics_for(SOURCE, path) == []  # so is a change of configuration
    assert len(calls) == 3


def test_syntax_error_range_reaches_the_end_of_the_line():
    [d] = server.diagnostics_for("x = 1\ny = (1, \u00e9\n", None)
    assert (d.code, d.message) == ("IPV000", "cannot parse: '(' was never closed")
    # UTF-16 columns: the diagnostic starts at the bracket and ends at the end of its line
    assert (d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character) == (1, 4, 1, 9)
