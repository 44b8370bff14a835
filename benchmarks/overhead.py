"""Capture overhead: a raw forward pass, the bare interception floor and ``tl.trace``, per model.

Prints, in one run, per model: raw forward ms; the floor's ms (a ``TorchFunctionMode`` written
here that only walks the frames to the module boundary and appends ``(func, chain, output)``);
``tl.trace``'s ms; ``tl.trace`` plus the first full read of its records (``read``: the trace
builds its layers, ops and modules when one is first read, so this column is what a user who
looks at the records pays: every layer, every op's label and parents); the ratios to raw and
to the floor, and the microseconds each adds per op.

Each model is also run *hollow* (the same module tree, parameters and buffers, its ``forward``
returning its first input: :func:`hollow`), under the floor and under ``tl.trace``: what that
costs is each one's fixed cost per pass, measured in the same run. The per-op columns are the
rest: ``trace - trace hollow`` against ``floor - floor hollow`` (both with the model's own ops
in them), so the per-op ratio and the fixed cost are read apart; the whole-model ratios keep
both. The per-op ratio is given twice: from each kind's best time, and read within each round
of runs (:func:`per_op_ratio`), its median over the rounds, which a drift in the machine's
speed between rounds does not move. Then peak memory (Linux): each model runs in a fresh
process (raw, ``tl.trace`` and ``save="none"``), and the growth of the process's peak resident
memory over the built model's is reported with what the trace itself holds (``trace.nbytes``).

The 12-layer GPT-2 is also timed in paired rounds (:func:`paired`): a pass takes a third of a
second, and a best-of-N of each kind timed apart moves by 10-25% with what the machine's other
core does meanwhile (memory and cache it shares). Each round runs raw, the floor, the floor
keeping no output, ``tl.trace`` and ``tl.trace`` with ``save="none"``; the table gives each
kind's median ratio to raw within a round, and the page faults and system time per pass (the
price of fresh memory for the outputs a pass keeps): what part of a trace's cost is the capture
and what part is keeping the outputs.

``--callgrind`` counts instructions instead (``valgrind --tool=callgrind``; a count does not
depend on the machine's load): one process runs every model but the 12-layer GPT-2 in each
mode, a few times after warm-up runs, with the cyclic collector off, and only those runs are
counted (callgrind collects inside ``functools.reduce``, which runs them, and dumps after each).
Valgrind starts with its instrumentation off and the process turns it on once torch is imported
and the models are built (``callgrind_control -i on``), before the warm-up runs: importing and
building them instrumented took most of the run's time. With ``--cache-sim`` valgrind also
simulates this machine's per-core level-2 cache and the table gives its misses per run: on the
MLP the trace's instructions per op are 1.12x the floor's but its time 1.6-1.9x; its simulated
misses are 10.4k a run against the floor's 1.2-1.9k (measured 2026-12-02), most of them in the
model's own kernels (``linear`` re-reading weights, outputs written to cold lines) that the
trace's footprint pushed out of that cache: what an instruction count does not show. (Counted
from a cold cache, a floor pass of the MLP touches 26.3k lines, 1.7 MB with its 1 MB of
weights, and fits; a traced one 33.1k, 2.1 MB, and does not. The difference is the trace's
per-pass part: a trace of the hollow MLP touches 8.0k lines, the floor's 1.1k.)

Runs on one intra-op thread so the ratios measure per-op work, not thread scheduling, and
times the CPU time of that thread (``time.thread_time``: on a shared machine, the time other
processes take the core away is not counted). The timings are interleaved and each keeps its
best of ``--repeat``. Each timed run comes right after an untimed run of the same kind, so
that every column is timed with warm caches, whatever ran before it (a trace's records and
tensors leave them cold for a raw pass of a small model). Before each timed run the garbage of
the previous ones is collected, with the objects that existed before the timings frozen
(``gc.freeze``): a full collection walks every Python object torch and the model hold, and the
caches it leaves cold would add about 0.3 ms to whatever runs next (a raw 10-op MLP pass
measured 0.6 ms after a full collection, 0.23 ms without), a cost of the benchmark, not of any
column.

    python benchmarks/overhead.py [--repeat 7] [--rounds 7] [--no-memory] [--callgrind [--cache-sim]]
"""

from __future__ import annotations

import argparse
import copy
import functools
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

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


