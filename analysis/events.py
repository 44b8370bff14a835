"""What the abstract run records: one :class:`Event` per op call it predicts, and gaps.

An event is the prediction's counterpart of one recorded op: its scope (module address),
its call-site chain (places outermost first, :class:`HookMark` where a forward hook was
entered), the op name, and how many times it runs (a :class:`~analysis.passes.Count`).
A :class:`Gap` is a place where the prediction had to stop reading (a callable without
source, an unknown callee receiving tensors): runtime ops below it are explained by it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .passes import Count
from .sites import HookMark, Link

__all__ = ["HookMark", "Event", "Gap", "Link"]


@dataclass(eq=False, slots=True)
class Event:
    """One predicted op call (one output slot per layer, see ``slots``)."""

    #: Module address of the scope (``self`` for the root).
    scope: str
    #: The collapsed call-site chain; ``None`` when some place in it is unknown.
    chain: Optional[tuple[Link, ...]]
    #: Op name as the capture names it (``linear``, ``add``, ``radd``, ``getitem``).
    name: str
    #: How many times this event stands for.
    count: Count
    #: Number of output slots (2 for ``torch.max(x, 1)``); ``None`` until known.
    slots: Optional[int] = 1
    #: Why the chain is unknown (when ``chain`` is ``None``).
    why: str = ""
    #: ``(producer, output slot)`` of each tensor argument an earlier predicted op produced,
    #: in argument order (the predicted dataflow).
    inputs: tuple[tuple[Event, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Gap:
    """A place where the prediction stopped following the program."""

    #: Scope and chain down to the call it could not follow.
    scope: str
    chain: Optional[tuple[Link, ...]]
    #: Why (``"transformers...wrapper: no source"``, ``"call to an unknown value"``).
    why: str
