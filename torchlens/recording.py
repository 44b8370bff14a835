"""``tl.record``: a lean capture that keeps only the ops a predicate selects (predicate capture).

A :class:`Recording` holds the selected ops' outputs and, for every op, only its grouping key
(scope, call site, operation, slot), its parents and its metadata: no replay records, no
other tensor. Nothing is grouped until :meth:`Recording.to_trace` cooks it into a
:class:`~torchlens.trace.Trace` with the same layers, labels and passes as ``tl.trace`` of the
same model (the grouping spec's Limits section).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Optional

from torch import nn

from torchlens.capture.record import RawCapture
from torchlens.capture.select import OpInfo
from torchlens.capture.session import capture_forward

from .api import _validate, cook
from .errors import TorchLensValueError
from .options import CaptureOptions
from .trace import Trace


@dataclass(frozen=True, slots=True)
class RecordedOp:
    """One selected op of a :class:`Recording`: what it is and its output."""

    info: OpInfo
    #: The output tensor as it was when the op ran.
    out: Any = field(repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Recording:
    """What ``tl.record`` kept: the selected ops, in capture order, by pass label."""

    #: The selected ops, in capture order.
    ops: tuple[RecordedOp, ...]
    _model: nn.Module = field(repr=False)
    _raw: RawCapture = field(repr=False)
    _options: CaptureOptions = field(repr=False)
    _forward_kwargs: Mapping[str, Any] = field(repr=False)
    _cooked: list = field(default_factory=list, repr=False)

    def __getitem__(self, label: str) -> RecordedOp:
        """The selected op with pass label ``label`` (``linear_1:2``)."""
        for op in self.ops:
            if op.info.label == label:
                return op
        raise TorchLensValueError(
            f"{label!r} is not a pass label of a recorded op; recorded: "
            f"{', '.join(op.info.label for op in self.ops[:8]) or 'none'}{' ...' if len(self.ops) > 8 else ''}"
        )

    def __len__(self) -> int:
        return len(self.ops)

    def __iter__(self) -> Iterator[RecordedOp]:
        return iter(self.ops)

    def to_trace(self) -> Trace:
        """Group the recording into a :class:`Trace`: every layer, label and pass ``tl.trace``
        gives, the selected ops with their outputs and every other op with metadata only."""
        if not self._cooked:
            self._cooked.append(cook(self._model, self._raw, self._options, self._forward_kwargs))
        return self._cooked[0]


def record(
    model: nn.Module,
    *inputs: Any,
    predicate: Any,
    forward_kwargs: Optional[Mapping[str, Any]] = None,
    capture: Optional[CaptureOptions] = None,
) -> Recording:
    """Run ``model(*inputs, **forward_kwargs)`` once, keeping the outputs of the ops ``predicate``
    selects: a callable over :class:`~torchlens.OpInfo` or a collection of names, as
    ``CaptureOptions(save=...)`` takes them.

    >>> rec = tl.record(model, x, predicate=lambda op: op.func_name == "relu")
    >>> [op.info.label for op in rec], rec.to_trace()
    """
    options = replace(_validate(model, forward_kwargs, capture, False, "tl.record"), save=predicate, save_outputs=None)
    if options.save in ("all", "none"):
        raise TorchLensValueError(
            f"tl.record(predicate=...) selects ops by a callable or a collection of names, got {predicate!r}; "
            f'for save="all" or "none" use tl.trace(model, x, capture=CaptureOptions(save=...))'
        )
    kwargs = dict(forward_kwargs or {})
    raw = capture_forward(model, inputs, kwargs, options.save, options.capture_container_structure)
    ops = tuple(RecordedOp(info, raw.ops[index].out) for index, info in raw.selected)
    return Recording(ops, model, raw, options, kwargs)
