"""Test-wide rules: every trace a test makes is checked against the trace invariants and,
when it saved its outputs, replayed op by op (``validate_forward_pass``)."""

import importlib.util
import math

import pytest
from hypothesis import HealthCheck, settings

from torchlens.analysis import interpreter

# No test depends on luck: every hypothesis draw is derived from the test itself, and no example
# saved by one run can make a later run fail. Nor on the machine's load: hypothesis's check that
# drawing examples is not too slow is a clock (drawing generated models failed it on a loaded
# machine), so it is off.
settings.register_profile("torchlens", derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("torchlens")

# Predictions likewise stop on their step budget alone, never on the clock.
interpreter.DEFAULT_LIMITS = interpreter.Limits(seconds=math.inf)

if importlib.util.find_spec("torch") is not None:
    import torchlens
else:  # the torch-free suites (tests/keys, tests/lint, ...) also run where torch is absent
    torchlens = None


@pytest.fixture(autouse=True)
def check_every_trace(monkeypatch):
    """Run ``Trace.check()`` and the replay at the end of every ``tl.trace`` call of a test."""
    if torchlens is None:
        yield
        return
    original = torchlens.trace

    def checked_trace(*args, **kwargs):
        result = original(*args, **kwargs)
        result.check()
        if result.options.capture.save_outputs and result.options.backend == "torch":  # JAX traces replay nothing
            result.validate_forward_pass(strict=True)
        return result

    monkeypatch.setattr(torchlens, "trace", checked_trace)
    yield
