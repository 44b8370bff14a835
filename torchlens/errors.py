"""Error types (``tl.errors``): every error torchlens raises on purpose is a :class:`TorchLensError`.

They are defined torch-free in :mod:`torchlens.analysis.errors`, so every layer can raise
them; this module is their public face.
"""

from torchlens.analysis.errors import (
    BufferThreadGapError,
    BufferThreadGapWarning,
    BufferWriteError,
    CaptureThreadError,
    ContainerFlattenError,
    ContainerKeyError,
    ContainerStructureError,
    ContainerTypeMissingError,
    InterventionError,
    GraphvizMissingError,
    OpaqueContainerError,
    PredictionError,
    SourceUnavailableError,
    TorchLensError,
    TorchLensTypeError,
    TorchLensValueError,
    TraceFileError,
    TraceInvariantError,
    UnsupportedForwardError,
    ValidationError,
    __all__,
)

__all__ = list(__all__)
