"""Builtins that call back into the program or iterate for it: ``sum``, ``map``, ``filter``,
``sorted``/``min``/``max`` with ``key`` (or over tensors), ``list.sort``, ``functools.reduce``,
``zip``, ``enumerate``, ``itertools.starmap``/``accumulate``/``chain``/``repeat``, and ``operator``'s
functions (binary, in-place, unary, ``getitem``/``setitem``) on tensors.

As in CPython, each takes ``iter()`` of its sources when it is called (a tensor's ``__iter__``
runs at the builtin's call), and calls what it is given from C, with no frame of its own: a
callback's ops sit on the place of whoever drives the builtin (its own call for the eager ones;
for the lazy ``map`` and ``filter``, the consumer: a ``for`` loop, ``list(...)``). Over items whose
number is unknown, the callback runs once under a symbolic count. What depends on data (the
order ``sorted`` gives tensors' keys, the items a ``filter`` keeps) is not guessed: the result is
unknown and, where the program goes on to use it, a gap says so.
"""

from __future__ import annotations

import builtins
import functools
import itertools
import operator
import types
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

from .passes import ONE, Count
from .values import NONE, Known, Lazy, Nature, Opaque, Seq, Tensor, Value, concrete, join, may_hold_tensor

if TYPE_CHECKING:
    from .interpreter import Interpreter

__all__ = ["callback_handlers", "sort_in_place", "GETTERS", "getter_call"]

Handler = Callable[[list[Value], dict[str, Value]], Optional[Value]]


def callback_handlers(run: Interpreter) -> dict[Any, Handler]:
    """The handlers of the builtins that call back, for ``run``'s table of modelled builtins."""
    return {builtins.sum: functools.partial(_sum, run), builtins.map: functools.partial(_map, run),
            builtins.filter: functools.partial(_filter, run), builtins.sorted: functools.partial(_sorted, run),
            builtins.min: functools.partial(_extreme, run, "lt"), builtins.max: functools.partial(_extreme, run, "gt"),
            functools.reduce: functools.partial(_reduce, run), builtins.zip: functools.partial(_zip, run),
            builtins.enumerate: functools.partial(_enumerate, run), itertools.starmap: functools.partial(_starmap, run),
            itertools.accumulate: functools.partial(_accumulate, run), itertools.chain: functools.partial(_chain, run),
            itertools.repeat: _repeat,
            **{fn: functools.partial(_operator, run, stem, False) for fn, stem in _OPERATORS.items()},
            **{fn: functools.partial(_operator, run, stem, True) for fn, stem in _IN_PLACE.items()},
            **{fn: functools.partial(_unary, run, stem) for fn, stem in _UNARY.items()},
            operator.getitem: functools.partial(_getitem, run), operator.setitem: functools.partial(_setitem, run),
            **({operator.call: functools.partial(_call, run)} if hasattr(operator, "call") else {}),
            **{getter: functools.partial(_make_getter, run, getter) for getter in GETTERS}}


#: ``operator`` functions -> the dunder stem they call (``operator.add(t, 1)`` is ``t.__add__(1)``).
_OPERATORS = {operator.add: "add", operator.sub: "sub", operator.mul: "mul", operator.truediv: "truediv",
              operator.floordiv: "floordiv", operator.mod: "mod", operator.pow: "pow", operator.matmul: "matmul",
              operator.and_: "and", operator.or_: "or", operator.xor: "xor", operator.lt: "lt", operator.le: "le",
              operator.gt: "gt", operator.ge: "ge", operator.eq: "eq", operator.ne: "ne",
              operator.lshift: "lshift", operator.rshift: "rshift"}
#: In-place ``operator`` functions -> the stem whose ``__i<stem>__`` they call (``__<stem>__`` without one).
_IN_PLACE = {operator.iadd: "add", operator.isub: "sub", operator.imul: "mul", operator.itruediv: "truediv",
             operator.ifloordiv: "floordiv", operator.imod: "mod", operator.ipow: "pow", operator.imatmul: "matmul",
             operator.iand: "and", operator.ior: "or", operator.ixor: "xor", operator.ilshift: "lshift",
             operator.irshift: "rshift"}
