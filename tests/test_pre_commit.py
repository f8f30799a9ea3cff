"""The pre-commit hooks, for real: ``pre-commit try-repo <this checkout>`` builds the hook's
environment by pip-installing this repository (HEAD plus uncommitted changes) and runs it."""
from __future__ import annotations

import configparser
import os
import shutil
import subprocess

import pytest

yaml = pytest.importorskip("yaml")  # comes with pre-commit

pytestmark = [
    pytest.mark.network,  # pip fetches flake8/libcst/tqdm for the hook environment
    pytest.mark.skipif(shutil.which("pre-commit") is None, reason="pre-commit is not installed"),
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]
BAD = "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)\n"
INSTALL_FAILURES = ("Could not find a version", "Failed to establish a new connection", "No matching distribution")


def test_hooks_file(root):
    hooks = {h["id"]: h for h in yaml.safe_load((root / ".pre-commit-hooks.yaml").read_text())}
    assert hooks["inplace-lint"]["entry"] == "inplace-lint check"  # args: [--fix] writes the configured style, as the fix hook
    assert hooks["inplace-lint"]["language"] == "python"
    assert hooks["inplace-lint"]["types"] == ["python"]
    assert hooks["inplace-lint-fix"]["entry"] == "inplace-lint fix"  # the configured fix-style, else inline
    assert hooks["inplace-lint-fix"]["language"] == "python"


def test_try_repo_fix_hook_rewrites_inline(root, tmp_path):
    repo, rc, output = try_repo(root, tmp_path, "inplace-lint-fix")
    assert rc == 1, output  # pre-commit fails a hook that modified files
    assert "- hook id: inplace-lint-fix\n- files were modified by this hook\n" in output
    assert (repo / "bad.py").read_text() == (  # no torch floor stated: the import is guarded for torch < 2.5
        "try:\n    from torch.distributed.tensor import DTensor\n"
        "except ImportError:  # torch < 2.5\n    from torch.distributed._tensor import DTensor\n\n"
        "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    if isinstance(x, DTensor) and not isinstance(t, DTensor) and getattr(t, \"ndim\", 0) > 0:\n"
        "        x = x.full_tensor()\n    x = x.clone().div_(t)\n")
    assert (repo / "good.py").read_text() == "def f(x, t):\n    return x / t\n"


def try_repo(root, tmp_path, hook: str):
    """``pre-commit try-repo <root> <hook> --files bad.py good.py`` in a fresh user repository."""
    if subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True).returncode:
        pytest.skip(f"{root} is not a git checkout")
    repo = tmp_path / "user-repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "bad.py").write_text(BAD)
    (repo / "good.py").write_text("def f(x, t):\n    return x / t\n")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    proc = subprocess.run(
        ["pre-commit", "try-repo", str(root), hook, "--files", "bad.py", "good.py"],
        cwd=repo, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")},
    )
    output = proc.stdout + proc.stderr
    if proc.returncode == 3 and any(s in output for s in INSTALL_FAILURES):
        pytest.skip("the package registry is unreachable: cannot build the hook environment")
    return repo, proc.returncode, output


def test_try_repo_check_hook_fails_on_a_finding(root, tmp_path):
    _, rc, output = try_repo(root, tmp_path, "inplace-lint")
    assert rc == 1, output
    assert "inplace-lint............" in output and "Failed" in output
    assert "- hook id: inplace-lint\n- exit code: 1\n" in output
    findings = [line for line in output.splitlines() if ": IPV" in line]
    assert len(findings) == 1 and findings[0].startswith("bad.py:3:5: IPV001 `div_` writes in place to `x`")


def test_hook_environment_does_not_pull_torch(root):
    """The hook environment is ``pip install <repo>``: only install_requires, torch is an extra."""
    cfg = configparser.ConfigParser()
    cfg.read(root / "setup.cfg")
    requires = [r.strip() for r in cfg["options"]["install_requires"].splitlines() if r.strip()]
    assert requires == ["flake8>=6", "libcst>=1.1", "tqdm>=4", 'tomli>=1.1; python_version < "3.11"']
    assert "torch" in cfg["options.extras_require"]["runtime"]
