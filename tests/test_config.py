"""Configuration: ``per-file-ignores`` (flake8 syntax and a TOML table), ``fix-style``, and errors
that name the file and the key."""
from __future__ import annotations

import pathlib

import pytest

from inplace_lint import config
from inplace_lint.adapters.cli import main

BAD = "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)\n    x.expand(2, 3).mul_(t)\n"


@pytest.fixture
def tree(tmp_path):
    for rel in ("pkg/model.py", "pkg/tests/test_model.py", "scripts/run.py", "conftest.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(BAD)
    return tmp_path


def reported(capsys, root: pathlib.Path):
    """``{relative path: [codes]}`` from text output."""
    out = {}
    for line in capsys.readouterr().out.splitlines():
        path, _, _, rest = line.split(":", 3)
        out.setdefault(pathlib.Path(path).resolve().relative_to(root).as_posix(), []).append(rest.split()[0])
    return out


def test_per_file_ignores_flake8_syntax(tree, capsys):
    (tree / "setup.cfg").write_text(
        "[inplace_lint]\n"
        "per-file-ignores =\n"
        "    pkg/tests/*:IPV001,IPV004\n"
        "    scripts/*.py, conftest.py: IPV004\n"
        "    model.py:IPV00\n")
    assert main(["check", "-q", "-j", "1", str(tree)]) == 1
    assert reported(capsys, tree) == {"conftest.py": ["IPV001"], "scripts/run.py": ["IPV001"]}


def test_per_file_ignores_relative_to_config_folder(tree, capsys, monkeypatch):
    (tree / "pkg" / "setup.cfg").write_text("[inplace_lint]\nper-file-ignores = tests/*:IPV\n")
    monkeypatch.chdir(tree)  # the globs are relative to pkg/, not to the working directory
    assert main(["check", "-q", "-j", "1", "pkg"]) == 1
    assert reported(capsys, tree) == {"pkg/model.py": ["IPV001", "IPV004"]}


def test_per_file_ignores_pyproject_table(tree, capsys):
    (tree / "pyproject.toml").write_text(
        '[tool.inplace-lint]\nignore = ["IPV004"]\n'
        '[tool.inplace-lint.per-file-ignores]\n"pkg/**" = ["IPV001"]\n"run.py" = "IPV001"\n')
    assert main(["check", "-q", "-j", "1", str(tree)]) == 1
    assert reported(capsys, tree) == {"conftest.py": ["IPV001"]}


@pytest.mark.parametrize("value, message", [
    ("tests/*", "per-file-ignores: expected glob:CODES, found 'tests/*' without ':CODES'"),
    ("tests/*:", "per-file-ignores: expected glob:CODES, found no codes after 'tests/*':"),
    (":IPV001", "per-file-ignores: expected glob:CODES, found a misplaced ':' in ':IPV001'"),
    ("tests/*:E501", "per-file-ignores: unknown code 'E501' (known: IPV001, IPV002, IPV003, IPV004, IPV005, IPV006)"),
])
def test_per_file_ignores_errors_name_file_and_key(tree, capsys, value, message):
    (tree / "tox.ini").write_text(f"[inplace_lint]\nper-file-ignores = {value}\n")
    assert main(["check", str(tree)]) == 2
    assert capsys.readouterr().err == f"inplace-lint: error: {tree / 'tox.ini'}: {message}\n"


def test_parse_per_file_ignores_forms():
    where = "setup.cfg: per-file-ignores"
    assert config.parse_per_file_ignores("a.py:IPV001 b/*,c.py:IPV002,IPV003", where) == [
        ("a.py", ("IPV001",)), ("b/*", ("IPV002", "IPV003")), ("c.py", ("IPV002", "IPV003"))]
    assert config.parse_per_file_ignores(["a.py:IPV001", "b.py:IPV005"], where) == [
        ("a.py", ("IPV001",)), ("b.py", ("IPV005",))]
    assert config.parse_per_file_ignores({"t/*": "IPV001, IPV002"}, where) == [("t/*", ("IPV001", "IPV002"))]


def test_per_file_ignored_matching(tmp_path):
    pairs = [("tests/*", ("IPV001",)), ("conftest.py", ("IPV002",)), ("./pkg/a.py", ("IPV003",))]
    assert config.per_file_ignored(str(tmp_path / "tests/x/y.py"), pairs, tmp_path) == ["IPV001"]
    assert config.per_file_ignored(str(tmp_path / "deep/conftest.py"), pairs, tmp_path) == ["IPV002"]
    assert config.per_file_ignored(str(tmp_path / "pkg/a.py"), pairs, tmp_path) == ["IPV003"]
    assert config.per_file_ignored(str(tmp_path / "other/tests/y.py"), pairs, tmp_path) == []


def test_fix_style(tmp_path):
    (tmp_path / "setup.cfg").write_text("[inplace_lint]\nfix-style = inline\n")
    assert config.load(tmp_path)[1] == {"fix-style": "inline"}
    (tmp_path / "setup.cfg").write_text("[inplace_lint]\nfix_style = runtime\n")
    assert config.load(tmp_path)[1] == {"fix-style": "runtime"}
    assert config.FIX_STYLES[0] == "inline"  # the default when the key is absent
    (tmp_path / "setup.cfg").write_text("[inplace_lint]\nfix-style = inlined\n")
    with pytest.raises(config.ConfigError) as exc:
        config.load(tmp_path)
    assert str(exc.value) == f"{tmp_path / 'setup.cfg'}: fix-style: expected one of inline, runtime, got 'inlined'"


@pytest.mark.parametrize("text, message", [
    ("[inplace_lint]\nreport-in-no-grad = maybe\n", "report-in-no-grad: expected true or false, got 'maybe'"),
    ("[inplace_lint]\nignore = IPV9\n", "ignore: unknown code 'IPV9' (known: IPV001, IPV002, IPV003, IPV004, IPV005, IPV006)"),
    ("[inplace_lint]\nfix-styles = inline\n", "unknown key 'fix-styles' (known: "),
])
def test_bad_values_name_file_and_key(tmp_path, capsys, text, message):
    (tmp_path / ".flake8").write_text(text)
    (tmp_path / "a.py").write_text("x = 1\n")
    assert main(["check", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(f"inplace-lint: error: {tmp_path / '.flake8'}: {message}")


def test_no_grad_paths_match_the_path_as_typed_relative_to_the_root_or_the_working_folder(tmp_path, monkeypatch):
    import dataclasses

    from inplace_lint import config

    settings = dataclasses.replace(config.DEFAULT_SETTINGS, no_grad_paths=("srv/*",))
    (tmp_path / "srv").mkdir()
    target = tmp_path / "srv" / "sampler.py"
    monkeypatch.chdir(tmp_path)
    assert config.runs_without_grad(settings, "srv/sampler.py")
    assert config.runs_without_grad(settings, "./srv/sampler.py")  # flake8 passes paths as typed
    assert config.runs_without_grad(settings, str(target), root=tmp_path)
    assert not config.runs_without_grad(settings, "train/loss.py")
    assert not config.runs_without_grad(config.DEFAULT_SETTINGS, "srv/sampler.py")
