"""``tl.trace`` of a JAX computation: a Flax NNX module, a function of JAX arrays, a ``ClosedJaxpr``.

The capture (:mod:`torchlens.capture.jaxbackend`) records every primitive the call runs; the
trace is built by the same grouping, records, labels, drawing and tables as a torch trace.
Ops are named by their primitives (``tanh``, ``dot_general``, ``add``); Flax submodules are
scopes with numbered calls (``trace.modules["block"].num_calls``); parameters are the model's
``nnx.Param`` values (``blocks.0.lin.kernel``).

What differs from torch (the backend's capabilities, :mod:`torchlens.capture.backends`):
containers are recorded as key paths only (``op.container`` indexes them, nothing rebuilds
them), and the torch-only features (``check_prediction``, ``save_gradients``, a selective
``save``, replay by ``validate_forward_pass``, ``do`` and ``run``, ``tl.save``) are refused
with an error saying so.

Imported only when a JAX value or module is traced.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from torchlens.analysis.arguments import check_bool, check_instance
from torchlens.capture.jaxbackend.capture import capture_jax
from torchlens.capture.record import RawCapture

from .errors import TorchLensValueError
from .options import CaptureOptions


def capture_jax_call(model: Any, inputs: tuple, forward_kwargs: Optional[Mapping[str, Any]],
                     capture: Optional[CaptureOptions], check_prediction: bool,
                     ) -> tuple[CaptureOptions, RawCapture, dict[str, tuple[tuple[int, ...], Any]]]:
    """What ``tl.trace(model, *inputs, ...)`` cooks for a JAX computation: the checked options,
    the raw capture and the model's parameters (address -> shape and dtype)."""
    options = _validate(forward_kwargs, capture, check_prediction)
    raw, params = capture_jax(model, inputs, dict(forward_kwargs or {}), keep=options.save == "all",
                              containers=options.capture_container_structure)
    return options, raw, params


def _validate(forward_kwargs: Any, capture: Any, check_prediction: Any) -> CaptureOptions:
    entry = "tl.trace"
    if forward_kwargs is not None:
        check_instance(f"{entry}(forward_kwargs=...)", forward_kwargs, Mapping,
                       "a mapping of keyword arguments for the function")
    check_bool(f"{entry}(check_prediction=...)", check_prediction)
    if check_prediction:
        raise TorchLensValueError(
            "tl.trace(check_prediction=True) compares with tl.predict, which reads torch models only; "
            "trace this JAX computation without it"
        )
    options = CaptureOptions() if capture is None else check_instance(
        f"{entry}(capture=...)", capture, CaptureOptions, "a tl.options.CaptureOptions",
        "build one with tl.options.CaptureOptions(...)")
    if options.save not in ("all", "none"):
        raise TorchLensValueError(
            f"CaptureOptions(save={options.save!r}) selects ops by label while a torch model runs; a JAX "
            'capture keeps every output (save="all") or none (save="none")'
        )
    if options.save_gradients:
        raise TorchLensValueError(
            "CaptureOptions(save_gradients=True) hooks torch's autograd; a JAX capture has no such hooks: "
            "take gradients with jax.grad and trace that function instead"
        )
    return options
