"""The records users read: :class:`Layer`, :class:`Op`, :class:`Module`, :class:`ModuleCall`,
:class:`Param`, and :class:`Ops` (a trace's ops, indexable by label).

Frozen, slotted dataclasses with few fields; derived views are properties. A :class:`Layer`
holds its passes (``ops``); an :class:`Op` knows its layer through the trace's index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from torchlens.analysis.sites import Link, Place
from torchlens.capture.buffers import BufferVersion, WriteKind
from torchlens.capture.containers import ContainerSpec
from torchlens.capture.record import meta_of

from .containers import Container, container_of
from .errors import TorchLensValueError


@dataclass(frozen=True, slots=True)
class CallSite:
    """Where a layer was written: the frames from its module's ``forward`` to the torch call."""

    #: Places outermost first; a :class:`~torchlens.analysis.sites.HookMark` where a module
    #: hook was entered.
    frames: tuple[Link, ...]

    @property
    def innermost(self) -> Optional[Place]:
        """The place that called torch (``None`` for inputs, outputs and positional keys)."""
        places = [f for f in self.frames if isinstance(f, Place)]
        return places[-1] if places else None

    def __str__(self) -> str:
        return " > ".join(map(str, self.frames)) if self.frames else "(no Python frame)"


@dataclass(frozen=True, slots=True)
class OpGraph:
    """Graph facts about one op that do not depend on how ops were grouped."""

    #: ``(module address, op type, output slot, ordinal within the module call)``.
    site_key: tuple[str, str, int, int]


@dataclass(frozen=True, slots=True, eq=False)
class Op:
    """One pass of one layer: a single recorded output of a torch call."""

    #: ``{layer_label}:{pass_num}``, e.g. ``linear_1:2``.
    label: str
    #: Label of the layer this op is a pass of.
    layer_label: str
    #: 1-based pass number within its layer, in capture order.
    pass_num: int
    #: Normalised op name (``linear``, ``add``, ``radd``, ``getitem``, ``add_``).
    func_name: str
    #: The output tensor as it was when the op ran (``None`` when not saved: ``CaptureOptions.save``).
    out: Any = field(repr=False)
    #: Output shape and dtype (``device``, ``stride``, ``requires_grad`` are properties).
    shape: tuple[int, ...]
    dtype: Any
    #: Labels of the ops whose outputs this op read, and of the ops that read its output.
    parents: tuple[str, ...]
    children: tuple[str, ...]
    #: Addresses of the parameters this pass used.
    params: tuple[str, ...]
    #: The module call it ran in (``block:2``), ``None`` outside any module call.
    module_call: Optional[str]
    #: Grouping-independent graph facts (``graph.site_key``).
    graph: OpGraph = field(repr=False)
    _layers: Mapping[str, "Layer"] = field(repr=False)
    #: For a buffer version node, the version it is; ``None`` for every other op.
    buffer: Optional[BufferVersion] = None
    _replay: Any = field(default=None, repr=False)
    #: Where its tensor sits in a recorded container (root and key path), with
    #: ``CaptureOptions(capture_container_structure=True)``; ``None`` otherwise.
    container_spec: Optional[ContainerSpec] = field(default=None, repr=False)
    #: ``(device, stride, requires_grad)`` of the output as the op made it, when ``out`` is
    #: not that tensor (not saved, or saved as a copy); ``None`` when it is.
    _meta: Any = field(default=None, repr=False)

    @property
    def device(self) -> Any:
        """The output's device."""
        return self._metadata[0]

    @property
    def stride(self) -> Optional[tuple[int, ...]]:
        """The output's strides (``None`` for a layout without strides, e.g. sparse)."""
        return self._metadata[1]

    @property
    def requires_grad(self) -> bool:
        """Whether the output required grad."""
        return self._metadata[2]

    @property
    def _metadata(self) -> tuple[Any, Optional[tuple[int, ...]], bool]:
        return meta_of(self.out) if self._meta is None else self._meta
    #: With ``CaptureOptions(save_gradients=True)``: the trace's gradient store and this op's
    #: index in it.
    _grad: Any = field(default=None, repr=False)

    @property
    def grad(self) -> Any:
        """The gradient the last ``backward()`` through the traced output delivered to this
        op's output, with ``CaptureOptions(save_gradients=True)``; ``None`` before that, for an
        output that needs no gradient, or without the option."""
        return None if self._grad is None else self._grad[0].get(self._grad[1])

    @property
    def container(self) -> Optional[Container]:
        """The :class:`~torchlens.types.Container` holding this op's tensor: for an output op the
        model's return value, for an input op the argument it came in; ``None`` outside any."""
        return container_of(self.container_spec)

    @property
    def layer(self) -> "Layer":
        """The layer this op is a pass of."""
        return self._layers[self.layer_label]

    @property
    def is_buffer(self) -> bool:
        """Whether this op is a registered buffer's version, not a computation."""
        return self.buffer is not None

    @property
    def buffer_write_kind(self) -> Optional[WriteKind]:
        """``reassign``, ``inplace`` or ``fused`` for a written version; else ``None``."""
        return self.buffer.write_kind if self.buffer is not None else None

    @property
    def buffer_value_changed(self) -> Optional[bool]:
        """Whether this buffer write changed the value; ``None`` when not a write."""
        return self.buffer.value_changed if self.buffer is not None else None


