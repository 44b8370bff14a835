"""The fallback traversal: find the tensors inside an object no container rule knows.

An unsupported object (``transformers``' ``DynamicCache``, a user class) cannot be rebuilt,
but its tensors are still part of what the model took or returned. This walk looks through
public attributes, ``__slots__``, lists, tuples and dicts, to a bounded depth and object
count, and never into modules (their parameters are not data the model passed around).
It never raises: whatever it cannot read it skips.
"""

from __future__ import annotations

from typing import Any, Iterator

import torch
from torch import nn

from torchlens.analysis.caches import PerType

#: How deep the walk goes below the object, and how many objects it visits at most.
MAX_DEPTH = 6
MAX_VISITS = 10_000


def tensors_inside(value: Any) -> list[tuple[str, torch.Tensor]]:
    """``(path, tensor)`` for every tensor reachable inside ``value``; paths like ``.layers[0].keys``."""
    found: list[tuple[str, torch.Tensor]] = []
    seen: set[int] = {id(value)}
    todo: list[tuple[str, Any, int]] = [(path, child, 1) for path, child in _members(value)]
    todo.reverse()
    while todo and len(seen) < MAX_VISITS:
        path, item, depth = todo.pop()
        if id(item) in seen or _skipped(item):
            continue
        seen.add(id(item))
        if isinstance(item, torch.Tensor):
            found.append((path, item))
        elif depth < MAX_DEPTH and type(item) not in _ATOMS:
            todo.extend(reversed([(path + sub, child, depth + 1) for sub, child in _members(item)]))
    return found


#: Values with no members (what :func:`_members` would find in them: nothing), by exact type.
_ATOMS = frozenset({str, bytes, int, float, complex, bool, type(None), torch.dtype, torch.device})


def _slot_names(tp: type) -> dict[str, None]:
    """The ``__slots__`` names of ``tp`` and its bases, in MRO order."""
    names: dict[str, None] = {}
    for cls in tp.__mro__:
        slots = getattr(cls, "__slots__", ())
        names.update(dict.fromkeys((slots,) if isinstance(slots, str) else slots))
    return names


_slots: PerType[dict[str, None]] = PerType(_slot_names)


def _skipped(item: Any) -> bool:
    """Modules, classes and callables hold no data the model passed around."""
    return isinstance(item, (nn.Module, type)) or (callable(item) and not isinstance(item, torch.Tensor))


def _members(value: Any) -> Iterator[tuple[str, Any]]:
    """The direct members of ``value`` with the path step that reaches each."""
    try:
        if isinstance(value, (list, tuple)):
            yield from ((f"[{i}]", v) for i, v in enumerate(value))
        elif isinstance(value, dict):
            yield from ((f"[{k!r}]", v) for k, v in list(value.items()))
        elif isinstance(value, (str, bytes, int, float, complex, bool, type(None))):
            return
        else:
            names = dict.fromkeys(getattr(value, "__dict__", {}))
            names.update(_slots(type(value)))
            for name in names:
                if isinstance(name, str) and not name.startswith("_") and hasattr(value, name):
                    yield f".{name}", getattr(value, name)
    except Exception:  # an object whose members cannot be read contributes none
        return
