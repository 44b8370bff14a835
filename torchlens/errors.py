"""Error types: every error torchlens raises on purpose is a :class:`TorchLensError`."""

from analysis.errors import CaptureThreadError, TorchLensError, TorchLensTypeError, TorchLensValueError


class TraceInvariantError(TorchLensError, AssertionError):
    """``Trace.check()`` found a broken invariant: a bug in torchlens, please report it."""


__all__ = [
    "TorchLensError",
    "TorchLensTypeError",
    "TorchLensValueError",
    "CaptureThreadError",
    "TraceInvariantError",
]
