"""``tl.trace``: run a model once and return its :class:`~torchlens.trace.Trace`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Optional

from torch import nn

from torchlens.analysis.arguments import check_bool, check_instance
from torchlens.capture.backends import JAX, TORCH, Detector, jax_claims
from torchlens.capture.record import RawCapture
from torchlens.capture.session import capture_forward, uncompiled

from .containers import ContainerRecords
from .errors import CaptureThreadError
from .grouping import GROUPING_POLICIES, group
from .options import CaptureOptions, TraceOptions
from .records import Ops, Param
from .trace import Trace


#: ``tl.trace``'s options when none are given (frozen, so one instance serves every trace).
_DEFAULT_OPTIONS = CaptureOptions()
#: The :class:`TraceOptions` of traces made with :data:`_DEFAULT_OPTIONS`, per grouping detector
#: and backend (frozen, so one instance serves every such trace; :func:`_trace_options`).
_DEFAULT_TRACE_OPTIONS: dict[tuple[Detector, str], TraceOptions] = {}


def trace(
    model: nn.Module,
    *inputs: Any,
    forward_kwargs: Optional[Mapping[str, Any]] = None,
    capture: Optional[CaptureOptions] = None,
    check_prediction: bool = False,
) -> Trace:
    """Run ``model(*inputs, **forward_kwargs)`` once and record every torch op it runs.

    Ops are grouped into layers by where they were written (scope, call site, operation,
    output slot); see the spec's grouping rule. The model, torch and Python are left
    exactly as they were, also when the forward raises; the model's own exception
    propagates with a note naming the op, module and place where it happened.

    With ``check_prediction=True`` the model is first predicted (``tl.predict``) and the
    trace's ``prediction`` is the comparison report (``trace.prediction.ok``).

    ``model`` may also be a JAX computation: a Flax NNX module, a function given JAX arrays,
    or a ``ClosedJaxpr`` (see :mod:`torchlens.jaxtrace`).
    """
    if not isinstance(model, nn.Module) and jax_claims(model, inputs, forward_kwargs):
        from .jaxtrace import capture_jax_call

        options, raw, params = capture_jax_call(model, inputs, forward_kwargs, capture, check_prediction)
        return cook(model, raw, options, forward_kwargs or {}, params, backend=JAX.name)
    options = _validate(model, forward_kwargs, capture, check_prediction)
    model = uncompiled(model)  # torch.compile(model): the Python of the model it wraps
    if check_prediction:
        from .predict import predict

        predicted = predict(model, *inputs, forward_kwargs=forward_kwargs)
    raw = capture_forward(model, inputs, dict(forward_kwargs or {}), options.save,
                          options.capture_container_structure, options.save_gradients)
    raw.output, raw.selected = None, []  # this capture is the trace's alone: what it keeps (cook)
    result = cook(model, raw, options, forward_kwargs or {})
    if check_prediction:  # the same records again, with the report of checking them
        result = replace(result, prediction=result.check_prediction(predicted))
    return result


def cook(model: Any, raw: RawCapture, options: CaptureOptions, forward_kwargs: Mapping[str, Any],
         params: Optional[Mapping[str, tuple[tuple[int, ...], Any]]] = None, backend: str = TORCH.name) -> Trace:
    """Group a raw capture of ``model`` into its :class:`Trace`; ``params`` (address -> shape
    and dtype) defaults to those the capture read as the forward pass ended (``raw.params``).

    The keyword arguments are read here; the grouping and the records are built when the trace is first read (:meth:`Trace.later`),
    from the parts of ``raw`` they need (not the model's return value, which the output ops
    hold when they are saved)."""
    params = raw.params if params is None else params
    assert params is not None, "a torch capture reads the parameters (capture_forward), a JAX one passes them"
    # A capture kept by someone else too (a Recording cooks its own again) is copied without them.
    kept = raw if raw.output is None and not raw.selected else replace(raw, output=None, selected=[])
    kwargs = dict(forward_kwargs)

    def build() -> dict[str, Any]:
        layers, ops, modules, buffers = group(kept)
        return {
            "layers": tuple(layers), "ops": Ops(ops), "modules": modules,
            "params": {name: Param(name, tuple(shape), dtype, name.rpartition(".")[0] or "self")
                       for name, (shape, dtype) in params.items()},
            "input_layers": tuple(layer.layer_label for layer in layers if layer.is_input),
            "output_layers": tuple(layer.layer_label for layer in layers if layer.is_output),
            "buffers": buffers,
            "containers": ContainerRecords.bind(kept.containers, ops, model, kwargs),
        }

    return Trace.later(build, _trace_options(options, raw.detector, backend), raw.state)


def _trace_options(options: CaptureOptions, detector: Detector, backend: str) -> TraceOptions:
    """What produced a trace: ``options`` and the grouping ``detector`` supports, captured by ``backend``."""
    if options is not _DEFAULT_OPTIONS:
        return TraceOptions(options, GROUPING_POLICIES[detector], backend)
    made = _DEFAULT_TRACE_OPTIONS.get((detector, backend))
    if made is None:
        made = _DEFAULT_TRACE_OPTIONS[detector, backend] = TraceOptions(options, GROUPING_POLICIES[detector], backend)
    return made


def _validate(model: Any, forward_kwargs: Any, capture: Any, check_prediction: Any,
              entry: str = "tl.trace") -> CaptureOptions:
    check_instance(f"{entry}(model, ...)", model, nn.Module, "an nn.Module",
                   f"pass the model first and its inputs after it: {entry}(model, x)")
    if isinstance(model, nn.DataParallel):
        raise CaptureThreadError(
            "nn.DataParallel runs its replicas on several Python threads, which torchlens cannot "
            "capture; trace the wrapped model instead: tl.trace(model.module, x)"
        )
    if forward_kwargs is not None:
        check_instance(f"{entry}(forward_kwargs=...)", forward_kwargs, Mapping,
                       "a mapping of keyword arguments for forward")
    check_bool(f"{entry}(check_prediction=...)", check_prediction)
    if capture is None:
        return _DEFAULT_OPTIONS
    return check_instance(f"{entry}(capture=...)", capture, CaptureOptions, "a tl.options.CaptureOptions",
                          "build one with tl.options.CaptureOptions(...)")
