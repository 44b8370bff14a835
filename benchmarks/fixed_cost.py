"""Per-trace fixed cost: what a capture costs besides the model's own ops.

The MLP of ``benchmarks/overhead.py`` with its forward pass hollowed out (``Hollow``: same
modules, parameters and buffers, ``forward`` returns its input) isolates the fixed part:
building the capture's tables, claiming the slot, installing and removing the interception
(patches, torch function mode, worker guard) and the boundary ops. Printed side by side in
one run, best of ``--repeat`` each: the hollow capture alone (``capture_forward``), the same
through ``tl.trace`` (the trace builds its grouping and records on first read), the same with
that first read, and the full MLP trace (with and without the read) against its raw forward
pass for scale. Times are the CPU time of the running thread (``time.thread_time``),
so other processes on a shared machine do not count.

    python benchmarks/fixed_cost.py [--repeat 300]
"""

from __future__ import annotations

import argparse
import time

import torch

import torchlens as tl
from torchlens.analysis.table import format_table
from torchlens.capture.session import capture_forward

from overhead import MLP, read


class Hollow(MLP):
    """The benchmark MLP's modules and parameters, with nothing run in forward."""

    def forward(self, x):
        return x


def best_ms(fn, repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.thread_time()
        fn()
        times.append(time.thread_time() - start)
    return min(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=300, help="timed runs per line; the best is kept")
    args = parser.parse_args()
    torch.set_num_threads(1)
    x = torch.randn(32, 256)
    hollow, mlp = Hollow().eval(), MLP().eval()
    with torch.no_grad():
        rows = [
            ("fixed cost: capture of the hollow MLP", best_ms(lambda: capture_forward(hollow, (x,), {}), args.repeat)),
            ("fixed cost: tl.trace of the hollow MLP", best_ms(lambda: tl.trace(hollow, x), args.repeat)),
            ("fixed cost + grouping and records: tl.trace of the hollow MLP, first read",
             best_ms(lambda: read(tl.trace(hollow, x)), args.repeat)),
            ("MLP 4x256, batch 32: raw forward", best_ms(lambda: mlp(x), args.repeat)),
            ("MLP 4x256, batch 32: tl.trace", best_ms(lambda: tl.trace(mlp, x), args.repeat)),
            ("MLP 4x256, batch 32: tl.trace, first read", best_ms(lambda: read(tl.trace(mlp, x)), args.repeat)),
        ]
    print(format_table(["what", "ms"], [[name, f"{ms:.3f}"] for name, ms in rows]))


if __name__ == "__main__":
    main()
