"""Per-trace fixed cost: what a capture costs besides the model's own ops.

The MLP of ``benchmarks/overhead.py`` with its forward pass hollowed out (``Hollow``: same
modules, parameters and buffers, ``forward`` returns its input) isolates the fixed part:
building the capture's tables, claiming the slot, installing and removing the interception
(patches, torch function mode, worker guard) and the boundary ops. Printed side by side in
one run: the hollow capture alone (``capture_forward``), the same
through ``tl.trace`` (the trace builds its grouping and records on first read), the same with
that first read, and the full MLP trace (with and without the read) against its raw forward
pass for scale. Times are the CPU time of the running thread (``time.thread_time``),
so other processes on a shared machine do not count. The rows are timed round-robin (one
timed run of each row per round, ``--repeat`` rounds, each right after an untimed run of the same
row, so that it finds the caches warm for its own kind of run), so that a drift in the machine's
speed during the run reaches every row alike; each row gives its median and its best.

    python benchmarks/fixed_cost.py [--repeat 300]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import torch

import torchlens as tl
from torchlens.analysis.table import format_table
from torchlens.capture.session import capture_forward

from overhead import MLP, read


class Hollow(MLP):
    """The benchmark MLP's modules and parameters, with nothing run in forward."""

    def forward(self, x):
        return x


def interleaved(rows: dict[str, Callable[[], object]], repeat: int) -> dict[str, list[float]]:
    """Seconds of each row's runs, ``repeat`` rounds of one run of every row."""
    times: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(repeat):
        for name, fn in rows.items():
            fn()  # warms the caches for this row
            start = time.thread_time()
            fn()
            times[name].append(time.thread_time() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=300, help="rounds: timed runs per row")
    args = parser.parse_args()
    torch.set_num_threads(1)
    x = torch.randn(32, 256)
    hollow, mlp = Hollow().eval(), MLP().eval()
    rows: dict[str, Callable[[], object]] = {
        "fixed cost: capture of the hollow MLP": lambda: capture_forward(hollow, (x,), {}),
        "fixed cost: tl.trace of the hollow MLP": lambda: tl.trace(hollow, x),
        "fixed cost + grouping and records: tl.trace of the hollow MLP, first read": lambda: read(tl.trace(hollow, x)),
        "MLP 4x256, batch 32: raw forward": lambda: mlp(x),
        "MLP 4x256, batch 32: tl.trace": lambda: tl.trace(mlp, x),
        "MLP 4x256, batch 32: tl.trace, first read": lambda: read(tl.trace(mlp, x)),
    }
    with torch.no_grad():
        times = interleaved(rows, args.repeat)
    print(format_table(["what", "median ms", "best ms"],
                       [[name, f"{statistics.median(t) * 1e3:.3f}", f"{min(t) * 1e3:.3f}"] for name, t in times.items()]))


if __name__ == "__main__":
    main()
