"""The abstract run: execute a model's Python over abstract tensors and record every op call.

The prediction runs the model's code the way CPython would, but tensors carry no data
(:class:`~analysis.values.Tensor`), and every place comes from the compiled code
(:mod:`torchlens.analysis.source`). Whatever the live model makes concrete (submodules, container
lengths, configs, flags, shared instances) is read for real, without changing anything:
attribute writes go to an overlay, never to the model. Loops with a known iterable are
unrolled, so scopes, helpers and recursion are followed exactly as the capture sees them;
what cannot be decided runs under a :class:`~analysis.passes.Count` saying so.

This module holds the run's state and the call machinery; expressions are in
:mod:`torchlens.analysis.evaluate`, statements in :mod:`torchlens.analysis.execute`, Python's builtins in
:mod:`torchlens.analysis.pybuiltins`. Torch-free: a :class:`~analysis.host.Host` says what an op is.
"""

from __future__ import annotations

import ast
import inspect
import types
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import CodeType
from typing import Any, Iterator, Optional, Sequence

from .errors import SourceUnavailableError
from .evaluate import Evaluator
from .events import Event, Gap, HookMark, Link
from .execute import Executor, Signal
from .host import CHECK, DISPATCH, IDENTITY, TRANSFORM, Host
from .passes import ONE, Count
from .pybuiltins import Builtins
from .sites import Place, collapse
from .source import CALL_OPS, SourceFile, source_of_code
from .values import (NONE, Bound, Dict, Function, Instance, Known, Opaque, Partial, Seq, Tensor,
                     TensorTuple, Union, Value)

__all__ = ["Interpreter", "Frame", "Boundary", "Budget"]

#: Interpreted calls nested deeper than this are not followed (a note says so).
MAX_DEPTH = 80
#: A code object repeated more than this many times in one chain stops (unbounded recursion).
MAX_RECURSION = 24


#: Standard-library modules whose Python functions are called for real on concrete arguments.
_STDLIB_PURE = frozenset({"inspect", "typing", "dataclasses", "enum", "collections", "_collections_abc",
                          "re", "abc", "keyword", "string", "numbers", "functools", "operator", "copy"})
#: Modules whose functions only report (warnings, logs): not followed, they run no op.
_SILENT = frozenset({"warnings", "logging"})


class Budget(Exception):
    """Raised when a prediction runs past its step budget (a huge or looping program)."""


@dataclass(eq=False)
class Frame:
    """One interpreted function call."""

    code: CodeType
    source: SourceFile
    node: ast.AST
    #: Local variables; shared (by reference) with functions defined inside.
    locals: dict[str, Value]
    #: Locals of the enclosing functions, innermost first (closures).
    enclosing: list[dict[str, Value]]
    #: The function's globals (a live module's ``__dict__``).
    globals: dict
    #: Identity of the free-variable values (tells shared wrapper code apart, sites §4).
    closure_id: Any = None
    #: ``__class__`` for zero-argument ``super()``.
    owner: Optional[type] = None
    #: The place currently running in this frame (set before each call).
    at: Optional[Place] = None
    #: Values returned on paths the prediction could not decide.
    maybe_returns: list[Value] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Boundary:
    """A module call on the stack: chains stop here; its address is the scope."""

    address: str


