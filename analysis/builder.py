"""Frozen records built at the cost of plain ones: :func:`builder`.

Torch-free: the capture builds its per-op records with it, the prediction its layers.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any, Callable, TypeVar

__all__ = ["builder"]

_R = TypeVar("_R")


def builder(record: type[_R]) -> Callable[..., _R]:
    """A constructor of the frozen, slotted dataclass ``record`` at the cost of a plain one.

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``; for a
    record built once per op (:class:`torchlens.records.Op`, with 18 fields) that is more than
    everything else grouping does for the op. The builder is a mutable twin with the same
    slots whose ``__init__`` (same parameters and defaults) sets the fields and then makes
    the instance a ``record`` (``__class__`` assignment, allowed between classes of identical
    layout): the result is frozen like any other, and building it is one call.
    """
    own = fields(record)  # type: ignore[arg-type]
    if hasattr(record, "__post_init__") or not all(f.init for f in own):  # the twin would skip them
        raise TypeError(f"builder({record.__name__}): a record with __post_init__ or init=False fields "
                        "must be built by its own constructor")
    names = [f.name for f in own]
    defaults: dict[str, Any] = {"_record": record, "_factory": _Factory}
    params = []
    for f in own:
        if f.default is not MISSING:
            defaults[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not MISSING:
            defaults[f"_default_{f.name}"] = _Factory(f.default_factory)
            params.append(f"{f.name}=_default_{f.name}")
        else:
            params.append(f.name)
    body = [f"    self.{name} = {name}.make() if type({name}) is _factory else {name}"
            if f.default_factory is not MISSING else f"    self.{name} = {name}" for name, f in zip(names, own)]
    source = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body) + "\n    self.__class__ = _record\n"
    exec(source, defaults)  # as dataclasses writes its __init__: one function, no per-field calls
    return type(f"_{record.__name__}Builder", (), {"__slots__": tuple(names), "__init__": defaults["__init__"],
                                                     "__module__": record.__module__})


class _Factory:
    """A ``default_factory`` in a builder's parameter defaults: called for each record built."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make
