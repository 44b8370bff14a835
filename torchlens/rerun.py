"""``trace.run``: run the traced model again, live, and return the structure it recorded.

The model runs plainly, not through ``tl.trace``: nothing is recorded, it costs one forward
pass, and the return value is the model's own object (a ``DynamicCache`` inside it included),
so it works where ``reconstruct_output`` cannot. What the trace promises is the structure:
if this run returns a different one (other keys, a field that was ``None`` is now a tensor),
:class:`~torchlens.errors.ContainerStructureError` says where, rather than handing back
something the trace does not describe.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from torchlens.capture.containers import Node, NodeKind, flatten, path_text

from .containers import ContainerRecords
from .errors import ContainerStructureError, TorchLensValueError


def run_again(records: ContainerRecords, inputs: tuple, forward_kwargs: Optional[Mapping[str, Any]]) -> Any:
    """``model(*inputs, **kwargs)`` with the traced call's keyword arguments unless others are given."""
    if records.model is None:
        raise TorchLensValueError(
            "this trace was loaded from a file, which holds no model; run the model yourself, or "
            "trace it again with tl.trace to get a trace that can run it"
        )
    kwargs = records.forward_kwargs if forward_kwargs is None else forward_kwargs
    output = records.model(*inputs, **kwargs)
    recorded = records.output.spec
    where = _first_difference(recorded, flatten(output).spec, ())
    if where is not None:
        raise ContainerStructureError(
            f"the model returned a different structure than when it was traced, at output"
            f"{path_text(recorded, where)}; trace it again with these inputs (tl.trace) to see the new structure"
        )
    return output


def _first_difference(recorded: Node, live: Node, path: tuple) -> Optional[tuple]:
    """The first path where two spec trees differ in kind, type or keys (constants' values and
    opaque objects' insides are not compared); ``None`` when they agree."""
    if recorded.kind != live.kind or recorded.type is not live.type:
        return path
    if recorded.kind in (NodeKind.LEAF, NodeKind.CONST, NodeKind.OPAQUE):
        return None
    if recorded.keys != live.keys:
        return path
    for key, a, b in zip(recorded.keys, recorded.children, live.children):
        where = _first_difference(a, b, (*path, key))
        if where is not None:
            return where
    return None
