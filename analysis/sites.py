"""The call-site key shared by the static prediction and the runtime capture.

A *place* is one instruction of one code object: the code's identity (file, qualified
name, first line, bytecode digest; never ``id()``) and the instruction that was running.
The instruction id is version-specific and computed in exactly one function,
:func:`instruction_place`:

* 3.11+: the source span ``co_positions()[lasti // 2]``. Every copy the compiler makes of
  a ``while`` test, a ``finally`` body or a ``with`` exit carries the same span, and so do
  an instruction's CACHE units and its ``PRECALL``, so the span is stable whatever
  specialization did to ``f_lasti``.
* 3.10 (and 3.11+ run with ``-X no_debug_ranges``, where columns are ``None``): the
  normalised bytecode offset, with the duplicated ``while`` condition folded onto its first
  copy (:mod:`torchlens.analysis.fold310`).

A *call site* is the chain of places from a module's ``forward`` down to the call, with
recursion collapsed by chronological loop erasure (:func:`collapse`). Both sides compute
places from the same compiled code, so a prediction and a capture of the same place are
*equal*, not merely similar.

This module is torch-free and must stay so: it is tested on every interpreter we support.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass, field
from types import CodeType
from typing import Callable, Optional, Sequence, Union

from .align import instructions
from .caches import FILES_KEPT, PerCode, PerFile
from .fold310 import fold_map

PY311 = sys.version_info >= (3, 11)

__all__ = ["CodeId", "Place", "HookMark", "Link", "code_id", "instruction_place", "collapse", "PerCode", "PerFile",
           "FILES_KEPT", "PY311"]

@dataclass(frozen=True, slots=True)
class CodeId:
    """Identity of a code object that survives re-creation (exec, nested defs) and traces."""

    #: ``co_filename`` as compiled.
    filename: str
    #: ``co_qualname`` on 3.11+, ``co_name`` on 3.10 (which has no qualified name).
    qualname: str
    #: ``co_firstlineno``, 1-based.
    firstlineno: int
    #: First 16 hex digits of the SHA-1 of ``co_code``: tells apart same-named code.
    digest: str


@dataclass(frozen=True, slots=True)
class Place:
    """One instruction of one code object: a frame's contribution to a call site."""

    #: The code object's identity.
    code: CodeId
    #: First source line of the instruction (1-based), ``None`` when the compiler gave none.
    line: Optional[int]
    #: Last source line of the instruction's span; ``None`` without columns.
    end_line: Optional[int] = None
    #: Start column (0-based, UTF-8 bytes, as CPython counts); ``None`` without columns.
    col: Optional[int] = None
    #: End column (exclusive); ``None`` without columns.
    end_col: Optional[int] = None
    #: Normalised bytecode offset; set only when there is no column span (3.10).
    offset: Optional[int] = None
    #: Its hash, made once: places are kept per instruction and hashed in every chain that is
    #: a key (a dataclass's own ``__hash__`` hashes the fields and the code's on each call).
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.code, self.line, self.end_line, self.col, self.end_col,
                                                self.offset)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple:
        """Pickled by its fields (a hash is made again in each process: strings hash by a per-process seed)."""
        return Place, (self.code, self.line, self.end_line, self.col, self.end_col, self.offset)

    def __str__(self) -> str:
        where = f"{self.code.filename}:{self.line}"
        if self.col is not None:
            where += f":{self.col + 1}"
        elif self.offset is not None:
            where += f"@{self.offset}"
        return f"{where} in {self.code.qualname}"


@dataclass(frozen=True, slots=True)
class HookMark:
    """In a call site: the hooked module whose forward hook (or pre-hook) ran the places after it."""

    #: Address of the hooked module.
    module: str

    def __str__(self) -> str:
        return f"[hook of {self.module}]"


#: One element of a call-site chain: a place, or the mark of a module hook entered there.
Link = Union[Place, HookMark]


def _code_id(code: CodeType) -> CodeId:
    return CodeId(
        code.co_filename,
        getattr(code, "co_qualname", code.co_name),
        code.co_firstlineno,
        hashlib.sha1(code.co_code).hexdigest()[:16],
    )


