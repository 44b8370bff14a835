"""Python's builtins over abstract values: iteration, unpacking, ``len``, ``sum``, ``map``...

A builtin called on concrete arguments is called for real when it is pure (``len``,
``isinstance``, ``range``, string methods, ``math``). Builtins that call back into Python
or consume iterables (``sum``, ``map``, ``list``, ``zip``, ``sorted``) are modelled, because
what they call runs *from their caller's place* with no frame of their own: ``sum`` over
tensors is one ``radd`` then ``add`` per further item, all at the ``sum(...)`` call, and a
lazy ``map`` runs its function when something consumes it.
"""

from __future__ import annotations

import builtins
import copy
import functools
import types
from typing import Any, Callable, Iterator, Optional

from .evaluate import _PyMethod, _SuperRef
from .values import (NONE, Dict, Function, Instance, Known, Lazy, Opaque, Partial, Seq,
                     Tensor, TensorTuple, Union, Value)

__all__ = ["Builtins"]

#: Concrete iterables longer than this are not unrolled (their loops get a count instead).
MAX_UNROLL = 4096
#: Builtins that are pure on concrete arguments: called for real.
_PURE = {builtins.len, builtins.isinstance, builtins.issubclass, builtins.hasattr, builtins.range,
         builtins.int, builtins.float, builtins.bool, builtins.str, builtins.abs, builtins.round,
         builtins.divmod, builtins.pow, builtins.repr, builtins.callable, builtins.tuple, builtins.frozenset,
         builtins.min, builtins.max, builtins.hash, builtins.slice, builtins.ord, builtins.chr, builtins.type,
         builtins.sorted, builtins.any, builtins.all, builtins.list, builtins.set, builtins.dict,
         builtins.format, builtins.id, builtins.bin, builtins.hex}
_PURE_MODULES = ("math", "operator", "_operator")
#: Methods of concrete builtin values that never mutate them.
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault",
                       "add", "discard", "sort", "reverse", "popitem", "__setitem__", "__delitem__",
                       "write", "send", "close"})
_PLAIN_RECEIVERS = (str, bytes, int, float, complex, tuple, frozenset, range, dict, list, set, type(None))


