"""The :class:`Prediction`: predicted layers, labels and passes, grouped as the capture groups.

Events from the abstract run are grouped by the spec's key (scope, call site, operation,
output slot) with the key core :mod:`torchlens.analysis.keys`, the same functions that
group recorded ops and label them (``{func}_{n}``, n-th layer of that name in order of
first execution).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from .builder import builder
from .errors import TorchLensValueError
from .events import Event, ForwardInput, Gap, real_inputs
from .keys import LayerKey, group_keys, layer_labels
from .passes import Count
from .sites import Link, Place
from .table import format_table
from .values import SCALARS, Dict, Known, Seq, Tensor

__all__ = ["PredictedLayer", "Prediction", "build_prediction", "LayerKey"]


@dataclass(frozen=True, eq=False, slots=True)
class PredictedLayer:
    """One predicted layer: an op written at one place, with its predicted passes."""

    #: ``{func}_{n}`` in predicted order of first execution.
    layer_label: str
    #: Op name (``linear``, ``add``, ``radd``).
    func_name: str
    #: Scope: module address (``self`` for the root).
    module: str
    #: Places outermost first (and hook marks); ``None`` when a place is unknown.
    call_site: Optional[tuple[Link, ...]]
    #: Which output of a multi-output op.
    slot: int
    #: How many passes (exact, a range or symbolic).
    count: Count
    #: Why the place is unknown, or the output count.
    note: str = ""
    #: Labels of the predicted layers whose outputs this layer's ops take, and of the input
    #: layers (``input_1``) whose tensors they take (predicted dataflow; parameters and values
    #: the run lost track of have none).
    parents: tuple[str, ...] = ()
    #: Labels of the predicted layers whose output one pass of a loop the prediction does not
    #: unroll hands to this layer's next pass (a loop-carried value, drawn as an edge back).
    carried: tuple[str, ...] = ()
    #: ``(parent label, parent's pass, this layer's pass)`` of each dataflow link, where every
    #: pass of this layer and of its parents is one op the prediction tells apart (an unrolled
    #: loop); ``None`` where some are not (symbolic or ranged passes).
    pass_links: Optional[tuple[tuple[str, int, int], ...]] = None

    @property
    def num_passes(self) -> Optional[int]:
        """The number of passes where it is statically known, else ``None`` (see ``passes_note``)."""
        return self.count.exact

    @property
    def passes_note(self) -> str:
        """Why ``num_passes`` is not known (empty when it is)."""
        return self.count.note

    @property
    def optional(self) -> bool:
        """Whether the prediction allows this layer not to run at all (an undecided branch)."""
        return self.count.lo == 0

    @property
    def key(self) -> LayerKey:
        """The grouping key a runtime layer at the same place has."""
        return LayerKey(self.module, self.call_site, self.func_name, self.slot)

    def place(self) -> str:
        """The innermost place as ``path:line:col`` (``?`` when unknown, empty for no frame)."""
        places = [p for p in self.call_site or () if isinstance(p, Place)]
        if not places:
            return "?" if self.call_site is None else ""
        place = places[-1]
        col = f":{place.col + 1}" if place.col is not None else ""
        return f"{place.code.filename}:{place.line}{col}"

    def to_json(self) -> dict:
        """A JSON-ready dict with stable field names."""
        return {"label": self.layer_label, "func": self.func_name, "module": self.module,
                "passes": self.num_passes if self.num_passes is not None else str(self.count),
                "passes_note": self.passes_note, "place": self.place(), "slot": self.slot,
                "parents": list(self.parents), "carried": list(self.carried),
                "pass_links": None if self.pass_links is None else [list(link) for link in self.pass_links]}

    def where(self) -> str:
        """The innermost place as ``file:line:col`` with the file's base name."""
        return os.path.basename(self.place())


