"""Ownership: after a capture, nothing a trace holds is shared with anything that can still change.

Copying every saved tensor would double a trace's memory, so only what can still change is
copied (spec: buffers.txt, "Replay never mutates capture truth"):

* during the forward pass, an in-place write first copies the saved outputs sharing the
  written storage (``Capture.preserve``), and the reads of model state it is about to change
  (:meth:`Ownership.before_write`);
* at the end, every saved tensor sharing storage with the model's state (parameters,
  buffers, tensors in module attributes) or with the caller's inputs is copied, once per
  tensor (:meth:`Ownership.settle`), as is every non-produced tensor a replay reads. These
  copies are torch's copy-on-write clones where torch supports them (:func:`lazy_snapshot`):
  the trace's copy of a weight shares its memory until the weight or the copy is written,
  and the first such write (an optimizer step, ``p.data.copy_``, ``load_state_dict``) copies.

Intermediate tensors only the trace still refers to are kept as they are, uncopied.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Iterable, Optional

import torch
from torch import nn

from .buffers import storage_key, storage_keys
from .record import RawCapture, meta_of
from .replay import RecordedCall, Settlement, settle_call, substitute
from .walk import Walk

def snapshot(tensor: torch.Tensor) -> torch.Tensor:
    """A copy owned by the trace: same values, own storage, outside autograd.

    (``detach`` alone keeps the copy out of autograd: no ``no_grad`` block, whose ``__enter__``
    an interrupt could leave half done with grad mode off.)
    """
    return tensor.detach().clone()


#: torch's copy-on-write clone (private, torch >= 2.3); ``None`` when this torch lacks it.
_lazy_clone: Optional[Callable[[torch.Tensor], torch.Tensor]] = getattr(torch, "_lazy_clone", None)
#: The tensor types :func:`lazy_snapshot` clones lazily (no subclass: its own storage rules).
_PLAIN = (torch.Tensor, nn.Parameter)
_STRIDED = torch.strided


def lazy_snapshot(tensor: torch.Tensor) -> torch.Tensor:
    """:func:`snapshot`, made lazily when it can be: a copy-on-write clone, which shares the
    tensor's memory until either of them is written through torch; the first write copies.

    Only for a plain, contiguous CPU or CUDA tensor that spans its whole storage (a weight,
    a buffer, a whole input): a clone of a slice would keep the whole storage once the other
    side is written, and torch's clone does not support every kind of tensor (it crashes on
    quantized ones and refuses storages with their own deleter, such as shared memory).
    Memory written behind torch's back (through a NumPy array made from the tensor before
    the trace) reaches such a copy too.

    The clone is made of ``tensor.data``, which keeps it out of autograd as ``detach()`` would,
    at about 1 us less a tensor (a capture clones every parameter the forward pass read); the
    version counter ``data`` does not share is the clone's own anyway.
    """
    if (_lazy_clone is not None and type(tensor) in _PLAIN and tensor.layout is _STRIDED
            and (tensor.is_cpu or tensor.is_cuda) and not tensor.is_quantized
            and tensor.storage_offset() == 0 and tensor.is_contiguous()
            and tensor.nbytes == tensor.untyped_storage().nbytes()):
        try:
            return _lazy_clone(tensor.data)
        except RuntimeError:  # a storage with its own deleter: copied now
            pass
    return snapshot(tensor)


class Ownership:
    """Makes one capture's saved tensors the trace's own."""

    def __init__(self, model: Walk, inputs: Iterable[torch.Tensor]) -> None:
        """``model``: :func:`capture.walk.walk` of the model as the forward pass starts."""
        #: Storages of the model state and the inputs as the forward pass starts, and the same
        #: without registered buffers: the storages a call can read as a plain tensor (a buffer
        #: is read through its journaled versions), so :meth:`before_write` looks.
        self.readable = model.readable | set(map(storage_key, inputs))
        self.state = self.readable | model.buffer_storages
        #: Storage -> how many recorded ops :meth:`before_write` has looked through for it.
        self._scanned: dict[int, int] = {}
        self._copies: dict[int, torch.Tensor] = {}
        #: The tensor an in-place op is about to write (model state) and its value before.
        self._pending: Optional[tuple[torch.Tensor, torch.Tensor]] = None

    def own(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` itself, or its snapshot (one per tensor) when it shares state storage."""
        return self._copy(tensor) if storage_key(tensor) in self.state else tensor

    def _copy(self, tensor: torch.Tensor) -> torch.Tensor:
        copy = self._copies.get(id(tensor))
        if copy is None:
            copy = self._copies[id(tensor)] = lazy_snapshot(tensor)
            self._copies[id(copy)] = copy
        return copy

    def before_write(self, raw: RawCapture, target: torch.Tensor, key: int, inplace: bool) -> None:
        """``target`` (storage ``key``) is about to be written. When it is model state (a
        parameter updated inside ``forward``, e.g. an EMA), copy the reads of it that replays
        keep, and, for an ``inplace`` op, its value for the writing call (:meth:`after_write`)."""
        self._pending = None
        if key not in self.readable:
            return
        if inplace:
            self._pending = (target, snapshot(target))
            self._copies[id(self._pending[1])] = self._pending[1]
        copies: dict[int, torch.Tensor] = {}

        def copy(tensor: torch.Tensor) -> torch.Tensor:
            if id(tensor) not in copies:
                copies[id(tensor)] = snapshot(tensor)
                self._copies[id(copies[id(tensor)])] = copies[id(tensor)]
            return copies[id(tensor)]

        # Reads before the last write to this storage were copied then: look at the newer ops.
        start, self._scanned[key] = self._scanned.get(key, 0), len(raw.ops)
        for op in raw.ops[start:]:
            call = op.replay
            if call is not None and -1 in call.sources and any(_reads(call, key)):
                op.replay = _frozen(call, key, copy)

    def after_write(self, raw: RawCapture, writer: int) -> None:
        """The in-place op ``writer`` was recorded: it replays from the value it overwrote."""
        if self._pending is None:
            return
        target, before = self._pending
        self._pending = None
        call = raw.ops[writer].replay
        if call is not None:
            frozen = _frozen(call, storage_key(target), lambda t: before if t is target else snapshot(t))
            for op in raw.ops[writer::-1]:
                if op.replay is not call:
                    break
                op.replay = frozen

    def settle(self, raw: RawCapture, replayable: bool, model: Walk, settlement: Settlement) -> None:
        """Copy what can still change; keep replay arguments only when the trace can replay.

        ``model``: :func:`capture.walk.walk` of the model as the forward pass ended (what it
        holds now, reassigned during the forward pass or not); ``settlement``: the capture's,
        for the calls still pending."""
        state = self.state
        state |= model.readable
        state |= model.buffer_storages
        saved = [op for op in raw.ops if op.out is not None]
        keys = storage_keys([op.out for op in saved])
        if not state.isdisjoint(keys):  # some output shares a storage with the state: copy those
            for op, key in zip(saved, keys):
                if key in state:
                    op.meta = op.meta or meta_of(op.out)
                    op.out = self._copy(op.out)
        own = self.own
        for root in raw.containers:
            if root.values is not None:
                root.values = tuple(map(own, root.values))
        if raw.buffer_values:
            raw.buffer_values = {a: (own(first), own(last)) for a, (first, last) in raw.buffer_values.items()}
        if not replayable:
            for op in raw.ops:
                op.replay = None
            return
        # Each tensor a pending call reads that no op produced gets its copy now; the call is
        # built with it when first read (:func:`capture.replay.make_call`).
        settlement.owned = ({key: self._copy(tensor) for key, tensor in settlement.foreign.items()}
                            if settlement.foreign else {})
        # A call built during the forward pass (one with an aliased read or several outputs, or
        # frozen by a write) is settled now; one that reads no tensor but the ops' outputs is
        # kept as it is (``settle_call``).
        settled: dict[int, Any] = {}
        for op in raw.ops if settlement.early else ():
            call = op._replay
            if type(call) is RecordedCall and -1 in call.sources:
                if id(call) not in settled:
                    settled[id(call)] = settle_call(call, self._copy, settlement.shared)
                op.replay = settled[id(call)]


def _reads(call: RecordedCall, key: int) -> list[bool]:
    found: list[bool] = []

    def check(k: int, tensor: Any) -> Any:
        found.append(call.sources[k] == -1 and isinstance(tensor, torch.Tensor) and storage_key(tensor) == key)
        return tensor

    substitute(call.args, call.kwargs, check)
    return found


def _frozen(call: RecordedCall, key: int, copy: Callable[[torch.Tensor], torch.Tensor]) -> RecordedCall:
    def freeze(k: int, tensor: Any) -> Any:
        hit = call.sources[k] == -1 and isinstance(tensor, torch.Tensor) and storage_key(tensor) == key
        return copy(tensor) if hit else tensor

    args, kwargs = substitute(call.args, call.kwargs, freeze)
    return replace(call, args=args, kwargs=kwargs)
