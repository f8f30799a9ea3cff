"""The README's install and usage snippets that a new user copies stay true (issue 11): the pre-commit
``repo: local`` form runs from a checkout, libcst's runner runs the codemod with ``--no-format``, and
the CPU build of torch has its install line."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
BAD = "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)\n"


def block(marker: str, language: str) -> str:
    match = re.search(re.escape(marker) + r"\s*```" + language + r"\n(.*?)```", README, re.S)
    assert match, f"no {language} block after {marker} in README.md"
    return match.group(1)


def shim_path(tmp_path) -> str:
    """PATH with an ``inplace-lint`` that runs this checkout (what `pip install -e .` would put there)."""
    (tmp_path / "bin").mkdir()
    shim = tmp_path / "bin" / "inplace-lint"
    shim.write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m inplace_lint \"$@\"\n")
    shim.chmod(0o755)
    return f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"


@pytest.mark.skipif(shutil.which("pre-commit") is None, reason="pre-commit is not installed")
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_pre_commit_local_repo_form_works_from_a_checkout(tmp_path):
    import yaml

    config = block("<!-- pre-commit-local -->", "yaml")
    assert [h["id"] for h in yaml.safe_load(config)["repos"][0]["hooks"]] == ["inplace-lint-fix", "inplace-lint"]
    repo = tmp_path / "user-repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".pre-commit-config.yaml").write_text(config)
    (repo / "bad.py").write_text(BAD)
    (repo / "good.py").write_text("def f(x, t):\n    return x / t\n")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    env = {**os.environ, "PATH": shim_path(tmp_path), "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}

    def hook(hook_id):
        proc = subprocess.run(["pre-commit", "run", hook_id, "--files", "bad.py", "good.py"], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=300)
        return proc.returncode, proc.stdout + proc.stderr

    rc, output = hook("inplace-lint")
    assert rc == 1, output
    assert [line for line in output.splitlines() if ": IPV" in line][0].startswith("bad.py:3:5: IPV001 ")
    rc, output = hook("inplace-lint-fix")
    assert rc == 1 and "files were modified by this hook" in output, output
    assert "x = x.clone().div_(t)" in (repo / "bad.py").read_text()
    assert hook("inplace-lint")[0] == 0


def test_libcst_runner_command_of_the_readme(tmp_path):
    [command] = re.findall(r"`(python -m libcst\.tool codemod [^`]*)`", README)
    assert "--no-format" in command  # without it libcst pipes the file through black
    argv = command.split()
    assert argv[-1] == "PATH"
    (tmp_path / "m.py").write_text(BAD + "    return x\n")
    proc = subprocess.run([sys.executable, *argv[1:-1], "m.py"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "PATH": "/nonexistent"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "    x = x.clone().div_(t)\n" in (tmp_path / "m.py").read_text()  # the default style, inline


def test_cpu_torch_install_is_documented():
    """The [test] extra pins torch==2.13.0; where the index serves CUDA wheels, the README says how to get
    the CPU build (and CI keeps the pin)."""
    assert "python -m pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in README
    assert '--extra-index-url https://download.pytorch.org/whl/cpu' in README
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert "torch==2.13.0" in cfg["options.extras_require"]["test"]


# --------------------------------------------------------------------------- the first screen (issue 18)

FINDING_LINE = re.compile(r"^\S+:\d+:\d+: ")


def first_screen_commands():
    """``[(command, stdout lines, stderr lines)]`` of the README's first-screen console block: a finding line
    is stdout, the summary lines stderr."""
    runs = []
    for line in block("<!-- first-screen-run -->", "console").splitlines():
        if line.startswith("$ "):
            runs.append((line[2:], [], []))
        else:
            runs[-1][1 if FINDING_LINE.match(line) else 2].append(line)
    return runs


def test_first_screen_is_the_seed_its_real_output_and_its_fix(tmp_path):
    """The README opens with the seed bug, the output of the two commands on it, and the file after the fix:
    run them and compare, line by line."""
    head = README[:README.index("## One engine, every surface")]
    assert head.count("\n") < 80, "the seed, its output and its fix belong on the first screen"
    (tmp_path / "train.py").write_text(block("<!-- first-screen-seed -->", "python"))
    env = {**os.environ, "PATH": shim_path(tmp_path)}
    runs = first_screen_commands()
    assert [command for command, _, _ in runs] == ["inplace-lint check train.py", "inplace-lint fix train.py"]
    for command, out, err in runs:
        proc = subprocess.run(command.split(), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert (proc.stdout.splitlines(), proc.stderr.splitlines()) == (out, err), command
    assert (tmp_path / "train.py").read_text() == block("<!-- first-screen-fixed -->", "python")


def test_first_screen_quick_start_is_install_and_the_two_commands():
    lines = [line.split("#")[0].strip() for line in block("<!-- first-screen-install -->", "bash").splitlines()]
    assert lines == ["python -m pip install -e .", "inplace-lint check .", "inplace-lint fix ."]


@pytest.mark.network
def test_first_screen_install_then_the_two_commands_in_a_fresh_virtualenv(tmp_path):
    """`python -m pip install -e .` exactly as written (in a fresh virtualenv that sees the system's packages, so
    pip only has to fetch the build backend), then the two commands on the seed."""
    import venv

    venv.create(tmp_path / "env", system_site_packages=True, with_pip=True)
    python = tmp_path / "env" / "bin" / "python"
    work = tmp_path / "work"
    work.mkdir()
    install = block("<!-- first-screen-install -->", "bash").splitlines()[0].split("#")[0].split()
    proc = subprocess.run([str(python), *install[1:-1], str(ROOT)], capture_output=True, text=True, timeout=600)
    if proc.returncode and any(s in proc.stdout + proc.stderr for s in (
            "Failed to establish a new connection", "No matching distribution", "Could not find a version")):
        pytest.skip("the package registry is unreachable: pip cannot fetch the build backend")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (work / "train.py").write_text(block("<!-- first-screen-seed -->", "python"))
    for command, out, err in first_screen_commands():
        argv = [str(tmp_path / "env" / "bin" / command.split()[0]), *command.split()[1:]]
        proc = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=300)
        assert (proc.stdout.splitlines(), proc.stderr.splitlines()) == (out, err), command
    assert (work / "train.py").read_text() == block("<!-- first-screen-fixed -->", "python")
