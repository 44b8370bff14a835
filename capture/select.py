"""Which op outputs a capture keeps: ``CaptureOptions(save=...)`` and ``tl.record``'s predicate.

A selection is decided as each op is recorded, so an unselected output is never held (the
peak memory of the forward pass stays the model's own). Deciding by layer label needs the
label before grouping runs: :class:`OnlineLabels` numbers layers and passes as they appear,
with the key core's :class:`~torchlens.analysis.keys.Grouper` and allocator, by the key
:mod:`torchlens.grouping` uses (a test checks that they agree on every op). Buffer versions are labelled only by the grouping (a starting value's
layer depends on later writes), so they are selected after it, with their final labels.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Collection, Optional, Union

from torchlens.analysis.keys import Grouper, LabelAllocator

from .record import RawOp, layer_key

#: ``save="all"``: keep every output (the default); ``save="none"``: metadata only.
ALL, NONE = "all", "none"


@dataclass(frozen=True, slots=True)
class OpInfo:
    """What a selection sees of one op: ``save=`` predicates and ``tl.record(predicate=...)``."""

    #: Pass label (``linear_1:2``), layer label (``linear_1``) and pass number (from 1).
    label: str
    layer_label: str
    pass_num: int
    #: Normalised op name (``linear``, ``add_``; ``input``, ``output``, ``buffer``).
    func_name: str
    #: Address of the innermost module it ran in (``self`` for the root model).
    module: str
    #: The module call it ran in (``blocks.0:2``), ``None`` outside any.
    module_call: Optional[str]
    #: Output metadata.
    shape: tuple[int, ...]
    dtype: Any
    device: Any


Predicate = Callable[[OpInfo], bool]
#: What a capture keeps: "all", "none", names (a collection of str) or a predicate.
Save = Union[str, Collection[str], Predicate]


def matcher(save: Save) -> Optional[Predicate]:
    """``save`` as a predicate over :class:`OpInfo`; ``None`` for ``"all"`` and ``"none"``.

    A collection of names selects an op whose pass label, layer label or function name is
    one of them, or whose module is one of them or inside one of them.
    """
    if save == ALL or save == NONE:
        return None
    if callable(save):
        return save
    names = frozenset(save)

    def named(info: OpInfo) -> bool:
        if info.label in names or info.layer_label in names or info.func_name in names:
            return True
        module = info.module
        while module:
            if module in names:
                return True
            module = module.rpartition(".")[0]
        return "self" in names

    return named


class OnlineLabels:
    """Layer label and pass number of each op as it is recorded, as grouping will give them."""

    __slots__ = ("_ordinals", "_grouper", "_allocator", "_labels")

    def __init__(self) -> None:
        self._ordinals: Counter = Counter()
        self._grouper = Grouper()
        self._allocator = LabelAllocator()
        #: Layer index -> layer label.
        self._labels: list[str] = []

    def add(self, index: int, op: RawOp) -> Optional[tuple[str, int]]:
        """Count ``op`` (the ``index``-th of the capture); its layer label and pass number, or
        ``None`` for a buffer version (labelled by the grouping only)."""
        ordinal_key = (op.call, op.name, op.slot)
        ordinal = self._ordinals[ordinal_key]
        self._ordinals[ordinal_key] = ordinal + 1
        if op.buffer is not None:
            return None
        layer, pass_num = self._grouper.add(layer_key(index, op, ordinal))
        if pass_num == 1:
            self._labels.append(self._allocator.take(op.name))
        return self._labels[layer], pass_num
