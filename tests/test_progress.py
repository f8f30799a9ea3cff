"""Progress from the first stage to the last of a long run (issue 17), drawn on stderr when it is a
terminal: a real pseudo-terminal (``pty``) on a generated project of 100k lines, cold, with ``-j 1`` and
``-j 2``. Absent with ``-q`` or when stderr is a pipe. (Timing is measured by
``benchmarks/bench_progress.py``, never asserted here.)"""
from __future__ import annotations

import fcntl
import os
import pathlib
import re
import select
import struct
import subprocess
import sys
import termios

import pytest

from inplace_lint import progress

ROOT = pathlib.Path(__file__).resolve().parent.parent
BAR = re.compile(r"inplace-lint: ([^:\r\n]+?): +(?:(\d+)%\|[^|]*\| (\d+)/(\d+)|(\d+)\w*[ \w]* \[)")

MODULE = '''\
from proj.m{prev} import helper{prev}


def helper{i}(x, t):
    y = x.squeeze(0)
    y.div_(t)
    return y


def step{i}(model, ids, t):
    out = model(ids)
    return helper{prev}(out.logits, t).sum()
'''
FILLER = "\n\ndef f{i}_{k}(a, b):\n    c = a + b\n    d = c * 2\n    e = d - a\n    return e / b\n"


def generate(root: pathlib.Path, files: int = 500, lines: int = 200) -> int:
    """A project of ``files`` modules, ``lines`` lines each (a chain of imports and calls), returns the lines."""
    (root / "proj").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "proj"\n')
    (root / "proj" / "__init__.py").write_text("")
    total = 0
    for i in range(files):
        text = MODULE.format(i=i, prev=max(i - 1, 0))
        k = 0
        while text.count("\n") < lines:
            text += FILLER.format(i=i, k=k)
            k += 1
        (root / "proj" / f"m{i}.py").write_text(text)
        total += text.count("\n")
    return total


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    root = tmp_path_factory.mktemp("big")
    assert generate(root) >= 100_000
    return root


def run_in_pty(args, cwd):
    """Run ``inplace-lint ARGS`` with stderr on a 120-column pseudo-terminal; (rc, stdout, what the terminal got)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "inplace_lint", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    chunks = []
    out = []
    while True:
        ready, _, _ = select.select([master, proc.stdout], [], [], 1.0)
        if master in ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                data = b""
            if not data:
                break
            chunks.append(data)
        if proc.stdout in ready:
            out.append(proc.stdout.read1(65536))
    out.append(proc.stdout.read())
    rc = proc.wait(timeout=600)
    os.close(master)
    return rc, b"".join(out).decode(), b"".join(chunks).decode("utf-8", "replace")


def stages(terminal: str):
    """Each state drawn: (stage, count or None, total or None), in order, repeats folded."""
    drawn = []
    for m in BAR.finditer(terminal):
        name = m.group(1)
        count = m.group(3) or m.group(5)
        state = (name, int(count) if count else None, int(m.group(4)) if m.group(4) else None)
        if not drawn or drawn[-1] != state:
            drawn.append(state)
    return drawn


def order(drawn):
    names = []
    for name, _, _ in drawn:
        if not names or names[-1] != name:
            names.append(name)
    return names


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_cold_check_shows_every_stage_to_the_end(big, jobs):
    rc, out, terminal = run_in_pty(["check", "--no-cache", "-j", jobs, "."], big)
    assert rc == 1 and out.count("IPV001") == 998, out[-500:]
    # the first thing on the terminal is the bar, before the files are even listed
    assert terminal.lstrip("\r").startswith("inplace-lint: starting"), terminal[:200]
    drawn = stages(terminal)
    names = order(drawn)
    build = (["reading and parsing files", "walking files"] if jobs == "1" else
             ["reading files", "parsing files (2 workers)", "walking files (2 workers)"])
    # every stage, first drawn in the order the run goes through them: the files, the build, its fixpoint,
    # the project pass, the checks
    first = [n for n in dict.fromkeys(names) if n in ("starting", "finding files", "project pass (across calls)",
                                                      "checking", *build) or n.startswith("fixpoint")]
    # (the serial build walks imported files first: this chain needs no second round; the parallel one
    # walks again what read a summary another worker made in the same wave)
    fixpoint = ["fixpoint (walking again, round 1)"] if jobs == "2" else []
    assert first == ["starting", "finding files", *build, *fixpoint, "project pass (across calls)", "checking"], names
    # a stage with many files moves: more than three different counts are drawn while walking
    walking = [c for n, c, _ in drawn if n.startswith("walking files")]
    assert len(set(walking)) > 3, drawn
    # the last state drawn is the end: every file checked
    assert drawn[-1][0] == "checking" and drawn[-1][1] == drawn[-1][2] == 501, drawn[-3:]
    # and the bar is taken off the terminal before the summary is printed
    assert terminal.rstrip().endswith("Scanned 501 files: 998 findings in 500 files (IPV001: 998).")


def test_no_bar_with_quiet_or_a_pipe(tmp_path):
    generate(tmp_path, files=20, lines=20)
    rc, _, terminal = run_in_pty(["check", "--no-cache", "-q", "-j", "1", "."], tmp_path)
    assert rc == 1 and "inplace-lint:" not in terminal and terminal == ""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    piped = subprocess.run([sys.executable, "-m", "inplace_lint", "check", "--no-cache", "-j", "1", "."], cwd=tmp_path,
                           env=env, capture_output=True, text=True)
    assert piped.returncode == 1 and "inplace-lint:" not in piped.stderr and "\r" not in piped.stderr
    assert piped.stderr == "Scanned 21 files: 38 findings in 20 files (IPV001: 38).\n"


def test_stages_nest_and_do_nothing_without_a_display():
    class Record:
        def __init__(self):
            self.log = []

        def push(self, name, total, unit):
            self.log.append(("push", name, total))
            return len(self.log)

        def pop(self, token):
            self.log.append(("pop", token))

        def advance(self, n):
            self.log.append(("advance", n))

        def close(self):
            self.log.append(("close",))

    with progress.stage("nothing drawn", 3):
        progress.advance()
    assert list(progress.counted("ab")) == ["a", "b"]
    display = Record()
    progress.install(display)
    try:
        with progress.stage("outer", 2):
            with progress.stage("inner", None):
                assert list(progress.counted([1])) == [1]
            progress.advance(2)
        progress.finish()
        progress.advance()  # after finish: nothing more is drawn
    finally:
        progress.install(None)
    assert display.log == [("push", "outer", 2), ("push", "inner", None), ("advance", 1), ("pop", 2),
                           ("advance", 2), ("pop", 1), ("close",)]
