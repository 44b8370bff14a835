"""Capture overhead: ``tl.trace`` time against a raw forward pass, per model.

Prints, per model: raw forward ms, trace ms, their ratio and microseconds added per op.
Runs on one intra-op thread so the ratio measures our per-op work, not thread scheduling.

    python benchmarks/overhead.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn

import torchlens as tl
from torchlens.analysis.table import format_table


class MLP(nn.Module):
    def __init__(self, width: int = 256, depth: int = 4) -> None:
        super().__init__()
        self.layers = nn.Sequential(*[m for _ in range(depth) for m in (nn.Linear(width, width), nn.ReLU())])

    def forward(self, x):
        return self.layers(x)


class TanhLoop(nn.Module):
    """A 50-step Linear + tanh loop: one layer per op, 50 passes each."""

    def __init__(self, width: int = 64, steps: int = 50) -> None:
        super().__init__()
        self.lin, self.steps = nn.Linear(width, width), steps

    def forward(self, x):
        for _ in range(self.steps):
            x = torch.tanh(self.lin(x))
        return x


class Block(nn.Module):
    """A GPT-2-shaped decoder block, used when `transformers` is not installed."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class MiniGPT(nn.Module):
    def __init__(self, layers: int, width: int, heads: int, vocab: int = 1000, ctx: int = 128) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(ctx, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)

    def forward(self, ids):
        n = ids.shape[1]
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
        x = self.wte(ids) + self.wpe(torch.arange(n))
        for block in self.blocks:
            x = block(x, mask)
        return self.ln_f(x) @ self.wte.weight.T


def gpt2(layers: int, width: int, heads: int) -> tuple[str, nn.Module]:
    """A GPT-2-shaped model: Hugging Face's GPT-2 when installed, else :class:`MiniGPT`."""
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError:
        return "MiniGPT", MiniGPT(layers, width, heads)
    config = GPT2Config(n_layer=layers, n_embd=width, n_head=heads, vocab_size=1000, n_positions=128)
    return "GPT2LMHeadModel", GPT2LMHeadModel(config)


def models() -> list[tuple[str, nn.Module, tuple]]:
    ids = torch.randint(0, 1000, (1, 128))
    small_name, small = gpt2(12, 768, 12)
    tiny_name, tiny = gpt2(2, 64, 2)
    return [
        ("MLP 4x256, batch 32", MLP(), (torch.randn(32, 256),)),
        (f"{small_name} 12 layers, width 768, 128 tokens", small, (ids,)),
        (f"{tiny_name} 2 layers, width 64, 128 tokens", tiny, (ids,)),
        ("Linear+tanh loop, 50 steps", TanhLoop(), (torch.randn(8, 64),)),
        ("LSTM 2 layers, 64 wide, 50 steps", nn.LSTM(64, 64, num_layers=2, batch_first=True), (torch.randn(4, 50, 64),)),
    ]


def best_ms(fn, repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per model; the best is kept")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name, model, inputs in models():
        model.eval()
        with torch.no_grad():
            raw = best_ms(lambda: model(*inputs), args.repeat)
            traced = best_ms(lambda: tl.trace(model, *inputs), args.repeat)
            num_ops = len(tl.trace(model, *inputs).ops)
        rows.append([name, f"{raw:.2f}", f"{traced:.2f}", f"{traced / raw:.2f}x", str(num_ops),
                     f"{(traced - raw) * 1e3 / num_ops:.1f}"])
    print(format_table(["model", "raw ms", "trace ms", "ratio", "ops", "us/op added"], rows))


if __name__ == "__main__":
    main()
