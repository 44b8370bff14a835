"""Room on CPython's frame stack for a deep recursion that goes up and down, reserved once.

From 3.11, CPython keeps a thread's Python frames on a stack made of chunks (16 KB each
unless a frame needs more): a call that does not fit in the current chunk gets a new one
(``mmap``), and the chunk is given back (``munmap``) as soon as that call returns. The
abstract run is a deep recursion whose depth goes up and down all the time, so it crossed a
chunk's end over and over: a warm prediction of GPT-2 small made about 1,100 ``mmap``/``munmap``
pairs (with a page fault each), about 15% of its time. :func:`with_room` calls a function
from a frame that claims a stack so large (:data:`ROOM_SLOTS` slots, never used) that CPython
gives it a chunk of 1 MB of which it fills a little over half: the frames called from it fit
in the rest (GPT-2 small's run needs about 32 KB of it), so the whole call takes one chunk.

A deeper recursion only goes on into ordinary chunks past the rest, as without it. 3.10 keeps
each frame in its own object: there the function is called as it is.
"""

from __future__ import annotations

import sys
import types
from typing import Any, Callable, TypeVar

__all__ = ["with_room", "ROOM_SLOTS"]

T = TypeVar("T")

#: Stack slots (8 bytes each) the calling frame claims: its frame and CPython's margin (1,000
#: slots) need more than 512 KB, so its chunk is 1 MB, with about 460 KB left for the frames
#: it calls. Only the pages those frames touch are ever mapped.
ROOM_SLOTS = 70_000


def _call(fn: Callable[..., T], *args: Any) -> T:
    return fn(*args)


_roomy: Callable[..., Any] = _call
if sys.version_info >= (3, 11):
    _roomy = types.FunctionType(_call.__code__.replace(co_stacksize=ROOM_SLOTS), globals(), "_roomy")


def with_room(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, its frames (and those they call) in one chunk of the frame stack."""
    return _roomy(fn, *args)
