"""Stand-in "models" for the call-site key tests: plain Python, no torch.

Each model takes ``o``, a namespace of stand-in ops made by :func:`ops` (each op records
itself on a :class:`capture.standin.StandinRecorder` and returns its first argument), and is
run through ``rec.run(model, o, ...)`` as a module's ``forward`` would be. A trailing
``# @tag`` comment marks a line that a test looks up with :func:`line_of`.

Also the helpers the tests share: :func:`trace` runs a model under a fresh recorder,
:func:`layer_chains` names each layer's chain by (function, line), :func:`call_copies` lists
the call instructions the compiler emitted for one line.

Line layout matters here (which call is on which line), so keep the formatting as it is.
"""

from __future__ import annotations

import dataclasses
import dis
import enum
import functools
import inspect
import linecache
from types import SimpleNamespace

from torchlens.capture.standin import StandinRecorder, Value


def ops(rec: StandinRecorder, *names: str) -> SimpleNamespace:
    """A namespace of stand-in ops, one per name, recording on ``rec``."""
    return SimpleNamespace(**{name: rec.op(name) for name in names})


def line_of(fn, tag: str) -> int:
    """The absolute line number of the line in ``fn``'s source that ends with ``# @tag``."""
    lines, first = inspect.getsourcelines(fn)
    hits = [first + k for k, text in enumerate(lines) if text.rstrip().endswith(f"# @{tag}")]
    assert len(hits) == 1, (fn, tag, hits)
    return hits[0]


def trace(model, *args, names=("op",), value=False):
    """Run ``model(o, *args)`` under a fresh recorder; with ``value``, pass a :class:`Value`."""
    rec = StandinRecorder()
    o = ops(rec, *names)
    if value:
        args = (Value(rec), *args)
    rec.run(model, o, *args)
    return rec


def layer_chains(rec):
    """Per layer (order of first execution): ``(op name, ((function name, line), ...))``."""
    out = {}
    for name, places in rec.sites():
        chain = tuple((p.code.qualname.rsplit(".", 1)[-1], p.line) for p in places)
        out.setdefault((name, places), (name, chain))
    return list(out.values())


#: Opcodes that call, on any version (3.11's PRECALL is left out: it precedes its CALL).
CALLS = {"CALL_FUNCTION", "CALL_FUNCTION_KW", "CALL_FUNCTION_EX", "CALL_METHOD", "CALL",
         "CALL_KW", "WITH_EXCEPT_START"}


def call_copies(fn, tag: str) -> list[int]:
    """Offsets of the call instructions the compiler emitted for the line tagged ``tag``."""
    code, line = fn.__code__, line_of(fn, tag)
    lines = {o: ln for start, end, ln in code.co_lines() for o in range(start, end, 2)}
    return [i.offset for i in dis.get_instructions(code)
            if i.opname in CALLS and lines.get(i.offset) == line]


# --- places on one line ---------------------------------------------------------------


def nested_calls(o, x):
    return o.op(o.op(o.op(x)))


def two_calls_one_line(o, a):
    return o.op(a) + o.op(a)


# --- loops -----------------------------------------------------------------------------


def for_loop(o, x, n):
    for _ in range(n):
        x = o.tanh(x) * 0.5
    return x


def while_test(o, n):
    i = 0
    while o.check(i) < n:
        i = o.body(i) + 1
    return i


def while_two_ops_in_test(o, n):
    i = 0
    while o.lo(i) < o.hi(n):  # @test
        i += 1
    return i


def nested_loops(o, x):
    for _ in range(2):
        x = o.outer(x)
        for _ in range(3):
            x = o.inner(x)
    return x


def loop_with_break(o, x):
    for i in range(10):
        x = o.op(x)
        if i == 3:
            break
    return x


def branch_on_index(o, x):
    for i in range(5):
        if i % 2:
            x = o.op(x)
        else:
            x = o.op(x)
    return x


# --- code the compiler duplicates --------------------------------------------------------


def finally_exits(o, mode):
    for _ in range(1):
        try:
            if mode == "return":
                return 1
            if mode == "raise":
                raise KeyError(mode)
            if mode == "break":
                break
            if mode == "continue":
                continue
        finally:
            o.fin(mode)  # @fin
    return 0


def run_finally_exits(o, modes):
    for mode in modes:
        try:
            finally_exits(o, mode)
        except KeyError:
            pass


class Ctx:
    """A context manager whose ``__enter__`` and ``__exit__`` are recorded ops."""

    def __init__(self, o):
        self.o = o

    def __enter__(self):
        self.o.enter(self)
        return self

    def __exit__(self, *exc):
        self.o.exit(self)
        return True  # swallow the KeyError of the "raise" exit


def with_exits(o, mode):
    for _ in range(1):
        with Ctx(o):  # @with
            if mode == "return":
                return 1
            if mode == "raise":
                raise KeyError(mode)
            if mode == "break":
                break
            if mode == "continue":
                continue
    return 0


