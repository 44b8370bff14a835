"""Run a ``standin``-dialect spec under :class:`capture.standin.StandinRecorder` (torch-free).

The control-flow part of the vocabulary (loops, ``while``, ``break``, branches, helpers,
decorators, ``exec``, recursion, comprehensions, ``sum``, ``map``) runs over plain Python on
every interpreter we support, so the call-site keys are those of that interpreter (3.10
bytecode offsets with the folded ``while`` test, 3.11+ spans, 3.12's inlined comprehensions).
"""

from __future__ import annotations

from types import SimpleNamespace

from torchlens.capture.standin import StandinRecorder, Value

from . import spec as S
from .build import load_source
from .render import STANDIN, render
from .strategies import UNARY


def run_standin(model: S.ModelSpec) -> list[tuple[str, int]]:
    """``(op name, passes)`` per layer, in order of first execution, as the recorder keys them."""
    namespace, _ = load_source(render(model, STANDIN), stem="standin")
    recorder = StandinRecorder()
    namespace.o = SimpleNamespace(**{name: recorder.op(name) for name in (*UNARY, "check")})
    recorder.run(namespace.forward, Value(recorder))
    return recorder.layers()
