"""Speed of the linter, as ratios measured in one run on the same files (verl 0.9.1 by default).

Prints:
  1. flake8's default checks alone vs flake8 with this plugin installed (target <= 1.10):
     flake8 runs every installed plugin on every file, so this is the cost every user pays. Twice: with a
     project cache (``inplace-lint check`` wrote it; the plugin reads each file's findings from the project's
     summaries) and without one (a tree never checked: the plugin analyses each file alone), each with a cache
     folder of the run's own, whatever the tree holds.
  2. ``inplace-lint check -j 1`` in project mode (every file with its project's summaries), cold cache
     and warm cache, vs ``ast.parse`` of every file (issue 20's budgets: <= 2.5 and <= 0.5); one file with a warm cache
     (target <= 100 ms, in process: interpreter start-up not counted).
  3. ``inplace-lint fix --diff`` (nothing written) vs ``inplace-lint check`` (target <= 1.5).
  4. ``inplace-lint check -j 2`` vs ``-j 1``, cold cache, as commands (the project's summaries built by
     two worker processes, :mod:`inplace_lint.analysis.parallel_build`, vs one process), with the CPU
     seconds of each and how many walks the parallel build did again to reach the fixpoint. On a
     machine whose cores are busy with other work the wall-clock ratio says little: the CPU seconds
     and the load average are printed with it.

  5. peak memory of ``inplace-lint check -j 1`` with a cold cache, in MB per 1,000 lines (target <= 1):
     the peak resident set (``VmHWM``; ``ru_maxrss`` without /proc) of a child process that runs the
     command, minus that of a child that imports the same modules and does nothing (the interpreter and our
     code are not the cost of the lines). RSS, not tracemalloc: it also counts what the C parser allocates
     for the trees, and it does not slow the run; ``--only-memory --top N`` adds tracemalloc's N largest
     allocation sites (slow).
  6. (``--only-cache``) ``check -j 1`` of every file, cold and warm cache, and the warm cache's load alone
     (:func:`inplace_lint.workspace.load_project` in a process that has read nothing yet), vs ``ast.parse``
     of the same files (warm target <= 0.5); with ``--baseline CHECKOUT`` the same figures of another
     checkout's code (main's), measured in separate processes that alternate with this checkout's.

Usage: python benchmarks/bench_check.py [PATH] [--repeat N] [--only-jobs] [--only-memory [--top N]]
       [--only-cache [--baseline CHECKOUT]]
Each figure is the median of N runs (default 3); flake8 runs with -j1 so the
ratio is not blurred by process-pool start-up, alone and with the plugin in
alternating pairs (the ratio is the median of the pairs' ratios, in CPU time
of the process), and the plugin's own time is also measured inside the run.
"""
from __future__ import annotations

import argparse
import ast
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))


