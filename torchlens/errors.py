"""Error types: every error torchlens raises on purpose is a :class:`TorchLensError`."""

from torchlens.analysis.errors import CaptureThreadError, TorchLensError, TorchLensTypeError, TorchLensValueError


class TraceInvariantError(TorchLensError, AssertionError):
    """``Trace.check()`` found a broken invariant: a bug in torchlens, please report it."""


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


__all__ = [
    "TorchLensError",
    "TorchLensTypeError",
    "TorchLensValueError",
    "CaptureThreadError",
    "TraceInvariantError",
    "OpaqueContainerError",
    "ContainerFlattenError",
    "ContainerKeyError",
    "ContainerStructureError",
]
