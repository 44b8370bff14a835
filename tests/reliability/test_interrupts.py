"""Issue 15, point 1: an interrupt at any moment of a capture leaves torch exactly as it was."""

from __future__ import annotations

import gc
import random
import signal

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torchlens as tl

from torch_state import differences, snapshot


class Busy(nn.Module):
    """Runs through every kind of patch: module calls, reflected operators, torch's Python
    functions (whose checks are patched lazily) and a buffer reassignment. (The torch.func
    transforms are patched too; running one is left out: functorch's own layer stack is not
    safe against interrupts.)"""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("seen", torch.zeros(4))

    def forward(self, x):
        for _ in range(3):
            x = 1 + F.relu(self.lin(x))
        self.seen = self.seen + x.sum(0)
        return 2 * x


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs signal.setitimer")
# An interrupt that lands in a finalizer (``__del__``, a weakref callback) is reported and
# dropped by Python itself; pytest turns that report into a warning.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_storm_of_interrupts_leaves_torch_exactly_as_before():
    from torchlens.api import trace as unchecked_trace  # no per-trace replay: more traces per second

    model, x = Busy(), torch.ones(2, 4)
    unchecked_trace(model, x)  # first use imports what torch imports lazily
    params = {name: (p, p.detach().clone()) for name, p in model.named_parameters()}
    before = snapshot()
    draw = random.Random(15)
    previous = signal.signal(signal.SIGALRM, _raise_interrupt)
    interrupted = 0
    try:
        for _ in range(1000):
            try:
                signal.setitimer(signal.ITIMER_REAL, draw.uniform(1e-5, 1.5e-3))
                unchecked_trace(model, x)
                signal.setitimer(signal.ITIMER_REAL, 0)
            except KeyboardInterrupt:
                interrupted += 1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert interrupted > 0
    # torch's own ``_pop_mode_temporarily`` generator, interrupted, puts a mode back when it is
    # collected; such a leftover capture passes calls through and leaves at the next torch call.
    gc.collect()
    trace = tl.trace(model, x)
    assert trace["relu_1"].num_passes == 3
    assert differences(before, snapshot()) == []
    assert all(p is now and torch.equal(p, saved) for (p, saved), now in
               zip(params.values(), dict(model.named_parameters()).values()))

