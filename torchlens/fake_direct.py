"""Fakes made without dispatching through torch's fake-tensor mode, where what it makes is certain.

The fake mode costs ~0.1 ms an op on its cache hit and 0.5-10 ms on an op's first call with new
metadata (``linear`` and ``layer_norm`` through their decompositions, ``cat`` through its Python
meta function, each step through the mode's cache): most of a cold prediction of a transformer
(swin_v2_b: 511 first calls, ~0.6 s of 1.3). Two things here make the same tensors without it:

- :func:`fresh`: a fake that is no view, of given metadata, made as the mode wraps its own
  outputs (the meta tensor ``empty_strided`` gives, wrapped for the fake device); one that
  requires grad through :class:`_Fresh`, an autograd function, so that it is no leaf, as an
  op's output is not. Its ``grad_fn`` is ``_FreshBackward`` (fakes are never run backward;
  ``grad_fn is None`` and ``is_leaf`` are the op's own).
- :func:`on_twins`: an op of :func:`ops` (out-of-place ops of one output whose result
  torch computes by the same meta functions on the fake mode and on meta tensors:
  elementwise ops and comparisons, ``linear``, ``matmul``, ``layer_norm``, ``softmax``, ``norm``,
  ``cat``, ``pad``, ``clone``, ``new_zeros``, views
  that keep their input's strides: ``permute``, ``transpose``, ``unsqueeze``, indexing by ints and
  slices; and ``view``, ``reshape``, ``flatten``, ``einsum``, which on meta tensors give other
  strides to size-1 dimensions than on the fake mode, run under a dispatch mode that does what
  the fake mode does: :mod:`~torchlens.fake_composite`)
  run on **meta twins** of its fake arguments (each a meta tensor of the fake's shape, strides,
  dtype and ``requires_grad``), no mode, no cache (5-10x cheaper), and its output made again
  as a fake: the argument it returned (``contiguous`` of a contiguous tensor), a view of the
  argument it viewed (``as_strided`` to the view's geometry: one dispatch, with the fake
  argument's storage offset), a view of a tensor it made (``linear`` of a 3-d input views its
  ``addmm``: that tensor :func:`fresh`, then the view), or :func:`fresh`.

  Only where nothing else could differ: every tensor argument is a fake of the mode on the
  CPU (the twins are meta, and torch's composite ops branch on the device only for other
  devices), without a constant, dense, not conjugate, negative or an inference tensor;
  every other argument a plain value (numbers, ``None``, dtypes, slices, sequences of those);
  no torch function or dispatch mode, autocast or inference mode. Anything else, and any
  raise on the twins, goes to the fake mode as before (an error is its to tell).
  ``tests/test_fake_direct.py`` compares every op of :func:`ops` with the fake mode's own
  output in everything a fake has, on many shapes, strides, dtypes and grad settings.
- :func:`live`: the fake of a plain parameter or buffer, made as the mode's conversion makes it.
- :func:`in_place`: an in-place op of :data:`_IN_PLACE` (``relu_``, ``zero_``, ``fill_``,
  ``x[i:j] = 1``, ``x += 2``) with plain values besides the tensor written: run on a meta twin
  (to see that it does not raise nor change the metadata, and how far it moves the version
  counter), then done to the fake: its version counter moved as far and, where it requires
  grad, a new history (densenet201: 201 ``relu_`` at ~0.75 ms each on the fake mode).
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from typing import Any, Optional

import torch
from torch._subclasses.fake_tensor import FakeTensor

from . import fake_composite

__all__ = ["fresh", "live", "on_twins", "in_place", "ops", "NOT_DONE"]

#: Names of the ops :func:`on_twins` runs on meta twins, looked up on ``torch.Tensor``,
#: ``torch``, ``torch._C._VariableFunctions`` (``torch.einsum`` calls its own), ``torch._C._nn`` and
#: ``torch.nn.functional``.
_NAMES = (
    # elementwise, activations
    "add", "sub", "mul", "div", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
    "__rtruediv__", "__neg__", "neg", "relu", "gelu", "silu", "sigmoid", "tanh", "exp", "hardswish", "hardsigmoid",
    "clamp", "clamp_min", "clamp_max", "masked_fill", "softmax", "log_softmax", "rsqrt", "sqrt", "abs",
    "eq", "ne", "__eq__", "__ne__",
    # products and norms
    "linear", "matmul", "__matmul__", "bmm", "mm", "layer_norm",
    # reductions
    "mean", "sum", "amax", "norm",
    # views and reshapes
    "permute", "transpose", "swapaxes", "t", "unsqueeze", "squeeze", "expand", "expand_as", "contiguous", "narrow",
    "select", "__getitem__",
    # others
    "cat", "roll", "pad", "stack", "clone", "new_zeros",
    # composites, run as the fake mode runs them (fake_composite)
    *fake_composite.NAMES,
)
#: In-place ops :func:`in_place` runs on a meta twin (looked up as :data:`_NAMES` are): their
#: only arguments besides the tensor written are plain values.
_IN_PLACE = ("relu_", "zero_", "fill_", "__setitem__", "hardswish_", "hardsigmoid_", "silu_", "hardtanh_", "relu6_",
             "sigmoid_", "tanh_", "add_", "sub_", "mul_", "div_", "__iadd__", "__isub__", "__imul__", "__itruediv__")
#: What :func:`in_place` gives where it did nothing.
NOT_DONE = object()
#: Plain argument types passed to the twins as they are.
_PLAIN = (int, float, bool, str, type(None), type(Ellipsis), slice, torch.dtype, torch.memory_format, torch.Size)
_CPU = torch.device("cpu")


@functools.lru_cache(maxsize=None)
def ops(names: tuple = _NAMES) -> frozenset:
    """The callables :func:`on_twins` runs (torch's functions and tensor methods of :data:`_NAMES`;
    ``names`` :data:`_IN_PLACE`: those :func:`in_place` runs)."""
    found = set()
    for owner in (torch.Tensor, torch, torch._C._VariableFunctions, torch._C._nn, torch.nn.functional):
        for name in names:
            fn = getattr(owner, name, None)
            if fn is not None and (owner is not torch.nn.functional or fn is getattr(torch._C._nn, name, None)
                                   or name == "pad"):
                found.add(fn)
    return frozenset(found)


class _Unsure(Exception):
    """An argument the twins cannot stand for exactly."""


#: How a view was made, as autograd keeps it: an in-place op may write into a view that requires
#: grad only where it was made alone (not by ``unbind``/``split``, not in no-grad mode).
_creation_meta, _ONE_VIEW = torch._C._autograd._get_creation_meta, torch._C._autograd.CreationMeta.DEFAULT


class _Written(torch.autograd.Function):
    """Gives a fake that requires grad the history of an in-place op on it (marked dirty: no
    leaf, a new ``grad_fn``; a view's base gets the history of a write into it, as the op's
    own), without an op."""

    @staticmethod
    def forward(ctx: Any, target: Any) -> Any:
        ctx.mark_dirty(target)
        return target

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise RuntimeError("a prediction's fake tensors are never run backward")


class _Fresh(torch.autograd.Function):
    """Makes a fake that requires grad and is no leaf (an op's output), without an op."""

    @staticmethod
    def forward(ctx: Any, anchor: Any, mode: Any, shape: Any, stride: Any, dtype: Any, device: Any) -> Any:
        return _wrapped(mode, shape, stride, dtype, device)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise RuntimeError("a prediction's fake tensors are never run backward")


@functools.lru_cache(maxsize=None)
def _unshared() -> int:
    """The use count of a storage that only its own tensor holds (as :func:`live` reads it)."""
    tensor = torch.empty(1)
    storage = tensor.untyped_storage()
    return torch._C._storage_Use_Count(storage._cdata)


def live(mode: Any, tensor: torch.Tensor) -> Any:
    """The fake of a live tensor (a parameter, a buffer, an input), made as ``mode.from_tensor``
    makes it (a leaf of the same metadata on a meta storage of the same size, marked a
    parameter if it is one, and kept in the mode's memo of converted tensors), without its
    conversion machinery (~0.2 ms a tensor: densenet201 converts 1,208); ``None`` where the
    tensor is anything but a plain dense leaf alone on its storage (or the only view of one,
    :func:`_live_view`): a view of anything else, a tensor sharing
    its storage with another (the mode's fakes of them share one), a subclass, one with a
    ``grad`` or attributes of its own, an inference, conjugate or negative tensor, a storage
    larger than the tensor, or one of at most one element (the mode reads what a 0-d integer
    tensor holds: torch 2.14 keeps its ``item()``)."""
    if tensor._is_view():
        return _live_view(mode, tensor)
    return _live(mode, tensor, 0)


def _live(mode: Any, tensor: torch.Tensor, views: int) -> Any:
    """:func:`live` of a tensor that is no view, its storage held by it and ``views`` views of it."""
    kind = type(tensor)
    if kind is not torch.Tensor and kind is not torch.nn.Parameter or not tensor.is_leaf \
            or tensor.layout is not torch.strided or tensor.is_conj() or tensor.is_neg() or tensor.is_inference() \
            or tensor.storage_offset() or tensor.numel() < 2 or tensor.grad is not None or tensor.__dict__:
        return None
    storage = tensor.untyped_storage()
    if torch._C._storage_Use_Count(storage._cdata) != _unshared() + views:
        return None
    elem = torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype, device="meta",
                               requires_grad=tensor.requires_grad)
    if elem.untyped_storage().nbytes() != storage.nbytes():
        return None
    fake = fake_composite.wrapped(mode, elem, tensor.device)
    if kind is torch.nn.Parameter:
        fake._is_param = True
    mode.fake_tensor_converter.set_tensor_memo(tensor, fake)
    return fake