#: ``operator`` functions of one operand -> the dunder stem they call.
_UNARY = {operator.neg: "neg", operator.pos: "pos", operator.abs: "abs", operator.inv: "invert",
          operator.invert: "invert"}


def _for_real(run: Interpreter, values: list[Value]) -> bool:
    """Whether a builtin may run for real on ``values``: all concrete, and none of them (nor
    an item of a container among them) Python code, a module or a tensor."""
    for value in values:
        ok, obj = concrete(value)
        if not ok or isinstance(value, Tensor):
            return False
        objs = list(obj.values()) if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple, set)) else [obj]
        if any(isinstance(o, (types.FunctionType, types.MethodType, functools.partial, run.host.tensor_type))
               or run.host.is_module(o) for o in objs):
            return False
    return True


def _items(run: Interpreter, source: Value, what: str) -> Iterator[Value]:
    """``iter(source)``, now: its items, else one stand-for item under a count of ``0..N`` (the
    caller's events in between happen once per item; :meth:`Interpreter.generators` does the same)."""
    items = run.iterate(source)
    return items if items is not None else _unknown_items(run, source, what)


def _unknown_items(run: Interpreter, source: Value, what: str) -> Iterator[Value]:
    with run.scaled(Count(0, None, "N", f"{what} runs over items whose number is not static")):
        yield run.element(source)


