"""The ``inplace-lint check`` command: output formats, exit codes, bad input, configuration."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from inplace_lint.adapters.cli import main

BAD = "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)\n"


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "bad.py").write_text(BAD)
    (tmp_path / "pkg" / "good.py").write_text("def f(x, t):\n    return x / t\n")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "skipped.py").write_text(BAD)
    return tmp_path


def test_text_output_and_exit_code(project, capsys):
    assert main(["check", str(project)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1  # .venv is skipped
    assert out[0].startswith(f"{project / 'pkg' / 'bad.py'}:3:5: IPV001 `div_` writes in place to `x`")
    assert out[0].endswith("`x`, a view of model output `model(h).logits` [fix: safe]")


def test_text_output_marks_unsafe_and_missing_fixes(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text("def f(output, t):\n    output.logits.squeeze(0).div_(t)\n    x = output.logits\n    x.div_(t)\n")
    assert main(["check", "-q", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("a view of model output `output.logits`")  # not a name: no fix
    assert out[1].endswith("`x`, model output `output.logits` [fix: unsafe]")


def test_clean_exit_zero(project, capsys):
    assert main(["check", str(project / "pkg" / "good.py")]) == 0
    assert capsys.readouterr().out == ""


def test_json_is_ruff_schema(project, capsys):
    assert main(["check", "--format", "json", str(project / "pkg")]) == 1
    [item] = json.loads(capsys.readouterr().out)
    # ruff's keys, plus "related" (the origin chain as locations) and "no_fix" (why there is no fix, or null)
    assert set(item) == {"cell", "code", "end_location", "filename", "fix", "location", "message", "noqa_row", "url",
                         "related", "no_fix"}
    assert item["no_fix"] is None
    assert item["code"] == "IPV001"
    assert item["location"] == {"row": 3, "column": 5}
    assert item["end_location"] == {"row": 3, "column": 14}
    assert item["noqa_row"] == 3
    assert item["fix"]["applicability"] == "safe"
    assert item["fix"]["message"] == "rebind `x` to the out-of-place result"
    assert item["filename"] == str((project / "pkg" / "bad.py").resolve())


def test_unparsable_file_is_reported_and_others_checked(project, capsys):
    (project / "pkg" / "broken.py").write_text("def f(:\n")
    assert main(["check", str(project / "pkg")]) == 1
    captured = capsys.readouterr()
    assert f"{project / 'pkg' / 'broken.py'}: cannot parse: " in captured.err
    assert "bad.py:3:5: IPV001" in captured.out


def test_usage_errors_exit_two(project, capsys):
    # issue 11: a missing path is reported (IPV000) and the rest checked, exit 1; no path checks "."
    assert main(["check", "--select", "XYZ1", str(project)]) == 2
    with pytest.raises(SystemExit) as exc:
        main(["check", "--format", "xml"])
    assert exc.value.code == 2


def test_select_ignore_exclude(project, capsys):
    assert main(["check", "--ignore", "IPV001", str(project)]) == 0
    assert main(["check", "--select", "IPV004", str(project)]) == 0
    assert main(["check", "--exclude", "bad.py", str(project)]) == 0
    assert main(["check", "--select", "IPV", str(project)]) == 1


def test_config_file_section(project, capsys):
    (project / "setup.cfg").write_text("[inplace_lint]\nextend-model-output-names = res\nignore = IPV004\n")
    (project / "pkg" / "custom.py").write_text("def f(res, t):\n    res.logits.mul_(t)\n    res.logits.expand(3).mul_(t)\n")
    assert main(["check", "-q", str(project / "pkg" / "custom.py")]) == 1
    out = capsys.readouterr().out.splitlines()
    assert [line.split(": ")[1].split()[0] for line in out] == ["IPV001"]


def test_config_unknown_key_is_a_warning_naming_the_closest_key(project, capsys):
    """An unknown key is skipped with a warning (issue 18; flake8 skips unknown options too), the run goes on."""
    (project / "pyproject.toml").write_text('[tool.inplace-lint]\nmodel-outputs = ["x"]\n')
    assert main(["check", "-q", str(project / "pkg")]) == 1
    assert capsys.readouterr().err == (
        f"inplace-lint: warning: {project / 'pyproject.toml'}: unknown key 'model-outputs' ignored "
        "(did you mean 'model-output-names'?)\n")


def test_noqa_same_as_flake8(tmp_path, capsys):
    path = tmp_path / "s.py"
    path.write_text(textwrap.dedent("""\
        def f(model, h, t):
            output.logits.div_(t)  # noqa: IPV001 -- 20 GB copy otherwise
            output.logits.div_(t)  # noqa:IPV002
        """))
    assert main(["check", "-q", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[1] for line in out] == ["3"]
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select=IPV", str(path)],
                            capture_output=True, text=True)
    assert [line.split(":")[1] for line in flake8.stdout.splitlines()] == ["3"]


def test_console_script_runs(project):
    proc = subprocess.run([sys.executable, "-m", "inplace_lint", "check", str(project / "pkg")],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "IPV001" in proc.stdout


def test_flake8_reads_options_from_config(tmp_path):
    (tmp_path / "setup.cfg").write_text("[flake8]\nipv-extend-model-output-names = res\n")
    (tmp_path / "m.py").write_text("def f(res, t):\n    res.logits.mul_(t)\n")
    proc = subprocess.run([sys.executable, "-m", "flake8", "--select=IPV", "m.py"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.stdout.startswith("m.py:2:5: IPV001"), proc.stdout + proc.stderr


def test_json_fix_edits_reproduce_the_codemod(tmp_path, capsys):
    """Applying a finding's JSON edits (ruff's format) gives exactly what `fix` writes."""
    from inplace_lint.fixing import fix_code

    path = tmp_path / "m.py"
    source = "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)  # c\n    return x\n"
    path.write_text(source)
    assert main(["check", "--format", "json", str(path)]) == 1
    [item] = json.loads(capsys.readouterr().out)
    lines = source.splitlines(keepends=True)
    for edit in sorted(item["fix"]["edits"], key=lambda e: e["location"]["row"], reverse=True):
        start, end = edit["location"]["row"] - 1, edit["end_location"]["row"] - 1
        assert edit["location"]["column"] == edit["end_location"]["column"] == 1
        lines[start:end] = [edit["content"]]
    assert "".join(lines) == fix_code(source).new_source


def test_json_unsafe_fix_message_gives_the_reason(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text("def f(output, t):\n    x = output.logits\n    x.div_(t)\n")
    main(["check", "--format", "json", str(path)])
    [item] = json.loads(capsys.readouterr().out)
    assert item["fix"]["applicability"] == "unsafe"
    assert item["fix"]["message"] == ("rebind `x` to the out-of-place result (unsafe: `output` is a parameter: "
                                      "the caller would no longer see the change to `output.logits`)")
