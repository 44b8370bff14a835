"""The module side of a drawing: which modules are boxes, which are drawn as one node, and how
module calls nest.

A module's *depth* counts the called modules from the root down to it (``transformer.h.0`` in
GPT-2 is depth 2: ``transformer``, then ``h.0``; the ``ModuleList`` ``h`` is never called and does
not count). ``depth=k`` draws every module deeper than ``k`` inside its depth-``k`` ancestor's node.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Optional, Union

from ..errors import TorchLensTypeError, TorchLensValueError
from ..records import Module

if TYPE_CHECKING:
    from ..trace import Trace

#: What ``draw(collapse=...)`` takes: a predicate over modules, or addresses and type names.
Collapse = Union[None, str, Iterable[str], Callable[[Module], bool]]

ROOT = "self"


def collapse_predicate(collapse: Collapse) -> Callable[[Module], bool]:
    """``collapse=`` as a predicate: a callable as is; a name or names match address or type."""
    if collapse is None:
        return lambda module: False
    if callable(collapse):
        return collapse
    names = {collapse} if isinstance(collapse, str) else set(collapse)
    if not all(isinstance(n, str) for n in names):
        raise TorchLensTypeError(
            f"draw(collapse=...) takes a function of a Module, or module addresses / type names, got {collapse!r}"
        )
    return lambda module: module.address in names or module.type_name in names


@dataclass(frozen=True, slots=True)
class ModuleTree:
    """The called modules of a trace, their drawn parents and depths, and which are drawn as one node."""

    modules: Mapping[str, Module]
    #: Address -> nearest called ancestor (``None`` for the root and its direct children).
    parent: Mapping[str, Optional[str]]
    depth: Mapping[str, int]
    #: Address -> the collapsed module whose node it is drawn in (itself, or an ancestor).
    folded_into: Mapping[str, str]

    @classmethod
    def of(cls, trace: "Trace", depth: Optional[int], collapse: Collapse) -> "ModuleTree":
        if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 0):
            raise TorchLensValueError(f"draw(depth=...) must be None or a whole number >= 0, got {depth!r}")
        wants = collapse_predicate(collapse)
        modules = trace.modules
        parent: dict[str, Optional[str]] = {}
        depths: dict[str, int] = {}
        folded: dict[str, str] = {}
        for address in _top_down(modules):
            if address == ROOT:
                continue
            module = modules[address]
            up = module.parent
            while up is not None and up != ROOT and modules[up].num_calls == 0:
                up = modules[up].parent
            parent[address] = None if up in (None, ROOT) else up
            if module.num_calls == 0:
                continue
            above = parent[address]
            depths[address] = (depths[above] if above is not None else 0) + 1
            if above is not None and above in folded:
                folded[address] = folded[above]
            elif (depth is not None and depths[address] > depth) or wants(module):
                folded[address] = address
        return cls(modules, parent, depths, folded)

    def node_of(self, address: str) -> Optional[str]:
        """The collapsed module node that stands for ``address``, if any."""
        return self.folded_into.get(address)

    def cluster_of(self, address: str) -> Optional[str]:
        """The module box a node of scope ``address`` sits in (``None``: the root, no box)."""
        return None if address == ROOT else address

    def subtree(self, address: str) -> list[str]:
        """``address`` and every module below it."""
        out, todo = [], [address]
        while todo:
            a = todo.pop()
            out.append(a)
            todo.extend(self.modules[a].children)
        return out


def _top_down(modules: Mapping[str, Module]) -> list[str]:
    """Addresses with every parent before its children."""
    order, todo = [], [a for a, m in modules.items() if m.parent is None]
    while todo:
        a = todo.pop(0)
        order.append(a)
        todo.extend(c for c in modules[a].children if c in modules)
    order.extend(a for a in modules if a not in set(order))
    return order


def param_count(trace: "Trace", addresses: Iterable[str]) -> int:
    """Number of parameter elements owned by the given modules."""
    return sum(prod(trace.params[p].shape) for a in addresses for p in trace.modules[a].params if p in trace.params)


def call_parents(trace: "Trace") -> dict[str, Optional[str]]:
    """Module call label -> the call it ran inside (``None`` directly inside the model's own call)."""
    top = {call.label for call in trace.modules[ROOT].calls}
    return {call.label: None if call.parent is None or call.parent in top else call.parent
            for module in trace.modules.values() if module.address != ROOT for call in module.calls}


def human(n: int) -> str:
    """``1234567`` as ``1.2M``."""
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}".replace(".0" + unit, unit)
    return str(n)
