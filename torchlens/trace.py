"""The :class:`Trace`: everything one forward pass did, grouped into layers and passes."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Optional, Union

from torchlens.analysis.explain import explain_trace
from torchlens.capture.containers import Role

from .buffers import Buffer
from .codec import decode, dumps, same
from .containers import ContainerRecords, records_of
from .errors import TorchLensValueError, TraceInvariantError
from .intervention import intervene
from .memory import nbytes
from .options import TraceOptions
from .records import Layer, Module, ModuleCall, Op, Ops, Param
from .rerun import run_again
from .table import render_trace
from .validation import ValidationReport, validate_forward_pass


@dataclass(frozen=True, slots=True, eq=False)
class Trace:
    """One captured forward pass.

    ``trace[key]`` takes a layer label (``linear_1``), a pass label (``linear_1:2``), a module
    address (``blocks.0``), a module call (``blocks.0:2``) or a buffer version
    (``bn.running_mean:2``). Iterating a trace, and ``len(trace)``, go over its layers.

    A trace ``tl.trace`` returns builds its records (layers, ops, modules, params, buffers,
    containers) from the raw capture when one of them is first read (:meth:`later`): once, under
    a lock, so every reader sees the same objects; after that they are plain fields.
    """

    #: Layers in order of first execution, inputs first and outputs last.
    layers: tuple[Layer, ...]
    #: Every pass of every layer, in capture order.
    ops: "Ops"
    #: Module address -> :class:`Module` (the root model is ``self``).
    modules: Mapping[str, Module]
    #: Parameter address -> :class:`Param`.
    params: Mapping[str, Param]
    #: Labels of the input and output layers.
    input_layers: tuple[str, ...]
    output_layers: tuple[str, ...]
    #: The capture options and grouping policy that produced this trace.
    options: TraceOptions
    #: Buffer address -> :class:`Buffer` (every registered buffer of the model).
    buffers: Mapping[str, Buffer] = field(default_factory=dict)
    #: The global torch state the capture ran under (:class:`capture.replay.GlobalState`).
    _state: Any = field(default=None, repr=False)
    #: The containers the capture recorded (the model output's always) and the traced model,
    #: for :meth:`reconstruct_output`, :meth:`run`, :meth:`output_at` and :meth:`input_at`.
    containers: Optional[ContainerRecords] = field(default=None, repr=False)
    #: With ``tl.trace(..., check_prediction=True)``: how the capture compared with
    #: ``tl.predict`` (a :class:`torchlens.predict.PredictionReport`), else ``None``.
    prediction: Any = field(default=None, repr=False)
    #: Key -> record for ``trace[key]``, filled at construction (never passed in).
    _index: dict[str, Any] = field(default_factory=dict, init=False, repr=False)
    #: Until the records are first read, how to build them (:class:`_Later`); ``None`` after.
    _later: Optional["_Later"] = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        _finish(self)

    @classmethod
    def later(cls, build: Callable[[], dict[str, Any]], options: TraceOptions, state: Any) -> "Trace":
        """A trace whose records ``build()`` returns (a mapping of the fields ``layers``, ``ops``,
        ``modules``, ``params``, ``input_layers``, ``output_layers``, ``buffers``, ``containers``
        to the values the constructor takes), called when one of them is first read."""
        trace = object.__new__(cls)
        for name, value in (("options", options), ("_state", state), ("prediction", None),
                            ("_later", _Later(build))):
            object.__setattr__(trace, name, value)
        return trace

    if not TYPE_CHECKING:  # for type checkers the fields are plain fields
        def __getattr__(self, name: str) -> Any:
            """A record not built yet (:meth:`later`): build them all, once, and read it."""
            later = object.__getattribute__(self, "_later") if name in _BUILT_LATER else None
            if later is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            with later.lock:
                if object.__getattribute__(self, "_later") is later:  # no other reader built them meanwhile
                    records = later.build()
                    for key, value in records.items():
                        object.__setattr__(self, key, value)
                    object.__setattr__(self, "_index", {})
                    _finish(self)
                    object.__setattr__(self, "_later", None)
            return object.__getattribute__(self, name)

    def __getitem__(self, key: str) -> Union[Layer, Op, Module, ModuleCall]:
        try:
            return self._index[key]
        except (KeyError, TypeError):
            pass
        near = [k for k in self._index if isinstance(key, str) and k.startswith(key.split(":")[0])][:5]
        hint = f" Close matches: {', '.join(near)}." if near else ""
        raise TorchLensValueError(
            f"{key!r} is not a layer label (tanh_1), pass label (tanh_1:2), module address "
            f"(block) or module call (block:2) of this trace.{hint}"
        ) from None

    @property
    def buffer_read_ops(self) -> tuple[Op, ...]:
        """Buffer versions that some op read (provisional name, as in the spec)."""
        return tuple(op for op in self.ops if op.is_buffer and op.children)

    @property
    def buffer_write_ops(self) -> tuple[Op, ...]:
        """Buffer versions created by writes (provisional name, as in the spec)."""
        return tuple(op for op in self.ops if op.buffer_write_kind is not None)

    def __eq__(self, other: object) -> bool:
        """Equal when the saved representations are (:func:`torchlens.codec.same`): the
        same records (labels, passes, call sites, modules and their calls, params, buffers,
        containers, options, replay calls) and tensors of the same dtype, shape and values
        (NaN equal to NaN). The model (``run``) and the prediction report are not compared."""
        if not isinstance(other, Trace):
            return NotImplemented
        return self is other or same(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        """Pickling (multiprocessing) goes through the file format: no model, no code."""
        return decode, (dumps(self), "<bytes>", type(self))

    def __contains__(self, key: object) -> bool:
        """Whether ``trace[key]`` finds something; ``False`` for any key that is not a label."""
        try:
            return key in self._index
        except TypeError:  # unhashable
            return False

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self) -> Iterator[Layer]:
        return iter(self.layers)

    def __repr__(self) -> str:
        passes = len(self.ops)
        return (
            f"<Trace of {self.modules['self'].type_name}: {len(self.layers)} layers, {passes} ops, "
            f"{len(self.modules)} modules>"
        )

    @property
    def nbytes(self) -> int:
        """Bytes of tensor storage this trace holds, each storage once: saved op outputs, buffer
        values, replay records and the random state (not the model's parameters)."""
        return nbytes(self)

    def __str__(self) -> str:
        return render_trace(self)

    def draw(self, view: str = "rolled", depth: Optional[int] = None, show_buffers: Optional[str] = None,
             show_containers: Any = None, container_max_inline: Optional[int] = None, direction: str = "TB",
             path: Any = None, collapse: Any = None, fold_repeats: bool = True) -> Any:
        """Draw the trace as a ``graphviz.Digraph`` (a notebook displays it); see :mod:`torchlens.draw`.

        ``view="rolled"`` draws one node per layer, ``"unrolled"`` one per op; ``depth=k`` draws
        modules deeper than ``k`` as one node each, and ``collapse`` (a predicate over modules, or
        addresses / type names) chooses such modules directly. Unless ``fold_repeats=False``, identical
        sibling blocks in a row (a ``ModuleList`` of blocks) are drawn once, as one ``xN`` node when
        collapsed or as one fully drawn box ``h.0 .. 11 (Block) x12`` otherwise. ``show_buffers``,
        ``show_containers`` and ``container_max_inline`` default to the capture options.
        ``path`` writes SVG, PNG, PDF or DOT by its suffix.
        """
        from .draw import draw_trace

        return draw_trace(self, view, depth, show_buffers, show_containers, container_max_inline, direction,
                          path, collapse, fold_repeats)

    def explain(self, *labels: str) -> str:
        """Why the ops of a layer are one layer (its scope, call-site frames with source, op, slot,
        passes); with two labels, which part of their keys differs."""
        return explain_trace(self, labels)

    def table(self, depth: Optional[int] = None, module: Optional[str] = None, limit: Optional[int] = None,
              width: int = 100, torch_frames: bool = False) -> str:
        """The text table of layers and modules, filtered: modules no deeper than ``depth``, layers
        inside ``module``, the first ``limit`` layers; ``torch_frames=True`` shows the innermost frame
        even when it is torch's own."""
        return render_trace(self, depth=depth, module=module, limit=limit, width=width, torch_frames=torch_frames)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        from .draw import svg_bundle

        return svg_bundle(self, self.draw())

    def validate_forward_pass(self, strict: bool = False) -> "ValidationReport":
        """Replay the graph op by op from the saved inputs and compare every output.

        Returns a :class:`~torchlens.validation.ValidationReport`; with ``strict=True`` a
        mismatch raises :class:`~torchlens.validation.ValidationError`.
        """
        self._torch_only("validate_forward_pass")
        return validate_forward_pass(self, strict)

    def do(self, edits: Mapping[str, Any], strict: bool = False) -> "Trace":
        """What this forward pass would have computed with some op outputs changed.

        ``edits`` maps op labels (``relu_1:2``) to a tensor or to a function of the saved
        output (``lambda out: out * 0``). The ops the edits reach are re-executed from the
        trace's own snapshots; the result is a new trace with the same labels (see
        :mod:`torchlens.intervention`). Edits that reach a buffer write which cannot be
        certified warn (:class:`~torchlens.errors.BufferThreadGapWarning`), or raise with
        ``strict=True``.
        """
        self._torch_only("do")
        return intervene(self, edits, strict)

    def reconstruct_output(self) -> Any:
        """Rebuild the model's return value (tuple, list, dict, namedtuple, dataclass,
        ``ModelOutput``, registered type) from the output tensors it returned.

        Raises :class:`~torchlens.errors.OpaqueContainerError` naming the path and type of an
        object whose structure torchlens could not record (e.g. a ``DynamicCache``).
        """
        return records_of(self.containers).reconstruct_output()

    def run(self, *inputs: Any, forward_kwargs: Optional[Mapping[str, Any]] = None) -> Any:
        """Run the traced model again on ``inputs``, live and plainly (nothing is recorded), and
        return its output, checked to have the recorded structure (see :mod:`torchlens.rerun`).

        ``forward_kwargs`` defaults to the keyword arguments the trace was made with.
        """
        self._torch_only("run")
        return run_again(records_of(self.containers), inputs, forward_kwargs)

    def output_at(self, *path: Any) -> Any:
        """The output leaf :class:`Op` (or nested container view) at ``path``:
        ``trace.output_at("past_key_values", 0, 0)``; no path gives the whole output."""
        return records_of(self.containers).at(Role.MODEL_OUTPUT, path)

    def input_at(self, *path: Any) -> Any:
        """The input leaf :class:`Op` (or container view) at ``path``, starting with the argument's
        position or keyword: ``trace.input_at(0, "ids")``. Needs ``capture_container_structure``."""
        return records_of(self.containers).at(Role.MODEL_INPUT, path)

    def _torch_only(self, what: str) -> None:
        """Refuse a replay on a trace another backend captured (a JAX trace records no torch calls)."""
        if self.options.backend != "torch":
            raise TorchLensValueError(
                f"trace.{what}() re-runs recorded torch calls; this trace was captured by the "
                f"{self.options.backend} backend (a JAX trace), so call the traced function again yourself"
            )

    def check_prediction(self, pred: Any) -> Any:
        """Compare this trace with ``tl.predict(model)`` by exact call-site key.

        Returns a :class:`torchlens.predict.PredictionReport`: ``ok``, ``unpredicted``,
        ``unexecuted``, ``mismatched`` and ``coverage``.
        """
        from .predict import check_prediction

        return check_prediction(self, pred)

    def check(self) -> None:
        """Assert the trace's invariants; raise :class:`TraceInvariantError` when one breaks.

        Every op is a pass of exactly one layer; a layer's passes are numbered 1..N in
        capture order; parents and children are symmetric; labels are unique.
        """
        position = {op.label: i for i, op in enumerate(self.ops)}
        _require(len(position) == len(self.ops), "op labels are not unique")
        _require(len({layer.layer_label for layer in self.layers}) == len(self.layers), "layer labels repeat")
        seen = 0
        for layer in self.layers:
            order = [position.get(op.label, -1) for op in layer.ops]
            _require(layer.num_passes > 0, f"{layer.layer_label} has no pass")
            _require(order == sorted(order) and -1 not in order, f"{layer.layer_label}: passes out of capture order")
            for k, op in enumerate(layer.ops, 1):
                _require(op.pass_num == k and op.label == f"{layer.layer_label}:{k}", f"{op.label}: pass {k} misnumbered")
                _require(op.layer is layer and op.func_name == layer.func_name, f"{op.label}: wrong layer")
            if layer.is_input or layer.is_output:
                _require(layer.num_passes == 1, f"{layer.layer_label}: boundary layer with several passes")
            seen += layer.num_passes
        _require(seen == len(self.ops), "some op is in no layer or in two")
        by_label = {op.label: op for op in self.ops}
        for op in self.ops:
            for parent in op.parents:
                _require(op.label in by_label[parent].children, f"{parent} -> {op.label} is one-sided")
            for child in op.children:
                _require(op.label in by_label[child].parents, f"{op.label} -> {child} is one-sided")


class _Later:
    """How a trace's records are built on first read, and the lock that makes it once."""

    __slots__ = ("build", "lock")

    def __init__(self, build: Callable[[], dict[str, Any]]) -> None:
        self.build, self.lock = build, threading.Lock()


#: The fields :meth:`Trace.later` builds on first read.
_BUILT_LATER = frozenset({"layers", "ops", "modules", "params", "input_layers", "output_layers", "buffers",
                          "containers", "_index"})


def _finish(trace: Trace) -> None:
    """Make the mappings read-only views (a trace never changes) and fill ``trace[key]``'s index."""
    for name in ("modules", "params", "buffers"):
        object.__setattr__(trace, name, MappingProxyType(dict(getattr(trace, name))))
    index = trace._index
    index.update((layer.layer_label, layer) for layer in trace.layers)
    index.update((op.label, op) for op in trace.ops)
    for module in trace.modules.values():
        index.setdefault(module.address, module)
        index.update((call.label, call) for call in module.calls)
    for buffer in trace.buffers.values():
        index.update((f"{buffer.address}:{version.version}", op) for op in buffer.versions
                     if (version := op.buffer) is not None)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise TraceInvariantError(f"trace invariant broken: {message}")
