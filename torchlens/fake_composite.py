"""Composite ops (``view``, ``reshape``, ``flatten``, ``einsum``) run on meta twins as torch's
fake-tensor mode runs them on fakes, without the mode.

torch breaks these ops into aten ops in C++, above any dispatch mode, by the same code for a
fake and for its meta twin. The fake mode then runs each aten op by its meta kernel, as a meta
tensor runs it, except for the ops it treats itself; of those, the composites above reach only
``view`` and ``_unsafe_view``, whose strides the mode computes by torch's Python reference
(``torch._refs._reshape_view_helper``), which gives size-1 dimensions other strides than the C++
kernel a meta tensor gets. And ``reshape`` of a strided input that can be a view asks
``_reshape_alias`` (the strides of the C++ helper) of a plain tensor, ``view`` of a tensor
subclass such as a fake.

:func:`as_the_fake_mode` is a dispatch mode around a run on twins that does what the fake mode
does for those three (the reference's geometry, computed on the twin), runs every aten op the
fake mode runs by its plain meta kernel, and stops the run (:class:`Unsure`) at any other: one the
fake mode has its own implementation, decomposition or handler for (constructors, data-dependent
ops, prims, ``convolution``...), where the run goes to the fake mode instead. An op of torch's
C++ that branches on the device (a twin is on ``meta``, a fake says it is on the CPU) is not
among those this is used for; ``tests/test_fake_direct.py`` compares every such op with the fake
mode's own output on many shapes, layouts, dtypes and grad settings.

Cost: a ``reshape`` that needs new strides is ~1.5 ms through the fake mode (each step of the
reference dispatched through it), an ``einsum`` 5-15 ms (maxvit_t's 8: ~0.1 s of a cold prediction);
here a few dispatches on meta tensors.

:func:`as_strided` makes the view of a fake that an op's output (from its twins) or a kept one
(``fake_memo``) is, as the fake mode's ``as_strided`` makes it (its meta kernel run on the fake,
wrapped as a fake) without the mode's cache and checks: ~0.1 ms less a view (maxvit_t makes ~600).

:func:`wrapped` is ``FakeTensor(mode, elem, device)`` (a meta tensor wrapped as a fake on the
CPU, as the mode wraps its outputs) without the constructor's Python argument handling and its
memo descriptors (~25 us a fake, ~5 here; a cold swin_v2_s makes ~2,000): what the constructor
does, its attributes copied from one fake it made.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Optional

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorConfig, FakeTensorMode, in_kernel_invocation_manager
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["NAMES", "Unsure", "as_the_fake_mode", "as_strided", "views_replayed", "wrapped"]

#: Composite ops run under :func:`as_the_fake_mode` (names looked up as ``fake_direct``'s are).
NAMES = ("view", "reshape", "flatten", "unflatten", "view_as", "reshape_as", "einsum")

_aten = torch.ops.aten
_DEVICE = torch.ops.prim.device.default
#: Aten ops the fake mode gives the geometry of torch's Python reference for reshape views.
_VIEWS = frozenset({_aten.view.default, _aten._unsafe_view.default, _aten._reshape_alias.default})


class Unsure(Exception):
    """An aten op the fake mode does not run by its plain meta kernel."""


@functools.lru_cache(maxsize=None)
def _by_meta_kernel(func: Any) -> bool:
    """Whether the fake mode runs ``func`` (on fakes without constants, of static shapes) by
    its meta kernel alone, as a meta tensor runs it: no handler, implementation, registered fake
    function or decomposition of the mode's own comes first (``FakeTensorMode.dispatch`` and
    ``_dispatch_impl``, in their order)."""
    from torch._decomp import decomposition_table, meta_table
    from torch._subclasses import fake_impls, fake_tensor

    if not isinstance(func, torch._ops.OpOverload) or func.namespace != "aten" or func is _aten.view.dtype:
        return False  # (a view to another dtype shares its input's storage but is no view: not remade as one)
    if func in fake_tensor._DISPATCH_META_HANDLERS or func in fake_tensor._DISPATCH_HANDLE_DIRECTLY:
        return func in (_aten.size.default, _aten.stride.default, _aten.storage_offset.default)
    if func in fake_tensor.FakeTensorMode.lift_fns or torch.Tag.inplace_view in func.tags:
        return False
    meta_first = func in meta_table or torch.Tag.view_copy in func.tags \
        or func in fake_tensor.FakeTensorMode._cpp_meta_supports_symint
    implicit = torch._C.DispatchKey.CompositeImplicitAutograd
    if not meta_first and (func in decomposition_table and fake_tensor.torch_decomp_decompositions(func)
                           or implicit in func.py_kernels
                           or torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), implicit)):
        return False
    if torch._library.simple_registry.singleton.find(func.name()).fake_impl.kernel is not None:
        return False
    if any(check(func) for check, _ in fake_impls.op_implementations_checks):
        return False
    return fake_impls.has_meta(func)


class _Unwrapped(TorchDispatchMode):
    """A dispatch mode whose handler runs as it is: torch wraps every mode's handler in one that
    keeps ``torch.compile`` from compiling it (four calls into dynamo a dispatch, ~10 us); these
    modes' handlers are never compiled (they run inside a prediction's op, never under
    ``torch.compile``)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False


