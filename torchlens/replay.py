"""Re-executing recorded torch calls from a trace's own snapshots.

The shared engine of ``validate_forward_pass`` (re-run every op and compare) and
``trace.do`` (re-run the cone of effect of an edit). An op's recorded call is run again with
each tensor argument taken from the current value of the op that produced it (a buffer
version included); parameters and constants come from the trace's snapshots. Calls that
write their arguments (in-place ops, fused running-statistics updates) run on copies, so a
replay never writes into a saved value, a replayed value or a user's edit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from torchlens.capture.buffers import FUSED_MUTATORS
from torchlens.capture.funcs import is_inplace
from torchlens.capture.replay import Aliased, substitute

from .errors import InterventionError

if TYPE_CHECKING:
    from .records import Op
    from .trace import Trace


class Reexecution:
    """Re-runs a trace's recorded calls over ``values`` (one value per op, capture order)."""

    def __init__(self, trace: "Trace", values: list[Any]) -> None:
        self.ops = trace.ops
        self.position = {op.label: i for i, op in enumerate(trace.ops)}
        self.values = values
        #: ``id(recorded call)`` -> (its result, op index -> the copy a writing call wrote).
        self.results: dict[int, tuple[Any, dict[int, torch.Tensor]]] = {}
        #: The modes each call ran under (autocast, grad mode, default dtype), and which of
        #: them are in force now (the starting ones, set by ``GlobalState.restored``).
        self.modes = trace._state.modes if trace._state is not None else ()
        self.applied = 0

    @staticmethod
    def written_through_view(op: "Op") -> bool:
        """Whether ``op`` is a model output whose storage an op wrote through another alias
        (``y.view(-1).add_(1); return y``): its parents are the op whose output it is and that
        writer (``Capture.add_boundary``), and no replayed value is exactly it, since replays
        write into copies."""
        return op.layer.is_output and len(op.parents) == 2

    def parent(self, op: "Op") -> int:
        """Index of the op's first parent (an output's producer, a version's writer), or -1."""
        return self.position[op.parents[0]] if op.parents else -1

    def call(self, op: "Op") -> Any:
        """Run the op's recorded call (once for all its output slots) and return its slot."""
        call = op._replay
        if call is None:
            raise InterventionError(
                f"{op.label} ({op.func_name}) has no replay record: the trace was captured with "
                "CaptureOptions(save_outputs=False) or loaded from a file whose calls could not be "
                "named; trace the model again with the default options to replay it"
            )
        entry = self.results.get(id(call))
        if entry is None:
            writes = is_inplace(op.func_name) or op.func_name in FUSED_MUTATORS
            copies: dict[int, torch.Tensor] = {}

            def replace(k: int, tensor: Any) -> Any:
                source = call.sources[k]
                if isinstance(source, Aliased):
                    return call.snapshots[k].clone()
                if source < 0:  # a parameter or constant: the trace's snapshot
                    return tensor.clone() if writes else tensor
                value = self.values[source]
                if writes:  # never write into a saved, replayed or edited value
                    value = copies[source] = value.clone()
                return value

            args, kwargs = substitute(call.args, call.kwargs, replace)
            if call.modes != self.applied:
                self.modes[call.modes].apply()
                self.applied = call.modes
            result = call.func(*args, **kwargs)
            if result is None and writes:
                result = args[0]
            entry = self.results[id(call)] = (result, copies)
        result = entry[0]
        slot = op.graph.site_key[2]
        return result[slot] if isinstance(result, (tuple, list)) else result

    def written_copy(self, writer: int, previous: int) -> Any:
        """What the writing call ``writer`` left in its copy of op ``previous``'s value (the
        new running statistics of a fused update), or ``None``."""
        entry = self.results.get(id(self.ops[writer]._replay))
        return None if entry is None else entry[1].get(previous)
