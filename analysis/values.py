"""The abstract values the prediction computes with.

Python the prediction can see concretely (constants, the live model's attributes, modules,
functions, configs) is a :class:`Known`; tensors are :class:`Tensor` (no shape, no data:
only "a tensor produced here"); what it cannot know is :class:`Opaque`, with a reason.
Containers built by the code being read hold abstract values (:class:`Seq`, :class:`Dict`);
functions defined by that code are :class:`Function`; lazy iterators (generator
expressions, ``map``, ``zip``) are :class:`Lazy` and run only when consumed, from the
consumer's place, as CPython runs them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from types import CodeType
from typing import Any, Callable, Iterator, Optional

__all__ = ["Value", "Known", "Tensor", "TensorTuple", "Opaque", "Seq", "Dict", "Union",
           "Function", "Bound", "Partial", "Instance", "Lazy", "NONE", "TRUE", "FALSE"]


class Value:
    """Base of every abstract value."""

    __slots__ = ()


@dataclass(eq=False, slots=True)
class Known(Value):
    """A concrete Python object: a constant, or something of the live model."""

    obj: Any


@dataclass(eq=False, slots=True)
class Tensor(Value):
    """A tensor: from an op, an input, or a parameter/buffer of the live model."""

    #: The live tensor (a parameter or buffer), when there is one.
    live: Any = None


@dataclass(eq=False, slots=True)
class TensorTuple(Value):
    """Several tensors from one multi-output op; how many may be learned later (unpacking)."""

    #: Sets the op's number of output slots: ``resolve(n)``.
    resolve: Callable[[int], None]
    #: The number of outputs, when known.
    count: Optional[int] = None


@dataclass(eq=False, slots=True)
class Opaque(Value):
    """A value the prediction cannot know."""

    #: Why (shown when ops are missed because of it).
    why: str = ""
    #: ``"number"`` when it is known not to be a tensor (a size, ``.item()``), else ``"any"``.
    kind: str = "any"


@dataclass(eq=False, slots=True)
class Seq(Value):
    """A tuple or list built by the code being read."""

    items: list[Value]
    #: ``tuple`` or ``list``.
    kind: type = tuple


@dataclass(eq=False, slots=True)
class Dict(Value):
    """A dict built by the code being read (``**kwargs`` too), keyed by concrete keys."""

    items: dict[Any, Value] = field(default_factory=dict)


@dataclass(eq=False, slots=True)
class Union(Value):
    """One of several values (after a branch the prediction could not decide)."""

    options: tuple[Value, ...]


@dataclass(eq=False, slots=True)
class Function(Value):
    """A function or lambda defined by the code being read (not a live function object)."""

    node: ast.AST
    code: CodeType
    source: Any  # analysis.source.SourceFile
    globals: dict
    #: Locals of the enclosing frames, innermost first, shared by reference (late binding).
    enclosing: list[dict[str, Value]]
    defaults: list[Value]
    kw_defaults: dict[str, Value]
    #: Attributes set on it (``functools.wraps`` copies some).
    attrs: dict[str, Value] = field(default_factory=dict)


@dataclass(eq=False, slots=True)
class Bound(Value):
    """A method bound to an abstract receiver."""

    func: Value
    receiver: Value


@dataclass(eq=False, slots=True)
class Partial(Value):
    """``functools.partial(func, *args, **kwargs)`` over abstract values."""

    func: Value
    args: list[Value]
    kwargs: dict[str, Value]


@dataclass(eq=False, slots=True)
class Instance(Value):
    """An object built while reading ``__init__`` (prediction from a class, no live instance)."""

    cls: type
    attrs: dict[str, Value] = field(default_factory=dict)
    #: Module address, for ``nn.Module`` instances (set when a parent assigns it).
    address: Optional[str] = None
    #: Items of a container module (``ModuleList``, ``Sequential``, ``ModuleDict``).
    items: Optional[dict[str, Value]] = None


@dataclass(eq=False, slots=True)
class Lazy(Value):
    """A lazy iterator: ``start()`` gives a fresh Python iterator over abstract items."""

    start: Callable[[], Iterator[Value]]
    #: Readable origin, for notes (``genexpr at line 12``).
    what: str = ""


NONE = Known(None)
TRUE = Known(True)
FALSE = Known(False)
