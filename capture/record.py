"""The flat, append-only record a capture produces: what ran, in order, with its keys.

No grouping and no labels here: :mod:`torchlens.grouping` turns this into layers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Hashable, Optional, Union

from torchlens.analysis.sites import Place

from .backends import Detector
from .replay import Aliased, Source


class OpKind(Enum):
    """What a :class:`RawOp` records; the value is the op name a boundary layer gets."""

    INPUT = "input"
    OP = "op"
    OUTPUT = "output"
    #: A registered buffer's version (:mod:`capture.buffers`).
    BUFFER = "buffer"


#: The members as module constants (a module attribute is a cheaper lookup than a member).
INPUT, OP, OUTPUT, BUFFER = OpKind.INPUT, OpKind.OP, OpKind.OUTPUT, OpKind.BUFFER


@dataclass(frozen=True, slots=True)
class Hooked:
    """In a raw call site: the module whose forward hook (or pre-hook) ran the frames after it
    (grouping turns it into a :class:`~torchlens.analysis.sites.HookMark`)."""

    #: Index into :attr:`RawCapture.modules`.
    module: int


#: One element of a raw call site: an interned chain id, or a hooked module.
Segment = Union[int, Hooked]


@dataclass(slots=True)
class RawOp:
    """One recorded output of one torch call (a multi-output op gives one per slot)."""

    kind: OpKind
    #: Normalised op name (``linear``, ``add``, ``radd``, ``getitem``; ``input``/``output``).
    name: str
    #: Index into :attr:`RawCapture.modules` of the scope: the innermost module instance.
    scope: int
    #: Index into :attr:`RawCapture.calls` of the module call it ran in; -1 outside any.
    call: int
    #: Which output of a multi-output op this is.
    slot: int
    #: The call site: chain ids and hooked modules, outermost first; ``None`` when no
    #: Python frame sat between the module boundary and the op.
    site: Optional[tuple[Segment, ...]]
    #: For ``site is None`` only: the op's non-tensor arguments, as text.
    args_text: str
    #: The output tensor (``None`` when this op's output is not saved).
    out: Any
    #: Shape and dtype of the output; ``None`` until first read (:attr:`shape`, :attr:`dtype`)
    #: while ``out`` is the op's own output or its copy (an output is copied before any write
    #: reaches it, and read before it is dropped: :func:`capture.session.drop`).
    _shape: Optional[tuple[int, ...]]
    _dtype: Any
    #: Indices of the ops whose outputs this op read (:attr:`parents`); for a compute op, ``None``
    #: until first read, derived then from :attr:`sources`.
    _parents: Optional[list[int]]
    #: Addresses of the parameters this op read.
    params: tuple[str, ...]
    #: For a buffer version: which buffer, which version, how it was written.
    buffer: Any = None
    #: For an op: the torch call that produced it (shared by its output slots), for replay; or,
    #: until :attr:`replay` is first read, the pending form a capture records during the
    #: forward pass (a pending call: :func:`capture.replay.make_call`), built then.
    _replay: Any = None
    #: Where its tensor sits in a recorded container (:class:`capture.containers.ContainerSpec`),
    #: with ``capture_container_structure`` only.
    container: Any = None
    #: :func:`meta_of` the output, read before it was dropped or replaced by a copy (``None``
    #: while ``out`` is the op's own output).
    meta: Any = None
    #: For a compute op: where each of its tensor arguments came from (``RecordedCall.sources``),
    #: what its :attr:`parents` are read from.
    sources: Optional[list[Source]] = None

    @property
    def parents(self) -> list[int]:
        """Indices of the ops whose outputs this op read: for a compute op, the op each tensor
        argument came from (an aliased read: the op that wrote it), in argument order."""
        parents = self._parents
        if parents is None:
            parents = self._parents = [s if isinstance(s, int) else s.writer for s in self.sources or ()
                                       if not isinstance(s, int) or s >= 0]
        return parents

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the output."""
        shape = self._shape
        if shape is None:
            shape = self._shape = tuple(self.out.shape)
        return shape

    @property
    def dtype(self) -> Any:
        """Dtype of the output."""
        dtype = self._dtype
        if dtype is None:
            dtype = self._dtype = self.out.dtype
        return dtype

    def keep_shape(self) -> None:
        """Read the shape and dtype from the output now (before it is dropped)."""
        self._shape, self._dtype = self.shape, self.dtype

    @property
    def replay(self) -> Any:
        """The torch call that produced this op (a ``RecordedCall``), or ``None``."""
        call = self._replay
        if type(call) is tuple:  # pending: built on first read
            call = self._replay = call[0](call)
        return call

    @replay.setter
    def replay(self, call: Any) -> None:
        self._replay = call


