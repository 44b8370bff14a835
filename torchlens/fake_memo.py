"""What ops gave on fake tensors, kept from one prediction to the next, keyed exactly.

A warm prediction runs the same ops on fakes of the same metadata as the last one; torch's
fake-tensor dispatch costs ~150 us an op (GPT-2 small: 625 ops, about half a warm
prediction). :class:`OpMemo` gives back what the op gave last time instead, when all of these
hold, else the op runs on the fake mode as before:

- **The key is exact.** The op is a callable torch implements in C (or a view property by
  name): its result depends only on its arguments and on torch's global state; or torch's
  own Python reached through its dispatcher (``Tensor.split``), without a closure, keyed
  also by its code and defaults (torch's Python, like the fake mode's own, is taken as fixed
  for the process; any other Python could have been changed since, and is not kept). Each tensor argument is a fake of this mode,
  keyed by everything its output can depend on (:func:`tensor_key`: shape, strides, storage
  offset, dtype, device, layout, ``requires_grad``, leaf, view, conjugate, negative and
  inference bits, and for a view its base's ``requires_grad`` and leaf bit), and by the
  value of its constant if it has one (:func:`_constant_key`);
  every other argument is a plain value keyed by its type and value (ints, floats by their
  bits, strings, ``None``, dtypes, devices, slices, tuples and lists of those). Anything else
  (a live tensor, a generator, an object, a dict) is not keyable and the op runs. The
  global state is part of the key (grad mode, inference mode, default dtype), and nothing
  is kept or given while autocast or any other torch mode is active.
- **The op changed nothing.** An op that wrote into or changed any of its tensor arguments
  (version counter, metadata) is never kept: in-place ops always run.
- **What is given back is the op's own result, unchanged, and given once per prediction.**
  The k-th call with a key in a prediction gets the tensors the k-th call with that key
  made before (two calls never share a tensor, as two real calls never do); an output that
  was one of the op's arguments is that argument now; an output that shares storage with an
  argument (a view) is given only if it shares storage with the same argument now; every
  output must still have all the metadata it was made with (:func:`tensor_key`, its storage
  and constant): changed since by an in-place op, it is made again. Views made together
  (``unbind``, ``split``, ``chunk``) are given only while nothing was written into them or their
  base since (their version): torch refuses to read one after that. A query's answer (a
  ``torch.Size``, an int) is an immutable value; an op that could not run on fakes
  is :data:`UNKNOWN` again, one that raised for certain its :class:`Raises`.

Fakes change only when an op runs on them. So the memo keeps an **epoch** that moves whenever
a run may have changed one (a keyed op that changed an argument; any op run without a key,
so unchecked), and what was read of a fake stays true while the epoch stays: a kept output
is read again only when the epoch moved since it was last read, and each fake's metadata is
read once per epoch (:meth:`OpMemo.known`, kept from one prediction to the next while the
epoch stays).

Bounded: at most :data:`KEYS` keys (least recently used forgotten first), :data:`PER_KEY`
calls per key. One memo per fake mode (the kept fakes of a thread: when they are dropped,
so is the memo).
"""

from __future__ import annotations

import itertools
import types
from collections import OrderedDict
from typing import Any, NamedTuple, Optional

import torch
from torch._subclasses.fake_tensor import FakeTensor

from .fake_composite import as_strided
from .fake_direct import fresh

__all__ = ["OpMemo", "UNKNOWN", "Raises", "MISS", "KEYS", "PER_KEY", "tensor_key"]

#: Keys kept at most, and calls kept per key.
KEYS, PER_KEY = 4096, 256
#: Distinct fake metadata numbered at most before the numbering starts afresh (:meth:`OpMemo.token`).
TOKENS = 1 << 16
#: Fakes whose metadata is kept read at most (:meth:`OpMemo.known`).
KNOWN = 1 << 14
#: What the op gives is not known: it could not run on fakes (its output depends on data, or
#: fakes do not support it). An op that raises for certain is a :class:`Raises` instead.
UNKNOWN = object()


class Raises(NamedTuple):
    """The op raises for certain with these arguments (their shapes do not fit it)."""

    #: What it raises: ``RuntimeError: shape '[5, 7]' is invalid for input of size 12``.
    error: str

#: Nothing kept for this call: run the op.
MISS = object()

#: Callables whose result is decided by their arguments alone (torch's C functions and methods).
_C_CALLABLES = (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType,
                types.ClassMethodDescriptorType, torch._ops.OpOverloadPacket)
