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
import types
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, ClassVar, Iterable, Iterator, Optional

__all__ = ["Value", "Known", "Tensor", "TensorTuple", "Opaque", "Seq", "Dict", "Union",
           "Function", "Bound", "Partial", "Instance", "Lazy", "PyMethod", "SuperRef", "Nature",
           "NONE", "TRUE", "FALSE", "truth", "contents_truth", "without_contents", "join", "same", "identical", "contains", "concrete",
           "concrete_args", "type_of", "may_hold_tensor", "element_of", "origins", "SCALARS"]


class Nature(Enum):
    """What an :class:`Opaque` value is known to be."""

    #: Possibly a tensor (or anything).
    ANY = "any"
    #: Certainly not a tensor: a size, ``.item()``, a flag.
    NUMBER = "number"


class Value:
    """Base of every abstract value."""

    __slots__ = ()


#: Objects that hold no tensor (``bool`` is an ``int``).
SCALARS = (int, float, complex, str, bytes, type(None))

@dataclass(eq=False, slots=True)
class Known(Value):
    """A concrete Python object: a constant, or something of the live model."""

    obj: Any


@dataclass(eq=False, slots=True)
class Tensor(Value):
    """A tensor: from an op, an input, or a parameter/buffer of the live model."""

    #: The live tensor (a parameter or buffer), when there is one.
    live: Any = None
    #: The host's data-free stand-in with this tensor's shape, dtype and device (torch: a fake
    #: tensor), when the run could compute it; its metadata is read as the live one's.
    meta: Any = None
    #: ``(event, output slot)`` of the predicted op that produced it (``None``: an input, a
    #: parameter, or a value whose producer the run lost).
    origin: Optional[tuple[Any, int]] = None
    #: Its exact contents (an object of the host's whose ``bool()`` is the tensor's truth), where
    #: the host computed them from constants alone, for an op the run makes exactly once; the
    #: host forgets them when another op may write into the tensor (see :func:`without_contents`).
    data: Any = None

    @property
    def described(self) -> Any:
        """The object whose metadata (``shape``, ``dtype``) this tensor has now, or ``None``: its
        stand-in when it has one (an in-place write, through a view too, changes the stand-in,
        not the live tensor), else the live one."""
        return self.meta if self.meta is not None else self.live


@dataclass(eq=False, slots=True)
class TensorTuple(Value):
    """Several tensors from one multi-output op; how many may be learned later (unpacking)."""

    #: Sets the op's number of output slots: ``resolve(n)``.
    resolve: Callable[[int], None]
    #: The number of outputs, when known.
    count: Optional[int] = None
    #: The outputs' stand-ins (see :attr:`Tensor.meta`), when computed.
    metas: Optional[tuple] = None
    #: The predicted op (event) that produced them.
    origin: Any = None

    def item(self, k: int) -> Tensor:
        """Output ``k`` (its stand-in and producer when known)."""
        meta = self.metas[k] if self.metas is not None and -len(self.metas) <= k < len(self.metas) else None
        slot = k if k >= 0 else (self.count + k if self.count is not None else None)
        return Tensor(meta=meta, origin=(self.origin, slot) if self.origin is not None and slot is not None else None)

    def items(self, count: int) -> list[Value]:
        return [self.item(k) for k in range(count)]


@dataclass(eq=False, slots=True)
class Opaque(Value):
    """A value the prediction cannot know."""

    #: Why (shown when ops are missed because of it).
    why: str = ""
    #: :attr:`Nature.NUMBER` when it is known not to be a tensor, else :attr:`Nature.ANY`.
    kind: Nature = Nature.ANY
    #: How many have been made in this process: code whose run made none read no value the
    #: prediction does not know (see :meth:`~analysis.interpreter.Interpreter.exactness`).
    made: ClassVar[int] = 0

    def __post_init__(self) -> None:
        Opaque.made += 1


@dataclass(eq=False, slots=True)
class Seq(Value):
    """A tuple, list or set built by the code being read."""

    items: list[Value]
    #: ``tuple``, ``list`` or ``set`` (a set's items are distinct, in Python's order).
    kind: type = tuple
    #: Why its items are not known for sure (changed under a branch or loop the prediction
    #: could not decide); empty when they are. Such a list is neither iterated nor measured.
    unsure: str = ""
    #: For a set of known items: the real set that went through the code's calls, whose order
    #: its items follow (see :mod:`analysis.sets`).
    table: Optional[set] = None


@dataclass(eq=False, slots=True)
class Dict(Value):
    """A dict built by the code being read (``**kwargs`` too), keyed by concrete keys."""

    items: dict[Any, Value] = field(default_factory=dict)
    #: ``dict`` or ``collections.OrderedDict``.
    kind: type = dict
    #: Why its keys and values are not known for sure (changed by a key the data decides, by
    #: a mapping it cannot read, or under a branch or loop the prediction could not decide);
    #: empty when they are. Such a dict is neither iterated, measured nor read.
    unsure: str = ""

    @property
    def listable(self) -> bool:
        """Whether its keys are all known (none the code computed, none it may have changed)."""
        return not self.unsure and object not in map(type, self.items)  # (no generator: C alone)


