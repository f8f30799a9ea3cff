"""Interpretation of one long function is linear in its length (issue 21 item 3).

Generates one function of N in-place statements (N = 1k, 2k, 4k, 8k by default) in several shapes,
checks it (the analysis with its fix plans, as ``check`` runs it, and the codemod's edits), and prints the
time per statement at each N and the ratio of the largest to the smallest (flat: about 1; the issue
measured 1.8 ms, 4 ms and 22 ms per statement at 1k, 2k and 3k statements of one function before).

Shapes (each statement is a finding with a fix plan):
  same      ``x.div_(t)`` N times on one view of a model output
  fresh     ``yI = model(h).logits.squeeze(0)`` then ``yI.div_(t)``: N names in the environment
  branches  ``fresh`` with the write under ``if c:`` (environments copied and merged N times)
  aliases   ``fresh``, with ``zI = yI.view(-1)`` read after the write (an unsafe fix: alias closure and loads)

Usage: python benchmarks/bench_long_function.py [--sizes 1000,2000,4000,8000] [--shapes ...] [--repeat N]
Each figure is the best of N runs (default 1). No wall-clock limit is asserted anywhere.
"""
from __future__ import annotations

import argparse
import ast
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

SHAPES = {
    "same": lambda i: ["x.div_(t)"],
    "fresh": lambda i: [f"y{i} = model(h).logits.squeeze(0)", f"y{i}.div_(t)"],
    "branches": lambda i: [f"y{i} = model(h).logits.squeeze(0)", "if c:", f"    y{i}.div_(t)"],
    "aliases": lambda i: [f"y{i} = model(h).logits.squeeze(0)", f"z{i} = y{i}.view(-1)", f"y{i}.div_(t)",
                          f"s = s + z{i}.sum()"],
}


def source(shape: str, n: int) -> str:
    """One function with ``n`` in-place statements of ``shape``."""
    body = ["x = model(h).logits.squeeze(0)", "s = 0"]
    for i in range(n):
        body += SHAPES[shape](i)
    return "import torch\n\n\ndef f(model, h, t, c):\n" + "".join(f"    {line}\n" for line in body) + \
        "    return x, s\n"


def measure(text: str, repeat: int):
    """Seconds of ``check_source`` with edits (analysis, fix plans, codemod), and the findings."""
    from inplace_lint.config import DEFAULT_SETTINGS
    from inplace_lint.pipeline import check_source

    best, findings = float("inf"), []
    for _ in range(repeat):
        start = time.perf_counter()
        findings = check_source(text, "long.py", DEFAULT_SETTINGS, fix_style="runtime").findings
        best = min(best, time.perf_counter() - start)
    return best, findings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,2000,4000,8000")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    worst = 0.0
    for shape in args.shapes.split(","):
        per = []
        for n in sizes:
            text = source(shape, n)
            ast.parse(text)
            seconds, findings = measure(text, args.repeat)
            fixes = sum(1 for f in findings if f.fix is not None)
            per.append(seconds / n)
            print(f"{shape:9s} {n:6d} statements: {seconds:7.2f} s, {seconds / n * 1e3:6.3f} ms/statement "
                  f"({len(findings)} findings, {fixes} fixes)", flush=True)
        ratio = max(per) / min(per)
        worst = max(worst, ratio)
        print(f"{shape:9s} time per statement, largest / smallest: {ratio:.2f}", flush=True)
    print(f"worst ratio over shapes: {worst:.2f} (flat: about 1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
