"""Flax NNX modules as scopes: their addresses, parameters, and numbered calls.

A Flax module call is an ordinary Python call of ``type(module).__call__``. For the length of
one capture, the ``__call__`` of every module class in the model is replaced by a wrapper that
numbers the call (on the capturing thread; other threads' calls pass through) and traces it
under ``jax.named_scope`` with a marker naming the call, so every
equation bound inside carries its innermost module call in ``source_info.name_stack``. The
wrapper's code also ends call-site chains (the frames inside a module call start at its
``__call__``). The classes are restored when the capture ends, also when it raises.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

import jax

from ..record import RawCall, RawModule

#: Prefix of the ``jax.named_scope`` marking a module call (followed by the call's index).
MARK = "torchlens_call_"
#: The root of a plain function or a jaxpr: a scope with no module behind it.
ROOT = "self"


def call_of(name_stack: Any) -> Optional[int]:
    """The innermost module call named in an equation's ``source_info.name_stack``, if any."""
    for scope in reversed(getattr(name_stack, "stack", ())):
        name = getattr(scope, "name", "")
        if name.startswith(MARK):
            return int(name[len(MARK):])
    return None


@dataclass(slots=True)
class Scopes:
    """The modules of one traced model, their parameters, and the calls made while tracing it."""

    #: Module records, root first (depth first, each instance once at its first address).
    modules: list[RawModule]
    #: ``id(module)`` -> index in :attr:`modules`.
    index: dict[int, int]
    #: ``id(array)`` of each parameter value -> its address (``blocks.0.lin.kernel``).
    params: dict[int, str]
    #: Parameter address -> ``(shape, dtype)``.
    param_meta: dict[str, tuple[tuple[int, ...], Any]]
    #: Module calls in the order they started: ``(module index, call number from 1)``.
    calls: list[tuple[int, int]] = field(default_factory=list)
    #: Per call: the call it ran inside (-1 for the outermost).
    call_io: list[RawCall] = field(default_factory=list)
    #: The calls running now, innermost last.
    stack: list[int] = field(default_factory=list)
    #: Objects whose ``id`` keys the tables above, kept alive for the capture.
    keep_alive: list[Any] = field(default_factory=list)

    def enter(self, module_index: int) -> int:
        """Start a call of module ``module_index``; return the call's index."""
        record = self.modules[module_index]
        record.num_calls += 1
        call = len(self.calls)
        self.calls.append((module_index, record.num_calls))
        self.call_io.append(RawCall(self.stack[-1] if self.stack else -1, []))
        self.stack.append(call)
        return call

    def run(self, module_index: int, function: Callable, args: tuple, kwargs: dict) -> Any:
        """Run ``function`` as a call of module ``module_index``, under its named scope."""
        call = self.enter(module_index)
        try:
            with jax.named_scope(f"{MARK}{call}"):
                return function(*args, **kwargs)
        finally:
            self.stack.pop()


def scopes_of(model: Any) -> Scopes:
    """The scopes of ``model``: a Flax NNX module tree, or a plain function (one root scope)."""
    nnx = sys.modules.get("flax.nnx")
    if nnx is None or not isinstance(model, nnx.Module):
        name = getattr(model, "__qualname__", type(model).__name__)
        return Scopes([RawModule(ROOT, name, (), None, ())], {id(model): 0}, {}, {}, keep_alive=[model])
    found = {id(module): (path, module) for path, module in nnx.iter_modules(model)}
    order = _depth_first(model, found, nnx)
    addresses = {key: ".".join(map(str, found[key][0])) or ROOT for key in order}
    params: dict[int, str] = {}
    param_meta: dict[str, tuple[tuple[int, ...], Any]] = {}
    own: dict[int, list[str]] = {key: [] for key in order}
    keep: list[Any] = [model]
    for key in order:
        module = found[key][1]
        prefix = "" if addresses[key] == ROOT else addresses[key] + "."
        for name, value in vars(module).items():
            if isinstance(value, nnx.Param):
                array = value.get_value()
                if id(array) not in params:
                    keep.append(array)
                    params[id(array)] = prefix + name
                    param_meta[prefix + name] = (tuple(array.shape), array.dtype)
                    own[key].append(prefix + name)
    parent = {child: key for key in order for child in _children(found[key][1], found, nnx)}
    modules = [
        RawModule(addresses[key], type(found[key][1]).__name__, tuple(own[key]),
                  addresses[parent[key]] if key in parent else None,
                  tuple(addresses[c] for c in order if parent.get(c) == key))
        for key in order
    ]
    return Scopes(modules, {key: i for i, key in enumerate(order)}, params, param_meta, keep_alive=keep)


def _children(module: Any, found: dict[int, tuple], nnx: Any) -> Iterator[int]:
    """``id`` of each module directly below ``module`` (inside containers such as ``nnx.List``
    too), in attribute order."""
    for _, child in nnx.iter_children(module):
        if id(child) in found:
            yield id(child)


def _depth_first(model: Any, found: dict[int, tuple], nnx: Any) -> list[int]:
    order: list[int] = []
    todo = [id(model)]
    while todo:
        key = todo.pop()
        if key in order:
            continue
        order.append(key)
        todo.extend(reversed(list(_children(found[key][1], found, nnx))))
    return order


class CallPatches:
    """Replaces the ``__call__`` of each module class of the model for one capture."""

    def __init__(self, scopes: Scopes, modules: list[Any]) -> None:
        self.scopes = scopes
        self.saved: list[tuple[type, Callable]] = []
        owners: dict[int, type] = {}
        for module in modules:
            owner = next((c for c in type(module).__mro__ if "__call__" in vars(c)), None)
            if owner is not None and owner is not object:
                owners[id(owner)] = owner
        self.owners = list(owners.values())

    def __enter__(self) -> "CallPatches":
        try:
            for owner in self.owners:
                original = vars(owner)["__call__"]
                self.saved.append((owner, original))  # first: an interrupt after it restores the original
                setattr(owner, "__call__", _wrapper(self.scopes, original))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        while self.saved:
            owner, original = self.saved.pop()
            setattr(owner, "__call__", original)


def _wrapper(scopes: Scopes, original: Callable) -> Callable:
    thread = threading.get_ident()

    def module_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        index = scopes.index.get(id(self))
        if (index is None or threading.get_ident() != thread
                or (scopes.stack and scopes.calls[scopes.stack[-1]][0] == index)):
            # not the model's, another thread's, or a super() call inside one call
            return original(self, *args, **kwargs)
        return scopes.run(index, original, (self, *args), kwargs)

    return module_call


#: Code of the wrapper: a module-call boundary, where a call-site chain starts.
WRAPPER_CODE = _wrapper(None, None).__code__  # type: ignore[arg-type]


def nnx_modules(model: Any) -> list[Any]:
    """Every module instance of a Flax NNX model (``[]`` for anything else)."""
    nnx = sys.modules.get("flax.nnx")
    if nnx is None or not isinstance(model, nnx.Module):
        return []
    return [module for _, module in nnx.iter_modules(model)]
