"""The flags a ruff user carries over (issue 18), each run side by side with ``ruff`` on the same kind of
input: our finding is the seed (``IPV001``, a safe fix), ruff's an unused import (``F401``, a safe fix)
or an unused local (``F841``, an unsafe fix). Each test asserts that the flag does what ruff's does:
the exit code, what goes to stdout and to stderr, what is written to the file."""
from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytest.importorskip("ruff", reason="ruff (the [test] extra) is needed to compare with")

SEED = "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)\n    return x\n"
UNUSED_IMPORT = "import os\n"
#: an unsafe fix each: a written parameter's view (ours), an unused local (ruff's F841)
UNSAFE = "def f(output, t):\n    x = output.logits\n    x.div_(t)\n    return x\n\n\ndef g():\n    y = 1\n"
ANSI = "\x1b["


def ours(*args, cwd, stdin: str = "", env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "inplace_lint", *args], input=stdin, capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, timeout=300)


def ruff(*args, cwd, stdin: str = "", env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], input=stdin, capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, **(env or {})}, timeout=300)


def our_check(*args, **kw):
    return ours("check", "-j", "1", "--no-cache", *args, **kw)


def ruff_check(*args, select="F401", **kw):
    """``ruff check`` with only ``select`` (no configuration file found above the test's folder is read)."""
    isolated = [] if "--config" in args else ["--isolated"]
    return ruff("check", "--no-cache", *isolated, "--select", select, *args, **kw)


@pytest.fixture
def both(tmp_path):
    """``ours/m.py`` (the seed) and ``theirs/m.py`` (an unused import), each in a folder of its own."""
    for name, text in (("ours", SEED), ("theirs", UNUSED_IMPORT + "\n\n" + SEED)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "m.py").write_text(text)
    return tmp_path / "ours", tmp_path / "theirs"


# --------------------------------------------------------------------------- fixing


def test_check_fix_fixes_reports_nothing_left_and_exits_zero(both, tmp_path):
    o, t = both
    mine, theirs = our_check("--fix", "m.py", cwd=o), ruff_check("--fix", "m.py", cwd=t)
    assert (mine.returncode, theirs.returncode) == (0, 0), mine.stderr
    assert mine.stdout == "" and "IPV001" not in mine.stderr
    assert (o / "m.py").read_text() != SEED and (t / "m.py").read_text() == "\n\n" + SEED
    # one engine: check --fix writes exactly what `inplace-lint fix` writes
    (tmp_path / "again").mkdir()
    (tmp_path / "again" / "m.py").write_text(SEED)
    assert ours("fix", "-j", "1", "--no-cache", "m.py", cwd=tmp_path / "again").returncode == 0
    assert (tmp_path / "again" / "m.py").read_text() == (o / "m.py").read_text()
    # and a second run has nothing to do
    assert our_check("--fix", "m.py", cwd=o).returncode == ruff_check("--fix", "m.py", cwd=t).returncode == 0


def test_check_fix_reports_what_is_left_where_it_now_is(tmp_path):
    """A finding left after --fix (unsafe, not applied) is reported at its line in the fixed file."""
    (tmp_path / "m.py").write_text(SEED + "\n\n" + UNSAFE)
    proc = our_check("--fix", "m.py", cwd=tmp_path)
    assert proc.returncode == 1
    text = (tmp_path / "m.py").read_text()
    [left] = proc.stdout.splitlines()
    line = int(left.split(":")[1])
    assert text.splitlines()[line - 1].strip() == "x.div_(t)" and left.endswith("[fix: unsafe]")


def test_unsafe_fixes_only_with_the_flag(tmp_path):
    for name in ("o", "t"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "m.py").write_text(UNSAFE)
    o, t = tmp_path / "o", tmp_path / "t"
    mine, theirs = our_check("--fix", "m.py", cwd=o), ruff_check("--fix", "m.py", select="F841", cwd=t)
    assert (mine.returncode, theirs.returncode) == (1, 1)
    assert (o / "m.py").read_text() == UNSAFE and (t / "m.py").read_text() == UNSAFE
    mine = our_check("--fix", "--unsafe-fixes", "m.py", cwd=o)
    theirs = ruff_check("--fix", "--unsafe-fixes", "m.py", select="F841", cwd=t)
    assert (mine.returncode, theirs.returncode) == (0, 0), mine.stdout + mine.stderr
    assert (o / "m.py").read_text() != UNSAFE and (t / "m.py").read_text() != UNSAFE


