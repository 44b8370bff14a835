"""Reading a live ``functools.lru_cache`` without calling it (``analysis/lru.py``), on every
interpreter: the keys it holds are the ones its own calls make, with their results, least
recently used first."""

from __future__ import annotations

import functools
from typing import Any, Optional

import pytest

from torchlens.analysis import lru

CALLS: list[tuple[tuple, dict[str, Any]]] = [
    ((), {}), ((1,), {}), (("s",), {}), ((1.5,), {}), ((1, 2), {}), ((1,), {"b": 2}),
    ((), {"b": 2, "c": "x"}), (((1, 2),), {}), ((None,), {}), ((True,), {}),
]


@pytest.mark.parametrize("typed", [False, True])
@pytest.mark.parametrize("maxsize", [None, 4, 128])
def test_every_key_a_call_makes_is_read_with_its_result(maxsize: Optional[int], typed: bool) -> None:
    @functools.lru_cache(maxsize=maxsize, typed=typed)
    def cached(*args: Any, **kwargs: Any) -> tuple:
        return args, tuple(kwargs.items())

    for args, kwargs in CALLS:
        cached(*args, **kwargs)
    read = lru.entries(cached)
    assert read is not None
    pairs, mark = read
    kept = CALLS if maxsize != 4 else CALLS[-4:]
    assert len(pairs) == len(kept)
    held = dict(pairs)
    for args, kwargs in kept:
        assert held[lru.key(args, kwargs, typed, mark)] == (args, tuple(kwargs.items()))
    assert lru.key((2,), {}, typed, mark) not in held


def test_entries_go_from_least_to_most_recently_used() -> None:
    @functools.lru_cache(maxsize=3)
    def cached(n: int) -> int:
        return n * 10

    for n in (1, 2, 3, 1):  # the hit on 1 makes it the most recent
        cached(n)
    read = lru.entries(cached)
    assert read is not None and read[0] == [(2, 20), (3, 30), (1, 10)]


def test_an_empty_or_disabled_cache() -> None:
    @functools.lru_cache(maxsize=None)
    def unbounded(n: int) -> int:
        return n

    @functools.lru_cache(maxsize=0)
    def disabled(n: int) -> int:
        return n

    disabled(1)
    for cached in (unbounded, disabled):
        read = lru.entries(cached)
        assert read is not None and read[0] == []
