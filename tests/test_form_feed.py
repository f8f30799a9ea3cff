"""A page break (a line holding only ``\\x0c``) does not shift line numbers: ``# noqa`` below it suppresses its
line in ``check``, ``fix`` and the language server, as in flake8. ``str.splitlines`` breaks at form feeds
(and at other separators ``ast`` does not count); source text is split by ``textpos.split_lines`` only."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from inplace_lint import textpos
from inplace_lint.adapters.cli import main

WRITE = "    logits.div_(t)"
SOURCE = ("import torch\n\x0c\ndef f(model, ids, t):\n    logits = model(ids).logits\n" + WRITE + "{noqa}\n"
          "    return logits\n")
SUPPRESSED = SOURCE.format(noqa="  # noqa: IPV001")
REPORTED = SOURCE.format(noqa="")
MESSAGE = "IPV001 `div_` writes in place to `logits`, model output `model(ids).logits`"


def test_split_lines_counts_as_ast_does():
    text = "a\x0c\nb\x0bc\x1c\u2028d\re\r\nf"
    assert textpos.split_lines(text) == ["a\x0c\n", "b\x0bc\x1c\u2028d\r", "e\r\n", "f"]
    assert len(text.splitlines()) == 8  # what the pipeline used to count


def test_check(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text(REPORTED)
    assert main(["check", "-q", "--no-cache", str(path)]) == 1
    assert capsys.readouterr().out == f"{path}:5:5: {MESSAGE} [fix: safe]\n"
    path.write_text(SUPPRESSED)
    assert main(["check", "-q", "--no-cache", str(path)]) == 0
    assert capsys.readouterr().out == ""


def test_fix_leaves_the_suppressed_line(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text(SUPPRESSED)
    assert main(["fix", "--no-cache", str(path)]) == 0
    assert path.read_text() == SUPPRESSED
    path.write_text(REPORTED)
    assert main(["fix", "--no-cache", "--style", "runtime", str(path)]) == 0
    assert path.read_text() == REPORTED.replace(
        "import torch\n", "import torch\nfrom inplace_lint.runtime import out_of_place\n").replace(
        WRITE, '    logits = out_of_place(logits, "div_", t)')


def test_server():
    pytest.importorskip("pygls")
    from inplace_lint.adapters import server

    [d] = server.diagnostics_for(REPORTED, None)
    assert (d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character) == \
        ("IPV001", 4, 4, 4, 18)
    assert server.diagnostics_for(SUPPRESSED, None) == []


def test_flake8_agrees(tmp_path):
    for source, expected in ((REPORTED, f"m.py:5:5: {MESSAGE}\n"), (SUPPRESSED, "")):
        (tmp_path / "m.py").write_text(source)
        proc = subprocess.run([sys.executable, "-m", "flake8", "--select", "IPV", "m.py"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, env=dict(os.environ))
        assert proc.stdout == expected, proc.stderr
