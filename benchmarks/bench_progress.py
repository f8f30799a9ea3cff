"""How soon and how steadily a cold ``check`` shows progress on a terminal (issue 17), as ratios in one run.

Runs ``inplace-lint check --no-cache -j N PATH`` with stderr on a pseudo-terminal and timestamps every
draw of the progress bar. Prints, per N: the run's wall time, the time to the first draw (target: within
the first second), the longest stretch without a draw and its share of the run, and the stage drawn
last. PATH defaults to a generated project of 500 modules of 200 lines (100k lines, a chain of imports).

Usage: python benchmarks/bench_progress.py [PATH] [--jobs 1,2]
"""
from __future__ import annotations

import argparse
import fcntl
import os
import pathlib
import re
import select
import struct
import subprocess
import sys
import tempfile
import termios
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_progress import generate  # noqa: E402

DRAW = re.compile(rb"inplace-lint: ([^:\r\n]+?):")


def timed_run(path: str, jobs: str):
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "inplace_lint", "check", "--no-cache", "-j", jobs, path],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    draws = []
    while True:
        ready, _, _ = select.select([master], [], [], 1.0)
        if not ready:
            continue
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        now = time.perf_counter() - start
        draws += [(now, m.group(1).decode()) for m in DRAW.finditer(data)]
    proc.wait()
    total = time.perf_counter() - start
    os.close(master)
    return total, draws


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("path", nargs="?")
    parser.add_argument("--jobs", default="1,2")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.path
        if path is None:
            lines = generate(pathlib.Path(tmp))
            path = tmp
            print(f"generated project: {lines} lines in 500 files")
        for jobs in args.jobs.split(","):
            total, draws = timed_run(path, jobs)
            times = [0.0] + [t for t, _ in draws] + [total]
            gaps = [b - a for a, b in zip(times, times[1:])]
            gap = max(gaps)
            print(f"-j {jobs}: {total:.2f} s, {len(draws)} draws, first after {draws[0][0]:.2f} s "
                  f"({draws[0][0] / total:.1%} of the run), longest without a draw {gap:.2f} s "
                  f"({gap / total:.1%}), last stage drawn: {draws[-1][1]} at {draws[-1][0]:.2f} s")


if __name__ == "__main__":
    main()
