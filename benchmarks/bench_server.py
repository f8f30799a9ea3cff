"""Editor latency of ``inplace-lint server``: the time from a ``didChange`` to its diagnostics.

A plain JSON-RPC client over stdio (no LSP library: what an editor does) opens one document, then
sends whole-document changes, each a one-character edit inside one function, and waits for the
``publishDiagnostics`` of that version. The document is verl 0.8.0's ``trainer/ppo/core_algos.py``
(2.5k lines; downloaded into the cache, see ``tests/realcode.py``) plus the seed function, or a
generated file of the same size when the registry cannot be reached, or ``PATH``.

Prints the median and the 90th percentile in ms, ``ast.parse`` of the same text in this process
(interleaved with the edits, so both see the same machine load), and their ratio. Budget (issue 11): median <= 50 ms.

``--project``: the document is ``verl/trainer/ppo/core_algos.py`` inside a copy of the whole verl
tree (with a ``pyproject.toml``), so the server analyses it with the project's summaries (a first,
untimed run of the server writes the project cache; the timed run starts from that warm cache).

Usage: python benchmarks/bench_server.py [PATH] [--edits N] [--project]
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SEED = (
    "\n\ndef prepare_model_outputs(output, temperature):\n"
    "    logits_rmpad = output.logits.squeeze(0)\n"
    "    logits_rmpad.div_(temperature)\n"
    "    return logits_rmpad\n"
)
BUDGET_MS = 50.0


def generated(lines: int = 2500) -> str:
    """A file of about ``lines`` lines of torch-like functions (when verl cannot be downloaded)."""
    out = ["import torch\nimport torch.nn.functional as F\n"]
    i = 0
    while sum(chunk.count("\n") for chunk in out) < lines:
        out.append(
            f"\n\ndef loss_{i}(logits, labels, mask, eps=1e-8):\n"
            f"    \"\"\"Function {i}.\"\"\"\n"
            f"    probs = F.softmax(logits.float(), dim=-1)\n"
            f"    log_probs = torch.log(probs + eps)\n"
            f"    picked = log_probs.gather(-1, labels.unsqueeze(-1)).squeeze(-1)\n"
            f"    masked = picked * mask\n"
            f"    for step in range(3):\n"
            f"        masked = masked + step * 0.5\n"
            f"    total = masked.sum() / mask.sum().clamp(min=1)\n"
            f"    return -total\n")
        i += 1
    return "".join(out)


def document(path):
    if path:
        return pathlib.Path(path).read_text(encoding="utf-8"), str(path)
    from tests.realcode import fetch

    root = fetch("verl", "0.8.0")
    if root is None:
        return generated() + SEED, "generated (verl 0.8.0 could not be downloaded)"
    core = root / "verl" / "trainer" / "ppo" / "core_algos.py"
    return core.read_text(encoding="utf-8") + SEED, "verl 0.8.0 trainer/ppo/core_algos.py + seed function"


class Client:
    """JSON-RPC 2.0 with LSP's Content-Length framing, over a subprocess's stdio."""

    def __init__(self, argv):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.next_id = 0

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def receive(self) -> dict:
        length = None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise EOFError("the server closed its stdout")
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("ascii").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        return json.loads(self.proc.stdout.read(length))

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        while True:
            message = self.receive()
            if message.get("id") == self.next_id and "method" not in message:
                return message

    def notify(self, method: str, params: dict) -> None:
        self.send({"method": method, "params": params})

    def diagnostics(self, uri: str, version: int) -> list:
        while True:
            message = self.receive()
            if message.get("method") == "textDocument/publishDiagnostics":
                params = message["params"]
                if params["uri"] == uri and params.get("version") == version:
                    return params["diagnostics"]

    def close(self) -> None:
        try:
            self.request("shutdown", {})
            self.notify("exit", {})
        finally:
            self.proc.wait(timeout=10)


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", help="a Python file (default: verl's core_algos.py + the seed function)")
    parser.add_argument("--edits", type=int, default=41, help="number of didChange notifications timed")
    parser.add_argument("--project", action="store_true",
                        help="open the document inside a copy of the verl tree (project summaries, warm cache)")
    args = parser.parse_args()
    text, label = document(args.path)
    folder = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / "inplace-lint-bench-server"
    if args.project:
        from tests.realcode import fetch
        import shutil

        root = fetch("verl", "0.8.0")
        if root is None:
            print("--project needs verl 0.8.0 (the registry could not be reached)", file=sys.stderr)
            return 2
        folder = folder.with_name(folder.name + "-project")
        if not (folder / "verl").is_dir():
            shutil.copytree(root / "verl", folder / "verl")
        (folder / "pyproject.toml").write_text("[project]\nname = 'verl-bench'\n", encoding="utf-8")
        path = folder / "verl" / "trainer" / "ppo" / "core_algos.py"
        label += ", in the verl project"
    else:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "core_algos.py"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    lines = text.count("\n")
    if args.project:  # an untimed first run writes the project cache (as the CLI or an earlier session would)
        warm = Client([sys.executable, "-m", "inplace_lint", "server"])
        warm.request("initialize", {"processId": os.getpid(), "rootUri": folder.as_uri(), "capabilities": {}})
        warm.notify("initialized", {})
        warm.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                              "text": text}})
        warm.diagnostics(uri, 1)
        warm.close()

    client = Client([sys.executable, "-m", "inplace_lint", "server"])
    client.request("initialize", {"processId": os.getpid(), "rootUri": folder.as_uri(), "capabilities": {}})
    client.notify("initialized", {})
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                            "text": text}})
    first = client.diagnostics(uri, 1)
    # each edit changes the temperature's name in the seed function: a one-function change, as when typing
    anchor = "    logits_rmpad.div_(temperature)\n"
    latencies, parses = [], []
    for i in range(args.edits):
        version = i + 2
        edited = text.replace(anchor, f"    logits_rmpad.div_(temperature)  # edit {i}\n" if i % 2 else anchor)
        edited = edited.replace("def prepare_model_outputs(", f"def prepare_model_outputs_{i}(")
        start = time.perf_counter()
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": edited}]})
        diagnostics = client.diagnostics(uri, version)
        latencies.append((time.perf_counter() - start) * 1000)
        assert any(d["code"] == "IPV001" for d in diagnostics), diagnostics
        # ast.parse of the same text right after, so that both see the same machine load
        parses.append(median_ms(lambda: ast.parse(edited), 1))
    client.close()

    parse = statistics.median(parses)
    median = statistics.median(latencies)
    p90 = sorted(latencies)[int(0.9 * (len(latencies) - 1))]
    print(f"{label}: {lines} lines, {len(first)} diagnostics, {len(latencies)} edits, python {sys.version.split()[0]}")
    print(f"didChange -> publishDiagnostics: median {median:.1f} ms, p90 {p90:.1f} ms (budget {BUDGET_MS:.0f} ms)")
    print(f"ast.parse of the same text:      median {parse:.1f} ms")
    print(f"ratio to ast.parse: {median / parse:.2f}")
    return 0 if median <= BUDGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
