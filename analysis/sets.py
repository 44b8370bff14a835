"""Sets the code builds, followed as CPython keeps them (issue 12).

A set iterates in the order of its hash table, and that order depends on its items' hashes (a
string's change with each process) and on the table's history: the table grows with each add,
a removal leaves a slot behind, and ``set(s)``, ``s | t`` or ``s.copy()`` copy ``s``'s table into
one sized afresh. No order computed from the items alone is Python's in every case, so a set of
known items is followed with a real set, its ``table``, that goes through the very calls the
code makes on it. The run then iterates it in the order the capture sees (same process, same
hashes). A set with an item the prediction does not know has no table; its order is unknown
(see ``Interpreter.as_set``).
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

from .pybuiltins import hashable
from .values import NONE, Known, Nature, Opaque, Seq, Value, concrete, concrete_args

if TYPE_CHECKING:
    from .interpreter import Interpreter

__all__ = ["made", "values_of", "displayed", "method", "binary", "returned"]

#: A set's methods that change it.
CHANGES = frozenset({"add", "update", "remove", "discard", "pop", "clear", "difference_update",
                     "intersection_update", "symmetric_difference_update"})
#: Its methods that read it (a new set, or a truth, back).
READS = frozenset({"copy", "union", "intersection", "difference", "symmetric_difference", "issubset",
                   "issuperset", "isdisjoint"})
#: Those given an item (the others are given sets or iterables).
_TAKE_ITEMS = frozenset({"add", "remove", "discard"})
#: Its operators (by dunder stem), each with the in-place form that ``|=`` and the like call.
_OPERATORS: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    "or": (operator.or_, operator.ior), "and": (operator.and_, operator.iand),
    "sub": (operator.sub, operator.isub), "xor": (operator.xor, operator.ixor)}


def made(run: Interpreter, table: set, values: dict[Any, Value]) -> Seq:
    """The set ``table`` (a real set the run made), each item the value ``values`` gives its
    object (looked up by equality, as the set finds it), else that object itself."""
    return Seq(_items(run, table, values), set, table=table)


def _items(run: Interpreter, table: set, values: dict[Any, Value]) -> list[Value]:
    return [_value(run, obj, values) for obj in table]


def _value(run: Interpreter, obj: Any, values: dict[Any, Value]) -> Value:
    return values[obj] if obj in values else run.wrap(obj)


def values_of(objs: Iterable[Any], items: Iterable[Value], into: Optional[dict] = None) -> dict[Any, Value]:
    """The value standing for each object (the first of equal ones, as a set keeps the first)."""
    out: dict[Any, Value] = {} if into is None else into
    for obj, item in zip(objs, items):
        out.setdefault(obj, item)
    return out


def returned(run: Interpreter, fn: Any, args: list[Value], plain: list[Any], result: Any) -> Optional[Seq]:
    """The set a builtin called for real on known arguments returned, when it is a new one
    (``set(...)``, ``set.union(a, b)``, ``a.union(b)``): the code's own, followed by its table.
    ``None`` for any other result (a set another object holds is not the run's to change)."""
    receiver = getattr(fn, "__self__", None)
    new = fn is set or (getattr(fn, "__objclass__", None) is set or type(receiver) is set) and fn.__name__ in READS
    return made(run, result, _known({}, args, plain)) if new and type(result) is set else None


def displayed(run: Interpreter, parts: list[tuple[Value, bool]]) -> Optional[Seq]:
    """``{a, *s, b}`` (``parts``: each item's value, and whether it is starred), built as
    CPython builds it: an add for each item, an update by each starred one (which copies a
    set's table as it lies); ``None`` when a part is not known."""
    table: set = set()
    values: dict[Any, Value] = {}
    for value, starred in parts:
        ok, obj = concrete(value)
        if not ok:
            return None
        try:
            table.update(obj) if starred else table.add(obj)
        except TypeError:  # an unhashable item: the program raises
            return None
        _known(values, [value], [obj], iterables=starred)
    return made(run, table, values)


def _known(values: dict[Any, Value], args: list[Value], plain: list[Any], iterables: bool = True) -> dict[Any, Value]:
    """``values``, with the arguments (``iterables``: the items of those that are sets or
    sequences the code built)."""
    for arg, obj in zip(args, plain):
        if iterables and isinstance(arg, Seq):
            values_of(obj, arg.items, values)
        elif hashable(obj):
            values.setdefault(obj, arg)
    return values


def method(run: Interpreter, receiver: Seq, name: str, args: list[Value], kwargs: dict) -> Optional[Value]:
    """``receiver.name(*args)`` for a set with a table, made on the table as the code makes it
    (a change the run is not certain to make marks the set unsure instead); ``None`` when an
    argument is not known (the caller says so)."""
    table = receiver.table
    if table is None or receiver.unsure or kwargs or name not in CHANGES and name not in READS:
        return None
    if name in CHANGES and run.unsettled(receiver, f"set.{name}"):
        return Opaque(f"an item popped from a set ({receiver.unsure})") if name == "pop" else NONE
    plain = concrete_args(args, {})
    if plain is None:
        return None
    values = _known(dict(zip(table, receiver.items)), args, plain[0],  # before the table changes
                    iterables=name not in _TAKE_ITEMS)
    try:
        result = getattr(table, name)(*plain[0])
    except (KeyError, TypeError) as error:  # remove of a missing item, pop of an empty set, an unhashable item
        what = f" of {plain[0][0]!r}" if plain[0] and name != "pop" else ""
        run.stops(f"set.{name}{what} raises {type(error).__name__}{run.where()}", type(error))
        return Opaque(f"set.{name} raised", Nature.NUMBER)
    if name in CHANGES:
        receiver.items = _items(run, table, values)
        return _value(run, result, values) if name == "pop" else NONE
    return made(run, result, values) if isinstance(result, set) else Known(result)


def binary(run: Interpreter, op: str, left: Value, right: Value, inplace: bool) -> Optional[Value]:
    """``left <op> right`` where one side is a set the code built and both are known: run on
    the real sets (``|=`` and the like change the left one's table, as they change the set);
    ``None`` when not."""
    pair = _OPERATORS.get(op)
    if pair is None or not any(isinstance(v, Seq) and v.table is not None for v in (left, right)):
        return None
    plain = concrete_args([left, right], {})
    if plain is None:
        return None
    target = left if inplace and isinstance(left, Seq) and left.table is not None else None
    if target is not None and run.unsettled(target, f"{op}="):
        return target
    values = _known({}, [left, right], plain[0])  # before the table changes
    try:
        result = (pair[0] if target is None else pair[1])(*plain[0])
    except TypeError:  # a set and a list: the program raises; predict nothing
        return None
    if target is not None:
        target.items = _items(run, result, values)
        return target
    return made(run, result, values) if isinstance(result, set) else Known(result)
