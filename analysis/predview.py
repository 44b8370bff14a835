"""Views of a :class:`~analysis.prediction.Prediction`: its drawing and its filtered table.

The drawing, made before the model runs:
One node per predicted layer, named by its predicted label, in its module's box (boxes nest by
address). A node shows the predicted passes where they are not one (``x3``, ``xN+1``, ``x0..1``,
``xlen(xs)``) and where the layer is written; a layer that may not run at all has a dashed
border, a place the prediction could not read a red one. The forward's tensor arguments and
returned tensors are ovals named as the capture will name them (``input_1``, ``output_1``)
where the prediction can number them. Edges are the predicted dataflow: from the layer or
input whose output an op takes to the op's layer (parameters are not drawn);
one into a layer drawn no later than its tail goes back round a loop (blue), labelled with the
passes it carries where the loop is unrolled (``1-2``, as the trace's drawing), ``loop`` where
one pass stands for all (a ``while`` with a tensor test).
``depth=k`` draws modules deeper than ``k`` as one node each (as the table folds them into one
row), ``collapse`` names modules (addresses, or a predicate over addresses) to draw as one node;
edges into and out of such a node are kept, edges inside it are not. Places it did not follow
are listed in a note.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Union

from .dot import BACK_EDGE, INPUT_FILL, LOOP, OUTPUT_FILL, Cluster, Drawing, Scene, edge_key, pass_label, to_digraph
from .errors import TorchLensValueError
from .explain import explain_predicted
from .table import fit_table, library_file

if TYPE_CHECKING:
    from .prediction import PredictedLayer, Prediction

ROOT = "self"
CLUSTER_FILL = "#f4f6fa"
UNKNOWN_COLOR = "#c0392b"


def passes_text(layer: "PredictedLayer") -> str:
    """``x3``, ``xN+1``, ``x0..1``; empty for exactly one pass."""
    return "" if layer.count.exact == 1 else f" x{layer.count}"


def module_box(scene: Scene, address: str, scopes: set[str], types: dict[str, str]) -> Optional[str]:
    """The box of module ``address`` (``None`` for the root), inside its nearest drawn ancestor,
    named inside it with its class (``fc (Linear)``) where ``types`` knows it."""
    if address == ROOT:
        return None
    if address not in scene.clusters:
        parts = address.split(".")
        above = next((".".join(parts[:k]) for k in range(len(parts) - 1, 0, -1) if ".".join(parts[:k]) in scopes), None)
        parent = module_box(scene, above, scopes, types) if above is not None else None
        name = address[len(above) + 1:] if above is not None else address
        label = f"{name} ({types[address]})" if address in types else name
        scene.clusters[address] = Cluster(address, label, parent, {
            "style": "rounded,filled", "fillcolor": CLUSTER_FILL, "color": "#8da2c0", "fontsize": "10",
            "labeljust": "l", "fontcolor": "#2d3f5f", "tooltip": address})
    return address


#: What ``Prediction.draw(collapse=...)`` takes: module addresses, or a predicate over them.
Collapse = Union[None, str, Iterable[str], Callable[[str], bool]]


class Folding:
    """Which module each predicted layer is drawn (or listed) in: modules deeper than ``depth``,
    and those ``collapse`` names, stand as one node (one table row) inside their nearest
    collapsed ancestor. A module's depth counts the modules with predicted layers from the root
    down to it."""

    def __init__(self, pred: "Prediction", depth: Optional[int] = None, collapse: Collapse = None) -> None:
        if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 0):
            raise TorchLensValueError(f"depth must be None or a whole number >= 0, got {depth!r}")
        if collapse is None or callable(collapse):
            self.wants: Callable[[str], bool] = collapse or (lambda address: False)
        else:
            names = {collapse} if isinstance(collapse, str) else set(collapse)
            self.wants = names.__contains__
        self.depth = depth
        self.scopes = {layer.module for layer in pred.layers}

    def depth_of(self, address: str) -> int:
        parts = address.split(".")
        return 0 if address == ROOT else sum(".".join(parts[:k]) in self.scopes for k in range(1, len(parts) + 1))

    def box(self, address: str) -> Optional[str]:
        """The outermost collapsed module holding ``address`` (itself included), or ``None``."""
        if address == ROOT:
            return None
        parts = address.split(".")
        for k in range(1, len(parts) + 1):
            above = ".".join(parts[:k])
            if above in self.scopes and (self.wants(above) or self.depth is not None
                                         and self.depth_of(above) > self.depth):
                return above
        return None


def prediction_scene(pred: "Prediction", direction: str = "TB", depth: Optional[int] = None,
                     collapse: Collapse = None) -> Scene:
    """The scene of a prediction (see the module docstring)."""
    scene = Scene(title=f"{pred.target} (predicted, before running): {len(pred.layers)} layers, "
                        "predicted dataflow", direction=direction)
    fold = Folding(pred, depth, collapse)
    drawn: dict[str, str] = {label: label for label in pred.inputs}  # layer label -> its node (its own, or its collapsed module's)
    for label in pred.inputs:
        scene.node(label, label, None, shape="oval", fillcolor=INPUT_FILL)
    inside: dict[str, int] = {}
    for layer in pred.layers:
        box = fold.box(layer.module)
        if box is not None:
            drawn[layer.layer_label] = f"[{box}]"
            inside[box] = inside.get(box, 0) + 1
            continue
        drawn[layer.layer_label] = layer.layer_label
        lines = [f"{layer.layer_label}{passes_text(layer)}", layer.where() or "(no Python frame)"]
        attrs = {"tooltip": explain_predicted(pred, [layer.layer_label])}
        if layer.optional:
            attrs["style"] = "rounded,dashed,filled"
        if layer.call_site is None:
            attrs.update(color=UNKNOWN_COLOR, fontcolor=UNKNOWN_COLOR)
        box_of = module_box(scene, layer.module, fold.scopes, pred.module_types)
        scene.node(layer.layer_label, "\n".join(lines), box_of, **attrs)
    for box, count in inside.items():
        parts = box.split(".")
        parent = next((".".join(parts[:k]) for k in range(len(parts) - 1, 0, -1) if ".".join(parts[:k]) in fold.scopes),
                      ROOT)
        name = box if parent == ROOT else box[len(parent) + 1:]  # named inside its drawn parent box
        lines = [name, *([pred.module_types[box]] if box in pred.module_types else []),
                 f"{count} layer{'s' if count != 1 else ''} inside"]
        scene.node(f"[{box}]", "\n".join(lines),
                   module_box(scene, parent, fold.scopes, pred.module_types), shape="box3d", tooltip=box)
    add_edges(scene, pred, drawn)
    for k, label in enumerate(pred.outputs, 1):
        scene.node(f"output_{k}", f"output_{k}", None, shape="oval", fillcolor=OUTPUT_FILL)
        scene.edge(drawn[label], f"output_{k}")
    gaps = pred.gap_lines()
    if gaps:
        shown = gaps[:8] + ([f"... {len(gaps) - 8} more"] if len(gaps) > 8 else [])
        scene.node("not followed", "not followed:\n" + "\n".join(shown), None, shape="note",
                   fillcolor="#fff7d6")
    return scene


def add_edges(scene: Scene, pred: "Prediction", drawn: dict[str, str]) -> None:
    """The predicted dataflow between drawn nodes. An edge into a node drawn no later than its
    tail goes back round a loop (blue); where both ends' passes are told apart (an unrolled
    loop) it is labelled with the passes it carries, as the trace's drawing does. A value one
    pass of a loop the prediction does not unroll hands to the next is an edge back labelled
    ``loop``. Edges inside a collapsed module are not drawn."""
    order: dict[str, int] = dict.fromkeys(pred.inputs, -1)
    for i, layer in enumerate(pred.layers):
        order.setdefault(drawn[layer.layer_label], i)
    count = {layer.layer_label: layer.count.exact for layer in pred.layers}  # boxes have none
    links: dict[tuple[str, str], list[tuple[int, int]]] = {}
    unknown: set[tuple[str, str]] = set()  # edges some of whose links' passes are not told apart
    for layer in pred.layers:
        head = drawn[layer.layer_label]
        for parent in layer.parents:
            tail = drawn[parent]
            if tail == head and head not in count:
                continue
            links.setdefault((tail, head), []).extend((t, h) for p, t, h in layer.pass_links or () if p == parent)
            if layer.pass_links is None:
                unknown.add((tail, head))
    for (tail, head), known in links.items():
        attrs = dict(BACK_EDGE) if order[head] <= order[tail] else {}
        n_tail, n_head = count.get(tail), count.get(head)
        if (tail, head) not in unknown and n_tail is not None and n_head is not None:
            label = pass_label([t for t, _ in known], n_tail, [h for _, h in known], n_head)
            if label:
                attrs["label"] = label
        scene.edge(tail, head, **attrs)
    for layer in pred.layers:
        head = drawn[layer.layer_label]
        for parent in layer.carried:
            tail = drawn[parent]
            if (tail, head) not in links and not (tail == head and head not in count):
                links[(tail, head)] = []
                scene.edge(tail, head, label=LOOP, **BACK_EDGE)
    scene.title = "\n".join([scene.title, *edge_key(scene.edges)])


def draw_prediction(pred: "Prediction", direction: str = "TB", path: Optional[Union[str, Path]] = None,
                    depth: Optional[int] = None, collapse: Collapse = None) -> Drawing:
    """See :meth:`Prediction.draw`."""
    return to_digraph(prediction_scene(pred, direction, depth, collapse), path)


def written_at(layer: "PredictedLayer", torch_frames: bool = False) -> str:
    """The innermost predicted place in the user's code (``file:line:col``), as the trace table shows."""
    places = [p for p in layer.call_site or () if hasattr(p, "code")]
    if not torch_frames:
        user = [p for p in places if not library_file(p.code.filename)]
        if not user and places:
            return "(in torch)"
        places = user
    if not places:
        return "?" if layer.call_site is None else ""
    place = places[-1]
    col = f":{place.col + 1}" if place.col is not None else ""  # type: ignore[union-attr]
    return f"{os.path.basename(place.code.filename)}:{place.line}{col}"  # type: ignore[union-attr]


