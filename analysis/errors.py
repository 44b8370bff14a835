"""The toolkit's error types (torch-free, in the lowest layer so every package can raise them).

Every error torchlens raises on purpose is a :class:`TorchLensError`; each subclass also
inherits the matching built-in, so ``except ValueError`` keeps working. Messages name the
bad value and say what to do. ``torchlens.errors`` re-exports them.
"""

from __future__ import annotations


class TorchLensError(Exception):
    """Base class of every error torchlens raises on purpose."""


class TorchLensTypeError(TorchLensError, TypeError):
    """An argument of the wrong type (not an ``nn.Module``, options of the wrong type)."""


class TorchLensValueError(TorchLensError, ValueError):
    """An argument of the right type but a bad value (an unknown label, a bad option)."""


class CaptureThreadError(TorchLensError, RuntimeError):
    """A capture met a second Python thread (``nn.DataParallel``) or another capture."""


class SourceUnavailableError(TorchLensError, ValueError):
    """The prediction needs source it cannot read (a REPL class, ``exec`` code, a C extension)."""


class PredictionError(TorchLensError, ValueError):
    """A prediction was asked of something it cannot predict (not a class, no such class)."""
