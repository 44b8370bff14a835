"""torchlens: see inside PyTorch models.

``tl.trace(model, x)`` runs the model once, records every torch operation, and groups the
operations into layers and passes by where they were written in the code.

The package is laid out as four layers, each importing only the ones below it:
``torchlens.analysis`` (torch-free: call-site keys, prediction, lint) <- ``torchlens.capture``
(what happens while the model runs) <- the public API in this package <- ``torchlens.fuzz``.
Importing ``torchlens`` does not import torch: the public names below load on first use, so
``torchlens lint`` and the torch-free subpackages stay torch-free.
"""

from __future__ import annotations

import gc as _gc
import importlib as _importlib
import sys as _sys
from types import ModuleType as _ModuleType
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

#: Public name -> the submodule that defines it (loaded on first access).
_EXPORTS = {
    "trace": "api",
    "predict": "predict",
    "save": "persistence",
    "load": "persistence",
    "Trace": "trace",
    "Layer": "records",
    "Op": "records",
    "Module": "records",
    "ModuleCall": "records",
    "Param": "records",
    "CallSite": "records",
    "TorchLensError": "errors",
    "OpInfo": "options",
    "record": "recording",
    "Recording": "recording",
}
_SUBMODULES = ("errors", "options", "types")

__all__ = [*_EXPORTS, *_SUBMODULES, "__version__"]

if TYPE_CHECKING:
    from . import errors, options, types
    from .api import trace
    from .errors import TorchLensError
    from .options import OpInfo
    from .persistence import load, save
    from .recording import Recording, record
    from .predict import predict
    from .records import CallSite, Layer, Module, ModuleCall, Op, Param
    from .trace import Trace


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return _import(name)
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module 'torchlens' has no attribute {name!r}")
    value = getattr(_import(where), name)
    globals()[name] = value
    return value


def _import(submodule: str) -> _ModuleType:
    """A submodule, imported with Python's cyclic garbage collector paused (and resumed after if
    it ran). The first ``tl.predict`` or ``tl.trace`` imports ~40 modules: ~50 dataclasses and
    thousands of functions, all alive as long as the process; the collections their allocations
    set off scan the whole heap of a process that holds torch and a model, and a full one falling
    due meanwhile made the import ~0.25 s instead of ~0.04 s (a cold ``tl.predict`` of maxvit_t
    after building it). The garbage it would have found is collected by the next collection."""
    enabled = _gc.isenabled()
    _gc.disable()
    try:
        return _importlib.import_module(f"{__name__}.{submodule}")
    finally:
        if enabled:
            _gc.enable()


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(_ModuleType):
    """Keeps ``torchlens.trace`` the function: importing the submodule of the same name
    (``torchlens.trace``, which defines ``Trace``) would otherwise overwrite the attribute."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, _ModuleType) and name in _EXPORTS and value.__name__ == f"{__name__}.{name}":
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package
