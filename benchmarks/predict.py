"""Static prediction: speed on GPT-2 small (cold and warm) and fidelity on real code.

``python benchmarks/predict.py`` times ``tl.predict`` on GPT-2 (transformers' modeling code):
cold is the first prediction in a fresh process (every source file the model reaches is
parsed, compiled twice and aligned), warm a later prediction of the same model with those
per-file tables cached; it also prints ``tl.trace`` time and the coverage the check gives.

``python benchmarks/predict.py --zoo`` predicts and traces the issue-12 targets (tiny random
Hugging Face models, torch's transformer, GRU and attention in every calling form) with
example inputs, and prints for each: coverage, whether the check is ok, the distinct gaps
and notes the prediction gave, and the prediction's time. A row that is not ok must have a
gap or a note (no gap means right).

    python benchmarks/predict.py [--layers 12] [--repeat 5] [--zoo]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable, Iterator

import torch
from torch import nn

import torchlens as tl
from torchlens.analysis.table import format_table


def gpt2_speed(layers: int, repeat: int) -> None:
    import transformers

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=layers)
    model = transformers.GPT2Model(config).eval()
    ids = torch.randint(0, config.vocab_size, (1, 16))

    start = time.perf_counter()
    pred = tl.predict(model, ids)
    cold = time.perf_counter() - start
    warm = []
    for _ in range(repeat):
        start = time.perf_counter()
        tl.predict(model, ids)
        warm.append(time.perf_counter() - start)
    start = time.perf_counter()
    trace = tl.trace(model, ids)
    traced = time.perf_counter() - start
    report = trace.check_prediction(pred)

    rows = [[f"GPT-2, {layers} blocks", str(len(pred)), f"{cold * 1e3:.0f}", f"{statistics.median(warm) * 1e3:.0f}",
             f"{traced * 1e3:.0f}", f"{report.coverage:.1%}"]]
    print(format_table(["model", "predicted layers", "cold ms", "warm ms", "trace ms", "coverage"], rows))


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
        pred = tl.predict(model, *args, **kwargs)
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
    parser.add_argument("--layers", type=int, default=12, help="GPT-2 blocks (12 = GPT-2 small)")
    parser.add_argument("--repeat", type=int, default=5, help="warm predictions to time")
    parser.add_argument("--zoo", action="store_true", help="fidelity on the issue-12 target models instead")
    args = parser.parse_args()
    if args.zoo:
        zoo_table()
    else:
        gpt2_speed(args.layers, args.repeat)


if __name__ == "__main__":
    main()