def test_show_fixes_lists_the_fixes_on_stdout_as_ruff_does(both):
    o, t = both
    mine, theirs = our_check("--fix", "--show-fixes", "m.py", cwd=o), ruff_check("--fix", "--show-fixes", "m.py", cwd=t)
    assert "\nFixed 1 error:\n- m.py:\n    1 × F401 (unused-import)\n" in theirs.stdout
    assert "\nFixed 1 finding:\n- m.py:\n    1 × IPV001 (inplace-on-model-output)\n" in mine.stdout
    (o / "m.py").write_text(SEED)
    proc = ours("fix", "-j", "1", "--show-fixes", "m.py", cwd=o)
    assert "\nFixed 1 finding:\n- m.py:\n    1 × IPV001 (inplace-on-model-output)\n" in proc.stdout


@pytest.mark.parametrize("command", [("check",), ("fix",)])
def test_diff_prints_only_the_patch_and_writes_nothing(both, command):
    o, t = both
    (o / "m.py").write_text(SEED + "\n\n" + UNSAFE)  # one fix and one finding left (on stderr)
    mine = ours(*command, "-j", "1", "--no-cache", "--diff", "m.py", cwd=o)
    theirs = ruff_check("--diff", "m.py", cwd=t)
    assert (mine.returncode, theirs.returncode) == (1, 1)
    assert mine.stdout.startswith("--- m.py\n+++ m.py\n@@ ") and theirs.stdout.startswith("--- m.py\n+++ m.py\n@@ ")
    assert all(line[:1] in "+- @" for line in mine.stdout.splitlines()), mine.stdout
    assert "IPV001" not in mine.stdout and "m.py:3:5: IPV001" not in mine.stderr
    assert re.search(r"^m\.py:\d+:5: IPV001 .*\[unsafe fix not applied", mine.stderr, re.M), mine.stderr
    assert (o / "m.py").read_text() == SEED + "\n\n" + UNSAFE and (t / "m.py").read_text().startswith("import os")


def test_exit_non_zero_on_fix(both):
    o, t = both
    assert our_check("--fix", "--exit-non-zero-on-fix", "m.py", cwd=o).returncode == 1
    assert ruff_check("--fix", "--exit-non-zero-on-fix", "m.py", cwd=t).returncode == 1
    # nothing left to fix: 0 for both
    assert our_check("--fix", "--exit-non-zero-on-fix", "m.py", cwd=o).returncode == 0
    assert ruff_check("--fix", "--exit-non-zero-on-fix", "m.py", cwd=t).returncode == 0
    (o / "m.py").write_text(SEED)
    assert ours("fix", "-j", "1", "--exit-non-zero-on-fix", "m.py", cwd=o).returncode == 1


def test_fix_from_stdin_with_stdin_filename_alone(tmp_path):
    """ruff check --fix --stdin-filename NAME (no '-'): the fixed text on stdout; ours the same, in check and fix."""
    theirs = ruff_check("--fix", "--stdin-filename", "m.py", cwd=tmp_path, stdin=UNUSED_IMPORT + SEED)
    assert theirs.stdout == SEED and theirs.returncode == 0
    fixed = ours("fix", "-j", "1", "--stdin-filename", "m.py", cwd=tmp_path, stdin=SEED)
    assert fixed.returncode == 0 and fixed.stdout != SEED and "x.div_(t)" not in fixed.stdout
    assert our_check("--fix", "--stdin-filename", "m.py", cwd=tmp_path, stdin=SEED).stdout == fixed.stdout


def test_fix_defaults_to_the_working_folder(both):
    o, t = both
    assert ours("fix", "-j", "1", "--no-cache", cwd=o).returncode == 0
    assert "x.div_(t)" not in (o / "m.py").read_text()


# --------------------------------------------------------------------------- output and exit codes


def test_output_format_takes_ruffs_names(both):
    o, t = both
    assert re.fullmatch(r"m\.py:1:8: F401 .*\n", ruff_check("--output-format", "concise", "-q", "m.py", cwd=t).stdout)
    concise = our_check("--output-format", "concise", "-q", "m.py", cwd=o)
    assert concise.stdout == our_check("--format", "text", "-q", "m.py", cwd=o).stdout
    assert re.fullmatch(r"m\.py:3:5: IPV001 .*\n", concise.stdout)
    for name in ("json", "sarif", "github", "full"):
        assert our_check("--output-format", name, "m.py", cwd=o).stdout == our_check("--format", name, "m.py", cwd=o).stdout
    mine = json.loads(our_check("--output-format", "json", "m.py", cwd=o).stdout)
    theirs = json.loads(ruff_check("--output-format", "json", "m.py", cwd=t).stdout)
    core = {"code", "message", "location", "end_location", "filename", "fix", "url"}
    assert core <= set(theirs[0]) and core <= set(mine[0])