def _median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _flake8(paths, with_plugin: bool, cache_dir=None):
    from flake8.main.cli import main as flake8_main
    from flake8.plugins import finder

    original = finder._find_importlib_plugins

    def without_us():
        return (p for p in original() if p.package != "inplace-lint")

    finder._find_importlib_plugins = original if with_plugin else without_us
    try:
        try:
            extra = [f"--ipv-cache-dir={cache_dir}"] if with_plugin and cache_dir else []
            flake8_main(["--isolated", "-j1", "--exit-zero", f"--output-file={os.devnull}", *extra, *paths])
        except SystemExit:
            pass
    finally:
        finder._find_importlib_plugins = original


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("path", nargs="?")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only-jobs", action="store_true", help="only figure 4 (check -j 2 vs -j 1)")
    parser.add_argument("--only-cache", action="store_true",
                        help="only figure 5 (cold and warm check -j 1 and the cache's load vs ast.parse)")
    parser.add_argument("--only-memory", action="store_true", help="only figure 5 (peak memory of check -j 1, cold)")
    parser.add_argument("--top", type=int, default=0, help="with --only-memory: tracemalloc's N largest sites")
    parser.add_argument("--baseline", metavar="CHECKOUT",
                        help="with --only-cache: also measure the inplace-lint code in CHECKOUT (e.g. main's) "
                             "in the same run, alternating with this one")
    args = parser.parse_args()
    if args.path:
        root = pathlib.Path(args.path)
        label = str(root)
    else:
        from tests.realcode import fetch

        root = fetch("verl", "0.9.1")
        if root is None:
            sys.exit("verl==0.9.1 could not be downloaded; pass a PATH")
        label = "verl 0.9.1"
    import tempfile

    from inplace_lint import workspace
    from inplace_lint.pipeline import check_file
    from inplace_lint.source.files import iter_python_files
    from inplace_lint.config import DEFAULT_SETTINGS

    files = list(iter_python_files([str(root)], []))
    sources = [pathlib.Path(f).read_text(encoding="utf-8") for f in files]
    lines = sum(s.count("\n") for s in sources)
    print(f"{label}: {len(files)} files, {lines} lines, median of {args.repeat} runs, python {sys.version.split()[0]}")

    #: the project mode of the checks below (None: each file alone)
    state = {"mode": None}

    def check_all():
        return [check_file(f, DEFAULT_SETTINGS, [], [], project=state["mode"]) for f in files]

    def cold():
        _forget(workspace)
        state["mode"] = workspace.ProjectMode(True, use_cache=True, cache_dir=tempfile.mkdtemp(prefix="ipv-bench-"))
        check_all()

    warm_dir = tempfile.mkdtemp(prefix="ipv-bench-warm-")

    def warm():
        _forget(workspace)
        state["mode"] = workspace.ProjectMode(True, use_cache=True, cache_dir=warm_dir)
        check_all()

    one_file = max(files, key=lambda f: "fsdp" in f and "transformer_impl" in f)

    def one_warm():
        _forget(workspace)
        state["mode"] = workspace.ProjectMode(True, use_cache=True, cache_dir=warm_dir)
        check_file(one_file, DEFAULT_SETTINGS, [], [], project=state["mode"])

    if args.only_jobs:
        _jobs_figure(root, args.repeat)
        return
    if args.only_cache:
        _cache_figure(root, args.repeat, args.baseline)
        return
    if args.only_memory:
        _memory_figure(root, lines, args.top)
        return
    # flake8 alone and with the plugin, in alternating pairs: a machine that slows down or speeds up
    # during the run moves both halves of a pair alike (one run after the other blurred the ratio by
    # +-5%); the plugin's own share is also timed inside the flake8 run, around its ``run``
    from inplace_lint.adapters.flake8_plugin import InplaceLintPlugin

    plugin_run = InplaceLintPlugin.run
    inside = [0.0]

    def timed_run(self):
        start = time.process_time()
        out = list(plugin_run(self))
        inside[0] += time.process_time() - start
        return iter(out)

    InplaceLintPlugin.run = timed_run
    # the plugin reads a project cache when one exists (`inplace-lint check` wrote it) and analyses each file alone
    # otherwise: both are measured, each against flake8 alone, with a cache folder of the run's own (a filled one,
    # and an empty one), whatever the tree holds
    filled = tempfile.mkdtemp(prefix="ipv-bench-flake8-")
    _forget(workspace)
    state["mode"] = workspace.ProjectMode(True, use_cache=True, cache_dir=filled)
    check_all()
    state["mode"] = None
    figures = {}
    for label, cache_dir in (("with the project cache", filled),
                             ("without one", tempfile.mkdtemp(prefix="ipv-bench-flake8-empty-"))):
        pairs = []
        for _ in range(args.repeat):
            start = time.process_time()
            _flake8([str(root)], False)
            alone = time.process_time() - start
            inside[0] = 0.0
            start = time.process_time()
            _flake8([str(root)], True, cache_dir)
            plugin = time.process_time() - start
            pairs.append((alone, plugin, inside[0]))
        figures[label] = pairs
    InplaceLintPlugin.run = plugin_run
    parse = _median_time(lambda: [ast.parse(s) for s in sources], args.repeat)
    single = _median_time(check_all, args.repeat)
    findings_single = sum(len(r.findings) for r in check_all())
    check_cold = _median_time(cold, args.repeat)
    warm()  # fills the cache
    check_warm = _median_time(warm, args.repeat)
    findings = sum(len(r.findings) for r in check_all())
    single_warm = _median_time(one_warm, max(args.repeat, 5))
    state["mode"] = None
    from inplace_lint.fixing import fix_file

    fix = _median_time(lambda: [fix_file(f, write=False) for f in files], args.repeat)

    for label, pairs in figures.items():
        flake8_alone = statistics.median(p[0] for p in pairs)
        flake8_plugin = statistics.median(p[1] for p in pairs)
        pair_ratio = statistics.median(p[1] / p[0] for p in pairs)
        share = statistics.median(p[2] / p[0] for p in pairs)
        # the plugin's time over the rest of the same flake8 run: both halves measured at once, so a machine whose
        # speed drifts between runs (CPU time of flake8 alone moved by up to 25% between consecutive runs on a
        # shared 2-core VM) moves both alike; a pair ratio far above this one then says drift, not the plugin
        same_run = statistics.median(p[2] / (p[1] - p[2]) for p in pairs)
        print(f"flake8 + inplace-lint plugin, {label}:")
        print(f"  flake8 default checks alone      {flake8_alone:8.3f} s")
        print(f"  flake8 + inplace-lint plugin     {flake8_plugin:8.3f} s   ratio {pair_ratio:.3f}  (target <= 1.10; "
              f"median of {len(pairs)} alternating pairs)")
        print(f"  the plugin's own time inside that run: {share:.3f} of flake8 alone (ratio {1 + share:.3f} by this "
              "count)")
        print(f"  the plugin's time over the rest of the same run: {same_run:.3f} (ratio {1 + same_run:.3f}; "
              f"immune to drift between runs)")
    print(f"ast.parse of every file          {parse:8.3f} s")
    print(f"check, each file alone ({findings_single} findings)  {single:8.3f} s   ratio {single / parse:.3f}")
    print(f"check -j 1, project, cold cache ({findings} findings)  {check_cold:8.3f} s   ratio {check_cold / parse:.3f}  (target <= 2.5)")
    print(f"check -j 1, project, warm cache  {check_warm:8.3f} s   ratio {check_warm / parse:.3f}  (target <= 0.5)")
    print(f"one file, warm cache (in process) {single_warm * 1000:7.1f} ms  (target <= 100 ms): {one_file}")
    print(f"inplace-lint fix --diff (alone)  {fix:8.3f} s   ratio {fix / single:.3f}  vs check alone (target <= 1.5)")
    _jobs_figure(root, args.repeat)
    _memory_figure(root, lines)


