"""The base of the capture's closed sets that users read as plain names."""

from __future__ import annotations

import enum


class NamedEnum(str, enum.Enum):
    """A closed set whose members compare equal to, and print as, their plain names.

    ``NodeKind.TUPLE == "tuple"``, and ``f"{NodeKind.TUPLE}"`` gives ``tuple`` on every Python
    (a plain ``str`` mix-in prints ``NodeKind.TUPLE`` from 3.11 on), so labels, reprs and saved
    files keep the names the spec gives.
    """

    #: Equal to its name, so hashed as its name: ``{"tuple": 1}[NodeKind.TUPLE]`` works
    #: (``Enum`` hashes a member by its Python identifier).
    __hash__ = str.__hash__

    def __str__(self) -> str:
        return str(self.value)