def _live_view(mode: Any, view: torch.Tensor) -> Any:
    """:func:`live` of a buffer that is the only view of its base (swin's
    ``relative_position_index``, registered as a ``flatten()``: ~2 ms each through the mode's
    conversion): the fake of its base, viewed as the conversion views it (``as_strided``, no
    grad), both kept in the mode's memo (as the conversion keeps them: the base's fake is
    the one a later conversion of the base gives); ``None`` for anything else."""
    base = view._base
    if base is None or type(view) is not torch.Tensor or view.requires_grad or base.requires_grad \
            or view.grad is not None or view.__dict__ or view.is_conj() or view.is_neg() or view.numel() < 2 \
            or (fake_base := _live(mode, base, 1)) is None:
        return None
    with torch.no_grad():
        fake = fake_composite.as_strided(mode, fake_base, view.shape, view.stride(), view.storage_offset())
    mode.fake_tensor_converter.set_tensor_memo(view, fake)
    return fake


def _wrapped(mode: Any, shape: Any, stride: Any, dtype: torch.dtype, device: torch.device) -> Any:
    return fake_composite.wrapped(mode, torch.empty_strided(shape, stride, dtype=dtype, device="meta"), device)


def fresh(mode: Any, shape: Any, stride: Any, dtype: torch.dtype, device: torch.device, requires_grad: bool,
          anchor: Any = None) -> Any:
    """A fake of ``mode`` that is no view, with this geometry (storage offset 0), as an op's
    output: a leaf without grad, or (``requires_grad``) no leaf, made through an autograd
    function of ``anchor``, a fake that requires grad; ``None`` where that cannot be made
    (grad mode off, or no anchor)."""
    if not requires_grad:
        return _wrapped(mode, shape, stride, dtype, device)
    if anchor is None or not anchor.requires_grad or not torch.is_grad_enabled():
        return None
    return _Fresh.apply(anchor, mode, shape, stride, dtype, device)


