"""Attribute patches that are always undone: the capture leaves torch as it found it.

Installing and removing a capture must not stop halfway when an asynchronous exception
(``KeyboardInterrupt``, a signal handler that raises) arrives. CPython runs signal handlers
only between bytecodes (after a call returns, at a loop's jump, at a function's start), never
inside one C function. So each change of process state is a *step*, a tuple ``(func, *args)``
of a C callable (``setattr``, ``dict.pop``, torch's mode stack functions, CPython's
``PyType_Modified``) and its arguments, and :func:`atomic` runs a whole sequence of steps as
one C-level call: every step or none. A step never runs Python code, and no step may raise
unless every step after it may be skipped.
"""

from __future__ import annotations

import ctypes
import gc
import operator
from collections import deque
from functools import partial
from itertools import chain, starmap
from types import ModuleType, WrapperDescriptorType
from typing import Any, Callable, Iterable, Iterator, Optional

#: A missing attribute's value.
MISSING = object()
#: A step: ``(func, *args)``, run as ``func(*args)``; ``func`` must be a C callable. A tuple:
#: about a third of the instructions of a ``partial`` to make (a capture makes about 20).
Step = tuple[Any, ...]
#: ``operator.call`` (Python 3.11+).
_call: Optional[Callable[..., Any]] = getattr(operator, "call", None)


def _run_steps(steps: Iterable[Step]) -> Iterator[Any]:
    """An iterator that runs each step of ``steps`` as it is advanced, from C alone:
    ``operator.call`` (Python 3.11+), else each step made a ``partial`` and called."""
    if _call is not None:
        return starmap(_call, steps)
    return map(partial.__call__, starmap(partial, steps))


def atomic(*steps: Iterable[Step]) -> Callable[[], Any]:
    """One call that runs every step of ``steps`` in order, as a single C-level call.

    Lists are read when the call runs (steps appended before then are included). The
    call runs them once; calling it again does nothing.
    """
    return partial(deque, _run_steps(chain(*steps)), 0)


class Patches:
    """Attribute patches: planned ones installed by :meth:`install`, lazy ones set at once.

    :meth:`undo` puts every original back with ``setattr`` and removes what a class only
    inherited. Each patch is undone once: by the capture's removal, or in a forked child.
    """

    __slots__ = ("_install", "_undo_set", "_undo_del", "_written", "_namespaces")

    def __init__(self) -> None:
        self._install: list[Step] = []
        self._undo_set: list[Step] = []
        self._undo_del: list[Step] = []
        #: The classes whose dicts :meth:`plan` writes directly (:func:`slot_unchanged`).
        self._written: dict[type, None] = {}
        #: The dicts :meth:`plan` writes directly, by ``id``: (the dict, the values planned for
        #: it, what it held before each), each written in one step.
        self._namespaces: dict[int, tuple[dict, dict, dict]] = {}

    def plan(self, owner: Any, name: str, value: Any) -> None:
        """Replace ``owner.name`` with ``value`` when :meth:`install`'s steps run.

        A special method given to a class whose C slot it leaves as it is (:func:`slot_unchanged`)
        is written into the class's dict, and the undo takes it out the same way; the type's
        attribute caches are invalidated after each (:meth:`install`, :meth:`undo`). An
        attribute a plain module holds in its ``__dict__`` is written there too (what
        ``setattr`` on a module does): each dict's planned values are one step (``dict.update``).
        """
        if isinstance(owner, type) and slot_unchanged(owner, name):
            self._write(class_dict(owner), name, value)
            self._written[owner] = None
        elif type(owner) is ModuleType and name in vars(owner):
            self._write(vars(owner), name, value)
        else:
            self._install.append((setattr, owner, name, value))
            self._remember(owner, name)

    def _write(self, namespace: dict, name: str, value: Any) -> None:
        _, planned, before = self._namespaces.setdefault(id(namespace), (namespace, {}, {}))
        planned[name] = value
        before[name] = namespace.get(name, MISSING)

    def set(self, owner: Any, name: str, value: Any) -> None:
        """Replace ``owner.name`` with ``value`` now (during a capture), until :meth:`undo`."""
        self._remember(owner, name)
        setattr(owner, name, value)

    def _remember(self, owner: Any, name: str) -> None:
        # On a class, only what the class itself defines is put back (not an inherited value); on
        # a module, only what its ``__dict__`` holds (not what its ``__getattr__`` gives).
        old = vars(owner).get(name, MISSING) if isinstance(owner, (type, ModuleType)) else getattr(owner, name, MISSING)
        if old is MISSING:
            self._undo_del.append((delattr, owner, name))
        else:
            self._undo_set.append((setattr, owner, name, old))

    def install(self) -> Iterable[Step]:
        """The steps that apply the planned patches."""
        return chain(self._install, [(namespace.update, planned) for namespace, planned, _ in self._namespaces.values()],
                     self._invalidations())

    def undo(self) -> Iterable[Step]:
        """The steps that put every original back (patches set later included)."""
        restore: list[Step] = []
        for namespace, _, before in self._namespaces.values():
            restore.append((namespace.update, {name: old for name, old in before.items() if old is not MISSING}))
            restore.extend((namespace.pop, name, None) for name, old in before.items() if old is MISSING)
        return chain(self._undo_set, restore, self._undo_del, self._invalidations())

    def _invalidations(self) -> list[Step]:
        return [(_type_modified, owner) for owner in self._written]


#: CPython's call after a change made to a type's dict directly (``PyType_Modified``, the
#: documented way): the type's and its subclasses' attribute caches forget what they hold.
#: ``pythonapi`` keeps the GIL and runs no Python code, so the call is a step.
_type_modified = ctypes.pythonapi.PyType_Modified
_type_modified.argtypes = (ctypes.py_object,)
_type_modified.restype = None


def class_dict(owner: type) -> dict:
    """The dict ``vars(owner)`` is a read-only view of (the same one for the class's life)."""
    return gc.get_referents(vars(owner))[0]


def slot_unchanged(owner: type, name: str) -> bool:
    """Whether giving class ``owner`` a Python function for the special method ``name``
    (``__radd__``) leaves its C slot as it is, and its subclasses': ``name`` resolves on
    ``owner`` now to something other than a C slot wrapper (a method of a C base, as
    ``torch.Tensor.__radd__`` does), so CPython's slot already looks the method up by name
    (its generic slot function), as it will with the function.

    Setting such an attribute makes CPython recompute that slot for the class and for each
    subclass, on install and again on removal: for ``torch.Tensor``'s five reflected operators,
    about 15% of the instructions of a capture of a hollow model. Writing the class's dict and
    invalidating its caches is the same change without that. Plain names go through ``setattr``,
    which recomputes no slot for them.
    """
    if not (name.startswith("__") and name.endswith("__")):
        return False
    for klass in owner.__mro__:
        if name in vars(klass):
            return type(vars(klass)[name]) is not WrapperDescriptorType
    return False
