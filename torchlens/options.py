"""Options objects: frozen, validated on construction, with sensible defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Union

from torchlens.analysis.arguments import check_bool, check_choice, check_whole

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
        check_bool("CaptureOptions(save_outputs=...)", self.save_outputs)
        check_choice("CaptureOptions(show_buffers=...)", self.show_buffers, SHOW_BUFFERS)
        check_bool("CaptureOptions(capture_container_structure=...)", self.capture_container_structure)
        check_choice("CaptureOptions(show_containers=...)", self.show_containers, SHOW_CONTAINERS, or_false=True)
        check_whole("CaptureOptions(container_max_inline=...)", self.container_max_inline)


@dataclass(frozen=True, slots=True)
class TraceOptions:
    """What produced a trace: the capture options and the grouping rule that ran."""

    #: The options the capture ran with.
    capture: CaptureOptions
    #: Which grouping ran: ``{"detector": "callsite_v1", "key": (...)}``.
    grouping_policy: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "grouping_policy", MappingProxyType(dict(self.grouping_policy)))
