"""What the abstract run records: one :class:`Event` per op call it predicts, and gaps.

An event is the prediction's counterpart of one recorded op: its scope (module address),
its call-site chain (places outermost first, :class:`HookMark` where a forward hook was
entered), the op name, and how many times it runs (a :class:`~analysis.passes.Count`).
A :class:`Gap` is a place where the prediction had to stop reading (a callable without
source, an unknown callee receiving tensors): runtime ops below it are explained by it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .passes import Count
from .sites import HookMark, Link

__all__ = ["HookMark", "Event", "ForwardInput", "Gap", "Link", "LoopEntry", "real_inputs"]


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
    #: ``(producer, output slot)`` of each tensor the previous pass of a loop the prediction does
    #: not unroll hands to this op (a value the loop body rebinds and the next pass reads).
    carried: tuple[tuple[Event, int], ...] = ()
    #: Whether its outputs' metadata was computed on fake tensors (it does not raise on the
    #: example inputs' shapes).
    computed: bool = False


@dataclass(eq=False, slots=True)
class LoopEntry:
    """Stands as the producer of a name's value at the top of a loop pass, so the ops of the
    pass that read it through that name are found (see ``Interpreter.exec_While``)."""

    #: The value's real producer (``None``: an input or parameter).
    origin: Optional[tuple[Event, int]]


@dataclass(frozen=True, slots=True)
class ForwardInput:
    """Stands as the producer of a tensor the forward pass is given: the capture's input layer
    ``label`` (``input_1``, ...), numbered as the capture numbers the call's tensor leaves."""

    label: str


@dataclass(frozen=True, slots=True)
class Gap:
    """A place where the prediction stopped following the program."""

    #: Scope and chain down to the call it could not follow.
    scope: str
    chain: Optional[tuple[Link, ...]]
    #: Why (``"transformers...wrapper: no source"``, ``"call to an unknown value"``).
    why: str


def real_inputs(inputs: tuple[tuple[Event, int], ...]) -> tuple[tuple[Event, int], ...]:
    """``inputs`` with each :class:`LoopEntry` replaced by the real producer it stands for (none
    for an input), each once. A marked value kept past its loop pass (in a list) still reads so."""
    real: list[tuple[Event, int]] = []
    for producer, k in inputs:
        origin: Optional[tuple[Any, int]] = (producer, k)
        while origin is not None and isinstance(origin[0], LoopEntry):
            origin = origin[0].origin
        if origin is not None:
            real.append(origin)
    return tuple(dict.fromkeys(real))