def test_exit_zero(both):
    o, t = both
    for flag in ("--exit-zero", "-e"):
        mine, theirs = our_check(flag, "m.py", cwd=o), ruff_check(flag, "m.py", cwd=t)
        assert (mine.returncode, theirs.returncode) == (0, 0)
        assert "IPV001" in mine.stdout and "F401" in theirs.stdout
    # a usage error still exits 2
    assert our_check("--exit-zero", "--select", "XYZ1", "m.py", cwd=o).returncode == 2
    assert ruff_check("--exit-zero", "--output-format", "nope", "m.py", cwd=t).returncode == 2


@pytest.mark.parametrize("flag, env, colored", [
    ("always", {}, True), ("never", {}, False), ("auto", {}, False),
    ("auto", {"FORCE_COLOR": "1"}, True), ("always", {"NO_COLOR": "1"}, True), ("never", {"FORCE_COLOR": "1"}, False),
])
def test_color(both, flag, env, colored):
    o, t = both
    env = {"NO_COLOR": "", "FORCE_COLOR": "", **env}
    mine = our_check("--color", flag, "m.py", cwd=o, env=env)
    theirs = ruff_check("--color", flag, "--output-format", "concise", "m.py", cwd=t, env=env)
    assert (ANSI in theirs.stdout, ANSI in mine.stdout) == (colored, colored)
    if colored:
        assert re.sub(r"\x1b\[[0-9;]*m", "", mine.stdout) == our_check("m.py", cwd=o).stdout


def test_no_color_environment_wins_over_a_terminal_guess(both):
    o, t = both
    env = {"NO_COLOR": "1", "FORCE_COLOR": "1"}
    assert ANSI not in our_check("m.py", cwd=o, env=env).stdout
    assert ANSI not in ruff_check("--output-format", "concise", "m.py", cwd=t, env=env).stdout


# --------------------------------------------------------------------------- configuration and files


def test_config_path(both, tmp_path):
    o, t = both
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "ruff.toml").write_text('[lint]\nselect = ["F401"]\nignore = ["F401"]\n')
    (tmp_path / "conf" / "inplace-lint.toml").write_text('ignore = ["IPV001"]\n')
    mine = our_check("--config", str(tmp_path / "conf" / "inplace-lint.toml"), "m.py", cwd=o)
    theirs = ruff("check", "--no-cache", "--config", str(tmp_path / "conf" / "ruff.toml"), "m.py", cwd=t)
    assert (mine.returncode, theirs.returncode) == (0, 0), mine.stderr
    (tmp_path / "conf" / "setup.cfg").write_text("[inplace-lint]\nignore = IPV001\n")
    assert our_check("--config", str(tmp_path / "conf" / "setup.cfg"), "m.py", cwd=o).returncode == 0
    # a file that is not there: an error (exit 2) for both
    assert our_check("--config", "nope.toml", "m.py", cwd=o).returncode == 2
    assert ruff_check("--config", "nope.toml", "m.py", cwd=t).returncode == 2


def test_show_settings_prints_the_settings_and_where_each_came_from(both):
    o, t = both
    (o / "pyproject.toml").write_text('[tool.inplace-lint]\nextend-model-output-names = ["policy_out"]\n')
    (o / "setup.cfg").write_text("[flake8]\nipv-report-in-no-grad = yes\n")
    theirs = ruff_check("--show-settings", "m.py", cwd=t)
    mine = our_check("--show-settings", "m.py", cwd=o)
    assert (mine.returncode, theirs.returncode) == (0, 0)
    assert theirs.stdout.startswith(f'Resolved settings for: "{t / "m.py"}"\n')
    lines = mine.stdout.splitlines()
    assert lines[0] == "Resolved settings for: m.py"
    assert lines[1] == f"Settings path: {o / 'pyproject.toml'}"
    assert "m.py:3:5:" not in mine.stdout and "m.py:1:8:" not in theirs.stdout  # settings, no findings
    names = next(line for line in lines if line.startswith("model-output-names = "))
    assert "policy_out" in names and names.endswith(f"  # {o / 'pyproject.toml'} [tool.inplace-lint]")
    assert f"report-in-no-grad = true  # {o / 'setup.cfg'} [flake8]" in lines
    assert "fix-style = inline  # default" in lines


