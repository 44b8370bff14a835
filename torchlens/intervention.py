"""``trace.do(edits)``: what the forward pass would have computed with some values changed.

Each edit replaces one op's saved output (a tensor, or a function of the saved output). The
ops the change reaches, its *cone of effect*, are re-executed in capture order from the
trace's own snapshots (spec: buffers.txt, "Intervention replay"); every other op keeps its
saved value. The result is a new :class:`~torchlens.trace.Trace` with the same labels.

Buffer versions thread through: when a re-executed op wrote a buffer, the version it made
takes the recomputed state and later readers (and later writes) see it. Threading is
self-certifying: it applies to in-place and reassignment writes whose captured version
equals the writing op's captured output. A version that cannot be certified (a fused
running-statistics update, a write through a slice) keeps its captured value, and the gap is
disclosed with :class:`~torchlens.errors.BufferThreadGapWarning`, or raised as
:class:`~torchlens.errors.BufferThreadGapError` under ``strict=True``. Random ops are all
re-run in capture order from the captured random state, so each draws what it drew before.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Optional

import torch

from torchlens.analysis.arguments import check_bool, check_instance
from torchlens.capture.buffers import WriteKind
from torchlens.capture.containers import ContainerSpec
from torchlens.capture.funcs import RANDOM
from torchlens.capture.snapshots import snapshot

from .buffers import Buffer
from .containers import ContainerRecords
from .errors import BufferThreadGapError, BufferThreadGapWarning, InterventionError
from .records import Layer, Op, Ops
from .replay import Reexecution

if TYPE_CHECKING:
    from .trace import Trace


def intervene(trace: "Trace", edits: Mapping[str, Any], strict: bool = False) -> "Trace":
    """The trace ``trace`` would have been with ``edits`` applied; see the module docstring."""
    check_instance("trace.do(edits)", edits, Mapping, "a mapping of op labels to tensors or functions",
                   'e.g. trace.do({"relu_1:2": torch.zeros(3)})')
    check_bool("trace.do(strict=...)", strict)
    missing = [op.label for op in trace.ops if op.out is None]
    if missing:
        raise InterventionError(
            f"trace.do needs every op's saved output; {missing[0]} has none (captured with "
            "CaptureOptions(save_outputs=False)): trace the model again with the default options"
        )
    values: list[Any] = [op.out for op in trace.ops]
    position = {op.label: i for i, op in enumerate(trace.ops)}
    edited = {position[_target(trace, key).label]: edit for key, edit in edits.items()}
    for i, edit in edited.items():
        values[i] = _edited_value(trace.ops[i], edit)
    with trace._state.restored():
        gaps = _Cone(trace, values, set(edited)).run()
    if gaps:
        message = (
            f"trace.do: the edit reached {len(gaps)} write(s) whose new state cannot be certified "
            f"({'; '.join(gaps)}); those keep their captured values and the edit does not "
            "propagate through them"
        )
        if strict:
            raise BufferThreadGapError(message)
        warnings.warn(BufferThreadGapWarning(message), stacklevel=3)
    return _derived(trace, values)


def _target(trace: "Trace", key: Any) -> "Op":
    """The op an edit names: a pass label, a single-pass layer label or a buffer version."""
    found = trace[key]
    if isinstance(found, Layer) and found.num_passes == 1:
        found = found.ops[0]
    if not isinstance(found, Op):
        raise InterventionError(
            f"trace.do: {key!r} is not one op; name a pass (tanh_1:2), a single-pass layer or a "
            "buffer version (bn.running_mean:2)"
        )
    return found


def _edited_value(op: "Op", edit: Any) -> torch.Tensor:
    """The edit's value, owned by the result (never the user's tensor, never the saved one)."""
    value = edit(op.out.clone()) if callable(edit) and not isinstance(edit, torch.Tensor) else edit
    if not isinstance(value, torch.Tensor):
        raise InterventionError(
            f"trace.do: the edit of {op.label} must be a tensor or a function returning one, "
            f"got {type(value).__name__}"
        )
    return snapshot(value)


class _Cone:
    """One re-execution of the ops an edit reaches."""

    def __init__(self, trace: "Trace", values: list[Any], edited: set[int]) -> None:
        self.ops = trace.ops
        self.engine = Reexecution(trace, values)
        self.values = values
        #: Ops whose value differs from the capture's (the edits and what they reached).
        self.changed = set(edited)
        self.gaps: list[str] = []

    def run(self) -> list[str]:
        position = self.engine.position
        for i, op in enumerate(self.ops):
            if i in self.changed:
                continue
            if any(position[p] in self.changed for p in op.parents):
                value = self._value(op)
                if value is not None:
                    self.values[i] = value
                    self.changed.add(i)
            elif op.func_name in RANDOM and op._replay is not None:
                self.engine.call(op)  # draws what it drew, so the random ops after it do too
        return self.gaps

    def _value(self, op: "Op") -> Optional[torch.Tensor]:
        """The recomputed value of a reached op; ``None`` keeps the captured one."""
        parent = self.engine.parent(op)
        if op.layer.is_output:
            if self.engine.written_through_view(op):
                self.gaps.append(f"{op.label} (written through a view by {op.parents[1]})")
                return None
            return self.values[parent]
        if op.buffer is None:
            return self.engine.call(op)
        version = op.buffer
        writer = self.ops[parent]
        certified = (
            version.write_kind in (WriteKind.INPLACE, WriteKind.REASSIGN) and not version.transition_only
            and writer.out.shape == op.out.shape and torch.equal(writer.out, op.out)
        )
        if not certified:
            why = "a write through a slice" if version.transition_only else f"a {version.write_kind} write"
            self.gaps.append(f"{version.address}:{version.version} ({op.label}, {why})")
            return None
        return self.values[parent]


def _derived(trace: "Trace", values: list[Any]) -> "Trace":
    """A copy of ``trace`` whose ops hold ``values`` (same labels, layers, modules, options)."""
    index: dict[str, Any] = {}
    containers = trace.containers
    roots: dict[int, Any] = {}
    if containers is not None:
        roots = {id(root): replace(root) for root in containers.roots}
    ops = [
        replace(op, out=value, shape=tuple(value.shape), dtype=value.dtype, _layers=index, _grad=None,
                _meta=op._metadata,
                container_spec=None if op.container_spec is None
                else ContainerSpec(roots[id(op.container_spec.root)], op.container_spec.path))
        for op, value in zip(trace.ops, values)
    ]
    by_label = {op.label: op for op in ops}
    layers = tuple(replace(layer, ops=tuple(by_label[op.label] for op in layer.ops)) for layer in trace.layers)
    index.update((layer.layer_label, layer) for layer in layers)
    buffers = {address: _derived_buffer(buffer, by_label) for address, buffer in trace.buffers.items()}
    records = None
    if containers is not None:
        for root in roots.values():
            root.ops = ops
            if root.values is not None:
                root.values = tuple(old if i < 0 else values[i] for old, i in zip(root.values, root.leaves))
        records = ContainerRecords(tuple(roots[id(r)] for r in containers.roots), containers.model,
                                   containers.forward_kwargs)
    return type(trace)(layers, Ops(ops), trace.modules, trace.params, trace.input_layers, trace.output_layers,
                 trace.options, buffers=buffers, _state=trace._state, containers=records)


def _derived_buffer(buffer: Buffer, by_label: dict[str, Any]) -> Buffer:
    versions = tuple(by_label[op.label] for op in buffer.versions)
    if not versions:
        return buffer
    initial = versions[0].out if versions[0].buffer_write_kind is None else buffer.initial_value
    return replace(buffer, initial_value=initial, final_value=versions[-1].out, versions=versions)
