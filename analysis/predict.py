"""Entry points of the static prediction: from a function, a live module, a class or a file.

* :func:`predict_function` (torch-free): the keys a plain callable's ops will have when run
  as a module's ``forward`` (the stand-in recorder's ``run``).
* :func:`predict_module`: a live instance; submodules, container lengths, configs and shared
  instances are read from it.
* :func:`predict_class`: a class alone; ``__init__`` is read to learn the submodules.
* :func:`predict_source`: a class named in a ``.py`` file (the file is imported to read it).

Inputs: a value given for a parameter is used as is (a tensor stands for "a tensor"; other
values are constants); parameters without a value are tensors if they have no default and
take their default otherwise.
"""

from __future__ import annotations

import gc
import inspect
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from .errors import PredictionError, SourceUnavailableError
from .host import Host
from .events import ForwardInput, Gap
from .framestack import with_room
from .interpreter import DEFAULT_LIMITS, Boundary, Budget, Interpreter, Limits
from .passes import Count
from .pybuiltins import class_attr
from .prediction import Prediction, build_prediction
from .targets import import_file
from .values import SCALARS, Dict, Instance, Known, Seq, Tensor, Value

__all__ = ["predict_function", "predict_module", "predict_class", "predict_source", "abstract_inputs"]


def predict_function(fn: Callable, *args: Any, host: Host, max_steps: Optional[int] = None,
                     max_seconds: Optional[float] = None, **kwargs: Any) -> Prediction:
    """Predict the ops ``fn(*args, **kwargs)`` records, its frame being the chain's start.

    ``max_steps`` bounds the run (as in every ``predict_*``; interpreted statements, calls and
    loop items, the same on every machine) and ``max_seconds`` is an outer guard (``math.inf``:
    none); ``None`` takes :data:`~analysis.interpreter.DEFAULT_LIMITS`. Past either, the places
    not yet read become a gap saying where the prediction stopped."""
    def begin(run: Interpreter) -> _Start:
        values = [run.wrap(a) for a in args]
        return lambda: run.call(run.wrap(fn), values, {k: run.wrap(v) for k, v in kwargs.items()}), (), None

    return _run(host, DEFAULT_LIMITS.given(max_steps, max_seconds), getattr(fn, "__qualname__", repr(fn)), begin)


def predict_module(module: Any, *args: Any, host: Host, max_steps: Optional[int] = None,
                   max_seconds: Optional[float] = None, **kwargs: Any) -> Prediction:
    """Predict a live module's forward pass (``module(*args, **kwargs)``)."""
    def begin(run: Interpreter) -> _Start:
        values, kw, inputs = abstract_inputs(run, host.module_forward(module), args, kwargs, skip_self=False)
        return lambda: run.module_call(module, values, kw), inputs, host.module_types()

    return _run(host, DEFAULT_LIMITS.given(max_steps, max_seconds), type(module).__name__, begin, boundary=False)


def predict_class(cls: type, *args: Any, host: Host, init_args: tuple = (), max_steps: Optional[int] = None,
                  max_seconds: Optional[float] = None, **kwargs: Any) -> Prediction:
    """Predict a module class's forward pass from its source alone (``__init__`` builds it)."""
    if not isinstance(cls, type) or not host.is_module_class(cls):
        raise PredictionError(f"predict_class needs a module class, got {cls!r}")

    def begin(run: Interpreter) -> _Start:
        instance = run.construct(cls, [run.wrap(a) for a in init_args], {})
        if not isinstance(instance, Instance):
            raise PredictionError(f"could not read how {cls.__qualname__} is built")
        instance.address = "self"
        run.name_children(instance)
        values, kw, inputs = abstract_inputs(run, class_attr(cls, "forward"), args, kwargs, skip_self=True)
        return lambda: run.module_call_instance(instance, values, kw), inputs, _instance_types(instance)

    return _run(host, DEFAULT_LIMITS.given(max_steps, max_seconds), cls.__name__, begin, boundary=False)


