"""Attribute patches that are always undone: the capture leaves torch as it found it.

Installing and removing a capture must not stop halfway when an asynchronous exception
(``KeyboardInterrupt``, a signal handler that raises) arrives. CPython runs signal handlers
only between bytecodes (after a call returns, at a loop's jump, at a function's start), never
inside one C function. So each change of process state is a *step*, :func:`step` of a C
callable (``setattr``, ``dict.pop``, torch's mode stack functions), and :func:`atomic` runs
a whole sequence of steps as one C-level call: every step or none. A step never runs Python
code, and no step may raise unless every step after it may be skipped.
"""

from __future__ import annotations

from collections import deque
from functools import partial
from itertools import chain
from operator import methodcaller
from typing import Any, Callable, Iterable

#: A missing attribute's value.
MISSING = object()
#: Calls a step (a ``partial``) from C.
run_step = methodcaller("__call__")

Step = partial
#: A step: ``step(func, *args)`` runs ``func(*args)`` when it runs; ``func`` must be a C
#: callable. (``partial`` itself: a capture builds about 70 steps, each without a Python call.)
step: Callable[..., Step] = partial


def atomic(*steps: Iterable[Step]) -> Callable[[], Any]:
    """One call that runs every step of ``steps`` in order, as a single C-level call.

    Lists are read when the call runs (steps appended before then are included). The
    call runs them once; calling it again does nothing.
    """
    return partial(deque, map(run_step, chain(*steps)), 0)


class Patches:
    """Attribute patches: planned ones installed by :meth:`install`, lazy ones set at once.

    :meth:`undo` puts every original back with ``setattr`` and removes what a class only
    inherited. Each patch is undone once: by the capture's removal, or in a forked child.
    """

    __slots__ = ("_install", "_undo_set", "_undo_del")

    def __init__(self) -> None:
        self._install: list[Step] = []
        self._undo_set: list[Step] = []
        self._undo_del: list[Step] = []

    def plan(self, owner: Any, name: str, value: Any) -> None:
        """Replace ``owner.name`` with ``value`` when :meth:`install`'s steps run."""
        self._install.append(step(setattr, owner, name, value))
        self._remember(owner, name)

    def set(self, owner: Any, name: str, value: Any) -> None:
        """Replace ``owner.name`` with ``value`` now (during a capture), until :meth:`undo`."""
        self._remember(owner, name)
        setattr(owner, name, value)

    def _remember(self, owner: Any, name: str) -> None:
        # On a class, only what the class itself defines is put back (not an inherited value).
        old = owner.__dict__.get(name, MISSING) if isinstance(owner, type) else getattr(owner, name, MISSING)
        if old is MISSING:
            self._undo_del.append(step(delattr, owner, name))
        else:
            self._undo_set.append(step(setattr, owner, name, old))

    def install(self) -> list[Step]:
        """The steps that apply the planned patches."""
        return self._install

    def undo(self) -> Iterable[Step]:
        """The steps that put every original back (patches set later included)."""
        return chain(self._undo_set, self._undo_del)
