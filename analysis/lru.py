"""Reading a live ``functools.lru_cache`` without calling it: which keys it holds, and their results.

A call through a cache runs the wrapped function only on a miss, so whether the ops in it run
depends on what the cache held before the forward. CPython's cache (its C implementation, the
one ``functools.lru_cache`` returns on 3.10-3.13) exposes no lookup, but the garbage collector
sees what it holds: ``gc.get_referents`` lists, in the order its traversal visits them, the
wrapper's type, then for each entry from the least to the most recently used its key, its
result and the entry's type (bounded caches), then the cache dict (key -> entry, or key ->
result for an unbounded cache), the wrapped function and the marker that separates keyword
arguments in a key. :func:`entries` checks that layout against what it knows (the cache's size,
the dict's keys, the wrapped function) and gives ``None`` when it does not hold.

:func:`key` builds a call's key as the C code does: the positional arguments, then the marker
and each keyword and value, then (``typed``) the type of every argument; a lone ``int`` or
``str`` argument is its own key. An object the prediction built (not a live one) takes part in
a key as :class:`Same`: equal to itself alone, so a key holding one is found again only by the
same object, and :func:`surely_differs` says which keys it cannot equal whatever the object
compares as.
"""

from __future__ import annotations

import functools
import gc
from typing import Any, Optional

#: What ``functools.lru_cache``/``functools.cache`` make.
CACHED = (functools._lru_cache_wrapper,)


def entries(wrapper: Any) -> Optional[tuple[list[tuple[Any, Any]], object]]:
    """The ``(key, result)`` pairs ``wrapper``'s cache holds, least recently used first, and its
    keyword marker; ``None`` when its layout is not the one known here."""
    maxsize = wrapper.cache_parameters()["maxsize"]
    if maxsize == 0:  # it holds nothing: every call runs (no key is ever compared to the marker)
        return [], object()
    size = wrapper.cache_info().currsize
    refs = gc.get_referents(wrapper)
    stride = 0 if maxsize is None else 3
    at = 1 + stride * size
    if len(refs) < at + 3:
        return None
    cache, func, mark = refs[at], refs[at + 1], refs[at + 2]
    if type(cache) is not dict or len(cache) != size or func is not wrapper.__wrapped__ or type(mark) is not object:
        return None
    if maxsize is None:
        return list(cache.items()), mark
    pairs = [(refs[1 + stride * k], refs[2 + stride * k]) for k in range(size)]
    if any(item not in cache for item, _ in pairs):
        return None
    return pairs, mark


def key(args: tuple, kwargs: dict[str, Any], typed: bool, mark: object) -> Any:
    """The key ``functools.lru_cache``'s C code gives a call with these arguments."""
    if not typed and not kwargs:
        if len(args) == 1 and type(args[0]) in (int, str):
            return args[0]
        return tuple(args)
    parts = [*args]
    if kwargs:
        parts.append(mark)
        for name, value in kwargs.items():
            parts += (name, value)
    if typed:
        parts += [type(value) for value in args]
        parts += [type(value) for value in kwargs.values()]
    return tuple(parts)


class Same:
    """A key part standing for an object the prediction built: equal to that object's own part
    alone (CPython compares a key's items by identity before ``__eq__``, so the same object
    always finds its entry again; an equal other one might too, which :func:`surely_differs`
    leaves open unless the object's class compares by identity, ``by_identity``)."""

    __slots__ = ("obj", "by_identity")

    def __init__(self, obj: object, by_identity: bool = False) -> None:
        self.obj = obj
        self.by_identity = by_identity

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Same) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


def surely_differs(held: Any, key: tuple) -> bool:
    """Whether the cache key ``held`` differs from ``key`` (a tuple with :class:`Same` parts)
    whatever the objects those stand for compare as: a part known on both sides differs, and so
    does an object compared by identity with anything but itself (the run built it: no live
    object is it)."""
    if type(held) is not tuple or len(held) != len(key):
        return True
    for ours, theirs in zip(key, held):
        if isinstance(ours, Same) or isinstance(theirs, Same):
            itself = isinstance(ours, Same) and isinstance(theirs, Same) and ours.obj is theirs.obj
            if not itself and any(isinstance(part, Same) and part.by_identity for part in (ours, theirs)):
                return True
            continue
        try:
            if not bool(ours == theirs):
                return True
        except Exception:  # noqa: BLE001 - a comparison that raises decides nothing here
            continue
    return False