def _forget(projects) -> None:
    """What a new process would hold: no project, nothing read from a cache folder, no resolved paths
    (``projects``: the module that keeps them, ``inplace_lint.workspace``, or ``pipeline`` in an older checkout)."""
    projects._PROJECTS.clear()
    getattr(projects, "forget_disk_state", lambda: None)()
    for name in ("_ROOTS", "_PACKAGES", "_TWINS"):
        getattr(projects, name, {}).clear()
    from inplace_lint.analysis import cache

    if hasattr(cache, "reset"):
        cache.reset()


#: figure 5, run in a fresh process with ``sys.path[0]`` = the checkout measured: prints one JSON line
_CACHE_FIGURE = r"""
import ast, json, pathlib, statistics, sys, tempfile, time
sys.path.insert(0, sys.argv[1])
from inplace_lint.config import DEFAULT_SETTINGS
from inplace_lint.pipeline import check_file
from inplace_lint.source.files import iter_python_files
try:
    from inplace_lint import workspace as projects
    def project_mode(cache_dir):
        return projects.ProjectMode(True, use_cache=True, cache_dir=cache_dir)
except ImportError:  # a checkout from before the workspace module: the mode went through the environment
    from inplace_lint import pipeline as projects
    def project_mode(cache_dir):
        projects.set_project_mode(True, use_cache=True, cache_dir=cache_dir)
sys.path.insert(0, sys.argv[4])
from benchmarks.bench_check import _forget
files = list(iter_python_files([sys.argv[2]], []))
sources = [pathlib.Path(f).read_text(encoding="utf-8") for f in files]
repeat = int(sys.argv[3])

def median(fn):
    # CPU time of this process: on a machine shared with other jobs, wall time also counts their turns
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)

def run(cache_dir, only_load=False):
    _forget(projects)
    mode = project_mode(cache_dir)
    if only_load:
        return projects.load_project(files[0], DEFAULT_SETTINGS, mode, jobs=1)
    return [check_file(f, DEFAULT_SETTINGS, [], [], project=mode) for f in files]

parse = median(lambda: [ast.parse(s) for s in sources])
cold = median(lambda: run(tempfile.mkdtemp(prefix="ipv-bench-cold-")))
warm_dir = tempfile.mkdtemp(prefix="ipv-bench-warm-")
findings = sum(len(r.findings) for r in run(warm_dir))
warm = median(lambda: run(warm_dir))
load = median(lambda: run(warm_dir, only_load=True))
print(json.dumps({"parse": parse, "cold": cold, "warm": warm, "load": load, "findings": findings}))
"""


