"""Options objects: frozen, validated on construction, with sensible defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from .errors import TorchLensTypeError


@dataclass(frozen=True, slots=True)
class CaptureOptions:
    """How ``tl.trace`` captures a forward pass.

    >>> tl.trace(model, x, capture=tl.options.CaptureOptions(save_outputs=False))
    """

    #: Keep every op's output tensor (``op.out``). ``False`` keeps shapes and dtypes only,
    #: which saves the memory of holding every activation.
    save_outputs: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.save_outputs, bool):
            raise TorchLensTypeError(
                f"CaptureOptions(save_outputs=...) must be True or False, got {self.save_outputs!r}"
            )


@dataclass(frozen=True, slots=True)
class TraceOptions:
    """What produced a trace: the capture options and the grouping rule that ran."""

    #: The options the capture ran with.
    capture: CaptureOptions
    #: Which grouping ran: ``{"detector": "callsite_v1", "key": (...)}``.
    grouping_policy: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "grouping_policy", MappingProxyType(dict(self.grouping_policy)))