def prediction_table(pred: "Prediction", depth: Optional[int] = None, module: Optional[str] = None,
                     limit: Optional[int] = None, width: int = 100, torch_frames: bool = False) -> str:
    """``pred.table(...)``: rows of layers (modules deeper than ``depth`` as one row each), only
    inside ``module``, the first ``limit`` rows, fitted to ``width`` columns."""
    fold = Folding(pred, depth)
    rows, seen = [], set()
    for layer in pred.layers:
        if module not in (None, ROOT) and not (layer.module == module or layer.module.startswith(f"{module}.")):
            continue
        box = fold.box(layer.module)
        if box is None:
            rows.append([layer.layer_label, str(layer.count), layer.module, written_at(layer, torch_frames)])
        elif box not in seen:
            seen.add(box)
            count = sum(1 for other in pred.layers if fold.box(other.module) == box)
            rows.append([f"[{box.rpartition('.')[2]}]", "", box, f"{count} layer{'s' if count != 1 else ''} inside"])
    lines = [repr(pred), "", fit_table(["layer", "passes", "module", "written at"], rows[:limit] if limit else rows,
                                       width, {2: True})]
    if limit is not None and len(rows) > limit:
        lines.append(f"... {len(rows) - limit} more rows (table(limit=None) shows all)")
    return "\n".join(lines)
