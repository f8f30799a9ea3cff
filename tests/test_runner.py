"""Fork-wide ``check``: the shared runner (jobs, crashes, order, progress) and git-aware discovery."""
from __future__ import annotations

import io
import os
import shutil
import subprocess

import pytest

from inplace_lint import pipeline as checker
from inplace_lint.adapters.cli import main
from inplace_lint.source.files import iter_python_files
from inplace_lint.adapters.parallel import Outcome, run_files

BAD = "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)\n"
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def explode_on_b(path: str) -> str:
    """A worker for the runner tests (module level: picklable for the process pool)."""
    if os.path.basename(path).startswith("b"):
        raise ValueError(f"boom in {os.path.basename(path)}")
    return os.path.basename(path).upper()


@pytest.mark.parametrize("jobs", [1, 3])
def test_run_files_sorted_and_crashes_isolated(jobs):
    paths = ["d/c.py", "d/b.py", "d/a.py", "d/b2.py", "d/e.py"]
    outcomes = run_files(paths, explode_on_b, jobs=jobs)
    assert [o.path for o in outcomes] == sorted(paths)
    assert [o.value for o in outcomes] == ["A.PY", None, None, "C.PY", "E.PY"]
    assert outcomes[1].crash.startswith("ValueError: boom in b.py (at test_runner.py:")
    assert outcomes[1].crash.endswith(" in explode_on_b)")
    assert outcomes[0] == Outcome("d/a.py", value="A.PY")


def test_run_files_rejects_zero_jobs_and_accepts_no_paths():
    with pytest.raises(ValueError, match="jobs must be at least 1, got 0"):
        run_files(["a"], explode_on_b, jobs=0)
    assert run_files([], explode_on_b, jobs=4) == []


def test_progress_bar_only_on_a_tty(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text("x = 1\n")

    class Tty(io.StringIO):
        def isatty(self):
            return True

    for stream, quiet, shown in [(Tty(), False, True), (Tty(), True, False), (io.StringIO(), False, False)]:
        monkeypatch.setattr("sys.stderr", stream)
        args = ["check", "-j", "1", str(tmp_path)] + (["-q"] if quiet else [])
        assert main(args) == 0
        assert ("inplace-lint: checking:   0%|          | 0/1 [" in stream.getvalue()) is shown, stream.getvalue()


@pytest.fixture
def many(tmp_path):
    for i in range(12):
        (tmp_path / f"m{i:02d}.py").write_text(BAD if i % 3 == 0 else "x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "z.py").write_text(BAD)
    return tmp_path


def test_output_identical_whatever_jobs(many, capsys):
    outs = []
    for jobs in ("1", "2", "4"):
        assert main(["check", "-j", jobs, str(many / "sub"), str(many)]) == 1
        outs.append(capsys.readouterr())
    assert outs[0] == outs[1] == outs[2]
    lines = outs[0].out.splitlines()
    assert [line.split(":")[0] for line in lines] == sorted(
        str(many / name) for name in ["m00.py", "m03.py", "m06.py", "m09.py", "sub/z.py"])
    assert outs[0].err == "Scanned 13 files: 5 findings in 5 files (IPV001: 5).\n"


def test_crash_is_reported_and_run_goes_on(many, capsys, monkeypatch):
    real = checker.analyze

    def analyze(tree, settings):
        if any(getattr(node, "name", None) == "crash_me" for node in tree.body):
            raise RecursionError("maximum recursion depth exceeded")
        return real(tree, settings)

    monkeypatch.setattr(checker, "analyze", analyze)
    # check analyses each file with its project's summaries: the walk of each file is the entry point there
    from inplace_lint.analysis import project

    real_walk = project.walk_module

    def walk_module(tree, settings, *args, **kwargs):
        if any(getattr(node, "name", None) == "crash_me" for node in tree.body):
            raise RecursionError("maximum recursion depth exceeded")
        return real_walk(tree, settings, *args, **kwargs)

    monkeypatch.setattr(project, "walk_module", walk_module)
    (many / "m01.py").write_text("def crash_me():\n    pass\n")
    assert main(["check", "-j", "1", str(many)]) == 1
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 5
    err = captured.err.splitlines()
    assert err[0].startswith(f"{many / 'm01.py'}: internal error, the analysis crashed: "
                             "RecursionError: maximum recursion depth exceeded (at test_runner.py:")
    assert err[0].endswith("; skipped (please report it to the inplace-lint maintainers)")  # no address in the metadata
    assert err[1] == "Scanned 13 files: 5 findings in 5 files (IPV001: 5); the analysis crashed on 1 file."
    (many / "m01.py").write_text("x = 1\n")
    for name in ("m00.py", "m03.py", "m06.py", "m09.py", "sub/z.py"):
        (many / name).write_text("def crash_me():\n    pass\n")
    assert main(["check", "-j", "1", "-q", str(many)]) == 1  # crashes alone still fail the run


def test_bad_jobs_is_a_usage_error(many, capsys):
    assert main(["check", "-j", "0", str(many)]) == 2
    assert "--jobs must be at least 1, got 0" in capsys.readouterr().err


@needs_git
def test_discovery_respects_gitignore(tmp_path, capsys):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "generated").mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("generated/\nscratch_*.py\n")
    for name in ("pkg/a.py", "pkg/scratch_b.py", "generated/c.py", "pkg/d.pyi", "pkg/notes.txt"):
        (repo / name).write_text(BAD)
    subprocess.run(["git", "-C", str(repo), "add", "pkg/a.py"], check=True)  # tracked + untracked both found
    (repo / "pkg" / "deleted.py").write_text(BAD)
    subprocess.run(["git", "-C", str(repo), "add", "pkg/deleted.py"], check=True)
    (repo / "pkg" / "deleted.py").unlink()  # tracked, gone from the work tree
    (repo / ".venv").mkdir()
    (repo / ".venv" / "v.py").write_text(BAD)  # not ignored by git, still a SKIP_DIRS folder
    found = list(iter_python_files([str(repo)], []))
    assert found == [str(repo / "pkg" / "a.py"), str(repo / "pkg" / "d.pyi")]
    assert list(iter_python_files([str(repo / "pkg")], ["d.pyi"])) == [str(repo / "pkg" / "a.py")]
    # a file named explicitly is checked even when git ignores it
    assert main(["check", "-q", str(repo / "generated" / "c.py")]) == 1
    assert capsys.readouterr().out.startswith(f"{repo / 'generated' / 'c.py'}:3:5: IPV001")
    # without git (or outside a work tree) the plain walk finds the ignored files too
    walked = list(iter_python_files([str(repo)], [], use_git=False))
    assert walked == [str(repo / p) for p in ("generated/c.py", "pkg/a.py", "pkg/d.pyi", "pkg/scratch_b.py")]


def test_each_file_once(many):
    found = list(iter_python_files([str(many / "sub"), str(many), str(many / "sub" / "z.py")], []))
    assert len(found) == len(set(found)) == 13
    assert found[0] == str(many / "sub" / "z.py")