def test_show_files_lists_the_same_files_as_ruff(tmp_path):
    for rel in ("a.py", "pkg/b.py", "pkg/c.pyi", "notes.txt", ".venv/lib/d.py", ".git/f.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    mine, theirs = our_check("--show-files", ".", cwd=tmp_path), ruff_check("--show-files", ".", cwd=tmp_path)
    assert (mine.returncode, theirs.returncode) == (0, 0)
    assert mine.stdout.splitlines() == theirs.stdout.splitlines() == [
        str(tmp_path / "a.py"), str(tmp_path / "pkg" / "b.py"), str(tmp_path / "pkg" / "c.pyi")]


def test_force_exclude_applies_exclusions_to_named_files(tmp_path):
    for rel in ("gen/m.py", ".venv/m.py", "src/m.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(UNUSED_IMPORT + SEED)
    named = ["gen/m.py", ".venv/m.py", "src/m.py"]

    def checked(proc):
        return sorted({line.split(":")[0] for line in proc.stdout.splitlines() if ": " in line})

    # (ruff's --exclude replaces its default exclusions, .venv among them; --extend-exclude adds to them)
    assert checked(our_check("--extend-exclude", "gen", "-q", *named, cwd=tmp_path)) == sorted(named)
    assert checked(ruff_check("--extend-exclude", "gen", "-q", "--output-format", "concise", *named,
                              cwd=tmp_path)) == sorted(named)
    forced = ("--force-exclude", "--extend-exclude", "gen", "-q")
    assert checked(our_check(*forced, *named, cwd=tmp_path)) == ["src/m.py"]
    assert checked(ruff_check(*forced, "--output-format", "concise", *named, cwd=tmp_path)) == ["src/m.py"]


def test_per_file_ignores_flag(both):
    o, t = both
    mine = our_check("--per-file-ignores", "m.py:IPV001", "m.py", cwd=o)
    theirs = ruff_check("--per-file-ignores", "m.py:F401", "m.py", cwd=t)
    assert (mine.returncode, theirs.returncode) == (0, 0)
    (o / "sub").mkdir()
    (o / "sub" / "n.py").write_text(SEED)
    proc = our_check("--per-file-ignores", "sub/*:IPV001", "-q", ".", cwd=o)
    assert [line.split(":")[0] for line in proc.stdout.splitlines()] == ["./m.py"]
    # it replaces the config file's per-file-ignores, as in ruff
    (o / "setup.cfg").write_text("[inplace-lint]\nper-file-ignores = m.py:IPV001\n")
    assert our_check("-q", ".", cwd=o).stdout.splitlines()[0].startswith("./sub/n.py:")
    proc = our_check("--per-file-ignores", "sub/*:IPV001", "-q", ".", cwd=o)
    assert [line.split(":")[0] for line in proc.stdout.splitlines()] == ["./m.py"]


def test_jobs_auto(both):
    o, _ = both
    auto = ours("check", "--no-cache", "-j", "auto", "m.py", cwd=o)
    assert auto.returncode == 1 and auto.stdout == our_check("m.py", cwd=o).stdout
    bad = our_check("-j", "many", "m.py", cwd=o)
    assert bad.returncode == 2 and "expected a number of processes or 'auto', got 'many'" in bad.stderr


def test_select_all(both):
    o, t = both
    mine, theirs = our_check("--select", "ALL", "m.py", cwd=o), ruff_check("--select", "ALL", "m.py", cwd=t)
    assert (mine.returncode, theirs.returncode) == (1, 1)
    assert mine.stdout == our_check("m.py", cwd=o).stdout
    (o / "setup.cfg").write_text("[inplace-lint]\nselect = ALL\n")
    assert our_check("m.py", cwd=o).returncode == 1


def test_add_noqa_keeps_existing_codes_and_is_idempotent(tmp_path):
    for name in ("o", "t"):
        (tmp_path / name).mkdir()
    o, t = tmp_path / "o", tmp_path / "t"
    (o / "m.py").write_text("def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n"
                            "    x.div_(t)  # noqa: E501 -- long line\n    y = model(h).logits\n    y.mul_(t)\n")
    (t / "m.py").write_text("import os  # noqa: E501 -- long line\nimport re\n")
    mine, theirs = our_check("--add-noqa", "m.py", cwd=o), ruff_check("--add-noqa", "m.py", cwd=t)
    assert (mine.returncode, theirs.returncode) == (0, 0)
    assert (mine.stderr.strip(), theirs.stderr.strip()) == ("Added 2 noqa directives.", "Added 2 noqa directives.")
    # the codes added the same way (ruff drops the reason after the codes; we keep it)
    assert (t / "m.py").read_text() == "import os  # noqa: E501, F401\nimport re  # noqa: F401\n"
    assert (o / "m.py").read_text() == (
        "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n"
        "    x.div_(t)  # noqa: E501, IPV001 -- long line\n    y = model(h).logits\n    y.mul_(t)  # noqa: IPV001\n")
    before = (o / "m.py").read_text(), (t / "m.py").read_text()
    mine, theirs = our_check("--add-noqa", "m.py", cwd=o), ruff_check("--add-noqa", "m.py", cwd=t)
    assert (mine.stderr, theirs.stderr) == ("", "")
    assert ((o / "m.py").read_text(), (t / "m.py").read_text()) == before
    assert our_check("m.py", cwd=o).returncode == 0  # and flake8's noqa reading accepts what was added


def test_add_noqa_in_a_multi_line_string_goes_after_it(tmp_path):
    from inplace_lint.source.noqa import add_noqa

    class F:
        code, line = "IPV001", 2

    source = 'def f(x):\n    x.div_(len("""a\nb"""))\n'
    assert add_noqa(source, [F()]) == ('def f(x):\n    x.div_(len("""a\nb"""))  # noqa: IPV001\n', 1)
    assert add_noqa("x = 1  # noqa\n", [type("G", (), {"code": "IPV001", "line": 1})()]) == ("x = 1  # noqa\n", 0)


def test_rule_by_name_or_code(tmp_path):
    by_name, by_code = ours("rule", "inplace-on-model-output", cwd=tmp_path), ours("rule", "IPV001", cwd=tmp_path)
    assert by_name.returncode == 0 and by_name.stdout == by_code.stdout
    assert ruff("rule", "unused-import", cwd=tmp_path).stdout == ruff("rule", "F401", cwd=tmp_path).stdout
    typo = ours("rule", "inplace-on-model-outputs", cwd=tmp_path)
    assert typo.returncode == 2 and "did you mean 'inplace-on-model-output'?" in typo.stderr


@pytest.mark.parametrize("command, wrong, right", [
    ("check", "--fixx", "--fix"), ("check", "--output-fromat", "--output-format"), ("fix", "--unsafe-fixs", "--unsafe-fixes"),
])
def test_unknown_flag_shows_the_commands_usage_and_the_closest_spelling(tmp_path, command, wrong, right):
    mine = ours(command, wrong, ".", cwd=tmp_path)
    assert mine.returncode == 2
    assert mine.stderr.startswith(f"usage: inplace-lint {command} ")
    assert f"{wrong}: did you mean {right}?" in mine.stderr
    if command == "check":
        theirs = ruff("check", wrong, ".", cwd=tmp_path)
        assert theirs.returncode == 2 and f"a similar argument exists: '{right}'" in theirs.stderr


def test_unknown_flag_of_the_other_command(tmp_path):
    proc = ours("check", "--memory-awarex", cwd=tmp_path)
    assert proc.returncode == 2 and "--memory-awarex: did you mean --memory-aware?" in proc.stderr
    proc = ours("fix", "--statistics", cwd=tmp_path)
    assert proc.returncode == 2 and "--statistics is an option of 'inplace-lint check'" in proc.stderr


def test_a_folder_without_python_files_gets_a_one_line_warning(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "x.txt").write_text("hi\n")
    theirs = ruff_check("docs", cwd=tmp_path)
    assert theirs.returncode == 0 and "No Python files found" in theirs.stderr
    for command in (("check",), ("fix",)):
        mine = ours(*command, "-q", "-j", "1", "docs", cwd=tmp_path)
        assert mine.returncode == 0 and mine.stderr == "inplace-lint: warning: docs: no Python files found\n"


# --------------------------------------------------------------------------- pre-commit


@pytest.mark.skipif(__import__("shutil").which("git") is None, reason="git is not installed")
def test_pre_commit_config_copied_from_a_ruff_setup_works_unchanged(tmp_path):
    """A ruff hook's ``args: [--fix, --force-exclude]`` on this project's check hook (its definition taken from
    .pre-commit-hooks.yaml, run from this checkout as a ``repo: local`` hook so no download is needed), under
    real pre-commit: the staged seed is fixed (inline style: the hook's rewrite needs only torch), an excluded
    file named by pre-commit is left alone, the hook fails because files changed, then passes."""
    yaml = pytest.importorskip("yaml")
    if __import__("shutil").which("pre-commit") is None:
        pytest.skip("pre-commit is not installed")
    [hook] = [h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text()) if h["id"] == "inplace-lint"]
    ruff_args = yaml.safe_load("args: [--fix, --force-exclude]")["args"]  # as in a ruff-pre-commit config
    hook = {**hook, "language": "system", "args": ruff_args}
    repo = tmp_path / "user-repo"
    (repo / "generated").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": [hook]}]}))
    (repo / "pyproject.toml").write_text('[tool.inplace-lint]\nexclude = ["generated"]\n')
    (repo / "bad.py").write_text(SEED)
    (repo / "generated" / "g.py").write_text(SEED)
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    (tmp_path / "bin").mkdir()
    shim = tmp_path / "bin" / "inplace-lint"
    shim.write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m inplace_lint \"$@\"\n")
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}

    def run_hook():
        proc = subprocess.run(["pre-commit", "run", "inplace-lint", "--files", "bad.py", "generated/g.py"], cwd=repo,
                              env=env, capture_output=True, text=True, timeout=300)
        return proc.returncode, proc.stdout + proc.stderr

    rc, output = run_hook()
    assert rc == 1 and "files were modified by this hook" in output, output
    assert "x = x.clone().div_(t)" in (repo / "bad.py").read_text()
    assert "inplace_lint" not in (repo / "bad.py").read_text()
    assert (repo / "generated" / "g.py").read_text() == SEED
    assert run_hook()[0] == 0


