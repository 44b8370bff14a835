"""A stand-in recorder: the capture's call-site keying over plain Python, without torch.

It lets the version-specific key code run on every interpreter we support (torch exists
only for 3.11 here). A stand-in "op" is a Python callable; a :class:`Value` reaches ops
through Python dunders (``a + b``, ``x[i]``, ``x @ w``) exactly as a tensor reaches torch,
so the caller's instruction is a ``BINARY_OP``, ``BINARY_SUBSCR`` or ``CALL`` as it would be
under the real capture. The chain runs from the function given to :meth:`run` down to the
op's caller, with recursion collapsed; the recorder's own frames are left out.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any, Callable

from torchlens.analysis.sites import Place

from .frames import SKIP, STOP, ChainInterner, read_stack


class StandinRecorder:
    """Records ``(op name, call-site chain)`` for every stand-in op run inside :meth:`run`."""

    def __init__(self) -> None:
        self._interner = ChainInterner()
        #: Every recorded op in execution order: ``(op name, chain id)``.
        self.records: list[tuple[str, int]] = []
        self._roles = {id(StandinRecorder.run.__code__): STOP}
        for code in (StandinRecorder.record.__code__, _op_code, *_VALUE_CODES):
            self._roles[id(code)] = SKIP

    def record(self, name: str) -> None:
        """Record one op named ``name`` at the current call site."""
        frames, _ = read_stack(sys._getframe(1), self._roles)
        self.records.append((name, self._interner.intern(frames)))

    def op(self, name: str = "op") -> Callable[..., Any]:
        """A stand-in torch function: records itself and returns its first argument."""
        return _make_op(self, name)

    def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call ``fn`` as a module's ``forward``: chains start at its frame."""
        return fn(*args, **kwargs)

    def sites(self) -> list[tuple[str, tuple[Place, ...]]]:
        """Every recorded op as ``(name, places outermost first)``."""
        return [(name, self._interner.chains[chain]) for name, chain in self.records]

    def layers(self) -> list[tuple[str, int]]:
        """``(op name, passes)`` per distinct key, in order of first execution."""
        counts = Counter(self.records)
        return [(name, counts[(name, chain)]) for name, chain in dict.fromkeys(self.records)]


def _make_op(recorder: StandinRecorder, name: str) -> Callable[..., Any]:
    def op(*args: Any) -> Any:
        recorder.record(name)
        return args[0] if args else None

    return op


class Value:
    """A tensor stand-in: its operators are recorded ops, as torch's are."""

    __slots__ = ("recorder",)

    def __init__(self, recorder: StandinRecorder) -> None:
        self.recorder = recorder

    def _op(self, name: str) -> "Value":
        self.recorder.record(name)
        return self

    def __add__(self, other: Any) -> "Value":
        return self._op("add")

    def __radd__(self, other: Any) -> "Value":
        return self._op("radd")

    def __mul__(self, other: Any) -> "Value":
        return self._op("mul")

    def __matmul__(self, other: Any) -> "Value":
        return self._op("matmul")

    def __getitem__(self, index: Any) -> "Value":
        return self._op("getitem")


_op_code = next(c for c in _make_op.__code__.co_consts if hasattr(c, "co_code"))
_VALUE_CODES = [
    f.__code__ for f in vars(Value).values() if callable(f) and hasattr(f, "__code__")
]