def run_with_exits(o, modes):
    for mode in modes:
        with_exits(o, mode)


# --- helpers -----------------------------------------------------------------------------


def helper(o, x):
    x = o.op(x)
    return o.op2(x)


def helper_two_lines(o, x):
    x = helper(o, x)  # @first
    x = helper(o, x)  # @second
    return x


def helper_one_loop_line(o, x, n):
    for _ in range(n):
        x = helper(o, x)
    return x


def helper_two_loops(o, x):
    for _ in range(2):
        x = helper(o, x)
    for _ in range(3):
        x = helper(o, x)
    return x


def identical_1(o, x):
    return o.op(x)


def identical_2(o, x):
    return o.op(x)


def identical_functions(o, x):
    for fn in (identical_1, identical_2, identical_1):
        x = fn(o, x)
    return x


# --- recursion ---------------------------------------------------------------------------


def recurse(o, x, depth):
    x = o.op(x)
    if depth > 1:
        x = recurse(o, x, depth - 1)
    return x


def recursion_once(o, x):
    return recurse(o, x, 3)


def recursion_two_entries(o, x):
    x = recurse(o, x, 3)  # @first
    x = recurse(o, x, 2)  # @second
    return x


def ping(o, x, n):
    x = o.ping(x)
    return pong(o, x, n - 1) if n > 1 else x


def pong(o, x, n):
    x = o.pong(x)
    return ping(o, x, n - 1) if n > 1 else x


def mutual_recursion(o, x):
    return ping(o, x, 6)


# --- decorators (shared wrapper code, §4) ------------------------------------------------