#: Argument types keyed by value.
_PLAIN = frozenset({int, bool, str, type(None), type(Ellipsis), torch.dtype, torch.device, torch.memory_format,
                    torch.layout})
#: Results kept by value (immutable).
_IMMUTABLE = frozenset({int, float, bool, str, type(None), Raises, torch.Size, torch.dtype, torch.device, torch.layout,
                        torch.memory_format})


#: torch's global state a key holds, read through torch's C functions themselves (no module
#: attribute lookups per op).
_function_modes, _dispatch_modes = torch._C._len_torch_function_stack, torch._C._len_torch_dispatch_stack
_autocast, _grad_enabled = torch._C._is_any_autocast_enabled, torch.is_grad_enabled
_inference_mode, _default_dtype = torch.is_inference_mode_enabled, torch.get_default_dtype
_STRIDED = torch.strided


#: A :func:`_stamp`'s constant where the tensor has none.
_NO_CONSTANT = id(None)


class _Unkeyable(Exception):
    """An argument the key cannot hold exactly."""


def tensor_key(t: Any) -> tuple:
    """All of a fake's metadata an op's output (or whether it raises) can depend on."""
    view = t._is_view()
    base = t._base if view else None
    return (t.shape, t.stride(), t.storage_offset(), t.dtype, t.fake_device, t.layout, t.requires_grad, t.is_leaf,
            view, t.is_conj(), t.is_neg(), t.is_inference(),
            (base.requires_grad, base.is_leaf) if base is not None else None)


def _op_key(fn: Any) -> Any:
    """The op as the key holds it, or ``None`` when what it does could have changed."""
    if type(fn) is str:
        return fn
    if isinstance(fn, _C_CALLABLES):
        return None if isinstance(getattr(fn, "__self__", None), torch.Tensor) else fn
    if type(fn) is types.FunctionType and fn.__closure__ is None and (fn.__module__ or "").startswith("torch."):
        kwdefaults = fn.__kwdefaults__
        key = fn, fn.__code__, fn.__defaults__, None if kwdefaults is None else tuple(kwdefaults.items())
        try:
            hash(key)
        except TypeError:  # a default the key cannot hold
            return None
        return key
    return None


def _constant_key(constant: torch.Tensor) -> tuple:
    """A fake's constant (the fake mode keeps one for tensors of at most one element, made from
    data: ``torch.tensor(0.5)``) by its value: its metadata and its element, a float by its bits."""
    if type(constant) is not torch.Tensor or constant.numel() > 1 or constant.layout is not torch.strided:
        raise _Unkeyable
    value: Any = constant.item() if constant.numel() else None
    if isinstance(value, float):
        value = value.hex()
    elif isinstance(value, complex):
        value = value.real.hex(), value.imag.hex()
    return (constant.shape, constant.stride(), constant.storage_offset(), constant.dtype, constant.device,
            constant.requires_grad, constant.is_conj(), constant.is_neg(), value)


def _stamp(t: Any) -> tuple:
    """A kept output's metadata, its storage and its constant (by identity, with its version)."""
    constant = t.constant
    return (tensor_key(t), t.untyped_storage()._cdata, id(constant), None if constant is None else constant._version)


def _unwritten(t: Any) -> bool:
    """Nothing written into ``t`` since it was made (an inference tensor keeps no version)."""
    return not t.is_inference() and t._version == 0


def _changes(t: Any) -> tuple:
    """What an op that writes into or changes ``t`` changes."""
    return tensor_key(t), t.untyped_storage()._cdata, None if t.is_inference() else t._version