def on_twins(mode: Any, fn: Any, args: list, kwargs: dict) -> Any:
    """What ``fn`` gives on these fakes of ``mode``, made from its run on meta twins of them, or
    ``None`` where that is not certain to be exactly what the mode gives (see the module's
    docstring)."""
    twinned = _twinned(mode, fn, _NAMES, args, kwargs)
    if twinned is None:
        return None
    twin_args, twin_kwargs, fakes = twinned
    if not fakes or fn is torch.Tensor.__getitem__ and len(fakes) > 1:
        return None
    out = _run(fn, twin_args, twin_kwargs)
    if type(out) is not torch.Tensor:
        return None
    return _remade(mode, out, fakes)


def _twinned(mode: Any, fn: Any, names: tuple, args: list, kwargs: dict) -> Optional[tuple[list, dict, list]]:
    """Meta twins of ``args`` and ``kwargs``, and the (twin, fake) pairs, where ``fn`` is one of
    ``ops(names)``, every argument qualifies and nothing around the call changes what the op
    does (a torch mode, autocast, inference mode); ``None`` otherwise."""
    if fn not in ops(names) or torch._C._len_torch_function_stack() or torch._C._len_torch_dispatch_stack() \
            or torch._C._is_any_autocast_enabled() or torch.is_inference_mode_enabled():
        return None
    fakes: list = []
    try:
        return [_twin(a, mode, fakes) for a in args], {k: _twin(v, mode, fakes) for k, v in kwargs.items()}, fakes
    except _Unsure:
        return None


