"""Static prediction speed: ``tl.predict`` on GPT-2 (transformers' modeling code), cold and warm.

Cold is the first prediction in a fresh process: every source file the model reaches
(``modeling_gpt2.py``, ``masking_utils.py``, ``cache_utils.py``, torch's ``functional.py``...)
is parsed, compiled twice and aligned. Warm is a later prediction of the same model, with
those per-file tables cached. Also prints ``tl.trace`` time and the coverage the check gives.

    python benchmarks/predict.py [--layers 12] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import torchlens as tl
from torchlens.analysis.table import format_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12, help="GPT-2 blocks (12 = GPT-2 small)")
    parser.add_argument("--repeat", type=int, default=5, help="warm predictions to time")
    args = parser.parse_args()

    import transformers

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=args.layers)
    model = transformers.GPT2Model(config).eval()
    ids = torch.randint(0, config.vocab_size, (1, 16))

    start = time.perf_counter()
    pred = tl.predict(model, ids)
    cold = time.perf_counter() - start
    warm = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        tl.predict(model, ids)
        warm.append(time.perf_counter() - start)
    start = time.perf_counter()
    trace = tl.trace(model, ids)
    traced = time.perf_counter() - start
    report = trace.check_prediction(pred)

    rows = [[f"GPT-2, {args.layers} blocks", str(len(pred)), f"{cold * 1e3:.0f}", f"{statistics.median(warm) * 1e3:.0f}",
             f"{traced * 1e3:.0f}", f"{report.coverage:.1%}"]]
    print(format_table(["model", "predicted layers", "cold ms", "warm ms", "trace ms", "coverage"], rows))


if __name__ == "__main__":
    main()
