"""What a trace holds in memory: ``trace.nbytes`` and the memory line of ``print(trace)``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import torch

from torchlens.capture.buffers import storage_key
from torchlens.capture.replay import tensor_args

if TYPE_CHECKING:
    from .trace import Trace


def held_tensors(trace: "Trace") -> Iterator[torch.Tensor]:
    """Every tensor the trace keeps: op outputs, buffer values, the replay records' arguments
    and snapshots, and the random states. The model's parameters are the model's, not counted."""
    for op in trace.ops:
        if op.out is not None:
            yield op.out
        call = op._replay
        if call is not None:
            yield from (t for t in tensor_args(call.args, call.kwargs)
                        if isinstance(t, torch.Tensor) and not isinstance(t, torch.nn.Parameter))
            yield from call.snapshots.values()
    for buffer in trace.buffers.values():
        yield from (v for v in (buffer.initial_value, buffer.final_value) if isinstance(v, torch.Tensor))
    state = trace._state
    if state is not None:
        yield state.rng
        yield from state.cuda_rng or ()


def nbytes(trace: "Trace") -> int:
    """Bytes of the distinct storages :func:`held_tensors` reaches (meta tensors hold none); a
    JAX array (a JAX trace's outputs) counts its own ``nbytes``, each array once."""
    seen: dict[Any, int] = {}
    for tensor in held_tensors(trace):
        if not isinstance(tensor, torch.Tensor):
            seen[("array", id(tensor))] = tensor.nbytes
            continue
        if tensor.device.type == "meta" or tensor.layout != torch.strided:
            continue
        storage = tensor.untyped_storage()
        seen[(tensor.device, storage_key(tensor))] = storage.nbytes()
    return sum(seen.values())


def memory_line(trace: "Trace") -> str:
    """``memory: 1.3 MB held; 102 of 102 op outputs saved``, with the part held as
    copy-on-write copies of the model's tensors (``capture.snapshots.lazy_snapshot``) when
    there is one: those take memory of their own only once the model's tensor or the copy
    is written."""
    saved = sum(op.out is not None for op in trace.ops)
    lazy = sum(_lazy_bytes(trace))
    shared = f" ({_size(lazy)} of it copy-on-write copies of model tensors)" if lazy else ""
    return f"memory: {_size(nbytes(trace))} held{shared}; {saved} of {len(trace.ops)} op outputs saved"


def _lazy_bytes(trace: "Trace") -> Iterator[int]:
    is_cow = getattr(torch._C, "_is_cow_tensor", None)
    if is_cow is None:
        return
    seen: set[Any] = set()
    for tensor in held_tensors(trace):
        if not isinstance(tensor, torch.Tensor):  # a JAX trace's arrays
            continue
        key = (tensor.device, storage_key(tensor))
        if key not in seen and tensor.device.type != "meta" and tensor.layout == torch.strided and is_cow(tensor):
            seen.add(key)
            yield tensor.untyped_storage().nbytes()


def _size(n: int) -> str:
    value, unit = float(n), "B"
    for bigger in ("KB", "MB", "GB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