def predict_source(path: str, class_name: str, *args: Any, host: Host, **kwargs: Any) -> Prediction:
    """Predict class ``class_name`` of the file at ``path`` (imported to resolve its names).

    ``host`` says what an op is (torch's is :class:`torchlens.torch_host.TorchHost`).
    """
    file = Path(path)
    if not file.is_file():
        raise SourceUnavailableError(f"no file {path!r}: pass the path of a .py file")
    cls = getattr(import_file(file), class_name, None)
    if not isinstance(cls, type):
        raise PredictionError(f"{path} defines no class {class_name!r}")
    return predict_class(cls, *args, host=host, **kwargs)


def abstract_inputs(run: Interpreter, forward: Any, args: tuple, kwargs: dict,
                    skip_self: bool) -> tuple[list[Value], dict[str, Value], tuple[str, ...]]:
    """Values for ``forward``'s parameters: given ones as they are, else tensors or defaults;
    each tensor among them marked as its input layer, and those layers' labels (:func:`mark_inputs`)."""
    values: list[Value] = [run.wrap(a) for a in args]
    kw = {k: run.wrap(v) for k, v in kwargs.items()}
    try:
        params = list(inspect.signature(forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    if skip_self and params:
        params = params[1:]
    for k, param in enumerate(params):
        if k < len(args) or param.name in kw or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if param.default is inspect.Parameter.empty:
            if param.kind == param.POSITIONAL_OR_KEYWORD and k == len(values):
                values.append(Tensor())
            else:
                kw[param.name] = Tensor()
    return mark_inputs(run, values, kw)


def mark_inputs(run: Interpreter, values: list[Value],
                kw: dict[str, Value]) -> tuple[list[Value], dict[str, Value], tuple[str, ...]]:
    """``values`` and ``kw`` with each distinct tensor leaf, positions first, then keywords,
    into lists, tuples and dicts, produced by a :class:`~analysis.events.ForwardInput` named as
    the capture names the input layers; a live tensor inside a given container reads so too.
    Where an argument is another object (it may hold tensors the capture numbers first), no
    tensor is marked: the numbers would not be the capture's."""
    leaves: dict[int, tuple[Any, Value]] = {}  # id(live tensor, or value) -> (it, its value)
    if not all(_collect(run, value, leaves) for value in (*values, *kw.values())):
        return values, kw, ()
    labels = tuple(f"input_{n}" for n in range(1, len(leaves) + 1))
    marked: dict[int, Tensor] = {}
    for label, (key, (live, value)) in zip(labels, leaves.items()):
        assert isinstance(value, Tensor)
        marked[key] = Tensor(value.live, value.meta, (ForwardInput(label), 0))
        if live is not None:
            run.held[id(live)] = (live, marked[key])
    return [_swap(v, marked) for v in values], {k: _swap(v, marked) for k, v in kw.items()}, labels


def _collect(run: Interpreter, value: Any, leaves: dict[int, tuple[Any, Value]]) -> bool:
    """Add the tensor leaves of ``value`` to ``leaves``; ``False`` where it holds another object.
    (Module-level, as :func:`_swap`: a recursive closure is a reference cycle, and it would keep the run.)"""
    if isinstance(value, Known):
        value = value.obj
    if isinstance(value, Tensor):
        leaves.setdefault(id(value.live if value.live is not None else value), (value.live, value))
        return True
    if isinstance(value, run.host.tensor_type):
        leaves.setdefault(id(value), (value, run.wrap(value)))
        return True
    if isinstance(value, (Seq, Dict)):
        items = value.items if isinstance(value, Seq) else value.items.values()
        return all(_collect(run, item, leaves) for item in items)
    if isinstance(value, (list, tuple)):
        return all(_collect(run, item, leaves) for item in value)
    if isinstance(value, dict):
        return all(_collect(run, item, leaves) for item in value.values())
    return isinstance(value, SCALARS)


def _swap(value: Value, marked: dict[int, Tensor]) -> Value:
    """``value`` with each tensor leaf in ``marked`` (by the id :func:`_collect` keyed it by) replaced."""
    if isinstance(value, Tensor):
        return marked.get(id(value.live if value.live is not None else value), value)
    if isinstance(value, Seq):
        return Seq([_swap(item, marked) for item in value.items], value.kind, value.unsure)
    if isinstance(value, Dict):
        return Dict({k: _swap(item, marked) for k, item in value.items.items()}, value.kind, value.unsure)
    return value


#: How a prediction starts, made from its run: the call that runs the forward, the labels of
#: its input layers, and its modules' class names by address (``None``: not known).
_Start = tuple[Callable[[], Any], tuple[str, ...], Optional[dict[str, str]]]


def _run(host: Host, limits: Limits, target: str, begin: Callable[[Interpreter], _Start],
         boundary: bool = True) -> Prediction:
    """Predict with a run made, used and dropped while the collector is paused: it holds no
    reference cycle, so what it made is freed before the collector resumes, never scanned."""
    with _no_automatic_collection():
        return with_room(_predict, Interpreter(host, limits), target, begin, boundary)


@contextmanager
def _no_automatic_collection() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a prediction runs, and resumed after it
    (also on a raise or Ctrl-C) if it was running before.

    A prediction makes hundreds of thousands of objects, many of which live until it ends
    (syntax trees, per-code readings, fakes and what torch's fake-tensor mode caches), in a
    process whose heap already holds torch and the model: the collector would scan that whole
    heap several times (a cold prediction of resnet50 took 0.42 s with it, 0.23 s without;
    swin_t 0.99 -> 0.85 s). Paused, the garbage with cycles it leaves is collected by the
    next collection after it (peak memory unchanged on swin_v2_b). The pause is process-wide: another thread allocating meanwhile is
    not collected automatically either until the prediction ends (``gc.collect()`` still
    works)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _predict(run: Interpreter, target: str, begin: Callable[[Interpreter], _Start], boundary: bool) -> Prediction:
    start, inputs, module_types = begin(run)
    if boundary:
        run.stack.append(Boundary("self"))
    stopped = ""
    returned: Any = None
    try:
        returned = start()
    except Budget as stop:
        stopped = f"prediction incomplete: {stop}; what runs after that point is not predicted " \
                  f"(pass {stop.option}= to allow more)"
    except RecursionError:
        stopped = "prediction incomplete: the program nests deeper than Python's recursion limit"
    finally:
        run.close()
        run.stack.clear()
    gaps = list(run.gaps)
    if stopped:
        gaps.append(Gap("self", (), stopped))
    pred = build_prediction(target, run.events, gaps, [*run.notes, *([stopped] if stopped else [])],
                            None if stopped else returned, inputs, module_types)
    return _open_cut_counts(pred, run.cut) if run.cut else pred


def _instance_types(root: Instance) -> dict[str, str]:
    """Address -> class name of each module built while reading ``__init__``."""
    types: dict[str, str] = {}
    todo = [root]
    while todo:
        instance = todo.pop()
        if instance.address is None or instance.address in types:
            continue
        types[instance.address] = instance.cls.__name__
        children = [*instance.attrs.values(), *(instance.items or {}).values()]
        todo.extend(child for child in children if isinstance(child, Instance))
    return types


def _open_cut_counts(pred: Prediction, cut: set) -> Prediction:
    """Layers below a recursion the run cut off ran at least as counted, maybe more."""
    note = "recursion cut off: at least this many passes"
    layers = tuple(
        replace(layer, count=Count(layer.count.lo, None, f"{layer.count.lo}+", note))
        if any(getattr(link, "code", None) in cut for link in layer.call_site or ()) else layer
        for layer in pred.layers)
    return replace(pred, layers=layers)