class LSTMLoop(nn.Module):
    """Two ``nn.LSTM`` layers over 50 steps (one fused op per layer)."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(64, 64, num_layers=2, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0]


def gpt2(layers: int, width: int, heads: int) -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.utils import logging

    logging.set_verbosity_error()
    config = GPT2Config(n_layer=layers, n_embd=width, n_head=heads, vocab_size=1000, n_positions=128,
                        bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(config)


#: name -> (model factory, input factory)
MODELS = {
    "GPT-2 2 layers, width 64, 128 tokens": (lambda: gpt2(2, 64, 2), lambda: (torch.randint(0, 1000, (1, 128)),)),
    "Linear+tanh loop, 50 steps": (TanhLoop, lambda: (torch.randn(8, 64),)),
    "MLP 4x256, batch 32": (MLP, lambda: (torch.randn(32, 256),)),
    "LSTM 2 layers, 64 wide, 50 steps": (LSTMLoop, lambda: (torch.randn(4, 50, 64),)),
    "GPT-2 12 layers, width 768, 128 tokens": (lambda: gpt2(12, 768, 12), lambda: (torch.randint(0, 1000, (1, 128)),)),
}

_CALL_IMPL = nn.Module._call_impl.__code__
_CALL_IMPL_INNER = next(c for c in _CALL_IMPL.co_consts if getattr(c, "co_name", None) == "inner")


class Floor(TorchFunctionMode):
    """The bare interception: per torch call, run it, walk the frames up to the innermost
    module boundary and append ``(func, chain, output)``. No grouping, no parents, no names.
    With ``keep=False`` the output is not kept (``None`` in its place)."""

    def __init__(self, keep: bool = True) -> None:
        super().__init__()
        self.keep = keep
        self.ops: list[tuple] = []
        self.stop = {id(_CALL_IMPL), id(_CALL_IMPL_INNER)}
        self.skip = {id(nn.Module._wrapped_call_impl.__code__), id(Floor.__torch_function__.__code__),
                     id(torch.overrides.handle_torch_function.__code__)}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        chain = []
        frame = sys._getframe(1)
        while frame is not None:
            code = id(frame.f_code)
            if code in self.stop:
                break
            if code not in self.skip:
                chain.append((code, frame.f_lasti))
            frame = frame.f_back
        self.ops.append((func, tuple(chain), out if self.keep else None))
        return out


def floor(model: nn.Module, inputs: tuple, keep: bool = True) -> int:
    """One forward pass under :class:`Floor`; returns how many calls it intercepted."""
    with Floor(keep) as mode:
        model(*inputs)
    return len(mode.ops)


def hollow(model: nn.Module) -> nn.Module:
    """A shallow copy of ``model`` (the same submodules, parameters and buffers) whose forward
    pass returns its first input: capturing it costs what a capture costs besides the model's ops."""
    shell = copy.copy(model)
    shell.forward = lambda *args, **kwargs: args[0]
    return shell


def read(trace: tl.Trace) -> int:
    """The first full read of a trace's records: every layer, every op's label and parents."""
    return len(trace.layers) + sum(len(op.label) + len(op.parents) for op in trace.ops)


def runs(model: nn.Module, inputs: tuple, hollows: bool = True) -> dict[str, Callable[[], object]]:
    """The kinds of run timed, by column: raw, floor, trace, trace + read (and the hollow model
    under the floor and the trace: each one's fixed cost)."""
    kinds: dict[str, Callable[[], object]] = {
        "raw": lambda: model(*inputs), "floor": lambda: floor(model, inputs), "trace": lambda: tl.trace(model, *inputs),
        "read": lambda: read(tl.trace(model, *inputs))}
    if hollows:
        shell = hollow(model)
        kinds["floor fixed"] = lambda: floor(shell, inputs)
        kinds["trace fixed"] = lambda: tl.trace(shell, *inputs)
    return kinds


def timings(model: nn.Module, inputs: tuple, repeat: int, hollows: bool = True) -> dict[str, list[float]]:
    """Seconds of each of :func:`runs`, ``repeat`` rounds of one timed run of every kind,
    interleaved so that noise hits them alike (a round's runs are back to back)."""
    runs_ = runs(model, inputs, hollows)
    times: dict[str, list[float]] = {name: [] for name in runs_}
    for name, run in runs_.items():
        run()  # warm-up
    gc.collect()
    gc.freeze()  # the collections below sweep only what the timed runs left
    try:
        for _ in range(repeat):
            for name, run in runs_.items():
                run()  # warms the caches for this kind of run
                gc.collect()
                start = time.thread_time()
                run()
                times[name].append(time.thread_time() - start)
    finally:
        gc.unfreeze()
    return times


def best_of(times: dict[str, list[float]]) -> dict[str, float]:
    """Each kind's best time."""
    return {kind: min(t) for kind, t in times.items()}