class _AsTheFakeMode(_Unwrapped):
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if func in _VIEWS:
            return torch._refs._reshape_view_helper(args[0], args[1], allow_copy=False)
        if not _by_meta_kernel(func):
            raise Unsure(str(func))
        return func(*args, **(kwargs or {}))


def as_the_fake_mode() -> TorchDispatchMode:
    """A dispatch mode for a run on meta twins that gives what the fake mode gives (see the
    module's docstring); :class:`Unsure` raised from the run: the fake mode must run it."""
    return _AsTheFakeMode()


class _AsStrided(_Unwrapped):
    """``as_strided`` of a dense fake of ``fake_mode`` without a constant (the mode folds
    constants) done as the mode does it (its meta kernel on the fake, the output wrapped for the
    fake's device); a fake's device (autograd asks it of a view it makes, and of a view written
    into) answered by the fake, as it would be next; anything else goes on to the fake mode.
    One a thread for its last fake mode (:func:`_as_strided_mode`)."""

    def __init__(self, fake_mode: Any) -> None:
        super().__init__()
        self.fake_mode = fake_mode

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if func is _DEVICE:
            fake = args[0]  # (answered as FakeTensor's own dispatch answers it, without its wrappers)
            if type(fake) is FakeTensor and not fake.fake_mode.in_kernel_invocation:
                return fake.fake_device
            return FakeTensor.__torch_dispatch__(func, types, args, kwargs or {})
        if func is not _aten.as_strided.default or not _plain(args[0], self.fake_mode):
            return func(*args, **(kwargs or {}))
        with in_kernel_invocation_manager(self.fake_mode):
            out = func(*args, **(kwargs or {}))
        return wrapped(self.fake_mode, out, args[0].fake_device)


def _plain(source: Any, mode: Any) -> bool:
    """A dense fake of ``mode`` without a constant."""
    return type(source) is FakeTensor and source.fake_mode is mode and source.constant is None \
        and source.layout is torch.strided


def as_strided(mode: Any, source: Any, shape: Any, stride: Any, offset: Any) -> Any:
    """``source.as_strided(shape, stride, offset)`` of a fake of ``mode``, as the mode makes it;
    without its dispatch where ``source`` is a dense fake of ``mode`` without a constant, through
    the mode otherwise."""
    with _as_strided_mode(mode) if _plain(source, mode) else mode:
        return _aten.as_strided.default(source, shape, stride, offset)


_local = threading.local()


def _as_strided_mode(mode: Any) -> _AsStrided:
    """The :class:`_AsStrided` of ``mode`` in this thread (made once, not once a view: a mode's
    making is ~5 us; a thread's own, as a mode keeps the state it enters with)."""
    made = getattr(_local, "as_strided", None)
    if made is None or made.fake_mode is not mode:
        made = _local.as_strided = _AsStrided(mode)
    return made


def views_replayed(mode: Any) -> TorchDispatchMode:
    """A dispatch mode under which autograd replays a view of a fake of ``mode`` written into
    (for its new history) by ``as_strided`` without the mode's dispatch, as :func:`as_strided`
    makes it (``OpMemo.like`` makes views so; ~0.3 ms less a write into one)."""
    return _as_strided_mode(mode)


_CPU = torch.device("cpu")


@functools.lru_cache(maxsize=None)
def _attributes() -> Optional[tuple[str, str, dict[str, Any]]]:
    """The names under which ``FakeTensor(mode, elem, device)`` keeps its mode and device, and
    its other attributes (read from a fake it makes); ``None`` where one of those is anything
    but ``None`` (a constructor that keeps more than its arguments: :func:`wrapped` does not
    stand for it)."""
    mode = FakeTensorMode()
    probe = FakeTensor(mode, torch.empty(0, device="meta"), _CPU)
    modes = [name for name, value in vars(probe).items() if value is mode]
    devices = [name for name, value in vars(probe).items() if type(value) is torch.device and value == _CPU]
    rest = {name: value for name, value in vars(probe).items() if name not in modes + devices}
    if len(modes) != 1 or len(devices) != 1 or any(value is not None for value in rest.values()):
        return None
    return modes[0], devices[0], rest


def wrapped(mode: Any, elem: torch.Tensor, device: torch.device) -> Any:
    """``FakeTensor(mode, elem, device)`` of a meta tensor ``elem``, made as the constructor makes
    it (the subclass made of ``elem`` with the fake device's dispatch keys, its data pointer
    guarded as the mode says, the mode, the device and the constructor's other attributes, all
    ``None``), for a fake on the CPU; by the constructor otherwise (another device, whose name
    it completes; its debug mode, which keeps a traceback)."""
    attributes = _attributes()
    if device.type != "cpu" or attributes is None or FakeTensorConfig.debug:
        return FakeTensor(mode, elem, device)
    fake = torch.Tensor._make_subclass(FakeTensor, elem, elem.requires_grad, dispatch_device=True,
                                       device_for_backend_keys=device)
    if mode._allow_unsafe_data_ptr_access:
        torch._C._set_warn_deprecated_on_mutable_data_ptr(fake)
    else:
        torch._C._set_throw_on_mutable_data_ptr(fake)
    mode_name, device_name, rest = attributes
    state = vars(fake)
    state[device_name], state[mode_name] = device, mode
    state.update(rest)
    return fake