def test_a_commands_flag_before_the_command_or_a_misspelled_command_gets_a_hint(tmp_path):
    proc = ours("--fix", ".", cwd=tmp_path)
    assert proc.returncode == 2 and "--fix is an option of a command: 'inplace-lint check --fix ...'" in proc.stderr
    proc = ours("chek", ".", cwd=tmp_path)
    assert proc.returncode == 2 and "did you mean 'inplace-lint check'?" in proc.stderr
    proc = ours("check", "--format", "nope", ".", cwd=tmp_path)  # a bad value: the command's own usage, as before
    assert proc.returncode == 2 and proc.stderr.startswith("usage: inplace-lint check ")


def test_add_noqa_after_a_line_continuation_goes_where_the_line_ends(tmp_path):
    (tmp_path / "m.py").write_text("def f(model, h, t):\n    x = model(h).logits\n    y = x.div_(t) + \\\n        1\n"
                                   "    return y\n")
    assert our_check("--add-noqa", "m.py", cwd=tmp_path).returncode == 0
    assert (tmp_path / "m.py").read_text() == (
        "def f(model, h, t):\n    x = model(h).logits\n    y = x.div_(t) + \\\n        1  # noqa: IPV001\n    return y\n")
    assert our_check("m.py", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("ours_table, ruff_table, reported", [
    ('ignore = ["IPV001"]', 'select = ["F401"]\nignore = ["F401"]', False),
    ('extend-ignore = ["IPV001"]', 'select = ["F401"]\nextend-ignore = ["F401"]', False),
    ('select = ["ALL"]', 'select = ["ALL"]', True),
    ('select = ["ALL"]\nignore = ["IPV"]', 'select = ["F"]\nignore = ["F401"]', False),
    ('[tool.inplace-lint.per-file-ignores]\n"m.py" = ["IPV001"]',
     'select = ["F401"]\n[tool.ruff.lint.per-file-ignores]\n"m.py" = ["F401"]', False),
    ('[tool.inplace-lint.per-file-ignores]\n"other.py" = ["IPV001"]',
     'select = ["F401"]\n[tool.ruff.lint.per-file-ignores]\n"other.py" = ["F401"]', True),
])
def test_pyproject_forms_as_ruff_reads_its_own(both, ours_table, ruff_table, reported):
    """The pyproject.toml spellings a ruff user writes in [tool.ruff.lint], in [tool.inplace-lint]."""
    o, t = both
    (o / "pyproject.toml").write_text("[tool.inplace-lint]\n" + ours_table + "\n")
    (t / "pyproject.toml").write_text("[tool.ruff.lint]\n" + ruff_table + "\n")
    mine = ours("check", "-j", "1", "--no-cache", "-q", "m.py", cwd=o)
    theirs = ruff("check", "--no-cache", "-q", "m.py", cwd=t)
    assert (mine.returncode, theirs.returncode) == (int(reported), int(reported)), mine.stderr + theirs.stderr
    assert mine.stderr == ""  # no warning: every key is known
