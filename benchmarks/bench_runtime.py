"""Benchmark: scale_logits vs the in-place ``div_`` it replaces.

Logits (8192, 32000) in fp32 and bf16, per-token (8192,) temperature.

- time: median wall time of several repeats, in this process;
  ratio = variant / in-place div_ (target <= 1.1).
- extra peak memory: each variant runs once in a fresh subprocess; we report
  peak RSS (``VmHWM`` from /proc/self/status, else ``ru_maxrss``) after the
  call minus the same after the inputs were created and touched (CPU:
  resident set size, which is what torch's CPU allocator costs; on CUDA use
  torch.cuda.max_memory_allocated instead, which
  this script does when CUDA is available).  Target: 0 for in-place div_ and
  for inplace="auto" on a plain tensor, one logits copy otherwise.

On CPU an out-of-place result pays for fresh pages (page faults: the
allocator returns big blocks to the OS on free); the ``alloc_touch_only`` row
measures that floor.  ``THP_MEM_ALLOC_ENABLE=1`` (torch's CPU allocator with
transparent huge pages) lowers it.

Usage: python benchmarks/bench_runtime.py [--repeats 7] [--rows 8192] [--vocab 32000]
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from inplace_lint.runtime import scale_logits  # noqa: E402

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def make_inputs(rows, vocab, dtype, device):
    g = torch.Generator(device="cpu").manual_seed(0)
    # sampled directly in the target dtype: no transient fp32 copy that would
    # hide later allocations in the peak-RSS baseline
    logits = torch.empty(rows, vocab, dtype=dtype).normal_(generator=g).to(device)
    # close to 1 so that repeated in-place division never reaches subnormals
    temperature = (torch.rand(rows, generator=g) * 0.01 + 0.995).to(device)
    return logits, temperature


def run_variant(name, logits, temperature):
    if name == "inplace_div_":
        # the original (verl <= PR 6935) code, dtype-safe divisor
        return logits.div_(temperature.clamp(min=1e-8).unsqueeze(-1).to(logits.dtype))
    if name == "scale_logits":
        return scale_logits(logits, temperature)
    if name == "scale_logits_auto":
        return scale_logits(logits, temperature, inplace="auto")
    if name == "alloc_touch_only":
        # not a scaling: the cost of obtaining and touching one fresh logits-
        # sized buffer, the floor for any out-of-place result on this allocator
        return torch.empty_like(logits).fill_(0)
    raise ValueError(name)


VARIANTS = ["inplace_div_", "scale_logits", "scale_logits_auto", "alloc_touch_only"]


def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def time_variants(rows, vocab, dtype, device, repeats):
    logits, temperature = make_inputs(rows, vocab, dtype, device)
    out = {}
    for name in VARIANTS:
        times = []
        for _ in range(repeats + 1):  # first call is a warm-up
            _sync(device)
            t0 = time.perf_counter()
            res = run_variant(name, logits, temperature)
            _sync(device)
            times.append(time.perf_counter() - t0)
            del res
        out[name] = statistics.median(times[1:])
    return out


def peak_rss():
    """Peak resident set size of this process in bytes, and how it was read.

    VmHWM (Linux) belongs to this process image; ru_maxrss is the fallback,
    but Linux carries it over from the parent across fork+exec, so a child
    of a big parent would report the parent's peak.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024, "VmHWM delta (peak RSS, fresh subprocess)"
    except OSError:
        pass
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "ru_maxrss delta (fresh subprocess)")


def memory_child(name, rows, vocab, dtype_name, device):
    """Runs in a fresh process; prints JSON with the extra peak in bytes."""
    dtype = DTYPES[dtype_name]
    # warm-up on a tiny input: one-time costs (lazy imports such as the
    # guarded torch.distributed.tensor import) are not logits memory
    run_variant(name, *make_inputs(4, 8, dtype, device))
    logits, temperature = make_inputs(rows, vocab, dtype, device)
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.max_memory_allocated()
        res = run_variant(name, logits, temperature)
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated()
        measure = "torch.cuda.max_memory_allocated"
    else:
        base, measure = peak_rss()
        res = run_variant(name, logits, temperature)
        peak, _ = peak_rss()
    same = res.data_ptr() == logits.data_ptr()
    print(json.dumps({"extra": peak - base, "same_storage": same, "measure": measure,
                      "logits_bytes": logits.numel() * logits.element_size()}))


def measure_memory(name, rows, vocab, dtype_name, device):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", name, "--rows", str(rows),
           "--vocab", str(vocab), "--dtype", dtype_name, "--device", device]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--child")
    ap.add_argument("--dtype", default="fp32")
    args = ap.parse_args()
    if args.child:
        memory_child(args.child, args.rows, args.vocab, args.dtype, args.device)
        return

    print(f"torch {torch.__version__}, device {args.device}, threads {torch.get_num_threads()}, "
          f"logits ({args.rows}, {args.vocab}), temperature ({args.rows},), "
          f"median of {args.repeats} repeats")
    header = (f"{'dtype':5} {'variant':18} {'time ms':>9} {'ratio':>6} "
              f"{'extra peak MiB':>15} {'copies':>7} {'in place':>8}")
    print(header)
    print("-" * len(header))
    measure = None
    for dtype_name, dtype in DTYPES.items():
        times = time_variants(args.rows, args.vocab, dtype, args.device, args.repeats)
        base = times["inplace_div_"]
        for name in VARIANTS:
            mem = measure_memory(name, args.rows, args.vocab, dtype_name, args.device)
            measure = mem["measure"]
            copies = mem["extra"] / mem["logits_bytes"]
            print(f"{dtype_name:5} {name:18} {times[name] * 1e3:9.1f} {times[name] / base:6.2f} "
                  f"{mem['extra'] / 2**20:15.1f} {copies:7.2f} {str(mem['same_storage']):>8}")
    print(f"memory measured as: {measure}; 'copies' = extra peak / size of the logits")


if __name__ == "__main__":
    main()