def _run(fn: Any, args: list, kwargs: dict) -> Any:
    """``fn`` on the twins, or :data:`NOT_DONE` where it raises (the fake mode runs it and tells what)."""
    try:
        with warnings.catch_warnings(), fake_composite.as_the_fake_mode() if fn in ops(fake_composite.NAMES) \
                else contextlib.nullcontext():
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs)
    except Exception:  # noqa: BLE001
        return NOT_DONE


def _written_twin(fn: Any, twin: Any, args: list, kwargs: dict) -> Optional[int]:
    """How far the in-place op ``fn`` moves the version counter of ``twin`` (its first argument,
    the only tensor; no grad), or ``None`` where it raises, changes the twin's metadata or gives
    something else than the op gives. What it did is kept by everything it depends on (the
    twin's metadata, the other arguments by type and value): the twin runs once per key
    (on meta tensors, torch's elementwise ops go through its Python references, ~0.5-1 ms;
    swin_v2 writes ``relu_`` and ``zero_`` 24 times each a prediction)."""
    try:
        key: Any = (fn, twin.shape, twin.stride(), twin.dtype, _plain_key(args[1:]), _plain_key(kwargs))
    except _Unsure:
        key = None
    else:
        if key in _WRITTEN:
            return _WRITTEN[key]
    shape, stride, dtype = twin.shape, twin.stride(), twin.dtype
    out = _run(fn, args, kwargs)
    moved = None if out is NOT_DONE or twin.shape != shape or twin.stride() != stride or twin.dtype != dtype \
        or out is not (None if fn is torch.Tensor.__setitem__ else twin) else twin._version
    if key is not None:
        if len(_WRITTEN) >= _WRITTEN_KEPT:
            _WRITTEN.clear()
        _WRITTEN[key] = moved
    return moved


#: What :func:`_written_twin` saw, by its key; at most :data:`_WRITTEN_KEPT` kept.
_WRITTEN: dict[tuple, Optional[int]] = {}
_WRITTEN_KEPT = 4096
#: Plain values a key holds as they are (with their type: ``1``, ``1.0`` and ``True`` are equal).
_KEYED = frozenset({int, bool, str, type(None), type(Ellipsis), torch.dtype, torch.memory_format})


def _plain_key(value: Any) -> Any:
    """A plain value (of :data:`_PLAIN`, or sequences or a dict of them) as a key that tells
    apart every two values an op could treat differently; :class:`_Unsure` for anything else."""
    kind = type(value)
    if kind in _KEYED:
        return kind, value
    if kind is float:
        return kind, value.hex()
    if kind is tuple or kind is list or kind is torch.Size:
        return kind, tuple(_plain_key(v) for v in value)
    if kind is slice:
        return kind, _plain_key(value.start), _plain_key(value.stop), _plain_key(value.step)
    if kind is dict:
        return kind, tuple((k, _plain_key(v)) for k, v in value.items())
    raise _Unsure


