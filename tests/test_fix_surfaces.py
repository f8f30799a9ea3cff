"""Every surface reads the same edits: JSON ``fix.edits``, SARIF ``fixes`` and ``fix`` agree, and no
surface re-runs the codemod per finding (issue 8)."""
from __future__ import annotations

import json
import pathlib

import jsonschema

from inplace_lint.adapters.cli import main
from inplace_lint.fixing import fix_code

SCHEMA = pathlib.Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"
SOURCE = ("def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    if t != 1: x.div_(t)  # é\n    return x\n\n"
          "def g(model, h, t):\n    y = model(h).logits.squeeze(0)\n    y /= t\n    return y\n")


def _apply(source, edits):
    """Apply (row, column)-addressed edits, 1-based character columns, last first."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    for (r1, c1), (r2, c2), text in sorted(edits, reverse=True):
        a = starts[r1 - 1] + c1 - 1 if r1 <= len(lines) else len(source)
        b = starts[r2 - 1] + c2 - 1 if r2 <= len(lines) else len(source)
        source = source[:a] + text + source[b:]
    return source


def test_json_and_sarif_carry_the_edits_fix_applies(tmp_path, capsys, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text(SOURCE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    expected = fix_code(SOURCE).new_source
    assert main(["check", "-q", "--format", "json", "m.py"]) == 1
    items = json.loads(capsys.readouterr().out)
    assert [i["fix"]["applicability"] for i in items] == ["safe", "safe"]
    edits = {(e["location"]["row"], e["location"]["column"], e["end_location"]["row"], e["end_location"]["column"],
              e["content"]) for i in items for e in i["fix"]["edits"]}
    assert _apply(SOURCE, [((a, b), (c, d), t) for a, b, c, d, t in edits]) == expected
    assert items[0]["fix"]["edits"][1] == {  # the default style, inline (config.FIX_STYLES[0])
        "content": '    if t != 1:\n        if isinstance(x, DTensor) and not isinstance(t, DTensor) and '
                   'getattr(t, "ndim", 0) > 0:\n            x = x.full_tensor()\n        x = x.clone().div_(t)  # é\n',
        "location": {"row": 3, "column": 1}, "end_location": {"row": 4, "column": 1}}

    assert main(["check", "-q", "--format", "sarif", "m.py"]) == 1
    log = json.loads(capsys.readouterr().out)
    jsonschema.validate(log, json.loads(SCHEMA.read_text(encoding="utf-8")), cls=jsonschema.Draft4Validator)
    replacements = {(r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"],
                     r["deletedRegion"]["endLine"], r["deletedRegion"]["endColumn"], r["insertedContent"]["text"])
                    for result in log["runs"][0]["results"] for fix in result["fixes"]
                    for change in fix["artifactChanges"] for r in change["replacements"]}
    assert replacements == edits


def test_text_output_needs_no_codemod(tmp_path, capsys, monkeypatch):
    """`check` in text form reads the plans only: the codemod is never called."""
    from inplace_lint.fix import attach as codemod

    path = tmp_path / "m.py"
    path.write_text(SOURCE, encoding="utf-8")
    monkeypatch.setattr(codemod, "attach_edits", lambda *a, **k: (_ for _ in ()).throw(AssertionError("called")))
    assert main(["check", "-q", "-j", "1", str(path)]) == 1
    assert capsys.readouterr().out.count("[fix: safe]") == 2


def test_json_runs_the_codemod_once_per_file(tmp_path, capsys, monkeypatch):
    from inplace_lint.fix import attach as codemod

    path = tmp_path / "m.py"
    path.write_text(SOURCE * 1, encoding="utf-8")
    calls = []
    real = codemod.attach_edits
    monkeypatch.setattr(codemod, "attach_edits", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert main(["check", "-q", "-j", "1", "--format", "json", str(path)]) == 1
    assert calls == [1]


def test_libcst_is_loaded_only_for_statements_the_text_path_does_not_cover(tmp_path):
    """Its native parser costs a start-up time comparable to a whole `check` of a small file."""
    import subprocess
    import sys

    simple = tmp_path / "simple.py"
    simple.write_text("def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)\n    return x\n")
    probe = ("import sys, io, contextlib\nfrom inplace_lint.adapters.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n    main(sys.argv[1:])\n"
             "print('libcst' in sys.modules)\n")

    def loads_libcst(*args):
        proc = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True)
        return proc.stdout.strip().splitlines()[-1] == "True"

    assert not loads_libcst("check", "-q", "-j", "1", str(simple))
    assert not loads_libcst("check", "-q", "-j", "1", "--format", "json", str(simple))
    assert loads_libcst("check", "-q", "-j", "1", "--format", "sarif", str(tmp_path / "simple.py")) is False
    inline = tmp_path / "setup.cfg"
    inline.write_text("[inplace_lint]\nfix-style = inline\n")
    assert not loads_libcst("check", "-q", "-j", "1", "--format", "json", str(simple))
    hoisted = tmp_path / "hoisted.py"
    hoisted.write_text("import torch\ndef f(model, h, t):\n    x = model(h).logits.squeeze(0)\n"
                       "    y = torch.neg(x.div_(t))\n    return y\n")
    assert loads_libcst("check", "-q", "-j", "1", "--format", "json", str(hoisted))