def calls_twice(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        fn(*args)  # @first
        return fn(*args)  # @second

    return wrapper


def passthrough(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)

    return wrapper


@calls_twice
def twice_decorated(o, x):
    return o.op(x)


@passthrough
def decorated_leaf(o, x):
    return o.op(x)


@passthrough
def decorated_caller(o, x):
    x = decorated_leaf(o, x)  # @first
    return decorated_leaf(o, x)  # @second


@passthrough
def decorated_recursion(o, x, depth):
    x = o.op(x)
    if depth > 1:
        x = decorated_recursion(o, x, depth - 1)
    return x


# --- comprehensions, generators, lazy iterators ------------------------------------------


def list_comprehension(o, xs):
    return [o.op(x) for x in xs]


def genexpr_sum(o, xs):
    return sum(o.op(x) for x in xs)


def map_op(o, xs):
    lazy = map(o.op, xs)  # @create
    return list(lazy)  # @consume


def map_lambda(o, xs):
    return list(map(lambda t: o.op(t), xs))


def _inner_steps(o, x):
    yield o.op(x)
    yield o.op(x)


def _outer_steps(o, x):
    yield from _inner_steps(o, x)
    yield o.op(x)


def yield_from(o, x):
    return list(_outer_steps(o, x))


def unpacked_generators(o, xs):
    """Generators (and a lazy builtin's callbacks) resumed by the instruction that unpacks them:
    a target list, a starred target, a list or tuple display, a call's ``*`` argument."""
    a, b = (o.op(x) for x in xs)
    c, *d = (o.op(x) for x in xs)
    e = [*(o.op(x) for x in xs)]
    f = (*(o.op(x) for x in xs),)
    g = max(*(o.op(x) for x in xs), 0)
    h, i = map(lambda t: o.op(t), xs)
    return a, b, c, d, e, f, g, h, i


def sum_of_values(o, v):
    return sum([v, v, v])


# --- Value operators ---------------------------------------------------------------------


def value_operators(o, a, b):
    c = a + b
    d = c * 2
    e = d @ a
    return e[0]


# --- exec-built code ---------------------------------------------------------------------

EXEC_SOURCE = """\
def built(o, x):
    return o.op(x)
"""

EXEC_WHILE_SOURCE = """\
def built_while(o, n):
    i = 0
    while o.check(i) < n:
        i += 1
    return i
"""

EXEC_FINALLY_SOURCE = """\
def built_finally(o, mode):
    try:
        if mode == "return":
            return 1
        if mode == "raise":
            raise KeyError(mode)
    finally:
        o.fin(mode)
    return 0
"""


def exec_function(source: str, name: str, filename: str = "<string>", register: bool = False):
    """A fresh function compiled from ``source``; ``register`` puts the source in linecache."""
    if register:
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


def exec_in_loop(o, x, n):
    for _ in range(n):
        built = exec_function(EXEC_SOURCE, "built")
        x = built(o, x)
    return x


def call_each(o, calls):
    """Call ``fn(o, *args)`` for each ``(fn, args)`` from one line, ignoring KeyError."""
    for fn, args in calls:
        try:
            fn(o, *args)
        except KeyError:
            pass


# --- instructions that specialize (raw f_lasti changes with warm-up on 3.11/3.12) -----------


class Box:
    """Python dunders, a property and a method, each a recorded op."""

    def __init__(self, o):
        self.o = o

    def __getitem__(self, index):
        return self.o.getitem(index)

    @property
    def prop(self):
        return self.o.prop(self)

    def method(self, x):
        return self.o.method(x)


def generator(o):
    yield o.gen(1)
    yield 2


def many_instruction_kinds(o, box, v):
    o.op(v)  # plain call
    sorted([2, 1], key=o.key)  # a builtin calling back (3.11: CALL, then PRECALL)
    box[0]  # BINARY_SUBSCR reaching a Python __getitem__
    box.prop  # LOAD_ATTR reaching a property
    box.method(v)
    v + v
    v[0]
    for _ in generator(o):  # FOR_ITER resuming a generator
        pass
    return [o.comp(c) for c in (1, 2)]


KINDS_OPS = ("op", "key", "getitem", "prop", "method", "gen", "comp")
#: ``rec.layers()`` of one run of :func:`many_instruction_kinds`.
KINDS_LAYERS = [("op", 1), ("key", 2), ("getitem", 1), ("prop", 1), ("method", 1),
                ("add", 1), ("getitem", 1), ("gen", 1), ("comp", 2)]


def run_kinds(o, box, v, n):
    for _ in range(n):
        many_instruction_kinds(o, box, v)


class Special:
    """Special methods in Python, each running a recorded op: what CPython calls for an
    operator, a truth test, ``in``, a builtin, an f-string or a missing attribute."""

    def __init__(self, o, n):
        self.o, self.n = o, n

    def __bool__(self):
        return self.o.truth(self.n) > 0

    def __len__(self):
        return self.o.length(self.n)

    def __neg__(self):
        return Special(self.o, self.o.neg(self.n))

    def __add__(self, other):
        return Special(self.o, self.o.add2(self.n))

    def __radd__(self, other):
        return Special(self.o, self.o.radd(self.n))

    def __iadd__(self, other):
        self.n = self.o.iadd(self.n)
        return self

    def __lt__(self, other):
        return self.o.less(self.n) < 0

    def __contains__(self, item):
        return self.o.contains(item) == item

    def __abs__(self):
        return self.o.absolute(self.n)

    def __format__(self, spec):
        return str(self.o.fmt(self.n))

    def __str__(self):
        return str(self.o.text(self.n))

    def __getattr__(self, name):
        return self.o.dynamic(name)

    def __getitem__(self, index):
        return self.o.item(index)

    def __setitem__(self, index, value):
        self.o.store(index)

    def __iter__(self):
        return iter([self.o.first(1), self.o.second(2)])


SPECIAL_OPS = ("truth", "length", "neg", "add2", "radd", "iadd", "less", "contains", "absolute", "fmt", "text",
               "dynamic", "item", "store", "first", "second")


def python_specials(o, n):
    s = Special(o, n)
    if s:  # __bool__ at the jump (3.11: the statement's span) or TO_BOOL (3.13)
        n += 1
    while n < 4:
        n += 1 if s else 2  # one truth test on its line: 3.10 places it by line alone
    total = len(s) + abs(s)
    t = -s
    t += 1
    u = s + s
    v = 1 + s
    w = s < t
    x = 3 in s
    text = f"{s}"  # one formatted value per line: 3.10 places it by line alone
    text += f"{s!s}"
    text += f"{s:>4}" + str(s)
    a, b = s
    s[0] = s[1]
    return total, t, u, v, w, x, text, a, b, s.missing, [c for c in s]


def local_classes(o, x):
    """Classes made by the function itself: a method over a closure, ``super()`` between two
    of them, a dataclass, an enum, a property and a static method (3.10 has no ``co_qualname``:
    the classes' places come from the methods' code alone)."""
    scale = 2

    class Base:
        def f(self, t):
            return o.op(t) * scale

    class Child(Base):
        def f(self, t):
            return o.op2(super().f(t))

        @property
        def twice(self):
            return self.f(x)

        @staticmethod
        def plain(t):
            return o.op(t)

    @dataclasses.dataclass
    class Pair:
        a: object
        b: int = 1

        def __post_init__(self):
            self.a = o.op2(self.a)

    class Mode(enum.Enum):
        ONE = 1
        TWO = 2

    pair = Pair(Child().twice)
    return Child.plain(pair.a) if Mode["TWO"].value == 2 else o.op(x)


# --- for property-based tests --------------------------------------------------------------


def branches(o, picks, inner):
    for pick in picks:
        if pick == "a":
            o.op(pick)
        elif pick == "b":
            o.op(pick)
            for _ in range(inner):
                o.inner(pick)
        else:
            o.op(pick)


def recursion_from_one_line(o, depths):
    for depth in depths:
        recurse(o, 0, depth)