def per_op_ratio(times: dict[str, list[float]]) -> float:
    """The per-op trace/floor of each round, ``(trace - trace fixed) / (floor - floor fixed)``
    from that round's four runs, and its median over the rounds: a ratio of differences of
    single runs, read within a round, so a drift in the machine's speed between rounds cancels
    (a difference of best-of-N times taken apart does not: built that way, the tanh loop's
    50 -> 150 ratio of :func:`marginal` read 1.78x and 1.00x for the same code within a quarter
    of an hour on the shared 2-core machine of 2026-12-02)."""
    return statistics.median((t - tf) / (f - ff) for t, tf, f, ff in
                             zip(times["trace"], times["trace fixed"], times["floor"], times["floor fixed"]))


#: The model :func:`paired` measures: one pass takes a third of a second, so a best-of-N of
#: each kind apart is at the mercy of what the machine's other core does during each pass.
PAIRED = "GPT-2 12 layers, width 768, 128 tokens"


def paired(rounds: int) -> list[list[str]]:
    """:data:`PAIRED` in rounds: each round runs every kind (raw; the floor, keeping the outputs
    and not; ``tl.trace``, saving every output and none), each timed run after an untimed one
    of its kind, starting one kind later each round; per kind, the median over the rounds of
    its time against raw's in the same round, the median time, and the page faults and system
    time per timed run (memory the pass had to be given)."""
    make_model, make_inputs = MODELS[PAIRED]
    torch.manual_seed(0)
    model, inputs = make_model().eval(), make_inputs()
    nothing = tl.options.CaptureOptions(save="none")
    kinds: dict[str, Callable[[], object]] = {
        "raw": lambda: model(*inputs), "floor": lambda: floor(model, inputs),
        "floor keeping no output": lambda: floor(model, inputs, keep=False),
        "trace": lambda: tl.trace(model, *inputs), 'trace, save="none"': lambda: tl.trace(model, *inputs, capture=nothing)}
    names = list(kinds)
    times: dict[str, list[float]] = {name: [] for name in names}
    faults = dict.fromkeys(names, 0)
    system = dict.fromkeys(names, 0.0)
    with torch.no_grad():
        for run in kinds.values():
            run()
        gc.collect()
        gc.freeze()
        try:
            for number in range(rounds):
                for name in names[number % len(names):] + names[:number % len(names)]:
                    kinds[name]()
                    gc.collect()
                    before = resource.getrusage(resource.RUSAGE_THREAD)
                    start = time.thread_time()
                    kinds[name]()
                    times[name].append(time.thread_time() - start)
                    after = resource.getrusage(resource.RUSAGE_THREAD)
                    faults[name] += after.ru_minflt - before.ru_minflt
                    system[name] += after.ru_stime - before.ru_stime
        finally:
            gc.unfreeze()
    return [[name, f"{statistics.median(t / raw for t, raw in zip(times[name], times['raw'])):.3f}x",
             f"{statistics.median(times[name]) * 1e3:.1f}", f"{faults[name] / rounds:,.0f}",
             f"{system[name] / rounds * 1e3:.1f}"] for name in names]


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def marginal(repeat: int) -> list[list[str]]:
    """Per-op cost alone, without any per-trace cost: the Linear+tanh loop at 50 and at 150
    steps, and the difference in time over the 200 ops the longer loop adds."""
    runs = {}
    x = torch.randn(8, 64)
    for steps in (50, 150):
        model = TanhLoop(steps=steps).eval()
        with torch.no_grad():
            runs[steps] = best_of(timings(model, (x,), repeat, hollows=False))
    raw = (runs[150]["raw"] - runs[50]["raw"]) / 200 * 1e6
    cells = {k: (runs[150][k] - runs[50][k]) / 200 * 1e6 for k in ("floor", "trace", "read")}
    low = cells["floor"]
    return [["Linear+tanh loop, 50 -> 150 steps", f"{raw:.1f}", f"{low:.1f}", f"{cells['trace']:.1f}",
             f"{cells['read']:.1f}", f"{cells['trace'] / low:.2f}x", f"{cells['read'] / low:.2f}x",
             f"{(cells['trace'] - raw) / (low - raw):.2f}x"]]


