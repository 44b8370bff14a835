"""``tl.predict`` and ``trace.check_prediction``: layers predicted before a model runs, then checked.

``tl.predict(model)`` reads the model's source and bytecode (:mod:`analysis`) and predicts
every layer's call site, label and passes. ``trace.check_prediction(pred)`` compares, by the
exact grouping key, what the capture recorded with what was predicted: runtime layers with
no predicted site (with the reason the prediction gave up there), predicted layers that
never ran, and layers whose label or pass count differ; plus a coverage figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Optional, Union

from torch import nn

from torchlens.analysis.arguments import check_instance, wrong_type
from torchlens.analysis.keys import LayerKey, layer_labels
from torchlens.analysis.predict import predict_class, predict_module
from torchlens.analysis.prediction import Prediction

from .torch_host import TorchHost, quiet_fake_errors

if TYPE_CHECKING:  # (not imported by a prediction: the records of a trace load ~40 ms of modules)
    from .records import Layer
    from .trace import Trace

__all__ = ["predict", "check_prediction", "PredictionReport", "Miss", "Mismatch"]


def predict(model_or_class: Union[nn.Module, type], *inputs: Any, forward_kwargs: Optional[Mapping[str, Any]] = None,
            max_steps: Optional[int] = None, max_seconds: Optional[float] = None) -> Prediction:
    """Predict the layers ``tl.trace(model, *inputs, forward_kwargs=...)`` will record, without
    running the model.

    ``inputs`` and ``forward_kwargs`` (as ``tl.trace`` takes them) are optional: a tensor says
    "this argument is a tensor", anything else is a constant; parameters not given are tensors
    when they have no default. A class is read
    from its source alone (``__init__`` tells its submodules). ``max_steps`` bounds the
    interpreted statements, calls and loop items (1,000,000 by default; where it stops is the
    same on every machine), ``max_seconds`` the CPU time spent interpreting as an outer guard (5 s
    of the predicting thread's CPU time by default, so a loaded machine does not cut it short;
    reading source files not counted; ``math.inf``: no clock): past either the
    prediction stops, and a gap and a note say where.
    """
    if forward_kwargs is not None:
        check_instance("tl.predict(forward_kwargs=...)", forward_kwargs, Mapping,
                       "a mapping of keyword arguments for forward")
    kwargs = dict(forward_kwargs or {})
    if not (isinstance(model_or_class, nn.Module)
            or isinstance(model_or_class, type) and issubclass(model_or_class, nn.Module)):
        raise wrong_type("tl.predict(model_or_class, ...)", model_or_class, "an nn.Module or an nn.Module subclass",
                         "pass the model (tl.predict(model)) or its class (tl.predict(MyModel))")
    with quiet_fake_errors():
        if isinstance(model_or_class, nn.Module):
            return predict_module(model_or_class, *inputs, host=TorchHost(model_or_class), max_steps=max_steps,
                                  max_seconds=max_seconds, **kwargs)
        return predict_class(model_or_class, *inputs, host=TorchHost(None), max_steps=max_steps,
                             max_seconds=max_seconds, **kwargs)


@dataclass(frozen=True, slots=True)
class Miss:
    """A runtime layer the prediction has no site for."""

    #: Runtime label, op name, module address and where it was written.
    layer_label: str
    func_name: str
    module: str
    where: str
    #: Why the prediction has no site there (the place it stopped following the program).
    reason: str
    #: Ops (passes) of the layer.
    ops: int


@dataclass(frozen=True, slots=True)
class Mismatch:
    """A layer predicted at the right site but with another label or pass count."""

    layer_label: str
    predicted_label: str
    #: ``"label"`` or ``"passes"``.
    what: str
    predicted: str
    actual: str


@dataclass(frozen=True, slots=True)
class PredictionReport:
    """How a capture compares with a prediction, by exact call-site key."""

    #: Runtime layers with no predicted site.
    unpredicted: tuple[Miss, ...]
    #: Predicted layers that did not run: ``(label, why it may not have)``.
    unexecuted: tuple[tuple[str, str], ...]
    #: Layers predicted at the right site with another label or pass count.
    mismatched: tuple[Mismatch, ...]
    #: Share of runtime ops whose site was predicted with the right label (0..1).
    coverage: float
    #: Runtime ops compared (inputs and outputs left out).
    ops: int
    #: Labels of the unexecuted layers predicted as optional (a branch or loop the prediction
    #: could not decide): their not running is no fault.
    optional: frozenset[str] = frozenset()
    #: The trace and the prediction compared, for :meth:`draw`.
    trace: Any = field(default=None, repr=False, compare=False)
    prediction: Optional[Prediction] = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """Nothing unpredicted, nothing mismatched, and only optional layers unexecuted."""
        return not self.unpredicted and not self.mismatched and all(
            label in self.optional for label, _ in self.unexecuted)

    def draw(self, direction: str = "TB", path: Any = None) -> Any:
        """The trace drawn rolled and coloured by this check (predicted, unpredicted, mismatched,
        unexecuted dashed) with a legend; ``path`` writes SVG, PNG, PDF or DOT by its suffix."""
        from .draw.report import draw_report

        return draw_report(self, direction, path)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        from torchlens.analysis.dot import svg_bundle

        return svg_bundle(self, self.draw())

    def __str__(self) -> str:
        lines = [f"prediction coverage {self.coverage:.1%} of {self.ops} ops; "
                 f"{len(self.unpredicted)} unpredicted, {len(self.unexecuted)} unexecuted, "
                 f"{len(self.mismatched)} mismatched layers"]
        lines += [f"  unpredicted {m.layer_label} ({m.module}, {m.where}): {m.reason}" for m in self.unpredicted]
        lines += [f"  unexecuted {label}: {why}" for label, why in self.unexecuted]
        lines += [f"  mismatched {m.layer_label}: {m.what} predicted {m.predicted}, got {m.actual}"
                  for m in self.mismatched]
        return "\n".join(lines)


def runtime_key(layer: Layer) -> LayerKey:
    """A runtime layer's grouping key in the prediction's terms."""
    return LayerKey(layer.module, layer.call_site.frames, layer.func_name, layer.ops[0].graph.site_key[2])


def check_prediction(trace: "Trace", pred: Prediction) -> PredictionReport:
    """Compare a trace with a prediction of the same model (see :class:`PredictionReport`)."""
    check_instance("trace.check_prediction(pred)", pred, Prediction, "a tl.predict(...) result",
                   "predict the model first: trace.check_prediction(tl.predict(model, x))")
    layers = [layer for layer in trace.layers if layer.is_compute]
    matched: dict[int, Layer] = {}
    for layer in layers:
        found = pred.find(runtime_key(layer))
        if found is not None:
            matched[id(found)] = layer
    labels = _labels_given_runs(pred, matched)
    unpredicted, mismatched, good = [], [], 0
    for layer in layers:
        found = pred.find(runtime_key(layer))
        if found is None:
            unpredicted.append(Miss(layer.layer_label, layer.func_name, layer.module, _where(layer),
                                    _reason(pred, layer), layer.num_passes))
            continue
        label_ok = labels[id(found)] == layer.layer_label
        if not label_ok:
            mismatched.append(Mismatch(layer.layer_label, labels[id(found)], "label", labels[id(found)],
                                       layer.layer_label))
        elif not found.count.admits(layer.num_passes):
            mismatched.append(Mismatch(layer.layer_label, found.layer_label, "passes", str(found.count),
                                       str(layer.num_passes)))
        if label_ok:
            good += layer.num_passes
    missing = [p for p in pred.layers if id(p) not in matched]
    unexecuted = tuple(
        (p.layer_label, ("optional: " if p.optional else "") + (p.passes_note or p.note or "predicted to run"))
        for p in missing)
    total = sum(layer.num_passes for layer in layers)
    return PredictionReport(tuple(unpredicted), unexecuted, tuple(mismatched), good / total if total else 1.0, total,
                            frozenset(p.layer_label for p in missing if p.optional), trace, pred)


def _labels_given_runs(pred: Prediction, matched: dict[int, Layer]) -> dict[int, str]:
    """Predicted labels once the optional layers that did not run are left out."""
    ran = [layer for layer in pred.layers if not layer.optional or id(layer) in matched]
    return {id(layer): label for layer, label in zip(ran, layer_labels(layer.func_name for layer in ran))}


def _where(layer: Layer) -> str:
    place = layer.call_site.innermost
    return str(place) if place is not None else "(no Python frame)"


def _reason(pred: Prediction, layer: Layer) -> str:
    """Why the prediction has no site for a runtime layer: the gap whose chain it extends."""
    best: Optional[tuple[int, str]] = None
    for gap in pred.gaps:
        if gap.chain is None or gap.scope != layer.module and not _inside(layer.module, gap.scope):
            continue
        depth = _common_prefix(gap.chain, layer.call_site.frames) if gap.scope == layer.module else 0
        if best is None or depth > best[0]:
            best = (depth, gap.why)
    if best is not None:
        return best[1]
    unknown = [p for p in pred.layers if p.call_site is None and p.module == layer.module
               and p.func_name == layer.func_name]
    if unknown:
        return unknown[0].note
    if not any(p.module == layer.module for p in pred.layers):
        return f"module {layer.module} was never reached by the prediction"
    return "no predicted call site (a path the prediction did not follow)"


def _inside(module: str, scope: str) -> bool:
    return scope == "self" or module.startswith(scope + ".")


def _common_prefix(a: tuple, b: tuple) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n