@dataclass(eq=False, slots=True)
class Union(Value):
    """One of several values (after a branch the prediction could not decide)."""

    options: tuple[Value, ...]


@dataclass(eq=False, slots=True)
class Function(Value):
    """A function or lambda defined by the code being read (not a live function object)."""

    node: ast.AST
    code: types.CodeType
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
    """A lazy iterator: ``start()`` gives the Python iterator over abstract items (once: an
    iterator consumed by ``next`` goes on from where it stopped, see :meth:`items`)."""

    start: Callable[[], Iterator[Value]]
    #: Readable origin, for notes (``genexpr at line 12``).
    what: str = ""
    #: The iterator once started.
    running: Optional[Iterator[Value]] = None

    def items(self) -> Iterator[Value]:
        """The iterator, started on first use."""
        if self.running is None:
            self.running = self.start()
        return self.running


@dataclass(frozen=True, slots=True)
class PyMethod:
    """A method of an abstract ``Seq``/``Dict`` (``d.get``, ``xs.append``), bound by :class:`Bound`."""

    name: str


@dataclass(frozen=True, slots=True)
class SuperRef:
    """``super()`` inside a method: attribute lookup starts after ``owner`` in the MRO."""

    owner: type
    receiver: Value


NONE = Known(None)
TRUE = Known(True)
FALSE = Known(False)


def truth(value: Value) -> Optional[bool]:
    """``bool(value)`` when decidable."""
    if isinstance(value, Known):
        try:
            return bool(value.obj)
        except Exception:  # noqa: BLE001
            return None
    if isinstance(value, (Seq, Dict)):
        return None if value.unsure else bool(value.items)
    if isinstance(value, (Function, Bound, Instance, TensorTuple)):
        return True
    if isinstance(value, Union):
        answers = {truth(v) for v in value.options}
        return answers.pop() if len(answers) == 1 else None
    return None


def without_contents(value: Value) -> Value:
    """``value`` without the contents of its tensors: what a name holds after code that may or
    may not have run (a branch, a loop of unknown count), where one run's contents would stand
    for another's."""
    if isinstance(value, Tensor) and value.data is not None:
        return Tensor(live=value.live, meta=value.meta, origin=value.origin)
    if isinstance(value, Union) and any(isinstance(o, Tensor) and o.data is not None for o in value.options):
        return Union(tuple(without_contents(o) for o in value.options))
    return value


def contents_truth(value: Value) -> Optional[bool]:
    """``bool(value)`` of a tensor (or of every option) whose contents are known, else ``None``."""
    if isinstance(value, Union):
        answers = {contents_truth(v) for v in value.options}
        return answers.pop() if len(answers) == 1 else None
    if not isinstance(value, Tensor) or value.data is None:
        return None
    try:
        return bool(value.data)
    except Exception:  # noqa: BLE001 - more than one element: the read raises (said elsewhere)
        return None


def same(a: Value, b: Value) -> bool:
    """Whether two values stand for the same thing (any two tensors do, for joining)."""
    if a is b:
        return True
    if isinstance(a, Known) and isinstance(b, Known):
        return a.obj is b.obj
    return isinstance(a, Tensor) and isinstance(b, Tensor)


def join(values: list[Value]) -> Value:
    """One value standing for any of ``values``."""
    distinct: list[Value] = []
    merged = False  # two tensors stand as one: neither one's contents hold for it
    for value in values:
        for option in value.options if isinstance(value, Union) else (value,):
            kept = next((seen for seen in distinct if same(option, seen)), None)
            if kept is None:
                distinct.append(option)
            elif kept is not option and isinstance(option, Tensor):
                merged = True
    if len(distinct) == 1:
        return without_contents(distinct[0]) if merged else distinct[0]
    if all(isinstance(v, Tensor) for v in distinct):
        return Tensor()
    return Union(tuple(distinct))


def identical(left: Value, right: Value) -> Optional[bool]:
    """``left is right`` when decidable."""
    if isinstance(left, Union) or isinstance(right, Union):
        lefts = left.options if isinstance(left, Union) else (left,)
        rights = right.options if isinstance(right, Union) else (right,)
        answers = {identical(a, b) for a in lefts for b in rights}
        return answers.pop() if len(answers) == 1 else None
    if isinstance(left, Known) and isinstance(right, Known):
        return left.obj is right.obj
    if left is right:
        return True
    if isinstance(left, Tensor) and isinstance(right, Tensor):
        if left.meta is not None and right.meta is not None:  # stand-ins alias as the tensors do
            return left.meta is right.meta
        if left.live is not None and right.live is not None:
            return left.live is right.live
    known = left if isinstance(left, Known) else right if isinstance(right, Known) else None
    other = right if known is left else left
    if known is not None and not isinstance(other, Opaque):
        return False  # a tensor, container, function or instance is never a constant
    return None


