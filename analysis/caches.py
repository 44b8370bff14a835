"""The caches the static readings share: one value per code object, one per source file.

Torch-free; no other module of the package below it.
"""

from __future__ import annotations

import weakref
from types import CodeType
from typing import Any, Callable, Generic, TypeVar

__all__ = ["PerCode", "remember", "FILES_KEPT"]

#: How many source files the per-file caches (3.10 folds, prediction) keep, newest first.
FILES_KEPT = 256

T = TypeVar("T")


class PerCode(Generic[T]):
    """A cache of one value per code object, keyed by ``id(code)``, never by the code itself.

    Hashing a code object hashes its constants (slow on 3.12+), and ``==`` ignores the file
    name, so the key is the id. Each entry holds a weak reference whose callback drops the
    entry when the code object dies: code made at run time (``exec``, fx recompiles) does not
    accumulate, and a reused id can never meet a stale entry.
    """

    __slots__ = ("_entries", "_build")

    def __init__(self, build: Callable[[CodeType], T]) -> None:
        self._entries: dict[int, tuple[weakref.ref, T]] = {}
        self._build = build

    def __call__(self, code: CodeType) -> T:
        entry = self._entries.get(id(code))
        if entry is None:
            key, entries = id(code), self._entries
            entry = entries[key] = (weakref.ref(code, lambda _, key=key: entries.pop(key, None)), self._build(code))
        return entry[1]

    def __len__(self) -> int:
        return len(self._entries)


def remember(cache: dict[Any, T], key: object, value: T) -> T:
    """Store ``cache[key] = value``, forgetting the oldest entries past :data:`FILES_KEPT`."""
    cache.pop(key, None)
    cache[key] = value
    while len(cache) > FILES_KEPT:
        del cache[next(iter(cache))]
    return value
