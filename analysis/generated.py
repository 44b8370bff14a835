"""Records whose constructor Python generates with ``exec``, so it has no source to read: a
dataclass's ``__init__`` and a named tuple's ``__new__``. Their behaviour is fixed by the
standard library, so the prediction does what they do: bind the arguments to the fields (with
defaults and default factories), set them (a named tuple: its items), then run the class's own
``__post_init__``, which has source, with the ``InitVar`` values.
"""

from __future__ import annotations

import dataclasses
import dis
import types
from typing import TYPE_CHECKING, Any, Optional

from .sites import Place, instruction_place
from .source import CALL_OPS
from .values import Instance, Opaque, Seq, Value

if TYPE_CHECKING:
    from .interpreter import Frame, Interpreter

__all__ = ["generated", "build_dataclass", "build_named_tuple", "is_named_tuple", "is_tuple_new"]

#: dataclasses' kinds of pseudo-field (``InitVar``, ``ClassVar``); plain fields have neither.
_INITVAR = getattr(dataclasses, "_FIELD_INITVAR", None)
_CLASSVAR = getattr(dataclasses, "_FIELD_CLASSVAR", None)


def generated(fn: Any) -> bool:
    """Whether ``fn`` is Python made from a string at run time (no file behind it)."""
    code = getattr(fn, "__code__", None)
    return isinstance(code, types.CodeType) and code.co_filename.startswith("<") \
        and not code.co_filename.startswith("<frozen")


def build_dataclass(run: Interpreter, cls: type, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """``cls(*args, **kwargs)`` for a dataclass whose ``__init__`` dataclasses generated; what
    it calls (default factories, ``__post_init__``) runs from that ``__init__``'s frame, at
    the call its bytecode makes."""
    frame = run.placeholder_frame(vars(cls)["__init__"].__code__)
    run.stack.append(frame)
    try:
        return _build_dataclass(run, frame, cls, args, kwargs)
    finally:
        run.stack.pop()


def _build_dataclass(run: Interpreter, frame: Frame, cls: type, args: list[Value], kwargs: dict[str, Value]) -> Value:
    instance = Instance(cls)
    fields = [f for f in vars(cls)["__dataclass_fields__"].values() if getattr(f, "_field_type", None) is not _CLASSVAR]
    params = [f for f in fields if f.init]
    positional = [f for f in params if not getattr(f, "kw_only", False)]
    given: dict[str, Value] = dict(zip((f.name for f in positional), args))
    given.update({k: v for k, v in kwargs.items() if k not in given})
    initvars: list[Value] = []
    for f in fields:
        value = given.get(f.name) if f.init else None
        if value is None:
            frame.at = _call_after(frame.code, f"dflt_{f.name}")
            value = _default(run, f)
        if value is None:
            value = Opaque(f"argument {f.name} missing")
        if getattr(f, "_field_type", None) is _INITVAR:
            initvars.append(value)
        elif f.init or value is not None:
            instance.attrs[f.name] = value
    post_init = getattr(cls, "__post_init__", None)
    if isinstance(post_init, types.FunctionType):
        frame.at = _call_after(frame.code, "__post_init__")
        run.call(run.wrap(post_init), [instance, *initvars], {})
    return instance


def _call_after(code: types.CodeType, name: str) -> Optional[Place]:
    """The place of the first call after the generated code loads a name ending in ``name``."""
    loaded = False
    for ins in dis.get_instructions(code):
        loaded = loaded or isinstance(ins.argval, str) and ins.argval.endswith(name)
        if loaded and ins.opname in CALL_OPS:
            return instruction_place(code, ins.offset)
    return None


def _default(run: Interpreter, f: dataclasses.Field) -> Optional[Value]:
    """A field's default, or what its default factory returns (called as ``__init__`` does)."""
    if f.default is not dataclasses.MISSING:
        return run.wrap(f.default)
    if f.default_factory is not dataclasses.MISSING:
        return run.call(run.wrap(f.default_factory), [], {})
    return None


def build_named_tuple(run: Interpreter, cls: Any, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """``cls(*args, **kwargs)`` for a named tuple: its items by field, defaults filled in."""
    names: tuple[str, ...] = cls._fields
    given = dict(zip(names, args))
    given.update({k: v for k, v in kwargs.items() if k in names and k not in given})
    defaults = getattr(cls, "_field_defaults", {})
    items = [given[n] if n in given else run.wrap(defaults[n]) if n in defaults else Opaque(f"argument {n} missing")
             for n in names]
    return Seq(items, cls)


def is_named_tuple(cls: type) -> bool:
    """A class ``collections.namedtuple`` or ``typing.NamedTuple`` made, or a subclass of one."""
    return issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)


def is_tuple_new(fn: Any) -> bool:
    """The ``__new__`` ``collections.namedtuple`` generates (``lambda _cls, a, b:
    _tuple_new(_cls, (a, b))``), called by a subclass's own ``__new__`` through ``super()``."""
    return generated(fn) and getattr(fn, "__globals__", {}).get("_tuple_new") is tuple.__new__
