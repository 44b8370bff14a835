"""Test-wide rules: every trace a test makes is checked against the trace invariants and,
when it saved its outputs, replayed op by op (``validate_forward_pass``)."""

import pytest

try:
    import torchlens
except ImportError:  # the torch-free tests (tests/keys) also run where torch is absent
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
        if result.options.capture.save_outputs:
            result.validate_forward_pass(strict=True)
        return result

    monkeypatch.setattr(torchlens, "trace", checked_trace)
    yield
