"""The caches the static readings share: one value per code object, one per source file.

Torch-free; no other module of the package below it.
"""

from __future__ import annotations

import weakref
from types import CodeType
from typing import Callable, Generic, Iterator, Optional, TypeVar

__all__ = ["PerCode", "PerType", "per_class_name", "PerFile", "FILES_KEPT", "SOURCE_CHARS_KEPT"]

#: How many source files the per-file caches (3.10 folds, prediction) keep, newest first.
FILES_KEPT = 256
#: How many characters of source they keep at most (about 50,000 lines: some 75 MB parsed).
SOURCE_CHARS_KEPT = 2_000_000

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

            def forget(_: object) -> None:
                entries.pop(key, None)

            entry = entries[key] = (weakref.ref(code, forget), self._build(code))
        return entry[1]

    def __len__(self) -> int:
        return len(self._entries)


class PerType(Generic[T]):
    """A cache of one value per class, weakly keyed: a cached class can still be collected.

    (``functools.lru_cache`` keyed by a class keeps every class it saw alive, and every
    object its class attributes hold.)
    """

    __slots__ = ("_entries", "_build")

    def __init__(self, build: Callable[[type], T]) -> None:
        self._entries: "weakref.WeakKeyDictionary[type, T]" = weakref.WeakKeyDictionary()
        self._build = build

    def __call__(self, tp: type) -> T:
        try:
            return self._entries[tp]
        except KeyError:
            value = self._entries[tp] = self._build(tp)
            return value

    def clear(self) -> None:
        """Forget every entry (what they were built from changed)."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def per_class_name(read: Callable[[type, str], T]) -> Callable[[type, str], T]:
    """``read(cls, name)`` (an answer about a class's attribute), each read once, for as long as
    nothing writes into the classes (one prediction: it writes into no live class).

    Keyed by ``(id(cls), name)``; each entry keeps its class alive, so no id is reused while
    the entry stands. A plain function (not an object with ``__call__``): it is on the
    prediction's hottest path.
    """
    entries: dict[tuple[int, str], tuple[type, T]] = {}

    def answer(cls: type, name: str) -> T:
        entry = entries.get((id(cls), name))
        if entry is None:
            entry = entries[(id(cls), name)] = (cls, read(cls, name))
        return entry[1]

    return answer


class PerFile(Generic[T]):
    """A cache of one value per source file, bounded by file count and by the source it holds.

    A parsed file costs about 1.5 KB per source line, so the bound that matters is the size of
    the sources: past :data:`FILES_KEPT` files or :data:`SOURCE_CHARS_KEPT` characters of source,
    the oldest entries are forgotten (the newest is always kept).
    """

    __slots__ = ("_entries", "_chars")

    def __init__(self) -> None:
        self._entries: dict[str, tuple[int, T]] = {}
        self._chars = 0

    def get(self, filename: str) -> Optional[T]:
        """The value kept for ``filename``, if any."""
        entry = self._entries.get(filename)
        return None if entry is None else entry[1]

    def remember(self, filename: str, value: T, chars: int) -> T:
        """Keep ``value`` for ``filename``, whose source is ``chars`` characters long."""
        old = self._entries.pop(filename, None)
        self._chars += chars - (old[0] if old is not None else 0)
        self._entries[filename] = (chars, value)
        while len(self._entries) > 1 and (len(self._entries) > FILES_KEPT or self._chars > SOURCE_CHARS_KEPT):
            self._chars -= self._entries.pop(next(iter(self._entries)))[0]
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    @property
    def chars(self) -> int:
        """How many characters of source the kept entries were built from."""
        return self._chars
