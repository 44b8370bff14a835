"""How many times a place runs: exact where trip counts are static, a range or a symbol otherwise.

Loops the prediction can unroll (``range(3)``, a ``ModuleList`` of known length, a known
list) give exact counts by simply running the body that many times. A loop it cannot count
(``while`` on a tensor, ``for`` over an unknown iterable) runs its body once under a
:class:`Count` that says so; a branch it cannot decide runs under ``0..1``. Counts multiply
down nested loops and add up over the events of one layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

__all__ = ["Count", "ONE", "MAYBE"]


@dataclass(frozen=True, slots=True)
class Count:
    """A number of passes: ``lo..hi`` (``hi`` ``None`` = unbounded), with a readable form."""

    #: Fewest passes.
    lo: int
    #: Most passes; ``None`` when unbounded.
    hi: Optional[int]
    #: Short form for tables: ``3``, ``0..1``, ``N+1``, ``len(xs)``; empty = derive from lo/hi.
    text: str = ""
    #: Why the count is not exact (empty when it is).
    note: str = ""
    #: The count when it is statically known, else ``None`` (set from ``lo`` and ``hi``: read
    #: on the prediction's hottest paths, where a property would be a call each time).
    exact: Optional[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "exact", self.lo if self.lo == self.hi else None)

    def __str__(self) -> str:
        if self.text:
            return self.text
        if self.exact is not None:
            return str(self.lo)
        return f"{self.lo}..{self.hi}" if self.hi is not None else "?"

    def admits(self, n: int) -> bool:
        """Whether ``n`` passes agree with this count."""
        return self.lo <= n and (self.hi is None or n <= self.hi)

    def __mul__(self, other: "Count") -> "Count":
        if self.exact == 1:
            return other
        if other.exact == 1:
            return self
        hi = None if self.hi is None or other.hi is None else self.hi * other.hi
        text = "" if self.exact is not None and other.exact is not None else f"{self}*{other}"
        return Count(self.lo * other.lo, hi, text, _join(self.note, other.note))

    def __add__(self, other: "Count") -> "Count":
        hi = None if self.hi is None or other.hi is None else self.hi + other.hi
        text = "" if self.exact is not None and other.exact is not None else f"{self}+{other}"
        if self.text and self.text == other.text and self.hi is None:  # N + N stays symbolic
            text = f"2*{self.text}"
        return Count(self.lo + other.lo, hi, text, _join(self.note, other.note))


def _join(a: str, b: str) -> str:
    return a if not b or a == b else b if not a else f"{a}; {b}"


#: Exactly once.
ONE = Count(1, 1)
#: Under a branch the prediction cannot decide.
MAYBE = Count(0, 1, "", "a branch the prediction cannot decide")