def _twin(value: Any, mode: Any, fakes: list) -> Any:
    kind = type(value)
    if kind is FakeTensor:
        if value.fake_mode is not mode or value.fake_device != _CPU or value.constant is not None \
                or value.layout is not torch.strided or value.is_conj() or value.is_neg() or value.is_inference():
            raise _Unsure
        twin = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
        if value.requires_grad:
            twin.requires_grad_()
        fakes.append((twin, value))
        return twin
    if kind is list or kind is tuple:
        return kind(_twin(v, mode, fakes) for v in value)
    if isinstance(value, torch.Tensor) or not isinstance(value, _PLAIN):
        raise _Unsure
    return value


def _remade(mode: Any, out: torch.Tensor, fakes: list) -> Any:
    """The fake the op made, from its output ``out`` on the twins (``fakes``: (twin, fake) pairs)."""
    anchor = next((fake for _, fake in fakes if fake.requires_grad), None)
    if not out._is_view():
        for twin, fake in fakes:
            if out is twin:
                return fake
        if out.storage_offset():
            return None
        return fresh(mode, out.shape, out.stride(), out.dtype, _CPU, out.requires_grad, anchor)
    base: Any = out._base  # (a view's base is no view)
    source = next((fake for twin, fake in fakes if base is twin), None)
    if source is None:  # a view of a tensor the op made
        if base.storage_offset():
            return None
        source = fresh(mode, base.shape, base.stride(), base.dtype, _CPU, base.requires_grad, anchor)
        if source is None:
            return None
        offset = out.storage_offset()
    else:
        offset = out.storage_offset() + source.storage_offset()
    if out.dtype != source.dtype:
        return None
    return fake_composite.as_strided(mode, source, out.shape, out.stride(), offset)


def in_place(mode: Any, fn: Any, args: list, kwargs: dict) -> Any:
    """What the in-place op ``fn`` (of :data:`_IN_PLACE`) does to a fake of ``mode``, done without
    dispatching it, or :data:`NOT_DONE` where that is not certain (see :func:`on_twins` for what
    arguments qualify; here the tensor written is the only tensor): the op is run on a meta
    twin of the fake (it must not raise, nor change the twin's metadata), and what it does to
    the fake is what it did to the twin: its version counter moved as far (shared with its
    views and base, as the op's), and where the fake requires grad a new history
    (:class:`_Written`). Only where that is all the op does: the fake requires no grad (nor
    does the tensor it views), or it requires grad in grad mode and is no leaf, nor a view of
    one, nor a view made with others or in no-grad mode (torch refuses to write into those; the
    fake mode runs it and says so);
    ``__setitem__`` only into a fake that requires no grad. Gives the fake (``None`` from
    ``__setitem__``), as the op does."""
    twinned = _twinned(mode, fn, _IN_PLACE, args, kwargs) if args else None
    if twinned is None:
        return NOT_DONE
    twin_args, twin_kwargs, fakes = twinned
    target = args[0]
    if len(fakes) != 1 or fakes[0][1] is not target:
        return NOT_DONE
    twin = fakes[0][0]
    if target.requires_grad:
        if fn is torch.Tensor.__setitem__ or not torch.is_grad_enabled() or target.is_leaf or target._is_view() \
                and (target._base.is_leaf or _creation_meta(target) != _ONE_VIEW):
            return NOT_DONE
        twin.requires_grad_(False)
    elif target._is_view() and target._base.requires_grad:
        return NOT_DONE
    moved = _written_twin(fn, twin, twin_args, twin_kwargs)
    if moved is None:
        return NOT_DONE
    version = target._version + moved
    if target.requires_grad:
        with fake_composite.views_replayed(mode) if target._is_view() else contextlib.nullcontext():
            _Written.apply(target)
    torch._C._autograd._unsafe_set_version_counter((target,), (version,))
    return None if fn is torch.Tensor.__setitem__ else target
