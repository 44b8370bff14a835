"""Turn the live Python stack into call-site chains, cheaply (torch-free).

The hot path builds only a raw tuple of ``id(code)`` and ``f_lasti`` per frame
(:func:`read_raw`) and looks it up in a dict; only on a miss are the frames normalised to
:class:`analysis.sites.Place` chains and collapsed (:func:`analysis.sites.collapse`), and
that normalisation is itself kept process-wide (:data:`PLACES_KEPT` chains), since the same
code locations give the same places in every capture. The interner keeps a strong reference
to every code object it has seen, so an ``id`` cannot be reused for another code object
while it lives. Frame objects are never stored: they would keep activations alive.
"""

from __future__ import annotations

from itertools import chain as _chained
from types import CodeType, FrameType
from typing import Optional

from torchlens.analysis.sites import Place, closure_identity, collapse, instruction_place

#: Role of a frame whose code is ours or plumbing: left out of every chain.
SKIP = 1
#: Role of a frame that ends a chain (a module-call boundary or the capture's entry).
STOP = 2
#: How many raw chains the process-wide normalisation memo (:data:`_PLACES`) keeps before it
#: starts again: generated models (``exec``, the fuzz campaigns) make new code objects all the
#: time, and each entry holds its code objects.
PLACES_KEPT = 8192

#: Raw key (see :meth:`ChainInterner.intern`) -> (its code objects, held so that no id in the
#: key is reused while the entry lives; the places it normalises to; their ``repr``). The places
#: are a function of the key alone: the codes and offsets, and which closures are equal.
#: The ``repr`` (one string per entry, equal for equal places: every field is a string, a
#: number or ``None``) is what a capture numbers chains by (:meth:`ChainInterner._number`):
#: a string keeps its hash, where a tuple of places hashes each place again, in Python.
_PLACES: dict[tuple, tuple[tuple[CodeType, ...], tuple[Place, ...], str]] = {}


def read_stack(frame: Optional[FrameType], roles: dict[int, int]) -> tuple[list, Optional[FrameType]]:
    """Walk outward from ``frame``; return the chain frames (innermost first) and the stop frame.

    ``roles`` maps ``id(code)`` to :data:`SKIP` or :data:`STOP`; any other frame is part of
    the chain. The stop frame is ``None`` when the stack ran out first.
    """
    frames = []
    get = roles.get
    while frame is not None:
        role = get(id(frame.f_code))
        if role is None:
            frames.append(frame)
        elif role == STOP:
            return frames, frame
        frame = frame.f_back
    return frames, None


def read_raw(frame: Optional[FrameType], roles: dict[int, int]) -> tuple[tuple, Optional[FrameType]]:
    """:func:`read_stack` as a raw key: ``(id(code), f_lasti)`` of each chain frame, innermost
    first, flat (what :meth:`ChainInterner.site` looks up), and the stop frame."""
    raw: list[int] = []
    get = roles.get
    while frame is not None:
        code = frame.f_code
        role = get(id(code))
        if role is None:
            raw += (id(code), frame.f_lasti)
        elif role == STOP:
            return tuple(raw), frame
        frame = frame.f_back
    return tuple(raw), None


class ChainInterner:
    """Numbers distinct call-site chains; equal chains get equal small integers."""

    __slots__ = ("_raw", "sites", "_ids", "chains", "_codes")

    def __init__(self) -> None:
        #: Raw key -> chain id.
        self._raw: dict[tuple, int] = {}
        #: Raw key of a chain whose codes are all distinct -> ``(chain id,)`` (:meth:`site`); a
        #: one-frame chain's key is ``(id(code), f_lasti)`` (:meth:`frame_site`).
        self.sites: dict[tuple, tuple[int]] = {}
        #: ``repr`` of a chain's places (:data:`_PLACES`) -> its chain id.
        self._ids: dict[str, int] = {}
        #: Chain id -> the chain's places, outermost first.
        self.chains: list[tuple[Place, ...]] = []
        self._codes: list[tuple[CodeType, ...]] = []

    def frame_site(self, frame: FrameType) -> tuple[int]:
        """The call site of one frame alone (torch called straight from ``forward``: the common
        case): ``(chain id,)``, one tuple per place (shared by the ops recorded there)."""
        raw = (id(frame.f_code), frame.f_lasti)
        site = self.sites.get(raw)
        if site is None:
            site = self.sites[raw] = (self.intern([frame]),)
        return site

    def site(self, raw: tuple, frame: FrameType, roles: dict[int, int]) -> tuple[int]:
        """``(intern(frames),)`` for the chain :func:`read_raw` read from ``frame`` as ``raw``
        (not empty): one lookup when met before in this capture or normalised before in this
        process (:data:`_PLACES`), one tuple per chain."""
        site = self.sites.get(raw)
        if site is None:
            ids = raw[::2]
            if len(set(ids)) < len(ids):  # a code repeats: its closures decide the chain
                return (self.intern(read_stack(frame, roles)[0]),)
            chain = self._raw.get(raw)
            if chain is None:
                entry = _PLACES.get(raw)
                chain = self._number(entry) if entry is not None else self.intern(read_stack(frame, roles)[0])
                self._raw[raw] = chain
            site = self.sites[raw] = (chain,)
        return site

    def intern(self, frames: list) -> int:
        """The chain id of ``frames`` (innermost first, as :func:`read_stack` gives them)."""
        raw: tuple = tuple(_chained.from_iterable([(id(f.f_code), f.f_lasti) for f in frames]))
        n = len(frames)
        if n > 1 and len(set(raw[::2])) < n:  # a code repeats: recursion or a shared wrapper
            # (a frame's locals are read only where its code has free variables)
            closures = tuple(closure_identity(f.f_code, f.f_locals.get) if f.f_code.co_freevars else None
                             for f in frames)
            raw = (*raw, closures)
        chain = self._raw.get(raw)
        if chain is None:
            chain = self._raw[raw] = self._normalise(raw, frames)
        return chain

    def _normalise(self, raw: tuple, frames: list) -> int:
        entry = _PLACES.get(raw)
        if entry is None:
            codes = [f.f_code for f in reversed(frames)]
            lastis = [f.f_lasti for f in reversed(frames)]
            closures = list(reversed(raw[-1])) if len(raw) > 2 * len(frames) else None
            kept = collapse(codes, closures) if closures is not None else range(len(codes))
            if len(_PLACES) >= PLACES_KEPT:
                _PLACES.clear()
            places = tuple(instruction_place(codes[i], lastis[i]) for i in kept)
            entry = _PLACES[raw] = (tuple(codes), places, repr(places))
        return self._number(entry)

    def _number(self, entry: tuple[tuple[CodeType, ...], tuple[Place, ...], str]) -> int:
        """The chain id of an entry of :data:`_PLACES` (its code objects held from now on)."""
        self._codes.append(entry[0])
        chain = self._ids.get(entry[2])
        if chain is None:
            chain = self._ids[entry[2]] = len(self.chains)
            self.chains.append(entry[1])
        return chain
