"""Stand-in "models" for the call-site key tests: plain Python, no torch.

Each model takes ``o``, a namespace of stand-in ops made by :func:`ops` (each op records
itself on a :class:`capture.standin.StandinRecorder` and returns its first argument), and is
run through ``rec.run(model, o, ...)`` as a module's ``forward`` would be. A trailing
``# @tag`` comment marks a line that a test looks up with :func:`line_of`.

Line layout matters here (which call is on which line), so keep the formatting as it is.
"""

from __future__ import annotations

import functools
import inspect
import linecache
from types import SimpleNamespace

from capture.standin import StandinRecorder


def ops(rec: StandinRecorder, *names: str) -> SimpleNamespace:
    """A namespace of stand-in ops, one per name, recording on ``rec``."""
    return SimpleNamespace(**{name: rec.op(name) for name in names})


def line_of(fn, tag: str) -> int:
    """The absolute line number of the line in ``fn``'s source that ends with ``# @tag``."""
    lines, first = inspect.getsourcelines(fn)
    hits = [first + k for k, text in enumerate(lines) if text.rstrip().endswith(f"# @{tag}")]
    assert len(hits) == 1, (fn, tag, hits)
    return hits[0]


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