@dataclass(frozen=True, slots=True, eq=False)
class Layer:
    """One operation written at one place: all its passes."""

    #: ``{func}_{n}``: the n-th layer of this ``func_name`` in order of first execution.
    layer_label: str
    #: Normalised op name shared by all passes (``input``/``output`` for the boundaries).
    func_name: str
    #: Address of the scope, the innermost module instance it ran in (``self`` for the root).
    module: str
    #: Whether this is a model input or output layer (always single-pass).
    is_input: bool
    is_output: bool
    #: The passes, in capture order (``ops[k].pass_num == k + 1``).
    ops: tuple[Op, ...] = field(repr=False)
    #: Every parameter any pass used, in order of first use.
    params: tuple[str, ...]
    #: Where it was written.
    call_site: CallSite = field(repr=False)

    @property
    def num_passes(self) -> int:
        """How many times this place ran."""
        return len(self.ops)

    @property
    def is_buffer(self) -> bool:
        """Whether this layer groups versions of a registered buffer."""
        return self.ops[0].is_buffer

    @property
    def is_compute(self) -> bool:
        """Whether this layer is a computation: not a model input or output, not a buffer version."""
        return not (self.is_input or self.is_output or self.is_buffer)

    @property
    def out(self) -> Any:
        """The output of a single-pass layer; for several passes use ``ops[k].out``."""
        if len(self.ops) != 1:
            raise TorchLensValueError(
                f"{self.layer_label} has {len(self.ops)} passes, so it has no single output; "
                f"read one pass: trace['{self.layer_label}:2'].out or layer.ops[1].out"
            )
        return self.ops[0].out

    @property
    def container(self) -> Optional[Container]:
        """``op.container`` of a single-pass layer (model inputs and outputs are single-pass);
        ``None`` for several passes: read ``ops[k].container``."""
        return self.ops[0].container if len(self.ops) == 1 else None


@dataclass(frozen=True, slots=True)
class ModuleCall:
    """One call of a module: ``trace["block:2"]``. ``str()`` gives its label."""

    #: ``{module address}:{index}``, e.g. ``block:2``.
    label: str
    #: Address of the module called.
    module: str
    #: Which call of that module this is (1-based, in the order the calls started).
    index: int
    #: Label of the module call it ran inside; ``None`` for the model's own call.
    parent: Optional[str]
    #: Labels of the ops whose outputs were passed in (in argument order), and of the ops
    #: whose outputs it returned (in the order of its return value's leaves).
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    #: Labels of every op that ran during the call, nested module calls included, in
    #: capture order.
    ops: tuple[str, ...] = field(repr=False)

    def __str__(self) -> str:
        return self.label


@dataclass(frozen=True, slots=True)
class Module:
    """One module instance of the model and its numbered calls."""

    #: Address as in ``named_modules()`` (``blocks.0``); ``self`` for the root model.
    address: str
    #: Class name (``Linear``).
    type_name: str
    #: How many times it was called during the forward pass.
    num_calls: int
    #: Its calls, in order (``calls[k - 1]`` is ``{address}:{k}``).
    calls: tuple[ModuleCall, ...]
    #: Addresses of its own parameters (not its children's).
    params: tuple[str, ...]
    #: Addresses of its direct children.
    children: tuple[str, ...]
    #: Address of its parent; ``None`` for the root.
    parent: Optional[str]
    #: Addresses of its own registered buffers.
    buffers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of the model."""

    #: Address as in ``named_parameters()`` (``blocks.0.lin.weight``).
    address: str
    shape: tuple[int, ...]
    dtype: Any
    #: Address of the module that owns it.
    module: str


class Ops(tuple):
    """Every op in capture order; also indexable by label.

    ``trace.ops[3]`` is the fourth op; ``trace.ops["linear_1:2"]`` the op with that label, and
    ``trace.ops["output_1"]`` the only pass of a single-pass layer.
    """

    __slots__ = ()

    def __getitem__(self, key: Any) -> Any:
        if not isinstance(key, str):
            return tuple.__getitem__(self, key)
        layers = self[0]._layers if self else {}
        name, _, number = key.rpartition(":")
        layer = layers.get(name) if number.isdigit() else layers.get(key)
        k = int(number) if number.isdigit() else 1
        if layer is not None and (number.isdigit() or layer.num_passes == 1) and 1 <= k <= layer.num_passes:
            return layer.ops[k - 1]
        raise TorchLensValueError(
            f"{key!r} is not an op label (linear_1:2) or a single-pass layer label of this trace"
        )
