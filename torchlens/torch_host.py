"""The torch :class:`~analysis.host.Host`: what an op is to the prediction, as the capture sees it.

It mirrors :mod:`torchlens.capture.funcs` and :mod:`torchlens.capture.session`: a torch callable written in C
(``torch.tanh``, ``Tensor.view``, ``F.linear``, ``_VF.lstm``) is an op named as the capture
names it, and records only when it returns tensors; torch's own Python is read like any
other Python (its frames are part of the chain), with ``has_torch_function*`` and
``handle_torch_function`` behaving as they do under the capture's mode; modules are called
with their hooks, in their own scope, at their address in the model.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import logging
import os
import threading
import types
import warnings
import weakref
from typing import Any, Callable, Iterator, NamedTuple, Optional, Sequence

import torch
from torch import nn

from torchlens.analysis.host import Host, Intrinsic, Member, OpRaises
from torchlens.analysis.values import Dict, Instance, Known, Opaque, Seq, Tensor, TensorTuple, Value
from torchlens.capture.funcs import (CHECK_NAMES, HIGHER_ORDER, OP, REFLECTED, TRANSFORMS, TRANSPARENT, VIEW_PROPERTIES,
                                     classify, op_name)

from .contents import Contents, known_contents
from .fake_direct import NOT_DONE, fresh, in_place, live, on_twins
from .fake_memo import MISS, UNKNOWN, OpMemo, Raises

__all__ = ["TorchHost", "FakeShapes", "quiet_fake_errors"]

#: Tensor-returning ops whose name says they return something else: no op is recorded.
_NOT_TENSOR = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "item", "tolist", "is_contiguous", "is_floating_point",
    "is_complex", "is_signed", "element_size", "stride", "storage_offset", "data_ptr", "get_device",
    "untyped_storage", "storage", "is_tensor", "is_storage", "len", "bool", "int", "float", "index", "hash",
    "repr", "format", "contains", "equal", "is_nonzero", "allclose", "is_same_size", "has_names", "is_inference",
    "is_grad_enabled", "get_default_dtype", "is_autocast_enabled", "is_inference_mode_enabled", "finfo", "iinfo",
    "are_deterministic_algorithms_enabled", "result_type", "promote_types", "can_cast", "is_set_to", "dim_order",
    "iter", "is_shared", "is_pinned", "type",
    "is_coalesced", "dense_dim", "sparse_dim", "is_meta", "is_cuda", "is_cpu", "get_autocast_dtype", "numpy",
    "__array__", "__dlpack__", "__dlpack_device__",
})
#: Names of ``_NOT_TENSOR`` a query dunder shares with a method that gives a tensor: ``x.__float__()``
#: is a number, ``x.float()`` a tensor; ``x.type()`` a string, ``x.type(torch.half)`` a tensor.
_SHARED_NAMES = frozenset({"int", "float", "bool", "type"})
#: Multi-output ops with a fixed number of outputs.
_FIXED_OUTPUTS = {"sort": 2, "topk": 2, "kthvalue": 2, "mode": 2, "var_mean": 2, "std_mean": 2, "aminmax": 2,
                  "frexp": 2, "slogdet": 2, "qr": 2, "lstm": 3, "gru": 2, "rnn_tanh": 2, "rnn_relu": 2,
                  "svd": 3, "lstm_cell": 2, "_native_multi_head_attention": 2, "native_layer_norm": 3,
                  "max_pool2d_with_indices": 2, "geqrf": 2, "histogram": 2, "cummax": 2, "cummin": 2,
                  "_pack_padded_sequence": 2, "_pad_packed_sequence": 2}
#: Ops with an output per dimension argument (max/min/median with a dim give values and indices).
_WITH_DIM = frozenset({"max", "min", "median", "nanmedian"})
#: Ops with a data-dependent number of outputs: learned from how many arguments/targets.
_SPLITS = frozenset({"split", "chunk", "unbind", "tensor_split", "split_with_sizes", "unsafe_split",
                     "hsplit", "vsplit", "dsplit", "unsafe_chunk", "meshgrid", "broadcast_tensors"})
#: torch._C submodules whose functions are ops (``F.linear`` is ``torch._C._nn.linear``).
_OP_NAMESPACES = frozenset({"torch._C._nn", "torch._C._linalg", "torch._C._special", "torch._C._fft",
                            "torch._C._nested", "torch._C._sparse", "torch._C._VariableFunctions"})
_TENSOR_VALUED = frozenset({"data", "grad"})
_C_TYPES = (types.BuiltinFunctionType, types.BuiltinMethodType, types.MethodDescriptorType,
            types.WrapperDescriptorType, types.MethodWrapperType, types.ClassMethodDescriptorType)
_C_TYPE_SET = frozenset(_C_TYPES)
#: The type of torch's legacy tensor constructors (``torch.IntTensor``, ``torch.FloatTensor``...).
_LEGACY_TENSOR_TYPE = type(torch.FloatTensor)
#: What :meth:`TorchHost._runs_on_fakes` runs as it is (besides torch's Python functions): an op
#: named by a string, an op overload packet, a C callable.
_ON_FAKES = (str, torch._ops.OpOverloadPacket, *_C_TYPES)
#: ``id(C callable)`` -> (it, its op name, its intrinsic): :meth:`TorchHost._kept`, shared by
#: the predictions of every thread (a dict's reads and writes are atomic); at most
#: :data:`_C_KEPT` (bound C methods are made anew: the table starts afresh when full).
_C_ANSWERS: dict[int, tuple[Any, Optional[str], Optional[Intrinsic]]] = {}
_C_KEPT = 4096
#: The code of the wrapper torch puts around many tensor operators (``__rsub__``, ``__pow__``,
#: ``__floordiv__``...): it dispatches to the mode and turns a ``TypeError`` into ``NotImplemented``.
_GUARD_MAKER = getattr(torch._tensor, "_handle_torch_function_and_wrap_type_error_to_not_implemented", None)
_TYPE_ERROR_GUARD = getattr(_GUARD_MAKER(len), "__code__", None) if _GUARD_MAKER is not None else None


#: Operator dunders whose op name the capture reports under another name (``x / 2`` is ``div``).
_PROBED = ("__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__", "__matmul__",
           "__neg__", "__pos__", "__abs__", "__invert__", "__and__", "__or__", "__xor__", "__lshift__",
           "__rshift__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__iadd__", "__isub__",
           "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__",
           "__ilshift__", "__irshift__", "__imatmul__", "__getitem__", "__setitem__")


@functools.lru_cache(maxsize=None)
def _dunder_names() -> dict[str, str]:
    """What the capture's mode is handed for each operator dunder, probed once on a 1x1 tensor."""
    seen: list[Any] = []

    class Probe(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func: Callable, types: Any, args: tuple = (),
                               kwargs: Optional[dict] = None) -> Any:
            seen.append(func)
            return func(*args, **(kwargs or {}))

    names: dict[str, str] = {}
    for dunder in _PROBED:
        bitwise = dunder.strip("_").lstrip("i") in ("and", "or", "xor", "invert", "lshift", "rshift")
        operand = torch.ones(1, 1, dtype=torch.int64 if bitwise else torch.float32)
        other: Any = operand.clone() if dunder not in ("__getitem__", "__setitem__") else 0
        args = (other, 1) if dunder == "__setitem__" else (() if dunder in ("__neg__", "__pos__", "__abs__",
                                                                               "__invert__") else (other,))
        seen.clear()
        try:
            with Probe():
                getattr(operand, dunder)(*args)
        except (RuntimeError, TypeError, AttributeError):
            continue
        if seen:  # keyed by the callable's own name: Tensor.__itruediv__ is named __idiv__
            names[getattr(getattr(torch.Tensor, dunder), "__name__", dunder)] = classify(seen[0]).name
    return names


