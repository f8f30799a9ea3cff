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
    ("tests/*:E501", "per-file-ignores: unknown code 'E501' (known: IPV001, IPV002, IPV003, IPV004, IPV005, IPV006, IPV007)"),
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
    ("[inplace_lint]\nignore = IPV9\n", "ignore: unknown code 'IPV9' (known: IPV001, IPV002, IPV003, IPV004, IPV005, IPV006, IPV007)"),
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


# --------------------------------------------------------------------------- one config story (issue 18)

SEED = "def f(policy_out, model, h, t):\n    policy_out.scores.div_(t)\n    x = model(h).logits\n    x.div_(t)\n"


def codes_of(capsys):
    return [line.split(": ", 1)[1].split()[0] for line in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize("name, text", [
    ("pyproject.toml", '[tool.inplace-lint]\nignore = ["IPV001"]\n'),
    ("setup.cfg", "[inplace-lint]\nignore = IPV001\n"),
    ("setup.cfg", "[inplace_lint]\nignore = IPV001\n"),
    ("tox.ini", "[inplace-lint]\nignore = IPV001\n"),
    (".flake8", "[inplace_lint]\nignore = IPV001\n"),
])
def test_every_documented_section_is_read(tmp_path, capsys, name, text):
    (tmp_path / "m.py").write_text(SEED)
    (tmp_path / name).write_text(text)
    assert main(["check", "-q", "-j", "1", str(tmp_path)]) == 0, capsys.readouterr()


def test_flake8_ipv_options_are_read_by_check_and_flake8_alike(tmp_path, capsys, monkeypatch):
    """``[flake8] ipv-extend-model-output-names = policy_out``: flake8 and check report the same."""
    import subprocess
    import sys

    (tmp_path / "m.py").write_text(SEED)
    (tmp_path / "setup.cfg").write_text("[flake8]\nipv-extend-model-output-names = policy_out\n"
                                        "ipv-extend-model-output-fields = scores\n")
    monkeypatch.chdir(tmp_path)
    assert main(["check", "-q", "-j", "1", "m.py"]) == 1
    ours = capsys.readouterr().out.splitlines()
    proc = subprocess.run([sys.executable, "-m", "flake8", "--select=IPV", "m.py"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.stdout.splitlines() == [line.split(" [fix:")[0] for line in ours]
    assert [line.split(":")[1] for line in ours] == ["2", "4"]


def test_precedence_pyproject_over_setup_cfg_over_flake8_section(tmp_path, capsys):
    (tmp_path / "m.py").write_text(SEED)
    (tmp_path / "setup.cfg").write_text("[flake8]\nipv-report-in-no-grad = no\nipv-extend-model-output-names = a\n"
                                        "[inplace-lint]\nfix-style = inline\nextend-model-output-names = policy_out\n"
                                        "ignore = IPV004\n")
    (tmp_path / "pyproject.toml").write_text('[tool.inplace-lint]\nfix-style = "runtime"\n')
    loaded = config.load_config(tmp_path)
    assert loaded.cli["fix-style"] == "runtime" and loaded.cli["ignore"] == ["IPV004"]
    assert {"a", "policy_out"} <= loaded.settings.model_output_names  # extend- adds to the lower form's
    assert str(loaded.origins["fix-style"]) == f"{tmp_path / 'pyproject.toml'} [tool.inplace-lint]"
    assert str(loaded.origins["ignore"]) == f"{tmp_path / 'setup.cfg'} [inplace-lint]"
    assert str(loaded.origins["report-in-no-grad"]) == f"{tmp_path / 'setup.cfg'} [flake8]"
    assert loaded.path == tmp_path / "pyproject.toml"
    # a nearer folder's config is the whole story (no merging across folders)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "tox.ini").write_text("[inplace-lint]\nignore = IPV001\n")
    assert config.load_config(tmp_path / "sub").cli == {"ignore": ["IPV001"]}


@pytest.mark.parametrize("name, text, warning", [
    ("pyproject.toml", '[tool.inplace_lint]\nignore = ["IPV001"]\n',
     "pyproject.toml: table [tool.inplace_lint] is not read; did you mean [tool.inplace-lint]?"),
    ("pyproject.toml", '[tool.inplacelint]\nignore = ["IPV001"]\n',
     "pyproject.toml: table [tool.inplacelint] is not read; did you mean [tool.inplace-lint]?"),
    ("setup.cfg", "[tool:inplace_lint]\nignore = IPV001\n",
     "setup.cfg: section [tool:inplace_lint] is not read; did you mean [inplace-lint]?"),
    ("setup.cfg", "[inplace-lint]\nignroe = IPV001\n", "setup.cfg: unknown key 'ignroe' ignored (did you mean 'ignore'?)"),
    ("setup.cfg", "[flake8]\nipv-ignore = IPV001\n",
     "setup.cfg: [flake8] ipv-ignore is not an option of the flake8 plugin; ignored"),
])
def test_near_miss_tables_and_unknown_keys_warn(tmp_path, capsys, name, text, warning):
    (tmp_path / "m.py").write_text(SEED)
    (tmp_path / name).write_text(text)
    assert main(["check", "-q", "-j", "1", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"inplace-lint: warning: {tmp_path / warning.split(':')[0]}:{warning.split(':', 1)[1]}"), err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("value", ["IPV001 IPV004", "IPV001, IPV004", "IPV001,IPV004", "\n    IPV001\n    IPV004"])
def test_lists_split_at_commas_or_whitespace_as_flake8(tmp_path, capsys, value):
    (tmp_path / "m.py").write_text(SEED + "    x.expand(2, 3).mul_(t)\n")
    (tmp_path / "setup.cfg").write_text(f"[inplace-lint]\nignore = {value}\n")
    assert main(["check", "-q", "-j", "1", str(tmp_path)]) == 0


def test_extend_ignore_and_extend_select_in_config(tmp_path, capsys):
    (tmp_path / "m.py").write_text(SEED + "    x.expand(2, 3).mul_(t)\n")
    (tmp_path / "setup.cfg").write_text("[inplace-lint]\nextend-ignore = IPV004\n")
    assert main(["check", "-q", "-j", "1", str(tmp_path)]) == 1
    assert codes_of(capsys) == ["IPV001"]
    (tmp_path / "setup.cfg").write_text("[inplace-lint]\nselect = IPV001\nextend-select = IPV004\n")
    assert main(["check", "-q", "-j", "1", str(tmp_path)]) == 1
    assert codes_of(capsys) == ["IPV001", "IPV004"]


def test_extend_model_output_names_means_fields_of_that_name(tmp_path, capsys):
    """What the README says: ``extend-model-output-names = policy_out`` makes ``policy_out.<field>`` (a field in
    model-output-fields) a model output; ``policy_out`` itself is the object, not a tensor; ``scores`` needs
    ``extend-model-output-fields``; items need ``model-output-params``."""
    (tmp_path / "m.py").write_text("def f(policy_out, t):\n    policy_out.div_(t)\n    policy_out.hidden_states.div_(t)\n"
                                   "    policy_out.scores.div_(t)\n    policy_out[0].div_(t)\n")

    def lines(cfg):
        (tmp_path / "setup.cfg").write_text("[inplace-lint]\n" + cfg)
        main(["check", "-q", "-j", "1", str(tmp_path)])
        return [line.split(":")[1] for line in capsys.readouterr().out.splitlines()]

    assert lines("") == []
    assert lines("extend-model-output-names = policy_out\n") == ["3"]
    assert lines("extend-model-output-names = policy_out\nextend-model-output-fields = scores\n") == ["3", "4"]
    assert lines("model-output-params = policy_out\n") == ["3", "5"]


def test_flake8_follows_the_same_precedence_as_check(tmp_path, capsys, monkeypatch):
    """A key set in both [inplace-lint] and [flake8] ipv-*: the [inplace-lint] value wins for check and flake8."""
    import subprocess
    import sys

    (tmp_path / "m.py").write_text("def f(model, h, t):\n    x = model(h).logits\n    x.div_(t)\n")
    (tmp_path / "setup.cfg").write_text("[flake8]\nipv-model-call-patterns = nothing_matches\n"
                                        "[inplace-lint]\nmodel-call-patterns = model\n")
    monkeypatch.chdir(tmp_path)
    assert main(["check", "-q", "-j", "1", "m.py"]) == 1
    assert capsys.readouterr().out.startswith("m.py:3:5: IPV001 ")
    proc = subprocess.run([sys.executable, "-m", "flake8", "--select=IPV", "m.py"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.stdout.startswith("m.py:3:5: IPV001 "), proc.stdout + proc.stderr
    # flake8's own command line still applies on top
    proc = subprocess.run([sys.executable, "-m", "flake8", "--select=IPV", "--ipv-model-call-patterns=other", "m.py"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.stdout == ""


def test_every_surface_applies_extend_keys_and_select_all(tmp_path):
    """check, the language server and libcst's runner select with one function (config.selection)."""
    (tmp_path / "setup.cfg").write_text("[inplace-lint]\nselect = ALL\nextend-ignore = IPV004\n")
    assert config.selection(config.load_config(tmp_path).cli) == ([], ["IPV004"])
    opts = config.FileOptions.for_path(str(tmp_path / "m.py"))  # what the server asks for a document
    assert (list(opts.select), list(opts.ignore)) == ([], ["IPV004"])
    (tmp_path / "setup.cfg").write_text("[inplace-lint]\nselect = IPV001\nextend-select = IPV004\n")
    opts = config.FileOptions.for_path(str(tmp_path / "m.py"))
    assert (list(opts.select), list(opts.ignore)) == (["IPV001", "IPV004"], [])
