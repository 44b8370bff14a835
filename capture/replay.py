"""What a capture keeps of each torch call so the graph can be replayed op by op."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One torch call as it was made: shared by the ops of its output slots."""

    #: The callable torch dispatched (``torch.tanh``, ``Tensor.add``, a ScriptModule, a
    #: ``torch.func`` implementation).
    func: Callable
    #: The arguments as passed (references: tensors are replaced on replay).
    args: tuple
    kwargs: dict
    #: For each tensor argument, in :func:`substitute` order, the index of the op whose
    #: output it was (a buffer version included), -1 (a parameter or a constant), or
    #: ``-2 - index`` when op ``index`` had written its storage through another alias.
    sources: list[int]
    #: Tensor argument position -> its value when read, for the aliased reads above.
    snapshots: dict


def tensor_args(args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """The tensor arguments of a call, in :func:`substitute` order."""
    found: list[torch.Tensor] = []
    substitute(args, kwargs, lambda k, tensor: found.append(tensor) or tensor)
    return found


def substitute(args: tuple, kwargs: dict, replace: Callable[[int, torch.Tensor], torch.Tensor]) -> tuple[tuple, dict]:
    """Rebuild ``args``/``kwargs`` with ``replace(k, tensor)`` for the k-th tensor argument.

    The order is the capture's (``Capture._inputs_of``): positional, then keyword values, one
    level into plain lists and tuples.
    """
    counter = iter(range(1 << 30))

    def one(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return replace(next(counter), value)
        if type(value) is list or type(value) is tuple:
            return type(value)(replace(next(counter), v) if isinstance(v, torch.Tensor) else v for v in value)
        return value

    new_args = tuple(one(a) for a in args)
    return new_args, {k: one(v) for k, v in kwargs.items()}
