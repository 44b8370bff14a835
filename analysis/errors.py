"""Every error type torchlens raises on purpose (torch-free, in the lowest layer).

Every package raises from here; ``torchlens.errors`` (``tl.errors``) re-exports them all.
Each subclass of :class:`TorchLensError` also inherits the matching built-in, so
``except ValueError`` keeps working. Messages name the bad value and say what to do.
"""

from __future__ import annotations

__all__ = [
    "TorchLensError",
    "TorchLensTypeError",
    "TorchLensValueError",
    "CaptureThreadError",
    "BufferWriteError",
    "UnsupportedForwardError",
    "TraceInvariantError",
    "ValidationError",
    "SourceUnavailableError",
    "PredictionError",
    "OpaqueContainerError",
    "ContainerFlattenError",
    "ContainerKeyError",
    "ContainerStructureError",
    "ContainerTypeMissingError",
    "InterventionError",
    "BufferThreadGapError",
    "BufferThreadGapWarning",
    "TraceFileError",
    "GraphvizMissingError",
]


class TorchLensError(Exception):
    """Base class of every error torchlens raises on purpose."""


class TorchLensTypeError(TorchLensError, TypeError):
    """An argument of the wrong type (not an ``nn.Module``, options of the wrong type)."""


class TorchLensValueError(TorchLensError, ValueError):
    """An argument of the right type but a bad value (an unknown label, a bad option)."""


# -- capture ---------------------------------------------------------------------------------


class CaptureThreadError(TorchLensError, RuntimeError):
    """A capture met a second Python thread (``nn.DataParallel``) or another capture."""


class BufferWriteError(TorchLensError, RuntimeError):
    """A registered buffer changed in a way the capture cannot journal (``.data = t``)."""


class UnsupportedForwardError(TorchLensError, RuntimeError):
    """The forward pass does what a capture cannot record faithfully (a backward pass inside it,
    a module compiled in place with ``module.compile()``)."""


# -- traces ----------------------------------------------------------------------------------


class TraceInvariantError(TorchLensError, AssertionError):
    """``Trace.check()`` found a broken invariant: a bug in torchlens, please report it."""


class ValidationError(TorchLensError, AssertionError):
    """``validate_forward_pass(strict=True)`` found an op whose replay differs."""


class InterventionError(TorchLensError, ValueError):
    """``trace.do(...)`` cannot re-execute what an edit reaches (no saved outputs, no replay
    record for an op, an edit function that does not return a tensor)."""


class BufferThreadGapError(TorchLensError, RuntimeError):
    """``trace.do(..., strict=True)``: an edit reached a buffer write whose new state cannot be
    certified (a fused running-statistics update, a write through a slice)."""


class BufferThreadGapWarning(TorchLensError, UserWarning):
    """``trace.do(...)``: an edit reached a buffer write whose new state cannot be certified;
    that version keeps its captured value (experimental name, from the buffers spec)."""


class TraceFileError(TorchLensError, ValueError):
    """``tl.load`` met a file that is not a readable torchlens trace: truncated, corrupted,
    or written by a newer format version."""


# -- prediction ------------------------------------------------------------------------------


class SourceUnavailableError(TorchLensError, ValueError):
    """The prediction needs source it cannot read (a REPL class, ``exec`` code, a C extension)."""


class PredictionError(TorchLensError, ValueError):
    """A prediction was asked of something it cannot predict (not a class, no such class)."""


# -- containers ------------------------------------------------------------------------------


class OpaqueContainerError(TorchLensError, TypeError):
    """A recorded structure holds an object torchlens cannot rebuild (e.g. a ``DynamicCache``)."""


class ContainerFlattenError(TorchLensError, TypeError):
    """A ``flatten`` function given to ``tl.types.register_container`` raised or returned a bad value."""


class ContainerKeyError(TorchLensError, KeyError):
    """A key, field or position that the recorded container does not have."""

    def __str__(self) -> str:  # KeyError would print the message quoted
        return str(self.args[0]) if self.args else ""


class ContainerStructureError(TorchLensError, ValueError):
    """``trace.run`` got a return value whose structure differs from the recorded one."""


class ContainerTypeMissingError(TorchLensError, TypeError):
    """A loaded trace's container names a class this process has not registered or imported;
    the message says which class to import or register."""


# -- drawing ---------------------------------------------------------------------------------


class GraphvizMissingError(TorchLensError, RuntimeError):
    """Rendering a drawing needs Graphviz's ``dot`` program, which is not installed."""
