"""Walking a model's modules, parameters and buffers by identity.

torch's ``named_modules()`` (and with it ``named_parameters()``, ``named_buffers()``,
``modules()``, ``parameters()``) keeps the modules it met in a ``set``, so it raises
``TypeError`` on a module that is unhashable (an ``nn.Module`` that also subclasses
``OrderedDict``). These walks give the same names in the same order, each object once at its
first address, keyed by ``id``.
"""

from __future__ import annotations

from typing import Iterator, Optional

import torch
from torch import nn


def named_modules(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """``model.named_modules()``: the model first (address ``""``), then its children, depth first."""
    seen: set[int] = set()
    found: list[tuple[str, nn.Module]] = []

    def visit(name: str, module: nn.Module) -> None:
        seen.add(id(module))
        found.append((name, module))
        prefix = name + "." if name else ""
        for child_name, child in module._modules.items():
            if child is not None and id(child) not in seen:
                visit(prefix + child_name, child)

    visit("", model)
    return found


def named_tensors(model: nn.Module, table: str,
                  modules: Optional[list[tuple[str, nn.Module]]] = None) -> Iterator[tuple[str, torch.Tensor]]:
    """``named_parameters()`` (``table="_parameters"``) or ``named_buffers()`` (``"_buffers"``);
    ``modules``: :func:`named_modules` of ``model`` when the caller has it already."""
    seen: set[int] = set()
    for name, module in named_modules(model) if modules is None else modules:
        prefix = name + "." if name else ""
        for tensor_name, tensor in getattr(module, table).items():
            if tensor is not None and id(tensor) not in seen:
                seen.add(id(tensor))
                yield prefix + tensor_name, tensor
