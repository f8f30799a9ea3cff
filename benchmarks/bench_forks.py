"""Many copies of one project through one shared cache (``--cache-dir``): the cost of their unique content.

Copies a project tree (verl 0.9.1 by default) N times (default 10) under a temporary folder and
times, as commands, each with a fresh cache folder:

  1. ``inplace-lint check -q -j 1 --cache-dir C COPY`` of one copy;
  2. ``inplace-lint check -j 1 --cache-dir C FORKS`` of the N copies in one run (target: at most 1.5x
     the first), whose findings must be the same in every copy, and whose summary line says how many
     files were seen, how many texts were unique and how many results were reused;
  3. the same N copies again (the cache warm).

``--jobs J`` times ``-j J`` instead of ``-j 1``. Each figure is the median of ``--repeat`` runs; the one
copy and the N copies alternate, so a machine that slows down moves both alike.

Usage: python benchmarks/bench_forks.py [PATH] [--copies N] [--repeat R] [--jobs J]
"""
from __future__ import annotations

import argparse
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))


def _run(args, cache_dir: pathlib.Path):
    """(wall seconds, CPU seconds, stdout, stderr) of ``inplace-lint check ARGS --cache-dir cache_dir``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "inplace_lint", "check", "--cache-dir", str(cache_dir), *args],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(HERE)})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        sys.exit(f"check failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc.stdout, proc.stderr


def _per_copy(stdout: str, forks: pathlib.Path, copies: int):
    """Each copy's findings, with paths relative to the copy."""
    out = {i: [] for i in range(copies)}
    for line in stdout.splitlines():
        path, _, rest = line.partition(":")
        rel = pathlib.Path(path).resolve().relative_to(forks.resolve())
        out[int(rel.parts[0][len("copy"):])].append(f"{pathlib.Path(*rel.parts[1:])}:{rest}")
    return {i: sorted(v) for i, v in out.items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("path", nargs="?")
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    if args.path:
        tree = pathlib.Path(args.path)
    else:
        from tests.realcode import fetch

        tree = fetch("verl", "0.9.1")
        if tree is None:
            sys.exit("verl==0.9.1 could not be downloaded; pass a PATH")
    work = pathlib.Path(tempfile.mkdtemp(prefix="ipv-bench-forks-"))
    forks = work / "forks"
    try:
        for i in range(args.copies):
            shutil.copytree(tree, forks / f"copy{i}", ignore=shutil.ignore_patterns(".inplace_lint_cache"))
        one_copy = forks / "copy0"
        jobs = ["-j", str(args.jobs)]
        ones, manys, warms = [], [], []
        for r in range(args.repeat):
            ones.append(_run(["-q", *jobs, str(one_copy)], work / f"cache-one-{r}"))
            manys.append(_run([*jobs, str(forks)], work / f"cache-many-{r}"))
            warms.append(_run([*jobs, str(forks)], work / f"cache-many-{r}"))
        one = statistics.median(w for w, *_ in ones)
        many = statistics.median(w for w, *_ in manys)
        warm = statistics.median(w for w, *_ in warms)
        cpu_one = statistics.median(c for _, c, *_ in ones)
        cpu_many = statistics.median(c for _, c, *_ in manys)
        per_copy = _per_copy(manys[0][2], forks, args.copies)
        alone = _per_copy(ones[0][2], forks, args.copies)[0]
        same = all(v == alone for v in per_copy.values())
        files = sum(1 for _ in one_copy.rglob("*.py"))
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"{tree}: {files} .py files a copy, {args.copies} copies, median of {args.repeat} runs, "
              f"check -j {args.jobs}, {os.cpu_count()} cores, load average {load:.2f}")
        print(f"one copy, cold cache             {one:8.3f} s   cpu {cpu_one:.2f} s   ({len(alone)} findings)")
        print(f"{args.copies} copies in one run, cold cache {many:8.3f} s   cpu {cpu_many:.2f} s   ratio {many / one:.3f} "
              f"(target <= 1.5; cpu ratio {cpu_many / cpu_one:.3f})")
        print(f"  {manys[0][3].strip().splitlines()[-1]}")
        print(f"  the same findings in every copy as in the copy checked alone: {same}")
        print(f"{args.copies} copies again, warm cache   {warm:8.3f} s   ratio {warm / one:.3f}")
        print(f"  {warms[0][3].strip().splitlines()[-1]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
