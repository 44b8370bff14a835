"""A check report drawn: the trace, rolled, coloured by how the prediction fared, with a legend.

Predicted layers are green, unpredicted red, mismatched amber (with what was predicted), and
predicted layers that did not run are drawn dashed in their module's box; inputs, outputs and
buffer versions are not compared and keep their usual look.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from torchlens.analysis.dot import Drawing, to_digraph

from ..records import Layer
from .modules import ModuleTree
from .trace_view import Settings, TraceDrawing

if TYPE_CHECKING:
    from ..predict import PredictionReport

#: Status -> (fill, border) of a node.
STATUS = {
    "predicted": ("#e3f4e1", "#3c8d3c"),
    "unpredicted": ("#fde2e1", "#c0392b"),
    "mismatched": ("#fff0c2", "#b7791f"),
    "unexecuted": ("#ffffff", "#888888"),
}


def legend() -> list[str]:
    """A small boxed key of the four statuses, as DOT statements."""
    lines = ['subgraph "cluster_legend" {', 'label="check" fontsize="10" style="rounded" color="#bbbbbb"']
    previous: Optional[str] = None
    for status, (fill, border) in STATUS.items():
        style = "rounded,dashed,filled" if status == "unexecuted" else "rounded,filled"
        lines.append(f'"legend {status}" [label="{status}" fillcolor="{fill}" color="{border}" style="{style}"]')
        if previous:
            lines.append(f'"{previous}" -> "legend {status}" [style="invis"]')
        previous = f"legend {status}"
    lines.append("}")
    return lines


def draw_report(report: "PredictionReport", direction: str = "TB", path: Any = None) -> Drawing:
    """See :meth:`PredictionReport.draw`."""
    trace, pred = report.trace, report.prediction
    settings = Settings("rolled", trace.options.capture.show_buffers, False, 0, direction)
    drawing = TraceDrawing(trace, settings, ModuleTree.of(trace, None, None))
    scene = drawing.rolled()
    scene.title = (f"{trace.modules['self'].type_name}: trace checked against the prediction, "
                   f"coverage {report.coverage:.1%}")
    unpredicted = {m.layer_label for m in report.unpredicted}
    mismatched = {m.layer_label: m for m in report.mismatched}
    for layer in trace.layers:
        node = scene.nodes.get(layer.layer_label)
        if node is None:
            continue
        if not _compared(layer):
            node.attrs["fillcolor"] = "white"  # not compared: no status colour
            continue
        status = "unpredicted" if layer.layer_label in unpredicted else "mismatched" if layer.layer_label in mismatched else "predicted"
        fill, border = STATUS[status]
        node.attrs.update(fillcolor=fill, color=border)
        if status == "mismatched":
            m = mismatched[layer.layer_label]
            node.label += f"\npredicted {m.what} {m.predicted}"
    fill, border = STATUS["unexecuted"]
    for label, why in report.unexecuted:
        predicted = pred[label] if pred is not None and label in pred else None
        box = None
        if predicted is not None and predicted.module in trace.modules and predicted.module != "self":
            box = drawing.module_cluster(predicted.module)
        scene.node(f"unexecuted {label}", f"{label} (not run)\n{why[:60]}", box, fillcolor=fill, color=border,
                   style="rounded,dashed,filled", fontcolor="#666666")
    scene.extra.extend(legend())
    return to_digraph(scene, path)


def _compared(layer: Layer) -> bool:
    return not (layer.is_input or layer.is_output or layer.is_buffer)
