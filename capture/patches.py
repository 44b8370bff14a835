"""Attribute patches that are always undone: the capture leaves torch as it found it."""

from __future__ import annotations

from typing import Any

_MISSING = object()


class Patches:
    """A stack of ``setattr`` patches, undone in reverse order by :meth:`restore`."""

    __slots__ = ("_saved",)

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any]] = []

    def set(self, owner: Any, name: str, value: Any) -> None:
        """Replace ``owner.name`` with ``value`` until :meth:`restore`."""
        # On a class, only what the class itself defines is restored (not an inherited value).
        old = owner.__dict__.get(name, _MISSING) if isinstance(owner, type) else getattr(owner, name, _MISSING)
        self._saved.append((owner, name, old))
        setattr(owner, name, value)

    def restore(self) -> None:
        """Undo every patch, newest first (each exactly once)."""
        while self._saved:
            owner, name, old = self._saved.pop()
            if old is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