def _sum(run: Interpreter, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
    if not args:
        return None
    args = [run.viewed(args[0]), *args[1:]]  # a live list the code wrote into: the run's copy
    if isinstance(args[0], Known):  # plain numbers: their sum (other objects: called for real or not at all)
        if not (_for_real(run, [*args, *kwargs.values()]) and _summable(args[0].obj)):
            return None
        try:
            return Known(builtins.sum(*[concrete(a)[1] for a in args], **{k: concrete(v)[1] for k, v in kwargs.items()}))
        except TypeError:  # the program would raise here
            return Opaque("sum of items that do not add", Nature.NUMBER)
    total = args[1] if len(args) > 1 else kwargs.get("start", Known(0))
    items = run.iterate(args[0])
    if items is None:  # start + the first item (0..1 times: a reflected add after 0), then one add per item
        with run.scaled(Count(0, 1, "", "sum runs over items whose number is not static")):
            first = run.binop("add", total, run.element(args[0]), None, frozenset())
        for item in _unknown_items(run, args[0], "sum"):
            total = join([total, first, run.binop("add", first, item, None, frozenset())])
        return total
    for item in items:  # C sum: each addition runs at the sum(...) call's place
        total = run.binop("add", total, item, None, frozenset())
    return total


def _summable(obj: Any) -> bool:
    """Whether ``sum`` of ``obj`` runs no code of the program: a list or tuple of plain numbers."""
    return isinstance(obj, (list, tuple)) and all(type(item) in (int, float, bool, complex) for item in obj)


def _map(run: Interpreter, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
    if len(args) < 2:
        return None
    fn = args[0]
    sources = [_items(run, s, "map") for s in args[1:]]  # iter() of each, at the map(...) call

    def start() -> Iterator[Value]:
        for items in zip(*sources):
            yield run.call(fn, list(items), {})

    return Lazy(start, "map")


def _zip(run: Interpreter, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
    listed = [run.iterate(a) for a in args]  # iter() of each, at the zip(...) call
    if None in listed and any(items is not None for items in listed):
        strict = kwargs.get("strict")
        strict_known = isinstance(strict, Known) and bool(strict.obj)
        return Lazy(lambda: _zip_unknown_length(run, args, listed, strict_known), "zip")
    sources = [items if items is not None else _unknown_items(run, a, "zip") for a, items in zip(args, listed)]

    def start() -> Iterator[Value]:
        for items in zip(*sources):
            yield Seq(list(items))

    return Lazy(start, "zip")


def _zip_unknown_length(run: Interpreter, args: list[Value], listed: list, strict: bool) -> Iterator[Value]:
    """``zip`` of sources some of whose items are known and some not: as many rows as the
    shortest source, so at most as many as the known ones have, each taken ``0..1`` times (the
    k-th row holds the known sources' k-th items); with ``strict=True`` each once (a source of
    another length raises in the forward)."""
    each = ONE if strict else Count(0, 1, "", "zip runs over items whose number is not static")
    for row in zip(*(items for items in listed if items is not None)):
        known = iter(row)
        with run.scaled(each):
            yield Seq([next(known) if items is not None else run.element(a) for a, items in zip(args, listed)])


def _enumerate(run: Interpreter, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
    first = args[1] if len(args) > 1 else kwargs.get("start", Known(0))
    if not args or not (isinstance(first, Known) and isinstance(first.obj, int)):
        return None  # a start the run does not know: not counted from a guess
    items = _items(run, args[0], "enumerate")

    def start() -> Iterator[Value]:
        for k, item in enumerate(items, first.obj):
            yield Seq([Known(k), item])

    return Lazy(start, "enumerate")


def _operator(run: Interpreter, stem: str, inplace: bool, args: list[Value],
              kwargs: dict[str, Value]) -> Optional[Value]:
    """``operator.add(a, b)`` and kin: ``a + b`` from C at the call (``inplace``: ``operator.iadd``,
    ``a += b``); of plain values: run for real."""
    if len(args) != 2 or kwargs or all(isinstance(a, Known) for a in args):
        return None
    return run.binop(stem, args[0], args[1], None, frozenset(), inplace=inplace)


def _unary(run: Interpreter, stem: str, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
    """``operator.neg(t)`` and kin: ``-t`` from C at the call (of a plain value: run for real)."""
    if len(args) != 1 or kwargs or isinstance(args[0], Known):
        return None
    return run.unary(stem, args[0], None)


def _getitem(run: Interpreter, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
    """``operator.getitem(a, k)``: ``a[k]`` from C at the call."""
    return run.subscript(args[0], args[1], None) if len(args) == 2 and not kwargs else None


def _setitem(run: Interpreter, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
    """``operator.setitem(a, k, v)``: ``a[k] = v`` from C at the call."""
    if len(args) != 3 or kwargs:
        return None
    run.store_item(args[0], args[1], args[2], None)
    return NONE


def _call(run: Interpreter, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
    """``operator.call(f, *args, **kwargs)`` (3.11+): ``f(*args, **kwargs)``."""
    return run.call(args[0], args[1:], kwargs) if args else None


#: ``operator``'s callable objects: what the code makes with them is called as the reads it stands for.
GETTERS = (operator.itemgetter, operator.attrgetter, operator.methodcaller)


def _make_getter(run: Interpreter, kind: type, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
    """``operator.itemgetter(1)`` and kin of plain values: made for real (``getter_call`` runs it)."""
    if not _for_real(run, [*args, *kwargs.values()]):
        return None
    try:
        return Known(kind(*[concrete(a)[1] for a in args], **{k: concrete(v)[1] for k, v in kwargs.items()}))
    except TypeError:  # the program would raise here
        return Opaque(f"{kind.__name__} of wrong arguments")


def getter_call(run: Interpreter, getter: Any, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
    """A call of an ``itemgetter``/``attrgetter``/``methodcaller`` (a ``GETTERS`` object): the
    item reads, attribute reads or method call it stands for, from C at the call."""
    if len(args) != 1 or kwargs:
        return None
    maker, made = getter.__reduce__()  # (class or partial(class, ...), its arguments)
    subject = args[0]
    if type(getter) is operator.methodcaller:
        name, *rest = [*maker.args, *made] if isinstance(maker, functools.partial) else made
        keywords = maker.keywords if isinstance(maker, functools.partial) else {}
        return run.call(run.attribute(subject, name), [run.wrap(a) for a in rest],
                        {k: run.wrap(v) for k, v in keywords.items()})
    if type(getter) is operator.itemgetter:
        got = [run.subscript(subject, run.wrap(key), None) for key in made]
    else:
        got = [functools.reduce(run.attribute, path.split("."), subject) for path in made]
    return got[0] if len(got) == 1 else Seq(got, tuple)


def _starmap(run: Interpreter, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
    if len(args) != 2:
        return None
    fn, items = args[0], _items(run, args[1], "itertools.starmap")

    def start() -> Iterator[Value]:
        for item in items:
            unpacked = run.unpack(item, None)
            yield run.call(fn, unpacked, {}) if unpacked is not None else Opaque("starmap of unknown arguments")

    return Lazy(start, "itertools.starmap")


def _accumulate(run: Interpreter, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
    if not args or len(args) > 2:
        return None
    listed = run.iterate(args[0])
    items = listed if listed is not None else _unknown_items(run, args[0], "itertools.accumulate")
    fn = args[1] if len(args) > 1 else kwargs.get("func", NONE)
    initial = kwargs.get("initial", NONE)

    def start() -> Iterator[Value]:
        total: Optional[Value] = None if initial is NONE else initial
        if total is not None:
            yield total
        for item in items:
            if total is None:
                total = item
                if listed is not None:
                    yield total
                    continue
            # over unknown items, one stand-in: a step per item after the first, under 0..N
            step = run.binop("add", total, item, None, frozenset()) if fn is NONE else run.call(fn, [total, item], {})
            total = step if listed is not None else join([total, step])
            yield total

    return Lazy(start, "itertools.accumulate")


def _chain(run: Interpreter, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
    """``itertools.chain``: ``iter()`` of each source when the consumer reaches it."""
    if kwargs:
        return None

    def start() -> Iterator[Value]:
        for source in args:
            yield from _items(run, source, "itertools.chain")

    return Lazy(start, "itertools.chain")


def _repeat(args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
    """``itertools.repeat(obj, times)`` a known number of times (torch's ``_pair(1)``); endless
    or an unknown number of times: not modelled."""
    obj = args[0] if args else kwargs.get("object")
    times = args[1] if len(args) > 1 else kwargs.get("times")
    if obj is None or not (isinstance(times, Known) and type(times.obj) is int):
        return None
    items = [obj] * max(times.obj, 0)
    return Lazy(lambda: iter(items), "itertools.repeat")


def sort_in_place(run: Interpreter, seq: Seq, kwargs: dict[str, Value]) -> None:
    """``xs.sort(key=..., reverse=...)``: what ``sorted`` gives, put back in the list."""
    result = run.call(Known(builtins.sorted), [seq], kwargs)
    items = run.unpack(result, None) if isinstance(result, (Seq, Known)) else None
    if items is None:
        seq.unsure = seq.unsure or f"sorted in place by keys it cannot order{run.where()}"
    else:
        seq.items[:] = items


def _filter(run: Interpreter, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
    if len(args) != 2 or _for_real(run, args):
        return None
    fn, source = args
    items = _items(run, source, "filter")

    def start() -> Iterator[Value]:
        for item in items:
            kept = run.truth_of(item if fn is NONE else run.call(fn, [item], {}), None)
            if kept is None:  # what the consumer does with this item happens 0 or 1 times
                saved = run.mult
                run.mult = saved * Count(0, 1, "", "filter keeps items the prediction cannot decide")
                try:
                    yield item
                finally:
                    run.mult = saved
            elif kept:
                yield item

    return Lazy(start, "filter")


def _keys(run: Interpreter, items: list[Value], kwargs: dict[str, Value]) -> list[Value]:
    """``key(item)`` for each item, in order, from the builtin's call (the items themselves
    without a key)."""
    key = kwargs.get("key", NONE)
    if key is NONE:
        return items
    return [run.call(key, [item], {}) for item in items]


def _calls_back(args: list[Value], kwargs: dict[str, Value]) -> bool:
    """Whether ``sorted``/``min``/``max`` run the program's code: a key, tensors compared, or
    an iterator the program made (a generator runs from the call; its items may be tensors)."""
    if kwargs.get("key", NONE) is not NONE or len(args) == 1 and isinstance(args[0], Lazy):
        return True
    items = args if len(args) > 1 else [args[0]] if isinstance(args[0], Tensor) else \
        args[0].items if isinstance(args[0], Seq) else []
    return any(isinstance(item, Tensor) for item in items)


def _sorted(run: Interpreter, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
    if len(args) != 1 or _for_real(run, [*args, *kwargs.values()]) or not _calls_back(args, kwargs):
        return None
    items = run.unpack(args[0], None)
    if items is None:
        for item in _unknown_items(run, args[0], "sorted"):
            if any(may_hold_tensor(key) for key in _keys(run, [item], kwargs)):
                run.gap(f"sorted compares tensors whose number is not static{run.where()}: how many "
                        "comparisons (ops) run depends on their number and values")
        return Opaque("sorted of unknown items")
    keys = _keys(run, items, kwargs)
    reverse = kwargs.get("reverse", Known(False))
    plain = [k.obj for k in keys if isinstance(k, Known)]
    if len(plain) == len(keys) and isinstance(reverse, Known):
        try:
            order = sorted(range(len(items)), key=lambda k: plain[k], reverse=bool(reverse.obj))
        except TypeError:  # the program would raise here
            return Opaque("sorted of items that do not compare", Nature.NUMBER)
        return Seq([items[k] for k in order], list)
    if any(isinstance(k, Tensor) for k in keys) and len(keys) > 1:
        if len(keys) == 2 and isinstance(reverse, Known):  # one comparison, from C: b < a (of the reversed list)
            first, second = (keys[0], keys[1]) if reverse.obj else (keys[1], keys[0])
            run.binop("lt", first, second, None, frozenset())
        else:
            run.gap(f"sorted compares {len(keys)} tensors{run.where()}: how many comparisons (ops) run depends on "
                    "their values (two items take one)")
    return Seq([join(items)] * len(items), list)  # same items, in an order the data decides


def _extreme(run: Interpreter, op: str, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
    """``min``/``max``: each item's key is compared with the best so far (``lt``/``gt``) from C."""
    if not args or _for_real(run, [*args, *kwargs.values()]) or not _calls_back(args, kwargs):
        return None
    candidates = args if len(args) > 1 else run.unpack(args[0], None)
    if candidates is None:  # each item's key, and a comparison per item after the first: under 0..N
        best: Value = Opaque(f"{'min' if op == 'lt' else 'max'} of unknown items")
        for item in _unknown_items(run, args[0], "min" if op == "lt" else "max"):
            key = _keys(run, [item], kwargs)[0]
            run.binop(op, key, key, None, frozenset())
            best = item
        return best
    if not candidates:
        return Opaque(f"{'min' if op == 'lt' else 'max'} of unknown items")
    keys = _keys(run, candidates, kwargs)
    best, best_key = candidates[0], keys[0]
    for item, key in zip(candidates[1:], keys[1:]):
        better = run.truth_of(run.binop(op, key, best_key, None, frozenset()), None)
        if better is None:
            best, best_key = join([best, item]), join([best_key, key])
        elif better:
            best, best_key = item, key
    return best


def _reduce(run: Interpreter, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
    """``functools.reduce(fn, items[, initial])``: ``fn`` called from C on the running value."""
    if len(args) not in (2, 3):
        return None
    fn, source = args[0], args[1]  # (known items too: reduce calls back, so it is not run for real)
    items = run.iterate(source)
    if items is None:  # a call per item (after the first without an initial value), under 0..N
        acc = args[2] if len(args) == 3 else run.element(source)
        for item in _unknown_items(run, source, "functools.reduce"):
            acc = join([acc, run.call(fn, [acc, item], {})])
        return acc
    rest = list(items)
    if len(args) == 3:
        acc = args[2]
    elif rest:
        acc, rest = rest[0], rest[1:]
    else:
        return Opaque("reduce of an empty sequence raises")
    for item in rest:
        acc = run.call(fn, [acc, item], {})
    return acc
