"""Gradients of a capture's op outputs (``CaptureOptions(save_gradients=True)``).

A tensor hook on every recorded output that requires grad stores the gradient a later
``backward()`` delivers to it; the hooks return ``None``, so no gradient is changed (the
parameters' ``.grad`` equal an untraced run's). The hooks hold the store weakly and are
removed when the store, owned by the trace, is dropped.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Optional

import torch
from torch.utils.hooks import RemovableHandle


class Gradients:
    """Op index -> the gradient the last backward pass delivered to that op's output."""

    def __init__(self, grads: Optional[dict[int, torch.Tensor]] = None) -> None:
        self.grads: dict[int, torch.Tensor] = {} if grads is None else grads
        self._handles: list[RemovableHandle] = []
        weakref.finalize(self, _remove, self._handles)

    def watch(self, index: int, tensor: torch.Tensor) -> None:
        """Keep the gradient that reaches ``tensor`` (recorded as op ``index``)."""
        if tensor.requires_grad:
            self._handles.append(tensor.register_hook(_keeper(weakref.ref(self), index)))

    def get(self, index: int) -> Optional[torch.Tensor]:
        return self.grads.get(index)


def _keeper(store: "weakref.ref[Gradients]", index: int) -> Callable[[torch.Tensor], None]:
    def keep(grad: torch.Tensor) -> None:
        alive = store()
        if alive is not None:
            alive.grads[index] = grad

    return keep


def _remove(handles: list[Any]) -> None:
    for handle in handles:
        handle.remove()