def _cache_figure(root, repeat: int, baseline) -> None:
    """Cold and warm ``check -j 1`` and the warm load alone, vs ``ast.parse``, in CPU seconds, per checkout
    (each round in a fresh process per checkout, alternating: a machine that slows down moves both
    alike); medians of the rounds."""
    import json
    import subprocess

    here = str(pathlib.Path(__file__).resolve().parent.parent)
    checkouts = [("this checkout", here)] + ([("baseline " + baseline, baseline)] if baseline else [])
    rounds = {label: [] for label, _ in checkouts}
    for _ in range(repeat):
        for label, code in checkouts:
            proc = subprocess.run([sys.executable, "-c", _CACHE_FIGURE, code, str(root), "1", here],
                                  capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
            if proc.returncode != 0:
                sys.exit(f"{label}: {proc.stderr[-2000:]}")
            rounds[label].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    for label, _ in checkouts:
        runs = rounds[label]

        def med(key):
            return statistics.median(r[key] for r in runs)

        def ratio(key):
            return statistics.median(r[key] / r["parse"] for r in runs)

        print(f"{label}: ast.parse of every file {med('parse'):.3f} CPU s; {runs[0]['findings']} findings")
        print(f"  check -j 1, cold cache   {med('cold'):8.3f} CPU s   ratio {ratio('cold'):.3f} vs ast.parse")
        print(f"  check -j 1, warm cache   {med('warm'):8.3f} CPU s   ratio {ratio('warm'):.3f}  (target <= 0.5)")
        print(f"  load of the warm cache   {med('load'):8.3f} CPU s   ratio {ratio('load'):.3f}")
    if baseline:
        mine, base = rounds[checkouts[0][0]], rounds[checkouts[1][0]]
        for key in ("cold", "warm", "load"):
            pairs = statistics.median(m[key] / b[key] for m, b in zip(mine, base))
            print(f"{key}: this checkout / baseline = {pairs:.3f} (median of {len(mine)} alternating rounds)")


#: figure 5, run in a child process: ``check -j 1`` with a fresh cache folder (or, with "baseline", only the
#: imports the command makes before it reads a file); prints the process's peak RSS in KiB, last line (VmHWM: the
#: ru_maxrss of a forked child starts at its parent's peak, which the bench's own process has raised by then)
_MEMORY_FIGURE = r"""
import resource, sys, tempfile
mode, root, top = sys.argv[1], sys.argv[2], int(sys.argv[3])
from inplace_lint.adapters import cli
from inplace_lint import pipeline
from inplace_lint.analysis import project, cache
if mode == "check":
    if top:
        import tracemalloc
        tracemalloc.start(8)
    try:
        cli.main(["check", "-q", "-j", "1", "--cache-dir", tempfile.mkdtemp(prefix="ipv-bench-mem-"), root])
    except SystemExit:
        pass
    if top:
        peak = tracemalloc.get_traced_memory()[1]
        stats = tracemalloc.take_snapshot().statistics("lineno")
        print(f"tracemalloc: peak {peak / 2**20:.1f} MiB; held at the end, largest sites:", file=sys.stderr)
        for stat in stats[:top]:
            print(f"  {stat.size / 2**20:7.1f} MiB {stat.count:8d} blocks  {stat.traceback[0]}", file=sys.stderr)
try:  # this process's own peak (ru_maxrss also counts the peak of the process that forked it, on Linux)
    with open("/proc/self/status") as fh:
        print(next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")))
except (OSError, StopIteration):
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _memory_figure(root, lines: int, top: int = 0) -> None:
    """Peak RSS of ``check -j 1`` (cold cache) in a child, minus a child that only imports: MB per 1,000 lines."""
    import subprocess

    here = str(pathlib.Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": here}
    peaks = {}
    for mode in ("baseline", "check"):
        proc = subprocess.run([sys.executable, "-c", _MEMORY_FIGURE, mode, str(root), str(top)], capture_output=True,
                              text=True, env=env)
        if proc.returncode != 0:
            sys.exit(f"memory figure ({mode}): {proc.stderr[-2000:]}")
        if mode == "check" and top:
            print(proc.stderr.rstrip())
        peaks[mode] = int(proc.stdout.strip().splitlines()[-1]) / 1024  # KiB on Linux
    used = peaks["check"] - peaks["baseline"]
    print(f"peak memory, check -j 1 cold     {used:8.1f} MB   {used / (lines / 1000):.3f} MB per 1,000 lines "
          f"(target <= 1; peak RSS {peaks['check']:.1f} MB minus {peaks['baseline']:.1f} MB of a process that "
          f"only imports)")


def _check_command(root, jobs: int):
    """``inplace-lint check -q -j JOBS`` with a fresh cache directory: (wall seconds, CPU seconds, output)."""
    import resource
    import subprocess
    import tempfile

    cache = tempfile.mkdtemp(prefix="ipv-bench-jobs-")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "inplace_lint", "check", "-q", "-j", str(jobs), "--cache-dir",
                           cache, str(root)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parent.parent)})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def _jobs_figure(root, repeat: int) -> None:
    """Cold ``check -j 2`` vs ``-j 1`` (runs interleaved, medians), and what the parallel build did."""
    from inplace_lint import workspace
    from inplace_lint.analysis import parallel_build
    from inplace_lint.analysis.project import Project
    from inplace_lint.config import DEFAULT_SETTINGS

    runs = {1: [], 2: []}
    outputs = {}
    for _ in range(repeat):
        for jobs in (1, 2):
            wall, cpu, out = _check_command(root, jobs)
            runs[jobs].append((wall, cpu))
            outputs.setdefault(jobs, out)
    one = statistics.median(w for w, _ in runs[1])
    two = statistics.median(w for w, _ in runs[2])
    cpu1 = statistics.median(c for _, c in runs[1])
    cpu2 = statistics.median(c for _, c in runs[2])
    # what the parallel build walked again, and the serial build's walks, in this process
    walks = [0]
    original = Project.walk

    def counting(self, path):
        walks[0] += 1
        return original(self, path)

    files = workspace.project_files(pathlib.Path(root))
    mode = workspace.ProjectMode(True, use_cache=False)
    Project.walk = counting
    try:
        workspace._PROJECTS.clear()
        workspace.load_project(files[0], DEFAULT_SETTINGS, mode, jobs=1)
        serial_walks = walks[0]
        workspace._PROJECTS.clear()
        workspace.load_project(files[0], DEFAULT_SETTINGS, mode, jobs=2)
    finally:
        Project.walk = original
        workspace._PROJECTS.clear()
    stats = parallel_build.Stats
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"check -j 1, cold cache (command)  {one:8.3f} s   cpu {cpu1:.2f} s")
    print(f"check -j 2, cold cache (command)  {two:8.3f} s   cpu {cpu2:.2f} s   ratio {two / one:.3f} vs -j 1 "
          f"({os.cpu_count()} cores, load average {load:.2f}); same output: {outputs[1] == outputs[2]}")
    if stats.chunks:
        print(f"  parallel build: {stats.files} files in chunks of {list(stats.chunks)}, "
              f"{parallel_build.WAVES} waves; walked again to the fixpoint: {stats.rewalked} "
              f"({stats.rewalked_in_workers} in the workers, {stats.rounds} rounds); "
              f"the serial build walks {serial_walks} times for {len(files)} files")
    else:
        print(f"  serial build ({len(files)} files, below parallel_build.MIN_FILES = {parallel_build.MIN_FILES})")


if __name__ == "__main__":
    main()
