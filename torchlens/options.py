"""Options objects: frozen, validated on construction, with sensible defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Union

from .errors import TorchLensTypeError, TorchLensValueError

#: Accepted values of ``CaptureOptions.show_buffers``.
SHOW_BUFFERS = ("meaningful", "always")
#: Accepted string values of ``CaptureOptions.show_containers`` (besides ``False``), each
#: adding to the one before.
SHOW_CONTAINERS = ("labels", "collapsed", "nodes")


@dataclass(frozen=True, slots=True)
class CaptureOptions:
    """How ``tl.trace`` captures a forward pass.

    >>> tl.trace(model, x, capture=tl.options.CaptureOptions(save_outputs=False))
    """

    #: Keep every op's output tensor (``op.out``). ``False`` keeps shapes and dtypes only,
    #: which saves the memory of holding every activation.
    save_outputs: bool = True
    #: Which registered buffers drawings show: ``"meaningful"`` hides BatchNorm running
    #: statistics and ``num_batches_tracked``; ``"always"`` shows every buffer.
    show_buffers: str = "meaningful"
    #: Record the model inputs' structure, the containers module calls take and return, and
    #: each op's place in them (``op.container``, ``op.container_spec``). The model output's
    #: structure is recorded either way (``trace.reconstruct_output()``).
    capture_container_structure: bool = False
    #: How drawings show containers: ``False`` not at all; ``"labels"`` key labels on edges;
    #: ``"collapsed"`` also one summary node per container; ``"nodes"`` also its leaves fanned
    #: out from (inputs) or into (outputs) that node.
    show_containers: Union[bool, str] = False
    #: Under ``"collapsed"`` and ``"nodes"``: how many keys a container node lists inline.
    container_max_inline: int = 4

    def __post_init__(self) -> None:
        if not isinstance(self.save_outputs, bool):
            raise TorchLensTypeError(
                f"CaptureOptions(save_outputs=...) must be True or False, got {self.save_outputs!r}"
            )
        if self.show_buffers not in SHOW_BUFFERS:
            raise TorchLensValueError(
                f"CaptureOptions(show_buffers=...) must be one of {', '.join(map(repr, SHOW_BUFFERS))}, "
                f"got {self.show_buffers!r}"
            )
        _check_container_options(self)


def _check_container_options(options: CaptureOptions) -> None:
    if not isinstance(options.capture_container_structure, bool):
        raise TorchLensTypeError(
            "CaptureOptions(capture_container_structure=...) must be True or False, "
            f"got {options.capture_container_structure!r}"
        )
    if options.show_containers is not False and options.show_containers not in SHOW_CONTAINERS:
        raise TorchLensValueError(
            f"CaptureOptions(show_containers=...) must be False or one of {', '.join(map(repr, SHOW_CONTAINERS))}, "
            f"got {options.show_containers!r}"
        )
    max_inline = options.container_max_inline
    if not isinstance(max_inline, int) or isinstance(max_inline, bool) or max_inline < 0:
        raise TorchLensValueError(
            f"CaptureOptions(container_max_inline=...) must be a whole number >= 0, got {max_inline!r}"
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