class Builtins:
    """Mixin of :class:`analysis.interpreter.Interpreter`: builtins and iteration."""

    # -- iteration ---------------------------------------------------------------------------

    def iterate(self, value: Value) -> Optional[Iterator[Value]]:
        """A Python iterator over the items of ``value``, or ``None`` when they are unknown."""
        if isinstance(value, Seq):
            return iter(list(value.items))
        if isinstance(value, Dict):
            return iter([Known(k) for k in value.items if type(k) is not object])
        if isinstance(value, Lazy):
            return value.start()
        if isinstance(value, Instance) and value.items is not None:
            return iter(list(value.items.values()))
        if isinstance(value, TensorTuple) and value.count is not None:
            return iter([Tensor() for _ in range(value.count)])
        if isinstance(value, Known):
            obj = value.obj
            if isinstance(obj, (types.GeneratorType, Iterator)) and not isinstance(obj, range):
                return None  # iterating it would consume the live iterator
            try:
                if len(obj) > MAX_UNROLL:
                    return None
                return iter([self.wrap(item) for item in obj])
            except Exception:  # noqa: BLE001 - not sized or not iterable
                return None
        return None

    def unpack(self, value: Value, count: Optional[int]) -> Optional[list[Value]]:
        """``a, b = value``: the items, or ``None`` when unknown."""
        if isinstance(value, TensorTuple):
            if count is not None:
                value.resolve(count)
                return [Tensor() for _ in range(count)]
            return None if value.count is None else [Tensor() for _ in range(value.count)]
        if isinstance(value, Tensor):
            return [Tensor() for _ in range(count)] if count is not None else None
        items = self.iterate(value)
        if items is None:
            return [self.element_of(value) for _ in range(count)] if count is not None else None
        return list(items)

    # -- calls -------------------------------------------------------------------------------

    def call_builtin(self, fn: Any, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
        """Model a builtin or library call; ``None`` when ``fn`` is not one."""
        if isinstance(fn, _PyMethod):
            return self.container_method(fn.name, args[0], args[1:], kwargs)
        handler = _HANDLERS.get(fn) if _hashable(fn) else None
        if handler is not None:
            result = handler(self, args, kwargs)
            if result is not None:
                return result
        if isinstance(fn, functools.partial):
            return self.call(self.wrap(fn.func), [*(self.wrap(a) for a in fn.args), *args],
                             {**{k: self.wrap(v) for k, v in fn.keywords.items()}, **kwargs})
        if self.is_pure(fn):
            concrete = self.concrete_args(args, kwargs)
            if concrete is not None:
                try:
                    return self.wrap(fn(*concrete[0], **concrete[1]))
                except Exception:  # noqa: BLE001 - the program would raise; predict nothing
                    return Opaque(f"{getattr(fn, '__name__', fn)} raised", "number")
            if fn in (builtins.len, builtins.int, builtins.float, builtins.bool, builtins.round, builtins.id,
                      builtins.hash, builtins.repr, builtins.str, builtins.format) or \
                    getattr(fn, "__module__", "") in _PURE_MODULES:
                return Opaque(f"{getattr(fn, '__name__', fn)} of unknown values", "number")
        return None

    def is_pure(self, fn: Any) -> bool:
        if _hashable(fn) and fn in _PURE:
            return True
        if getattr(fn, "__module__", None) in _PURE_MODULES and isinstance(fn, types.BuiltinFunctionType):
            return True
        receiver = getattr(fn, "__self__", None)
        if isinstance(fn, types.BuiltinMethodType) and isinstance(receiver, _PLAIN_RECEIVERS):
            return fn.__name__ not in _MUTATORS
        return self.host.constant_call(fn)

    def concrete(self, value: Value) -> tuple[bool, Any]:
        """The plain Python object a value stands for, when it is fully known."""
        if isinstance(value, Known):
            return True, value.obj
        if isinstance(value, Seq):
            items = [self.concrete(v) for v in value.items]
            if all(ok for ok, _ in items):
                return True, value.kind(obj for _, obj in items)
        if isinstance(value, Dict):
            pairs = [(k, self.concrete(v)) for k, v in value.items.items()]
            if all(ok and type(k) is not object for k, (ok, _) in pairs):
                return True, {k: obj for k, (_, obj) in pairs}
        if isinstance(value, Tensor) and value.live is not None:
            return True, value.live
        return False, None

    def concrete_args(self, args: list[Value], kwargs: dict[str, Value]) -> Optional[tuple[list, dict]]:
        out = [self.concrete(a) for a in args]
        kw = {k: self.concrete(v) for k, v in kwargs.items()}
        if all(ok for ok, _ in out) and all(ok for ok, _ in kw.values()):
            return [obj for _, obj in out], {k: obj for k, (_, obj) in kw.items()}
        return None

    def container_method(self, name: str, receiver: Value, args: list[Value], kwargs: dict) -> Value:
        """Methods of the lists, tuples and dicts the code builds (``kwargs.get``, ``xs.append``)."""
        first = args[0] if args else NONE
        key = first.obj if isinstance(first, Known) else object()
        if isinstance(receiver, Dict):
            items = receiver.items
            if name == "get":
                return items.get(key, args[1] if len(args) > 1 else NONE) if isinstance(first, Known) else Opaque("get")
            if name == "pop":
                default = args[1] if len(args) > 1 else Opaque(f"missing key {key!r}")
                return items.pop(key, default) if isinstance(first, Known) else Opaque("pop")
            if name == "setdefault":
                return items.setdefault(key, args[1] if len(args) > 1 else NONE)
            if name == "update":
                other = first if isinstance(first, Dict) else Dict()
                items.update(other.items)
                items.update(kwargs)
                return NONE
            if name in ("keys", "values", "items", "copy"):
                known = {k: v for k, v in items.items() if type(k) is not object}
                if name == "copy":
                    return Dict(dict(items))
                listed = {"keys": [Known(k) for k in known], "values": list(known.values()),
                          "items": [Seq([Known(k), v]) for k, v in known.items()]}[name]
                return Seq(listed, list)
        if isinstance(receiver, Seq):
            if name == "append":
                receiver.items.append(first)
                return NONE
            if name == "extend":
                more = self.unpack(first, None)
                receiver.items.extend(more or [])
                return NONE
            if name == "insert" and len(args) == 2 and isinstance(first, Known):
                receiver.items.insert(first.obj, args[1])
                return NONE
            if name == "pop" and receiver.items:
                return receiver.items.pop(key if isinstance(key, int) else -1)
            if name == "copy":
                return Seq(list(receiver.items), receiver.kind)
            if name in ("index", "count"):
                ok, obj = self.concrete(receiver)
                return Known(getattr(obj, name)(first.obj)) if ok and isinstance(first, Known) else Opaque(name, "number")
        return Opaque(f"method {name} of a container", "any")

    # -- handlers ----------------------------------------------------------------------------

    def b_len(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        if not args or isinstance(args[0], (Known, Lazy)):
            return None  # concrete: called for real
        items = self.iterate(args[0])
        if items is not None:
            return Known(len(list(items)))
        return None

    def b_isinstance(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        if len(args) != 2 or not isinstance(args[1], (Known, Seq)):
            return None
        ok, classes = self.concrete(args[1])
        if not ok:
            return None
        subject = args[0]
        kind = self.type_of(subject)
        if kind is None:
            if isinstance(subject, Union):
                answers = {self.b_isinstance([o, args[1]], {}).obj for o in subject.options  # type: ignore[union-attr]
                           if self.type_of(o) is not None}
                if len(answers) == 1 and all(self.type_of(o) is not None for o in subject.options):
                    return Known(answers.pop())
            return Opaque("isinstance of an unknown value", "number")
        try:
            return Known(issubclass(kind, classes))
        except TypeError:
            return None

    def type_of(self, value: Value) -> Optional[type]:
        if isinstance(value, Known):
            return type(value.obj)
        if isinstance(value, Tensor):
            return type(value.live) if value.live is not None else self.host.tensor_type
        if isinstance(value, Seq):
            return value.kind
        if isinstance(value, Dict):
            return dict
        if isinstance(value, Instance):
            return value.cls
        if isinstance(value, Function):
            return types.FunctionType
        return None

    def b_type(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        kind = self.type_of(args[0]) if len(args) == 1 else None
        return Known(kind) if kind is not None else None

    def b_getattr(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        if len(args) < 2 or not isinstance(args[1], Known):
            return None
        value = self.attribute(args[0], args[1].obj)
        if isinstance(value, Opaque) and len(args) > 2 and self.lacks(args[0], args[1].obj):
            return args[2]
        return value

    def b_hasattr(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        if len(args) != 2 or not isinstance(args[1], Known) or isinstance(args[0], Known):
            return None
        if isinstance(args[0], Tensor):
            return Known(hasattr(self.host.tensor_type, args[1].obj))
        return Known(not self.lacks(args[0], args[1].obj)) if isinstance(args[0], Instance) else None

    def lacks(self, value: Value, name: str) -> bool:
        """Whether ``value`` certainly has no attribute ``name``."""
        if isinstance(value, Known):
            return (id(value.obj), name) not in self.overlay and not hasattr(value.obj, name)
        if isinstance(value, Instance):
            return name not in value.attrs and all(name not in vars(k) for k in value.cls.__mro__)
        return False

    def b_setattr(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        if len(args) == 3 and isinstance(args[1], Known):
            self.set_attribute(args[0], args[1].obj, args[2])
            return NONE
        return None

    def b_super(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        frame = self.frame
        if args:
            ok, owner = self.concrete(args[0])
            receiver = args[1] if len(args) > 1 else NONE
            return Known(_SuperRef(owner, receiver)) if ok else None
        if frame is None or frame.owner is None:
            return None
        spec = frame.node.args  # type: ignore[attr-defined]
        names = [a.arg for a in (*spec.posonlyargs, *spec.args)]
        receiver = frame.locals.get(names[0], NONE) if names else NONE
        return Known(_SuperRef(frame.owner, receiver))

    def b_sequence(self, kind: type) -> Callable[["Builtins", list[Value], dict], Optional[Value]]:
        def build(run: "Builtins", args: list[Value], kwargs: dict) -> Optional[Value]:
            if not args:
                return Seq([], kind)
            if isinstance(args[0], Known):
                return None  # concrete: called for real
            items = run.unpack(args[0], None)
            return Seq(items, kind) if items is not None else Opaque(f"{kind.__name__} of unknown items")
        return build

    def b_dict(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        if args and isinstance(args[0], Dict):
            return Dict({**args[0].items, **kwargs})
        if not args:
            return Dict(dict(kwargs))
        return None

    def b_sum(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        if not args or isinstance(args[0], Known):
            return None
        items = self.iterate(args[0])
        if items is None:
            return Opaque("sum of unknown items")
        total = args[1] if len(args) > 1 else kwargs.get("start", Known(0))
        for item in items:  # C sum: each addition runs at the sum(...) call's place
            total = self.binop("add", total, item, None, frozenset())
        return total

    def b_map(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        if len(args) < 2:
            return None
        fn, sources = args[0], args[1:]

        def start() -> Iterator[Value]:
            iters = [self.iterate(s) for s in sources]
            if any(it is None for it in iters):
                return
            for items in zip(*iters):  # type: ignore[arg-type]
                yield self.call(fn, list(items), {})

        return Lazy(start, "map")

    def b_zip(self, args: list[Value], kwargs: dict) -> Optional[Value]:

        def start() -> Iterator[Value]:
            iters = [self.iterate(a) for a in args]
            if any(it is None for it in iters):
                return
            for items in zip(*iters):  # type: ignore[arg-type]
                yield Seq(list(items))

        return Lazy(start, "zip")

    def b_enumerate(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        if not args:
            return None
        begin = args[1].obj if len(args) > 1 and isinstance(args[1], Known) else 0

        def start() -> Iterator[Value]:
            items = self.iterate(args[0])
            for k, item in enumerate(items or (), begin):
                yield Seq([Known(k), item])

        return Lazy(start, "enumerate")

    def b_reversed(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        if not args or isinstance(args[0], Known):
            return None
        items = self.unpack(args[0], None)
        return Seq(list(reversed(items)), list) if items is not None else Opaque("reversed of unknown items")

    def b_iter(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        if len(args) != 1 or isinstance(args[0], Known):
            return None
        value = args[0]
        return Lazy(lambda: self.iterate(value) or iter(()), "iter")

    def b_next(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        return Opaque("next of an iterator")

    def b_print(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        return NONE

    def b_all_any(self, want: bool) -> Callable[["Builtins", list[Value], dict], Optional[Value]]:
        def decide(run: "Builtins", args: list[Value], kwargs: dict) -> Optional[Value]:
            if not args or isinstance(args[0], Known):
                return None
            items = run.iterate(args[0])
            if items is None:
                return Opaque("any/all of unknown items", "number")
            unknown = False
            for item in items:
                truth = run.truth(item)
                if truth is want:
                    return Known(want)
                unknown = unknown or truth is None
            return Opaque("any/all undecided", "number") if unknown else Known(not want)
        return decide

    def b_wraps(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        """``functools.wraps(f)``: a decorator that returns the wrapper itself."""
        return Known(_KEEP)

    def b_partial(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        return Partial(args[0], list(args[1:]), dict(kwargs)) if args else None

    def b_deepcopy(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        """``copy.deepcopy`` of an object built from ``__init__``: a distinct object, same shape."""
        if not args or not isinstance(args[0], Instance):
            return None
        memo: dict[int, Value] = {}

        def clone(value: Value) -> Value:
            if not isinstance(value, Instance):
                return value
            if id(value) not in memo:
                copied = memo[id(value)] = Instance(value.cls)
                copied.attrs = {k: clone(v) for k, v in value.attrs.items()}
                copied.items = None if value.items is None else {k: clone(v) for k, v in value.items.items()}
            return memo[id(value)]

        return clone(args[0])

    def b_abs(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        """``abs(t)`` calls the tensor type's ``__abs__`` from C, at the ``abs(...)`` call."""
        if len(args) != 1 or not isinstance(args[0], Tensor):
            return None
        kind, member = self.host.tensor_attribute("__abs__")
        return self.call(self.wrap(member), [args[0]], {}) if kind == "member" else None

    def b_keep(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        return args[0] if args else NONE


def _keep(fn: Any) -> Any:
    return fn


_KEEP = _keep
_HANDLERS: dict[Any, Callable[..., Optional[Value]]] = {
    builtins.len: Builtins.b_len, builtins.isinstance: Builtins.b_isinstance, builtins.type: Builtins.b_type,
    builtins.getattr: Builtins.b_getattr, builtins.hasattr: Builtins.b_hasattr, builtins.setattr: Builtins.b_setattr,
    builtins.super: Builtins.b_super, builtins.tuple: Builtins.b_sequence(None, tuple),  # type: ignore[arg-type]
    builtins.list: Builtins.b_sequence(None, list), builtins.set: Builtins.b_sequence(None, list),  # type: ignore[arg-type]
    builtins.dict: Builtins.b_dict, builtins.sum: Builtins.b_sum, builtins.map: Builtins.b_map,
    builtins.zip: Builtins.b_zip, builtins.enumerate: Builtins.b_enumerate, builtins.reversed: Builtins.b_reversed,
    builtins.iter: Builtins.b_iter, builtins.next: Builtins.b_next, builtins.print: Builtins.b_print, builtins.abs: Builtins.b_abs,
    builtins.any: Builtins.b_all_any(None, True), builtins.all: Builtins.b_all_any(None, False),  # type: ignore[arg-type]
    functools.wraps: Builtins.b_wraps, copy.deepcopy: Builtins.b_deepcopy, functools.partial: Builtins.b_partial, _keep: Builtins.b_keep,
}


def _hashable(obj: Any) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True