@dataclass(frozen=True, eq=False)
class Prediction:
    """What a model will record, predicted from its source and bytecode before it runs.

    ``pred["tanh_1"]`` is a :class:`PredictedLayer`; iterating gives layers in predicted
    order; ``print(pred)`` shows a table.
    """

    #: What was predicted (class name).
    target: str
    #: Layers in predicted order of first execution.
    layers: tuple[PredictedLayer, ...]
    #: Places where the prediction stopped following the program, and why.
    gaps: tuple[Gap, ...] = ()
    #: Anything else worth knowing (a step budget ran out).
    notes: tuple[str, ...] = ()
    #: The input layers the capture will have (``input_1``, ...: the forward's tensor
    #: arguments), where the arguments are tensors, plain values and lists, tuples and dicts of them.
    inputs: tuple[str, ...] = ()
    #: Per tensor leaf of the predicted return value, in order (as the capture's ``output_1``,
    #: ...), the label of the layer or input it is; empty where the prediction cannot list the
    #: return value's tensors, or lost the producer of one of them.
    outputs: tuple[str, ...] = ()
    #: Module address -> class name, where the prediction read a live model (drawn in its boxes).
    module_types: dict[str, str] = field(default_factory=dict, repr=False)
    _by_label: dict[str, PredictedLayer] = field(default_factory=dict, init=False, repr=False)
    #: Filled by the first :meth:`find`.
    _by_key: dict[LayerKey, PredictedLayer] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_label.update({layer.layer_label: layer for layer in self.layers})

    def __getitem__(self, label: str) -> PredictedLayer:
        try:
            return self._by_label[label]
        except (KeyError, TypeError):
            raise TorchLensValueError(
                f"{label!r} is not a predicted layer label; labels look like tanh_1 "
                f"(this prediction has {len(self.layers)} layers: {', '.join(list(self._by_label)[:6])} ...)"
            ) from None

    def __contains__(self, label: object) -> bool:
        return label in self._by_label

    def __iter__(self) -> Iterator[PredictedLayer]:
        return iter(self.layers)

    def __len__(self) -> int:
        return len(self.layers)

    def find(self, key: LayerKey) -> Optional[PredictedLayer]:
        """The predicted layer with this grouping key, if any."""
        by_key = self._by_key
        if not by_key:  # built on the first look-up: hashing every key's chain costs, and most predictions
            # are never looked up by key
            by_key.update((layer.key, layer) for layer in self.layers if layer.call_site is not None)
        return by_key.get(key)

    def draw(self, direction: str = "TB", path: Any = None, depth: Optional[int] = None, collapse: Any = None) -> Any:
        """Draw the predicted layers and their predicted dataflow before anything runs: a
        ``graphviz.Digraph`` (see :mod:`analysis.predview`); ``depth=k`` draws modules deeper
        than ``k`` as one node each, ``collapse`` (module addresses, or a predicate over them)
        chooses such modules directly; ``path`` writes SVG, PNG, PDF or DOT by its suffix."""
        from .predview import draw_prediction

        return draw_prediction(self, direction, path, depth, collapse)

    def explain(self, *labels: str) -> str:
        """Why a predicted layer is one layer (scope, call-site frames with source, op, slot,
        passes); with two labels, which part of their keys differs."""
        from .explain import explain_predicted

        return explain_predicted(self, labels)

    def table(self, depth: Optional[int] = None, module: Optional[str] = None, limit: Optional[int] = None,
              width: int = 100, torch_frames: bool = False) -> str:
        """The predicted layers as a table, filtered like ``trace.table``."""
        from .predview import prediction_table

        return prediction_table(self, depth, module, limit, width, torch_frames)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        from .dot import svg_bundle

        return svg_bundle(self, self.draw())

    def to_json(self) -> dict:
        """A JSON-ready dict: the target, its layers, where the prediction stopped, notes."""
        return {"target": self.target, "layers": [layer.to_json() for layer in self.layers],
                "gaps": [{"scope": g.scope, "why": g.why} for g in dict.fromkeys(self.gaps)],
                "notes": list(self.notes), "inputs": list(self.inputs), "outputs": list(self.outputs)}

    def gap_lines(self) -> list[str]:
        """One line per distinct ``scope: why`` of the gaps, with ``(xN)`` when N gaps (at
        different call sites) give it."""
        counts: dict[str, int] = {}
        for gap in self.gaps:
            line = f"{gap.scope}: {gap.why}"
            counts[line] = counts.get(line, 0) + 1
        return [line if n == 1 else f"{line} (x{n})" for line, n in counts.items()]

    def __repr__(self) -> str:
        return f"<Prediction of {self.target}: {len(self.layers)} layers, {len(self.gaps)} gaps>"

    def __str__(self) -> str:
        rows = [[layer.layer_label, layer.func_name, str(layer.count), layer.module, layer.where()]
                for layer in self.layers]
        lines = [repr(self), "", format_table(["layer", "func", "passes", "module", "written at"], rows)]
        notes = sorted({layer.passes_note for layer in self.layers if layer.passes_note})
        if notes:
            lines += ["", "passes not static:", *(f"  {n}" for n in notes)]
        if self.gaps:
            lines += ["", "not followed:", *(f"  {line}" for line in self.gap_lines())]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


#: :class:`PredictedLayer` built as a plain record would be (one per layer; see :func:`~.builder.builder`).
_new_layer = builder(PredictedLayer)


