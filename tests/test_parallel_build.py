"""A project's cold build split among worker processes (``check -j N``, analysis/parallel_build.py):
the same summaries, call sites and findings as the serial build, file by file."""
from __future__ import annotations

import pathlib
import shutil

import pytest

from inplace_lint import workspace
from inplace_lint.adapters.cli import main
from inplace_lint.analysis import parallel_build
from inplace_lint.analysis.parallel_build import imports_in_text, partition
from inplace_lint.config import DEFAULT_SETTINGS

from .test_project_analysis import _found, expected

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "project"
NO_CACHE = workspace.ProjectMode(True, use_cache=False)


@pytest.fixture()
def chain(tmp_path):
    work = tmp_path / "chainpkg"
    shutil.copytree(FIXTURES / "chainpkg", work)
    (work / "chain" / "broken.py").write_text("def not_python(:\n    pass\n")  # a file that does not parse
    workspace._PROJECTS.clear()
    yield work
    workspace._PROJECTS.clear()


def _small(monkeypatch):
    """The parallel build on the fixtures' few files (by default only from MIN_FILES files on)."""
    monkeypatch.setattr(parallel_build, "MIN_FILES", 1)
    monkeypatch.setattr(parallel_build, "FILES_PER_WORKER", 1)


def _build(root: pathlib.Path, jobs: int):
    workspace._PROJECTS.clear()
    any_file = next(iter(sorted(root.rglob("*.py"))))
    return workspace.load_project(str(any_file), DEFAULT_SETTINGS, NO_CACHE, jobs=jobs)


def _findings(project):
    return {path: [(f.code, f.line, f.col, f.message, f.fix) for f in project.findings(path)]
            for path in project.results}


def _same(serial, parallel):
    assert list(parallel.results) == list(serial.results)  # the order the project pass reads them in
    assert parallel.summaries == serial.summaries
    assert list(parallel.summaries) == list(serial.summaries)
    for path, result in serial.results.items():
        other = parallel.results[path]
        assert other.functions == result.functions, path
        assert other.calls == result.calls, path
        assert [f.finding for f in other.findings] == [f.finding for f in result.findings], path
    assert _findings(parallel) == _findings(serial)


@pytest.mark.parametrize("waves", [1, 2, 4])
@pytest.mark.parametrize("jobs", [2, 3])
def test_parallel_build_equals_the_serial_build(chain, monkeypatch, jobs, waves):
    _small(monkeypatch)
    monkeypatch.setattr(parallel_build, "WAVES", waves)
    serial = _build(chain, 1)
    found = _findings(serial)
    assert sum(len(v) for v in found.values()) == len(expected(chain))
    parallel = _build(chain, jobs)
    assert len(parallel_build.Stats.chunks) > 1  # it did run in worker processes
    assert sum(parallel_build.Stats.chunks) == parallel_build.Stats.files == len(serial.results) + 1  # + broken.py
    _same(serial, parallel)


def test_files_that_read_another_workers_summaries_are_walked_again(chain, monkeypatch):
    """One wave: every read of a summary made in the other worker's chunk is stale after the workers'
    walk; the main process walks those files again until nothing is stale."""
    _small(monkeypatch)
    monkeypatch.setattr(parallel_build, "WAVES", 1)
    monkeypatch.setattr(parallel_build, "MIN_REWALK_IN_WORKERS", 1)
    serial = _build(chain, 1)
    parallel = _build(chain, 2)
    assert parallel_build.Stats.rewalked > 0 and parallel_build.Stats.rewalked_in_workers > 0
    assert not any(parallel.stale(r) for r in parallel.results.values())
    _same(serial, parallel)


def test_the_rlpkg_project_both_ways(tmp_path, monkeypatch):
    _small(monkeypatch)
    work = tmp_path / "rlpkg"
    shutil.copytree(FIXTURES / "rlpkg", work)
    _same(_build(work, 1), _build(work, 2))
    workspace._PROJECTS.clear()


def test_one_job_and_small_projects_start_no_process(chain, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a worker process was started")

    monkeypatch.setattr(parallel_build.concurrent.futures, "ProcessPoolExecutor", refuse)
    serial = _build(chain, 1)
    assert parallel_build.MIN_FILES > len(serial.results)
    _same(serial, _build(chain, 2))  # below the threshold: built here, in the serial build's order


def test_no_worker_falls_back_to_the_serial_build(chain, monkeypatch):
    def cannot(*args, **kwargs):
        raise OSError("no processes here")

    _small(monkeypatch)
    monkeypatch.setattr(parallel_build.concurrent.futures, "ProcessPoolExecutor", cannot)
    serial = _build(chain, 1)
    _same(serial, _build(chain, 2))
    assert parallel_build.Stats.chunks == ()


def test_workers_without_fork_get_the_cached_part_sent(chain, monkeypatch):
    """Where fork is missing (macOS, Windows) each worker starts from the settings and cached results."""
    import multiprocessing

    _small(monkeypatch)
    monkeypatch.setattr(parallel_build, "_context", lambda: multiprocessing.get_context("spawn"))
    serial = _build(chain, 1)
    _same(serial, _build(chain, 2))
    assert len(parallel_build.Stats.chunks) == 2


def test_check_jobs_2_prints_what_jobs_1_prints(chain, monkeypatch, capsys):
    _small(monkeypatch)
    outs = []
    for jobs in ("1", "2"):
        workspace._PROJECTS.clear()
        main(["check", "-q", "-j", jobs, "--no-cache", str(chain)])
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]
    assert _found("\n".join(line for line in outs[0].splitlines() if "IPV000" not in line), chain) == expected(chain)
    assert "broken.py:1:16: IPV000" in outs[1]


