"""Recording the containers at a capture's boundaries: model inputs, model output, module calls.

The model output's structure is recorded on every capture (``trace.reconstruct_output``
needs it). With ``capture_container_structure`` the model's inputs and every module call
whose arguments or return value hold a container are recorded too, and each op learns where
its tensor sits (``RawOp.container``): the model output for output ops, the inputs for input
ops, else the first module output holding it, else the first module input.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import torch

from .containers import ContainerSpec, NodeKind, RawContainer, Role, flatten, flatten_call, leaf_paths
from .record import INPUT, OUTPUT

#: Which roots claim an op first when its tensor sits in several.
_CLAIM_ORDER = (Role.MODEL_OUTPUT, Role.MODEL_INPUT, Role.MODULE_OUTPUT, Role.MODULE_INPUT)


def record_inputs(capture: Any, args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """Add an input op per new tensor leaf of the arguments; record their structure if asked.

    Returns the tensor leaves (the caller's tensors)."""
    flat = flatten_call(args, kwargs)
    ops = []
    for tensor in flat.leaves:
        index = capture.producer_of(tensor)
        if index is None:
            capture.add_boundary(INPUT, tensor)
            index = len(capture.raw.ops) - 1
        ops.append(index)
    if capture.containers:
        capture.raw.containers.append(RawContainer(Role.MODEL_INPUT, "input", flat.spec, ops))
    return flat.leaves


def record_output(capture: Any, output: Any, keep_values: bool = True) -> None:
    """Add an output op per tensor leaf of the model's return value and record its structure
    (with the leaf tensors themselves when ``keep_values``)."""
    flat = flatten(output)
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
    found: dict[int, None] = {}
    producer = _producer(capture)
    for value in (*args, *kwargs.values()) if kwargs else args:
        if isinstance(value, torch.Tensor):
            items: Any = (value,)
        elif isinstance(value, (list, tuple)):
            items = value
        elif isinstance(value, dict):
            items = value.values()
        else:
            continue
        for item in items:
            if isinstance(item, torch.Tensor):
                index = producer(item)
                if index is not None:
                    found[index] = None
    return list(found)


def call_outputs(capture: Any, out: Any) -> list[int]:
    """Op indices of every tensor leaf of a module call's return value."""
    producer = _producer(capture)
    if isinstance(out, torch.Tensor):
        index = producer(out)
        return [] if index is None else [index]
    return list(dict.fromkeys(i for i in (producer(t) for t in flatten(out).leaves) if i is not None))


def _producer(capture: Any) -> Callable[[torch.Tensor], Optional[int]]:
    """``capture.producer_of``; where every output is kept alive (``save="all"``) no tensor's id
    can be one a dead output had, so the table is read directly (the common, cheaper case)."""
    if capture.refs is None:
        table = capture.producer
        return lambda tensor: table.get(id(tensor))
    return capture.producer_of


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
