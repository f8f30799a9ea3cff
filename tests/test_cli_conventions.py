"""The conventions ruff and flake8 users bring to ``inplace-lint`` (issue 11): stdin, default path, missing
paths, a closed pipe, plain ``--help``, repeatable selection options, files that cannot be checked
as ``IPV000`` items in every format, related locations, typed configuration values."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from inplace_lint.adapters.cli import build_parser, main
from inplace_lint.source.problems import UNDECLARED_HINT

ROOT = pathlib.Path(__file__).resolve().parent.parent
BAD = "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)\n"
TWO = "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)\n    x.expand(2, 3).mul_(t)\n"
SCHEMA = ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"


def run(*args, stdin: bytes = b"", cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "inplace_lint", *args], input=stdin, capture_output=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def codes(out: str):
    return [line.split(": ", 1)[1].split()[0] for line in out.splitlines() if not line.startswith(" ")]


# --------------------------------------------------------------------------- stdin, paths


def test_stdin_with_stdin_filename(tmp_path):
    (tmp_path / "pkg").mkdir()
    proc = run("check", "-", "--stdin-filename", "pkg/m.py", stdin=BAD.encode(), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.decode().startswith("pkg/m.py:3:5: IPV001 ")
    assert run("check", "-", stdin=b"x = 1\n", cwd=tmp_path).returncode == 0
    # ruff's form: --stdin-filename and no path reads stdin
    proc = run("check", "--stdin-filename", "pkg/m.py", stdin=BAD.encode(), cwd=tmp_path)
    assert proc.stdout.decode().startswith("pkg/m.py:3:5: IPV001 ")
    # without a name the output says "-"
    assert run("check", "-", stdin=BAD.encode(), cwd=tmp_path).stdout.decode().startswith("-:3:5: IPV001 ")


def test_stdin_filename_finds_config_and_per_file_ignores(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "setup.cfg").write_text("[inplace_lint]\nper-file-ignores = tests/*:IPV001\n")
    proc = run("check", "-", "--stdin-filename", str(tmp_path / "sub" / "tests" / "t.py"), stdin=TWO.encode(),
               cwd=tmp_path)
    assert codes(proc.stdout.decode()) == ["IPV004"]
    proc = run("check", "-", "--stdin-filename", str(tmp_path / "sub" / "m.py"), stdin=TWO.encode(), cwd=tmp_path)
    assert codes(proc.stdout.decode()) == ["IPV001", "IPV004"]


def test_stdin_filename_without_dash_is_a_usage_error(tmp_path, capsys):
    assert main(["check", "--stdin-filename", "m.py", str(tmp_path)]) == 2
    assert "give '-' as the path" in capsys.readouterr().err


def test_stdin_syntax_error_and_bad_bytes(tmp_path):
    proc = run("check", "-", "--stdin-filename", "m.py", stdin=b"def f(:\n", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.decode() == "m.py:1:7: IPV000 cannot parse: invalid syntax\n"
    proc = run("check", "-", "--stdin-filename", "m.py", stdin=b"x = 1\ny = '\xff'\n", cwd=tmp_path)
    assert proc.stdout.decode() == ("m.py:2:6: IPV000 cannot read: byte 0xff is not valid utf-8 (invalid start byte)"
                                    f"; {UNDECLARED_HINT}\n")


def test_fix_stdin_prints_the_fixed_text(tmp_path):
    proc = run("fix", "-", "--stdin-filename", "m.py", "--style", "runtime", stdin=(BAD + "    return x\n").encode(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == (
        "from inplace_lint.runtime import out_of_place\n\n"
        "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x = out_of_place(x, \"div_\", t)\n"
        "    return x\n")
    clean = "def f(x, t):\n    return x / t\n"
    proc = run("fix", "-", stdin=clean.encode(), cwd=tmp_path)
    assert (proc.returncode, proc.stdout.decode()) == (0, clean)  # unchanged text, as ruff prints it


def test_no_path_checks_the_working_directory(tmp_path, monkeypatch, capsys):
    (tmp_path / "a.py").write_text(BAD)
    monkeypatch.chdir(tmp_path)
    assert main(["check", "-q"]) == 1
    assert capsys.readouterr().out.startswith("./a.py:3:5: IPV001 ")  # as `flake8 .` prints it


def test_python_m_inside_a_package_that_shadows_the_standard_library(tmp_path):
    # `python -m` puts the working folder first on the import path; torch_sparse ships a `select.py`
    (tmp_path / "select.py").write_text("raise ImportError('the checked package, not the standard library')\n")
    (tmp_path / "bad.py").write_text(BAD)
    proc = run("check", "--no-cache", ".", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr.decode()
    assert codes(proc.stdout.decode()) == ["IPV001"]


def test_missing_path_is_reported_and_the_rest_checked(tmp_path, capsys):
    (tmp_path / "a.py").write_text(BAD)
    missing = tmp_path / "nothere.py"
    assert main(["check", str(missing), str(tmp_path / "a.py")]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        f"{tmp_path / 'a.py'}:3:5: IPV001 " + captured.out.splitlines()[0].split(" IPV001 ", 1)[1],
        f"{missing}:1:1: IPV000 cannot read: No such file or directory",
    ]
    assert f"{missing}: cannot read: No such file or directory; skipped" in captured.err
    assert "Scanned 2 files: 1 finding in 1 file (IPV001: 1); 1 file could not be read or parsed." in captured.err
    # missing alone: exit 1 (not a usage error), as ruff does
    assert main(["check", "-q", str(missing)]) == 1


def test_closed_pipe_ends_quietly(tmp_path):
    body = "".join(f"    output.logits.div_({i})\n" for i in range(3000))
    (tmp_path / "many.py").write_text("def f(output):\n" + body)
    cmd = (f"{sys.executable} -m inplace_lint check --format github -j 1 {tmp_path / 'many.py'} | head -1; "
           "exit ${PIPESTATUS[0]}")
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout.startswith("::warning file=")
    assert len(proc.stdout.splitlines()) == 1
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.returncode == 1


# --------------------------------------------------------------------------- help


def _helps():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return {"": parser.format_help(), **{name: p.format_help() for name, p in sub.choices.items()}}


def test_help_has_no_rst_markup():
    for name, text in _helps().items():
        assert "``" not in text and ":func:" not in text and ":data:" not in text, name


def test_fix_help_says_which_findings_have_a_fix_and_the_exit_codes():
    helps = _helps()
    text = helps["fix"]
    assert "Which findings have a fix" in text
    assert "x.div_(t)" in text and "inplace=True" in text and "out=x" in text and "No fix where" in text
    assert "exit codes:\n  0  no finding remains\n  1  findings remain" in text
    assert "exit codes:\n  0  no findings\n  1  findings" in helps["check"]
    proc = run("fix", "--help")
    assert proc.returncode == 0 and b"Which findings have a fix" in proc.stdout


# --------------------------------------------------------------------------- selection


@pytest.mark.parametrize("argv, expected", [
    (["--select", "IPV001", "--select", "IPV004"], ["IPV001", "IPV004"]),
    (["--select", "IPV001,IPV004"], ["IPV001", "IPV004"]),
    (["--select", "IPV001", "--extend-select", "IPV004"], ["IPV001", "IPV004"]),
    (["--ignore", "IPV001", "--ignore", "IPV004"], []),
    (["--ignore", "IPV001", "--extend-ignore", "IPV004"], []),
    (["--ignore", "IPV001,IPV004"], []),
    (["--extend-select", "IPV004"], ["IPV001", "IPV004"]),  # everything is selected already
])
def test_repeated_options_accumulate(tmp_path, capsys, argv, expected):
    (tmp_path / "m.py").write_text(TWO)
    main(["check", "-q", *argv, str(tmp_path / "m.py")])
    assert codes(capsys.readouterr().out) == expected


def test_extend_select_adds_to_the_config_file(tmp_path, capsys):
    (tmp_path / "setup.cfg").write_text("[inplace_lint]\nselect = IPV004\n")
    (tmp_path / "m.py").write_text(TWO)
    main(["check", "-q", str(tmp_path / "m.py")])
    assert codes(capsys.readouterr().out) == ["IPV004"]
    main(["check", "-q", "--extend-select", "IPV001", str(tmp_path / "m.py")])
    assert codes(capsys.readouterr().out) == ["IPV001", "IPV004"]
    main(["check", "-q", "--select", "IPV001", str(tmp_path / "m.py")])
    assert codes(capsys.readouterr().out) == ["IPV001"]


def test_repeated_exclude_accumulates(tmp_path, capsys):
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(BAD)
    main(["check", "-q", "--exclude", "a.py", "--exclude", "b.py", str(tmp_path)])
    assert [pathlib.Path(line.split(":")[0]).name for line in capsys.readouterr().out.splitlines()] == ["c.py"]
    main(["check", "-q", "--exclude", "a.py,b.py", "--extend-exclude", "c.py", str(tmp_path)])
    assert capsys.readouterr().out == ""


# --------------------------------------------------------------------------- files that cannot be checked


@pytest.fixture
def unchecked(tmp_path, monkeypatch):
    """A syntax error at line 2 column 7 (after a two-byte character: byte column 8), and a good file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.py").write_text("x = 1\n\u00e9 = f(:\n", encoding="utf-8")
    (tmp_path / "bad.py").write_text(BAD)
    return tmp_path


def test_syntax_error_in_text(unchecked, capsys):
    assert main(["check", "-q", "."]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "./broken.py:2:8: IPV000 cannot parse: invalid syntax"  # 1-based UTF-8 byte column, as flake8


def test_syntax_error_in_json(unchecked, capsys):
    main(["check", "-q", "--format", "json", "."])
    items = json.loads(capsys.readouterr().out)
    [item] = [i for i in items if i["code"] == "IPV000"]
    assert item["location"] == {"row": 2, "column": 8}
    assert item["message"] == "cannot parse: invalid syntax"
    assert item["fix"] is None and item["related"] == []
    assert item["filename"] == str(unchecked / "broken.py")
    assert item["url"] is None  # the package metadata names no project address (see test_reporters)


def test_syntax_error_in_sarif(unchecked, capsys):
    import jsonschema

    main(["check", "-q", "--format", "sarif", "."])
    log = json.loads(capsys.readouterr().out)
    jsonschema.validate(log, json.loads(SCHEMA.read_text(encoding="utf-8")), cls=jsonschema.Draft4Validator)
    [run_] = log["runs"]
    rules = run_["tool"]["driver"]["rules"]
    [result] = [r for r in run_["results"] if r["ruleId"] == "IPV000"]
    assert rules[result["ruleIndex"]]["id"] == "IPV000"
    assert result["level"] == "error"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    assert result["locations"][0]["physicalLocation"]["region"]["startColumn"] == 7  # characters in SARIF


def test_syntax_error_in_github(unchecked, capsys):
    main(["check", "-q", "--format", "github", "."])
    lines = capsys.readouterr().out.splitlines()
    assert "::error file=broken.py,line=2,col=7,endLine=2,endColumn=7,title=IPV000::cannot parse: invalid syntax" in lines


def test_statistics_count_unchecked_files(unchecked, capsys):
    main(["check", "-q", "--statistics", "."])
    assert "    1  IPV000  cannot-check-file" in capsys.readouterr().out.splitlines()


def test_non_utf8_file_names_the_byte_and_line(tmp_path, capsys):
    (tmp_path / "latin.py").write_bytes(b"x = 1\ny = 'caf\xe9'\n")
    assert main(["check", "-q", str(tmp_path / "latin.py")]) == 1
    assert capsys.readouterr().out == (
        f"{tmp_path / 'latin.py'}:2:9: IPV000 cannot read: byte 0xe9 is not valid utf-8 (invalid continuation byte)"
        f"; {UNDECLARED_HINT}\n")


def test_too_deep_for_the_parser_is_cannot_parse(tmp_path, capsys):
    """Issue 10 item 10: a 3000-term sum overflows CPython's parser; that is "cannot parse", not a crash."""
    (tmp_path / "deep.py").write_text("y = " + " + ".join(["x"] * 3000) + "\n")
    (tmp_path / "ok.py").write_text(BAD)
    assert main(["check", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert f"{tmp_path / 'deep.py'}:1:1: IPV000 cannot parse: too deeply nested for Python's parser" in captured.out
    assert "internal error" not in captured.err
    assert "IPV001" in captured.out  # the other file is still checked
    assert main(["fix", "--diff", str(tmp_path / "deep.py")]) == 1
    assert "cannot parse: too deeply nested" in capsys.readouterr().err


def test_null_byte_is_located(tmp_path, capsys):
    (tmp_path / "nul.py").write_bytes(b"x = 1\ny = 'a\x00'\n")
    main(["check", "-q", str(tmp_path / "nul.py")])
    assert capsys.readouterr().out.startswith(f"{tmp_path / 'nul.py'}:2:7: IPV000 cannot parse: ")


def test_ipv000_is_not_selected_away(unchecked, capsys):
    main(["check", "-q", "--select", "IPV004", "."])
    assert codes(capsys.readouterr().out) == ["IPV000"]


# --------------------------------------------------------------------------- related locations


def test_full_format_prints_related_notes(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(BAD)
    assert main(["check", "-q", "--format", "full", "m.py"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("m.py:3:5: IPV001 ")
    # (each note at the column where its quoted text stands on the line: an editor jumps to it)
    assert out[1:] == ["  m.py:2:9: note: model output `model(h).logits`", "  m.py:2:24: note: view `.squeeze(0)`"]
    # the default text format stays one line per finding
    main(["check", "-q", "m.py"])
    assert len(capsys.readouterr().out.splitlines()) == 1


def test_json_and_sarif_related(tmp_path, capsys, monkeypatch):
    import jsonschema

    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(BAD)
    main(["check", "-q", "--format", "json", "m.py"])
    [item] = json.loads(capsys.readouterr().out)
    assert item["related"] == [
        {"message": "model output `model(h).logits`", "filename": str(tmp_path / "m.py"),
         "location": {"row": 2, "column": 9}},
        {"message": "view `.squeeze(0)`", "filename": str(tmp_path / "m.py"), "location": {"row": 2, "column": 24}},
    ]
    main(["check", "-q", "--format", "sarif", "m.py"])
    log = json.loads(capsys.readouterr().out)
    jsonschema.validate(log, json.loads(SCHEMA.read_text(encoding="utf-8")), cls=jsonschema.Draft4Validator)
    [result] = log["runs"][0]["results"]
    assert result["relatedLocations"] == [
        {"id": 0, "message": {"text": "model output `model(h).logits`"},
         "physicalLocation": {"artifactLocation": {"uri": "m.py", "uriBaseId": "%SRCROOT%"},
                              "region": {"startLine": 2, "startColumn": 9}}},
        {"id": 1, "message": {"text": "view `.squeeze(0)`"},
         "physicalLocation": {"artifactLocation": {"uri": "m.py", "uriBaseId": "%SRCROOT%"},
                              "region": {"startLine": 2, "startColumn": 24}}},
    ]


def test_related_in_another_file(tmp_path, monkeypatch):
    """``Related.path`` names another file (a call site): every format points there."""
    import io

    from inplace_lint.adapters.reporters import json_related, sarif_log, write_full
    from inplace_lint.findings import Related
    from inplace_lint.pipeline import check_source
    from inplace_lint.source.problems import FileResult
    from inplace_lint.config import DEFAULT_SETTINGS

    monkeypatch.chdir(tmp_path)
    [finding] = check_source(BAD, "m.py", DEFAULT_SETTINGS).findings
    finding = type(finding)(**{**finding.__dict__, "related": (Related("call site", 7, 4, "caller.py"),)})
    result = FileResult("m.py", [finding])
    out = io.StringIO()
    write_full([(result, finding)], out)
    assert out.getvalue().splitlines()[1] == "  caller.py:7:5: note: call site"
    assert json_related(result, finding) == [
        {"message": "call site", "filename": str(tmp_path / "caller.py"), "location": {"row": 7, "column": 5}}]
    [loc] = sarif_log([(result, finding)])["runs"][0]["results"][0]["relatedLocations"]
    assert loc["physicalLocation"]["artifactLocation"] == {"uri": "caller.py", "uriBaseId": "%SRCROOT%"}


# --------------------------------------------------------------------------- configuration types


@pytest.mark.parametrize("toml, message", [
    ('ignore = "IPV001"', "ignore: expected an array of strings, got a string 'IPV001' (write [\"IPV001\"])"),
    ('report-in-no-grad = "yes"', "report-in-no-grad: expected true or false, got a string 'yes'"),
    ("extend-model-output-names = [1]", "extend-model-output-names: expected an array of strings, got an array [1]"),
    ("fix-style = 1", "fix-style: expected a string, got an integer 1"),
    ('per-file-ignores = "tests/*:IPV001"', "per-file-ignores: expected a table of glob = [codes], got a string"),
])
def test_pyproject_values_of_the_wrong_type(tmp_path, capsys, toml, message):
    (tmp_path / "pyproject.toml").write_text(f"[tool.inplace-lint]\n{toml}\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    assert main(["check", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(f"inplace-lint: error: {tmp_path / 'pyproject.toml'}: {message}")


def test_pyproject_values_of_the_right_type(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.inplace-lint]\nignore = ["IPV004"]\nreport-in-no-grad = true\nfix-style = "inline"\n'
        '[tool.inplace-lint.per-file-ignores]\n"x.py" = "IPV001"\n')
    (tmp_path / "a.py").write_text(TWO)
    assert main(["check", "-q", str(tmp_path)]) == 1
    assert codes(capsys.readouterr().out) == ["IPV001"]


def test_ini_values_stay_strings(tmp_path, capsys):
    """setup.cfg has no types: `report-in-no-grad = yes` and `ignore = IPV004` are the INI spelling."""
    (tmp_path / "setup.cfg").write_text("[inplace_lint]\nreport-in-no-grad = yes\nignore = IPV004\n")
    (tmp_path / "a.py").write_text(TWO)
    assert main(["check", "-q", str(tmp_path)]) == 1
    assert codes(capsys.readouterr().out) == ["IPV001"]


# --------------------------------------------------------------------------- noqa, server dependency


def test_sliced_noqa_mapping_equals_flake8s(root):
    """The noqa mapping computed per top-level statement equals flake8's whole-file mapping on every line
    inside a statement, on this repository's sources and on tricky layouts."""
    import ast

    from inplace_lint.source import noqa
    from inplace_lint.source.files import iter_python_files, read_source
    from inplace_lint.pipeline import noqa_mapping

    tricky = (
        "import torch\n@decorate(\n    1)  # noqa: E1\ndef f(x):\n    s = '''\n    # noqa: IPV001\n    '''\n"
        "    x.div_(t); y = (1,\n  2)  # noqa\n    return x\na = 1; b = (\n 2,\n)  # noqa: IPV004\n"
        "c = \\\n  3  # noqa\nclass C:\n    x = f(\n      1)\n")
    sources = [tricky] + [read_source(p) for p in iter_python_files([str(root / "inplace_lint"),
                                                                     str(root / "fixtures")], [])]
    for source in sources:
        tree = ast.parse(source)
        lines = source.splitlines(keepends=True)
        full = noqa.line_mapping(lines)
        wanted = {n for s in tree.body for n in range(s.lineno, (s.end_lineno or s.lineno) + 1)}
        part = noqa_mapping(tree, lines, wanted)
        assert {n: full.get(n) for n in wanted} == {n: part.get(n) for n in wanted}


def test_server_missing_dependency_says_how_to_install_from_the_repository(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "inplace_lint.adapters.server", None)  # import fails as without pygls
    assert main(["server"]) == 2
    err = capsys.readouterr().err
    assert "python -m pip install -e '.[server]'" in err and "git+" in err
    assert "pip install 'inplace-lint[server]' (" not in err


def test_stdin_columns_and_fix_edits_come_from_stdin_not_the_file_on_disk(tmp_path):
    """An editor pipes its unsaved buffer with --stdin-filename naming a file whose saved text differs."""
    (tmp_path / "m.py").write_text("# the saved version\n")
    buffer = "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    \u00e9 = 1\n    x.div_(t)\n    return x\n"
    proc = run("check", "-", "--stdin-filename", "m.py", "--format", "json", stdin=buffer.encode(), cwd=tmp_path)
    [item] = json.loads(proc.stdout)
    lines = buffer.splitlines(keepends=True)
    assert item["fix"]["edits"]
    for edit in sorted(item["fix"]["edits"], key=lambda e: e["location"]["row"], reverse=True):
        lines[edit["location"]["row"] - 1:edit["end_location"]["row"] - 1] = [edit["content"]]
    assert "    x = x.clone().div_(t)\n" in "".join(lines)  # the default style, inline
    # SARIF/GitHub count characters: read from the buffer's line, not the saved file's
    buffer = "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    \u00e9 = 1; x.div_(t)\n"
    proc = run("check", "-", "--stdin-filename", "m.py", "--format", "github", stdin=buffer.encode(), cwd=tmp_path)
    assert ",line=3,col=12," in proc.stdout.decode()


@pytest.mark.parametrize("raw, where", [(b"# caf\xe9\nx = 1\n", "1:6"), (b"x = 1\n# caf\xe9\n", "2:6")])
def test_latin1_byte_on_line_one_or_two_names_the_byte_and_how_to_declare(tmp_path, capsys, raw, where):
    """tokenize only says "invalid or missing encoding declaration" (no place) for a non-UTF-8 byte on line 1
    or 2; check and fix name the byte, its line and column, and the way out (issue 18)."""
    (tmp_path / "latin.py").write_bytes(raw)
    assert main(["check", "-q", str(tmp_path / "latin.py")]) == 1
    assert capsys.readouterr().out == (f"{tmp_path / 'latin.py'}:{where}: IPV000 cannot read: byte 0xe9 is not valid "
                                       f"utf-8 (invalid continuation byte); {UNDECLARED_HINT}\n")
    assert main(["fix", "-q", str(tmp_path / "latin.py")]) == 1
    line, col = where.split(":")
    assert capsys.readouterr().err == (f"{tmp_path / 'latin.py'}: cannot read: byte 0xe9 is not valid utf-8 (invalid "
                                       f"continuation byte); {UNDECLARED_HINT} (line {line}, column {col}); skipped\n")
    # declared: no hint, Python's own reading
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\n" + raw)
    assert main(["check", "-q", str(tmp_path / "latin.py")]) == 0


def test_a_related_note_column_counts_utf8_bytes_as_the_findings_do(tmp_path, capsys, monkeypatch):
    # (a note's column, like a finding's, is ast's UTF-8 byte column plus one: `é` takes two bytes)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "u.py").write_text("def f(model, h, t):\n    é = model(h).logits.squeeze(0)\n    é.div_(t)\n"
                                   "    return é\n", encoding="utf-8")
    assert main(["check", "-q", "--format", "full", "u.py"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("u.py:3:5: IPV001 ")
    assert out[1:] == ["  u.py:2:10: note: model output `model(h).logits`", "  u.py:2:25: note: view `.squeeze(0)`"]