def _transforms() -> dict[Any, str]:
    """torch.func transforms and higher-order ops (``torch.cond``): the capture records each
    as one boundary op, with nothing inside."""
    import importlib

    out: dict[Any, str] = {}
    for module_name, attr, name in (*TRANSFORMS, *HIGHER_ORDER):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        if hasattr(module, attr):
            out[getattr(module, attr)] = name
    return out


class TorchHost(Host):
    """Torch as the prediction sees it; ``model`` (a live root module, or ``None``) gives addresses."""

    tensor_type = torch.Tensor

    def __init__(self, model: Optional[nn.Module]) -> None:
        #: The model's modules by address, as its forward starts (one walk for addresses and types).
        self._named = [(name or "self", m) for name, m in model.named_modules()] if model is not None else []
        self.addresses = {id(m): name for name, m in self._named}
        self._keep = model
        self._checks = {getattr(torch._C, n) for n in ("_has_torch_function", "_has_torch_function_unary",
                                                       "_has_torch_function_variadic")}
        self._transforms = _transforms()
        self._names: dict[int, tuple[Any, Optional[str]]] = {}
        #: Per callable and per tensor attribute name, what this prediction found (torch's
        #: functions and the tensor type do not change while one prediction runs; the
        #: next prediction asks again).
        self._intrinsics: dict[int, tuple[Any, Optional[Intrinsic]]] = {}
        self._attributes: dict[str, tuple[Member, Any]] = {}
        self._functions: dict[int, _Function] = {}
        self._constant_calls: dict[int, tuple[Any, bool]] = {}
        self._dunders = _dunder_names()
        self._shapes = FakeShapes()
        self._contents = Contents()

    # -- ops ---------------------------------------------------------------------------------

    def op_name(self, fn: Any) -> Optional[str]:
        if type(fn) is types.MethodType:  # a Python method bound now: never an op (nor a transform)
            return None
        if fn in self._transforms:
            return self._transforms[fn]
        entry = self._names.get(id(fn))
        if entry is None or entry[0] is not fn:
            entry = self._names[id(fn)] = (fn, self._kept(fn)[1] if type(fn) in _C_TYPE_SET else self._classify(fn))
        return entry[1]

    def _kept(self, fn: Any) -> tuple[Any, Optional[str], Optional[Intrinsic]]:
        """A C callable's op name and intrinsic, as earlier predictions found them: neither can
        change (they depend on its name, module and owner, which a C callable cannot change, and
        on torch's own functions), unless it is a transform (those are asked afresh)."""
        if fn in self._transforms:
            return fn, self._classify(fn), self._intrinsic(fn)
        entry = _C_ANSWERS.get(id(fn))
        if entry is None or entry[0] is not fn:
            if len(_C_ANSWERS) >= _C_KEPT:
                _C_ANSWERS.clear()
            entry = _C_ANSWERS[id(fn)] = (fn, self._classify(fn), self._intrinsic(fn))
        return entry

    def _classify(self, fn: Any) -> Optional[str]:
        if not isinstance(fn, _C_TYPES) and not isinstance(fn, torch._ops.OpOverloadPacket):
            return None
        raw = getattr(fn, "__name__", "")
        module = getattr(fn, "__module__", None) or ""
        owner = getattr(fn, "__objclass__", None) or getattr(fn, "__self__", None)
        tensor_method = isinstance(owner, type) and issubclass(owner, torch._C.TensorBase)
        if not (module.startswith("torch") or tensor_method or isinstance(fn, torch._ops.OpOverloadPacket)):
            return None
        if module.startswith("torch._C._") and module not in _OP_NAMESPACES:
            return None  # torch's private bindings (dynamo's eval frame, autograd state)
        if raw.startswith("_") and not raw.startswith("__") and module == "torch._C":
            return None  # private helpers (_get_tracing_state, _log_api_usage_once)
        if owner is torch._C:
            return None  # torch._C's own bindings of state (set_autocast_enabled, is_grad_enabled): no dispatch
        if fn in self._checks:
            return None
        return REFLECTED.get(raw) or (self._dunders.get(raw) if tensor_method else None) or op_name(raw)

    def op_result(self, name: str, fn: Any, args: Sequence[Value], kwargs: dict[str, Value],
                  make_tensor: Callable[[Any], Value],
                  make_tuple: Callable[[Optional[int], Optional[tuple]], Value], once: bool = False) -> Optional[Value]:
        """What the op returns, its shapes computed on fake tensors where every input is known,
        and its contents where they are made from constants alone (:mod:`torchlens.contents`)."""
        result = self._shapes.run(fn, args, kwargs) if self._runs_on_fakes(fn) else UNKNOWN
        if type(result) is Raises:
            raise OpRaises(result.error)
        contents = self._contents.compute(name, fn, args, kwargs, once, result)
        if _answers_a_query(name, fn, args, kwargs):
            if known_contents(contents) and not isinstance(contents, torch.Tensor):
                return Known(contents)
            if result is UNKNOWN:
                return None
            if not _holds_tensor(result):  # the query's answer (size, dim)
                return Known(result)
        if isinstance(result, torch.Tensor):
            made = make_tensor(result)
            self._contents.give(made, contents)
            return made
        if isinstance(result, (tuple, list)) and result and all(isinstance(r, torch.Tensor) for r in result):
            return make_tuple(len(result), tuple(result))
        if name in _FIXED_OUTPUTS:
            return make_tuple(_FIXED_OUTPUTS[name], None)
        if name in _WITH_DIM:
            return make_tuple(2, None) if len(args) > 1 and not _is_tensor_value(args[1]) else make_tensor(None)
        if name in _SPLITS:
            return make_tuple(_split_count(name, args), None)
        if _one_per_dimension(name, args, kwargs):  # torch.where(cond), x.nonzero(as_tuple=True)
            described = args[0].described if isinstance(args[0], Tensor) else None
            return make_tuple(described.dim() if isinstance(described, torch.Tensor) else None, None)
        count = _schema_outputs(name)
        return make_tuple(count, None) if count is not None and count > 1 else make_tensor(None)

    def call_for_real(self, fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        with _NoTorch():
            return fn(*args, **kwargs)

    def stand_in(self, tensor: Any) -> Any:
        return self._shapes.fake(tensor)

    def _runs_on_fakes(self, fn: Any) -> bool:
        """An op torch implements (in C, or in Python reached through its dispatcher such as
        ``Tensor.unflatten``; a view property named by a string): run as is on fake tensors.
        Modules recorded as one op (TorchScript) and transforms are not."""
        if isinstance(fn, _ON_FAKES):
            return True
        return isinstance(fn, types.FunctionType) and (fn.__module__ or "").startswith("torch.") \
            and fn not in self._transforms

    def output_fields(self, name: str) -> tuple[str, ...]:
        return tuple(getattr(getattr(torch.return_types, name, None), "__match_args__", ()))

    def type_error_guard(self, code: Any) -> bool:
        return code is _TYPE_ERROR_GUARD is not None

    def guard_passes(self, read: Callable[[str], Optional[Value]]) -> bool:
        wrapped, given = read("f"), read("args")  # the guard's closure: the operator; its call's operands
        if not isinstance(wrapped, Known) or not isinstance(given, Seq) or given.unsure:
            return False
        numbers = getattr(wrapped.obj, "__name__", "") != "__rmatmul__"  # matmul of a number: a TypeError
        return all(isinstance(v, Tensor) or numbers and isinstance(v, Known) and type(v.obj) in (int, float, bool)
                   for v in given.items)

    def read_raises(self, read: Callable[..., Any], args: Sequence[Value]) -> Optional[str]:
        choices: list[tuple[Any, ...]] = []
        for arg in args:
            if isinstance(arg, Tensor):
                choices.append(_read_probes(arg.described))
            elif isinstance(arg, Known):
                choices.append((arg.obj,))
            else:
                return None
        error: Optional[str] = None
        for probe in itertools.product(*choices):
            try:
                read(*probe)
            except Exception as raised:  # noqa: BLE001 - what the program's own read raises
                error = error or f"{type(raised).__name__}: {str(raised).strip().splitlines()[0]}"
            else:
                return None
        return error

    def dispatch_op(self, fn: Any) -> Optional[str]:
        """As the capture's mode classifies what ``handle_torch_function`` hands it. torch's own
        Python is re-entered past its check, unless its module reads the check as an attribute
        (``torch.overrides.has_torch_function_variadic`` in ``torch.nn.init``), which the capture
        cannot make say no: that one dispatches again and is recorded as one op, by its name."""
        info = classify(fn)
        if info.kind is TRANSPARENT and _reads_check_as_attribute(fn):
            return info.name
        return info.name if info.kind is OP else None

    def intrinsic(self, fn: Any) -> Optional[Intrinsic]:
        if type(fn) is types.MethodType:  # a Python method bound now: none of the intrinsics
            return None
        entry = self._intrinsics.get(id(fn))
        if entry is None or entry[0] is not fn:
            found = self._kept(fn)[2] if type(fn) in _C_TYPE_SET else self._intrinsic(fn)
            entry = self._intrinsics[id(fn)] = (fn, found)
        return entry[1]

    def _intrinsic(self, fn: Any) -> Optional[Intrinsic]:
        if fn in self._checks:
            return Intrinsic.CHECK
        if fn is torch.overrides.handle_torch_function:
            return Intrinsic.DISPATCH
        if fn in self._transforms:
            return Intrinsic.TRANSFORM
        if getattr(fn, "__module__", None) == "torch._dynamo.decorators" and getattr(fn, "__name__", "") == "disable" \
                or fn is _UNWRAP_IF_DEAD or fn is torch._C.TensorBase.as_subclass:
            return Intrinsic.IDENTITY
        if fn is _MODULE_CALL or fn is nn.Module._call_impl:
            return Intrinsic.MODULE_CALL
        if fn is _APPLY:
            return Intrinsic.APPLY
        if fn in _UNSEEN:
            return Intrinsic.UNSEEN
        return None

    def constant_call(self, fn: Any) -> bool:
        """torch's pure queries (``is_grad_enabled``, ``_get_tracing_state``, ``finfo``) run for real, and
        functions marked as giving a constant (``torch._dynamo.assume_constant_result``: install
        probes such as transformers' ``is_mambapy_available``)."""
        entry = self._constant_calls.get(id(fn))
        if entry is None or entry[0] is not fn:
            entry = self._constant_calls[id(fn)] = (fn, self._constant_call(fn))
        return entry[1]

    @staticmethod
    def _constant_call(fn: Any) -> bool:
        if fn in (torch.finfo, torch.iinfo, torch.device, torch.Size, torch._C._get_tracing_state,
                  torch._C._are_functorch_transforms_active, torch._C._get_privateuse1_backend_name):
            return True
        if isinstance(fn, _LEGACY_TENSOR_TYPE):  # torch.IntTensor([n]): a new tensor, made by no op the capture sees
            return True
        if isinstance(fn, types.FunctionType):  # torch._dynamo.assume_constant_result: fixed for the process
            return getattr(fn, "_dynamo_marked_constant", False) is True
        name = getattr(fn, "__name__", "")
        return isinstance(fn, _C_TYPES) and (getattr(fn, "__module__", "") or "").startswith("torch") and (
            name in _NOT_TENSOR or name.startswith("is_") or name.startswith("_is_") or name.startswith("get_"))

    def tensor_attribute(self, name: str) -> tuple[Member, Any]:
        found = self._attributes.get(name)
        if found is None:
            found = self._attributes[name] = self._tensor_attribute(name)
        return found

    def _tensor_attribute(self, name: str) -> tuple[Member, Any]:
        if name in VIEW_PROPERTIES:
            return Member.OP, name
        if name in _TENSOR_VALUED:
            return Member.TENSOR, None
        try:
            static = inspect.getattr_static(torch.Tensor, name)
        except AttributeError:
            return Member.QUERY, None
        if isinstance(static, (property, types.GetSetDescriptorType, types.MemberDescriptorType)):
            return Member.QUERY, None
        return Member.METHOD, getattr(torch.Tensor, name)

    # -- modules -----------------------------------------------------------------------------

    def is_module(self, obj: Any) -> bool:
        return issubclass(type(obj), nn.Module)  # by its type: an object's own ``__class__`` is not read

    def is_module_class(self, cls: Any) -> bool:
        return isinstance(cls, type) and issubclass(cls, nn.Module)

    def module_address(self, obj: Any) -> Optional[str]:
        return self.addresses.get(id(obj))

    def module_types(self) -> dict[str, str]:
        return {name: type(m).__name__ for name, m in self._named}

    def named_count(self) -> Optional[int]:
        return len(self.addresses) if self._keep is not None else None

    def module_forward(self, obj: Any) -> Any:
        return obj.forward

    def module_hooks(self, obj: Any) -> tuple[list, list]:
        return list(obj._forward_pre_hooks.values()), list(obj._forward_hooks.values())

    def boundary_op(self, obj: Any) -> Optional[str]:
        return "torchscript" if isinstance(obj, torch.jit.ScriptModule) else None

    def container_items(self, cls: Any, args: Sequence[Value]) -> Optional[dict[str, Value]]:
        if not issubclass(cls, (nn.ModuleList, nn.Sequential, nn.ModuleDict, nn.ParameterList)):
            return None
        source = args[0] if len(args) == 1 else Seq(list(args))
        if isinstance(source, Dict):
            return {str(k): v for k, v in source.items.items()}
        if isinstance(source, Known) and isinstance(source.obj, (list, tuple)):
            source = Seq([Known(v) for v in source.obj])
        if isinstance(source, Seq):
            return {str(k): v for k, v in enumerate(source.items)}
        return {} if not args else None

    def _function(self, fn: Any) -> _Function:
        entry = self._functions.get(id(fn))
        if entry is None or entry.fn is not fn:
            module = fn.__module__ or ""
            entry = self._functions[id(fn)] = _Function(
                fn, self._skip_function(fn, True), self._skip_function(fn, False), self._unfollowed(fn),
                fn in _NOT_TRACING or fn is torch.jit.annotate or module.startswith("torch.jit")
                or fn is _PARAMETER_NEW or fn.__name__ in ("register_buffer", "register_parameter"))
        return entry

    def emulate(self, fn: Any, args: Sequence[Value], kwargs: dict[str, Value]) -> Optional[Value]:
        """Buffers and parameters registered in ``__init__`` (prediction from a class);
        TorchScript compilation, whose result is opaque (its module is one boundary op)."""
        if not self._function(fn).emulated:
            return None
        if fn in _NOT_TRACING:  # the capture runs the model eagerly: not scripted, not traced
            return Known(False)
        if fn is torch.jit.annotate and len(args) == 2:  # the value, as eager mode returns it
            return args[1]
        if (fn.__module__ or "").startswith("torch.jit"):
            return Opaque(f"{fn.__qualname__}: TorchScript is not read")
        if fn is _PARAMETER_NEW:  # Parameter(data): the tensor itself, as far as ops and shapes go
            data = args[1] if len(args) > 1 else kwargs.get("data", Known(None))
            return Tensor() if isinstance(data, Known) and data.obj is None else data
        if fn.__name__ in ("register_buffer", "register_parameter") and len(args) >= 2 \
                and isinstance(args[0], Instance) and isinstance(args[1], Known):
            args[0].attrs[args[1].obj] = Tensor()
            return Known(None)
        return None

    def call_override(self, obj: Any) -> Any:
        call = type(obj).__call__
        return call if isinstance(call, types.FunctionType) and call is not _MODULE_CALL else None

    def function_context(self) -> Any:
        return _FunctionContext()

    def unfollowed(self, fn: Any) -> Optional[str]:
        """torch's higher-order ops and compilers run the model's functions under their own tracing."""
        return self._function(fn).unfollowed

    def _unfollowed(self, fn: Any) -> Optional[str]:
        code = getattr(fn, "__code__", None)
        if fn is torch.compile or code is not None and any(part in code.co_filename for part in _UNFOLLOWED):
            name = getattr(fn, "__qualname__", repr(fn))
            return f"torch's {name} (a higher-order op or compiler: it traces what it is given) is not followed"
        return None

    def plain_function(self, fn: Any) -> bool:
        facts = self._function(fn)
        return not (facts.skipped_running or facts.skipped_reading or facts.unfollowed or facts.emulated)

    def skip_function(self, fn: Any, running: bool = False) -> bool:
        """Construction-time plumbing not worth reading (``Module.__init__``; initialisers when
        reading a class's ``__init__``: while the model runs, their ops are recorded)."""
        facts = self._function(fn)
        return facts.skipped_running if running else facts.skipped_reading

    @staticmethod
    def _skip_function(fn: Any, running: bool) -> bool:
        return fn is nn.Module.__init__ or not running and (fn.__module__ == "torch.nn.init" or fn.__name__ in (
            "reset_parameters", "_reset_parameters"))


#: ``nn.Module.__call__`` as torch defines it, and the C ``apply`` of custom autograd functions.
_MODULE_CALL = nn.Module.__call__
_PARAMETER_NEW = nn.Parameter.__new__
_APPLY = vars(torch._C._FunctionBase)["apply"]
#: functorch's unwrapping of dead wrappers: returns a live tensor as it is.
_UNWRAP_IF_DEAD = getattr(getattr(torch._C, "_functorch", None), "unwrap_if_dead", None)
#: torch.jit's questions whose answer is ``False`` in an eager run.
_NOT_TRACING = (torch.jit.is_tracing, torch.jit.is_scripting)
#: Functions that make a tensor from data outside torch without its function dispatch: no op the
#: capture sees; what they give is a tensor no op made, as an input is.
_UNSEEN = (torch.from_numpy, torch.frombuffer)
#: torch packages whose functions trace or compile what they are given.
_UNFOLLOWED = tuple(f"{os.sep}torch{os.sep}{part}{os.sep}" for part in ("_higher_order_ops", "export"))


class _Function(NamedTuple):
    """What the torch host answers for one Python function, found once per prediction."""

    fn: Any
    #: :meth:`TorchHost.skip_function` while the model runs, and reading a class's ``__init__``.
    skipped_running: bool
    skipped_reading: bool
    #: :meth:`TorchHost.unfollowed`.
    unfollowed: Optional[str]
    #: Whether :meth:`TorchHost.emulate` may model it.
    emulated: bool


class _FunctionContext:
    """The ``ctx`` a custom autograd function's ``forward`` receives: records nothing."""

    needs_input_grad = (True,) * 16

    def save_for_backward(self, *tensors: Any) -> None:
        return None

    def save_for_forward(self, *tensors: Any) -> None:
        return None

    def mark_dirty(self, *tensors: Any) -> None:
        return None

    def mark_non_differentiable(self, *tensors: Any) -> None:
        return None

    def set_materialize_grads(self, value: bool) -> None:
        return None


def _is_tensor_value(value: Value) -> bool:
    return isinstance(value, Tensor)


def _split_count(name: str, args: Sequence[Value]) -> Optional[int]:
    """Outputs of ``tensor_split(x, 3)`` or ``split(x, [2, 2])``; ``None`` when not static
    (``chunk(x, 3)`` gives fewer than 3 where the size does not divide well: the fakes count)."""
    size = args[1] if len(args) > 1 else None
    if name == "tensor_split" and isinstance(size, Known) and isinstance(size.obj, int):
        return size.obj
    if name in ("split", "split_with_sizes", "unsafe_split") and isinstance(size, (Known, Seq)):
        items = size.items if isinstance(size, Seq) else size.obj
        if isinstance(items, (list, tuple)):
            return len(items)
    if name in ("meshgrid", "broadcast_tensors"):
        return len(args) if all(not isinstance(a, Seq) for a in args) else None
    return None



def _answers_a_query(name: str, fn: Any, args: Sequence[Value], kwargs: dict[str, Value]) -> bool:
    """Whether the op gives no tensor (a size, a flag, a number), whatever its inputs."""
    if name in _SHARED_NAMES:
        return getattr(fn, "__name__", "").startswith("__") if name != "type" else len(args) == 1 and not kwargs
    return name in _NOT_TENSOR or name.startswith(("is_", "_is_")) and _schema_outputs(name) is None  # (not _is_all_true)


def _one_per_dimension(name: str, args: Sequence[Value], kwargs: dict[str, Value]) -> bool:
    """Whether the op returns one index tensor per dimension of its first argument (a
    data-dependent op fakes cannot run: ``torch.where(cond)``, ``nonzero(as_tuple=True)``)."""
    if name == "where":
        return len(args) == 1 and not kwargs
    as_tuple = kwargs.get("as_tuple")
    return name == "nonzero" and isinstance(as_tuple, Known) and as_tuple.obj is True


#: What an op's shape checks raise when its arguments do not fit it (exactly these types: torch's
#: errors for what fakes cannot compute subclass them).
_ARGUMENT_ERRORS = (RuntimeError, IndexError, ValueError, TypeError)
#: Words of errors about fakes themselves (``.numpy()`` of a tensor subclass, a data pointer).
_FAKE_WORDS = ("fake", "meta", "subclass", "data pointer", "storage", "symbolic", "data-dependent")


#: Tensors of no known metadata a read is tried on: it raises for certain only where it raises on
#: each (a 0-d integer, a 1-element and a many-element float tensor: ``bool`` and ``float`` take
#: the first, ``len`` the others; ``round`` and ``math.trunc`` none, the tensor lacks them).
_UNKNOWN_PROBES = (torch.zeros((), dtype=torch.int64), torch.zeros((1,)), torch.zeros((2, 3)))


def _read_probes(described: Any) -> tuple[Any, ...]:
    """Real tensors with ``described``'s shape and dtype (one zero, expanded: no storage of that
    size), for reading as plain values; :data:`_UNKNOWN_PROBES` when it has none."""
    shape = getattr(described, "shape", None)
    if shape is None or not all(type(size) is int for size in shape):
        return _UNKNOWN_PROBES
    return (torch.zeros((), dtype=described.dtype).expand(shape),)


def _apply(fn: Any, args: Sequence[Any], kwargs: dict) -> Any:
    """The op on these arguments: a call, or the read of a view property named by a string (``.T``)."""
    return getattr(args[0], fn) if isinstance(fn, str) else fn(*args, **kwargs)


def _raised(error: Exception, mode: Any, fn: Any, plain: list, plain_kw: dict) -> Any:
    """What an op that raised on fakes gives: :class:`Raises` when the real op raises the same for
    certain (its shape checks refuse the arguments, and the real kernel refuses zeros of those
    shapes too); where the real kernel takes them (a fake kernel may check more than the
    device's, as ``_grouped_mm``'s dtypes on CPU), fakes of what it gives on zeros (an argument
    error is no data-dependent shape); else :data:`UNKNOWN` (fakes cannot say)."""
    text = str(error).strip().split("\n", 1)[0]
    if type(error) not in _ARGUMENT_ERRORS or not text or any(w in text.lower() for w in _FAKE_WORDS):
        return UNKNOWN
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.utils._pytree import tree_map

    def real(value: Any) -> Any:
        if isinstance(value, FakeTensor) and value.fake_device.type != "meta":
            return torch.zeros(value.shape, dtype=value.dtype, device=value.fake_device)
        return value

    try:
        args, kwargs = tree_map(real, (plain, plain_kw))
        with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            made = _apply(fn, args, kwargs)
    except Exception as refused:  # noqa: BLE001 - the real kernel's own refusal
        return Raises(f"{type(error).__name__}: {text}") if type(refused) is type(error) else UNKNOWN
    try:
        return tree_map(lambda v: mode.from_tensor(v) if isinstance(v, torch.Tensor) else v, made)
    except Exception:  # noqa: BLE001 - an output fakes cannot stand for
        return UNKNOWN


class _OtherThreads(logging.Filter):
    """Keeps the log records of every thread but the one that made it."""

    def __init__(self) -> None:
        super().__init__()
        self._thread = threading.get_ident()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread != self._thread


@contextlib.contextmanager
def quiet_fake_errors() -> Iterator[None]:
    """Keep torch from logging (with a traceback) each op this thread runs on fakes that raises:
    what it raises is the prediction's gap. Fakes run by other threads still log."""
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    quiet = _OtherThreads()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


class _NoShape(Exception):
    """An argument whose value (or shape) the prediction does not know."""


class FakeShapes:
    """Ops run on fake tensors (shape, dtype and device, no data: ``torch._subclasses``), so
    shapes, output counts and shape-dependent branches follow the run exactly.

    Live inputs, parameters and buffers are converted once (the fakes are copies: an in-place
    op changes the fake, never the model), and kept for the next prediction in this thread
    (:class:`_KeptFakes`); an op with an input whose shape is unknown, or whose output shape
    depends on data (``nonzero``, ``item``), gives :data:`UNKNOWN`. Nothing runs on real
    data and no random number is drawn. What an op gave is kept with the kept fakes
    (:class:`~torchlens.fake_memo.OpMemo`): a later prediction making the same call on fakes
    of the same metadata gets it back without dispatching, when that is exactly what the
    op would give.
    """

    def __init__(self) -> None:
        self._mode: Any = None
        self._memo: Optional[OpMemo] = None
        #: id(the memo's calls of a key) -> (them, the last call's number in this prediction):
        #: the k-th call with a key gets what the k-th gave.
        self._calls: dict[int, tuple[list, int]] = {}

    def run(self, fn: Any, args: Sequence[Value], kwargs: dict[str, Value]) -> Any:
        plain = []
        try:
            for arg in args:  # (a loop: a comprehension is a call of its own before 3.12)
                plain.append(self._plain(arg))
            plain_kw = {k: self._plain(v) for k, v in kwargs.items()} if kwargs else {}
        except _NoShape:
            return UNKNOWN
        mode = self._mode if self._mode is not None else self._fake_mode()
        memo = self._memo
        if memo is None:
            return self._run(mode, fn, plain, plain_kw)
        known = memo.known()
        key, inputs = memo.key(fn, plain, plain_kw, known)
        if key is None:
            memo.changed()
            return self._run(mode, fn, plain, plain_kw)
        calls = memo.calls(key)
        last = self._calls.get(id(calls))
        k = last[1] + 1 if last is not None and last[0] is calls else 0
        if k == 0:
            memo.used(key)
        self._calls[id(calls)] = (calls, k)
        result = memo.get(calls, k, inputs, known)
        if result is MISS:
            result = memo.like(calls, k, inputs)
            if result is MISS:
                before = memo.before(inputs)
                result = self._run(mode, fn, plain, plain_kw)
                memo.put(calls, k, result, inputs, before)
        return result

    @staticmethod
    def _run(mode: Any, fn: Any, plain: list, plain_kw: dict) -> Any:
        try:
            if _like_its_input(fn, plain):
                like = _batch_norm_like(mode, plain)
                if like is not None:
                    return like
            made = on_twins(mode, fn, plain, plain_kw)
            if made is not None:
                return made
            written = in_place(mode, fn, plain, plain_kw)
            if written is not NOT_DONE:
                return written
            with mode, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return _apply(fn, plain, plain_kw)
        except Exception as error:  # noqa: BLE001 - data-dependent, unsupported on fakes, or the op raises
            return _raised(error, mode, fn, plain, plain_kw)

    def fake(self, tensor: torch.Tensor) -> Any:
        """The fake of a live tensor (the same one each time), or ``None`` if it has none."""
        mode = self._fake_mode()
        try:
            return _kept().fake(mode, tensor)
        except Exception:  # noqa: BLE001 - a tensor subclass or layout fakes do not support
            return None

    def _fake_mode(self) -> Any:
        if self._mode is None:
            kept = _kept()
            self._mode = kept.mode()
            self._memo = kept.memo
        return self._mode

    def _plain(self, value: Value) -> Any:
        kind = type(value)  # (no value class has subclasses)
        if kind is Tensor:
            if value.meta is not None:  # type: ignore[attr-defined]
                return value.meta  # type: ignore[attr-defined]
            raise _NoShape
        if kind is Known:
            return value.obj  # type: ignore[attr-defined]
        if isinstance(value, Seq):
            return value.kind(self._plain(v) for v in value.items)
        if isinstance(value, Dict) and all(type(k) is not object for k in value.items):
            return {k: self._plain(v) for k, v in value.items.items()}
        if isinstance(value, TensorTuple) and value.metas is not None:
            return value.metas
        raise _NoShape


def _like_its_input(fn: Any, args: list) -> bool:
    """``torch.batch_norm`` not training, on a contiguous input: its output is ``empty_like(input)``
    (shape, dtype, device and strides; ``tests/test_predict_cache.py`` compares). Run on fakes
    it goes through torch's Python decomposition, 20 ms for each new shape: most of a
    ResNet's cold prediction."""
    if fn is not torch.batch_norm or len(args) < 6 or args[5] is not False or not isinstance(args[0], torch.Tensor):
        return False
    return args[0].dim() >= 2 and args[0].is_contiguous()  # (channels-last: size-1 dims' strides differ)


def _batch_norm_like(mode: Any, args: list) -> Any:
    """What ``torch.batch_norm`` (not training, a contiguous input: :func:`_like_its_input`)
    gives on fakes, or ``None`` to run it: ``empty_like`` its input where the output needs no
    grad; where it does (grad enabled and the input, weight, bias or a running statistic
    requires it: every model whose parameters require grad), a fake like the input that
    requires grad and is no leaf, as the op's own (:func:`~torchlens.fake_direct.fresh`, no
    dispatch). (``empty_like`` alone there made an output without grad: a branch on
    ``y.requires_grad`` after a batch norm was predicted wrong, no gap.)"""
    x = args[0]
    anchor = next((a for a in args[:5] if isinstance(a, torch.Tensor) and a.requires_grad), None)
    if not torch.is_grad_enabled() or anchor is None:
        return _empty_like(mode, x)
    from torch._subclasses.fake_tensor import FakeTensor

    if any(type(t) is not FakeTensor or t.fake_mode is not mode for t in (x, anchor)):
        return None
    return fresh(mode, x.shape, x.stride(), x.dtype, x.fake_device, True, anchor)


def _empty_like(mode: Any, fake: Any) -> Any:
    """``torch.empty_like(fake)`` of a contiguous fake of ``mode`` (called outside the mode), made
    as the fake mode makes it (its constructor handler: the meta tensor ``empty_strided``
    gives, wrapped for the fake's device) without dispatching through the mode (~0.4 ms an
    op, most of it its cache; this is ~15 us). Equal in everything a fake has
    (``tests/test_predict_cache.py`` compares); any other tensor goes to ``empty_like``."""
    from torch._subclasses.fake_tensor import FakeTensor

    if type(fake) is not FakeTensor or fake.fake_mode is not mode or fake.constant is not None \
            or fake.layout is not torch.strided or not fake.is_contiguous():
        return torch.empty_like(fake)
    return fresh(mode, fake.shape, fake.stride(), fake.dtype, fake.fake_device, False)


def _signature(tensor: torch.Tensor) -> tuple:
    """All a fake copies from a tensor (not its data, nor the version counter of its data)."""
    return (type(tensor), tensor.shape, tensor.stride(), tensor.storage_offset(), tensor.dtype, tensor.device,
            tensor.layout, tensor.requires_grad, tensor.is_conj(), tensor.is_neg())


class _KeptFakes:
    """The fake-tensor mode and the fakes made in it, kept from one prediction to the next.

    Converting GPT-2's 149 parameters costs more than predicting from cached source, so a
    fake outlives its prediction; but never stale: when a prediction starts, every kept
    fake is checked against its tensor (shape, strides, dtype, device, ``requires_grad``,
    type: :func:`_signature`) and against itself (an in-place op of an earlier prediction
    bumps its version counter or changes its shape: read again only when the memo's epoch
    moved since the last check, see :class:`~torchlens.fake_memo.OpMemo`). If any differs, or more than
    :data:`_KEPT` are kept, the mode and all its fakes are dropped and the prediction starts
    a new mode (the mode's own memo would otherwise hand back the old fake). One per thread:
    a mode is not shared across threads.
    """

    def __init__(self) -> None:
        self._mode: Any = None
        #: What ops gave on fakes of this mode (dropped with it).
        self.memo: Optional[OpMemo] = None
        #: ``id(tensor)`` -> (weak reference, its signature, its fake, the fake's signature and version).
        self._entries: dict[int, tuple[weakref.ref, tuple, Any, tuple]] = {}
        #: The memo's epoch when the fakes were last found unchanged (no op has run on them since).
        self._checked = -1

    def mode(self) -> Any:
        """The mode of a prediction starting now (a new one if any kept fake is stale)."""
        memo = self.memo
        fakes_checked = memo is not None and memo.epoch == self._checked
        if self._mode is None or len(self._entries) > _KEPT or not all(
                _signature(tensor) == live and (fakes_checked or (*_signature(fake), fake._version) == made)
                for ref, live, fake, made in list(self._entries.values()) if (tensor := ref()) is not None):
            from torch._subclasses.fake_tensor import FakeTensorMode

            self._mode = FakeTensorMode(allow_non_fake_inputs=True)
            self._entries = {}
            self.memo = memo = OpMemo(self._mode)
        assert memo is not None
        self._checked = memo.epoch
        return self._mode

    def fake(self, mode: Any, tensor: torch.Tensor) -> Any:
        if mode is not self._mode:  # another prediction in this thread started a new mode since
            return mode.from_tensor(tensor)
        entry = self._entries.get(id(tensor))
        if entry is not None and entry[0]() is tensor:
            return entry[2]
        fake = live(mode, tensor)
        if fake is None:
            fake = mode.from_tensor(tensor)
        key, entries = id(tensor), self._entries

        def forget(_: object) -> None:  # a dead tensor's id may be reused: its fake goes with it
            entries.pop(key, None)

        entries[key] = (weakref.ref(tensor, forget), _signature(tensor), fake, (*_signature(fake), fake._version))
        return fake


#: Fakes kept at most (past it, the next prediction starts afresh).
_KEPT = 10_000
_local = threading.local()


def _kept() -> _KeptFakes:
    kept = getattr(_local, "fakes", None)
    if kept is None:
        kept = _local.fakes = _KeptFakes()
    return kept


def _holds_tensor(obj: Any) -> bool:
    if isinstance(obj, torch.Tensor):
        return True
    return isinstance(obj, (tuple, list)) and any(_holds_tensor(o) for o in obj)


class _NoTorch(torch.overrides.TorchFunctionMode):
    """Refuses every torch call: code run for real on stand-ins must not run (unrecorded) ops."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        raise RuntimeError(f"{getattr(func, '__name__', func)} called while building an object for real")


def _reads_check_as_attribute(fn: Any) -> bool:
    """Whether ``fn`` is recorded as one op although torch's own Python: an ``nn.init`` function,
    whose code calls the torch-function check as an attribute
    (``torch.overrides.has_torch_function_variadic(...)``) that the capture's bypass, which
    patches the module's names, does not reach, and which returns the tensor it fills. Others
    that read the check so (``torch._assert``, ``torch.sym_max``) return no tensor, so the
    capture records nothing for them, and a wrapper that calls no check itself (``F.max_pool2d``,
    made by ``boolean_dispatch``) is followed into what it calls: both are read as Python."""
    code = getattr(fn, "__code__", None)
    names = getattr(fn, "__globals__", {})
    return code is not None and getattr(fn, "__module__", None) == "torch.nn.init" \
        and any(name in code.co_names and name not in names for name in CHECK_NAMES)


@functools.lru_cache(maxsize=None)
def _schema_outputs(name: str) -> Optional[int]:
    """How many tensors ``aten::name`` returns, where every overload but the ``out=`` ones
    agrees (``adaptive_max_pool2d``: 2); ``None`` where they differ or it is not an aten op."""
    counts = {len(schema.returns) for schema in torch._C._jit_get_schemas_for_operator(f"aten::{name}")
              if "out" not in schema.overload_name and schema.returns
              and all(str(r.type) == "Tensor" for r in schema.returns)}
    return counts.pop() if len(counts) == 1 else None
