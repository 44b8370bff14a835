"""Turn the live Python stack into call-site chains, cheaply (torch-free).

The hot path builds only a raw tuple of ``id(code)`` and ``f_lasti`` per frame and looks it
up in a dict; only on a miss are the frames normalised to :class:`analysis.sites.Place`
chains and collapsed (:func:`analysis.sites.collapse`). The interner keeps a strong
reference to every code object it has seen, so an ``id`` cannot be reused for another code
object while it lives. Frame objects are never stored: they would keep activations alive.
"""

from __future__ import annotations

from types import CodeType, FrameType
from typing import Optional

from torchlens.analysis.sites import Place, closure_identity, collapse, instruction_place

#: Role of a frame whose code is ours or plumbing: left out of every chain.
SKIP = 1
#: Role of a frame that ends a chain (a module-call boundary or the capture's entry).
STOP = 2


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


class ChainInterner:
    """Numbers distinct call-site chains; equal chains get equal small integers."""

    __slots__ = ("_raw", "_sites", "_ids", "chains", "_codes")

    def __init__(self) -> None:
        self._raw: dict[tuple, int] = {}
        self._sites: dict[tuple[int, int], tuple[int]] = {}
        self._ids: dict[tuple[Place, ...], int] = {}
        #: Chain id -> the chain's places, outermost first.
        self.chains: list[tuple[Place, ...]] = []
        self._codes: list[CodeType] = []

    def intern_frame(self, frame: FrameType) -> int:
        """The chain id of one frame alone (torch called straight from ``forward``: the common case)."""
        code = frame.f_code
        raw = (id(code), frame.f_lasti)
        chain = self._raw.get(raw)
        if chain is None:
            chain = self._raw[raw] = self._normalise([code], raw[1:], None)
        return chain

    def frame_site(self, frame: FrameType) -> tuple[int]:
        """``(intern_frame(frame),)``: the call site of one frame alone, one tuple per place
        (shared by the ops recorded there)."""
        raw = (id(frame.f_code), frame.f_lasti)
        site = self._sites.get(raw)
        if site is None:
            site = self._sites[raw] = (self.intern_frame(frame),)
        return site

    def intern(self, frames: list) -> int:
        """The chain id of ``frames`` (innermost first, as :func:`read_stack` gives them)."""
        if len(frames) == 1:
            return self.intern_frame(frames[0])
        codes = [f.f_code for f in reversed(frames)]
        raw: tuple = (*map(id, codes), *[f.f_lasti for f in reversed(frames)])
        closures = None
        n = len(codes)
        if n > 1 and len(set(raw[:n])) < n:  # a code repeats: recursion or a shared wrapper
            closures = [closure_identity(f.f_code, f.f_locals.get) for f in reversed(frames)]
            raw = (*raw, *closures)
        chain = self._raw.get(raw)
        if chain is None:
            chain = self._raw[raw] = self._normalise(codes, raw[n : 2 * n], closures)
        return chain

    def _normalise(self, codes: list, lastis: tuple, closures: Optional[list]) -> int:
        self._codes.extend(codes)
        kept = collapse(codes, closures) if closures is not None else range(len(codes))
        places = tuple(instruction_place(codes[i], lastis[i]) for i in kept)
        chain = self._ids.get(places)
        if chain is None:
            chain = self._ids[places] = len(self.chains)
            self.chains.append(places)
        return chain
