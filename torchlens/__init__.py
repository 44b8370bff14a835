"""torchlens: see inside PyTorch models.

``tl.trace(model, x)`` runs the model once, records every torch operation, and groups the
operations into layers and passes by where they were written in the code.
"""

from . import errors, options, types
from .api import trace
from .predict import predict
from .errors import TorchLensError
from .records import CallSite, Layer, Module, Op, Param
from .trace import Trace

__all__ = ["trace", "predict", "Trace", "Layer", "Op", "Module", "Param", "CallSite", "TorchLensError", "errors", "options", "types"]