def test_a_partly_cached_project_is_finished_in_parallel(chain, monkeypatch, tmp_path, capsys):
    """Files that changed since the cache was written are parsed and walked by the workers; the
    cached files keep their place and those that read a changed summary are walked again."""
    _small(monkeypatch)
    cache = tmp_path / "cache"
    main(["check", "-q", "-j", "1", "--cache-dir", str(cache), str(chain)])
    capsys.readouterr()
    views = chain / "chain" / "views.py"
    views.write_text(views.read_text().replace("[:, -1]", ".clone()[:, -1]"))  # last_row: fresh now
    (chain / "chain" / "extra.py").write_text("from chain.views import logits_of\n\n\ndef f(m, i, t):\n"
                                              "    logits_of(m, i).mul_(t)\n")
    outs = []
    for jobs in ("1", "2"):
        copy = tmp_path / f"cache-{jobs}"
        shutil.copytree(cache, copy)  # both runs start from the same cache
        workspace._PROJECTS.clear()
        main(["check", "-q", "-j", jobs, "--cache-dir", str(copy), str(chain)])
        outs.append(capsys.readouterr().out)
        if jobs == "2":
            assert parallel_build.Stats.files == 3  # views.py, extra.py and broken.py (never cached)
    assert outs[0] == outs[1]
    assert "steps.py:14" not in outs[0] and "extra.py:5:5: IPV001" in outs[0]


def test_imports_read_from_the_text():
    source = ("import a.b as c, d\nfrom .x import y, z as w\nfrom .. import (q,\n  r)\n"
              "if TYPE_CHECKING:\n    from e.f import g\ndef h():\n    import k\n")
    assert imports_in_text(source, "pkg.sub.mod", False) == [
        "a.b", "d", "pkg.sub.x", "pkg.sub.x.y", "pkg.sub.x.z", "pkg", "pkg.q", "e.f", "e.f.g", "k"]
    assert imports_in_text("from . import m\n", "pkg", True) == ["pkg", "pkg.m"]


def test_partition_puts_imported_files_in_earlier_waves():
    files = [(f"/p/m{i}.py", f"m{i}", f"from m{i - 1} import f\n" if i else "from qq import f\n") for i in range(8)]
    placed = partition(files, 2, waves=4)
    waves = [placed[f"/p/m{i}.py"][0] for i in range(8)]
    assert waves == sorted(waves) and set(waves) == {0, 1, 2, 3}  # an importer never in an earlier wave
    assert {worker for _, worker in placed.values()} == {0, 1}
    assert all(0 <= w < 2 for _, w in placed.values())
    one_wave = partition(files, 2, waves=1)
    assert [one_wave[f"/p/m{i}.py"][1] for i in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]  # import runs together


def test_how_many_workers():
    per = parallel_build.FILES_PER_WORKER
    assert parallel_build.workers_for(10_000, 1) == 1  # -j 1: always the serial build
    assert parallel_build.workers_for(parallel_build.MIN_FILES - 1, 8) == 1
    assert parallel_build.workers_for(10_000, 2) == 2
    assert parallel_build.workers_for(3 * per, 16) == 3  # no worker with fewer than FILES_PER_WORKER files


def test_two_files_of_one_module_name_resolve_as_in_the_serial_build(chain, monkeypatch, tmp_path, capsys):
    """tools/a/run.py and tools/b/run.py are both module `run`: the index of the later one in the file
    list wins, also when the earlier one is the file that changed since the cache was written."""
    _small(monkeypatch)
    cache = tmp_path / "cache"
    main(["check", "-q", "-j", "1", "--cache-dir", str(cache), str(chain)])
    capsys.readouterr()
    run_a = chain / "tools" / "a" / "run.py"
    run_a.write_text(run_a.read_text() + "\n\ndef other():\n    pass\n")
    projects = []
    for jobs in (1, 2):
        copy = tmp_path / f"cache-{jobs}"
        shutil.copytree(cache, copy)
        workspace._PROJECTS.clear()
        mode = workspace.ProjectMode(True, use_cache=True, cache_dir=str(copy))
        projects.append(workspace.load_project(str(run_a), DEFAULT_SETTINGS, mode, jobs=jobs))
        if jobs == 2:
            assert parallel_build.Stats.files == 2 and parallel_build.Stats.chunks  # run.py, broken.py
    serial, parallel = projects
    assert serial.indexes["run"].path == str(chain / "tools" / "b" / "run.py")
    assert parallel.indexes["run"].path == serial.indexes["run"].path
    _same(serial, parallel)