#: The :class:`CodeId` of a code object, computed once per code object.
code_id: PerCode[CodeId] = PerCode(_code_id)


class _CodeTable:
    """Per-code-object lookup tables, built on first use."""

    __slots__ = ("ident", "positions", "owner", "lines", "fold", "places")

    def __init__(self, code: CodeType) -> None:
        self.ident = code_id(code)
        self.positions: Optional[tuple[tuple[Optional[int], ...], ...]] = None
        if sys.version_info >= (3, 11):
            self.positions = tuple(code.co_positions())
        self.owner = _instruction_owners(code)
        self.lines = {o: ln for start, end, ln in code.co_lines() for o in range(start, end, 2)}
        self.fold: Optional[dict[int, int]] = None
        #: ``f_lasti`` -> its :class:`Place`, as :func:`instruction_place` gave it (a capture
        #: asks again for every call site on every trace).
        self.places: dict[int, Place] = {}


_table: PerCode[_CodeTable] = PerCode(_CodeTable)


def _instruction_owners(code: CodeType) -> dict[int, int]:
    """Map every 2-byte code unit to the offset of the instruction it belongs to.

    An instruction owns its ``EXTENDED_ARG`` prefixes and its CACHE entries
    (:func:`~torchlens.analysis.align.instructions`); a 3.11 ``PRECALL`` belongs to the
    ``CALL`` after it.
    """
    owner: dict[int, int] = {}
    pending: list[int] = []
    for ins in instructions(code):
        units = range(ins.start, ins.end, 2)
        if ins.name == "PRECALL":
            pending.extend(units)
            continue
        for unit in (*pending, *units):
            owner[unit] = ins.offset
        pending.clear()
    for unit in pending:
        owner[unit] = pending[0]
    return owner


def instruction_place(code: CodeType, lasti: int) -> Place:
    """The :class:`Place` of the instruction at byte offset ``lasti`` in ``code``.

    ``lasti`` is a raw ``f_lasti`` (it may point at a CACHE unit, a ``PRECALL`` or an
    ``EXTENDED_ARG`` prefix) or an instruction offset from ``dis``; both give one place.
    """
    table = _table(code)
    place = table.places.get(lasti)
    if place is None:
        place = table.places[lasti] = _place(table, code, lasti)
    return place


def _place(table: _CodeTable, code: CodeType, lasti: int) -> Place:
    if table.positions is not None:
        line, end_line, col, end_col = table.positions[lasti // 2]
        if col is not None:
            return Place(table.ident, line, end_line, col, end_col)
    offset = table.owner.get(lasti, lasti)
    if table.fold is None:  # 3.10, or 3.11+ without columns: fold duplicated code by hand
        table.fold = fold_map(code)
    offset = table.fold.get(offset, offset)
    return Place(table.ident, table.lines.get(offset), offset=offset)


def collapse(
    codes: Sequence[CodeType],
    closures: Optional[Sequence[object]] = None,
) -> list[int]:
    """Chronological loop erasure over a chain (outermost first); returns kept indices.

    When a code object reappears with the same closure identity as its earlier
    occurrence, everything from that occurrence on is erased: every depth of a recursion
    maps to the chain of its first entry, and the last occurrence keeps its instruction.
    ``closures[i]`` tells apart the shared code of decorator wrappers (each wraps a
    different function), so two decorated call sites are never merged; pass ``None``
    when no code repeats.
    """
    kept: list[int] = []
    at: dict[int, int] = {}
    for i, code in enumerate(codes):
        j = at.get(id(code))
        if j is not None and (closures is None or closures[kept[j]] == closures[i]):
            for old in kept[j:]:
                at.pop(id(codes[old]), None)
            del kept[j:]
        at[id(code)] = len(kept)
        kept.append(i)
    return kept


def closure_identity(code: CodeType, read_local: Callable[[str], object]) -> Optional[tuple]:
    """Identities of a frame's free-variable values: which wrapper of shared code this is."""
    names = code.co_freevars
    return tuple(id(read_local(n)) for n in names) if names else None
