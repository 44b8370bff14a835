"""A capture numbers call-site chains by their places: equal places, one chain id (torch-free)."""

from __future__ import annotations

import sys

from torchlens.capture.frames import ChainInterner

_SOURCE = "def where():\n    return sys._getframe()\n\ndef elsewhere():\n    x = 1\n    return sys._getframe()\n"


def _frames() -> tuple:
    """Frames of two compilations of the same source (distinct code objects, equal places)
    and of another function of it."""
    made = []
    for _ in range(2):
        namespace: dict = {"sys": sys}
        exec(compile(_SOURCE, "<chain-numbering>", "exec"), namespace)
        made.append(namespace)
    return made[0]["where"](), made[1]["where"](), made[0]["elsewhere"]()


def test_equal_places_get_one_chain_id_and_others_their_own() -> None:
    first, twin, other = _frames()
    assert first.f_code is not twin.f_code
    interner = ChainInterner()
    ids = [interner.intern([frame]) for frame in (first, twin, other, first)]
    assert ids[0] == ids[1] == ids[3] != ids[2]
    assert interner.chains[ids[0]] != interner.chains[ids[2]] and len(interner.chains) == 2