class Interpreter(Evaluator, Executor, Builtins):
    """One abstract run. Use :func:`analysis.predict.predict_call`."""

    def __init__(self, host: Host, max_steps: int = 1_000_000) -> None:
        self.host = host
        self.events: list[Event] = []
        self.gaps: list[Gap] = []
        self.stack: list[Any] = []
        self.mult: Count = ONE
        self.recording = True
        self.bypass_check = False
        self.steps = 0
        self.max_steps = max_steps
        #: (id(live object), attribute) -> value written by the code being read.
        self.overlay: dict[tuple[int, str], Value] = {}
        self._keep: list[Any] = []

    # -- state -------------------------------------------------------------------------------

    @property
    def frame(self) -> Optional[Frame]:
        """The innermost interpreted frame of the current scope, if any."""
        for entry in reversed(self.stack):
            if isinstance(entry, Frame):
                return entry
            if isinstance(entry, Boundary):
                return None
        return None

    def step(self) -> None:
        self.steps += 1
        if self.steps > self.max_steps:
            raise Budget(f"stopped after {self.max_steps} steps")

    @contextmanager
    def scaled(self, count: Count) -> Iterator[None]:
        """Run a block whose events happen ``count`` times per time the block is reached."""
        saved = self.mult
        self.mult = saved * count
        try:
            yield
        finally:
            self.mult = saved

    def wrap(self, obj: Any) -> Value:
        """A live object as a value: tensors become :class:`Tensor`."""
        if isinstance(obj, self.host.tensor_type):
            return Tensor(obj)
        return Known(obj)

    # -- chains and events -------------------------------------------------------------------

    def scope_and_chain(self) -> tuple[str, Optional[tuple[Link, ...]], str]:
        """The current scope address, collapsed chain (``None`` if a place is unknown), and why."""
        segments: list[list[Any]] = [[]]
        scope = "self"
        for entry in reversed(self.stack):
            if isinstance(entry, Boundary):
                scope = entry.address
                break
            if isinstance(entry, HookMark):
                segments.append([entry])
                segments.append([])
            else:
                segments[-1].append(entry)
        chain: list[Link] = []
        for segment in reversed(segments):
            frames = list(reversed(segment))
            if frames and isinstance(frames[0], HookMark):
                chain.append(frames[0])
                continue
            for frame in frames:
                if frame.at is None:
                    return scope, None, f"no place for a call in {frame.code.co_name} ({frame.code.co_filename})"
            codes = [f.code for f in frames]
            repeats = len({id(c) for c in codes}) < len(codes)
            kept = collapse(codes, [f.closure_id for f in frames] if repeats else None)
            chain.extend(frames[i].at for i in kept)
        return scope, tuple(chain), ""

    def emit(self, name: str, slots: Optional[int] = 1) -> Event:
        """Record one op call at the current place."""
        scope, chain, why = self.scope_and_chain()
        event = Event(scope, chain, name, self.mult, slots, why)
        if self.recording:
            self.events.append(event)
        return event

    def gap(self, why: str) -> None:
        """Record that the run could not follow a call that may run ops."""
        if self.recording:
            scope, chain, _ = self.scope_and_chain()
            self.gaps.append(Gap(scope, chain, why))

    # -- calls -------------------------------------------------------------------------------

    def call(self, fn: Value, args: Sequence[Value], kwargs: dict[str, Value]) -> Value:
        """Call ``fn`` from the current place (``frame.at`` is already set by the caller)."""
        self.step()
        if isinstance(fn, Known):
            return self.call_known(fn.obj, list(args), kwargs)
        if isinstance(fn, Function):
            return self.run_function(fn, list(args), kwargs)
        if isinstance(fn, Bound):
            return self.call(fn.func, [fn.receiver, *args], kwargs)
        if isinstance(fn, Partial):
            return self.call(fn.func, [*fn.args, *args], {**fn.kwargs, **kwargs})
        if isinstance(fn, Instance):
            if fn.address is not None:
                return self.module_call_instance(fn, list(args), kwargs)
            call = self.lookup_class_attr(fn.cls, "__call__")
            if call is not None:
                return self.call(self.wrap(call), [fn, *args], kwargs)
        if isinstance(fn, Union):
            options = [v for v in fn.options if not isinstance(v, Opaque)]
            if options:
                return self.join([self.call(v, args, kwargs) for v in options])
        if isinstance(fn, Tensor):
            return self.opaque_call(fn, args, kwargs, "calling a tensor")
        return self.opaque_call(fn, args, kwargs, getattr(fn, "why", "") or "call to an unknown value")

    def opaque_call(self, fn: Any, args: Sequence[Value], kwargs: dict[str, Value], why: str) -> Value:
        """A call the run cannot follow: a gap if tensors go in."""
        if any(self.may_hold_tensor(v) for v in (*args, *kwargs.values())):
            self.gap(why)
        return Opaque(why)

    def may_hold_tensor(self, value: Value) -> bool:
        if isinstance(value, (Tensor, TensorTuple, Opaque, Instance, Function)):
            return not (isinstance(value, Opaque) and value.kind == "number")
        if isinstance(value, Seq):
            return any(self.may_hold_tensor(v) for v in value.items)
        if isinstance(value, Dict):
            return any(self.may_hold_tensor(v) for v in value.items.values())
        return False

    def call_known(self, obj: Any, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """Call a concrete callable: an op, an intrinsic, a module, Python code or a builtin."""
        host = self.host
        intrinsic = host.intrinsic(obj)
        if intrinsic is not None:
            return self.call_intrinsic(intrinsic, obj, args, kwargs)
        name = host.op_name(obj)
        if name is not None:
            return self.call_op(name, obj, args)
        if host.is_module(obj):
            return self.module_call(obj, args, kwargs)
        if isinstance(obj, types.MethodType):
            return self.call(self.wrap(obj.__func__), [self.wrap(obj.__self__), *args], kwargs)
        handled = self.call_builtin(obj, args, kwargs)
        if handled is not None:
            return handled
        if isinstance(obj, types.FunctionType):
            module = (obj.__module__ or "").partition(".")[0]
            if module in _SILENT:
                return NONE
            if module in _STDLIB_PURE:
                concrete = self.concrete_args(args, kwargs)
                if concrete is not None:
                    try:
                        return self.wrap(obj(*concrete[0], **concrete[1]))
                    except Exception:  # noqa: BLE001 - the program would raise; predict nothing
                        return Opaque(f"{obj.__qualname__} raised")
            return self.run_live_function(obj, args, kwargs)
        if isinstance(obj, type):
            return self.construct(obj, args, kwargs)
        call = getattr(type(obj), "__call__", None)
        if isinstance(call, types.FunctionType):
            return self.run_live_function(call, [Known(obj), *args], kwargs)
        if getattr(obj, "__module__", None) == "builtins" or getattr(obj, "__self__", None) is not None \
                and isinstance(obj, types.BuiltinMethodType) and not self.may_hold_tensor(Known(obj.__self__)):
            return Opaque(f"{_name(obj)} of unknown values")  # a builtin runs no op
        return self.opaque_call(obj, args, kwargs, f"{_name(obj)} cannot be read (no Python source)")

    def call_op(self, name: str, fn: Any, args: Sequence[Value]) -> Value:
        """An op call: record it and return what it returns."""
        events: list[Event] = []

        def make_tensor() -> Value:
            events.append(self.emit(name))
            return Tensor()

        def make_tuple(count: Optional[int]) -> Value:
            event = self.emit(name, count)
            events.append(event)

            def resolve(n: int) -> None:
                if event.slots is None or event.slots < n:
                    event.slots = n

            return TensorTuple(resolve, count)

        result = self.host.op_result(name, fn, args, make_tensor, make_tuple)
        if result is not None:
            return result
        concrete = self.concrete_args(list(args), {})
        if concrete is not None:  # a query (dim, size) of an input or parameter: read it
            try:
                return self.wrap(fn(*concrete[0]))
            except Exception:  # noqa: BLE001
                pass
        return Opaque(f"result of {name}", "number")

    def call_intrinsic(self, kind: str, fn: Any, args: list[Value], kwargs: dict[str, Value]) -> Value:
        if kind == CHECK:  # has_torch_function*: True under a mode, except right after a bypass
            if self.bypass_check:
                self.bypass_check = False
                return Known(False)
            return Known(True)
        if kind == DISPATCH:  # handle_torch_function(public_api, relevant_args, *args, **kwargs)
            api = args[0] if args else Opaque("no public api")
            rest = args[2:]
            name = self.host.dispatch_op(api.obj) if isinstance(api, Known) else None
            if name is not None:
                return self.call_op(name, api.obj, rest)
            self.bypass_check = True  # torch's own Python re-entered past its check
            try:
                return self.call(api, rest, kwargs)
            finally:
                self.bypass_check = False
        if kind == IDENTITY:
            return args[0] if args else NONE
        if kind == TRANSFORM:  # torch.func transform: one boundary op, nothing inside
            return self.call_op(self.host.op_name(fn) or getattr(fn, "__name__", "transform"), fn, args)
        return Opaque(f"intrinsic {kind}")

    # -- modules -----------------------------------------------------------------------------

    def module_call(self, module: Any, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """A call of a live module: pre-hooks, forward in the module's scope, forward hooks."""
        host = self.host
        boundary = host.boundary_op(module)
        if boundary is not None:
            return self.call_op(boundary, module, args)
        address = host.module_address(module)
        if address is None:
            return self.opaque_call(module, args, kwargs, f"{_name(module)} is not part of the model")
        pre_hooks, hooks = host.module_hooks(module)
        for hook in pre_hooks:
            result = self.run_hook(address, hook, [Known(module), Seq(list(args))])
            if not (isinstance(result, Known) and result.obj is None):
                args = list(self.unpack(result, None)) if isinstance(result, Seq) else [result]
        self.stack.append(Boundary(address))
        try:
            out = self.call(self.wrap(host.module_forward(module)), args, kwargs)
        finally:
            self.stack.pop()
        for hook in hooks:
            result = self.run_hook(address, hook, [Known(module), Seq(list(args)), out])
            if not (isinstance(result, Known) and result.obj is None):
                out = result
        return out

    def run_hook(self, address: str, hook: Any, args: list[Value]) -> Value:
        self.stack.append(HookMark(address))
        try:
            return self.call(self.wrap(hook), args, {})
        finally:
            self.stack.pop()

    def module_call_instance(self, module: Instance, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """A call of a module built while reading ``__init__`` (prediction from a class)."""
        forward = self.lookup_class_attr(module.cls, "forward")
        if forward is None:
            return self.opaque_call(module, args, kwargs, f"{module.cls.__name__} has no forward")
        self.stack.append(Boundary(module.address or "self"))
        try:
            return self.call(self.wrap(forward), [module, *args], kwargs)
        finally:
            self.stack.pop()

    def construct(self, cls: type, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """``cls(...)``: an object built by reading ``__init__`` (a module when reading a class,
        or a plain Python object such as a cache made inside forward), else opaque."""
        if not self.host.is_module_class(cls):
            init = self.lookup_class_attr(cls, "__init__")
            if cls.__new__ is object.__new__ and isinstance(init, types.FunctionType):
                instance = Instance(cls)
                self.run_live_function(init, [instance, *args], kwargs)
                return instance
            return self.opaque_call(cls, args, kwargs, f"constructing {cls.__qualname__}")
        instance = Instance(cls)
        items = self.host.container_items(cls, args)
        if items is not None:
            instance.items = items
            return instance
        init = self.lookup_class_attr(cls, "__init__")
        if isinstance(init, types.FunctionType) and self.host.is_module_class(init_owner(cls, init)):
            saved, self.recording = self.recording, False
            try:
                self.run_live_function(init, [instance, *args], kwargs)
            finally:
                self.recording = saved
        return instance

    @staticmethod
    def lookup_class_attr(cls: type, name: str) -> Any:
        for klass in getattr(cls, "__mro__", (cls,)):
            if name in vars(klass):
                return vars(klass)[name]
        return None

    # -- Python functions --------------------------------------------------------------------

    def run_live_function(self, fn: types.FunctionType, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """Interpret a live Python function from its source (opaque if there is none)."""
        if self.host.skip_function(fn):
            return NONE
        emulated = self.host.emulate(fn, args, kwargs)
        if emulated is not None:
            return emulated
        if fn.__code__.co_flags & (inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR | inspect.CO_COROUTINE):
            return Opaque(f"{fn.__qualname__} makes a generator")  # its body runs when consumed
        try:
            src, node = source_of_code(fn.__code__)
        except SourceUnavailableError as error:
            self.gap(f"{fn.__qualname__}: {error}")  # Python that may run ops, whatever its arguments
            return Opaque(f"{fn.__qualname__}: {error}")
        if isinstance(node, ast.Module):
            return self.opaque_call(fn, args, kwargs, f"{fn.__qualname__}: module code")
        closure: dict[str, Value] = {}
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                closure[name] = self.wrap(cell.cell_contents)
            except ValueError:  # an empty cell
                closure[name] = Opaque(f"{name} is not yet bound")
        defaults = [self.wrap(d) for d in fn.__defaults__ or ()]
        kw_defaults = {k: self.wrap(v) for k, v in (fn.__kwdefaults__ or {}).items()}
        closure_id = tuple(id(getattr(c, "cell_contents", None)) for c in fn.__closure__ or ()) or None
        owner = closure.get("__class__")
        return self.run_code(src, node, fn.__code__, fn.__globals__, [closure], closure_id,
                             owner.obj if isinstance(owner, Known) else None,
                             defaults, kw_defaults, args, kwargs)

    def run_function(self, fn: Function, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """Interpret a function defined by the code being read."""
        closure_id = tuple(id(_lookup(fn.enclosing, name)) for name in fn.code.co_freevars) or None
        return self.run_code(fn.source, fn.node, fn.code, fn.globals, fn.enclosing, closure_id, None,
                             fn.defaults, fn.kw_defaults, args, kwargs)

    def run_code(self, src: SourceFile, node: ast.AST, code: CodeType, globals_: dict,
                 enclosing: list[dict[str, Value]], closure_id: Any, owner: Optional[type],
                 defaults: list[Value], kw_defaults: dict[str, Value], args: list[Value],
                 kwargs: dict[str, Value]) -> Value:
        """Bind arguments and run a function body in a new frame."""
        depth = sum(isinstance(e, Frame) for e in self.stack)
        repeats = sum(isinstance(e, Frame) and e.code is code for e in self.stack)
        if depth > MAX_DEPTH or repeats > MAX_RECURSION:
            return self.opaque_call(code, args, kwargs, f"{code.co_name}: calls nested too deep to follow")
        if id(src.codes.get(id(node))) in src.unaligned:
            return self.opaque_call(code, args, kwargs, f"{code.co_name}: bytecode and source do not align")
        local = self.bind(node.args, defaults, kw_defaults, args, kwargs)  # type: ignore[attr-defined]
        frame = Frame(code, src, node, local, enclosing, globals_, closure_id, owner)
        self.stack.append(frame)
        saved = self.mult
        try:
            if isinstance(node, ast.Lambda):
                return self.eval(node.body)
            signal = self.exec_block(node.body)  # type: ignore[attr-defined]
            result = signal.value if isinstance(signal, Signal) and signal.kind == "return" else NONE
            if isinstance(signal, Signal) and signal.kind == "raise":
                result = Opaque(f"{code.co_name} raises")
            if frame.maybe_returns:
                result = self.join([*frame.maybe_returns, result])
            return result
        finally:
            self.mult = saved
            self.stack.pop()

    def bind(self, spec: ast.arguments, defaults: list[Value], kw_defaults: dict[str, Value],
             args: list[Value], kwargs: dict[str, Value]) -> dict[str, Value]:
        """Parameters -> values, as CPython binds them (missing ones become opaque)."""
        positional = [a.arg for a in (*spec.posonlyargs, *spec.args)]
        local: dict[str, Value] = {}
        for name, value in zip(positional, args):
            local[name] = value
        extra = args[len(positional):]
        if spec.vararg is not None:
            local[spec.vararg.arg] = Seq(list(extra))
        rest = dict(kwargs)
        for name in positional + [a.arg for a in spec.kwonlyargs]:
            if name in rest and name not in local:
                local[name] = rest.pop(name)
        if spec.kwarg is not None:
            local[spec.kwarg.arg] = Dict(rest)
        first_default = len(positional) - len(defaults)
        for k, name in enumerate(positional):
            if name not in local:
                local[name] = defaults[k - first_default] if k >= first_default else Opaque(f"argument {name} missing")
        for a in spec.kwonlyargs:
            if a.arg not in local:
                local[a.arg] = kw_defaults.get(a.arg, Opaque(f"argument {a.arg} missing"))
        return local

    def call_place(self, node: ast.AST) -> None:
        """Set the current frame's place to the call instruction of ``node``."""
        frame = self.frame
        if frame is not None:
            frame.at = frame.source.place(node, CALL_OPS)


def init_owner(cls: type, init: Any) -> type:
    """The class in ``cls``'s MRO that defines ``init``."""
    for klass in cls.__mro__:
        if vars(klass).get("__init__") is init:
            return klass
    return cls


def _lookup(scopes: list[dict[str, Value]], name: str) -> Optional[Value]:
    for scope in scopes:
        if name in scope:
            return scope[name]
    return None


def _name(obj: Any) -> str:
    return getattr(obj, "__qualname__", None) or getattr(type(obj), "__qualname__", type(obj).__name__)

