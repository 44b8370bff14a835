"""Registered buffers as versioned state: journal every read and write during a capture.

A buffer read or write is not a compute op. Each observed buffer *version* becomes one
``RawOp`` of kind :data:`BUFFER` (spec: buffers.txt), with edges
``producer -> version -> reader``:

* the starting value, captured before the forward pass, is version 1 (created when the
  buffer is first read or written);
* reassignment ``self.h = t`` (journaled through torch's buffer-registration hook);
* explicit in-place writes (``add_``, ``copy_``, ``buf[...] = v``, ``buf.data.copy_(v)``),
  attributed to the buffer whose storage the written tensor shares (views and slices too);
* fused native writes (BatchNorm/InstanceNorm running statistics), compared by value
  because those kernels may not bump ``_version``.

``buf.data = t`` bypasses all of these; :meth:`BufferJournal.finish` detects it and raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol

import torch
from torch import nn

from torchlens.analysis.errors import BufferWriteError

from .named import NamedEnum
from .record import BUFFER, RawCapture, RawOp


class WriteKind(NamedEnum):
    """How a buffer version was written, as ``Op.buffer_write_kind`` reports it (spec: buffers.txt)."""

    #: ``self.b = tensor``: the attribute now holds another tensor.
    REASSIGN = "reassign"
    #: An in-place op on the buffer (``self.b.add_(1)``, ``self.b[0] = 1``).
    INPLACE = "inplace"
    #: A fused native kernel updated it (BatchNorm's running statistics in training).
    FUSED = "fused"


#: Ops whose kernels update running statistics in place -> index of their training flag.
FUSED_MUTATORS = {"batch_norm": 5, "instance_norm": 5}


@dataclass(frozen=True, slots=True)
class BufferVersion:
    """What makes an op a buffer version: which buffer, which version, how it was written.

    The capture records it on the buffer-version ``RawOp``; the trace's ``Op.buffer`` is the
    same object.
    """

    #: The buffer's address (``bn.running_mean``).
    address: str
    #: 1-based observed version (``trace["bn.running_mean:2"]`` is version 2).
    version: int
    #: ``None`` for the starting value.
    write_kind: Optional[WriteKind]
    #: Whether the write changed the value (``None`` for the starting value, and on the meta
    #: device, where there are no values to compare).
    value_changed: Optional[bool]
    #: The write was through a slice: the writing op's output is only part of the buffer, so
    #: replay checks the state transition only.
    transition_only: bool = False
    #: Index (in capture order) of the op that wrote it (in-place and fused writes), else -1.
    writer: int = field(default=-1, repr=False, compare=False)
    #: For reassignment: ``(scope, site)`` of the assignment statement, which groups it.
    place: Any = field(default=None, repr=False, compare=False)


class JournalTarget(Protocol):
    """What the journal writes into: the capture (:class:`capture.session.Capture`), which owns
    the journal; the journal knows it only through this interface."""

    raw: RawCapture
    #: ``id(module)`` -> index into ``raw.modules``.
    module_index: dict[int, int]

    def add_op(self, op: RawOp) -> int: ...

    def preserve(self, target: Any, inplace: bool = False) -> None: ...

    def producer_of(self, tensor: torch.Tensor) -> Optional[int]: ...

    def set_producer(self, tensor: torch.Tensor, index: int) -> None: ...


class BufferJournal:
    """Tracks the model's registered buffers through one capture."""

    def __init__(self, capture: JournalTarget, buffers: list[tuple[str, nn.Module, str, torch.Tensor]]) -> None:
        """``buffers``: the model's (address, owning module, attribute, tensor), as
        :attr:`capture.walk.Walk.buffers` lists them."""
        self.capture = capture
        #: Address -> (owning module, attribute name); each tensor once, at its first address.
        self.owner: dict[str, tuple[nn.Module, str]] = {}
        self.current: dict[str, torch.Tensor] = {}
        self._address_at: dict[tuple[int, str], str] = {}
        #: ``id(tensor)`` -> address, for the tensor each buffer holds now.
        self.address_of: dict[int, str] = {}
        self.storage_of: dict[int, str] = {}
        #: Values before the forward pass.
        self.initial: dict[str, torch.Tensor] = {}
        self.versions: dict[str, list[int]] = {}
        for address, module, attr, tensor in buffers:
            self.owner[address] = (module, attr)
            self.current[address] = tensor
            self._address_at[id(module), attr] = address
            self.address_of[id(tensor)] = address
            self.storage_of[storage_key(tensor)] = address
            self.initial[address] = tensor.detach().clone()

    # -- reads -----------------------------------------------------------------------------

    def read(self, tensor: torch.Tensor) -> Optional[int]:
        """Op index of the version a buffer tensor read now is, or ``None`` if not a buffer."""
        address = self.address_of.get(id(tensor))
        if address is None:
            return None
        versions = self.versions.get(address)
        return versions[-1] if versions else self._starting_value(address)

    def _starting_value(self, address: str) -> int:
        return self._add(address, BufferVersion(address, 1, None, None), self.initial[address], [])

    # -- writes ----------------------------------------------------------------------------

    def after_inplace(self, writer: int, target: Any) -> None:
        """Journal an in-place op that may have written a buffer's storage."""
        if not isinstance(target, torch.Tensor):
            return
        address = self.storage_of.get(storage_key(target))
        if address is not None:
            buffer = self.current[address]
            sliced = target.shape != buffer.shape or target.storage_offset() != buffer.storage_offset()
            self._write(address, WriteKind.INPLACE, buffer, writer, transition_only=sliced)

    def before_fused(self, name: str, args: tuple) -> list[tuple[str, torch.Tensor]]:
        """Snapshot the buffers a fused mutator is about to update."""
        if name not in FUSED_MUTATORS:
            return []
        found = []
        for arg in args:
            address = self.address_of.get(id(arg)) if isinstance(arg, torch.Tensor) else None
            if address is not None:
                self.capture.preserve(arg)
                found.append((address, arg.detach().clone()))
        return found

    def after_fused(self, name: str, args: tuple, writer: int, before: list[tuple[str, torch.Tensor]]) -> None:
        """Emit a fused version for each snapshotted buffer the op updated (or was asked to)."""
        flag = FUSED_MUTATORS[name]
        training = bool(args[flag]) if len(args) > flag else False
        for address, old in before:
            changed = _changed(old, self.current[address])
            # Without values (meta tensors), a training-mode kernel is taken to have updated.
            if changed or training:
                self._write(address, WriteKind.FUSED, self.current[address], writer, changed=changed)

    def reassign(self, module: nn.Module, name: str, value: Any, place: Any) -> None:
        """Journal ``module.name = value`` for a registered buffer ``name``."""
        address = self._address_at.get((id(module), name))
        if address is None or not isinstance(value, torch.Tensor):
            return
        old = self.current[address]
        del self.storage_of[storage_key(old)]
        self.address_of.pop(id(old), None)
        self.current[address] = value
        self.address_of[id(value)] = address
        self.storage_of[storage_key(value)] = address
        producer = self.capture.producer_of(value)
        self._write(address, WriteKind.REASSIGN, value, -1, parents=[] if producer is None else [producer], place=place)

    def _write(self, address: str, kind: WriteKind, value: torch.Tensor, writer: int, *, parents: Optional[list] = None,
               changed: Optional[bool] = None, place: Any = None, transition_only: bool = False) -> None:
        versions = self.versions.get(address) or [self._starting_value(address)]
        if changed is None:
            old = self.capture.raw.ops[versions[-1]].out
            changed = True if old is None else _changed(old, value)
        info = BufferVersion(address, len(versions) + 1, kind, changed, transition_only, writer, place)
        self._add(address, info, value, [writer] if parents is None else parents)

    def _add(self, address: str, info: BufferVersion, value: torch.Tensor, parents: list[int]) -> int:
        capture = self.capture
        scope = capture.module_index[id(self.owner[address][0])]
        index = capture.add_op(RawOp(BUFFER, BUFFER.value, scope, -1, 0, None, "", value, tuple(value.shape), value.dtype,
                                     parents, (), buffer=info))
        capture.set_producer(self.current[address], index)
        self.versions.setdefault(address, []).append(index)
        return index

    # -- end of capture --------------------------------------------------------------------

    def finish(self) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """Check nothing bypassed the journal; return ``address -> (initial, final)`` values.

        The final value of a buffer no write reached is its starting snapshot; a written one's
        is the live tensor, which the capture's ownership step copies once for the trace."""
        if not self.current:  # a model without buffers
            return {}
        for address, (module, attr) in self.owner.items():
            now = module._buffers.get(attr)
            if now is not self.current[address] or storage_key(now) not in self.storage_of:
                raise BufferWriteError(
                    f"registered buffer `{address}` changed during the forward pass without a write "
                    "torchlens can record (assigning through `.data = tensor` bypasses module "
                    f"reassignment and in-place ops); write `self.{attr} = tensor` or "
                    f"`self.{attr}.copy_(tensor)` instead"
                )
        written = {a for a, versions in self.versions.items() if len(versions) > 1}
        return {a: (self.initial[a], self.current[a] if a in written else self.initial[a]) for a in self.current}


def _changed(old: torch.Tensor, new: torch.Tensor) -> Optional[bool]:
    """Whether a buffer's value changed; ``None`` when there are no values to compare (meta)."""
    if old.device.type == "meta" or new.device.type == "meta":
        return None
    return not torch.equal(old, new)


def _untyped_storage_address(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage()._cdata


#: The address of a tensor's storage object: torch's own reader where this torch has it.
_storage_address: Callable[[torch.Tensor], int] = getattr(torch._C, "_storage_address", _untyped_storage_address)


def storage_key(tensor: torch.Tensor) -> int:
    """Which storage a tensor uses: equal for a tensor and all its views. The storage object's
    own identity (``untyped_storage()._cdata``, read without building the storage's Python
    object), not its data pointer, which is 0 for every storage on the meta device."""
    try:
        return _storage_address(tensor)
    except (RuntimeError, NotImplementedError):  # sparse, meta or functional tensors
        return -id(tensor)


def storage_keys(tensors: list[torch.Tensor]) -> list[int]:
    """:func:`storage_key` of each tensor (in one C loop where no tensor needs the fallback)."""
    try:
        return list(map(_storage_address, tensors))
    except (RuntimeError, NotImplementedError):
        return [storage_key(tensor) for tensor in tensors]
