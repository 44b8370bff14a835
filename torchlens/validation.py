"""``trace.validate_forward_pass()``: replay the captured graph op by op and compare.

Starting from the saved inputs and starting buffer values, every op's recorded torch call
is re-run with its tensor arguments replaced by the *replayed* outputs of the ops they came
from, and each result is compared with what the capture saved. Buffer versions are checked
as state transitions (spec: buffers.txt): a full-buffer write must equal its writer's
replayed output; a fused write (BatchNorm running statistics) is re-run on a copy of the
previous version; a write through a slice is marked state-transition-only, since its op
output is only the slice, and so is a model output written through a view of it. Replay
never writes into saved values: in-place and fused ops run on copies. torch's random state
is set to the one the capture started with, and put back afterwards, so dropout replays the
same mask.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from torchlens.analysis.arguments import check_bool
from torchlens.capture.buffers import WriteKind
from torchlens.capture.funcs import UNINITIALISED

from .errors import TorchLensValueError, ValidationError
from .replay import Reexecution

if TYPE_CHECKING:
    from .records import BufferVersion, Op
    from .trace import Trace


@dataclass(frozen=True, slots=True)
class ValidationReport:
    """The outcome of replaying a trace."""

    #: Whether every compared op matched.
    ok: bool
    #: How many op outputs were compared.
    checked: int
    #: ``(op label, what differed)`` for each op whose replay differed.
    mismatches: tuple[tuple[str, str], ...]
    #: Buffer versions written through a slice, and outputs written through a view: checked
    #: as state transitions only (the write and what it wrote into were compared).
    transition_only: tuple[str, ...]
    #: Ops whose output is uninitialised memory (``empty_like``): shape and dtype compared, not
    #: values; what reads them is replayed from the saved value.
    metadata_only: tuple[str, ...] = ()

    def __str__(self) -> str:
        head = f"validate_forward_pass: {'ok' if self.ok else 'MISMATCH'}, {self.checked} ops compared"
        lines = [head] + [f"  {label}: {why}" for label, why in self.mismatches]
        if self.transition_only:
            lines.append(f"  state-transition-only: {', '.join(self.transition_only)}")
        if self.metadata_only:
            lines.append(f"  uninitialised memory, shape and dtype only: {', '.join(self.metadata_only)}")
        return "\n".join(lines)


def validate_forward_pass(trace: "Trace", strict: bool = False) -> ValidationReport:
    """Replay ``trace`` from its saved inputs and compare every op's output."""
    check_bool("validate_forward_pass(strict=...)", strict)
    if not trace.options.capture.save_outputs:
        raise TorchLensValueError(
            "validate_forward_pass needs every op's output and its replay record; this trace was "
            f"captured with CaptureOptions(save={trace.options.capture.save!r}): trace again with "
            "the default save=\"all\""
        )
    with trace._state.restored():
        report = _Replay(trace).run()
    if strict and not report.ok:
        raise ValidationError(str(report))
    return report


class _Replay:
    def __init__(self, trace: "Trace") -> None:
        self.ops = trace.ops
        self.engine = Reexecution(trace, [None] * len(trace.ops))
        self.values = self.engine.values
        self.latest: dict[str, int] = {}
        self.mismatches: list[tuple[str, str]] = []
        self.transition_only: list[str] = []
        self.metadata_only: list[str] = []
        self.checked = 0

    def run(self) -> ValidationReport:
        for i, op in enumerate(self.ops):
            self.values[i] = self._value(i, op)
        return ValidationReport(not self.mismatches, self.checked, tuple(self.mismatches), tuple(self.transition_only),
                                tuple(self.metadata_only))

    def _value(self, i: int, op: "Op") -> Any:
        parent = self.engine.parent(op)
        if op.layer.is_input:
            return op.out
        if op.layer.is_output:
            if parent < 0:  # a tensor no op made (a module attribute, a constant): as saved
                return op.out
            if self.engine.written_through_view(op):  # both its parents were compared
                self.transition_only.append(op.label)
                return op.out
            return self._compare(op, self.values[parent])
        if op.buffer is not None:
            return self._buffer_version(i, op, op.buffer, parent)
        if op.func_name in UNINITIALISED:
            self.metadata_only.append(op.label)
            self._compare(op, self.engine.call(op), values=False)
            return op.out
        return self._compare(op, self.engine.call(op))

    def _buffer_version(self, i: int, op: "Op", version: "BufferVersion", writer: int) -> Any:
        previous = self.latest.get(version.address, -1)
        self.latest[version.address] = i
        if version.write_kind is None or writer < 0:
            return op.out  # the starting value, or a reassignment of a tensor no op made
        if version.transition_only:
            self.transition_only.append(op.label)
            return op.out
        if version.write_kind is WriteKind.FUSED:
            written = self.engine.written_copy(writer, previous)
            return self._compare(op, op.out if written is None else written)
        return self._compare(op, self.values[writer])

    def _compare(self, op: "Op", value: Any, values: bool = True) -> Any:
        self.checked += 1
        expected = op.out
        if not isinstance(value, torch.Tensor):
            self.mismatches.append((op.label, f"replay gave {type(value).__name__}, not a tensor"))
        elif value.shape != expected.shape or value.dtype != expected.dtype or value.layout != expected.layout:
            self.mismatches.append((op.label, f"replay gave {tuple(value.shape)} {value.dtype} {value.layout}, "
                                              f"capture saved {tuple(expected.shape)} {expected.dtype} {expected.layout}"))
        elif values and not _same(comparable(value), comparable(expected)):
            diff = (comparable(value).double() - comparable(expected).double()).abs().max().item() \
                if value.is_floating_point() else "-"
            self.mismatches.append((op.label, f"values differ (max abs difference {diff})"))
        return value


def comparable(t: torch.Tensor) -> torch.Tensor:
    """``t``'s values where torch's kernels compare them: a sparse tensor's dense values, a float8
    tensor's as float32 (exact: neither has ``eq`` or ``isnan`` kernels of its own)."""
    t = t if t.layout is torch.strided else t.to_dense()
    return t.float() if t.is_floating_point() and t.element_size() == 1 else t


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.is_floating_point() or a.is_complex():
        return torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)
    return torch.equal(a, b)
