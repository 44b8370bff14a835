"""Recording the containers at a capture's boundaries: model inputs, model output, module calls.

The model output's structure is recorded on every capture (``trace.reconstruct_output``
needs it). With ``capture_container_structure`` the model's inputs and every module call
whose arguments or return value hold a container are recorded too, and each op learns where
its tensor sits (``RawOp.container``): the model output for output ops, the inputs for input
ops, else the first module output holding it, else the first module input.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

import torch

from .containers import ContainerSpec, NodeKind, RawContainer, Role, flatten, flatten_call, leaf_paths
from .record import INPUT, OUTPUT

_Tensor = torch.Tensor
#: Constants :func:`plain_leaves` passes over (exact types: a subclass may be a registered container).
_NUMBERS = frozenset({bool, int, float})

#: Which roots claim an op first when its tensor sits in several.
_CLAIM_ORDER = (Role.MODEL_OUTPUT, Role.MODEL_INPUT, Role.MODULE_OUTPUT, Role.MODULE_INPUT)


def record_inputs(capture: Any, args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """Add an input op per new tensor leaf of the arguments; record their structure if asked.

    Returns the tensor leaves (the caller's tensors)."""
    # Without containers only the leaves are needed: read straight from plain arguments.
    flat = None
    leaves = plain_leaves(args) if not kwargs and not capture.containers else None
    if leaves is None:
        flat = flatten_call(args, kwargs)
        leaves = flat.leaves
    ops = []
    for tensor in leaves:
        index = capture.producer_of(tensor)
        if index is None:
            capture.add_boundary(INPUT, tensor)
            index = len(capture.raw.ops) - 1
        ops.append(index)
    if flat is not None and capture.containers:
        capture.raw.containers.append(RawContainer(Role.MODEL_INPUT, "input", flat.spec, ops))
    return leaves


def record_output(capture: Any, output: Any, keep_values: bool = True) -> None:
    """Add an output op per tensor leaf of the model's return value and record its structure
    (with the leaf tensors themselves when ``keep_values``)."""
    flat = capture.returned[1] if capture.returned is not None else flatten(output)
    ops = []
    for tensor in flat.leaves:
        capture.add_boundary(OUTPUT, tensor)
        ops.append(len(capture.raw.ops) - 1)
    capture.raw.containers.insert(0, RawContainer(Role.MODEL_OUTPUT, "output", flat.spec, ops,
                                                 tuple(flat.leaves) if keep_values else None))
    if capture.containers:
        claim(capture.raw)


def record_module_call(capture: Any, call: int, args: tuple, kwargs: dict, out: Any) -> None:
    """Record a module call's arguments and return value where they hold containers.

    The outermost call (the model's own) is skipped: its arguments and return value are the
    model inputs and output, recorded as such.
    """
    if not capture.stack:
        return
    module, number = capture.raw.calls[call]
    label = f"{capture.raw.modules[module].address}:{number}"
    inputs = flatten_call(args, kwargs)
    if any(child.kind not in (NodeKind.LEAF, NodeKind.CONST) and child.num_leaves for child in inputs.spec.children):
        _add(capture, Role.MODULE_INPUT, f"{label}/input", inputs.spec, inputs.leaves)
    if not isinstance(out, torch.Tensor):
        result = flatten(out)
        if result.leaves:
            _add(capture, Role.MODULE_OUTPUT, f"{label}/output", result.spec, result.leaves)


def call_inputs(capture: Any, args: tuple, kwargs: dict) -> list[int]:
    """Op indices of the tensors a module call takes (one level into lists, tuples, dicts)."""
    if not kwargs and len(args) == 1 and isinstance(args[0], _Tensor):  # one tensor: the common case
        return _index(capture, args[0])
    tensors: list[torch.Tensor] = []
    for value in (*args, *kwargs.values()) if kwargs else args:
        if value is None:
            continue
        if isinstance(value, _Tensor):
            tensors.append(value)
            continue
        items: Iterable[Any]
        if isinstance(value, (list, tuple)):
            items = value
        elif isinstance(value, dict):
            items = value.values()
        else:
            continue
        for item in items:
            if isinstance(item, _Tensor):
                tensors.append(item)
    return _indices(capture, tensors)


def call_outputs(capture: Any, out: Any) -> list[int]:
    """Op indices of every tensor leaf of a module call's return value.

    The outermost call's flattening is kept (``capture.returned``): where that call's return
    value is the model's, as it returned it, :func:`record_output` reads it instead of flattening
    it again (a ``DynamicCache`` inside takes tens of microseconds to search)."""
    if isinstance(out, _Tensor):
        return _index(capture, out)
    leaves = plain_leaves(out)
    if leaves is None:
        flat = flatten(out)
        if not capture.stack:
            capture.returned = (out, flat)
        leaves = flat.leaves
    return _indices(capture, leaves)


def plain_leaves(value: Any) -> Optional[list[torch.Tensor]]:
    """``flatten(value).leaves`` without the spec tree, for a plain tuple or list whose items are
    tensors, ``None``, plain numbers and tuples of tensors and ``None`` (an LSTM's
    ``(output, (h, c))``, a block's ``(hidden, None)``); ``None`` for any other value."""
    if type(value) is not tuple and type(value) is not list:
        return None
    leaves: list[torch.Tensor] = []
    for item in value:
        if isinstance(item, _Tensor):
            leaves.append(item)
        elif type(item) is tuple:
            for inner in item:
                if isinstance(inner, _Tensor):
                    leaves.append(inner)
                elif inner is not None:
                    return None
        elif item is not None and type(item) not in _NUMBERS:
            return None
    return leaves


def _index(capture: Any, tensor: torch.Tensor) -> list[int]:
    """:func:`_indices` of one tensor."""
    index = capture.producer.get(id(tensor)) if capture.refs is None else capture.producer_of(tensor)
    return [] if index is None else [index]


def _indices(capture: Any, tensors: list[torch.Tensor]) -> list[int]:
    """The ops whose outputs ``tensors`` are, each once, in order (tensors no op made left out).

    Where every output is kept alive (``save="all"``) no tensor's id can be one a dead output
    had, so the producer table is read directly (the common, cheaper case); otherwise through
    ``capture.producer_of``, which checks the id against the output's weak reference."""
    if capture.refs is None:
        found = map(capture.producer.get, map(id, tensors))
    else:
        found = map(capture.producer_of, tensors)
    return list(dict.fromkeys([index for index in found if index is not None]))


def _add(capture: Any, role: Role, root_id: str, spec: Any, leaves: list) -> None:
    ops = [-1 if (index := capture.producer_of(tensor)) is None else index for tensor in leaves]
    capture.raw.containers.append(RawContainer(role, root_id, spec, ops))


def claim(raw: Any) -> None:
    """Give each op the first container (in claim order) that holds its tensor."""
    for role in _CLAIM_ORDER:
        for root in raw.containers:
            if root.role != role:
                continue
            for index, path in zip(root.leaves, leaf_paths(root.spec)):
                if index >= 0 and raw.ops[index].container is None:
                    raw.ops[index].container = ContainerSpec(root, path)
