"""The layer key, the label allocator and the grouping of keyed events: one rule, one home.

Two events (recorded ops of a capture, predicted op calls of a prediction) are passes of
one layer exactly when their keys are equal (spec: grouping.txt). Layers are numbered in
order of first occurrence, passes in order within their layer, and a layer is labelled
``{func}_{n}``: the n-th layer of that op name in that order. The capture's grouping
(:mod:`torchlens.grouping`), the prediction (:mod:`torchlens.analysis.prediction`) and the
check of a prediction against a capture (:mod:`torchlens.predict`) all use these functions,
so the rule is written once.

Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Iterable, NamedTuple, Optional

from .sites import Link

__all__ = ["LayerKey", "Grouper", "Grouping", "group_keys", "LabelAllocator", "layer_labels", "pass_label",
           "call_label"]


class LayerKey(NamedTuple):
    """The grouping key in the terms both sides share: what makes two op calls one layer."""

    #: Module address of the scope (``self`` for the root).
    scope: str
    #: The collapsed call-site chain, outermost first; ``None`` when a place is unknown.
    chain: Optional[tuple[Link, ...]]
    #: Op name as the capture names it (``linear``, ``add``, ``radd``).
    name: str
    #: Which output of a multi-output op.
    slot: int


@dataclass(frozen=True, slots=True)
class Grouping:
    """Which layer each keyed event falls in, and its pass number there."""

    #: Per event: the index of its layer (layers in order of first occurrence).
    layer_of: tuple[int, ...]
    #: Per event: its 1-based pass number within its layer.
    pass_of: tuple[int, ...]
    #: Per layer: the index of its first event.
    first: tuple[int, ...]

    def members(self) -> list[list[int]]:
        """Per layer: the indices of its events, in order."""
        out: list[list[int]] = [[] for _ in self.first]
        for i, layer in enumerate(self.layer_of):
            out[layer].append(i)
        return out


class Grouper:
    """Groups keyed events one at a time, in order (the capture labels ops as they run)."""

    __slots__ = ("_layers", "_passes")

    def __init__(self) -> None:
        self._layers: dict[Hashable, int] = {}
        self._passes: list[int] = []

    def add(self, key: Hashable) -> tuple[int, int]:
        """The layer index of the next event (a new one when its key is new) and its pass number."""
        passes = self._passes
        n = self._layers.setdefault(key, len(passes))  # one lookup: hashing a key's chain is most of the cost
        if n == len(passes):
            passes.append(1)
            return n, 1
        passes[n] += 1
        return n, passes[n]


def group_keys(keys: Iterable[Hashable]) -> Grouping:
    """Group events by equal keys: layers in order of first occurrence, passes in order."""
    grouper = Grouper()
    first: list[int] = []
    layer_of: list[int] = []
    pass_of: list[int] = []
    for i, key in enumerate(keys):
        n, k = grouper.add(key)
        if k == 1:
            first.append(i)
        layer_of.append(n)
        pass_of.append(k)
    return Grouping(tuple(layer_of), tuple(pass_of), tuple(first))


class LabelAllocator:
    """Hands out ``{func}_{n}``: the n-th layer of op name ``func`` asked for."""

    __slots__ = ("_per_name",)

    def __init__(self) -> None:
        self._per_name: dict[str, int] = {}

    def take(self, name: str) -> str:
        """The label of the next layer of op name ``name``."""
        n = self._per_name[name] = self._per_name.get(name, 0) + 1
        return f"{name}_{n}"


def layer_labels(names: Iterable[str]) -> list[str]:
    """``{func}_{n}`` for each layer's op name, given in order of first execution."""
    allocator = LabelAllocator()
    return [allocator.take(name) for name in names]


def pass_label(layer_label: str, k: int) -> str:
    """The label of a layer's k-th pass (1-based): ``linear_1:2``."""
    return f"{layer_label}:{k}"


def call_label(address: str, k: int) -> str:
    """The label of a module's k-th call (1-based): ``block:2``."""
    return f"{address}:{k}"
