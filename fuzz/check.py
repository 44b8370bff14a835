"""The properties checked on every generated model, as a list of disagreements.

1. capture == oracle: compute layers (label, func, passes, scope, params), ops in order,
   module calls; buffer version layers once the capture has them (issue 5);
2. the prediction (given the example inputs) == oracle, wherever the oracle says the pass
   count is static and the prediction reports no gap and no note; and on every layer, the
   prediction checked against the capture (symbolic counts bound to the runtime passes,
   labels given what ran) is ok unless it reports a gap or a note;
3. traced output == untraced output, exactly;
4. ``Trace.check()`` holds;
5. two traces give the same labels.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Any, Optional

import torch

import torchlens as tl

from .build import GeneratedModel
from .oracle import Expected

#: Property names, in the order they are checked.
PROPERTIES = ("capture", "prediction", "output", "check", "retrace")


@dataclass(frozen=True)
class Disagreement:
    """One property that failed on one model."""

    #: Which property (one of :data:`PROPERTIES`).
    prop: str
    #: What differed, readable.
    message: str

    def __str__(self) -> str:
        return f"[{self.prop}] {self.message}"


def layer_rows(trace: Any) -> list[tuple]:
    """``(label, func, passes, scope, params)`` of the trace's compute layers."""
    return [(l.layer_label, l.func_name, l.num_passes, l.module, tuple(l.params))
            for l in trace.layers if l.is_compute]


def expected_rows(expected: Expected) -> list[tuple]:
    """The same rows as :func:`layer_rows`, from the oracle."""
    return [(l.label, l.func, l.passes, l.module, l.params) for l in expected.layers]


def check_model(model: GeneratedModel) -> list[Disagreement]:
    """Run every property on ``model``; an empty list means all hold."""
    inputs = model.inputs()
    try:
        untraced = model.make()(*inputs)
    except Exception as error:  # the generated model itself is broken: a harness bug
        return [Disagreement("output", f"the untraced model raised {type(error).__name__}: {error}")]
    try:
        first = tl.trace(model.make(), *inputs)
        second = tl.trace(model.make(), *inputs)
    except Exception as error:
        return [Disagreement("capture", f"tl.trace raised {type(error).__name__}: {error}")]
    found = _compare_capture(first, model.expected)
    found += _compare_prediction(model, first)
    found += _compare_output(first, untraced)
    try:
        first.check()
    except Exception as error:
        found.append(Disagreement("check", f"{type(error).__name__}: {error}"))
    if _labels(first) != _labels(second):
        found.append(Disagreement("retrace", "two traces of one model labelled differently:\n"
                                  + _diff(_labels(first), _labels(second), "first", "second")))
    return found


def _compare_capture(trace: Any, expected: Expected) -> list[Disagreement]:
    found = []
    actual, wanted = layer_rows(trace), expected_rows(expected)
    if actual != wanted:
        found.append(Disagreement("capture", "layers (label, func, passes, scope, params):\n"
                                  + _diff(wanted, actual, "oracle", "capture")))
    else:
        ops = [op.label for op in trace.ops if op.layer.is_compute]
        if ops != list(expected.ops):
            found.append(Disagreement("capture", "ops in capture order:\n"
                                      + _diff(list(expected.ops), ops, "oracle", "capture")))
    calls = {address: module.num_calls for address, module in trace.modules.items()}
    if calls != expected.calls:
        found.append(Disagreement("capture", f"module calls: oracle {expected.calls}, capture {calls}"))
    buffers = [layer.num_passes for layer in trace.layers if layer.is_buffer]
    if buffers and expected.buffers_predicted:
        wanted_buffers = sorted(passes for _, passes in expected.buffer_layers)
        if sorted(buffers) != wanted_buffers:
            found.append(Disagreement("capture", f"buffer version layers' passes: oracle "
                                      f"{wanted_buffers}, capture {sorted(buffers)}"))
    return found


def _compare_prediction(model: GeneratedModel, trace: Any) -> list[Disagreement]:
    """Static layers against the oracle exactly; every layer against the capture (symbolic
    counts bound to the runtime passes): a prediction with no gap and no note must check ok."""
    if not model.expected.predictable:
        return []
    try:
        # The step budget alone: a campaign's verdicts depend on its seed, never on the load.
        # The example inputs give the run their shapes (loop bounds, branches, output counts).
        prediction = tl.predict(model.make(), *model.inputs(), max_seconds=math.inf)
    except Exception as error:
        return [Disagreement("prediction", f"tl.predict raised {type(error).__name__}: {error}")]
    if prediction is None:
        return []
    predicted = {layer.layer_label: layer for layer in prediction.layers}
    wrong = []
    exact = not prediction.gaps and not prediction.notes  # a gap or note: not all of it claimed
    for layer in model.expected.layers:
        if not (layer.static and exact):
            continue
        guess = predicted.get(layer.label)
        got = None if guess is None else (guess.func_name, guess.num_passes)
        if got != (layer.func, layer.passes):
            wrong.append(f"  {layer.label}: oracle {(layer.func, layer.passes)}, prediction {got}")
    found = [Disagreement("prediction", "static layers:\n" + "\n".join(wrong))] if wrong else []
    report = trace.check_prediction(prediction)
    if not report.ok and not prediction.gaps and not prediction.notes:
        found.append(Disagreement("prediction", f"no gap and no note, yet the capture disagrees:\n{report}"))
    return found


def _compare_output(trace: Any, untraced: Any) -> list[Disagreement]:
    traced = trace[trace.output_layers[0]].ops[0].out
    same = (traced.shape == untraced.shape and traced.dtype == untraced.dtype
            and torch.equal(torch.nan_to_num(traced), torch.nan_to_num(untraced)))
    return [] if same else [Disagreement("output", "traced output differs from the untraced output")]


def _labels(trace: Any) -> list[tuple[str, int]]:
    return [(layer.layer_label, layer.num_passes) for layer in trace.layers] + [
        (op.label, 0) for op in trace.ops]


def _diff(wanted: list, actual: list, left: str, right: str) -> str:
    """The two lists side by side from their first difference (at most 12 rows)."""
    start = next((i for i, (a, b) in enumerate(zip(wanted, actual)) if a != b), min(len(wanted), len(actual)))
    rows = [f"  first difference at row {start} ({len(wanted)} {left} rows, {len(actual)} {right} rows)"]
    for i in range(start, min(start + 12, max(len(wanted), len(actual)))):
        a = wanted[i] if i < len(wanted) else "-"
        b = actual[i] if i < len(actual) else "-"
        rows.append(f"  {i:3d} {left}: {a}\n      {right}: {b}")
    return "\n".join(rows)