def meta_of(tensor: Any) -> tuple[Any, Optional[tuple[int, ...]], bool]:
    """``(device, stride, requires_grad)`` of a tensor (``RawOp.meta``): what users read of an
    output that is dropped or replaced by a copy (a copy is detached, maybe re-strided)."""
    try:
        stride = tensor.stride()
    except RuntimeError:  # sparse and other layouts without strides
        stride = None
    return tensor.device, stride, tensor.requires_grad


def layer_key(index: int, op: RawOp, ordinal: int) -> Hashable:
    """The grouping key of a compute op or a boundary op (the ``index``-th of its capture;
    ``ordinal``: how many ops of its module call, name and slot came before it).

    Scope, call site, operation and output slot; without a call site, the op's position
    (same op, same non-tensor arguments, same ordinal). Inputs and outputs are their own
    layers. Buffer versions are keyed by :mod:`torchlens.grouping`.
    """
    if op.kind is not OP:
        return (op.kind, index)
    if op.site is None:
        return (op.scope, "position", op.name, op.args_text, ordinal, op.slot)
    return (op.scope, op.site, op.name, op.slot)


@dataclass(slots=True)
class RawModule:
    """A module instance seen during the capture."""

    #: Address in the model (``blocks.0``); ``self`` for the root model.
    address: str
    #: The class name (``Linear``).
    type_name: str
    #: Addresses of its parameters (its own, not its children's).
    params: tuple[str, ...]
    #: Address of its parent, ``None`` for the root.
    parent: Optional[str]
    #: Addresses of its direct children.
    children: tuple[str, ...]
    #: Addresses of its own registered buffers.
    buffers: tuple[str, ...] = ()
    #: How many times it was called.
    num_calls: int = 0


@dataclass(slots=True)
class RawCall:
    """What one module call took and returned, beside ``RawCapture.calls``' (module, number)."""

    #: Index into :attr:`RawCapture.calls` of the call it ran inside; -1 for the outermost.
    parent: int
    #: Op indices of the tensors passed in (positional then keyword, one level into lists,
    #: tuples and dicts), each once; tensors no op produced (parameters) are left out.
    inputs: list[int]
    #: Op indices of the tensors it returned (every leaf of its return value), each once.
    outputs: list[int] = field(default_factory=list)


@dataclass(slots=True)
class RawCapture:
    """Everything one forward pass recorded."""

    ops: list[RawOp] = field(default_factory=list)
    modules: list[RawModule] = field(default_factory=list)
    #: Module calls in the order they started: ``(module index, call number from 1)``.
    calls: list[tuple[int, int]] = field(default_factory=list)
    #: Per module call (same order): its parent call, inputs and outputs.
    call_io: list[RawCall] = field(default_factory=list)
    #: Chain id -> places, outermost first (from :class:`capture.frames.ChainInterner`).
    chains: list[tuple[Place, ...]] = field(default_factory=list)
    #: The model's return value, as it returned it.
    output: Any = None
    #: Recorded container roots (:class:`capture.containers.RawContainer`): the model output's
    #: always, first; the inputs' and module calls' with ``capture_container_structure``.
    containers: list = field(default_factory=list)
    #: The global torch state the forward pass started under (random state, autocast, grad
    #: mode, default dtype): :class:`capture.replay.GlobalState`, restored for a replay.
    state: Any = None
    #: Buffer address -> (value before the forward pass, value after it).
    buffer_values: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    #: With a selection (``save=`` names or a predicate): ``(op index, OpInfo)`` of each op
    #: whose output was kept, in capture order.
    selected: list[tuple[int, Any]] = field(default_factory=list)
    #: With ``save_gradients``: the :class:`capture.gradients.Gradients` its hooks fill.
    gradients: Any = None
    #: Parameter address -> (shape, dtype), as the forward pass ended (each parameter once,
    #: at its first address; a torch capture's shape is the ``torch.Size`` torch gives, made a
    #: plain tuple by the trace's records); ``None`` where the capture did not read them.
    params: Optional[dict[str, tuple[tuple[int, ...], Any]]] = None
    #: Which grouping the capture's evidence supports (``trace.options.grouping_policy``).
    detector: Detector = Detector.CALLSITE
