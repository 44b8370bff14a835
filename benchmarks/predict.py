"""Static prediction: speed (cold and warm, side by side) and fidelity on real code.

``python benchmarks/predict.py`` times ``tl.predict`` on GPT-2 small (transformers' modeling
code, 12 blocks, random init, 16 tokens): per model, a fresh Python process builds it and
predicts it once (**cold**: torch, transformers and the model are imported and built before
the clock starts; nothing of the prediction is: its source reading, torch's fake-tensor
machinery and the fakes of the parameters), then predicts it again ``--repeat`` times (**warm**:
the same model in the same process). Cold is the minimum over ``--cold-runs`` processes,
warm the minimum over its repeats, ``trace ms`` one ``tl.trace`` and ``coverage`` what
``trace.check_prediction`` gives. The last columns say whether the issue-12 targets (cold
under 1 s, warm under 50 ms) are met.

``--vision`` does the same for torchvision classification and segmentation models and timm
models (random weights, one 224x224 image; run it where torchvision and timm import);
``--all`` takes every torchvision classification and segmentation model instead of a
selection (one fresh process each), and prints all of them, slowest first, and whether any
prediction ran past 10 s; with ``--check`` each is also traced and checked (``ok``, coverage).
Children run with Python's bytecode cache on (``PYTHONDONTWRITEBYTECODE`` dropped), as a
user's installed package runs: without it every process compiles torchlens afresh (~0.4 s).

``--zoo`` predicts and traces the issue-12 fidelity targets (tiny random Hugging Face models,
torch's transformer, GRU and attention in every calling form) with example inputs, and prints
for each: coverage, whether the check is ok, the distinct gaps and notes the prediction gave,
and the prediction's time. A row that is not ok must have a gap or a note (no gap means right).

    python benchmarks/predict.py [--repeat 5] [--cold-runs 3] [--vision [--all]] [--zoo]
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import time
from typing import Callable, Iterator, Optional

import torch
from torch import nn

import torchlens as tl
from torchlens.analysis.table import format_table

#: The issue-12 targets, in seconds.
COLD_TARGET, WARM_TARGET, CEILING = 1.0, 0.05, 10.0
#: torchvision and timm models timed by ``--vision`` (``--all``: every torchvision one).
VISION = ["resnet50", "mobilenet_v3_large", "efficientnet_b0", "convnext_tiny", "densenet121", "vit_b_16",
          "swin_t", "regnet_y_400mf", "fcn_resnet50", "deeplabv3_resnet50", "deeplabv3_mobilenet_v3_large",
          "lraspp_mobilenet_v3_large", "timm:efficientformerv2_s0", "timm:convnext_tiny",
          "timm:vit_small_patch16_224", "timm:resnet50d"]


def build(name: str) -> tuple[nn.Module, tuple]:
    """A model by name (``gpt2``, a torchvision model, ``timm:NAME``) and its example inputs."""
    torch.manual_seed(0)
    if name == "gpt2":
        import transformers

        transformers.logging.set_verbosity_error()
        config = transformers.GPT2Config(n_layer=12)
        return transformers.GPT2Model(config).eval(), (torch.randint(0, config.vocab_size, (1, 16)),)
    image = (torch.randn(1, 3, 224, 224),)
    if name.startswith("timm:"):
        import timm

        return timm.create_model(name[5:], pretrained=False).eval(), image
    import torchvision

    builder = torchvision.models.get_model_builder(name)
    extra = {"weights_backbone": None} if "weights_backbone" in inspect.signature(builder).parameters else {}
    return torchvision.models.get_model(name, weights=None, **extra).eval(), image


def child(name: str, repeat: int, trace: bool) -> None:
    """In a fresh process: the cold prediction, the warm ones, and (``trace``) a check."""
    model, inputs = build(name)
    start, cpu = time.perf_counter(), time.process_time()
    pred = tl.predict(model, *inputs)
    cold, cold_cpu = time.perf_counter() - start, time.process_time() - cpu
    warm, warm_cpu = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        tl.predict(model, *inputs)
        warm.append(time.perf_counter() - start)
        warm_cpu.append(time.process_time() - cpu)
    out = {"cold": cold, "warm": min(warm), "cold_cpu": cold_cpu, "warm_cpu": min(warm_cpu), "layers": len(pred),
           "gaps": len(pred.gap_lines())}
    if trace:
        start = time.perf_counter()
        traced = tl.trace(model, *inputs)
        out["trace"] = time.perf_counter() - start
        report = traced.check_prediction(pred)
        out["coverage"], out["ok"] = report.coverage, report.ok
    print(json.dumps(out))


def fresh(name: str, repeat: int, trace: bool) -> dict:
    """Run :func:`child` in a new process launched as this one was (also under a wrapper)."""
    argv = list(getattr(sys, "orig_argv", [sys.executable, __file__]))
    script = next(k for k, arg in enumerate(argv) if os.path.realpath(arg) == os.path.realpath(__file__))
    command = [*argv[:script + 1], "--child", name, "--repeat", str(repeat)] + (["--trace"] if trace else [])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode:
        raise RuntimeError(f"{name}: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def speed(names: list[str], repeat: int, cold_runs: int, trace: bool) -> list[dict]:
    rows, results = [], []
    for name in names:
        runs = [fresh(name, repeat, trace and k == 0) for k in range(cold_runs)]
        result = {**runs[0], "name": name, **{key: min(r[key] for r in runs)
                                               for key in ("cold", "warm", "cold_cpu", "warm_cpu")}}
        results.append(result)
        row = [name, str(result["layers"]), str(result["gaps"]), f"{result['cold'] * 1e3:.0f}",
               f"{result['cold_cpu'] * 1e3:.0f}", f"{result['warm'] * 1e3:.0f}", f"{result['warm_cpu'] * 1e3:.0f}"]
        if trace:
            row += [f"{result['trace'] * 1e3:.0f}", f"{result['coverage']:.1%}"]
        row += ["yes" if result["cold"] < COLD_TARGET else "no", "yes" if result["warm"] < WARM_TARGET else "no"]
        rows.append(row)
    heads = ["model", "layers", "gap lines", "cold ms", "cold cpu", "warm ms", "warm cpu",
             *(["trace ms", "coverage"] if trace else []), "cold < 1 s", "warm < 50 ms"]
    print(format_table(heads, rows))
    print(f"cold: the first tl.predict in a fresh process (model built, nothing of the prediction loaded), "
          f"minimum of {cold_runs} processes; warm: the same model again in that process, minimum of {repeat}; "
          f"ms: wall clock (the targets), cpu: the process's CPU time (what a loaded machine inflates least)")
    return results


def vision(repeat: int, cold_runs: int, every: bool, names: Optional[list[str]], check: bool) -> None:
    if not every:
        speed(names or VISION, repeat, cold_runs, trace=False)
        return
    import torchvision

    names = [*torchvision.models.list_models(torchvision.models),
             *torchvision.models.list_models(torchvision.models.segmentation)]
    results = []
    for name in names:
        try:
            results.append({**fresh(name, 1, check), "name": name})
        except RuntimeError as error:
            print(f"skipped {error}")
    results.sort(key=lambda r: -r["cold"])
    print(format_table(["model", "layers", "gap lines", "cold ms", "cold cpu", "warm ms",
                        *(["ok", "coverage"] if check else [])],
                       [[r["name"], str(r["layers"]), str(r["gaps"]), f"{r['cold'] * 1e3:.0f}",
                         f"{r['cold_cpu'] * 1e3:.0f}", f"{r['warm'] * 1e3:.0f}",
                         *(["yes" if r["ok"] else "no", f"{r['coverage']:.1%}"] if check else [])]
                        for r in results]))
    cold, cpu = [r["cold"] for r in results], [r["cold_cpu"] for r in results]
    print(f"{len(results)} torchvision models, one process each: cold under 1 s for "
          f"{sum(c < COLD_TARGET for c in cold)} (CPU time under 1 s: {sum(c < COLD_TARGET for c in cpu)}), "
          f"slowest {max(cold):.1f} s, past {CEILING:.0f} s: {sum(c > CEILING for c in cold)}")


def zoo() -> Iterator[tuple[str, Callable[[], tuple[nn.Module, tuple, dict]]]]:
    """The issue-12 targets: (name, build) with build giving (model, args, kwargs)."""
    import transformers

    transformers.logging.set_verbosity_error()
    ids = torch.randint(0, 50, (1, 6))
    small = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, vocab_size=50)
    causal = dict(small, num_key_value_heads=1, max_position_embeddings=32)
    for name, config, cls in [
            ("LlamaForCausalLM", transformers.LlamaConfig, transformers.LlamaForCausalLM),
            ("MistralForCausalLM", transformers.MistralConfig, transformers.MistralForCausalLM),
            ("Qwen2ForCausalLM", transformers.Qwen2Config, transformers.Qwen2ForCausalLM)]:
        yield name, lambda config=config, cls=cls: (cls(config(**causal)).eval(), (ids,), {})
    yield "T5Model", lambda: (transformers.T5Model(transformers.T5Config(
        d_model=16, d_ff=32, num_layers=2, num_heads=2, d_kv=8, vocab_size=50, decoder_start_token_id=0)).eval(),
        (ids,), {"decoder_input_ids": ids})
    yield "BertModel", lambda: (transformers.BertModel(transformers.BertConfig(**small)).eval(), (ids,), {})
    yield "GPT2LMHeadModel", lambda: (transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_layer=2, n_embd=16, n_head=2, vocab_size=50, n_positions=16)).eval(), (ids,), {})
    yield "ViTModel", lambda: (transformers.ViTModel(transformers.ViTConfig(
        image_size=8, patch_size=4, num_channels=3, **{k: v for k, v in small.items() if k != "vocab_size"})).eval(),
        (torch.randn(1, 3, 8, 8),), {})
    seq, mem = torch.randn(5, 2, 8), torch.randn(7, 2, 8)
    yield "nn.Transformer", lambda: (nn.Transformer(8, 2, 1, 1, 16).eval(), (mem, seq), {})
    yield "nn.TransformerDecoderLayer", lambda: (nn.TransformerDecoderLayer(8, 2, 16).eval(), (seq, mem), {})
    yield "nn.GRU", lambda: (nn.GRU(8, 4, num_layers=2), (seq,), {})
    q, k, v = torch.randn(5, 2, 8), torch.randn(7, 2, 8), torch.randn(7, 2, 8)
    mask = torch.zeros(5, 7, dtype=torch.bool)
    yield "MHA self, batch_first", lambda: (nn.MultiheadAttention(8, 2, batch_first=True).eval(),
                                            (q.transpose(0, 1),) * 3, {})
    yield "MHA distinct q/k/v", lambda: (nn.MultiheadAttention(8, 2).eval(), (q, k, v), {})
    yield "MHA cross, mask, no weights", lambda: (nn.MultiheadAttention(8, 2).eval(), (q, k, k),
                                                  {"attn_mask": mask, "need_weights": False})
    yield "MHA kdim/vdim", lambda: (nn.MultiheadAttention(8, 2, kdim=6, vdim=4).eval(),
                                    (q, torch.randn(7, 2, 6), torch.randn(7, 2, 4)), {})


def zoo_table() -> None:
    rows = []
    for name, build in zoo():
        torch.manual_seed(0)
        model, args, kwargs = build()
        start = time.perf_counter()
        pred = tl.predict(model, *args, forward_kwargs=kwargs)
        elapsed = time.perf_counter() - start
        report = tl.trace(model, *args, forward_kwargs=kwargs).check_prediction(pred)
        said = len(dict.fromkeys(g.why for g in pred.gaps)) + len(pred.notes)
        rows.append([name, str(report.ops), f"{report.coverage:.1%}", "yes" if report.ok else "no",
                     str(len(report.unpredicted)), str(len(report.mismatched)), str(said),
                     f"{elapsed * 1e3:.0f}", "" if report.ok or said else "SILENT"])
    print(format_table(["model", "ops", "coverage", "ok", "unpredicted", "mismatched", "gaps+notes",
                        "predict ms", ""], rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="warm predictions per process")
    parser.add_argument("--cold-runs", type=int, default=3, help="fresh processes per model (cold: their minimum)")
    parser.add_argument("--vision", action="store_true", help="torchvision and timm models instead of GPT-2")
    parser.add_argument("--all", action="store_true", help="with --vision: every torchvision model")
    parser.add_argument("--models", nargs="+", help="with --vision: these models instead of the selection")
    parser.add_argument("--check", action="store_true", help="with --vision --all: trace and check each model too")
    parser.add_argument("--zoo", action="store_true", help="fidelity on the issue-12 target models instead")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.repeat, args.trace)
    elif args.zoo:
        zoo_table()
    elif args.vision:
        vision(args.repeat, args.cold_runs, args.all, args.models, args.check)
    else:
        speed(["gpt2"], args.repeat, args.cold_runs, trace=True)


if __name__ == "__main__":
    main()
