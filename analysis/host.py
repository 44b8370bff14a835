"""What the prediction needs to know about the library whose calls it predicts.

The interpreter (:mod:`torchlens.analysis.interpreter`) knows Python; a :class:`Host` knows which
callables are *ops* and what they return, what a tensor is, and how modules are called.
``torchlens.predict`` supplies the torch host; the torch-free tests supply one for the
stand-in recorder (:mod:`torchlens.capture.standin`). The defaults describe a library with no
modules, no hooks and no dispatch intrinsics.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Callable, Optional, Sequence

from .values import Value

__all__ = ["Host", "Intrinsic", "Member", "OpRaises"]


class Intrinsic(Enum):
    """Library functions the interpreter models itself (:meth:`Host.intrinsic`)."""

    #: A ``has_torch_function*`` check.
    CHECK = "check"
    #: The ``handle_torch_function`` dispatcher.
    DISPATCH = "dispatch"
    #: A transform boundary recorded as one op (``torch.func.vmap``).
    TRANSFORM = "transform"
    #: Returns its first argument as it is: a decorator that returns the function it is given
    #: (``torch._dynamo.disable``); ``Tensor.as_subclass``, the same data as another class with
    #: no op the capture sees.
    IDENTITY = "identity"
    #: The library's own module call (``nn.Module.__call__`` reached from a ``__call__`` override).
    MODULE_CALL = "module_call"
    #: A custom autograd function's ``apply``: calls ``cls.forward(ctx, *args)`` from C.
    APPLY = "apply"
    #: Makes a tensor from data outside the library with no op the capture sees (``from_numpy``).
    UNSEEN = "unseen"


class Member(Enum):
    """What an attribute of the tensor type is (:meth:`Host.tensor_attribute`)."""

    #: A property that records an op (``.T``, ``.mT``).
    OP = "op"
    #: A method or operator dunder of the tensor type (a callable).
    METHOD = "method"
    #: A property holding another tensor (``.grad``, ``.data``).
    TENSOR = "tensor"
    #: Metadata, not an op (``.shape``, ``.dtype``).
    QUERY = "query"


class OpRaises(Exception):
    """Raised by :meth:`Host.op_result` when the op raises for certain with these arguments
    (their shapes do not fit it); the text says what it raises (``RuntimeError: ...``)."""


class Host:
    """The library being predicted. Subclass and override what applies."""

    #: Instances of this type are tensors (live parameters and buffers become ``Tensor``).
    tensor_type: type = type(None)

    def op_name(self, fn: Any) -> Optional[str]:
        """The op name if calling ``fn`` records an op (``torch.tanh`` -> ``tanh``), else ``None``.
        Not asked of a Python method bound at the call (``types.MethodType``): its function is
        called with the receiver first, and asked instead; nor of a module (:meth:`is_module`):
        calling one is a module call."""
        return None

    def op_result(self, name: str, fn: Any, args: Sequence[Value], kwargs: dict[str, Value],
                  make_tensor: Callable[[Any], Value],
                  make_tuple: Callable[[Optional[int], Optional[tuple]], Value], once: bool = False) -> Optional[Value]:
        """What an op returns: ``make_tensor(meta)``, ``make_tuple(n, metas)`` (``meta``: the
        output's stand-in, see :attr:`~analysis.values.Tensor.meta`, or ``None``), a value (a
        query's answer), or ``None`` when it returns no tensor and the answer is unknown (no op
        is recorded unless ``make_*`` was called). Raises :class:`OpRaises` when the op raises
        for certain with these arguments. ``once``: the run makes this call exactly once where
        it stands, so the host may give its output's contents (:attr:`~analysis.values.Tensor.data`)."""
        return make_tensor(None)

    def stand_in(self, tensor: Any) -> Any:
        """The data-free stand-in of a live tensor (see :attr:`~analysis.values.Tensor.meta`):
        the same object for the same tensor, or ``None``."""
        return None

    def call_for_real(self, fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """Call ``fn`` on stand-ins, refusing (raising) if it calls into the library at all:
        what runs there would be ops the prediction does not record."""
        return fn(*args, **kwargs)

    def dispatch_op(self, fn: Any) -> Optional[str]:
        """The op ``handle_torch_function(fn, ...)`` records, or ``None`` when the dispatcher
        re-enters ``fn`` as Python (torch's own functions such as ``F.softmax``)."""
        return self.op_name(fn)

    def intrinsic(self, fn: Any) -> Optional[Intrinsic]:
        """The kind of intrinsic ``fn`` is, or ``None`` (not asked of a bound Python method nor of a
        module, as :meth:`op_name`)."""
        return None

    def constant_call(self, fn: Any) -> bool:
        """Whether ``fn`` may be called for real on concrete arguments (pure, tensor-free)."""
        return False

    def tensor_attribute(self, name: str) -> tuple[Member, Any]:
        """``(OP, name)`` for an op property (``.T``), ``(METHOD, obj)`` for a method or
        dunder of the tensor type, ``(TENSOR, None)`` for a tensor-valued property,
        ``(QUERY, None)`` for metadata (``.shape``)."""
        member = getattr(self.tensor_type, name, None)
        return (Member.METHOD, member) if member is not None else (Member.QUERY, None)

    def is_module(self, obj: Any) -> bool:
        """Whether calling ``obj`` is a module call (a new scope)."""
        return False

    def is_module_class(self, cls: Any) -> bool:
        """Whether instances of ``cls`` are modules (prediction from a class)."""
        return False

    def module_address(self, obj: Any) -> Optional[str]:
        """A live module's address in the model (``self`` for the root)."""
        return None

    def module_types(self) -> dict[str, str]:
        """Address -> class name of each module of the live model (empty: prediction from a class)."""
        return {}

    def named_count(self) -> Optional[int]:
        """How many distinct modules the live model has as a forward starts (the capture numbers
        a module outside them after them: ``<ReLU#k>``), or ``None`` (prediction from a class)."""
        return None

    def module_forward(self, obj: Any) -> Any:
        """The callable a module call runs (its bound ``forward``)."""
        raise NotImplementedError

    def module_hooks(self, obj: Any) -> tuple[list, list]:
        """A live module's forward pre-hooks and forward hooks, in call order."""
        return [], []

    def boundary_op(self, obj: Any) -> Optional[str]:
        """The op name of a module recorded as one boundary op (TorchScript), else ``None``."""
        return None

    def container_items(self, cls: Any, args: Sequence[Value]) -> Optional[dict[str, Value]]:
        """Items of a container module built from ``args`` (``ModuleList([...])``), or ``None``."""
        return None

    def emulate(self, fn: Any, args: Sequence[Value], kwargs: dict[str, Value]) -> Optional[Value]:
        """The result of a library function the prediction models instead of reading, or ``None``."""
        return None

    def call_override(self, obj: Any) -> Any:
        """A Python ``__call__`` a module's class defines instead of the library's, or ``None``."""
        return None

    def function_context(self) -> Any:
        """The ``ctx`` object handed to a custom autograd function's ``forward``."""
        return None

    def output_fields(self, name: str) -> tuple[str, ...]:
        """The names of op ``name``'s outputs, when it returns a named tuple (``values``,
        ``indices`` of ``max(x, dim)``); ``()`` otherwise."""
        return ()

    def type_error_guard(self, code: Any) -> bool:
        """Whether ``code`` is a library's wrapper whose ``try`` around one op only turns a
        ``TypeError`` into ``NotImplemented`` (decided by the op's argument types, which the
        computed ops share): its ``except`` arm does not run when the op was computed."""
        return False

    def guard_passes(self, read: Callable[[str], Optional[Value]]) -> bool:
        """Whether the ``TypeError`` guard (:meth:`type_error_guard`) whose frame's variables
        ``read`` gives lets its op through whatever the shapes: its operands are of types the op
        takes (tensors and plain numbers), so its ``except`` arm does not run."""
        return False

    def read_raises(self, read: Callable[..., Any], args: Sequence[Value]) -> Optional[str]:
        """What ``read(*args)`` raises for certain (``"TypeError: ..."``), where the builtin
        ``read`` takes the tensors among ``args`` as plain Python values (``bool``, ``float``,
        ``len``, ``operator.index``, ``round``, ``format``...): decided by their metadata, or,
        where that is not known, only when it raises whatever their shape and dtype; ``None``
        when it does not or the host cannot tell (an argument neither a tensor nor known)."""
        return None

    def unfollowed(self, fn: Any) -> Optional[str]:
        """Why a library function is not followed (its ops are a gap), or ``None``."""
        return None

    def plain_function(self, fn: Any) -> bool:
        """Whether a Python function is read as it is whatever its arguments and whether the
        model runs: never skipped, unfollowed nor emulated (:meth:`skip_function`,
        :meth:`unfollowed`, :meth:`emulate`)."""
        return True

    def skip_function(self, fn: Any, running: bool = False) -> bool:
        """Whether a Python function is plumbing the prediction need not read (returns ``None``);
        ``running``: the model is running (its ops are recorded), not a class's ``__init__`` read."""
        return False