def contains(container: Value, item: Value) -> Optional[bool]:
    """``item in container`` when decidable (keys the code computed are unknown keys)."""
    if isinstance(container, (Seq, Dict)) and container.unsure:
        return None
    if isinstance(container, Dict) and isinstance(item, Known):
        if item.obj in container.items:
            return True
        return False if container.listable else None
    if isinstance(container, Known) and isinstance(item, Known):
        try:
            return item.obj in container.obj
        except Exception:  # noqa: BLE001
            return None
    if isinstance(container, Seq) and isinstance(item, Known):
        known = [v.obj for v in container.items if isinstance(v, Known)]
        if item.obj in known:
            return True
        return False if len(known) == len(container.items) else None
    if isinstance(container, Seq) and container.kind is set and isinstance(item, Tensor):
        same = {identical(item, v) for v in container.items}  # a tensor hashes by its identity
        return True if True in same else None if None in same else False
    return None


def concrete(value: Value) -> tuple[bool, Any]:
    """The plain Python object a value stands for, when it is fully known."""
    if isinstance(value, Known):
        return True, value.obj
    if isinstance(value, Seq) and not value.unsure:
        if value.table is not None:
            return True, value.table  # the set itself, as the code holds it
        items = [concrete(v) for v in value.items]
        if all(ok for ok, _ in items):
            objs = [obj for _, obj in items]
            return True, value.kind._make(objs) if hasattr(value.kind, "_make") else value.kind(objs)
    if isinstance(value, Dict) and value.listable:
        pairs = [(k, concrete(v)) for k, v in value.items.items()]
        if all(ok for _, (ok, _) in pairs):
            return True, {k: obj for k, (_, obj) in pairs}
    if isinstance(value, Tensor) and value.live is not None:
        return True, value.live
    return False, None


def concrete_args(args: list[Value], kwargs: dict[str, Value]) -> Optional[tuple[list, dict]]:
    """Concrete positional and keyword arguments, when every one is fully known."""
    out = [concrete(a) for a in args]
    kw = {k: concrete(v) for k, v in kwargs.items()}
    if all(ok for ok, _ in out) and all(ok for ok, _ in kw.values()):
        return [obj for _, obj in out], {k: obj for k, (_, obj) in kw.items()}
    return None


def type_of(value: Value, tensor_type: type) -> Optional[type]:
    """``type(value)`` when known (``tensor_type`` for tensors without a live one)."""
    if isinstance(value, Known):
        return type(value.obj)
    if isinstance(value, Tensor):
        return type(value.live) if value.live is not None else tensor_type
    if isinstance(value, Seq):
        return value.kind
    if isinstance(value, Dict):
        return value.kind
    if isinstance(value, Instance):
        return value.cls
    if isinstance(value, Function):
        return types.FunctionType
    return None


def may_hold_tensor(value: Value) -> bool:
    """Whether a value may be or contain a tensor (then a call it goes into may run ops)."""
    if isinstance(value, Opaque):
        return value.kind is not Nature.NUMBER
    if isinstance(value, (Tensor, TensorTuple, Instance, Function)):
        return True
    if isinstance(value, Seq):
        return any(may_hold_tensor(v) for v in value.items)
    if isinstance(value, Dict):
        return any(may_hold_tensor(v) for v in value.items.values())
    if isinstance(value, Union):
        return any(may_hold_tensor(v) for v in value.options)
    return False


def element_of(source: Value) -> Value:
    """An item of an iterable whose items cannot be listed."""
    if isinstance(source, (Tensor, TensorTuple)):
        return Tensor()
    if isinstance(source, Opaque) and source.kind is Nature.NUMBER:  # a size's dimensions
        return Opaque(f"an item of {source.why}", Nature.NUMBER)
    return Opaque("an item of an unknown iterable")


def origins(values: Iterable[Value]) -> tuple[tuple[Any, int], ...]:
    """``(event, slot)`` of every tensor with a known producer among ``values`` (into tuples,
    lists and dicts), in order, each once."""
    found: dict[tuple[int, int], tuple[Any, int]] = {}
    todo = list(values)
    todo.reverse()
    while todo:
        value = todo.pop()
        kind = type(value)  # (no value class has subclasses)
        if kind is Tensor:
            origin = value.origin  # type: ignore[attr-defined]
            if origin is not None:
                found.setdefault((id(origin[0]), origin[1]), origin)
        elif kind is TensorTuple:
            event = value.origin  # type: ignore[attr-defined]
            if event is not None:
                for k in range(value.count or 1):  # type: ignore[attr-defined]
                    found.setdefault((id(event), k), (event, k))
        elif kind is Seq:
            todo.extend(reversed(value.items))  # type: ignore[attr-defined]
        elif kind is Dict:
            todo.extend(reversed(list(value.items.values())))  # type: ignore[attr-defined]
    return tuple(found.values())
