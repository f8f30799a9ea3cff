"""Cost of fixes, as ratios measured in one run on generated files (issue 8 item 1, issue 10 item 11).

Prints:
  1. ``check --format json`` vs ``check --format text`` on one file of 200 seed-shaped functions,
     each finding carrying its edits (target <= 1.5): whole CLI runs, ``-j 1``, and in-process.
  2. ``fix`` vs ``check`` on one 24,000-line file with 4,000 findings (target <= 3),
     in-process and as CLI runs.
  3. ``fix`` vs ``check`` as CLI runs on one 5 MB file with 42,000 findings (issue 21 item 3, target
     <= 2): 21,000 functions, each with a safe fix (a view of a model output made in the function) and
     an unsafe one (a view of a parameter's field: the finding stays and is printed with its reason).
     ``fix`` did not finish in 400 s there while ``check`` took 177 s: each finding left was looked
     up in the list of unsafe findings (a list scan with dataclass equality, quadratic). One run each
     (``--big-functions N`` for another size, 0 to skip).

Usage: python benchmarks/bench_fix.py [--repeat N] [--big-functions N] [--only-big]
Each figure of 1 and 2 is the median of N runs (default 3).
"""
from __future__ import annotations

import argparse
import io
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SEED = '''
def scale_{i}(model, hidden, temperature):
    output = model(hidden)
    logits_rmpad = output.logits.squeeze(0)
    logits_rmpad.div_(temperature)
    return logits_rmpad
'''


BIG = '''
def scale_{i}(model, hidden, output, temperature):
    logits = model(hidden).logits.squeeze(0)
    logits.div_(temperature)
    entropy = output.entropy.squeeze(0)
    entropy.div_(temperature)
    return logits, entropy
'''


def big_file(functions: int) -> str:
    """``functions`` functions of 2 findings each (one safe fix, one unsafe): 21,000 make 5 MB."""
    return "import torch\n" + "".join(BIG.format(i=i) for i in range(functions))


def big_figure(tmp: pathlib.Path, functions: int) -> None:
    """``check`` and ``fix`` (writing) of the big file, as CLI runs, one each, without the on-disk cache."""
    big = tmp / "big.py"
    big.write_text(big_file(functions))
    size = big.stat().st_size
    start = time.perf_counter()
    _cli("check", "-j", "1", "-q", "--no-cache", str(big))
    check = time.perf_counter() - start
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "inplace_lint", "fix", "-j", "1", "--no-cache", str(big)], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    fix = time.perf_counter() - start
    print(f"{size / 1e6:.1f} MB, {functions} functions, {2 * functions} findings: {proc.stderr.strip()}")
    print(f"  check (CLI)                    {check:8.3f} s")
    print(f"  fix, writing (CLI)             {fix:8.3f} s   ratio {fix / check:.2f}  (target <= 2)")


def seed_file(functions: int) -> str:
    """``functions`` copies of verl's seed shape (5 lines, one IPV001 with a safe fix each)."""
    return "import torch\n" + "".join(SEED.format(i=i) for i in range(functions))


def _median(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _cli(*args):
    subprocess.run([sys.executable, "-m", "inplace_lint", *args], cwd=ROOT, capture_output=True, check=False)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--big-functions", type=int, default=21000)
    parser.add_argument("--only-big", action="store_true")
    args = parser.parse_args()
    if args.only_big:
        with tempfile.TemporaryDirectory() as tmp:
            big_figure(pathlib.Path(tmp), args.big_functions)
        return
    from inplace_lint.adapters.reporters import write_json, write_text
    from inplace_lint.config import DEFAULT_SETTINGS
    from inplace_lint.fixing import fix_file
    from inplace_lint.pipeline import check_file

    with tempfile.TemporaryDirectory() as tmp:
        small = pathlib.Path(tmp) / "seed200.py"
        small.write_text(seed_file(200))
        big = pathlib.Path(tmp) / "seed4000.py"
        big.write_text(seed_file(4000)[:-1])  # 4000 functions of 5 lines and a blank line: 24,001 lines
        print(f"python {sys.version.split()[0]}, median of {args.repeat} runs")

        text_cli = _median(lambda: _cli("check", "-j", "1", "-q", "--format", "text", str(small)), args.repeat)
        json_cli = _median(lambda: _cli("check", "-j", "1", "-q", "--format", "json", str(small)), args.repeat)

        def in_process(fmt):
            result = check_file(str(small), DEFAULT_SETTINGS, fix_style="runtime" if fmt == "json" else None)
            (write_json if fmt == "json" else write_text)([(result, f) for f in result.findings], io.StringIO())

        text_ip = _median(lambda: in_process("text"), args.repeat)
        json_ip = _median(lambda: in_process("json"), args.repeat)
        findings = len(check_file(str(small), DEFAULT_SETTINGS).findings)
        print(f"200 functions, {findings} findings:")
        print(f"  check --format text (CLI)      {text_cli:8.3f} s")
        print(f"  check --format json (CLI)      {json_cli:8.3f} s   ratio {json_cli / text_cli:.2f}  (target <= 1.5)")
        print(f"  text (in-process)              {text_ip:8.3f} s")
        print(f"  json (in-process)              {json_ip:8.3f} s   ratio {json_ip / text_ip:.2f}")

        lines = big.read_text().count("\n")
        check = _median(lambda: check_file(str(big), DEFAULT_SETTINGS), args.repeat)
        fix = _median(lambda: fix_file(str(big), write=False), args.repeat)
        result = fix_file(str(big), write=False)
        check_cli = _median(lambda: _cli("check", "-j", "1", "-q", str(big)), args.repeat)
        copy = pathlib.Path(tmp) / "copy.py"

        def fix_copy():
            copy.write_text(big.read_text())
            _cli("fix", "-j", "1", "-q", str(copy))

        fix_cli = _median(fix_copy, args.repeat)
        diff_cli = _median(lambda: _cli("fix", "-j", "1", "-q", "--diff", str(big)), args.repeat)
        print(f"{lines} lines, {len(result.applied)} fixes applied:")
        print(f"  check (in-process)             {check:8.3f} s")
        print(f"  fix, nothing written           {fix:8.3f} s   ratio {fix / check:.2f}  (target <= 3)")
        print(f"  check (CLI)                    {check_cli:8.3f} s")
        print(f"  fix, writing (CLI)             {fix_cli:8.3f} s   ratio {fix_cli / check_cli:.2f}")
        print(f"  fix --diff (CLI)               {diff_cli:8.3f} s   ratio {diff_cli / check_cli:.2f}")
        if args.big_functions:
            big_figure(pathlib.Path(tmp), args.big_functions)


if __name__ == "__main__":
    main()
