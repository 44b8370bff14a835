"""``analysis.framestack.with_room``: a call from a frame that reserves room on CPython's frame
stack behaves as the plain call (result, arguments, raises with their traceback, recursion
deeper than the room, threads)."""

import sys
import threading

import pytest

from torchlens.analysis.framestack import with_room


def _depth(n: int) -> int:
    return 0 if n == 0 else _depth(n - 1) + 1


def test_returns_what_the_function_returns() -> None:
    assert with_room(divmod, 17, 5) == (3, 2)
    assert with_room(lambda: None) is None


def test_a_raise_passes_through_with_its_frames() -> None:
    def fails(x: int) -> int:
        raise ValueError(f"bad {x}")

    with pytest.raises(ValueError, match="bad 3") as caught:
        with_room(fails, 3)
    assert caught.traceback[-1].name == "fails"


def test_recursion_past_the_room_and_near_the_limit() -> None:
    deep = sys.getrecursionlimit() - 100  # far more frames than the reserved room holds
    assert with_room(_depth, deep) == deep
    with pytest.raises(RecursionError):
        with_room(_depth, sys.getrecursionlimit() + 10)
    assert with_room(_depth, 50) == 50  # and the stack is usable after the raise


def test_nested_and_in_threads() -> None:
    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(with_room(with_room, _depth, 200))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [200] * 4
