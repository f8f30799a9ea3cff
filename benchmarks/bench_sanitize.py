"""Cost of the runtime sanitizer on a training step.

A small decoder-only transformer (token + position embeddings, pre-norm blocks of causal self-attention
and a GELU MLP, tied LM head) does forward, cross-entropy loss and backward on CPU, plain and under
``inplace_lint.sanitize.sanitize()``; the two are interleaved, and the script prints the median of each
and their ratio (budget: <= 2x). The step also divides the logits by a temperature the way RL
trainers do, out of place, so the sanitized step has no finding.

    python benchmarks/bench_sanitize.py [--runs 15] [--layers 4] [--width 128] [--batch 8] [--threads 1]
"""
from __future__ import annotations

import argparse
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from inplace_lint.sanitize import sanitize


class Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class Decoder(nn.Module):
    def __init__(self, vocab: int, d: int, layers: int, heads: int, seq: int):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = block(x)
        return F.linear(self.ln(x), self.tok.weight)


def step(model: nn.Module, ids: torch.Tensor, temperature: float) -> float:
    logits = model(ids[:, :-1])
    logits = logits / temperature
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
    model.zero_grad(set_to_none=True)
    loss.backward()
    return loss.item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--width", type=int, default=128, help="model width d (heads: 4)")
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    vocab, d, heads, seq, batch = 512, args.width, 4, 65, args.batch
    model = Decoder(vocab, d, args.layers, heads, seq)
    ids = torch.randint(0, vocab, (batch, seq))
    for _ in range(3):  # warm up both paths
        step(model, ids, 0.7)
        with sanitize():
            step(model, ids, 0.7)
    plain, sanitized = [], []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        step(model, ids, 0.7)
        plain.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        with sanitize() as s:
            step(model, ids, 0.7)
        sanitized.append(time.perf_counter() - t0)
        assert not s.findings, s.findings
    p, q = statistics.median(plain), statistics.median(sanitized)
    params = sum(x.numel() for x in model.parameters())
    print(f"decoder: {args.layers} layers, d={d}, {params / 1e6:.2f}M params, batch {batch} x {seq - 1} tokens, "
          f"{args.threads} thread(s), {args.runs} runs")
    print(f"plain step:     {p * 1e3:8.2f} ms (median)")
    print(f"sanitized step: {q * 1e3:8.2f} ms (median)")
    print(f"ratio: {q / p:.2f}x (budget <= 2x)")
    assert math.isfinite(q / p)


if __name__ == "__main__":
    main()