def peak(name: str, mode: str) -> dict:
    """In this (fresh) process: how far one forward pass of ``mode`` (``raw``, ``all`` or
    ``none``) raises the resident memory above the built model's (Linux: the peak is reset
    through ``/proc/self/clear_refs`` first), and what the trace holds."""
    make_model, make_inputs = MODELS[name]
    torch.manual_seed(0)
    model, inputs = make_model().eval(), make_inputs()
    with torch.no_grad():
        model(*inputs)  # allocator and lazy-init warm-up, outside the measured growth
        gc.collect()
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")  # reset the peak resident size to the current one
        before = _status_kb("VmRSS")
        held = 0
        if mode == "raw":
            model(*inputs)
        else:
            trace = tl.trace(model, *inputs, capture=tl.options.CaptureOptions(save=mode))
            held = trace.nbytes
        after = _status_kb("VmHWM")
    return {"peak_mb": (after - before) / 1024, "held_mb": held / 2**20}


def memory_rows() -> list[list[str]]:
    rows = []
    for name in MODELS:
        cells = [name]
        for mode in ("raw", "all", "none"):
            out = subprocess.run([sys.executable, __file__, "--peak", name, mode], capture_output=True, text=True,
                                 check=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            cells.append(f"{result['peak_mb']:.1f}")
            if mode != "raw":
                cells.append(f"{result['held_mb']:.2f}")
        rows.append(cells)
    return rows


#: The models the instruction counts cover (the 12-layer GPT-2 would take an hour under callgrind).
COUNTED = [name for name in MODELS if not name.startswith("GPT-2 12")]
#: Counted runs per model and kind (after two warm-up runs).
COUNTED_RUNS = 5


def count(out: str) -> None:
    """Under callgrind: run each counted model in each kind, :data:`COUNTED_RUNS` times inside one
    ``functools.reduce`` (the only code collected; a dump after each); write the order to ``out``.

    Each run's result is dropped as it returns, as the timed runs drop it: the reduce's value
    stays ``None``. (Kept as that value, a trace lived through the next run, with its outputs
    and records: two traces' memory, which the floor, returning a count, never had.)"""
    built = {}
    for name in COUNTED:  # (built, and transformers imported, before the instrumentation starts)
        make_model, make_inputs = MODELS[name]
        torch.manual_seed(0)
        built[name] = make_model().eval(), make_inputs()
    subprocess.run(["callgrind_control", "--instr=on", str(os.getpid())], check=True, capture_output=True)
    order = []
    gc.disable()
    for name, (model, inputs) in built.items():
        with torch.no_grad():
            for kind, run in runs(model, inputs).items():
                run()
                run()
                functools.reduce(lambda _, __: (run(), None)[1], range(COUNTED_RUNS), None)
                order.append((name, kind))
                gc.collect()
    with open(out, "w") as file:
        json.dump(order, file)


def _l2_cache() -> str:
    """This machine's per-core level-2 cache as valgrind's ``size,ways,line`` (Linux sysfs; 2 MiB,
    16-way, 64-byte lines where it cannot be read)."""
    folder = "/sys/devices/system/cpu/cpu0/cache/index2"
    try:
        with open(f"{folder}/size") as size, open(f"{folder}/ways_of_associativity") as ways, \
                open(f"{folder}/coherency_line_size") as line:
            return f"{int(size.read().strip().rstrip('K')) * 1024},{ways.read().strip()},{line.read().strip()}"
    except (OSError, ValueError):
        return "2097152,16,64"


def instruction_rows(cache: bool = False) -> list[list[str]]:
    """Instructions per run of each kind on each counted model, from one process under callgrind;
    with ``cache``, also the misses of a simulated level-2 cache (this machine's) per run: reads
    of memory that a run's own footprint, or the one before it, pushed out (the time that the
    instruction counts do not show)."""
    simulate = ["--cache-sim=yes", f"--LL={_l2_cache()}"] if cache else []
    with tempfile.TemporaryDirectory() as folder:
        order_file = os.path.join(folder, "order.json")
        subprocess.run(["valgrind", "--tool=callgrind", *simulate, "--instr-atstart=no", "--collect-atstart=no",
                        "--toggle-collect=functools_reduce",
                        "--dump-after=functools_reduce", f"--callgrind-out-file={folder}/cg.out",
                        sys.executable, __file__, "--count", order_file], check=True, capture_output=True)
        with open(order_file) as file:
            order = [tuple(entry) for entry in json.load(file)]
        counts, misses = {}, {}
        for number, key in enumerate(order, 1):
            with open(f"{folder}/cg.out.{number}") as dump:
                lines = dump.read().splitlines()
            events = next(line for line in lines if line.startswith("events:")).split()[1:]
            totals = dict(zip(events, map(int, next(line for line in lines if line.startswith("totals:")).split()[1:])))
            counts[key] = totals["Ir"] / COUNTED_RUNS
            misses[key] = sum(totals.get(event, 0) for event in ("ILmr", "DLmr", "DLmw")) / COUNTED_RUNS
    rows = []
    for name in COUNTED:
        for table in (counts, misses) if cache else (counts,):
            c = {kind: table[name, kind] for _, kind in filter(lambda key: key[0] == name, order)}
            rows.append([name if table is counts else "  L2 misses", *(f"{c[kind]:,.0f}" for kind in
                                                                       ("raw", "floor", "trace", "floor fixed", "trace fixed")),
                         f"{c['trace'] / c['floor']:.2f}x",
                         f"{(c['trace'] - c['trace fixed']) / (c['floor'] - c['floor fixed']):.2f}x"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7,
                        help="rounds of timed runs per model (one run of each kind a round); each kind's best is kept")
    parser.add_argument("--rounds", type=int, default=7, help=f"rounds of the paired table ({PAIRED})")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory table")
    parser.add_argument("--callgrind", action="store_true",
                        help="count instructions (valgrind) instead of timing; no memory table")
    parser.add_argument("--cache-sim", action="store_true",
                        help="with --callgrind: also count the misses of a simulated level-2 cache")
    parser.add_argument("--peak", nargs=2, metavar=("MODEL", "MODE"), help=argparse.SUPPRESS)
    parser.add_argument("--count", metavar="ORDER_FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.peak:
        print(json.dumps(peak(*args.peak)))
        return
    if args.count:
        count(args.count)
        return
    if args.callgrind:
        print(f"instructions per run (callgrind; {COUNTED_RUNS} runs after 2 warm-ups, collector off); fixed: the "
              "hollow model; per op: (trace - trace fixed) / (floor - floor fixed)"
              + ("; below each model, its simulated level-2 cache misses per run" if args.cache_sim else ""))
        print(format_table(["model", "raw", "floor", "trace", "floor fixed", "trace fixed", "trace/floor",
                            "per-op trace/floor"], instruction_rows(args.cache_sim)))
        return
    rows = []
    for name, (make_model, make_inputs) in MODELS.items():
        torch.manual_seed(0)
        model, inputs = make_model().eval(), make_inputs()
        with torch.no_grad():
            times = timings(model, inputs, args.repeat)
            ops, calls = len(tl.trace(model, *inputs).ops), floor(model, inputs)
        best = best_of(times)
        raw, low, traced, full = best["raw"], best["floor"], best["trace"], best["read"]
        low_fixed, fixed = best["floor fixed"], best["trace fixed"]
        rows.append([
            name, str(ops), f"{raw * 1e3:.2f}", f"{low * 1e3:.2f}", f"{traced * 1e3:.2f}", f"{full * 1e3:.2f}",
            f"{low / raw:.2f}x", f"{traced / raw:.2f}x", f"{traced / low:.2f}x", f"{full / low:.2f}x",
            f"{low_fixed * 1e3:.3f}", f"{fixed * 1e3:.3f}",
            f"{(low - low_fixed) * 1e6 / calls:.1f}", f"{(traced - fixed) * 1e6 / ops:.1f}",
            f"{(traced - fixed) / (low - low_fixed):.2f}x", f"{per_op_ratio(times):.2f}x",
        ])
    print("trace: tl.trace alone; +read: tl.trace and the first full read of its records (built on first read); "
          "fixed: the hollow model (same modules, forward returns its input) under the floor and under tl.trace; "
          "per op: the rest, trace - trace fixed against floor - floor fixed (the model's own ops in both), from each "
          "kind's best, and per round (each round's four runs, back to back), its median over the rounds")
    print(format_table(["model", "ops", "raw ms", "floor ms", "trace ms", "+read ms", "floor/raw", "trace/raw",
                        "trace/floor", "+read/floor", "floor fixed ms", "trace fixed ms",
                        "floor per-op us", "trace per-op us", "per-op trace/floor", "per round, median"], rows))
    print()
    print("per op alone (time per extra op; trace/floor added: what the trace adds to the raw op over what the "
          "floor adds)")
    print(format_table(["model", "raw us/op", "floor us/op", "trace us/op", "+read us/op", "trace/floor",
                        "+read/floor", "trace/floor added"], marginal(args.repeat)))
    print()
    print(f"{PAIRED}, {args.rounds} rounds of every kind (median of each round's ratio to raw; page faults "
          "and system time per timed run)")
    print(format_table(["kind", "/raw", "median ms", "page faults", "system ms"], paired(args.rounds)))
    if not args.no_memory:
        print()
        print("peak resident memory added by one forward pass (MB, fresh process each) and what the trace holds (MB)")
        print(format_table(["model", "raw", "trace", "held", 'save="none"', "held"], memory_rows()))


if __name__ == "__main__":
    main()
