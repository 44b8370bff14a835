"""Options objects: frozen, validated on construction, with sensible defaults."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping, Optional, Union

from torchlens.analysis.arguments import check_bool, check_choice, check_whole, wrong_type
from torchlens.analysis.errors import TorchLensValueError
from torchlens.capture.select import OpInfo

__all__ = ["CaptureOptions", "OpInfo", "TraceOptions"]

#: Accepted values of ``CaptureOptions.show_buffers``.
SHOW_BUFFERS = ("meaningful", "always")
#: Accepted string values of ``CaptureOptions.show_containers`` (besides ``False``), each
#: adding to the one before.
SHOW_CONTAINERS = ("labels", "collapsed", "nodes")


@dataclass(frozen=True, slots=True)
class CaptureOptions:
    """How ``tl.trace`` captures a forward pass.

    >>> tl.trace(model, x, capture=tl.options.CaptureOptions(save="none"))
    """

    #: Which op outputs the trace keeps (``op.out``); every op keeps its metadata (``shape``,
    #: ``dtype``, ``device``, ``stride``, ``requires_grad``) either way. ``"all"`` (default):
    #: every output, and the replay records ``validate_forward_pass`` needs. ``"none"``: none,
    #: and the trace holds no tensor at all. A collection of names: the ops whose pass label
    #: (``linear_1:2``), layer label (``linear_1``) or function name (``linear``) is one of them,
    #: or that ran in one of the named modules (``blocks.0``: the module and its submodules;
    #: buffer versions by buffer address ``bn.running_mean`` or ``bn.running_mean:2``). A callable:
    #: the ops for which ``save(info)`` is true, ``info`` a :class:`~torchlens.OpInfo`. Outputs
    #: not selected are never held, so the forward pass's peak memory is the model's own; only
    #: ``"all"`` keeps replay records (``validate_forward_pass`` raises otherwise).
    save: Union[str, Collection[str], Callable[[Any], bool]] = "all"
    #: Kept for older code: ``save_outputs=False`` means ``save="none"``. After construction it
    #: reads whether every output is saved (``save == "all"``).
    save_outputs: Optional[bool] = None
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
    #: Keep the gradient each op output receives when the caller runs ``backward()`` on the
    #: traced output (``op.grad``); the gradients themselves are left exactly as they were.
    save_gradients: bool = False

    def __post_init__(self) -> None:
        _check_save(self)
        check_choice("CaptureOptions(show_buffers=...)", self.show_buffers, SHOW_BUFFERS)
        check_bool("CaptureOptions(capture_container_structure=...)", self.capture_container_structure)
        check_choice("CaptureOptions(show_containers=...)", self.show_containers, SHOW_CONTAINERS, or_false=True)
        check_whole("CaptureOptions(container_max_inline=...)", self.container_max_inline)
        check_bool("CaptureOptions(save_gradients=...)", self.save_gradients)


def _check_save(options: CaptureOptions) -> None:
    """Normalise ``save`` (a collection becomes a frozenset) and its ``save_outputs`` alias."""
    save, alias = options.save, options.save_outputs
    if alias is not None:
        check_bool("CaptureOptions(save_outputs=...)", alias)
    if isinstance(save, str):
        if save not in ("all", "none"):
            raise TorchLensValueError(
                f'CaptureOptions(save=...) must be "all", "none", a collection of names or a predicate, '
                f"got the string {save!r}; to select the ops named {save!r} write save=({save!r},)"
            )
    elif callable(save):
        pass
    elif isinstance(save, Collection) and all(isinstance(name, str) for name in save):
        object.__setattr__(options, "save", frozenset(save))
    else:
        raise wrong_type("CaptureOptions(save=...)", save,
                         '"all", "none", a collection of names (str) or a callable taking a tl.OpInfo')
    if alias is not None and alias != (options.save == "all"):
        if options.save != "all":
            raise TorchLensValueError(
                f"CaptureOptions(save={options.save!r}, save_outputs={alias!r}) disagree; "
                "save_outputs is an older spelling of save: pass only save="
            )
        object.__setattr__(options, "save", "all" if alias else "none")
    object.__setattr__(options, "save_outputs", options.save == "all")


@dataclass(frozen=True, slots=True)
class TraceOptions:
    """What produced a trace: the capture options and the grouping rule that ran."""

    #: The options the capture ran with.
    capture: CaptureOptions
    #: Which grouping ran: ``{"detector": "callsite_v1", "key": (...)}``.
    grouping_policy: Mapping[str, Any] = field(default_factory=dict)
    #: Which backend captured it (``torch`` or ``jax``; see :mod:`torchlens.capture.backends`).
    backend: str = "torch"

    def __post_init__(self) -> None:
        object.__setattr__(self, "grouping_policy", MappingProxyType(dict(self.grouping_policy)))