class _Made:
    """A tensor the op made: given again while :func:`_stamp` is unchanged (read again only
    when the memo's epoch moved since it was last read), and (a view: ``alias`` is the index of
    the argument it shares storage with) while it shares storage with that argument.
    ``version``: of a view made together with others (unbind, split, chunk), given again only
    while its version is the same, nothing written into it, its base or another view of its base
    since it was made (torch refuses to read such a view after that; a fresh one it reads).
    ``base``: of a view of a tensor the op made (not an argument: ``linear`` of a 3-d input
    views its ``addmm``), that tensor, its :func:`_stamp` and whether the op made it unwritten;
    such a view is never given again, only made again like it (:meth:`OpMemo.like`).
    ``unwritten``: the op gave the tensor with version 0, as a fresh tensor has it (``linear``
    of a 4-d input writes its bias into its ``matmul`` in place: version 1)."""

    __slots__ = ("tensor", "stamp", "token", "alias", "constant", "epoch", "version", "base", "unwritten")

    def __init__(self, tensor: Any, stamp: tuple, alias: Optional[int], epoch: int, together: bool, token: int,
                 base: Any = None) -> None:
        self.token = token  # its tensor_key's number (OpMemo.token)
        self.tensor, self.stamp, self.alias, self.epoch = tensor, stamp, alias, epoch
        self.version = tensor._version if together and not tensor.is_inference() else None
        self.constant = tensor.constant  # kept alive: its id is in the stamp
        self.unwritten = _unwritten(tensor)
        self.base = None if base is None else (base, _stamp(base), _unwritten(base))

    def again(self, inputs: list, epoch: int, known: dict) -> Any:
        tensor = self.tensor
        if self.base is not None:
            return MISS
        if self.epoch != epoch:
            if self.version is not None and tensor._version != self.version or _stamp(tensor) != self.stamp:
                return MISS
            self.epoch = epoch
        if self.alias is not None and inputs[self.alias].untyped_storage()._cdata != self.stamp[1]:
            return MISS
        known[id(tensor)] = (tensor, self.token)
        return tensor


class _Outcome:
    """What one call gave: a value (:data:`UNKNOWN` and :class:`Raises` too), or tensors (``kind``
    ``None``: one tensor; else the tuple, list or ``torch.return_types`` type holding them), each
    a :class:`_Made` or the index of the argument returned."""

    __slots__ = ("kind", "parts", "value")

    def __init__(self, kind: Optional[type], parts: tuple, value: Any) -> None:
        self.kind, self.parts, self.value = kind, parts, value

    def again(self, inputs: list, epoch: int, known: dict) -> Any:
        if not self.parts:
            return self.value
        out = []
        for part in self.parts:
            tensor = inputs[part] if type(part) is int else part.again(inputs, epoch, known)
            if tensor is MISS:
                return MISS
            out.append(tensor)
        return out[0] if self.kind is None else self.kind(out)


