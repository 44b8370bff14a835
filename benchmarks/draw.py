"""Drawing speed: building the DOT of GPT-2 small (12 blocks, n_embd 768, random weights, 128
tokens), rolled at full depth, rolled at ``depth=1`` and unrolled; Python time only (no ``dot``).
Also prints the trace time beside it, for scale, and the ``dot -Tsvg`` time of the full drawing.

    python benchmarks/draw.py [--layers 12] [--tokens 128] [--repeat 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import time

import torch

import torchlens as tl
from torchlens.analysis.table import format_table


def gpt2(layers: int, tokens: int):
    import transformers

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=layers, n_embd=768)
    model = transformers.GPT2LMHeadModel(config).eval()
    return model, torch.randint(0, config.vocab_size, (1, tokens))


def best(fn, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    model, ids = gpt2(args.layers, args.tokens)
    start = time.perf_counter()
    trace = tl.trace(model, ids, capture=tl.options.CaptureOptions(save_outputs=False))
    traced = time.perf_counter() - start
    rows = []
    for what, kwargs in (("rolled, full depth", {}), ("rolled, depth=1", {"depth": 1}),
                         ("unrolled, full depth", {"view": "unrolled"})):
        low, mid = best(lambda: trace.draw(**kwargs), args.repeat)
        rows.append([what, str(len(trace.ops)), f"{low * 1e3:.0f}", f"{mid * 1e3:.0f}", f"{traced * 1e3:.0f}"])
    print(format_table(["GPT-2 small drawing", "ops", "min ms", "median ms", "trace ms"], rows))
    if shutil.which("dot"):
        source = trace.draw().source
        start = time.perf_counter()
        subprocess.run(["dot", "-Tsvg", "-o", "/dev/null"], input=source, text=True, check=True)
        print(f"dot -Tsvg of the full rolled drawing: {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
