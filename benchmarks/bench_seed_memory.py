"""Benchmark: peak memory of the seed (verl 0.8.0's temperature division) before and after each fix.

The code is ``fixtures/scale/verl080_engine.py`` (our extract of verl 0.8.0's FSDP engine), in four forms:

- ``original``: verl 0.8.0, ``logits_rmpad.div_(...)`` in place (raises on a custom-Function head);
- ``upstream``: the out-of-place fix verl merged (PR 6935 / 0.9.1):
  ``logits_rmpad = logits_rmpad / temperature_rmpad.clamp(min=1e-8).unsqueeze(-1).to(logits_rmpad.dtype)``;
- ``runtime``: what ``inplace-lint fix --style runtime`` writes:
  ``scale_logits(logits_rmpad, temperature_rmpad.unsqueeze(-1), eps=1e-8, broadcast="trailing", inplace="auto")``;
- ``inline``: what ``inplace-lint fix`` (the default style) writes: ``logits_rmpad.clone().div_(...)``.

Each form runs once per head in a fresh subprocess: a plain head (an ``nn.Linear`` whose weight requires
grad: autograd allows the in-place division) and a custom-Function head (a view made in a custom
autograd Function: in place raises). The figure is the extra peak during the output step, in logits-sized
copies: peak RSS (``VmHWM``) after the step minus before it, on CPU; ``torch.cuda.max_memory_allocated`` on
CUDA. The step's log-probs are replaced by a view (no allocation), so only the scaling is measured.

Usage: python benchmarks/bench_seed_memory.py [--rows 8192] [--vocab 32000] [--dtype fp32|bf16]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FIXTURE = ROOT / "fixtures" / "scale" / "verl080_engine.py"
SEED = "logits_rmpad.div_(temperature_rmpad.clamp(min=1e-8).unsqueeze(-1).to(logits_rmpad.dtype))"
UPSTREAM = "logits_rmpad = logits_rmpad / temperature_rmpad.clamp(min=1e-8).unsqueeze(-1).to(logits_rmpad.dtype)"


def forms(work: pathlib.Path) -> dict:
    """The four forms as files under ``work`` (the fixes made by the CLI, as a user runs it)."""
    from inplace_lint.adapters.cli import main

    source = FIXTURE.read_text()
    assert SEED in source
    out = {"original": work / "original.py", "upstream": work / "upstream.py"}
    out["original"].write_text(source)
    out["upstream"].write_text(source.replace(SEED, UPSTREAM))
    for style in ("runtime", "inline"):
        project = work / style
        (project / "fork").mkdir(parents=True)
        (project / "pyproject.toml").write_text('[project]\nname = "fork"\ndependencies = ["torch>=2.4"]\n')
        (project / "fork" / "__init__.py").write_text("")
        shutil.copy(FIXTURE, project / "fork" / "engine.py")
        main(["fix", "-q", "-j", "1", "--no-cache", "--style", style, str(project)])
        out[style] = project / "fork" / "engine.py"
    return out


def peak_rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child(path: str, head: str, rows: int, vocab: int, dtype_name: str, device: str) -> None:
    import torch

    from tests.torch_models import ViewFn

    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    spec = importlib.util.spec_from_file_location("engine", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.logprobs_from_logits = lambda logits, labels: logits.select(-1, 0)  # a view: no allocation

    class Head(torch.nn.Module):
        def __init__(self, hidden):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(vocab, hidden, dtype=dtype, device=device) * 0.02)

        def forward(self, h):
            logits = torch.nn.functional.linear(h, self.weight)
            return type("Out", (), {"logits": ViewFn.apply(logits) if head == "custom" else logits})

    hidden = 64
    engine = module.FSDPEngine(Head(hidden))
    g = torch.Generator().manual_seed(0)
    t = (torch.rand(rows, generator=g) + 0.5).to(device)
    labels = torch.zeros(rows, dtype=torch.long, device=device)
    try:  # warm-up on a small input: one-time costs (imports, kernels) are not logits memory
        engine.prepare_model_outputs(engine.module(torch.randn(1, 4, hidden, dtype=dtype, device=device)),
                                     {"temperature_rmpad": t[:4], "input_ids_rmpad_rolled": labels[:4]}, True)
    except RuntimeError as exc:
        print(json.dumps({"error": str(exc).splitlines()[0][:80]}))
        return
    h = torch.randn(1, rows, hidden, generator=g).to(dtype).to(device)
    output = engine.module(h)  # the logits exist before the step (the model made them)
    logits = output.logits
    args = {"temperature_rmpad": t, "input_ids_rmpad_rolled": labels}
    try:
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.max_memory_allocated()
            result = engine.prepare_model_outputs(output, args, True)
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated()
        else:
            base = peak_rss()
            result = engine.prepare_model_outputs(output, args, True)
            peak = peak_rss()
    except RuntimeError as exc:
        print(json.dumps({"error": str(exc).splitlines()[0][:80]}))
        return
    same = result["logits"].untyped_storage().data_ptr() == logits.untyped_storage().data_ptr()
    print(json.dumps({"extra": peak - base, "in_place": same, "logits_bytes": logits.numel() * logits.element_size()}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32")
    ap.add_argument("--child", nargs=2, metavar=("PATH", "HEAD"))
    ap.add_argument("--device", default=None)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.rows, args.vocab, args.dtype, args.device)
        return
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    with tempfile.TemporaryDirectory() as tmp:
        paths = forms(pathlib.Path(tmp))
        size = args.rows * args.vocab * (4 if args.dtype == "fp32" else 2)
        print(f"seed output step, logits ({args.rows}, {args.vocab}) {args.dtype} = {size / 2**20:.0f} MiB, on {device}; "
              "extra peak in logits copies (peak RSS delta on CPU, max_memory_allocated on CUDA)")
        print(f"{'form':<10} {'plain head':>22} {'custom-Function head':>26}")
        for name, path in paths.items():
            cells = []
            for head in ("plain", "custom"):
                run = subprocess.run([sys.executable, __file__, "--child", str(path), head, "--rows", str(args.rows),
                                      "--vocab", str(args.vocab), "--dtype", args.dtype, "--device", device],
                                     capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
                lines = run.stdout.strip().splitlines()
                if run.returncode or not lines:
                    cells.append(f"failed: {run.stderr.strip().splitlines()[-1][:40] if run.stderr else '?'}")
                    continue
                r = json.loads(lines[-1])
                cells.append("raises" if "error" in r else
                             f"{r['extra'] / r['logits_bytes']:.2f}x{' (in place)' if r['in_place'] else ''}")
            print(f"{name:<10} {cells[0]:>22} {cells[1]:>26}")


if __name__ == "__main__":
    main()