class OpMemo:
    """What each keyed call of an op on fakes of ``mode`` gave (see the module's docstring)."""

    def __init__(self, mode: Any) -> None:
        self.mode = mode
        self._entries: OrderedDict[tuple, list[Optional[_Outcome]]] = OrderedDict()
        #: Moves whenever an op run on fakes of the mode may have changed one (wrote into an
        #: argument, or was not keyed, so not checked): what was read of a fake before holds
        #: while it stays.
        self.epoch = 0
        self._known: dict[int, tuple[Any, int]] = {}
        self._known_epoch = 0
        #: A number for each distinct :func:`tensor_key` (see :meth:`token`).
        self._tokens: dict[tuple, int] = {}
        self._numbers = itertools.count()

    def known(self) -> dict[int, tuple[Any, int]]:
        """``id(fake)`` -> (it, its :func:`tensor_key`'s number), read at the current epoch:
        what :meth:`key` and :meth:`get` fill and read (emptied when the epoch moves, or past
        :data:`KNOWN` fakes)."""
        if self._known_epoch != self.epoch or len(self._known) > KNOWN:
            self._known, self._known_epoch = {}, self.epoch
        return self._known

    def token(self, metadata: tuple) -> int:
        """The number standing for a fake's :func:`tensor_key` in keys (a short flat key hashes
        and compares at C speed). No number is given to two metadata: a full table starts
        afresh with new numbers, and keys holding old ones match nothing again (they are
        forgotten as the least recently used)."""
        tokens = self._tokens
        token = tokens.get(metadata)
        if token is None:
            if len(tokens) >= TOKENS:
                tokens.clear()
            token = tokens[metadata] = next(self._numbers)
        return token

    def changed(self) -> None:
        """An op ran on fakes of the mode without being checked: any fake may have changed."""
        self.epoch += 1

    def key(self, fn: Any, args: list, kwargs: dict, known: dict) -> tuple[Optional[tuple], list]:
        """The call's key (``None``: not keyable, or torch's state forbids) and its tensor
        arguments; ``known``: ``id(fake)`` -> (it, its :func:`tensor_key`'s number) read at this epoch.

        The key is flat: the op, torch's state, then each argument (keywords after their
        name) as its type followed by what that type holds (a sequence: its length, then its
        items), so that no two calls that could differ share a key."""
        inputs: list = []
        op = _op_key(fn)
        if op is None:
            return None, inputs
        if _function_modes() or _dispatch_modes() or _autocast():
            return None, inputs
        parts = [op, _grad_enabled(), _inference_mode(), _default_dtype(), len(args)]
        try:
            self._args(args, parts, inputs, known)
            for name, value in kwargs.items():
                parts.append(name)
                self._args((value,), parts, inputs, known)
        except _Unkeyable:
            return None, inputs
        return tuple(parts), inputs

    def _args(self, objs: Any, parts: list, inputs: list, known: dict) -> None:
        """Each of ``objs`` into the key, in order (one call per sequence, not per item)."""
        for obj in objs:
            kind = type(obj)
            if kind is FakeTensor:
                constant = obj.constant
                if constant is None:  # a fake read at this epoch is of the mode and strided (layouts do not change)
                    entry = known.get(id(obj))
                    if entry is not None and entry[0] is obj:
                        inputs.append(obj)
                        parts += (kind, entry[1], None)
                        continue
                if obj.fake_mode is not self.mode or obj.layout is not _STRIDED:  # sparse: no storage to compare
                    raise _Unkeyable
                inputs.append(obj)
                if constant is not None:  # (an inference tensor's writes leave no version to check)
                    if obj.is_inference():
                        raise _Unkeyable
                    parts += (kind, tensor_key(obj), _constant_key(constant))
                    continue
                entry = known[id(obj)] = (obj, self.token(tensor_key(obj)))
                parts += (kind, entry[1], None)
            elif kind in _PLAIN:
                parts += (kind, obj)
            elif kind is float:  # by its bits: -0.0 and 0.0 differ (a constant's value would)
                parts += (kind, obj.hex())
            elif kind is tuple or kind is list or kind is torch.Size:
                parts += (kind, len(obj))
                self._args(obj, parts, inputs, known)
            elif kind is slice:
                parts.append(kind)
                self._args((obj.start, obj.stop, obj.step), parts, inputs, known)
            else:
                raise _Unkeyable

    def calls(self, key: tuple) -> list[Optional[_Outcome]]:
        """What the calls with ``key`` gave, by their order in a prediction (made empty if
        none is kept)."""
        entries = self._entries
        calls = entries.get(key)
        if calls is None:
            calls = entries[key] = []
            while len(entries) > KEYS:
                entries.popitem(last=False)
        return calls

    def used(self, key: tuple) -> None:
        """``key`` is the most recently used (a prediction's first call with it)."""
        self._entries.move_to_end(key)

    def get(self, calls: list[Optional[_Outcome]], k: int, inputs: list, known: dict) -> Any:
        """What the ``k``-th call of ``calls`` in a prediction gave before, or :data:`MISS`."""
        if k >= len(calls):
            return MISS
        outcome = calls[k]
        return MISS if outcome is None else outcome.again(inputs, self.epoch, known)

    def like(self, calls: list[Optional[_Outcome]], k: int, inputs: list) -> Any:
        """A result for the ``k``-th call of ``calls`` made like what that call gave before
        (a warm prediction) or else the call before it, without dispatching the op, and kept as
        that call's (:data:`MISS` where that is not exact).

        Calls with one key give results of the same metadata, so the ``k``-th call's fresh
        tensors can be made after the earlier ``k``-th's or the ``k-1``-th's: a view of an argument as that argument
        ``as_strided`` to the view's geometry, a tensor not a view made with the metadata the earlier one
        was made with (:func:`~torchlens.fake_direct.fresh`, no dispatch), a view of a tensor the op made
        (``linear``) as such a tensor ``as_strided``: none or one dispatch
        instead of the op's whole decomposition
        (``linear`` is about a dozen, a ``view`` goes through torch's Python), which is most
        of a cold prediction of a model repeating a block (swin_s: 18 blocks of one shape).
        Only where what is made has every bit of metadata the op's own output has: its
        :func:`tensor_key` is the one the earlier output was made with (else the op runs;
        ``requires_grad``, leaf, view, base, strides, conjugate bits), and the earlier output, or the
        tensor it viewed, was made with version 0 (as what is made here is) and without a constant
        (what became of it since does not matter: it is not read). Not for views made
        together (``split``: torch treats writes into them apart). An argument returned is
        this call's argument; a value (or a raise) is the same. What is made has another
        ``grad_fn`` (``_FreshBackward``, ``AsStridedBackward0``: fakes are never run backward).
        No argument is changed (views of them are made, nothing written or resized)."""
        outcome = calls[k] if k < len(calls) else None
        if outcome is None and (not 0 < k <= len(calls) or (outcome := calls[k - 1]) is None):
            return MISS
        if not outcome.parts:
            self._keep(calls, k, outcome)
            return outcome.value
        out: list = []
        parts: list[Any] = []
        for part in outcome.parts:
            if type(part) is int:
                out.append(inputs[part])
                parts.append(part)
                continue
            if part.version is not None or part.constant is not None:
                return MISS
            made = part.stamp[0]
            copy = None
            if part.alias is not None:
                again = as_strided(self.mode, inputs[part.alias], *made[:3])
            elif part.base is not None:
                _, stamp, unwritten = part.base
                if not unwritten or (copy := self._fresh(stamp[0], inputs)) is None:
                    return MISS
                again = as_strided(self.mode, copy, *made[:3])
            elif not part.unwritten or (again := self._fresh(made, inputs)) is None:
                return MISS
            if tensor_key(again) != made or again.constant is not None:
                return MISS
            out.append(again)
            parts.append(_Made(again, (made, again.untyped_storage()._cdata, _NO_CONSTANT, None), part.alias,
                               self.epoch, False, self.token(made), copy))
        self._keep(calls, k, _Outcome(outcome.kind, tuple(parts), None))
        return out[0] if outcome.kind is None else outcome.kind(out)

    def _fresh(self, made: tuple, inputs: list) -> Any:
        """A tensor that is no view, of the :func:`tensor_key` ``made`` (of a fake the op made), as the
        op's output is (:func:`~torchlens.fake_direct.fresh`: no dispatch), or ``None``."""
        if made[2]:  # (a fresh tensor starts its storage)
            return None
        anchor = next((t for t in inputs if t.requires_grad), None)
        return fresh(self.mode, made[0], made[1], made[3], made[4], made[6], anchor)

    @staticmethod
    def before(inputs: list) -> list:
        """What the op could change in its tensor arguments, read before it runs."""
        return [_changes(t) for t in inputs]

    def put(self, calls: list[Optional[_Outcome]], k: int, result: Any, inputs: list, before: list) -> None:
        """Keep what the ``k``-th call of ``calls`` gave (``result``; :data:`UNKNOWN` if fakes
        could not compute it), if it changed none of its arguments (``before``: what
        :meth:`before` read) and can be given again exactly."""
        if any(_changes(t) != b for t, b in zip(inputs, before)):
            self.epoch += 1
            return
        self._keep(calls, k, self._outcome(result, inputs))

    @staticmethod
    def _keep(calls: list[Optional[_Outcome]], k: int, outcome: Optional[_Outcome]) -> None:
        if k < PER_KEY:
            calls.extend([None] * (k + 1 - len(calls)))
            calls[k] = outcome

    def _outcome(self, result: Any, inputs: list) -> Optional[_Outcome]:
        if result is UNKNOWN or type(result) in _IMMUTABLE:
            return _Outcome(None, (), result)
        if isinstance(result, torch.Tensor):
            part = self._part(result, inputs, False)
            return None if part is None else _Outcome(None, (part,), None)
        kind = type(result)
        if kind is tuple and result and all(type(r) in _IMMUTABLE for r in result):
            return _Outcome(None, (), result)
        if not result or not (kind is tuple or kind is list or issubclass(kind, tuple)
                              and kind.__module__ == "torch.return_types"):
            return None
        together = any(isinstance(r, torch.Tensor) and r._is_view() for r in result)  # unbind, split, chunk
        parts = tuple(self._part(r, inputs, together) if isinstance(r, torch.Tensor) else None for r in result)
        return None if any(p is None for p in parts) else _Outcome(kind, parts, None)

    def _part(self, tensor: Any, inputs: list, together: bool) -> Any:
        for at, given in enumerate(inputs):
            if tensor is given:
                return at
        if type(tensor) is not FakeTensor or tensor.fake_mode is not self.mode or tensor.layout is not torch.strided:
            return None  # sparse: no storage to compare
        storage = tensor.untyped_storage()._cdata
        alias = next((at for at, given in enumerate(inputs) if given.untyped_storage()._cdata == storage), None)
        base = None
        if alias is None and tensor._is_view():  # a view of something that is not an argument
            base = tensor._base
            if together or type(base) is not FakeTensor or base.fake_mode is not self.mode or base._is_view():
                return None
        stamp = _stamp(tensor)
        return _Made(tensor, stamp, alias, self.epoch, together, self.token(stamp[0]), base)

    def __len__(self) -> int:
        return len(self._entries)