def build_prediction(target: str, events: list[Event], gaps: list[Gap], notes: list[str],
                     returned: Any = None, given: tuple[str, ...] = (),
                     module_types: Optional[dict[str, str]] = None) -> Prediction:
    """Group events (one per output slot) into layers by key; label them in order of first execution.
    ``returned`` is the predicted value the forward returns (``None``: not known), ``given``
    the labels of its input layers, ``module_types`` its modules' class names by address.

    A layer's count is the sum of its events' counts; an unknown chain groups with the events
    whose chain is unknown for the same reason.
    """
    slots = [(event, slot) for event in events for slot in range(event.slots or 1)]
    grouping = group_keys(
        (e.scope, e.chain if e.chain is not None else ("?", e.why), e.name, slot) for e, slot in slots)
    labels = layer_labels(slots[i][0].name for i in grouping.first)
    groups = grouping.members()
    #: (event, slot) -> its layer's label, and its pass where each member of its layer is one op.
    label_of = {slots[i]: label for label, members in zip(labels, groups) for i in members}
    pass_of: dict[tuple[Event, int], int] = {}
    for members in groups:  # (loops: a generator per layer costs more than the test)
        for i in members:
            if slots[i][0].count.exact != 1:
                break
        else:
            for n, i in enumerate(members, 1):
                pass_of[slots[i]] = n
    layers = []
    for label, members in zip(labels, groups):
        event, slot = slots[members[0]]
        count = event.count
        parents: dict[str, None] = {}
        carried: dict[str, None] = {}
        links = 0
        known: list[tuple[str, int, int]] = []  # the links whose passes on both ends are known
        for n, i in enumerate(members):
            member = slots[i][0]
            if n:
                count = count + member.count
            head = pass_of.get(slots[i])
            for origin in real_inputs(member.inputs):
                if isinstance(origin[0], ForwardInput):
                    parents[origin[0].label] = None
                    continue
                parent = label_of.get(origin)
                if parent is not None:
                    parents[parent] = None
                    links += 1
                    tail = pass_of.get(origin)
                    if tail is not None and head is not None:
                        known.append((parent, tail, head))
            if member.carried:
                carried.update((label_of[origin], None) for origin in member.carried if origin in label_of)
        note = "" if event.slots is not None else "its number of outputs is not static: slot 0 only"
        layers.append(_new_layer(label, event.name, event.scope, event.chain, slot, count, event.why or note,
                                 tuple(parents), tuple(carried), tuple(known) if len(known) == links else None))
    unsized = [f"{layer.layer_label} at {layer.where()}: its number of outputs is not static, only the first "
               "is predicted" for layer in layers if layer.note == "its number of outputs is not static: slot 0 only"]
    shifted = _labels_that_may_shift(slots, groups, labels)
    return Prediction(target, tuple(layers), tuple(dict.fromkeys(gaps)),
                      tuple(dict.fromkeys([*notes, *unsized, *shifted])),
                      inputs=given, outputs=_returned_labels(returned, label_of),
                      module_types=dict(module_types or {}))


def _label(producer: Any, slot: int, label_of: dict[tuple[Event, int], str]) -> Optional[str]:
    """The label of the layer (or input layer) that produced output ``slot`` of ``producer``."""
    return producer.label if isinstance(producer, ForwardInput) else label_of.get((producer, slot))


def _returned_labels(returned: Any, label_of: dict[tuple[Event, int], str]) -> tuple[str, ...]:
    """The label each tensor leaf of ``returned`` is, in order; empty where one is not known."""
    labels: list[str] = []
    todo = [returned]
    while todo:
        value = todo.pop()
        if isinstance(value, Tensor):
            if value.origin is None:
                return ()
            label = _label(*value.origin, label_of)
            if label is None:
                return ()
            labels.append(label)
        elif isinstance(value, (Seq, Dict)):
            todo.extend(reversed(value.items if isinstance(value, Seq) else list(value.items.values())))
        elif not (isinstance(value, Known) and isinstance(value.obj, SCALARS)):
            return ()
    return tuple(labels)


def _labels_that_may_shift(slots: list[tuple[Event, int]], groups: list[list[int]], labels: list[str]) -> list[str]:
    """Notes for labels that hang on a pass that may not run.

    A layer is labelled by its first predicted op. Where that op may not run (an undecided
    ``while`` or branch) and the layer has later ops, a layer of the same function first run
    before the first of them that must run (or before its last, where none must) is numbered
    before it when the first op does not run: ``tanh_1`` and ``tanh_2`` swap. The labels are
    then not a claim, and a note says so.
    """
    notes = []
    for g, members in enumerate(groups):
        event = slots[members[0]][0]
        if event.count.lo > 0:
            continue
        if len(members) == 1:
            continue  # the layer runs there or not at all (the check leaves out a layer that did not run)
        # the first op that must run; where none must, any later one may be where it starts
        sure = next((i for i in members if slots[i][0].count.lo > 0), members[-1])
        name = event.name
        between = [labels[h] for h, others in enumerate(groups) if h != g and members[0] < others[0] < sure and
                   slots[others[0]][0].name == name]
        if between:
            notes.append(f"labels {labels[g]}, {', '.join(between)} depend on whether {labels[g]}'s first pass runs "
                         f"({event.count.note or event.why or 'it may not'}): when it does not, they are numbered "
                         "in another order")
    return notes
