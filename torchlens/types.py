"""Public types for structured inputs and outputs: ``tl.types.Container`` and ``register_container``."""

from __future__ import annotations

from typing import Any, Callable

import torch

from torchlens.analysis.arguments import check_callable, check_instance
from torchlens.capture.containers import register

from .containers import Container
from .errors import TorchLensTypeError

#: Types the built-in rules own; registering them would change how every capture reads them.
_BUILT_IN = (tuple, list, dict, type(None), bool, int, float, complex, str, bytes)


def register_container(
    type_: type, flatten: Callable[[Any], tuple[Any, Any]], unflatten: Callable[[Any, list], Any]
) -> None:
    """Teach torchlens a container type of your own (it and its subclasses).

    ``flatten(value)`` returns ``(children, aux_data)``: ``children`` a list or tuple of values
    torchlens can traverse (tensors, containers, constants), ``aux_data`` anything needed to
    rebuild. ``unflatten(aux_data, children)`` rebuilds the value from the saved ``aux_data``
    and the rebuilt children. Registering a type again replaces its functions.

    >>> tl.types.register_container(PairBox, lambda b: ([b.left, b.right], None),
    ...                              lambda aux, children: PairBox(*children))
    """
    check_instance("register_container(type_, flatten, unflatten): type_", type_, type, "a class")
    if issubclass(type_, torch.Tensor) or type_ in _BUILT_IN:
        raise TorchLensTypeError(
            f"{type_.__name__} is handled by torchlens itself and cannot be registered as a container; "
            "register your own class (a subclass of it works)"
        )
    for name, function in (("flatten", flatten), ("unflatten", unflatten)):
        check_callable(f"register_container({type_.__name__}, flatten, unflatten): {name}", function)
    register(type_, flatten, unflatten)


__all__ = ["Container", "register_container"]
