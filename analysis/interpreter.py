"""The abstract run: execute a model's Python over abstract tensors and record every op call.

The prediction runs the model's code the way CPython would, but tensors carry no data
(:class:`~analysis.values.Tensor`), and every place comes from the compiled code
(:mod:`torchlens.analysis.source`). Whatever the live model makes concrete (submodules, container
lengths, configs, flags, shared instances) is read for real, without changing anything:
attribute writes go to an overlay, never to the model. Loops with a known iterable are
unrolled, so scopes, helpers and recursion are followed exactly as the capture sees them;
what cannot be decided runs under a :class:`~analysis.passes.Count` saying so.

:class:`Interpreter` is one visitor over the syntax tree: ``eval_<Node>`` for expressions,
``exec_<Node>`` for statements (the most frequent kinds of both compiled once per node into
closures, :func:`_runner`), ``b_<name>`` for the builtins it models, and the call machinery
they share.
Expressions: operators on tensors are op calls through the tensor type's dunders, at the
operator's own instruction, with the reflected dunder when only the right operand is a tensor
(``0.5 * x`` is ``rmul``); comprehensions run in their own frame on 3.10/3.11 and inline on
3.12+ (PEP 709); a generator expression runs lazily from whoever consumes it. Statements: a branch whose condition is known runs alone; one the prediction
cannot decide runs every arm under ``0..1``, except an arm that can only raise (argument
checks); a loop over a known iterable is unrolled, one it cannot count runs its body once
under a symbolic count. Builtins that call back (``sum``, ``map``, ``sorted``) run what they
call from their caller's place, with no frame of their own, as CPython does.

Pure helpers are free functions (:mod:`torchlens.analysis.values`, :mod:`torchlens.analysis.pybuiltins`).
Torch-free: a :class:`~analysis.host.Host` says what an op is.
"""

from __future__ import annotations

import ast
import builtins
import collections
import collections.abc
import copy
import dataclasses
import dis
import functools
import inspect
import operator
import os
import sys
import threading
import time
import types
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from enum import Enum
from types import CodeType
from typing import Any, Callable, Iterator, Optional, Sequence, cast

from .builder import builder
from .bytecode import run_bytecode, unread
from .caches import per_class_name
from .callbacks import GETTERS, callback_handlers, getter_call, sort_in_place
from .errors import SourceUnavailableError
from .events import Event, Gap, HookMark, Link, LoopEntry, real_inputs
from . import lru, sets
from .generated import build_dataclass, build_named_tuple, generated, is_named_tuple, is_tuple_new
from .host import Host, Intrinsic, Member, OpRaises
from .localclass import build_class
from .passes import MAYBE, ONE, Count
from .pybuiltins import (ATTR_LOAD, BINARY, BINOPS, BOOL_OPS, COMPARE, COMPARE_OPS, CONCRETE, CONTAINS_OPS, CONVERT_OPS,
                         FOR_ITER, FORMAT_OPS, GET_ITER, ITERATING, LIVE_CONTAINERS, MAX_UNROLL, MIRROR, MUTATORS,
                         NUMERIC, PLAIN, PURE_MODULES, READS, STAR_ITER, SUBSCR_LOAD, SUBSCR_STORE, TENSOR_QUERIES, UNARY,
                         UNARY_OPS, UNPACK, WITH_ENTER, class_attr, hashable, is_pure, keep, numbers_ufunc)
from .sites import CodeId, Place, collapse, instruction_place
from .source import CALL_OPS, Parameters, SourceFile, source_of_code, source_read_before, source_text
from .values import (FALSE, NONE, TRUE, Bound, Dict, Function, Instance, Known, Lazy, Nature, Opaque,
                     Partial, PyMethod, Seq, SuperRef, Tensor, TensorTuple, Union, Value, concrete,
                     concrete_args, contains, contents_truth, element_of, identical, join, may_hold_tensor,
                     origins, truth, type_of, without_contents)

__all__ = ["Interpreter", "Frame", "Boundary", "Budget", "Limits", "Signal", "Exit"]

#: Interpreted calls nested deeper than this are not followed (a note says so).
MAX_DEPTH = 80
#: A code object repeated more than this many times in one chain stops (unbounded recursion).
MAX_RECURSION = 24
#: Iterations a ``while`` with a static test may run before the prediction gives up counting.
MAX_WHILE = 10_000

#: Modules whose Python functions are called for real on concrete arguments: standard-library
#: ones, and ``packaging`` (the version parsing models use to pick a code path by library version).
_STDLIB_PURE = frozenset({"inspect", "typing", "dataclasses", "enum", "collections", "_collections_abc",
                          "re", "abc", "keyword", "string", "numbers", "functools", "operator", "copy",
                          "packaging"})
#: Modules whose functions only report (warnings, logs): not followed, they run no op.
_SILENT = frozenset({"warnings", "logging"})
#: Their functions that answer a question (which logger, is a level on): called for real, as code
#: branches on them (``if logger.isEnabledFor(logging.DEBUG):``).
_SILENT_QUERIES = frozenset({"getLogger", "getChild", "isEnabledFor", "getEffectiveLevel", "hasHandlers",
                             "getLevelName"})


#: Higher-order ops whose outputs follow their operands or branches: op name -> parameter names.
_BRANCHING = {"cond": ("pred", "true_fn", "false_fn", "operands"),
              "while_loop": ("cond_fn", "body_fn", "carried_inputs")}


#: Steps between two looks at the clock.
_CLOCK_EVERY = 256


@dataclass(frozen=True, slots=True)
class Limits:
    """How far one prediction may go.

    ``steps`` (statements, calls and loop items interpreted) is the budget: where it ends does
    not depend on the machine or its load. ``seconds`` is an outer guard against steps that are
    slow: the predicting thread's CPU time (``time.thread_time``: other processes taking the
    core away do not count, so a loaded machine does not cut a prediction short; time spent
    reading source files is not counted; ``math.inf``: no clock)."""

    steps: int = 1_000_000
    seconds: float = 5.0

    def given(self, steps: Optional[int], seconds: Optional[float]) -> Limits:
        """These limits with the ones given (``None``: keep this one)."""
        return Limits(self.steps if steps is None else steps, self.seconds if seconds is None else seconds)


#: The limits of a prediction that names none (read when a prediction starts; the test suite
#: lifts ``seconds`` so that no test's result depends on the machine's load).
DEFAULT_LIMITS = Limits()


class Budget(Exception):
    """Raised when a prediction runs past its step or time budget (a huge or looping program)."""

    def __init__(self, message: str, option: str) -> None:
        super().__init__(message)
        #: The keyword that allows more (``max_steps`` or ``max_seconds``).
        self.option = option


class Exit(Enum):
    """How a block ended early."""

    RETURN = "return"
    BREAK = "break"
    CONTINUE = "continue"
    RAISE = "raise"


class Callee(Enum):
    """What a callable that is neither an op nor an intrinsic is to :meth:`Interpreter.call_known`."""

    #: A plain Python function, read as it is whatever the arguments.
    PLAIN = "plain"
    #: Anything else (a modelled builtin, a class, a function that may be called for real; a module is
    #: told by the host first, see :meth:`Interpreter.call_known`).
    OTHER = "other"


#: Enum members read on the hottest paths, as module names: CPython 3.11 does not specialize
#: reading a class's attribute, so ``Exit.RETURN`` is a lookup through the metaclass every time
#: (about four times the cost of reading a global).
_PLAIN = Callee.PLAIN
_RETURN, _RAISE = Exit.RETURN, Exit.RAISE
_OP, _METHOD, _TENSOR = Member.OP, Member.METHOD, Member.TENSOR
_CHECK = Intrinsic.CHECK
_ANY = Nature.ANY


@dataclass(frozen=True, slots=True)
class Signal:
    """A block that ended early: how, and the value returned."""

    kind: Exit
    value: Value = NONE
    #: For :attr:`Exit.RAISE`: the exception's class where the run knows it, or the classes it
    #: is one of (a branch the run cannot decide whose every arm raises).
    error: type | tuple[type, ...] | None = None
    #: For :attr:`Exit.RAISE`: what raised where (``"ValueError('x') raised at m.py:3 in f"``);
    #: empty where nothing is said of it (a bare ``raise`` outside a handler the run followed).
    site: str = ""


#: A :class:`Signal` built as a plain record would be (one per ``return`` run; :func:`~.builder.builder`).
_new_signal = builder(Signal)


class Unwinding(BaseException):
    """A raise the run is certain of, inside a ``try`` with handlers (:attr:`Interpreter.catching`):
    it leaves the expression and the calls it is in, up to the statement being run in the
    innermost block (:meth:`Interpreter.exec_block`), whose :attr:`Exit.RAISE` signal it becomes;
    so the ``try`` sees it as it sees a ``raise`` statement in its body."""

    def __init__(self, signal: Signal) -> None:
        super().__init__(signal.site)
        self.signal = signal


@dataclass(eq=False, slots=True)
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
    #: The running body, when this is a generator function's frame.
    resumable: Optional[Resumable] = None
    #: Names the function declares ``nonlocal`` or ``global`` (its writes to them go there).
    declared: dict[str, str] = field(default_factory=dict)
    #: What the stack below it gives a chain (:meth:`Interpreter.chain_under`), made on first
    #: use; cleared when the frame is pushed again (a generator's, resumed from another place).
    below: Optional[tuple[str, Optional[tuple[Link, ...]], str, Optional[frozenset[int]]]] = None


@dataclass(frozen=True, slots=True)
class Boundary:
    """A module call on the stack: chains stop here; its address is the scope."""

    address: str


#: The methods of a generator the run follows (``next`` is the builtin's).
_GENERATOR_METHODS = frozenset({"send", "close"})


class _Closed(BaseException):
    """Unwinds a generator body whose consumer went away."""


class Resumable:
    """A generator function's body, run one ``yield`` at a time on a thread of its own.

    As in CPython, the body runs when the consumer asks for the next item, and its frame sits
    on top of the consumer's (the chain of an op in it is the consumer's place, then the
    generator's). Only one thread runs at a time: the consumer waits while the body runs up
    to its next ``yield``, and the body waits while the consumer works.
    """

    def __init__(self, run: Interpreter, frame: Frame, body: list[ast.stmt]) -> None:
        self.run, self.frame, self.body = run, frame, body
        self._to_body = threading.Semaphore(0)
        self._to_consumer = threading.Semaphore(0)
        self._thread: Optional[threading.Thread] = None
        self._item: Value = NONE
        self._error: Optional[BaseException] = None
        self._done = False
        self._closed = False
        #: The consumer's count when it first asked for an item (restored at the end).
        self._base: Optional[Count] = None
        #: What ``send`` passes in: the value of the ``yield`` the body waits at.
        self.sent: Value = NONE
        #: Raises taken as not run (:attr:`Interpreter.unraised`) while the body waited at a
        #: ``yield``: the consumer's, which a ``with`` around the yield does not count as its own.
        self.unraised_outside = 0

    def __iter__(self) -> Iterator[Value]:
        return self

    def __next__(self) -> Value:
        if self._done:
            raise StopIteration
        run = self.run
        self.frame.below = None  # resumed from another place, maybe
        run.stack.append(self.frame)
        if self._base is None:
            self._base = run.mult
        try:
            if self._thread is None:
                self._thread = threading.Thread(target=self._main, daemon=True, name="torchlens-generator")
                self._thread.start()
            else:
                self._to_body.release()
            self._to_consumer.acquire()
        finally:
            run.stack.pop()
        if self._error is not None or self._done:
            run.mult = self._base
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        if self._done:
            raise StopIteration
        return self._item  # the consumer's work on it runs as often as the yield did (under a branch: 0..1)

    def give(self, item: Value) -> Value:
        """On the body's thread: hand ``item`` to the consumer, wait to be resumed, and return
        what it sent (``None`` for ``next``)."""
        self._item = item
        mine, unraised = self.run.mult, self.run.unraised
        self._to_consumer.release()
        self._to_body.acquire()
        self.unraised_outside += self.run.unraised - unraised
        if self._closed:
            raise _Closed
        self.run.mult = mine  # the body goes on as often as it got here, whatever the consumer's count
        sent, self.sent = self.sent, NONE
        return sent

    def close(self) -> None:
        """``gen.close()``: a body not started or finished runs nothing and is done; one left at
        a ``yield`` is unwound there (a note where a ``finally`` or ``__exit__`` would run)."""
        if self._thread is None:
            self._done = True
        elif not self._done:
            if _cleans_up(self.frame.node):
                code = self.frame.code
                self.run.note(f"generator {code.co_name} ({_short(code.co_filename)}:{code.co_firstlineno}) is left "
                              "at a yield and closed later: what its finally or __exit__ runs then is not predicted")
            self._closed = True
            self._to_body.release()
            self._thread.join()

    def _main(self) -> None:
        try:
            signal = self.run.exec_block(self.body)
            if signal is not None and signal.kind is Exit.RAISE:
                self.run.unwind(signal)  # the consumer's next() raises it, inside its try
        except _Closed:
            pass
        except BaseException as error:  # noqa: BLE001 - handed to the consumer (Budget, bugs)
            self._error = error
        self._done = True
        self._to_consumer.release()


def _cleans_up(node: ast.AST) -> bool:
    """Whether a generator function yields inside a ``try`` with handlers or ``finally``, or a
    ``with`` (closing it while suspended there runs code), outside nested functions."""
    todo: list[tuple[ast.AST, bool]] = [(child, False) for child in ast.iter_child_nodes(node)]
    while todo:
        child, guarded = todo.pop()
        if isinstance(child, (ast.Yield, ast.YieldFrom)) and guarded:
            return True
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        guards = isinstance(child, (ast.With, ast.AsyncWith)) or isinstance(child, ast.Try) and bool(
            child.finalbody or child.handlers)
        todo.extend((grand, guarded or guards) for grand in ast.iter_child_nodes(child))
    return False


#: A name not bound before a branch.
_UNSET = object()
#: :meth:`Interpreter.bound` where nothing is narrowed.
_AS_IS: AbstractContextManager[None] = nullcontext()
#: Operands of a known ``+`` or ``*`` computed for real: plain values and lists (a list's ``+``
#: and ``*`` make a new list without reading its items).
_JOINABLE = (list, *PLAIN)
#: Objects an f-string formats with no side effect, and its conversions (``!s``, ``!r``, ``!a``).
_FORMATTED = frozenset({str, int, float, bool, complex, type(None)})
_CONVERSIONS: dict[int, Callable[[Any], Any]] = {-1: lambda obj: obj, ord("s"): str, ord("r"): repr, ord("a"): ascii}

#: Builtins that call a special method of their argument: the names they try, in order.
_BUILTIN_SPECIALS: dict[Any, tuple[str, ...]] = {
    builtins.abs: ("__abs__",), builtins.float: ("__float__", "__index__"), builtins.int: ("__int__", "__index__"),
    builtins.complex: ("__complex__", "__float__", "__index__"), builtins.round: ("__round__",),
    builtins.str: ("__str__", "__repr__"), builtins.repr: ("__repr__",), builtins.bool: ("__bool__", "__len__"),
    builtins.len: ("__len__",), builtins.hash: ("__hash__",), builtins.format: ("__format__", "__str__", "__repr__"),
    builtins.iter: ("__iter__",), builtins.next: ("__next__",), builtins.reversed: ("__reversed__",),
    builtins.print: ("__str__", "__repr__"),
}

#: Handler of a modelled builtin: ``None`` when it does not apply (then the builtin is called
#: for real on concrete arguments, or the call is opaque).
Handler = Callable[[list[Value], dict[str, Value]], Optional[Value]]


#: Stands for the items of a ``*`` argument the run cannot list (how many there are is unknown).
UNLISTED = Opaque("*items the prediction cannot list")


class Interpreter:
    """One abstract run (the visitor). Use :mod:`torchlens.analysis.predict`."""

    #: Attributes in slots: read at a fixed offset (past 30 attributes an instance's dict makes CPython
    #: 3.11 look each up by its hash), and methods found without an instance dict to look in first.
    __slots__ = ("host", "events", "gaps", "notes", "cut", "catching", "exits", "unraised", "unlisted", "resumables",
                 "limits", "deadline", "stack", "mult", "recording", "bypass_check", "steps", "next_check",
                 "scalars", "tensor_type", "overlay", "views", "unnamed", "lru", "_keep", "sources", "held",
                 "specials", "class_attrs", "read_plainly", "union_items", "found", "handlers", "handling",
                 "guesses", "__weakref__")

    def __init__(self, host: Host, limits: Optional[Limits] = None) -> None:
        self.host = host
        self.events: list[Event] = []
        self.gaps: list[Gap] = []
        #: Where the prediction is not exact without a gap saying so (a cap, a ``try``).
        self.notes: list[str] = []
        #: Code objects whose recursion was cut off: counts below them are lower bounds.
        self.cut: set[CodeId] = set()
        #: ``try`` statements with handlers being run (a ``raise`` inside may be caught).
        self.catching = 0
        #: The exceptions whose ``except`` arm is being run (what a bare ``raise`` raises again).
        self.handling: list[Signal] = []
        #: Undecided ``break``/``return`` taken so far (a loop with one has a data-dependent end).
        self.exits = 0
        #: Code that can only raise, taken as not run so far (an undecided branch arm, loop body).
        self.unraised = 0
        #: Comprehension items not listed so far (an undecided filter, an unknown iterable).
        self.unlisted = 0
        #: Blocks run a number of times the prediction does not know (an undecided branch arm, a
        #: loop of unknown length) and ``*items`` it could not list, so far.
        self.guesses = 0
        #: Generator bodies started by this run (closed when it ends).
        self.resumables: list[Resumable] = []
        self.limits = DEFAULT_LIMITS if limits is None else limits
        self.deadline = time.thread_time() + self.limits.seconds
        self.stack: list[Any] = []
        self.mult: Count = ONE
        self.recording = True
        self.bypass_check = False
        self.steps = 0
        #: The next step count at which :meth:`check_budget` looks (the clock's or the budget's end).
        self.next_check = min(_CLOCK_EVERY, self.limits.steps + 1)
        #: Types of plain values :meth:`wrap` gives as they are: never a stand-in, a live
        #: container nor (unless the host says so) a tensor.
        self.scalars = frozenset(t for t in (int, float, bool, str, type(None)) if not issubclass(t, host.tensor_type))
        self.tensor_type = host.tensor_type
        #: (id(live object), attribute) -> value written by the code being read.
        self.overlay: dict[tuple[int, str], Value] = {}
        #: id(live dict or list) -> (it, the run's own copy of it): made when the code first
        #: writes into it, read from then on (a cache filled in forward); the live one is untouched.
        self.views: dict[int, tuple[Any, Value]] = {}
        #: id(module) -> (it, ``<Cls#k>``): modules outside the model's named ones (built in forward),
        #: numbered by first call after them, as the capture numbers them.
        self.unnamed: dict[int, tuple[Any, str]] = {}
        #: id(lru_cache wrapper) -> (it, the keys it holds and their results (read from the live
        #: cache when first met, then filled by the run's calls), or why its content is not known
        #: (unreadable, or called under an undecided branch); its keyword marker).
        self.lru: dict[int, tuple[Any, dict[Any, Value] | str, object]] = {}
        self._keep: list[Any] = []
        #: id(code) -> (it, the qualname asked, its source and node, why they are stale or empty
        #: (:func:`_stale`)): found once per run (the source files and :mod:`linecache` do not
        #: change while it runs).
        self.sources: dict[int, tuple[CodeType, str, SourceFile, ast.AST, str]] = {}
        #: id(stand-in) -> (stand-in, the value it stands for), for objects built for real.
        self.held: dict[int, tuple[Any, Value]] = {}
        #: The special method a class defines in Python, or ``None`` (:func:`_special_method`), and
        #: :func:`class_attr`: looked up once per class and name per run (it writes into no live class).
        self.specials: Specials = per_class_name(_special_method)
        self.class_attrs: Callable[[type, str], Any] = per_class_name(class_attr)
        #: Whether reading an attribute of a live object of the class runs no Python (:meth:`python_read`).
        self.read_plainly: Callable[[type, str], bool] = per_class_name(  # (not bound to the run: no cycle)
            functools.partial(_reads_plainly, host, self.class_attrs, self.specials))
        #: id(union) -> (it, one value standing for any of its items), for unions iterated so far.
        self.union_items: dict[int, tuple[Union, Value]] = {}
        #: id(callable) -> (it, its op name, its intrinsic, or what else it is): what
        #: :meth:`call_known` found it is, whatever the arguments (the host's answers about a
        #: callable hold for the run; a plain function is neither an intrinsic, a modelled
        #: builtin nor one called for real: it is interpreted).
        self.found: dict[int, tuple[Any, str | Intrinsic | Callee]] = {}
        #: Builtins the run models itself, by the live builtin.
        self.handlers: dict[Any, Handler] = {
            builtins.len: self.b_len, builtins.isinstance: self.b_isinstance, builtins.type: self.b_type,
            builtins.getattr: self.b_getattr, builtins.hasattr: self.b_hasattr, builtins.setattr: self.b_setattr,
            builtins.super: self.b_super, builtins.tuple: self.b_sequence(tuple), builtins.list: self.b_sequence(list),
            builtins.set: self.b_set, builtins.dict: self.b_mapping(dict),
            collections.OrderedDict: self.b_mapping(collections.OrderedDict),
            builtins.reversed: self.b_reversed, builtins.iter: self.b_iter, builtins.next: self.b_next,
            builtins.callable: self.b_callable,
            builtins.print: self.b_print, builtins.abs: self.b_abs, builtins.pow: self.b_pow,
            builtins.any: self.b_all_any(True), builtins.all: self.b_all_any(False), functools.wraps: self.b_wraps,
            copy.deepcopy: self.b_deepcopy, functools.partial: self.b_partial, keep: self.b_keep,
            builtins.eval: self.b_eval, builtins.exec: self.b_eval, object.__new__: self.b_object_new,
            object.__init__: self.b_object_init,
            **{getattr(set, name): self.b_set_method(name) for name in sets.CHANGES | sets.READS},
            **callback_handlers(self),
        }

    # -- state -------------------------------------------------------------------------------

    @property
    def frame(self) -> Optional[Frame]:
        """The innermost interpreted frame of the current scope, if any."""
        stack = self.stack
        if stack and isinstance(stack[-1], Frame):  # most often: the innermost entry
            return stack[-1]
        for entry in reversed(stack):
            if isinstance(entry, Frame):
                return entry
            if isinstance(entry, Boundary):
                return None
        return None

    def step(self) -> None:
        """Count one step (the hottest callers, :meth:`exec_block` and :meth:`call`, do this inline)."""
        self.steps += 1
        if self.steps >= self.next_check:
            self.check_budget()

    def check_budget(self) -> None:
        """Past the step budget, or (every :data:`_CLOCK_EVERY` steps) the time budget: stop."""
        if self.steps > self.limits.steps:
            raise Budget(f"stopped after {self.limits.steps:,} interpreted steps{self.where()}", "max_steps")
        if self.steps % _CLOCK_EVERY == 0 and time.thread_time() > self.deadline:
            raise Budget(f"stopped after {self.limits.seconds:g} s{self.where()}", "max_seconds")
        self.next_check = min(self.steps - self.steps % _CLOCK_EVERY + _CLOCK_EVERY, self.limits.steps + 1)

    def where(self, node: Optional[ast.AST] = None) -> str:
        """`` at file:line in function`` of ``node`` (else of the current call) in the innermost
        interpreted frame, for reasons and notes."""
        for entry in reversed(self.stack):
            if isinstance(entry, Frame):
                line = getattr(node, "lineno", None) or (entry.at.line if entry.at is not None else None)
                name = getattr(entry.code, "co_qualname", entry.code.co_name)
                return f" at {_short(entry.code.co_filename)}:{line or entry.code.co_firstlineno} in {name}"
        return ""

    def note(self, text: str) -> None:
        """Record that the prediction is not exact here (once per text)."""
        if self.recording and text not in self.notes:
            self.notes.append(text)

    @contextmanager
    def scaled(self, count: Count) -> Iterator[None]:
        """Run a block whose events happen ``count`` times per time the block is reached."""
        saved = self.mult
        self.mult = saved * count
        if count.lo != count.hi:
            self.guesses += 1
        try:
            yield
        finally:
            self.mult = saved

    def wrap(self, obj: Any) -> Value:
        """A live object as a value: tensors become :class:`Tensor`; a stand-in handed to an
        object built for real (:meth:`build_for_real`) is the value it stood in for."""
        kind = type(obj)
        if kind in self.scalars:
            return Known(obj)
        held = self.held.get(id(obj))
        if held is not None and held[0] is obj:
            return held[1]
        if self.views and id(obj) in self.views:
            return self.viewed(Known(obj))
        if issubclass(kind, self.tensor_type):  # by its type: an object's own __class__ is not read
            return Tensor(obj, self.host.stand_in(obj))
        return Known(obj)

    def dict_of(self, obj: dict) -> Dict:
        """A live dict as a dict the run builds: its items wrapped (a copy the code may change)."""
        return Dict({k: self.wrap(v) for k, v in obj.items()}, type(obj))

    def viewed(self, value: Value) -> Value:
        """``value``, or the run's copy of it when it is a live container the code wrote into."""
        if self.views and type(value) is Known:
            entry = self.views.get(id(value.obj))
            if entry is not None and entry[0] is value.obj:
                return entry[1]
        return value

    def written(self, target: Known, method: str = "") -> Optional[Value]:
        """The run's copy of the live object ``target`` that the code writes into, by calling
        ``method`` (empty: an item written or deleted): a dict or list is copied on the first
        write and the copy is read from then on, so the first call that fills a cache and the
        calls that find it filled are both followed. A gap when the write is not modelled
        (another kind of object or method: ``None``) or the data decides whether it happens."""
        obj = target.obj
        kind = type(obj).__name__
        what = f"{kind}.{method} of a live {kind}" if method else f"an item write into a live {kind}"
        modelled = LIVE_CONTAINERS.get(type(obj))
        if modelled is None or method and method not in modelled:
            self.gap(f"{what}{self.where()} is not modelled: what reads it later is not predicted")
            return None
        view = self.viewed(target)
        if view is target:
            view = Seq([self.wrap(v) for v in obj], list) if isinstance(obj, list) else self.dict_of(obj)
            self.views[id(obj)] = (obj, view)
        if self.mult.exact != 1:
            self.gap(f"{what}{self.where()} under {self.mult.note or 'a branch the prediction cannot decide'}: "
                     "what reads it later is not predicted")
        return view

    # -- chains and events -------------------------------------------------------------------

    def scope_and_chain(self) -> tuple[str, Optional[tuple[Link, ...]], str]:
        """The current scope address, collapsed chain (``None`` if a place is unknown), and why."""
        stack = self.stack
        top = stack[-1] if stack else None
        if type(top) is not Frame:
            return self.walk_chain(stack)
        below = top.below
        if below is None:
            below = top.below = self.chain_under(len(stack) - 1)
        scope, chain, why, codes = below
        if chain is None:
            return scope, None, why
        if codes is None or id(top.code) in codes:  # recursion in its segment: collapsed by the whole walk
            return self.walk_chain(stack)
        if top.at is None:
            return scope, None, _no_place(top)
        return scope, (*chain, top.at), ""

    def chain_under(self, i: int) -> tuple[str, Optional[tuple[Link, ...]], str, Optional[frozenset[int]]]:
        """:meth:`scope_and_chain` of the stack below entry ``i`` (a frame), and the ids of the
        codes of the frames after its last boundary or hook mark (``None`` where one repeats:
        recursion, which only the whole walk collapses). Built from the frame below's own, so
        that each frame's is made once: the entries below a frame do not change while it is on
        the stack (the frame's ``below``; cleared when a frame is pushed again)."""
        if i == 0:
            return "self", (), "", frozenset()
        under = self.stack[i - 1]
        kind = type(under)
        if kind is Boundary:
            return under.address, (), "", frozenset()
        if kind is Frame:
            below = under.below
            if below is None:
                below = under.below = self.chain_under(i - 1)
            scope, chain, why, codes = below
            if chain is None:
                return below
            if codes is not None and id(under.code) not in codes:
                if under.at is None:
                    return scope, None, _no_place(under), None
                return scope, (*chain, under.at), "", codes | {id(under.code)}
        scope, chain, why = self.walk_chain(self.stack[:i])
        return scope, chain, why, frozenset() if kind is HookMark else None

    def walk_chain(self, stack: list[Any]) -> tuple[str, Optional[tuple[Link, ...]], str]:
        """:meth:`scope_and_chain` of ``stack`` read entry by entry."""
        segments: list[list[Any]] = [[]]  # innermost first: frames, and each hook mark alone
        scope = "self"
        for entry in reversed(stack):
            kind = type(entry)
            if kind is Boundary:
                scope = entry.address
                break
            if kind is HookMark:
                segments.append([entry])
                segments.append([])
            else:
                segments[-1].append(entry)
        chain: list[Link] = []
        for segment in reversed(segments):
            if segment and type(segment[0]) is HookMark:
                chain.append(segment[0])
                continue
            segment.reverse()
            codes: set[int] = set()
            places: list[Link] = []
            for frame in segment:
                if frame.at is None:
                    return scope, None, _no_place(frame)
                codes.add(id(frame.code))
                places.append(frame.at)
            if len(codes) < len(segment):  # a code repeats: recursion collapses
                kept = collapse([f.code for f in segment], [f.closure_id for f in segment])
                places = [places[i] for i in kept]
            chain.extend(places)
        return scope, tuple(chain), ""

    def emit(self, name: str, slots: Optional[int] = 1) -> Event:
        """Record one op call at the current place."""
        scope, chain, why = self.scope_and_chain()
        if chain is None:
            self.note(f"{name}: {why}: its place is not predicted")
        event = Event(scope, chain, name, self.mult, slots, why)
        if self.recording:
            self.events.append(event)
        return event

    def gap(self, why: str) -> None:
        """Record that the run could not follow a call that may run ops."""
        if self.recording:
            scope, chain, _ = self.scope_and_chain()
            self.gaps.append(Gap(scope, chain, why))

    def builtin_special(self, fn: Any, names: tuple[str, ...], args: list[Value]) -> Optional[Value]:
        """A builtin that calls a special method of its argument (``abs``, ``float``, ``str``,
        ``len``, ``print`` of each argument...) where the argument's class defines it in Python:
        that method runs from the builtin's call; ``None`` when no argument's class does."""
        subjects = args if fn is builtins.print else args[:1]
        ran = False
        result: Value = NONE
        for subject in subjects:
            name = _python_special(subject, names, self.specials)
            if name is None:
                continue
            ran = True
            result = cast(Value, self.dunder(subject, name, args[1:2] if name in ("__format__", "__round__") else [],
                                             None, CALL_OPS))
        if not ran or fn is builtins.print:
            return NONE if ran else None
        if fn is builtins.bool:
            known = truth(result)
            return Opaque("bool of an unknown value", Nature.NUMBER) if known is None else Known(known)
        return result

    def consumed(self, iterator: Lazy) -> Value:
        """An iterator that C code consumes: its items, run here (the iterator when unknown)."""
        items = self.unpack(iterator, None)
        return iterator if items is None else Seq(items, list)

    # -- calls -------------------------------------------------------------------------------

    def call(self, fn: Value, args: Sequence[Value], kwargs: dict[str, Value]) -> Value:
        """Call ``fn`` from the current place (``frame.at`` is already set by the caller)."""
        self.steps += 1  # self.step(), inline
        if self.steps >= self.next_check:
            self.check_budget()
        if isinstance(fn, Known):
            return self.call_known(fn.obj, list(args), kwargs)
        if isinstance(fn, Function):
            return self.run_function(fn, list(args), kwargs)
        if isinstance(fn, Bound):
            return self.call(fn.func, [fn.receiver, *args], kwargs)
        if isinstance(fn, Partial):
            return self.call(fn.func, [*fn.args, *args], {**fn.kwargs, **kwargs})
        if isinstance(fn, Instance):
            if self.instance_address(fn) is not None:
                return self.module_call_instance(fn, list(args), kwargs)
            call = class_attr(fn.cls, "__call__")
            if call is not None:
                return self.call(self.wrap(call), [fn, *args], kwargs)
        if isinstance(fn, Union):
            options = [v for v in fn.options if not isinstance(v, Opaque)]
            if options:
                return join([self.call(v, args, kwargs) for v in options])
        if isinstance(fn, Tensor):
            return self.opaque_call(fn, args, kwargs, "calling a tensor")
        why = getattr(fn, "why", "") or "call to an unknown value"
        if isinstance(fn, Opaque) and fn.kind is Nature.ANY:  # may be a tensor method: ops unplaced
            self.gap(f"call of a value the prediction lost track of ({why}){self.where()}")
        result = self.opaque_call(fn, args, kwargs, why)
        if isinstance(fn, Opaque) and fn.kind is Nature.NUMBER:  # a method of a number gives no tensor
            return Opaque(why, Nature.NUMBER)
        return result

    def opaque_call(self, fn: Any, args: Sequence[Value], kwargs: dict[str, Value], why: str) -> Opaque:
        """A call the run cannot follow: a gap if tensors go in; a dict or list the code built
        that goes in may come out changed, so it is no longer known for sure."""
        given = (*args, *kwargs.values())
        if any(may_hold_tensor(v) for v in given):
            self.gap(why)
        for value in given:
            if isinstance(value, (Seq, Dict)) and not value.unsure:
                value.unsure = f"given to a call it cannot follow ({why}){self.where()}"
        return Opaque(why)

    def call_known(self, obj: Any, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """Call a concrete callable: an op, an intrinsic, a module, Python code or a builtin."""
        found = self.found.get(id(obj))
        if found is not None and found[0] is obj:  # as found before in this run
            what = found[1]
            kind = type(what)
            if kind is str:
                return self.call_op(what, obj, args, kwargs)  # type: ignore[arg-type]
            if what is _PLAIN:
                return self.read_function(obj, args, kwargs)
            if kind is Intrinsic:
                return self.call_intrinsic(what, obj, args, kwargs)  # type: ignore[arg-type]
        else:
            own = type(obj)
            if own is PyMethod:  # a method of a container the code built, made for this call: asked nothing
                return self.container_method(obj.name, args[0], args[1:], kwargs)
            if own is types.MethodType:  # a Python method bound now: no op, intrinsic nor module
                return self.call(self.wrap(obj.__func__), [self.wrap(obj.__self__), *args], kwargs)
            if self.host.is_module(obj):  # a module call: neither an op nor an intrinsic (see Host.op_name)
                return self.module_call(obj, args, kwargs)
            intrinsic = self.host.intrinsic(obj)
            if intrinsic is not None:
                self.found[id(obj)] = (obj, intrinsic)
                return self.call_intrinsic(intrinsic, obj, args, kwargs)
            name = self.host.op_name(obj)
            if name is not None:
                self.found[id(obj)] = (obj, name)
                return self.call_op(name, obj, args, kwargs)
            self.found[id(obj)] = (obj, Callee.OTHER)
        host = self.host
        handled = self.call_builtin(obj, args, kwargs)
        if handled is not None:
            return handled
        if is_tuple_new(obj) and args and isinstance(args[0], Known) and isinstance(args[0].obj, type):
            return build_named_tuple(self, args[0].obj, args[1:], kwargs)
        if isinstance(obj, types.FunctionType):
            module = (obj.__module__ or "").partition(".")[0]
            silent = module in _SILENT
            if silent and obj.__name__ not in _SILENT_QUERIES:
                return NONE
            if silent or module in _STDLIB_PURE or self.host.constant_call(obj):
                concrete = concrete_args(args, kwargs)
                if concrete is not None:
                    try:
                        return self.wrap(obj(*concrete[0], **concrete[1]))
                    except Exception:  # noqa: BLE001 - the program would raise; predict nothing
                        return Opaque(f"{obj.__qualname__} raised")
            elif not _modelled(obj) and obj not in self.handlers and host.plain_function(obj):
                self.found[id(obj)] = (obj, _PLAIN)  # read as it is whatever the arguments
            return self.run_live_function(obj, args, kwargs)
        if isinstance(obj, type):
            return self.construct(obj, args, kwargs)
        if isinstance(obj, lru.CACHED):  # functools.lru_cache/cache: runs or not, as its cache says
            return self.cached_call(obj, args, kwargs)
        call = getattr(type(obj), "__call__", None)
        if isinstance(call, types.FunctionType):
            return self.run_live_function(call, [Known(obj), *args], kwargs)
        for arg in args:  # C consumes an iterator it is given: what it runs happens here
            if isinstance(arg, Lazy):
                self.unpack(arg, None)
        if getattr(obj, "__module__", None) == "builtins" or getattr(obj, "__self__", None) is not None \
                and isinstance(obj, types.BuiltinMethodType) and not may_hold_tensor(Known(obj.__self__)):
            if isinstance(getattr(obj, "__self__", None), types.ModuleType) and obj.__self__ is not builtins \
                    and any(isinstance(a, Tensor) for a in (*args, *kwargs.values())):
                why = f"{_name(obj)} (C code of module {obj.__self__.__name__}) given a tensor{self.where()}"
                return self.opaque_call(obj, args, kwargs, f"{why}: the ops it may run are not predicted")
            return Opaque(f"{_name(obj)} of unknown values",  # a builtin runs no op: of numbers, a number
                          Nature.NUMBER if all(_numbers(a) for a in (*args, *kwargs.values())) else Nature.ANY)
        return self.opaque_call(obj, args, kwargs, f"{_name(obj)} cannot be read (no Python source)")

    def cached_call(self, wrapper: Any, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """A call through ``functools.lru_cache``/``functools.cache``: a miss runs the wrapped
        function, a hit returns what it returned (no op). Decided when the arguments are known
        (their key is the cache's own) and the live cache could be read when the run first met
        it (:func:`analysis.lru.entries`; from then on the run keeps its own copy); else a gap
        saying which."""
        entry = self.lru.get(id(wrapper))
        if entry is None or entry[0] is not wrapper:
            live = lru.entries(wrapper)
            if live is None:
                size = wrapper.cache_info().currsize
                entry = (wrapper, f"its cache holds {size} entr{'y' if size == 1 else 'ies'} that cannot be read", None)
            else:
                entry = (wrapper, {key: self.wrap(result) for key, result in live[0]}, live[1])
            self.lru[id(wrapper)] = entry
        filled, mark, params = entry[1], entry[2], wrapper.cache_parameters()
        plain = concrete_args(args, kwargs)
        built = plain is None and not params["typed"]
        if built:  # objects the run built (a recipe an earlier cached call returned) stand for themselves
            plain = concrete_args([self.same(a) for a in args], {k: self.same(v) for k, v in kwargs.items()})
        key: Any = None
        if isinstance(filled, str):
            why = filled
        elif plain is None:
            why = "its arguments are not all known"
        else:
            try:
                key = lru.key(tuple(plain[0]), plain[1], params["typed"], mark)
                hash(key)
                why = ""
            except TypeError:
                why = "its arguments are not hashable"
            if not why and built and key not in filled and not all(lru.surely_differs(held, key) for held in filled):
                why = "an object the prediction built is among its arguments, and whether it equals one its cache holds is not known"
        if why:
            why = f"{_name(wrapper)} is cached (functools.lru_cache){self.where()}: {why}, so whether it runs is not known"
            self.gap(why)
            return Opaque(why)
        assert isinstance(filled, dict)
        if key in filled:  # a hit: the least recently used goes last
            filled[key] = filled.pop(key)
            return filled[key]
        result = self.call(self.wrap(wrapper.__wrapped__), args, kwargs)
        maxsize = params["maxsize"]
        if self.mult.exact != 1:
            self.lru[id(wrapper)] = (wrapper, f"it was called{self.where()} under "
                                              f"{self.mult.note or 'a branch the prediction cannot decide'}", mark)
        elif maxsize is None or maxsize > 0:
            filled[key] = result
            if maxsize is not None and len(filled) > maxsize:
                filled.pop(next(iter(filled)))
        return result

    @staticmethod
    def same(value: Value) -> Value:
        """A cache key's part for ``value``: an object the run built stands for itself."""
        if not isinstance(value, Instance):
            return value
        return Known(lru.Same(value, class_attr(value.cls, "__eq__") is object.__eq__))

    def call_op(self, name: str, fn: Any, args: Sequence[Value], kwargs: Optional[dict[str, Value]] = None,
                outputs: Optional[int] = 0) -> Value:
        """An op call: record it and return what it returns (``outputs``: how many tensors, when
        the caller knows better than the host: ``1`` one tensor, ``None`` an unknown number)."""
        inputs = origins([*args, *kwargs.values()] if kwargs else args)

        def make_tensor(meta: Any) -> Value:
            event = self.emit(name)
            event.inputs = inputs
            event.computed = meta is not None
            return Tensor(meta=meta, origin=(event, 0))

        def make_tuple(count: Optional[int], metas: Optional[tuple]) -> Value:
            event = self.emit(name, count)
            event.inputs = inputs
            event.computed = metas is not None

            def resolve(n: int) -> None:
                if event.slots is None or event.slots < n:
                    event.slots = n

            return TensorTuple(resolve, count, metas, event)

        if outputs != 0:
            return make_tensor(None) if outputs == 1 else make_tuple(outputs, None)
        try:
            result = self.host.op_result(name, fn, args, kwargs or {}, make_tensor, make_tuple,
                                         once=self.mult.exact == 1)
        except OpRaises as error:
            self.op_raises(name, str(error))
            return make_tensor(None)
        if result is not None:
            return result
        concrete = concrete_args(list(args), {})
        if concrete is not None:  # a query (dim, size) of an input or parameter: read it
            try:
                return self.wrap(fn(*concrete[0]))
            except Exception:  # noqa: BLE001
                pass
        return Opaque(f"result of {name}", Nature.NUMBER)

    def call_intrinsic(self, kind: Intrinsic, fn: Any, args: list[Value], kwargs: dict[str, Value]) -> Value:
        if kind is _CHECK:  # has_torch_function*: True under a mode, except right after a bypass
            if self.bypass_check:
                self.bypass_check = False
                return Known(False)
            return Known(True)
        if kind is Intrinsic.DISPATCH:  # handle_torch_function(public_api, relevant_args, *args, **kwargs)
            api = args[0] if args else Opaque("no public api")
            rest = args[2:]
            if isinstance(api, Known):
                name = self.host.dispatch_op(api.obj)
                if name is not None:
                    return self.call_op(name, api.obj, rest, kwargs)
            self.bypass_check = True  # torch's own Python re-entered past its check
            try:
                return self.call(api, rest, kwargs)
            finally:
                self.bypass_check = False
        if kind is Intrinsic.IDENTITY:
            return args[0] if args else NONE
        if kind is Intrinsic.MODULE_CALL and args:  # Module.__call__(m, ...) from a __call__ override
            module, rest = args[0], args[1:]
            if isinstance(module, Known):
                return self.module_call(module.obj, rest, kwargs, override=False)
            if isinstance(module, Instance) and self.instance_address(module) is not None:
                return self.module_call_instance(module, rest, kwargs)
        if kind is Intrinsic.APPLY and args and isinstance(args[0], Known):  # Function.apply: forward from C
            forward = getattr(args[0].obj, "forward", None)
            return self.call(self.wrap(forward), [Known(self.host.function_context()), *args[1:]], kwargs)
        if kind is Intrinsic.UNSEEN:  # a tensor no op made, as an input is
            return Tensor()
        if kind is Intrinsic.TRANSFORM:  # torch.func transform, higher-order op: one boundary op, nothing inside
            name = self.host.op_name(fn) or str(getattr(fn, "__name__", "transform"))
            if name in _BRANCHING:
                return self.call_op(name, fn, args, kwargs, outputs=self.branch_outputs(name, args, kwargs))
            return self.call_op(name, fn, args)
        return Opaque(f"intrinsic {kind}")

    def branch_outputs(self, name: str, args: list[Value], kwargs: dict[str, Value]) -> Optional[int]:
        """How many tensors a higher-order op returns, as its operands or a branch say:
        ``while_loop(cond, body, carried)`` returns the carried values; ``cond(pred, true_fn,
        false_fn, operands)`` what its branch returns (read with nothing recorded). ``1``: one
        tensor, not a tuple; ``None``: unknown."""
        names = _BRANCHING[name]
        given = {**dict(zip(names, args)), **kwargs}
        operands = self.unpack(given[names[-1]] if names[-1] in given else Opaque("no operands"), None)
        if operands is None:
            return None
        if name == "while_loop":
            return len(operands)
        saved, self.recording = self.recording, False
        try:
            out = self.call(given[names[1]] if names[1] in given else Opaque("no branch"), operands, {})
        finally:
            self.recording = saved
        if isinstance(out, Tensor):
            return 1
        if isinstance(out, TensorTuple):
            return out.count
        items = self.unpack(out, None) if isinstance(out, Seq) else None
        return None if items is None else len(items)

    # -- modules -----------------------------------------------------------------------------

    def module_call(self, module: Any, args: list[Value], kwargs: dict[str, Value], override: bool = True) -> Value:
        """A call of a live module: pre-hooks, forward in the module's scope, forward hooks
        (through the class's own ``__call__`` first, when it overrides the library's)."""
        host = self.host
        call = host.call_override(module) if override else None
        if call is not None:
            return self.call(self.wrap(call), [Known(module), *args], kwargs)
        boundary = host.boundary_op(module)
        if boundary is not None:
            return self.call_op(boundary, module, args)
        address = host.module_address(module) or self.unnamed_address(module, type(module))
        if address is None:
            return self.opaque_call(module, args, kwargs, f"{_name(module)} is not part of the model")
        pre_hooks, hooks = host.module_hooks(module)
        for hook in pre_hooks:
            result = self.run_hook(address, hook, [Known(module), Seq(list(args))])
            if not (isinstance(result, Known) and result.obj is None):
                args = list(result.items) if isinstance(result, Seq) else [result]
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

    def unnamed_address(self, module: Any, cls: type) -> Optional[str]:
        """The address the capture gives a module called outside the model's named modules (one
        built in forward, or held outside ``_modules``): ``<Cls#k>``, ``k`` counting the model's
        modules, then such modules by first call; ``None`` when predicting from a class."""
        entry = self.unnamed.get(id(module))
        if entry is not None:
            return entry[1]
        base = self.host.named_count()
        if base is None:
            return None
        address = f"<{cls.__name__}#{base + len(self.unnamed)}>"
        self.unnamed[id(module)] = (module, address)
        if self.mult.exact != 1:
            self.note(f"{address}, a {cls.__name__} outside the model's modules, is first called{self.where()} "
                      f"under {self.mult.note or 'a branch the prediction cannot decide'}: the capture numbers such "
                      "modules by first call, so its number and the later ones' are not predicted")
        return address

    def instance_address(self, module: Instance) -> Optional[str]:
        """A module object's address: given by its parent when the run read the model's
        ``__init__``, else (built while the model runs) as the capture numbers it on its first call."""
        if module.address is None and self.recording and self.host.is_module_class(module.cls):
            module.address = self.unnamed_address(module, module.cls)
        return module.address

    def run_hook(self, address: str, hook: Any, args: list[Value]) -> Value:
        self.stack.append(HookMark(address))
        try:
            return self.call(self.wrap(hook), args, {})
        finally:
            self.stack.pop()

    def module_call_instance(self, module: Instance, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """A call of a module built while reading ``__init__`` (prediction from a class)."""
        forward = class_attr(module.cls, "forward")
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
        running = self.recording and any(isinstance(e, Frame) for e in self.stack)  # not the model's __init__
        if not self.host.is_module_class(cls):
            init = class_attr(cls, "__init__")
            if is_named_tuple(cls):
                if is_tuple_new(cls.__new__):
                    return build_named_tuple(self, cls, args, kwargs)
                if isinstance(cls.__new__, types.FunctionType):  # its own __new__ (PackedSequence)
                    return self.call(self.wrap(cls.__new__), [Known(cls), *args], kwargs)
            if running and issubclass(cls, self.host.tensor_type) and isinstance(cls.__new__, types.FunctionType):
                return self.call(self.wrap(cls.__new__), [Known(cls), *args], kwargs)  # nn.Parameter(t)
            if cls.__new__ is object.__new__ and dataclasses.is_dataclass(cls) and generated(init):
                return build_dataclass(self, cls, args, kwargs)
            if cls.__new__ is object.__new__ and isinstance(init, types.FunctionType):
                instance = Instance(cls)
                self.run_live_function(init, [instance, *args], kwargs)
                return instance
            if cls.__new__ is object.__new__ and init is object.__init__ and not args and not kwargs:
                return Instance(cls)  # a plain class without __init__ (a context manager, a callable): nothing runs
            if dataclasses.is_dataclass(cls):  # a custom __new__ (ModelOutput is a dict)
                built = self.build_for_real(cls, args, kwargs)
                if built is not None:
                    return built
            elif running and isinstance(cls.__new__, types.FunctionType):  # its own __new__, in Python
                return self.newly_made(cls, init, args, kwargs)
            made = self.opaque_call(cls, args, kwargs, f"constructing {cls.__qualname__}")
            if not issubclass(cls, self.host.tensor_type) and not any(
                    may_hold_tensor(v) for v in (*args, *kwargs.values())):
                return Opaque(made.why, Nature.NUMBER)  # an object that neither is nor holds a tensor
            return made
        if running and self.host.named_count() is None:
            why = (f"{cls.__qualname__} built while the model runs{self.where()}: a module made in forward is "
                   "not part of the model; predicted from its class, its construction and calls are not predicted "
                   "(build it in __init__, or predict a built model)")
            self.gap(why)
            return Opaque(f"{cls.__qualname__} built in forward{self.where()}")
        instance = Instance(cls)
        items = self.host.container_items(cls, args)
        if items is not None:
            instance.items = items
            return instance
        init = class_attr(cls, "__init__")
        if isinstance(init, types.FunctionType) and self.host.is_module_class(init_owner(cls, init)):
            saved, self.recording = self.recording, running  # built in forward: its initialisers' ops run
            try:
                self.run_live_function(init, [instance, *args], kwargs)
            finally:
                self.recording = saved
        return instance

    def newly_made(self, cls: type, init: Any, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """``cls(...)`` where ``cls`` has a ``__new__`` in Python: as ``type.__call__`` does, its
        ``__new__`` runs (and may raise: torch's stand-ins for what a CPU build lacks), then
        ``__init__`` where ``__new__`` gave an instance of ``cls``."""
        made = self.call(self.wrap(cls.__new__), [Known(cls), *args], kwargs)
        if isinstance(made, Instance) and issubclass(made.cls, cls) and isinstance(init, types.FunctionType):
            self.run_live_function(init, [made, *args], kwargs)
        return made

    def build_for_real(self, cls: type, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
        """A dataclass with a custom ``__new__`` (``ModelOutput``, an ordered dict whose
        ``__post_init__`` fills it), built for real with a stand-in for each argument: tensors by their shape-carrying stand-ins, other values by
        a :class:`_Held` placeholder; reading them back gives the values themselves. ``None``
        when construction fails or would call the library (then the object is opaque)."""
        try:
            made = self.host.call_for_real(cls, [self.stand_in_for(a) for a in args],
                                           {k: self.stand_in_for(v) for k, v in kwargs.items()})
        except Exception:  # noqa: BLE001 - it would raise, or touch the library: opaque as before
            return None
        self._keep.append(made)
        return Known(made)

    def stand_in_for(self, value: Value) -> Any:
        """A concrete object to hand real code in place of ``value`` (see :meth:`wrap`)."""
        if isinstance(value, Known):
            return value.obj
        if isinstance(value, Seq):
            return value.kind(self.stand_in_for(v) for v in value.items)
        # real code is handed the live tensor where there is one (its metadata: see Tensor.described)
        live = (value.live if value.live is not None else value.meta) if isinstance(value, Tensor) else None
        obj = live if live is not None else _Held(value)
        self.held[id(obj)] = (obj, value)
        return obj

    # -- Python functions --------------------------------------------------------------------

    def run_live_function(self, fn: types.FunctionType, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """Interpret a live Python function from its source (opaque if there is none)."""
        if self.host.skip_function(fn, self.recording):
            return NONE
        unfollowed = self.host.unfollowed(fn)
        if unfollowed is not None:
            return self.opaque_call(fn, args, kwargs, unfollowed)
        emulated = self.host.emulate(fn, args, kwargs)
        if emulated is not None:
            return emulated
        return self.read_function(fn, args, kwargs)

    def read_function(self, fn: types.FunctionType, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """Interpret a live Python function the host reads as it is (:meth:`Host.plain_function`)
        from its source (opaque if there is none)."""
        held = self.held.get(id(fn))
        if held is not None and held[0] is fn:  # a method of a class the code made (analysis.localclass)
            return self.call(held[1], args, kwargs)
        missing: Optional[SourceUnavailableError] = None
        code, qualname = fn.__code__, fn.__qualname__
        read = self.sources.get(id(code))
        if read is not None and read[0] is code and read[1] == qualname:
            src, node, stale = read[2], read[3], read[4]
        else:
            found = source_read_before(code, qualname)  # read by an earlier run: nothing to read
            if found is None:
                started = time.thread_time()
                try:
                    found = source_of_code(code, qualname)
                except SourceUnavailableError as error:
                    missing = error
                finally:  # reading a file is bounded work: the budget counts interpretation only
                    self.deadline += time.thread_time() - started
            if found is not None:
                src, node = found
                stale = _stale(code, qualname, src, node)
                self.sources[id(code)] = (code, qualname, src, node, stale)
        if missing is not None:
            unread_why = unread(fn)
            if unread_why is None:  # straight-line code (exec of a string): read its instructions
                return run_bytecode(self, fn, args, kwargs)
            why = f"{fn.__qualname__}: {missing}; {unread_why}"
            self.gap(why)  # Python that may run ops, whatever its arguments
            return Opaque(why)
        if stale:
            self.gap(stale)
            return Opaque(stale)
        if isinstance(node, ast.Module):
            return self.opaque_call(fn, args, kwargs, f"{fn.__qualname__}: module code")
        closure: dict[str, Value] = {}
        cells = fn.__closure__
        ids: list[int] = []  # of the free variables' values (see Frame.closure_id)
        for name, cell in zip(fn.__code__.co_freevars, cells or ()):
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell
                closure[name] = Opaque(f"{name} is not yet bound")
                ids.append(id(None))
            else:
                closure[name] = self.wrap(contents)
                ids.append(id(contents))
        closure_id = tuple(ids) if cells else None
        owner = closure.get("__class__")
        return self.run_code(src, node, fn.__code__, fn.__globals__, [closure], closure_id,
                             owner.obj if isinstance(owner, Known) else None,
                             fn.__defaults__ or (), fn.__kwdefaults__ or {}, args, kwargs, self.wrap)

    def placeholder_frame(self, code: CodeType) -> Frame:
        """A frame of Python generated without source (a dataclass's ``__init__``), whose
        behaviour the prediction knows: it holds only the place of each call it makes."""
        return Frame(code, cast(SourceFile, None), cast(ast.AST, None), {}, [], {})

    def run_function(self, fn: Function, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """Interpret a function defined by the code being read."""
        freevars = fn.code.co_freevars
        closure_id = tuple(id(_lookup(fn.enclosing, name)) for name in freevars) or None
        owner = _lookup(fn.enclosing, "__class__") if "__class__" in freevars else None  # a method's (localclass)
        return self.run_code(fn.source, fn.node, fn.code, fn.globals, fn.enclosing, closure_id,
                             owner.obj if isinstance(owner, Known) else None,
                             fn.defaults, fn.kw_defaults, args, kwargs, _as_is)

    def run_code(self, src: SourceFile, node: ast.AST, code: CodeType, globals_: dict,
                 enclosing: list[dict[str, Value]], closure_id: Any, owner: Optional[type],
                 defaults: Sequence[Any], kw_defaults: dict[str, Any], args: list[Value],
                 kwargs: dict[str, Value], default: Callable[[Any], Value]) -> Value:
        """Bind arguments and run a function body in a new frame (``default`` makes the value
        of a default the call takes: a live function's are wrapped only where one is taken)."""
        # frames are counted only where there can be enough of them (the stack also holds boundaries)
        depth = sum(isinstance(e, Frame) for e in self.stack) if len(self.stack) > MAX_RECURSION else 0
        same = [e for e in self.stack if isinstance(e, Frame) and e.code is code] if depth > MAX_RECURSION else []
        if len(same) > MAX_RECURSION:
            self.cut.update(e.at.code for e in same if e.at is not None)
            return self.opaque_call(code, args, kwargs, f"{code.co_name}: recursion deeper than {MAX_RECURSION} "
                                                        "calls is not followed (passes below are lower bounds)")
        if depth > MAX_DEPTH:
            return self.opaque_call(code, args, kwargs, f"{code.co_name}: calls nested deeper than {MAX_DEPTH} "
                                                        "are not followed")
        if id(src.codes.get(id(node))) in src.unaligned:
            return self.opaque_call(code, args, kwargs, f"{code.co_name}: bytecode and source do not align")
        if code.co_flags & (inspect.CO_ASYNC_GENERATOR | inspect.CO_COROUTINE):
            return self.opaque_call(code, args, kwargs, f"{code.co_name} is asynchronous: its ops are not followed")
        if UNLISTED in args:  # by identity: values compare so
            self.gap(f"{code.co_name} is given *items the prediction cannot list{self.where()}: which "
                     "parameters they fill is not known")
        local = self.bind(src.parameters(node), defaults, kw_defaults, args, kwargs, default)
        frame = Frame(code, src, node, local, enclosing, globals_, closure_id, owner)
        if code.co_flags & inspect.CO_GENERATOR:  # its body runs as it is consumed
            body = Resumable(self, frame, node.body)  # type: ignore[attr-defined]
            frame.resumable = body
            self.resumables.append(body)
            return Lazy(lambda: body, f"generator {code.co_name}")
        self.stack.append(frame)
        saved = self.mult
        try:
            if isinstance(node, ast.Lambda):
                return self.eval(node.body)
            signal = self.exec_block(node.body)  # type: ignore[attr-defined]
            result = signal.value if isinstance(signal, Signal) and signal.kind is _RETURN else NONE
            if isinstance(signal, Signal) and signal.kind is _RAISE:
                self.unwind(signal)
                result = Opaque(f"{code.co_name} raises")
            if frame.maybe_returns:
                result = join([*frame.maybe_returns, result])
            return result
        finally:
            self.mult = saved
            self.stack.pop()

    def bind(self, spec: Parameters, defaults: Sequence[Any], kw_defaults: dict[str, Any],
             args: list[Value], kwargs: dict[str, Value], default: Callable[[Any], Value]) -> dict[str, Value]:
        """Parameters -> values, as CPython binds them (missing ones become opaque; ``default``
        makes a default's value)."""
        positional = spec.positional
        local: dict[str, Value] = dict(zip(positional, args))
        if spec.vararg is not None:
            local[spec.vararg] = Seq(args[len(positional):])
        if kwargs:
            rest = dict(kwargs)
            for name in spec.named:
                if name in rest and name not in local:
                    local[name] = rest.pop(name)
        else:
            rest = {}
        if spec.kwarg is not None:
            local[spec.kwarg] = Dict(rest)
        if len(args) < len(positional):  # (else every positional parameter is bound)
            first_default = len(positional) - len(defaults)
            for k, name in enumerate(positional):
                if name not in local:
                    local[name] = default(defaults[k - first_default]) if k >= first_default else \
                        Opaque(f"argument {name} missing")
        for name in spec.kwonly:
            if name not in local:
                local[name] = default(kw_defaults[name]) if name in kw_defaults else Opaque(f"argument {name} missing")
        return local

    def call_place(self, node: ast.AST) -> None:
        """Set the current frame's place to the call instruction of ``node``."""
        stack = self.stack
        frame = stack[-1] if stack and type(stack[-1]) is Frame else self.frame  # most often the innermost entry
        if frame is not None:
            frame.at = frame.source.place(node, CALL_OPS)

    # -- expressions -------------------------------------------------------------------------

    def eval(self, node: ast.AST) -> Value:
        """The value of the expression ``node``, by its runner (:func:`_runner`)."""
        try:
            run = node.tl_run  # type: ignore[attr-defined]
        except AttributeError:
            run = _runner(node)
        return run(self, node)

    def no_eval(self, node: ast.AST) -> Value:
        """An expression kind the run does not model."""
        return Opaque(f"{type(node).__name__} expression")

    # -- leaves ------------------------------------------------------------------------------

    def lookup(self, name: str) -> Value:
        stack = self.stack
        frame = stack[-1] if stack and type(stack[-1]) is Frame else self.frame  # most often the innermost entry
        if frame is None:
            return Opaque(f"name {name}")
        if name in frame.locals:
            return self.viewed(frame.locals[name]) if self.views else frame.locals[name]
        for scope in frame.enclosing:
            if name in scope:
                return self.viewed(scope[name]) if self.views else scope[name]
        if name in frame.globals:
            return self.wrap(frame.globals[name])
        builtins_ = frame.globals.get("__builtins__", builtins)
        table = builtins_ if isinstance(builtins_, dict) else vars(builtins_)
        if name in table:
            return Known(table[name])
        return Opaque(f"name {name} is not defined")

    def eval_JoinedStr(self, node: ast.JoinedStr) -> Value:
        """An f-string: its text where every formatted value is a plain known object (the
        formatting is then Python's own, with no side effect); the parts are read either way."""
        parts: list[Optional[str]] = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value))
                continue
            assert isinstance(part, ast.FormattedValue)
            value = self.eval(part.value)
            spec = self.eval(part.format_spec) if part.format_spec is not None else Known("")
            if isinstance(value, Tensor) and part.conversion == -1:
                self.reads(builtins.format, [value, spec], "formatting a tensor", part)
            if self.formatted(part, value, spec):  # its class's Python __format__, __str__ or __repr__ ran
                parts.append(None)
                continue
            text = None
            if isinstance(value, Known) and type(value.obj) in _FORMATTED and isinstance(spec, Known) \
                    and part.conversion in _CONVERSIONS:
                try:
                    text = format(_CONVERSIONS[part.conversion](value.obj), spec.obj)
                except (TypeError, ValueError):  # the program would raise
                    pass
            parts.append(text)
        if any(text is None for text in parts):
            return Opaque("an f-string of unknown values", Nature.NUMBER)
        return Known("".join(cast(list[str], parts)))

    def eval_Slice(self, node: ast.Slice) -> Value:
        parts = [self.eval(p) if p is not None else NONE for p in (node.lower, node.upper, node.step)]
        bounds = [p.obj for p in parts if isinstance(p, Known)]
        if len(bounds) == len(parts):
            return Known(slice(*bounds))
        return Opaque("a slice with unknown bounds", Nature.NUMBER)

    def eval_Index(self, node: Any) -> Value:  # Python < 3.9 trees only
        return self.eval(node.value)

    def eval_NamedExpr(self, node: ast.NamedExpr) -> Value:
        value = self.eval(node.value)
        self.assign(node.target, value)
        return value

    def eval_Starred(self, node: ast.Starred) -> Value:
        return self.eval(node.value)

    def eval_Await(self, node: ast.Await) -> Value:
        return Opaque("await")

    def eval_Yield(self, node: ast.Yield) -> Value:
        value = self.eval(node.value) if node.value is not None else NONE
        frame = self.frame
        if frame is not None and frame.resumable is not None:
            return frame.resumable.give(value)  # what .send() passes in
        return NONE

    def eval_YieldFrom(self, node: ast.YieldFrom) -> Value:
        source = self.eval(node.value)
        items = self.iterate(source)
        frame = self.frame
        if items is None or frame is None or frame.resumable is None:
            return self.opaque_call(source, [source], {}, f"yield from an unknown iterable{self.where(node)}")
        place = _delegation_place(frame.code, node)  # the inner generator runs from here
        frame.at = place
        for item in items:
            frame.resumable.give(item)
            frame.at = place
        return NONE

    def close(self) -> None:
        """End the generator bodies still waiting for a consumer (the run is over), and drop the
        handlers: bound to the run, they kept it and everything it made in a reference cycle
        (about 3,700 objects per prediction of GPT-2 small) that only the collector frees."""
        for body in self.resumables:
            body.close()
        self.handlers = {}

    # -- containers --------------------------------------------------------------------------

    def eval_Tuple(self, node: ast.Tuple) -> Value:
        return self.display(node, tuple)

    def eval_List(self, node: ast.List) -> Value:
        return self.display(node, list)

    def eval_Set(self, node: ast.Set) -> Value:
        return self.display(node, list)

    def display(self, node: ast.Tuple | ast.List | ast.Set, kind: type) -> Seq:
        parts: list[tuple[Value, bool]] = []
        items = self.elements(node.elts, node, parts)
        if isinstance(node, ast.Set):
            built = sets.displayed(self, parts) if any(starred for _, starred in parts) else None
            return built or self.as_set(items, node)
        return self.displayed(items, kind, node)

    def displayed(self, items: list[Value], kind: type, node: ast.AST) -> Seq:
        """The tuple or list a display ``node`` builds of ``items`` (not known for sure when one
        of them stands for ``*items`` it cannot list)."""
        unlisted = UNLISTED in items  # by identity: values compare so
        return Seq(items, kind, f"built with *items it cannot list{self.where(node)}" if unlisted else "")

    def as_set(self, items: list[Value], node: Optional[ast.AST]) -> Seq:
        """A set of ``items``: when they are all concrete (numbers, strings, live tensors and
        objects), without duplicates in Python's order, each item the first value that stood
        for its object; else one whose order and duplicates are not known (tensors hash by
        identity)."""
        plain = concrete_args(items, {})
        if plain is not None and all(hashable(obj) for obj in plain[0]):
            return sets.made(self, set(plain[0]), sets.values_of(plain[0], items))
        if len(items) <= 1 and not any(item is UNLISTED for item in items):
            return Seq(items, set)
        return Seq(items, set, f"a set: its order and duplicates are not known{self.where(node)}")

    def elements(self, elts: list[ast.expr], owner: ast.expr, parts: Optional[list[tuple[Value, bool]]] = None
                 ) -> list[Value]:
        """The items of a display or a call's positional arguments (``owner``: the display or
        call, whose instructions iterate each ``*`` item; ``parts`` gets each element's value
        and whether it is starred)."""
        out: list[Value] = []
        starred = 0
        for elt in elts:
            if isinstance(elt, ast.Starred):
                value = self.eval(elt.value)
                if runs_when_unpacked(value) and isinstance(owner, ast.Call):  # a tensor's __iter__ runs at
                    self.at_nth(owner, STAR_ITER, starred)  # the k-th LIST_EXTEND (a lone one: the call)
                elif runs_when_unpacked(value):
                    self.at_position(owner, STAR_ITER, starred)
                starred += 1
                if parts is not None:
                    parts.append((value, True))
                items = self.unpack(value, None)
                if items is None:
                    self.guesses += 1
                out.extend(items if items is not None else [UNLISTED])
            else:
                out.append(self.eval(elt))
                if parts is not None:
                    parts.append((out[-1], False))
        return out

    def eval_Dict(self, node: ast.Dict) -> Value:
        out = Dict()
        for key, value in zip(node.keys, node.values):
            if key is None:
                merged = self.eval(value)
                if isinstance(merged, Dict):
                    out.items.update(merged.items)
                    out.unsure = out.unsure or merged.unsure
                elif isinstance(merged, Known) and isinstance(merged.obj, dict):
                    out.items.update((k, self.wrap(v)) for k, v in merged.obj.items())
                continue
            k = self.eval(key)
            out.items[k.obj if isinstance(k, Known) else object()] = self.eval(value)
        return out

    # -- calls -------------------------------------------------------------------------------

    def eval_Call(self, node: ast.Call) -> Value:
        """A call with ``*`` or ``**`` arguments (the others: :func:`_compile_call`)."""
        fn = self.eval(node.func)
        args = self.elements(node.args, node) if node.args else []
        kwargs: dict[str, Value] = {}
        for keyword in node.keywords:
            value = self.eval(keyword.value)
            if keyword.arg is not None:
                kwargs[keyword.arg] = value
            elif isinstance(value, Dict):
                if not value.listable:
                    self.gap(f"a call given **a dict whose keys are not known{self.where()}: "
                             f"{value.unsure or 'keys it does not know'}")
                kwargs.update((k, v) for k, v in value.items.items() if isinstance(k, str))
            elif isinstance(value, Known) and isinstance(value.obj, dict):
                kwargs.update((k, self.wrap(v)) for k, v in value.obj.items())
        self.call_place(node)
        return self.call(fn, args, kwargs)

    # -- attributes --------------------------------------------------------------------------

    def attribute(self, value: Value, name: str, node: Optional[ast.AST] = None) -> Value:
        """``value.name``; a Python property is read by running its getter."""
        if isinstance(value, Tensor):
            return self.tensor_attribute(value, name, node)
        if isinstance(value, Known):
            if type(value.obj) in LIVE_CONTAINERS or self.views:
                value = self.viewed(value)
                if isinstance(value, Known) and name in MUTATORS \
                        and isinstance(self.class_attrs(type(value.obj), name), types.MethodDescriptorType):
                    # the first write into a live dict or list (a builtin container's own method)
                    view = self.written(value, name)
                    return Opaque(f"{name} of a live {type(value.obj).__name__}") if view is None else \
                        Bound(Known(PyMethod(name)), view)
            if isinstance(value, Known):
                return self.known_attribute(value.obj, name, node)
        if isinstance(value, Instance):
            return self.instance_attribute(value, name, node)
        if isinstance(value, TensorTuple) and isinstance(value.origin, Event):  # values, indices of max(x, 1)
            fields = self.host.output_fields(value.origin.name)
            if name in fields:
                return self.subscript(value, Known(fields.index(name)), None)
        fields = getattr(value.kind, "_fields", ()) if isinstance(value, Seq) else ()
        if isinstance(value, Seq) and name in fields and not value.unsure:
            return value.items[fields.index(name)]  # a named tuple's field
        if isinstance(value, (Seq, Dict)) or isinstance(value, Lazy) and name in _GENERATOR_METHODS:
            return Bound(Known(PyMethod(name)), value)
        if isinstance(value, Function):
            return value.attrs[name] if name in value.attrs else Opaque(f"attribute {name} of a function")
        if isinstance(value, Union):
            known = [v for v in value.options if not isinstance(v, Opaque)] or list(value.options)
            return join([self.attribute(v, name, node) for v in known])
        return Opaque(f"attribute {name} of an unknown value", value.kind if isinstance(value, Opaque) else Nature.ANY)

    def tensor_attribute(self, value: Tensor, name: str, node: Optional[ast.AST]) -> Value:
        kind, what = self.host.tensor_attribute(name)
        if kind is _OP:
            self.at_node(node, ATTR_LOAD)
            return self.call_op(what, name, [value])
        if kind is _METHOD:
            return Bound(self.wrap(what), value)
        if kind is _TENSOR:
            return Tensor()
        for described in (value.described, value.live):  # an input's, a parameter's or a computed shape's
            if described is not None:
                try:
                    return self.wrap(getattr(described, name))
                except Exception:  # noqa: BLE001
                    pass
        return Opaque(f"tensor attribute {name}", Nature.NUMBER)

    def known_attribute(self, obj: Any, name: str, node: Optional[ast.AST]) -> Value:
        """``obj.name`` of a live object, as the run has changed it (``node``: the syntax, where a
        read that raises stops the forward; ``getattr`` and ``hasattr`` pass none)."""
        overlay = self.overlay
        if overlay:
            written = overlay.get((id(obj), name))
            if written is not None:
                return written
        if self.views and hasattr(obj, "__dict__"):  # its __dict__ written into as a dict: the copy holds it
            held = self.viewed(Known(vars(obj)))
            if isinstance(held, Dict) and name in held.items:
                return held.items[name]
        cls = type(obj)  # by its type: an object's own ``__class__`` is not read
        if not self.read_plainly(cls, name):
            read = self.python_read(obj, cls, name, node)
            if read is not None:
                return read
        try:
            found = getattr(obj, name)
            return Known(found) if type(found) in self.scalars else self.wrap(found)  # (a flag, a size: no call)
        except Exception as error:  # noqa: BLE001 - any failing getattr is "no such attribute" here
            if node is not None:
                self.stops(f"reading {type(obj).__name__}.{name} raises {type(error).__name__}{self.where(node)}",
                           type(error))
            return Opaque(f"{type(obj).__name__} has no attribute {name} (reading it raises)", Nature.NUMBER)

    def python_read(self, obj: Any, cls: type, name: str, node: Optional[ast.AST]) -> Optional[Value]:
        """``obj.name`` where reading it runs Python (``super()``'s lookup, a property's getter,
        a model's own descriptor, the class's ``__getattr__``); ``None`` where none runs."""
        if cls is SuperRef:
            return self.super_attribute(obj, name)
        if not issubclass(cls, type):
            static = self.class_attrs(cls, name)
            if isinstance(static, property) and inspect.isfunction(static.fget):
                self.at_node(node, ATTR_LOAD)
                return self.call(Known(static.fget), [Known(obj)], {})
            getter = self.descriptor_get(static, name, vars(obj)) if self.host.is_module(obj) else None
            if getter is not None:  # a model's own descriptor (torch's own are read for real)
                self.at_node(node, ATTR_LOAD)
                return self.call(self.wrap(getter), [Known(static), Known(obj), Known(type(obj))], {})
        if _python_method(Known(obj), "__getattr__", self.specials) is not None:
            try:
                inspect.getattr_static(obj, name)
            except AttributeError:  # found by the class's Python __getattr__: run it
                return cast(Value, self.dunder(Known(obj), "__getattr__", [Known(name)], node, ATTR_LOAD))
        return None

    @staticmethod
    def descriptor_get(static: Any, name: str, instance_dict: Any) -> Optional[types.FunctionType]:
        """The Python ``__get__`` of a descriptor found on the class (not a property, function
        or method wrapper), which attribute access runs (unless the instance's own dict holds
        the name and the descriptor has no ``__set__``)."""
        if static is None or isinstance(static, (property, staticmethod, classmethod, types.FunctionType)):
            return None
        getter = class_attr(type(static), "__get__")
        if not isinstance(getter, types.FunctionType):
            return None
        if name in instance_dict and class_attr(type(static), "__set__") is None:
            return None
        return getter

    def super_attribute(self, ref: SuperRef, name: str) -> Value:
        """``super().name``: looked up after ``ref.owner`` in the receiver's MRO."""
        receiver = ref.receiver
        cls: Any = ref.owner
        if isinstance(receiver, Instance):
            cls = receiver.cls
        elif isinstance(receiver, Known):  # a class in a classmethod, else an instance
            is_class = isinstance(receiver.obj, type) and issubclass(receiver.obj, ref.owner)
            cls = receiver.obj if is_class else type(receiver.obj)
        mro = list(getattr(cls, "__mro__", (ref.owner,)))
        start = mro.index(ref.owner) + 1 if ref.owner in mro else 0
        for klass in mro[start:]:
            if name in vars(klass):
                found = vars(klass)[name]
                if isinstance(found, property) and inspect.isfunction(found.fget):
                    return self.call(Known(found.fget), [receiver], {})
                if isinstance(found, staticmethod):
                    return self.wrap(found.__func__)
                if isinstance(found, classmethod):
                    return Bound(self.wrap(found.__func__), Known(cls))
                if callable(found) and not isinstance(found, types.BuiltinFunctionType):  # (object.__new__ is not bound)
                    return Bound(self.wrap(found), receiver)
                return self.wrap(found)
        return Opaque(f"super() has no attribute {name}")

    def instance_attribute(self, inst: Instance, name: str, node: Optional[ast.AST]) -> Value:
        if name in inst.attrs:
            return inst.attrs[name]
        if name == "__class__":
            return Known(inst.cls)
        static = class_attr(inst.cls, name)
        if static is None:
            if name == "training":
                return TRUE
            dynamic = self.dunder(inst, "__getattr__", [Known(name)], node, ATTR_LOAD)
            if dynamic is not None:
                return dynamic
            return Opaque(f"{inst.cls.__name__}.{name} is not set by __init__")
        if isinstance(static, property) and inspect.isfunction(static.fget):
            self.at_node(node, ATTR_LOAD)
            return self.call(Known(static.fget), [inst], {})
        getter = self.descriptor_get(static, name, {})
        if getter is not None:
            self.at_node(node, ATTR_LOAD)
            return self.call(self.wrap(getter), [Known(static), inst, Known(inst.cls)], {})
        if isinstance(static, staticmethod):
            return self.wrap(static.__func__)
        if isinstance(static, classmethod):
            return Bound(self.wrap(static.__func__), Known(inst.cls))
        if inspect.isfunction(static):
            return Bound(Known(static), inst)
        return self.wrap(static)

    def set_attribute(self, target: Value, name: str, value: Value) -> None:
        """``target.name = value``: recorded on abstract objects, overlaid on live ones. Under a
        branch or loop count the prediction cannot decide, an attribute that had a value may
        keep it (one that had none would raise when read: the object made in ``__init__``)."""
        if isinstance(target, (Instance, Function)):
            if self.mult.exact != 1 and name in target.attrs:
                value = join([target.attrs[name], value])
            target.attrs[name] = value
        elif isinstance(target, Known):
            key = (id(target.obj), name)
            if self.mult.exact != 1:
                before = self.overlay.get(key)
                held = getattr(target.obj, "__dict__", {})
                if before is None and name in held:
                    before = self.wrap(held[name])
                value = value if before is None else join([before, value])
            self.overlay[key] = value
            self._keep.append(target.obj)
        elif isinstance(target, Opaque) and may_hold_tensor(value):
            target.kind = Nature.ANY  # as for an item written into it (store_item)

    def name_children(self, module: Instance, seen: Optional[set] = None) -> None:
        """Address every submodule as ``named_modules()`` does: depth first, first name wins."""
        seen = set() if seen is None else seen
        seen.add(id(module))
        prefix = "" if module.address == "self" else f"{module.address}."
        for key, child in [*module.attrs.items(), *(module.items or {}).items()]:
            if isinstance(child, Instance) and self.host.is_module_class(child.cls) and id(child) not in seen:
                child.address = f"{prefix}{key}"
                self.name_children(child, seen)

    # -- operators ---------------------------------------------------------------------------

    def binop(self, op: str, left: Value, right: Value, node: Optional[ast.AST], opnames: frozenset,
              inplace: bool = False) -> Value:
        """``left <op> right`` (``op`` a dunder stem: ``add``, ``lt``)."""
        if isinstance(left, Union) or isinstance(right, Union):
            lefts = left.options if isinstance(left, Union) else (left,)
            rights = right.options if isinstance(right, Union) else (right,)
            if any(isinstance(v, Tensor) for v in (*lefts, *rights)):
                left = next((v for v in lefts if isinstance(v, Tensor)), lefts[0])
                right = next((v for v in rights if isinstance(v, Tensor)), rights[0])
            else:  # an option the prediction lost track of may be a tensor: said below
                left = next((v for v in lefts if isinstance(v, Opaque) and v.kind is Nature.ANY), left)
                right = next((v for v in rights if isinstance(v, Opaque) and v.kind is Nature.ANY), right)
        tensor_left = isinstance(left, Tensor) or (isinstance(left, Opaque) and left.kind is _ANY
                                                   and isinstance(right, Tensor))
        if tensor_left or isinstance(right, Tensor):
            if tensor_left:
                if isinstance(left, Opaque):  # a number would make it the tensor's reflected op
                    operand = _operands(node)[0]
                    self.note(f"{op} of {source_text(operand) + ', ' if operand is not None else ''}a value the "
                              f"prediction lost track of ({left.why}){self.where(node)}: taken as a tensor")
                dunder, args = (f"__i{op}__" if inplace else f"__{op}__"), [left, right]
                if inplace and self.host.tensor_attribute(dunder)[0] is not Member.METHOD:
                    dunder = f"__{op}__"
            else:
                reflected = MIRROR.get(op)
                dunder = f"__{reflected}__" if reflected else f"__r{op}__"
                args = [right, left]
            kind, member = self.host.tensor_attribute(dunder)
            if kind is not Member.METHOD:
                return Opaque(f"no tensor operator {dunder}")
            self.at_node(node, opnames)
            return self.call(self.wrap(member), args, {})
        if isinstance(left, Known) and isinstance(right, Known) and (
                isinstance(left.obj, PLAIN) and isinstance(right.obj, PLAIN)
                or op in ("add", "mul") and isinstance(left.obj, _JOINABLE) and isinstance(right.obj, _JOINABLE)):
            try:
                return Known(CONCRETE[op](left.obj, right.obj))
            except Exception:  # noqa: BLE001 - the program would raise here; we only predict
                return Opaque(f"{op} failed", Nature.NUMBER)
        if isinstance(left, Known) and isinstance(right, Known) and op in ("eq", "ne") \
                and _by_identity(left.obj) and _by_identity(right.obj):
            return Known((left.obj is right.obj) == (op == "eq"))
        defined = self.python_operator(op, left, right, node, opnames, inplace)
        if defined is not None:
            return defined
        if isinstance(left, Seq) or isinstance(right, Seq):
            combined = sets.binary(self, op, left, right, inplace)
            if combined is not None:
                return combined
        if op == "or" and isinstance(right, Dict) | _live_dict(right) and isinstance(left, Dict) | _live_dict(left):
            return self.merged(left, right, inplace)
        if op in COMPARED and (_container(left) or _container(right)):
            compared = _compared(op, left, right)
            if compared is not None:
                return compared
        if op == "add" and (isinstance(left, Seq) or isinstance(right, Seq)):
            joined = _concatenated(left, right)
            if joined is not None:
                return joined
        if isinstance(left, Seq) and isinstance(right, Known) and op == "mul" and isinstance(right.obj, int):
            return Seq(left.items * right.obj, left.kind)
        where = self.where(node)
        lost = next((k for k, v in enumerate((left, right)) if isinstance(v, Opaque) and v.kind is Nature.ANY), None)
        if lost is not None:  # may be a tensor: an op the prediction cannot place
            operand = _operands(node)[lost]
            named = f" {source_text(operand)}," if operand is not None else ""
            self.gap(f"{op} of{named} a value the prediction lost track of "
                     f"({cast(Opaque, (left, right)[lost]).why}){where}")
        numberish = _numberish(left) and _numberish(right)
        return Opaque(f"{op} of unknown values{where}", Nature.NUMBER if numberish else Nature.ANY)

    def merged(self, left: Value, right: Value, inplace: bool) -> Value:
        """``left | right`` of two dicts (one the code built): a new dict with the right one's
        items over the left one's; ``|=`` updates the left one (a live dict as a write would)."""
        if isinstance(left, Known):  # a live dict: |= writes into it
            target = self.written(left, "update") if inplace else self.dict_of(left.obj)
            if target is None:
                return Opaque(f"|= of a live dict{self.where()}")
        else:
            target = left if inplace else self.container_method("copy", left, [], {})
        self.container_method("update", target, [right], {})
        return target

    def formatted(self, part: ast.FormattedValue, value: Value, spec: Value) -> bool:
        """Format an object whose class defines its formatting in Python, as the f-string's
        instruction does (``!s``/``!r`` convert first, 3.13 in an instruction of its own);
        whether it does."""
        names: tuple[str, ...]
        if part.conversion in (ord("r"), ord("a")):
            names, opnames = ("__repr__",), CONVERT_OPS
        elif part.conversion == ord("s"):
            names, opnames = ("__str__", "__repr__"), CONVERT_OPS
        else:
            names, opnames = ("__format__", "__str__", "__repr__"), FORMAT_OPS
        name = _python_special(value, names, self.specials)
        if name is None:
            return False
        self.at_enclosing(part.value, opnames)
        self.dunder(value, name, [spec] if name == "__format__" else [], None, opnames)
        return True

    def dunder(self, value: Value, name: str, args: list[Value], node: Optional[ast.AST],
               opnames: frozenset) -> Optional[Value]:
        """``type(value).name(value, *args)`` where that class defines it in Python (see
        :func:`_python_class`), run as CPython runs it from ``node``'s instruction among
        ``opnames``; ``None`` when it does not."""
        method = _python_method(value, name, self.specials)
        if method is None:
            return None
        self.at_node(node, opnames)
        return self.call(Known(method), [value, *args], {})

    def truth_of(self, value: Value, node: Optional[ast.AST]) -> Optional[bool]:
        """``bool(value)`` when decidable, running the ``__bool__`` (else ``__len__``) that the
        class of an object the program built defines in Python."""
        if type(value) is Known and type(value.obj) in _PLAIN_CLASSES:  # a plain value's: no Python runs
            return bool(value.obj)
        name = _python_special(value, ("__bool__", "__len__"), self.specials)
        if name is None:
            if isinstance(value, Tensor):
                self.reads(builtins.bool, [value], "the truth of a tensor", node)
            known = truth(value)
            if known is None and self.mult.exact == 1:  # a test on every pass reads no one pass's contents
                known = contents_truth(value)
            return known
        self.at_enclosing(node, BOOL_OPS)
        return truth(self.dunder(value, name, [], None, BOOL_OPS))  # type: ignore[arg-type]

    def at_enclosing(self, node: Optional[ast.AST], opnames: frozenset) -> None:
        """Set the current place to ``node``'s instruction among ``opnames``, else to the one
        whose span is the smallest around it (3.11 gives a truth test's jump the statement's
        span, 3.12 a formatting the f-string's), else the first on its line (3.10)."""
        frame = self.frame
        if frame is None or node is None:
            return
        place = frame.source.place(node, opnames)
        if place is None:
            offset = _enclosing_instruction(frame.code, node, opnames)
            place = None if offset is None else instruction_place(frame.code, offset)
        frame.at = place

    def python_operator(self, op: str, left: Value, right: Value, node: Optional[ast.AST],
                        opnames: frozenset, inplace: bool = False) -> Optional[Value]:
        """``left <op> right`` where an operand's class defines the operator in Python (a
        wrapper of tensors, a version object): its method runs as Python runs it, the reflected
        one when the first is absent or gives ``NotImplemented`` (first when the right operand's
        class is a subclass that overrides it); ``None`` when neither class defines it in Python."""
        if inplace:
            done = self.dunder(left, f"__i{op}__", [right], node, opnames)
            if done is not None and not (isinstance(done, Known) and done.obj is NotImplemented):
                return done
        reflected = f"__{MIRROR[op]}__" if op in MIRROR else f"__r{op}__"
        classes = (_python_class(left), _python_class(right))
        if classes == (None, None):
            return None
        tries = [(classes[0], f"__{op}__", left, right), (classes[1], reflected, right, left)]
        if classes[0] is not None and classes[1] is not None and classes[1] is not classes[0] \
                and issubclass(classes[1], classes[0]) \
                and class_attr(classes[1], reflected) is not class_attr(classes[0], reflected):
            tries.reverse()
        methods = [(_python_method(receiver, name, self.specials), receiver, other)
                   for _, name, receiver, other in tries]
        result: Optional[Value] = None
        for method, receiver, other in methods:
            if method is None:
                continue
            self.at_node(node, opnames)
            result = self.call(Known(method), [receiver, other], {})
            if not (isinstance(result, Known) and result.obj is NotImplemented):
                return result
        return result

    def membership(self, needle: Value, container: Value, node: ast.AST) -> Optional[Value]:
        """``needle in container`` for a list or tuple the code built where an item or the
        needle defines ``==`` in Python: each item is compared as Python compares it (item
        first), until one is equal; after an undecided comparison the rest may not run."""
        if not isinstance(container, Seq) or container.unsure or (_python_class(needle) is None and all(
                _python_class(item) is None for item in container.items)):
            return None
        undecided = False
        for item in container.items:
            if identical(item, needle) is True and not undecided:
                return TRUE
            with self.scaled(MAYBE if undecided else ONE):
                equal = self.truth_of(self.binop("eq", item, needle, node, CONTAINS_OPS), node)
            if equal is True and not undecided:
                return TRUE
            undecided = undecided or equal is not False
        return Opaque("membership of unknown values", Nature.NUMBER) if undecided else FALSE

    def unary(self, stem: str, operand: Value, node: Optional[ast.AST],
              compute: Optional[Callable[[Any], Any]] = None) -> Value:
        """``-operand`` and kin (``stem`` a dunder stem: ``neg``, ``invert``); ``compute`` the
        operator on plain values."""
        defined = self.dunder(operand, f"__{stem}__", [], node, UNARY_OPS)
        if defined is not None:
            return defined
        if isinstance(operand, Tensor):
            kind, member = self.host.tensor_attribute(f"__{stem}__")
            if kind is not Member.METHOD:
                return Opaque(f"no tensor operator {stem}")
            self.at_node(node, UNARY_OPS)
            return self.call(self.wrap(member), [operand], {})
        if isinstance(operand, Known) and isinstance(operand.obj, PLAIN) and compute is not None:
            try:
                return Known(compute(operand.obj))
            except Exception:  # noqa: BLE001
                return Opaque(f"{stem} failed", Nature.NUMBER)
        return Opaque(f"{stem} of an unknown value", operand.kind if isinstance(operand, Opaque) else Nature.ANY)

    def eval_Compare(self, node: ast.Compare) -> Value:
        """A chained comparison (one of two operands: :func:`_compile_compare`)."""
        left = self.eval(node.left)
        result: Value = TRUE
        for k, (op, comparator) in enumerate(zip(node.ops, node.comparators), 1 - len(node.ops)):
            right = self.eval(comparator)
            value = self.compare(op, left, right, node)
            known = self.truth_of(value, node) if k else truth(value)  # Python tests all but the last
            if known is False:
                return FALSE
            result = value if known is None else result
            left = right
        return result

    def compare(self, op: ast.cmpop, left: Value, right: Value, node: ast.AST) -> Value:
        if isinstance(op, (ast.Is, ast.IsNot)):
            same = identical(left, right)
            if same is None:
                return Opaque("identity of unknown values", Nature.NUMBER)
            return Known(same if isinstance(op, ast.Is) else not same)
        if isinstance(op, (ast.In, ast.NotIn)):
            defined = self.dunder(right, "__contains__", [left], node, CONTAINS_OPS)
            if defined is not None:
                known = truth(defined)
                if known is None:
                    return Opaque("membership of unknown values", Nature.NUMBER)
                return Known(known if isinstance(op, ast.In) else not known)
            found = contains(self.viewed(right), left)
            if found is None:
                compared = self.membership(left, self.viewed(right), node)
                known = None if compared is None else truth(compared)
                if known is None:
                    return Opaque("membership of unknown values", Nature.NUMBER)
                return Known(known if isinstance(op, ast.In) else not known)
            return Known(found if isinstance(op, ast.In) else not found)
        return self.binop(COMPARE[type(op)], left, right, node, COMPARE_OPS)

    def eval_BoolOp(self, node: ast.BoolOp) -> Value:
        return self.bool_op(node, tested=False)[0]

    def condition(self, node: ast.expr) -> Optional[bool]:
        """The truth of a test (``if``, ``while``, a filter, a guard): an ``and``/``or`` is
        decided by an operand that decides it even when its value is not (``x and False``
        is false whatever ``x`` is)."""
        if isinstance(node, ast.BoolOp):
            return self.bool_op(node)[1]
        return self.truth_of(self.eval(node), node)

    def bool_op(self, node: ast.BoolOp, tested: bool = True) -> tuple[Value, Optional[bool]]:
        """The value of ``a and b ...`` / ``a or b ...`` and its truth when decidable (``tested``:
        Python takes the truth of the last operand too, the whole being a test)."""
        stop_on = isinstance(node.op, ast.Or)  # `or` stops at the first true value
        values: list[Value] = []
        uncertain = False
        narrowed: dict[str, Value] = {}  # what the operands so far tell of the names, where the rest run
        for expr in node.values:
            taken = tested or expr is not node.values[-1]
            if narrowed:
                with self.bound(narrowed):
                    value, known, arms = self.bool_operand(expr, taken, uncertain)
            else:  # (most often: no context to enter)
                value, known, arms = self.bool_operand(expr, taken, uncertain)
            values.append(value)
            if known is stop_on:  # every run that gets here stops here: the rest never runs
                return (join(values) if uncertain else value), stop_on
            if known is None:
                uncertain = True
            if arms:
                narrowed.update(arms[1] if stop_on else arms[0])
        return (join(values), None) if uncertain else (values[-1], not stop_on)

    def bool_operand(self, node: ast.expr, tested: bool, uncertain: bool
                     ) -> tuple[Value, Optional[bool], list[dict[str, Value]]]:
        """An operand of ``and``/``or`` (``uncertain``: whether it runs is not known), its truth,
        and what it narrows (:meth:`narrowed`)."""
        if uncertain:
            with self.scaled(MAYBE):
                value, known = self.operand(node, tested)
        else:
            value, known = self.operand(node, tested)
        return value, known, self.narrowed(node)

    def operand(self, node: ast.expr, tested: bool = True) -> tuple[Value, Optional[bool]]:
        """An operand of ``and``/``or``/``not`` and its truth (``tested``: Python takes it)."""
        if isinstance(node, ast.BoolOp):
            return self.bool_op(node, tested)
        value = self.eval(node)
        return value, self.truth_of(value, node) if tested else truth(value)

    def eval_IfExp(self, node: ast.IfExp) -> Value:
        known = self.condition(node.test)
        if known is True:
            return self.eval(node.body)
        if known is False:
            return self.eval(node.orelse)
        arms = self.narrowed(node.test) or [{}, {}]
        with self.scaled(MAYBE):
            with self.bound(arms[0]):
                body = self.eval(node.body)
            with self.bound(arms[1]):
                return join([body, self.eval(node.orelse)])

    # -- subscripts --------------------------------------------------------------------------

    def subscript(self, value: Value, index: Value, node: Optional[ast.AST], option: bool = False) -> Value:
        """``value[index]`` (``option``: one combination of a value and key from undecided
        branches, which may not be the one that runs: a missing key there is no raise)."""
        if isinstance(value, Tensor):
            kind, member = self.host.tensor_attribute("__getitem__")
            self.at_node(node, SUBSCR_LOAD)
            return self.call(self.wrap(member), [value, index], {}) if kind is Member.METHOD else Tensor()
        if isinstance(value, Union):
            return join([self.subscript(v, index, node, True) for v in value.options])
        if isinstance(index, Union):  # a key from an undecided branch: any of its options
            return join([self.subscript(value, k, node, True) for k in index.options])
        value = self.viewed(value)
        if isinstance(index, Tensor) and (isinstance(value, Seq) or isinstance(value, Known) and isinstance(
                value.obj, (list, tuple, str, range))):
            self.reads(operator.index, [index], "a tensor as an index", node)
        key = index.obj if isinstance(index, Known) else None
        if isinstance(value, TensorTuple):
            if isinstance(key, int) and key >= 0:
                value.resolve(key + 1)
            if isinstance(key, slice) and value.count is not None:  # result[1:] of lstm: (h, c)
                return Seq(value.items(value.count)[key], tuple)
            return value.item(key) if isinstance(key, int) else Opaque("a slice of several outputs")
        if isinstance(value, Seq) and value.unsure:
            return Opaque(f"an item of a list whose items are not known ({value.unsure})")
        if isinstance(value, Seq) and isinstance(key, slice):
            return Seq(value.items[key], value.kind)
        if isinstance(value, Seq) and isinstance(key, int):
            try:
                return value.items[key]
            except IndexError:
                if not option:
                    self.raises("IndexError", node)
                return Opaque("index out of range")
        if isinstance(value, Dict) and value.unsure:
            return Opaque(f"an item of a dict whose items are not known ({value.unsure})")
        if isinstance(value, Dict) and isinstance(index, Known):
            if value.listable and not option and hashable(key) and key not in value.items:
                self.raises("KeyError", node)
            return value.items[key] if key in value.items else Opaque(f"key {key!r} not set")
        defined = self.dunder(value, "__getitem__", [index], node, SUBSCR_LOAD)
        if defined is not None:
            return defined
        if isinstance(value, Instance) and value.items is not None and isinstance(index, Known):
            items = list(value.items.values())
            if isinstance(key, int) and -len(items) <= key < len(items):
                return items[key]
            return value.items[str(key)] if str(key) in value.items else Opaque(f"item {key!r}")
        if isinstance(value, Known) and isinstance(index, Known):
            try:
                return self.wrap(value.obj[key])
            except Exception:  # noqa: BLE001
                return Opaque(f"item {key!r} of {type(value.obj).__name__}")
        return Opaque("item of an unknown value", value.kind if isinstance(value, Opaque) else Nature.ANY)

    def op_raises(self, name: str, error: str) -> None:
        """An op that raises for certain on the shapes it is given (``error``: ``"Class: message"``)."""
        self.stops(f"{name} raises {error}{self.where()} on the example inputs' shapes", _error_class(error))

    def reads(self, read: Any, args: Sequence[Value], what: str, node: Optional[ast.AST] = None) -> None:
        """Python reads a tensor among ``args`` as a plain value (``read``, a builtin such as
        ``bool``, ``float``, ``len``, ``operator.index``, ``format``, given ``args``): where the
        host says that raises for certain (the truth of a tensor of several elements, ``round``
        of a tensor), the forward stops there."""
        error = self.host.read_raises(read, args)
        if error is not None:
            self.stops(f"{what} raises {error}{self.where(node)}", _error_class(error))

    def stops(self, text: str, error: Optional[type] = None) -> None:
        """Something raises for certain (``text`` says what and where; ``error``: its class, when
        known): inside a ``try`` the run reaches once, the ``try`` gets it (:meth:`unwind`); else,
        where the run is certain to reach it, nothing after it runs (a gap); elsewhere the
        prediction is not exact (a note)."""
        self.unwind(Signal(Exit.RAISE, error=error, site=text))
        text += ": the forward stops there unless the exception is caught; what follows is not predicted"
        if self.catching == 0 and self.mult.lo > 0:
            self.gap(text)
        else:
            self.note(text)

    def raises(self, error: str, node: Optional[ast.AST]) -> None:
        """An expression that raises ``error`` (a builtin exception's name) for certain: inside a
        ``try`` the run reaches once, the ``try`` gets it; elsewhere where the exception goes is
        not followed."""
        text = source_text(node) if node is not None else "an item"
        self.unwind(Signal(Exit.RAISE, error=_error_class(error), site=f"{text} raises {error}{self.where(node)}"))
        self.note(f"{text} raises {error}{self.where(node)}: where the exception goes (an except, a with "
                  "that suppresses it) is not predicted")

    # -- comprehensions ----------------------------------------------------------------------

    def eval_ListComp(self, node: ast.ListComp) -> Value:
        return self.listed(node, lambda: [self.eval(node.elt)])

    def eval_SetComp(self, node: ast.SetComp) -> Value:
        items = self.listed(node, lambda: [self.eval(node.elt)])
        return items if items.unsure else self.as_set(items.items, node)

    def listed(self, node: Any, element: Callable[[], list[Value]]) -> Seq:
        """A list or set comprehension's list: unsure when a filter or the number of items of
        an iterable was not decided (its items then stand for an unknown number)."""
        before = self.unlisted
        items = self.comprehension(node, element)
        undecided = self.unlisted != before
        return Seq(items, list, f"comprehension at line {node.lineno} with items the prediction cannot list"
                   if undecided else "")

    def eval_DictComp(self, node: ast.DictComp) -> Value:
        pairs = self.comprehension(node, lambda: [Seq([self.eval(node.key), self.eval(node.value)])])
        out = Dict()
        for pair in pairs:
            key, value = pair.items  # type: ignore[attr-defined]
            out.items[key.obj if isinstance(key, Known) else object()] = value
        return out

    def comprehension(self, node: Any, element: Callable[[], list[Value]]) -> list[Value]:
        """Run a list/set/dict comprehension, in its own frame where CPython makes one."""
        frame = self.frame
        code = frame.source.codes.get(id(node)) if frame is not None else None
        if code is None or frame is None:  # 3.12+: inlined into the enclosing code
            first = self.eval(node.generators[0].iter)
            items = self.iter_at(first, node, node.generators[0], node.generators[0].iter)
            with self.inline_scope(node):
                return list(self.generators(node.generators, 0, element, (first, items)))
        first = self.eval(node.generators[0].iter)
        items = self.iter_at(first, node, node.generators[0])  # iter() runs in the enclosing code
        frame.at = frame.source.place(node, CALL_OPS)  # the call that runs its code (≤3.11)
        own = self.child_frame(frame, code, node)
        self.stack.append(own)
        try:
            return list(self.generators(node.generators, 0, element, (first, items)))
        finally:
            self.stack.pop()

    def eval_GeneratorExp(self, node: ast.GeneratorExp) -> Value:
        frame = self.frame
        if frame is None:
            return Opaque("a generator outside any frame")
        code = frame.source.codes.get(id(node))
        source = self.eval(node.generators[0].iter)
        first = (source, self.iter_at(source, node, node.generators[0]))  # iter() runs here, not lazily
        own = self.child_frame(frame, code, node) if code is not None else None

        def start() -> Iterator[Value]:
            items = self.generators(node.generators, 0, lambda: [self.eval(node.elt)], first)
            while True:
                if own is not None:
                    own.below = None  # its items may be asked for from another place
                    self.stack.append(own)
                try:
                    value = next(items)
                except StopIteration:
                    return
                finally:
                    if own is not None:
                        self.stack.pop()
                yield value

        return Lazy(start, f"generator expression at line {node.lineno}")

    def child_frame(self, frame: Frame, code: Any, node: ast.AST) -> Frame:
        return Frame(code, frame.source, node, {}, [frame.locals, *frame.enclosing], frame.globals)

    @contextmanager
    def inline_scope(self, node: Any) -> Iterator[None]:
        """An inlined comprehension's variables do not leak (PEP 709): restore them after."""
        frame = self.frame
        names = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        saved = {n: frame.locals[n] for n in names if frame is not None and n in frame.locals}
        try:
            yield
        finally:
            if frame is not None:
                for n in names:
                    frame.locals.pop(n, None)
                frame.locals.update(saved)

    def generators(self, gens: list[ast.comprehension], k: int, element: Callable[[], list[Value]],
                   first: Optional[tuple[Value, Optional[Iterator[Value]]]]) -> Iterator[Value]:
        """Items of ``gens[k:]``: iterate, filter, recurse, then evaluate the element (``first``:
        the first iterable and its iterator, when the enclosing code made them)."""
        if k == len(gens):
            yield from element()
            return
        gen = gens[k]
        if k == 0 and first is not None:
            source, items = first
        else:
            source = self.eval(gen.iter)
            items = self.iter_inner(source, k)
        count: Optional[Count] = None
        if items is None:
            count = Count(0, None, source_text(gen.iter), f"{source_text(gen.iter)} has no static length")
            items = iter([self.element(source)])
            self.unlisted += 1
        resume = self.comprehension_place(k, "FOR_ITER")
        while True:
            frame = self.frame
            if frame is not None and resume is not None:
                frame.at = resume  # a lazy iterator resumes from the comprehension's FOR_ITER
            try:
                item = next(items)
            except StopIteration:
                break
            self.step()
            saved = self.mult
            if count is not None:
                self.mult = saved * count
            self.assign(gen.target, item)
            decided = True
            for cond in gen.ifs:
                known = self.condition(cond)
                if known is False:
                    decided = False
                    break
                if known is None:
                    self.mult = self.mult * MAYBE
                    self.unlisted += 1
            if decided:
                yield from self.generators(gens, k + 1, element, None)
            self.mult = saved

    # -- small helpers -----------------------------------------------------------------------

    def iter_inner(self, value: Value, k: int) -> Optional[Iterator[Value]]:
        """``iter(value)`` of a comprehension's ``k``-th ``for`` (``k > 0``), in the
        comprehension's own code: at its ``k``-th ``GET_ITER`` (the first ``for``'s runs in the
        enclosing code). Where the comprehension is inlined (3.12+) a tensor's is not placed."""
        frame = self.frame
        if runs_on_iteration(value) and frame is not None:
            frame.at = self.comprehension_place(k - 1, "GET_ITER")
        return self.iterate(value)

    def comprehension_place(self, k: int, opname: str) -> Optional[Place]:
        """The place of the ``k``-th ``opname`` in the current frame's code when it is a
        comprehension's own (``None`` where it is inlined, 3.12+)."""
        frame = self.frame
        if frame is None or not isinstance(frame.node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return None
        offsets = [ins.offset for ins in _instructions(frame.code) if ins.opname == opname]
        return instruction_place(frame.code, offsets[k]) if 0 <= k < len(offsets) else None

    def iter_at(self, value: Value, *nodes: ast.AST) -> Optional[Iterator[Value]]:
        """``iter(value)`` from the current frame: a tensor's (or a Python class's) ``__iter__``
        runs at the ``GET_ITER`` of the first of ``nodes`` that has one, else at the one whose
        span is the smallest around the first of them it can find (an inlined comprehension's,
        3.12+)."""
        frame = self.frame
        if runs_on_iteration(value) and frame is not None:
            frame.at = next(filter(None, (frame.source.place(n, GET_ITER) for n in nodes)), None)
            for node in nodes if frame.at is None else ():  # 3.12 spans the comprehension, 3.13 its iterable
                if not hasattr(node, "lineno"):  # a comprehension's ``for`` clause has no span
                    continue
                self.at_enclosing(node, GET_ITER)
                if frame.at is not None:
                    break
        return self.iterate(value)

    def at_node(self, node: Optional[ast.AST], opnames: frozenset) -> None:
        frame = self.frame
        if frame is not None and node is not None:
            frame.at = frame.source.place(node, opnames)

    def exec_block(self, body: list[ast.stmt]) -> Optional[Signal]:
        for stmt in body:
            self.steps += 1  # self.step(), inline
            if self.steps >= self.next_check:
                self.check_budget()
            try:
                run = stmt.tl_run  # type: ignore[attr-defined]
            except AttributeError:
                run = _runner(stmt)
            try:
                signal = run(self, stmt)
            except Unwinding as raised:  # raised for certain in an expression or a call: a try is around
                return raised.signal
            if signal is not None:
                return signal
        return None

    def no_exec(self, node: ast.stmt) -> None:
        """A statement kind the run does not model."""
        self.gap(f"{type(node).__name__} statement{self.where(node)} is not followed")

    def exec_Pass(self, node: ast.Pass) -> None:
        return None

    def exec_Nonlocal(self, node: ast.Nonlocal) -> None:
        if self.frame is not None:
            self.frame.declared.update(dict.fromkeys(node.names, "nonlocal"))

    def exec_Global(self, node: ast.Global) -> None:
        if self.frame is not None:
            self.frame.declared.update(dict.fromkeys(node.names, "global"))

    # -- simple statements -------------------------------------------------------------------

    def exec_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.assign(node.target, self.eval(node.value))

    def exec_AugAssign(self, node: ast.AugAssign) -> None:
        current = self.eval(node.target)  # its load shares the target's instructions
        value = self.binop(BINOPS[type(node.op)], current, self.eval(node.value), node, BINARY, inplace=True)
        self.assign(node.target, value)

    def exec_Raise(self, node: ast.Raise) -> Signal:
        if node.exc is None:  # raise again the exception being handled
            return self.raised(self.handling[-1]) if self.handling else Signal(Exit.RAISE)
        return self.raising(_raised(node.exc), node, self.raised_class(node.exc) if self.catching else None)

    def raising(self, what: str, node: ast.stmt, error: Optional[type] = None) -> Signal:
        """A statement that raises ``what`` (of class ``error``, when known) where the run reaches it."""
        return self.raised(Signal(Exit.RAISE, error=error, site=f"{what} raised{self.where(node)}"))

    def raised(self, signal: Signal) -> Signal:
        """``signal`` (a raise) goes on from here: where nothing may catch it and the run is
        certain to get here, nothing after it is predicted (a gap)."""
        if self.catching == 0 and self.mult.lo > 0 and signal.site:
            self.gap(f"{signal.site} on the path the prediction took: nothing after it is predicted; if the "
                     "model does not raise there, pass example inputs (tl.predict(model, *inputs))")
        return signal

    def unwind(self, signal: Signal) -> None:
        """A raise the run is certain of (``signal``) inside a ``try`` with handlers, where the
        run gets once: it leaves what is being evaluated (:class:`Unwinding`) for the ``try``."""
        if self.catching and self.mult.exact == 1:
            raise Unwinding(signal)

    def raised_class(self, exc: ast.expr) -> Optional[type]:
        """The class of the exception ``raise exc`` raises, where its name says it (``E``,
        ``E(...)``, ``errors.E(...)``: only the name is evaluated, not the arguments)."""
        target = exc.func if isinstance(exc, ast.Call) else exc
        if not isinstance(target, (ast.Name, ast.Attribute)):
            return None
        value = self.eval(target)
        obj = value.obj if isinstance(value, Known) else None
        if isinstance(obj, BaseException):
            return type(obj)
        return obj if isinstance(obj, type) and issubclass(obj, BaseException) else None

    def exec_Break(self, node: ast.Break) -> Signal:
        return Signal(Exit.BREAK)

    def exec_Continue(self, node: ast.Continue) -> Signal:
        return Signal(Exit.CONTINUE)

    def exec_Assert(self, node: ast.Assert) -> Optional[Signal]:
        """``assert test, msg``: a test decided false raises ``AssertionError`` (its message built
        first); an undecided one is taken as holding, its message built 0..1 times."""
        known = self.condition(node.test)
        if known is True:
            return None
        if node.msg is not None:
            with self.scaled(MAYBE if known is None else ONE):
                self.eval(node.msg)
        return None if known is None else self.raising(f"AssertionError ({source_text(node.test)})", node)

    def exec_Delete(self, node: ast.Delete) -> None:
        frame = self.frame
        for target in node.targets:
            if isinstance(target, ast.Name) and frame is not None:
                frame.locals.pop(target.id, None)
            elif isinstance(target, ast.Subscript):
                self.delete_item(self.eval(target.value), self.eval(target.slice))
            elif isinstance(target, ast.Attribute):
                self.delete_attribute(self.eval(target.value), target.attr)

    def delete_attribute(self, target: Value, name: str) -> None:
        """``del target.name``: dropped from an abstract object (kept as an option where a
        branch it cannot decide deletes it); on a live object a gap, which is never changed."""
        if isinstance(target, (Instance, Function)):
            if self.mult.exact != 1:
                target.attrs[name] = join([target.attrs[name] if name in target.attrs else Opaque(f"{name} unset"),
                                           Opaque(f"{name} deleted on some path")])
            else:
                target.attrs.pop(name, None)
        elif isinstance(target, Known):
            self.gap(f"del of attribute {name} of a live {type(target.obj).__name__}{self.where()}: "
                     "what reads it later is not predicted")

    def delete_item(self, container: Value, index: Value) -> None:
        """``del container[index]`` of a dict or list the code built or writes into."""
        if isinstance(container, Known):
            view = self.written(container)
            if view is not None:
                self.delete_item(view, index)
        elif isinstance(container, (Dict, Seq)):
            if self.unsettled(container, "del", index):
                return
            if isinstance(container, Dict) and isinstance(index, Known):
                container.items.pop(index.obj, None)
            elif isinstance(index, Known) and isinstance(index.obj, (int, slice)):
                try:
                    del container.items[index.obj]
                except IndexError:  # Python raises here: the run goes on as if it had not
                    pass

    def unsettled(self, container: Dict | Seq, what: str, index: Optional[Value] = None) -> bool:
        """Mark a dict or list the code builds as not known for sure when ``what`` changes it
        at a key or index the data decides (``index`` not known), or under a branch or loop
        count the prediction cannot decide; whether it did (the change is then not made)."""
        if index is not None and not isinstance(index, Known):
            why = f"{what} at a key or index it does not know"
        elif self.mult.exact != 1:
            why = f"{what} under {self.mult.note or 'a branch the prediction cannot decide'}"
        else:
            return False
        container.unsure = container.unsure or f"{why}{self.where()}"
        return True

    def exec_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            name = alias.asname or alias.name.split(".")[0]
            module = sys.modules.get(alias.name if alias.asname else alias.name.split(".")[0])
            self.bind_name(name, Known(module) if module is not None else Opaque(f"module {alias.name}"))

    def exec_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = sys.modules.get(node.module or "")
        for alias in node.names:
            value = getattr(module, alias.name, None) if module is not None else None
            self.bind_name(alias.asname or alias.name, self.wrap(value) if value is not None
                           else Opaque(f"{node.module}.{alias.name}"))

    def exec_FunctionDef(self, node: ast.FunctionDef) -> None:
        frame = self.frame
        if frame is None:
            return
        code = frame.source.codes.get(id(node))
        if code is None:
            self.bind_name(node.name, Opaque(f"function {node.name} without code"))
            return
        fn: Value = self.make_function(node, code)
        for decorator in reversed(node.decorator_list):
            deco = self.eval(decorator)
            frame.at = frame.source.place(decorator, CALL_OPS)
            fn = self.call(deco, [fn], {})
        self.bind_name(node.name, fn)

    exec_AsyncFunctionDef = exec_FunctionDef

    def exec_ClassDef(self, node: ast.ClassDef) -> None:
        frame = self.frame
        if frame is not None:
            self.bind_name(node.name, build_class(self, frame, node))

    def make_function(self, node: Any, code: Any) -> Function:
        frame = self.frame
        assert frame is not None
        spec = node.args
        defaults = [self.eval(d) for d in spec.defaults]
        kw_defaults = {a.arg: self.eval(d) for a, d in zip(spec.kwonlyargs, spec.kw_defaults) if d is not None}
        return Function(node, code, frame.source, frame.globals, [frame.locals, *frame.enclosing],
                        defaults, kw_defaults)

    def eval_Lambda(self, node: ast.Lambda) -> Value:
        frame = self.frame
        code = frame.source.codes.get(id(node)) if frame is not None else None
        if code is None:
            return Opaque("a lambda without code")
        return self.make_function(node, code)

    def bind_name(self, name: str, value: Value) -> None:
        stack = self.stack
        frame = stack[-1] if stack and type(stack[-1]) is Frame else self.frame  # most often the innermost entry
        if frame is None:
            return
        if isinstance(value, (Tensor, Union)) and self.mult.exact != 1:  # bound on some runs only, or on
            value = without_contents(value)  # each of several passes (only a tensor holds contents)
        declared = frame.declared.get(name) if frame.declared else None
        if declared is None:
            frame.locals[name] = value
        elif declared == "nonlocal":  # the innermost enclosing function's variable
            scope = next((scope for scope in frame.enclosing if name in scope), frame.locals)
            scope[name] = value
        else:  # a module's globals are live: never written
            self.gap(f"a write to global {name}{self.where()}: what reads it later is not predicted")

    # -- assignment --------------------------------------------------------------------------

    def assign(self, target: ast.AST, value: Value) -> None:
        if isinstance(target, ast.Name):
            self.bind_name(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if runs_when_unpacked(value):
                self.at_unpack(target)
            self.assign_many(target.elts, value)
        elif isinstance(target, ast.Attribute):
            self.set_attribute(self.eval(target.value), target.attr, value)
        elif isinstance(target, ast.Subscript):
            self.store_item(self.eval(target.value), self.eval(target.slice), value, target)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, value)

    def assign_many(self, targets: list[ast.expr], value: Value) -> None:
        star = next((k for k, t in enumerate(targets) if isinstance(t, ast.Starred)), None)
        counted = _counted(value)
        items = self.unpack(value, None if star is not None else len(targets))
        wanted = len(targets) - (star is not None)
        if counted and items is not None and (len(items) < wanted or star is None and len(items) > wanted):
            self.stops(f"unpacking {len(items)} item{'s' * (len(items) != 1)} into {wanted}"
                       f"{' or more' if star is not None else ''} targets raises ValueError{self.where(targets[0])}", ValueError)
        if items is None:
            items = [self.element(value)] * len(targets)
        if star is None:
            if len(items) < len(targets):
                items = items + [Opaque("missing item")] * (len(targets) - len(items))
            for target, item in zip(targets, items):
                self.assign(target, item)
            return
        after = len(targets) - star - 1
        head, rest = items[:star], items[star:]
        middle, tail = (rest[: len(rest) - after], rest[len(rest) - after:]) if after else (rest, [])
        for target, item in zip(targets[:star], head):
            self.assign(target, item)
        self.assign(targets[star], Seq(list(middle), list))
        for target, item in zip(targets[star + 1:], tail):
            self.assign(target, item)

    def store_item(self, container: Value, index: Value, value: Value, node: Optional[ast.AST]) -> None:
        if self.dunder(container, "__setitem__", [index, value], node, SUBSCR_STORE) is not None:
            return
        if isinstance(container, Tensor):
            kind, member = self.host.tensor_attribute("__setitem__")
            if kind is Member.METHOD:
                self.at_node(node, SUBSCR_STORE)
                self.call(self.wrap(member), [container, index, value], {})
        elif isinstance(container, Known):
            view = self.written(container)
            if view is not None:
                self.store_item(view, index, value, node)
        elif isinstance(container, Dict):
            self.unsettled(container, "an item write", index)
            container.items[index.obj if isinstance(index, Known) else object()] = value
        elif isinstance(container, Opaque) and may_hold_tensor(value):
            container.kind = Nature.ANY  # what it held was no tensor; what is read from it now may be
        elif isinstance(container, Seq) and not self.unsettled(container, "an item write", index) \
                and isinstance(index, Known) and isinstance(index.obj, int):
            if -len(container.items) <= index.obj < len(container.items):
                container.items[index.obj] = value

    # -- branches ----------------------------------------------------------------------------

    def narrowed(self, test: ast.expr) -> list[dict[str, Value]]:
        """The names a test narrows in the arm where it holds and in the one where it fails:
        ``name is None`` / ``name is not None`` where the local ``name`` may be ``None`` or not
        (:meth:`none_test`), and an ``and`` (where it holds, every operand held) or an ``or``
        (where it fails, every operand failed) of such tests. Empty when it narrows nothing."""
        if isinstance(test, ast.BoolOp):
            conjunction = isinstance(test.op, ast.And)  # the arm in which every operand took one truth
            every: dict[str, Value] = {}
            for operand in test.values:
                arms = self.narrowed(operand)
                if arms:
                    every.update(arms[0] if conjunction else arms[1])
            if not every:
                return []
            return [every, {}] if conjunction else [{}, every]
        tested = self.none_test(test)
        if tested is None:
            return []
        name, holds, fails = tested
        return [{name: holds}, {name: fails}]

    def none_test(self, test: ast.expr) -> Optional[tuple[str, Value, Value]]:
        """For ``name is None`` or ``name is not None`` where the local ``name`` holds a value
        from undecided branches that may be ``None``: the name, its value where the test holds
        and where it fails (``None`` where it is ``None``; elsewhere what else it may be)."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot))
                and isinstance(test.left, ast.Name) and isinstance(test.comparators[0], ast.Constant)
                and test.comparators[0].value is None):
            return None
        frame = self.frame
        if frame is None:
            return None
        value = frame.locals.get(test.left.id)
        if not isinstance(value, Union):
            return None
        some = [o for o in value.options if identical(o, NONE) is not True]
        maybe_none = [o for o in value.options if identical(o, NONE) is not False]
        if not some or len(some) == len(value.options):
            return None
        if isinstance(test.ops[0], ast.Is):
            return test.left.id, join(maybe_none), join(some)
        return test.left.id, join(some), join(maybe_none)

    def bound(self, names: dict[str, Value]) -> AbstractContextManager[None]:
        """Evaluate with locals narrowed to ``names`` (an operand or arm of an expression that
        runs only where a test narrowed them); each is restored after, unless rebound. Most
        often nothing is narrowed: then a context that does nothing (no generator made)."""
        frame = self.frame if names else None
        return _AS_IS if frame is None else self.narrowing(frame, names)

    @staticmethod
    @contextmanager
    def narrowing(frame: Frame, names: dict[str, Value]) -> Iterator[None]:
        """:meth:`bound` where ``names`` narrow locals of ``frame``."""
        before = {name: frame.locals[name] for name in names if name in frame.locals}
        frame.locals.update(names)
        try:
            yield
        finally:
            for name, narrowed in names.items():
                if frame.locals.get(name) is narrowed:
                    if name in before:
                        frame.locals[name] = before[name]
                    else:
                        del frame.locals[name]

    def fork(self, blocks: list[list[ast.stmt]], bindings: Sequence[dict[str, Value]] = ()) -> Optional[Signal]:
        """Run arms of a branch the prediction cannot decide, each under ``0..1`` (with the
        names ``bindings`` gives each arm, where a test narrows them)."""
        arms = [(block, bindings[k] if bindings else {}) for k, block in enumerate(blocks)]
        live = [(block, bound) for block, bound in arms if not _always_raises(block)]
        if not live and self.catching:  # one of them raises for certain: which class a try takes matters
            live = arms
        self.unraised += len(blocks) - len(live)
        if len(live) <= 1:
            return self.exec_block(live[0][0]) if live else Signal(Exit.RAISE)
        frame = self.frame
        if frame is None:
            return None
        base = frame.locals
        before = dict(base)
        outcomes: list[tuple[dict, Optional[Signal]]] = []
        for block, bound in live:
            frame.locals = {**before, **bound}
            with self.scaled(MAYBE):
                signal = self.exec_block(block)
            # a closure made before the branch writes its cells into ``base`` (``nonlocal``):
            # those writes are this arm's too
            frame.locals.update((k, v) for k, v in base.items() if before.get(k, _UNSET) is not v)
            base.clear()
            base.update(before)
            outcomes.append((frame.locals, signal))
        through = [env for env, signal in outcomes if signal is None]
        merged = self.merge([env for env, _ in outcomes] if not through else through, base)
        base.clear()
        base.update(merged)
        frame.locals = base
        if not through:
            kinds = {signal.kind for _, signal in outcomes if signal is not None}
            values = [signal.value for _, signal in outcomes if signal is not None]
            kind = Exit.RETURN if Exit.RETURN in kinds else kinds.pop()
            if kind is Exit.RAISE:
                raising = [signal for _, signal in outcomes if signal is not None]
                return Signal(kind, error=_one_of([signal.error for signal in raising]),
                              site=" or ".join(dict.fromkeys(signal.site for signal in raising if signal.site)))
            return Signal(kind, join(values) if kind is Exit.RETURN else NONE)
        for _, signal in outcomes:
            if signal is not None and signal.kind is Exit.RETURN:
                frame.maybe_returns.append(signal.value)
        if len(through) < len(outcomes):
            self.exits += 1
            if self.mult.lo != 0 or self.mult.hi != 1:
                self.mult = self.mult * MAYBE  # what follows runs on some paths only
        return None

    def merge(self, envs: list[dict], base: dict) -> dict:
        """Variables after a fork; a tensor from before it stands for all its versions, which
        keeps identities (``q is k``) that held before the branch."""
        out: dict[str, Value] = {}
        for name in dict.fromkeys(name for env in envs for name in env):
            options = [env[name] if name in env else Opaque(f"{name} unbound on some path") for env in envs]
            before = base.get(name)
            if isinstance(before, Tensor) and all(isinstance(v, Tensor) for v in options):
                out[name] = before if all(v is before for v in options) else without_contents(before)
            else:
                out[name] = join(options)
        return out

    # -- loops -------------------------------------------------------------------------------

    def exec_For(self, node: ast.For) -> Optional[Signal]:
        source = self.eval(node.iter)
        if runs_on_iteration(source):
            self.at_node(node, GET_ITER)  # the tensor's __iter__ runs at the loop's GET_ITER
        items = self.iterate(source)
        saved = self.mult
        frame = self.frame
        returns_before = len(frame.maybe_returns) if frame is not None else 0
        if items is None:
            count = Count(0, None, source_text(node.iter), f"{source_text(node.iter)} has no static length")
            start, entry = len(self.events), self.mark_entry(rebound_names(node.body))
            with self.scaled(count):
                self.assign(node.target, self.element(source))
                signal = self.exec_block(node.body)
            self.settle_entry(entry, start, carry=True)
            return signal if signal is not None and signal.kind in (Exit.RETURN, Exit.RAISE) else None
        broke = False
        while True:
            self.at_node(node, FOR_ITER)  # a lazy iterator resumes from the loop's FOR_ITER
            try:
                item = next(items)
            except StopIteration:
                break
            self.assign(node.target, item)
            signal = self.exec_block(node.body)
            if signal is not None and signal.kind is Exit.BREAK:
                broke = True
                break
            if signal is not None and signal.kind in (Exit.RETURN, Exit.RAISE):
                return signal
        if frame is not None and len(frame.maybe_returns) == returns_before:
            self.mult = saved
        return None if broke else self.exec_block(node.orelse)

    exec_AsyncFor = exec_For

    def exec_While(self, node: ast.While) -> Optional[Signal]:
        saved = self.mult
        first = len(self.events)
        rebound = rebound_names(node.body)
        for _ in range(MAX_WHILE):
            start = len(self.events)
            exits = self.exits
            entry = self.mark_entry(rebound)
            known = self.condition(node.test)
            if known is False:
                self.settle_entry(entry, start, carry=False)
                return self.exec_block(node.orelse)
            if known is None:
                note = f"while at line {node.lineno}: its test is not static"
                body, before = len(self.events), dict(self.frame.locals) if self.frame is not None else None
                with self.scaled(Count(0, None, "N", note)):
                    signal = self.exec_block(node.body)
                if signal is not None and signal.kind is Exit.RAISE:  # a body that can only raise is
                    self.unraised += 1  # taken as not run, as a branch arm that can only raise
                    del self.events[body:]
                    if self.frame is not None and before is not None:
                        self.frame.locals = before
                    self.settle_entry(entry, start, carry=False)
                    self.mult = saved
                    return self.exec_block(node.orelse)
                for event in self.events[start:body]:
                    event.count = event.count * Count(1, None, "N+1", note)
                self.settle_entry(entry, start, carry=True)
                self.mult = saved
                return signal if signal is not None and signal.kind in (Exit.RETURN, Exit.RAISE) else None
            signal = self.exec_block(node.body)
            self.settle_entry(entry, start, carry=False)
            if signal is not None and signal.kind is Exit.BREAK:
                return None
            if signal is not None and signal.kind in (Exit.RETURN, Exit.RAISE):
                return signal
            if self.exits != exits:  # left by a break it cannot decide: N passes, not unrolled
                del self.events[first:]
                self.mult = saved
                note = f"while at line {node.lineno}: it ends by a break the prediction cannot decide"
                start, entry = len(self.events), self.mark_entry(rebound)
                with self.scaled(Count(1, None, "N", note)):
                    self.eval(node.test)
                    self.exec_block(node.body)
                self.settle_entry(entry, start, carry=True)
                return None
        self.note(f"while{self.where(node)} ran past {MAX_WHILE:,} passes: the prediction "
                  "stopped unrolling it there, so the passes after are not predicted")
        return None

    def mark_entry(self, names: list[str]) -> dict[str, tuple[Tensor, Tensor]]:
        """Rebind each local tensor among ``names`` to a copy produced by a :class:`LoopEntry`,
        so the ops of this pass that read it through the name are known: name -> (copy, value)."""
        frame = self.frame
        entry: dict[str, tuple[Tensor, Tensor]] = {}
        for name in names:
            value = frame.locals.get(name) if frame is not None else None
            if frame is not None and isinstance(value, Tensor):
                mark = Tensor(live=value.live, meta=value.meta, origin=(LoopEntry(value.origin), 0))
                entry[name] = mark, value
                frame.locals[name] = mark
        return entry

    def settle_entry(self, entry: dict[str, tuple[Tensor, Tensor]], start: int, carry: bool) -> None:
        """Undo :meth:`mark_entry`: ops since ``start`` that read a marked value take its real
        producer again; with ``carry`` (one pass stands for all), those whose name the pass
        rebound to a tensor it produced also take that tensor as carried from the previous pass.
        A name still bound to its copy gets its value back."""
        frame = self.frame
        if not entry or frame is None:
            return
        ran = {id(event) for event in self.events[start:]}
        carried: dict[int, tuple[Event, int]] = {}
        for name, (mark, value) in entry.items():
            now = frame.locals.get(name)
            if now is mark:
                frame.locals[name] = value
            elif carry and isinstance(now, Tensor) and now.origin is not None and id(now.origin[0]) in ran:
                carried[id(mark.origin[0])] = now.origin  # type: ignore[index]
        for event in self.events[start:]:
            marks = [p for p, _ in event.inputs if isinstance(p, LoopEntry)]
            if not marks:
                continue
            event.inputs = real_inputs(event.inputs)
            event.carried = tuple(dict.fromkeys([*event.carried, *(carried[id(p)] for p in marks if id(p) in carried)]))

    # -- try, with ---------------------------------------------------------------------------

    def exec_Try(self, node: Any) -> Optional[Signal]:
        start, unraised = len(self.events), self.unraised
        exactness = self.exactness()
        self.catching += bool(node.handlers)
        try:
            signal = self.exec_block(node.body)
        finally:
            self.catching -= bool(node.handlers)
        if signal is not None and signal.kind is Exit.RAISE and node.handlers:
            if self.unraised != unraised and len(self.events) > start:
                self.note(f"try{self.where(node)}: a raise in its body was taken as not run, so the ops after "
                          "it are predicted; if it runs, they do not and its except arm runs from there")
            signal = self.caught(node, signal)
        else:
            # a body that ran no op and was followed exactly raises nowhere the run did not see
            if self.exactness() != exactness and not self.decided_guard(start):
                # an arm that can only raise again leaves the forward (as a branch arm that can only raise)
                handlers = [handler for handler in node.handlers if not _always_raises(handler.body)]
                self.unraised += len(node.handlers) - len(handlers)
                if handlers and len(self.events) > start:
                    self.note(f"try{self.where(node)}: predicted as not raising; if an op in it raises, the "
                              "ops after it do not run and its except arm runs (predicted as optional)")
                for handler in handlers:  # an op may raise where the prediction cannot tell
                    self.fork([[], handler.body])
            if signal is None:
                signal = self.exec_block(node.orelse)
        final = self.exec_block(node.finalbody)
        return final if final is not None else signal

    def exactness(self) -> tuple[int, ...]:
        """What grows wherever the run does not follow the code exactly: ops made, gaps, notes,
        blocks run an unknown number of times, exits and raises taken as not run, items not
        listed, values not known (:attr:`Opaque.made`). Equal before and after some code: the
        run made no op there and knew every value it read, so Python raises there only where
        the run saw it raise."""
        return (len(self.events), len(self.gaps), len(self.notes), self.guesses, self.exits, self.unraised,
                self.unlisted, Opaque.made)

    def caught(self, node: Any, signal: Signal) -> Optional[Signal]:
        """The body of ``try`` ``node`` raised (``signal``): run the first ``except`` arm whose
        classes take the exception's; where none does, it goes on. Where the exception's class
        or an arm's is not known, a gap: the arms from there on are not followed."""
        for handler in node.handlers:
            catches = self.catches(handler.type, signal.error)
            if catches is None:
                self.gap(f"except{self.where(handler)}: whether it catches "
                         f"{signal.site or 'the exception raised in its try'} is not known; the arms from there "
                         "on are not followed")
                return None
            if not catches:
                continue
            if handler.name:
                self.bind_name(handler.name, Opaque(f"the caught {getattr(signal.error, '__name__', 'exception')}"))
            self.handling.append(signal)
            try:
                return self.exec_block(handler.body)
            finally:
                self.handling.pop()
                if handler.name and self.frame is not None:
                    self.frame.locals.pop(handler.name, None)  # as CPython deletes it
        return self.raised(signal)

    def catches(self, classes: Optional[ast.expr], error: type | tuple[type, ...] | None) -> Optional[bool]:
        """Whether ``except classes`` takes an exception of class ``error`` or of one of the
        classes ``error`` lists (``None``: not known, or it takes some of them only)."""
        if classes is None:
            return True
        value = self.eval(classes)
        if isinstance(value, Seq):
            items: Any = [item.obj if isinstance(item, Known) else None for item in value.items]
        else:
            obj = value.obj if isinstance(value, Known) else None
            items = obj if isinstance(obj, tuple) else [obj]
        if not all(isinstance(c, type) and issubclass(c, BaseException) for c in items):
            return None
        if error is None:
            return True if BaseException in items else None
        taken = [issubclass(cls, tuple(items)) for cls in _classes(error)]
        return True if all(taken) else False if not any(taken) else None

    def decided_guard(self, start: int) -> bool:
        """Whether the ``try`` just run is the host's ``TypeError`` guard around ops (events from
        ``start``) that were all computed, or whose operands' types the op takes: then its
        ``except`` arm does not run."""
        frame = self.frame
        if frame is None or not self.host.type_error_guard(frame.code):
            return False
        events = self.events[start:]
        if events and all(event.computed for event in events):
            return True
        return self.host.guard_passes(lambda name: frame.locals.get(name, _lookup(frame.enclosing, name)))

    def exec_Match(self, node: Any) -> Optional[Signal]:
        subject = self.eval(node.subject)
        for case in node.cases:
            matched = self.match(case.pattern, subject)
            if matched and case.guard is not None:
                matched = self.condition(case.guard)
            if matched is None:
                self.gap(f"match{self.where(node)}: case at line {case.pattern.lineno} cannot "
                         "be decided; the arms from there on are not followed")
                return None
            if matched:
                return self.exec_block(case.body)
        return None

    def match(self, pattern: Any, subject: Value) -> Optional[bool]:
        """Whether ``subject`` matches a ``case`` pattern (binding its names), when decidable."""
        if isinstance(pattern, ast.MatchAs):
            matched = True if pattern.pattern is None else self.match(pattern.pattern, subject)
            if matched and pattern.name is not None:
                self.bind_name(pattern.name, subject)
            return matched
        if isinstance(pattern, ast.MatchOr):
            answers = [self.match(p, subject) for p in pattern.patterns]
            return True if True in answers else None if None in answers else False
        if isinstance(pattern, (ast.MatchValue, ast.MatchSingleton)) and isinstance(subject, Known):
            if isinstance(pattern, ast.MatchSingleton):
                return subject.obj is pattern.value
            value = self.eval(pattern.value)
            if isinstance(value, Known):
                try:
                    return bool(subject.obj == value.obj)
                except Exception:  # noqa: BLE001
                    return None
        return None

    exec_TryStar = exec_Try

    def exec_With(self, node: ast.With) -> Optional[Signal]:
        """``__enter__`` at the statement's entry instruction, the body, then every ``__exit__``
        (innermost first) at the statement's exit call, whichever way the body is left."""
        managers: list[Value] = []
        for k, item in enumerate(node.items):
            manager = self.eval(item.context_expr)
            managers.append(manager)
            self.at_nth(node, WITH_ENTER, k)
            value = self.special_call(manager, "__enter__", [], node)
            if item.optional_vars is not None:
                self.assign(item.optional_vars, value)
        unraised = self.own_unraised()
        signal = self.exec_block(node.body)
        raising = signal is not None and signal.kind is Exit.RAISE
        unraised_in_body = self.own_unraised() != unraised
        if (raising or unraised_in_body) and not all(map(self.never_suppresses, managers)):
            if unraised_in_body:
                self.note(f"with{self.where(node)}: its body is predicted as not raising where it may; if it "
                          "raises and __exit__ suppresses the exception, the ops after the raise do not run")
            if raising:
                self.note(f"with{self.where(node)}: its body raises; the prediction takes the exception as passed "
                          "on, but if __exit__ suppresses it the ops after the with run")
        if signal is not None and not raising and sys.version_info < (3, 11):
            self.note(f"with{self.where(node)} left by {signal.kind.value}: on Python 3.10 its __exit__ call "
                      "has a place of its own on that path, predicted at the normal exit's")
        for k, manager in enumerate(reversed(managers)):
            self.at_nth(node, CALL_OPS, k)
            raised: list[Value] = [Opaque("an exception"), Opaque("an exception"), Opaque("a traceback")] \
                if raising else [NONE, NONE, NONE]
            self.special_call(manager, "__exit__", raised, node)
        return signal

    exec_AsyncWith = exec_With

    def own_unraised(self) -> int:
        """:attr:`unraised`, less what the consumer of the running generator took as not raising
        while it waited at a ``yield`` (a raise there is the consumer's: its own ``with`` says so)."""
        frame = self.frame
        running = frame.resumable if frame is not None else None
        return self.unraised - (running.unraised_outside if running is not None else 0)

    def never_suppresses(self, manager: Value) -> bool:
        """Whether ``manager``'s ``__exit__`` is Python whose every ``return`` gives ``None`` or
        ``False`` (``torch.autocast``'s): an exception in the ``with`` body goes on through it."""
        cls = type_of(manager, self.host.tensor_type)
        method = class_attr(cls, "__exit__") if cls is not None else None
        if not isinstance(method, types.FunctionType):
            return False
        try:
            definition = source_of_code(method.__code__, method.__qualname__)[1]
        except SourceUnavailableError:
            return False
        return all(ret.value is None or isinstance(ret.value, ast.Constant) and ret.value.value in (None, False)
                   for ret in ast.walk(definition) if isinstance(ret, ast.Return))

    def special_call(self, receiver: Value, name: str, args: list[Value], node: ast.AST) -> Value:
        """``type(receiver).name(receiver, *args)``, as CPython calls a special method."""
        if isinstance(receiver, Known):
            method = class_attr(type(receiver.obj), name)
        elif isinstance(receiver, Instance):
            method = class_attr(receiver.cls, name)
        else:
            return self.opaque_call(receiver, [receiver], {}, f"{name} of an unknown value{self.where(node)}")
        if method is None:
            return Opaque(f"no {name}")
        if isinstance(method, (staticmethod, classmethod)):
            return self.call(self.wrap(method.__func__), args, {})
        return self.call(self.wrap(method), [receiver, *args], {})

    def at_unpack(self, target: ast.expr) -> None:
        """Set the current place to the ``UNPACK_SEQUENCE`` that stores into ``target`` (where
        a tensor's ``__iter__`` runs)."""
        self.at_position(target, UNPACK, 0)

    def at_position(self, node: ast.expr, opnames: frozenset, k: int) -> None:
        """Set the current place to the ``k``-th instruction among ``opnames`` that carries
        ``node``'s position in the live code (3.10: its line); ``None`` when there is none."""
        frame = self.frame
        if frame is None:
            return
        frame.at = None
        lines = {offset: line for start, end, line in frame.code.co_lines() for offset in range(start, end, 2)}
        for ins in dis.get_instructions(frame.code):
            if ins.opname not in opnames:
                continue
            where = getattr(ins, "positions", None)
            span = (where.lineno, where.end_lineno, where.col_offset, where.end_col_offset) if where else None
            if span == (node.lineno, node.end_lineno, node.col_offset, node.end_col_offset) \
                    or span is None and lines.get(ins.offset) == node.lineno:
                if k == 0:
                    frame.at = instruction_place(frame.code, ins.offset)
                    return
                k -= 1

    def at_nth(self, node: ast.AST, opnames: frozenset, k: int) -> None:
        """Set the current place to the ``k``-th instruction of ``node`` among ``opnames``."""
        frame = self.frame
        if frame is None:
            return
        code, found = frame.source.instrs.get(id(node), (None, ()))
        offsets = [offset for offset, opname in found if opname in opnames]
        frame.at = instruction_place(code, offsets[k]) if code is not None and k < len(offsets) else None

    # -- iteration ---------------------------------------------------------------------------

    def iterate(self, value: Value) -> Optional[Iterator[Value]]:
        """A Python iterator over the items of ``value``, or ``None`` when they are unknown."""
        if isinstance(value, Seq):
            return None if value.unsure else iter(list(value.items))
        if isinstance(value, Dict):
            if not value.listable:
                return None
            return iter([Known(k) for k in value.items])
        if isinstance(value, Lazy):
            return value.items()
        if isinstance(value, Instance) and value.items is not None:
            return iter(list(value.items.values()))
        if isinstance(value, Instance) or _iterates_in_python(value):
            return self.instance_items(value)
        if isinstance(value, TensorTuple) and value.count is not None:
            return iter(value.items(value.count))
        if isinstance(value, Tensor):
            return self.tensor_items(value)
        if isinstance(value, Union):
            self.iterate_options(value)
            return None
        if isinstance(value, Opaque) and value.kind is Nature.ANY:  # may be a tensor: its unbind unplaced
            self.gap(f"iteration over a value the prediction lost track of ({value.why}){self.where()}: "
                     "what iterating it runs is not predicted")
            return None
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

    def iterate_options(self, value: Union) -> None:
        """``iter()`` of a value from a branch the prediction could not decide: each option is
        iterated under ``0..1`` (a tensor's ``__iter__`` runs its ops only if the branch that
        made it ran); what stands for an item is kept for :meth:`element`."""
        listed: list[Value] = []
        unknown = False
        with self.scaled(MAYBE):
            for option in value.options:
                items = self.iterate(option)
                if items is None:
                    unknown = True
                else:
                    listed.extend(items)
        self.union_items[id(value)] = value, element_of(value) if unknown or not listed else join(listed)

    def element(self, source: Value) -> Value:
        """What stands for an item of ``source`` when its items cannot be listed."""
        found = self.union_items.get(id(source))
        return found[1] if found is not None and found[0] is source else element_of(source)

    def instance_items(self, value: Value) -> Optional[Iterator[Value]]:
        """Items of an object the code built (or of a live one whose class is Python code),
        through its class's Python ``__iter__``, or ``__len__`` and ``__getitem__`` (the old
        sequence protocol, also what the ``Sequence`` mixin's ``__iter__`` does until
        ``IndexError``); ``None`` when unknown."""
        cls = _python_class(value) if not isinstance(value, Instance) else value.cls
        method = class_attr(cls, "__iter__")
        if isinstance(method, types.FunctionType) and method is not collections.abc.Sequence.__iter__:
            result = self.call(self.wrap(method), [value], {})
            if result is not value:
                return self.iterate(result)
            if cls is not None and isinstance(class_attr(cls, "__next__"), types.FunctionType):
                self.gap(f"iterating a {cls.__qualname__}{self.where()} runs its __next__ until it raises "
                         "StopIteration: not followed")
            return None
        length, getitem = class_attr(cls, "__len__"), class_attr(cls, "__getitem__")
        if not (isinstance(length, types.FunctionType) and isinstance(getitem, types.FunctionType)):
            return None
        count = self.call(self.wrap(length), [value], {})
        if not (isinstance(count, Known) and isinstance(count.obj, int) and count.obj <= MAX_UNROLL):
            return None
        return (self.call(self.wrap(getitem), [value, Known(k)], {}) for k in range(count.obj))

    def tensor_items(self, value: Tensor) -> Optional[Iterator[Value]]:
        """Iterating a tensor runs the tensor type's ``__iter__`` from the current place (torch:
        ``iter(self.unbind(0))``); its items, or ``None`` when their number is unknown."""
        kind, member = self.host.tensor_attribute("__iter__")
        if kind is not Member.METHOD:
            return None
        result = self.call(self.wrap(member), [value], {})
        return None if isinstance(result, Tensor) else self.iterate(result)

    def unpack(self, value: Value, count: Optional[int]) -> Optional[list[Value]]:
        """``a, b = value``: the items, or ``None`` when unknown."""
        if isinstance(value, TensorTuple):
            if value.count is None and count is not None:
                value.resolve(count)
                return value.items(count)
            return None if value.count is None else value.items(value.count)
        items = self.iterate(value)
        if items is None:
            return [self.element(value) for _ in range(count)] if count is not None else None
        return list(items)

    # -- calls -------------------------------------------------------------------------------

    def call_builtin(self, fn: Any, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
        """Model a builtin or library call; ``None`` when ``fn`` is not one."""
        key = fn if hashable(fn) else None
        specials = _BUILTIN_SPECIALS.get(key)
        if specials is not None:
            defined = self.builtin_special(fn, specials, args)
            if defined is not None:
                return defined
        if key in READS and any(isinstance(arg, Tensor) for arg in args):
            read, what = READS[key], f"{getattr(fn, '__qualname__', fn)} of a tensor"
            for given in [args] if read is None else [[arg] for arg in args if isinstance(arg, Tensor)]:
                self.reads(read or fn, given, what)
        handler = self.handlers.get(key)
        if handler is not None:
            result = handler(args, kwargs)
            if result is not None:
                return result
        if isinstance(fn, GETTERS):
            return getter_call(self, fn, args, kwargs)
        if isinstance(fn, functools.partial):
            return self.call(self.wrap(fn.func), [*(self.wrap(a) for a in fn.args), *args],
                             {**{k: self.wrap(v) for k, v in fn.keywords.items()}, **kwargs})
        if numbers_ufunc(fn, args, kwargs):
            return self.wrap(fn(*(cast(Known, a).obj for a in args)))
        if is_pure(fn) or self.host.constant_call(fn):
            # C consumes an iterator it is given: what it runs happens here, and it reads the items
            args = [self.consumed(arg) if isinstance(arg, Lazy) else arg for arg in args]
            if getattr(fn, "__module__", "") in PURE_MODULES and fn not in TENSOR_QUERIES \
                    and any(may_hold_tensor(a) for a in (*args, *kwargs.values())):
                return self.given_tensors(fn, args, kwargs)
            plain = concrete_args(args, kwargs)
            if plain is not None:
                try:
                    result = fn(*plain[0], **plain[1])
                except Exception:  # noqa: BLE001 - the program would raise; predict nothing
                    return Opaque(f"{getattr(fn, '__name__', fn)} raised", Nature.NUMBER)
                return sets.returned(self, fn, args, plain[0], result) or self.wrap(result)
            if fn in NUMERIC or getattr(fn, "__module__", "") in PURE_MODULES:
                return Opaque(f"{getattr(fn, '__name__', fn)} of unknown values", Nature.NUMBER)
        return None

    def given_tensors(self, fn: Any, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """A ``math`` or ``operator`` function given what may be a tensor, which no handler
        models: the ``math`` ones that iterate a tensor run its ``__iter__`` here, and read
        numbers; an ``operator`` one calls operators of the tensor that are not predicted: a gap."""
        name = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__name__', fn)}".lstrip("_")
        if fn in ITERATING:
            for arg in (*args, *kwargs.values()):
                if isinstance(arg, Tensor):
                    self.iterate(arg)
        if getattr(fn, "__module__", "") == "math":
            return Opaque(f"{name} of a tensor", Nature.NUMBER)
        return self.opaque_call(fn, args, kwargs, f"{name} given a tensor{self.where()}: the tensor operators it "
                                                  "calls are not predicted")

    def container_method(self, name: str, receiver: Value, args: list[Value], kwargs: dict) -> Value:
        """Methods of the lists, tuples and dicts the code builds (``kwargs.get``, ``xs.append``)."""
        first = args[0] if args else NONE
        key = first.obj if isinstance(first, Known) else object()
        if isinstance(receiver, Lazy) and name in _GENERATOR_METHODS:  # gen.send(v): the body resumes from here
            running = receiver.items()
            if not isinstance(running, Resumable):
                return Opaque(f"{name} of an iterator that is not a generator")
            if name == "close":
                running.close()
                return NONE
            running.sent = first
            try:
                return next(running)
            except StopIteration:
                return Opaque("send to an exhausted generator raises StopIteration")
        if isinstance(receiver, Dict):
            items = receiver.items
            if name in ("pop", "popitem", "setdefault", "clear", "update", "move_to_end"):
                self.unsettled(receiver, name, first if name in ("pop", "move_to_end") else None)
            if name == "clear":
                items.clear()
                receiver.unsure = receiver.unsure if self.mult.exact != 1 else ""
                return NONE
            if name == "update":
                if isinstance(first, Known) and isinstance(first.obj, dict):
                    first = self.dict_of(first.obj)
                if args and not isinstance(first, Dict) or isinstance(first, Dict) and first.unsure:
                    receiver.unsure = receiver.unsure or f"update by a mapping it cannot read{self.where()}"
                items.update(first.items if isinstance(first, Dict) else {})
                items.update(kwargs)
                return NONE
            if name == "copy":
                return Dict(dict(items), receiver.kind, receiver.unsure)
            if receiver.unsure:
                return Opaque(f"{name} of a dict whose items are not known ({receiver.unsure})")
            if name == "get":
                return items.get(key, args[1] if len(args) > 1 else NONE) if isinstance(first, Known) else Opaque("get")
            if name == "pop":
                default = args[1] if len(args) > 1 else Opaque(f"missing key {key!r}")
                return items.pop(key, default)
            if name == "setdefault":
                return items.setdefault(key, args[1] if len(args) > 1 else NONE)
            if name in ("popitem", "move_to_end") and receiver.listable:
                last = kwargs.get("last", args[-1] if len(args) == 2 - (name == "popitem") else TRUE)
                if isinstance(last, Known):
                    return self.reordered(receiver, name, key, bool(last.obj))
            if name in ("keys", "values", "items"):
                if not receiver.listable:
                    return Opaque(f"{name} of a dict with keys it does not know")
                listed: dict[str, list[Value]] = {
                    "keys": [Known(k) for k in items], "values": list(items.values()),
                    "items": [Seq([Known(k), v]) for k, v in items.items()]}
                return Seq(listed[name], list)
        if isinstance(receiver, Seq):
            if receiver.table is not None:
                changed = sets.method(self, receiver, name, args, kwargs)
                if changed is not None:
                    return changed
            if name in ("append", "extend", "insert", "pop", "remove", "clear", "add"):
                self.unsettled(receiver, name)
            if name == "add" and receiver.kind is set and not receiver.unsure:
                grown = self.as_set([*receiver.items, first], None)
                receiver.items, receiver.unsure, receiver.table = grown.items, grown.unsure, grown.table
                return NONE
            if name == "append":
                receiver.items.append(first)
                return NONE
            if name == "extend":
                more = self.unpack(first, None)
                if more is None:
                    receiver.unsure = receiver.unsure or f"extend by items it cannot list{self.where()}"
                receiver.items.extend(more or [])
                return NONE
            if name == "insert" and len(args) == 2 and isinstance(first, Known):
                receiver.items.insert(first.obj, args[1])
                return NONE
            if name == "pop" and receiver.items and not receiver.unsure:
                return receiver.items.pop(key if isinstance(key, int) else -1)
            if name == "copy":
                return Seq(list(receiver.items), receiver.kind)
            if name == "clear":
                receiver.items.clear()
                receiver.unsure = receiver.unsure if self.mult.exact != 1 else ""
                return NONE
            if name == "sort" and not receiver.unsure:
                sort_in_place(self, receiver, kwargs)
                return NONE
            if name == "reverse" and not receiver.unsure:
                receiver.items.reverse()
                return NONE
            fields = getattr(receiver.kind, "_fields", None)
            if name == "_replace" and fields is not None and not args and not receiver.unsure \
                    and set(kwargs) <= set(fields):  # a named tuple's copy with fields replaced
                return Seq([kwargs.get(field, item) for field, item in zip(fields, receiver.items)], receiver.kind)
            if name == "_asdict" and fields is not None and not args and not kwargs and not receiver.unsure:
                return Dict(dict(zip(fields, receiver.items)))
            if name in ("index", "count"):
                ok, obj = concrete(receiver)
                return Known(getattr(obj, name)(first.obj)) if ok and isinstance(first, Known) else Opaque(name, Nature.NUMBER)
        if isinstance(receiver, (Seq, Dict)) and name in MUTATORS and not receiver.unsure:
            receiver.unsure = f"{name}, which the prediction does not model{self.where()}"
        return Opaque(f"method {name} of a container", Nature.ANY)

    def reordered(self, receiver: Dict, name: str, key: Any, last: bool) -> Value:
        """``d.popitem()`` (an ``OrderedDict``'s from either end) or ``od.move_to_end(key, last)``
        of a dict whose keys are known: its items, reordered as Python reorders them."""
        items = receiver.items
        if name == "popitem":
            if not items:
                self.stops(f"popitem of an empty dict raises KeyError{self.where()}", KeyError)
                return Opaque("popitem of an empty dict")
            popped = next(reversed(items)) if last else next(iter(items))
            return Seq([Known(popped), items.pop(popped)])
        if key not in items:
            self.stops(f"move_to_end of {key!r}, a key it does not hold, raises KeyError{self.where()}", KeyError)
            return NONE
        value = items.pop(key)
        if last:
            items[key] = value
        else:  # first: the key, then the others in their order
            rest = dict(items)
            items.clear()
            items[key] = value
            items.update(rest)
        return NONE

    # -- handlers ----------------------------------------------------------------------------

    def b_len(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        if not args or isinstance(args[0], (Known, Lazy)):
            return None  # concrete: called for real
        length = class_attr(args[0].cls, "__len__") if isinstance(args[0], Instance) else None
        if isinstance(length, types.FunctionType):  # len() calls __len__, it iterates nothing
            return self.call(self.wrap(length), [args[0]], {})
        if isinstance(args[0], Tensor):  # its first dimension: no op, nothing iterated
            try:
                return Known(len(args[0].described)) if args[0].described is not None else None
            except TypeError:  # a 0-d tensor: len raises
                return None
        if isinstance(args[0], (Union, Opaque)):
            return None  # len() iterates nothing
        items = self.iterate(args[0])
        if items is not None:
            return Known(len(list(items)))
        return None

    def b_isinstance(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        if len(args) != 2 or not isinstance(args[1], (Known, Seq)):
            return None
        ok, classes = concrete(args[1])
        if not ok:
            return None
        subject = args[0]
        kind = type_of(subject, self.host.tensor_type)
        if isinstance(subject, Opaque) and subject.kind is Nature.NUMBER and isinstance(classes, type) \
                and issubclass(classes, self.host.tensor_type):
            return FALSE  # known not to be a tensor
        if kind is None:
            if isinstance(subject, Union):
                answers = {self.b_isinstance([o, args[1]], {}).obj for o in subject.options  # type: ignore[union-attr]
                           if type_of(o, self.host.tensor_type) is not None}
                if len(answers) == 1 and all(type_of(o, self.host.tensor_type) is not None for o in subject.options):
                    return Known(answers.pop())
            return Opaque("isinstance of an unknown value", Nature.NUMBER)
        try:
            return Known(issubclass(kind, classes))
        except TypeError:
            return None

    def b_type(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        """``type(x)``: known where ``x``'s type is; else unknown, but no code of the program
        runs in it (not a gap)."""
        if len(args) != 1 or kwargs:
            return None
        kind = type_of(args[0], self.host.tensor_type)
        return Known(kind) if kind is not None else Opaque(f"the type of a value the prediction lost track of{self.where()}",
                                                                Nature.NUMBER)  # a class, not a tensor

    def b_callable(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        """``callable(x)``: whether ``x``'s class defines ``__call__`` (a tensor's does not), where
        its class is known; a bound method or a partial is callable."""
        if len(args) != 1 or kwargs:
            return None
        if isinstance(args[0], (Bound, Partial)):
            return TRUE
        kind = type_of(args[0], self.host.tensor_type)
        return None if kind is None else Known(any("__call__" in vars(k) for k in kind.__mro__))

    def b_object_new(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        """``object.__new__(cls)`` (a ``__new__`` in Python calling ``super().__new__(cls)``) of
        a plain Python class: a new object the run follows, ``__init__`` not yet run."""
        cls = args[0].obj if len(args) == 1 and isinstance(args[0], Known) else None
        if not isinstance(cls, type) or self.host.is_module_class(cls) or issubclass(cls, self.host.tensor_type):
            return None
        try:
            object.__new__(cls)  # the layouts allow it (not a dict's or a tuple's subclass)
        except TypeError:
            return None
        return Instance(cls)

    def b_object_init(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        """``object.__init__(obj)`` of an object the run built (``super().__init__()`` up to
        ``object``): sets nothing."""
        return NONE if len(args) == 1 and not kwargs and isinstance(args[0], Instance) else None

    def b_getattr(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        if len(args) < 2 or not isinstance(args[1], Known):
            return None
        value = self.attribute(args[0], args[1].obj)
        if isinstance(value, Opaque) and self.lacks(args[0], args[1].obj):
            if len(args) > 2:
                return args[2]
            self.stops(f"getattr of {args[1].obj!r} raises AttributeError{self.where()}", AttributeError)
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
            ok, owner = concrete(args[0])
            receiver = args[1] if len(args) > 1 else NONE
            return Known(SuperRef(owner, receiver)) if ok else None
        if frame is None or frame.owner is None:
            return None
        spec = frame.node.args  # type: ignore[attr-defined]
        names = [a.arg for a in (*spec.posonlyargs, *spec.args)]
        receiver = frame.locals.get(names[0], NONE) if names else NONE
        return Known(SuperRef(frame.owner, receiver))

    def b_sequence(self, kind: type) -> Handler:
        def build(args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
            if not args:
                return Seq([], kind)
            if isinstance(args[0], Known):
                return None  # concrete: called for real
            items = self.unpack(args[0], None)
            return Seq(items, kind) if items is not None else Opaque(f"{kind.__name__} of unknown items")
        return build

    def b_set(self, args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
        if args and concrete(args[0])[0]:
            return None  # called for real (a set's table is copied as the code copies it)
        items = self.unpack(args[0], None) if args else []
        return self.as_set(items, None) if items is not None else Opaque("set of unknown items")

    def b_set_method(self, name: str) -> Handler:
        """``set.name(s, ...)`` (``set.update(s, more)``) of a set the run follows by its table."""
        def call(args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
            if args and isinstance(args[0], Seq) and args[0].table is not None:
                return self.container_method(name, args[0], args[1:], kwargs)
            return None
        return call

    def b_mapping(self, kind: type) -> Handler:
        """``dict(...)`` or ``OrderedDict(...)`` of a dict built by the code, or of keywords."""
        def build(args: list[Value], kwargs: dict) -> Optional[Value]:
            if args and isinstance(args[0], Dict):
                return Dict({**args[0].items, **kwargs}, kind, args[0].unsure)
            if not args:
                return Dict(dict(kwargs), kind)
            if isinstance(args[0], Known):
                return None
            pairs = self.unpack(args[0], None)  # an iterable of pairs (zip of keys and a map)
            if pairs is None:
                return Opaque(f"{kind.__name__} of unknown items")
            out = Dict({}, kind)
            for pair in pairs:
                key_value = self.unpack(pair, 2)
                if key_value is None or len(key_value) != 2:
                    return Opaque(f"{kind.__name__} of unknown items")
                key, value = key_value
                out.items[key.obj if isinstance(key, Known) and hashable(key.obj) else object()] = value
            out.items.update(kwargs)
            return out
        return build

    def b_reversed(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        if args and isinstance(args[0], Known) and type(args[0].obj) in (range, tuple) \
                and len(args[0].obj) <= MAX_UNROLL:  # immutable: its items now are the ones iterated
            return Seq([self.wrap(item) for item in reversed(args[0].obj)], list)
        if not args or isinstance(args[0], Known) and not self.host.is_module(args[0].obj):  # a ModuleList: listed
            return None
        if isinstance(args[0], Tensor):  # the tensor type's __reversed__ (a flip), at the reversed(...) call
            return self.tensor_special("__reversed__", args)
        items = self.unpack(args[0], None)
        return Seq(list(reversed(items)), list) if items is not None else Opaque("reversed of unknown items")

    def b_iter(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        if len(args) != 1 or isinstance(args[0], Known) and not self.host.is_module(args[0].obj):
            return None  # a live object: iterated for real (a module's __iter__ is read, as a for loop does)
        value = args[0]
        if isinstance(value, Lazy):  # an iterator's iter() is itself
            return value
        if isinstance(value, TensorTuple) and value.count is None:
            return Opaque("an iterator over outputs whose number is not static")
        items = self.iterate(value)  # now, at the iter(...) call (a tensor's __iter__ runs here)
        return Opaque("an iterator over items it cannot list") if items is None else Lazy(lambda: items, "iter")

    def b_next(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        """``next(it[, default])`` of an iterator the run made: its next item (a generator runs
        to its next ``yield`` from the ``next(...)`` call)."""
        if not args or not isinstance(args[0], Lazy):
            return Opaque("next of an iterator")
        iterator, options = args[0].items(), cast(list[Value], [])
        while True:  # an item a filter the data decides may not come: the next one may, 0..1 times
            try:
                item, sure = self.pull(iterator, bool(options))
            except StopIteration:
                if len(args) > 1:
                    options.append(args[1])
                    break
                if not options:  # exhausted for sure: a try around it sees StopIteration raised here
                    self.unwind(Signal(Exit.RAISE, error=StopIteration, site=f"StopIteration raised{self.where()}"))
                options.append(Opaque("next of an exhausted iterator raises StopIteration"))
                break
            options.append(item)
            if sure:
                break
        return options[0] if len(options) == 1 else join(options)

    def pull(self, items: Iterator[Value], after_undecided: bool) -> tuple[Value, bool]:
        """The next item of an iterator a builtin consumes until an item decides it (``any``,
        ``all``, ``next``; raises ``StopIteration`` at its end), and whether the iterator gives it
        for sure (not when a filter the data decides may skip it). ``after_undecided``: an earlier
        item did not decide the builtin, so what the iterator runs for this one runs 0..1 times."""
        base, start = self.mult, len(self.events)
        try:
            item = next(items)
        finally:
            sure = self.mult is base  # the iterator yields under a count of its own: maybe not at all
            self.mult = base
        if after_undecided:
            for event in self.events[start:]:
                event.count = event.count * MAYBE
        return item, sure

    def b_print(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        return NONE

    def b_all_any(self, want: bool) -> Handler:
        def decide(args: list[Value], kwargs: dict[str, Value]) -> Optional[Value]:
            if not args or isinstance(args[0], Known):
                return None
            items = self.iterate(args[0])
            if items is None:
                return Opaque("any/all of unknown items", Nature.NUMBER)
            unknown = False  # an item may have decided it: what the iterator runs after runs 0..1 times
            while True:
                try:
                    item, sure = self.pull(items, unknown)
                except StopIteration:
                    break
                known = self.truth_of(item, None)
                if known is want and sure:
                    return Known(want)
                unknown = unknown or known is not (not want)
            return Opaque("any/all undecided", Nature.NUMBER) if unknown else Known(not want)
        return decide

    def b_wraps(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        """``functools.wraps(f)``: a decorator that returns the wrapper itself."""
        return Known(keep)

    def b_partial(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        return Partial(args[0], list(args[1:]), dict(kwargs)) if args else None

    def b_deepcopy(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        """``copy.deepcopy`` of an object built from ``__init__``: a distinct object, same shape."""
        if not args or not isinstance(args[0], Instance):
            return None
        memo: dict[int, Value] = {}

        def clone(value: Value) -> Value:
            if isinstance(value, Seq):  # a set is rebuilt from its items, in its order (set(list(s)))
                return Seq([clone(v) for v in value.items], value.kind, value.unsure) if value.table is None else \
                    sets.made(self, set(list(value.table)), {o: clone(v) for o, v in zip(value.table, value.items)})
            if isinstance(value, Dict):
                return Dict({k: clone(v) for k, v in value.items.items()}, value.kind, value.unsure)
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
        return self.tensor_special("__abs__", args) if len(args) == 1 and isinstance(args[0], Tensor) else None

    def b_pow(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        """``pow(a, b)`` (or ``pow(a, b, None)``) with a tensor among ``a``, ``b``: ``a ** b``,
        from C at the ``pow(...)`` call (a modulus other than ``None`` makes torch raise)."""
        if kwargs or len(args) not in (2, 3) or not any(isinstance(a, Tensor) for a in args[:2]) \
                or len(args) == 3 and not (isinstance(args[2], Known) and args[2].obj is None):
            return None
        return self.binop("pow", args[0], args[1], None, frozenset())

    def tensor_special(self, name: str, args: list[Value]) -> Optional[Value]:
        """The tensor type's special method ``name`` called from C on ``args`` at the current place."""
        kind, member = self.host.tensor_attribute(name)
        return self.call(self.wrap(member), list(args), {}) if kind is Member.METHOD else None

    def b_eval(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        """``eval``/``exec`` of a string: code made at run time, which the prediction does not read."""
        self.gap(f"eval/exec of a string{self.where()}: code built at run time is not read")
        return Opaque("the result of eval/exec")

    def b_keep(self, args: list[Value], kwargs: dict) -> Optional[Value]:
        return args[0] if args else NONE



def init_owner(cls: type, init: Any) -> type:
    """The class in ``cls``'s MRO that defines ``init``."""
    for klass in cls.__mro__:
        if vars(klass).get("__init__") is init:
            return klass
    return cls


def _as_is(value: Value) -> Value:
    """A default of a function the code defined: already a value."""
    return value


def _lookup(scopes: list[dict[str, Value]], name: str) -> Optional[Value]:
    for scope in scopes:
        if name in scope:
            return scope[name]
    return None


def _name(obj: Any) -> str:
    return str(getattr(obj, "__qualname__", None) or getattr(type(obj), "__qualname__", type(obj).__name__))


def _one_of(errors: list[type | tuple[type, ...] | None]) -> type | tuple[type, ...] | None:
    """The class of an exception raised by one of several arms whose classes are ``errors``:
    the one class, the classes it is one of, or ``None`` where an arm's is not known."""
    classes: dict[type, None] = {}
    for error in errors:
        if error is None:
            return None
        classes.update(dict.fromkeys(_classes(error)))
    return next(iter(classes)) if len(classes) == 1 else tuple(classes)


def _classes(error: type | tuple[type, ...]) -> tuple[type, ...]:
    """The classes a raise's :attr:`Signal.error` says it is one of."""
    return error if isinstance(error, tuple) else (error,)


def _error_class(error: str) -> Optional[type]:
    """The builtin exception class an error's text names (``"IndexError: ..."``), if any."""
    cls = getattr(builtins, error.split(":", 1)[0].strip(), None)
    return cls if isinstance(cls, type) and issubclass(cls, BaseException) else None


def _raised(exc: ast.expr) -> str:
    """``ValueError('You must specify input_ids')`` from a ``raise`` statement's expression."""
    if isinstance(exc, ast.Call) and exc.args and isinstance(exc.args[0], ast.Constant) \
            and isinstance(exc.args[0].value, str):
        message = exc.args[0].value if len(exc.args[0].value) <= 120 else exc.args[0].value[:117] + "..."
        return f"{source_text(exc.func)}({message!r})"
    return source_text(exc)


def _delegation_place(code: CodeType, node: ast.YieldFrom) -> Optional[Place]:
    """The instruction a ``yield from`` suspends at (``SEND`` on 3.11+, ``YIELD_FROM`` on 3.10):
    no syntax node owns it, so it is found by the expression's position (its line on 3.10,
    whose instructions carry no columns)."""
    line = None
    for instr in dis.get_instructions(code):
        if sys.version_info < (3, 11) and instr.starts_line is not None:
            line = instr.starts_line
        if instr.opname not in ("SEND", "YIELD_FROM"):
            continue
        if sys.version_info >= (3, 11):
            pos = instr.positions
            if pos is not None and pos.lineno == node.lineno and (
                    pos.col_offset is None or pos.col_offset == node.col_offset):
                return instruction_place(code, instr.offset)
        elif line == node.lineno:
            return instruction_place(code, instr.offset)
    return None


def _numbers(value: Value) -> bool:
    """Whether ``value`` is a number, or a list or tuple of numbers (a builtin of them gives no tensor)."""
    if isinstance(value, Seq):
        return not value.unsure and all(_numbers(v) for v in value.items)
    if isinstance(value, Known):
        return type(value.obj) in (int, float, bool, complex) or isinstance(value.obj, (list, tuple)) and all(
            type(v) in (int, float, bool, complex) for v in value.obj)
    return isinstance(value, Opaque) and value.kind is Nature.NUMBER


def _numberish(value: Value) -> bool:
    """Whether ``value`` is certainly not a tensor (an operator on it runs no op)."""
    if isinstance(value, Union):
        return all(_numberish(v) for v in value.options)
    return isinstance(value, Known) or isinstance(value, Opaque) and value.kind is Nature.NUMBER


#: The comparison operators, by dunder stem.
COMPARED = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})


def _container(value: Value) -> bool:
    """A list, tuple or dict the code built, or one a live object holds (compared for real by
    :func:`_compared` when every item is a plain value)."""
    return isinstance(value, (Seq, Dict)) or isinstance(value, Known) and type(value.obj) in (list, tuple, dict)


def _compared(op: str, left: Value, right: Value) -> Optional[Known]:
    """A comparison of lists, tuples or dicts the code built or a live object holds, when both
    sides are fully known and hold only plain values (no ``__eq__`` of the program's runs)."""
    sides = [concrete(left), concrete(right)]
    if not all(ok and _plain_deep(obj) for ok, obj in sides):
        return None
    try:
        return Known(CONCRETE[op](sides[0][1], sides[1][1]))
    except TypeError:  # the program would raise here (``[1] < {}``); we only predict
        return None


def _plain_deep(obj: Any) -> bool:
    if type(obj) in (list, tuple):
        return all(_plain_deep(item) for item in obj)
    if type(obj) is dict:
        return all(_plain_deep(key) and _plain_deep(value) for key, value in obj.items())
    return type(obj) in (int, float, complex, str, bytes, bool, type(None))


def _live_dict(value: Value) -> bool:
    return type(value) is Known and type(value.obj) in (dict, collections.OrderedDict)


def _concatenated(left: Value, right: Value) -> Optional[Value]:
    """``left + right`` where one is a tuple or list the code built and the other one it built
    or read (a shape): for real when both are fully known, else item by item (a named tuple's
    ``+`` gives a plain tuple); ``None`` when it is not that."""
    def listed(value: Value) -> Value:
        if isinstance(value, Known) and isinstance(value.obj, (tuple, list)):
            return Seq([Known(v) for v in value.obj], tuple if isinstance(value.obj, tuple) else list)
        return value

    seq_left, seq_right = listed(left), listed(right)
    if not (isinstance(seq_left, Seq) and isinstance(seq_right, Seq)):
        return None
    ok_left, plain_left = concrete(left)
    ok_right, plain_right = concrete(right)
    if ok_left and ok_right:
        try:
            return Known(plain_left + plain_right)
        except TypeError:  # the program raises here
            return None
    kind = seq_left.kind if seq_left.kind in (tuple, list) else tuple if issubclass(seq_left.kind, tuple) else list
    return Seq(seq_left.items + seq_right.items, kind, seq_left.unsure or seq_right.unsure)


def _operands(node: Optional[ast.AST]) -> tuple[Optional[ast.AST], Optional[ast.AST]]:
    """The left and right operand expressions of an operator's node, where it has them."""
    if isinstance(node, ast.BinOp):
        return node.left, node.right
    if isinstance(node, ast.AugAssign):
        return node.target, node.value
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return node.left, node.comparators[0]
    return None, None


def _reads_plainly(host: Host, class_attrs: Callable[[type, str], Any], specials: Specials, cls: type,
                   name: str) -> bool:
    """Whether :meth:`Interpreter.python_read` runs nothing for any instance of ``cls`` (a
    descriptor's getter that an instance's own dict may hide counts as run); ``class_attrs`` and
    ``specials``: the run's."""
    if cls is SuperRef or _python_class_of(cls) is not None and specials(cls, "__getattr__") is not None:
        return False
    if issubclass(cls, type):
        return True
    static = class_attrs(cls, name)
    if isinstance(static, property) and inspect.isfunction(static.fget):
        return False
    return not host.is_module_class(cls) or Interpreter.descriptor_get(static, name, {}) is None


def _modelled(fn: types.FunctionType) -> bool:
    """Whether :meth:`Interpreter.call_builtin` or a named tuple's ``__new__`` may model a
    Python function, depending on its arguments (besides the run's own handlers)."""
    return fn in _BUILTIN_SPECIALS or fn in READS or is_pure(fn) or is_tuple_new(fn)


def _python_class(value: Value) -> Optional[type]:
    """The class of an object the code built or read whose special methods may be Python code
    that runs ops: not a plain value, container or class, nor one of torch's own (tensors,
    modules and their containers: their special methods run no op the prediction misses)."""
    if isinstance(value, Known):
        cls = type(value.obj)  # what CPython looks special methods up on (not ``__class__``)
        return None if cls in _PLAIN_CLASSES else _python_class_of(cls)
    if isinstance(value, Instance):
        return _program_class(value.cls)
    return None


def _python_class_of(cls: type) -> Optional[type]:
    """:func:`_python_class` of a live object of class ``cls``."""
    return None if issubclass(cls, _NOT_PROGRAM) else _program_class(cls)


def _program_class(cls: type) -> Optional[type]:
    """``cls``, unless it is torch's own: their special methods run no op."""
    return None if cls.__module__.partition(".")[0] == "torch" else cls


#: Objects whose class is never the program's: plain values, containers and classes.
_NOT_PROGRAM = (*PLAIN, list, dict, set, type)
#: The same classes for an exact lookup (no call) before the subclass test.
_PLAIN_CLASSES = frozenset(_NOT_PROGRAM)


def _enclosing_instruction(code: types.CodeType, node: ast.AST, opnames: frozenset) -> Optional[int]:
    """The offset of the instruction among ``opnames`` whose source span is the smallest that
    holds ``node``'s (the only one on its line when the interpreter gives no spans)."""
    span = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
    best: Optional[tuple[tuple, int]] = None
    on_line: Optional[int] = None
    for ins in _instructions(code):
        if ins.opname not in opnames:
            continue
        where = getattr(ins, "positions", None)
        if where is None or where.lineno is None:  # 3.10: the only one on the node's line
            if _line_of(code, ins.offset) == span[0]:
                if on_line is not None:
                    return None  # several: which one is not known
                on_line = ins.offset
            continue
        if (where.lineno, where.col_offset) <= span[:2] and (where.end_lineno, where.end_col_offset) >= span[2:]:
            size = (where.end_lineno - where.lineno, where.end_col_offset - where.col_offset)
            if best is None or size < best[0]:
                best = (size, ins.offset)
    return on_line if best is None else best[1]


def _instructions(code: types.CodeType) -> tuple[dis.Instruction, ...]:
    """``code``'s instructions, read once per code: a code object is immutable, and equal codes
    with equal line tables have equal instructions and positions (equality compares their
    bytecode, constants and names, and from 3.11 their position tables; 3.10 does not)."""
    return _read_instructions(code, code.co_linetable)


@functools.lru_cache(maxsize=1024)
def _read_instructions(code: types.CodeType, linetable: bytes) -> tuple[dis.Instruction, ...]:
    return tuple(dis.get_instructions(code))


def _line_of(code: types.CodeType, offset: int) -> Optional[int]:
    return next((line for start, end, line in code.co_lines() if start <= offset < end), None)


#: A run's answers of :func:`_special_method` (:attr:`Interpreter.specials`).
Specials = Callable[[type, str], Optional[types.FunctionType]]


def _python_method(value: Value, name: str, specials: Optional[Specials] = None) -> Optional[types.FunctionType]:
    """The special method ``name`` of ``value``'s class (see :func:`_python_class`) when it is
    Python code of the program's (:func:`_special_method`); ``specials``: a run's answers
    (:attr:`Interpreter.specials`)."""
    cls = _python_class(value)
    if cls is None:
        return None
    return _special_method(cls, name) if specials is None else specials(cls, name)


def _special_method(cls: type, name: str) -> Optional[types.FunctionType]:
    """``cls``'s attribute ``name`` when it is a Python function, not torch's (a subclass of a
    torch class inherits them)."""
    method = class_attr(cls, name)
    if not isinstance(method, types.FunctionType) or (method.__module__ or "").partition(".")[0] == "torch":
        return None
    return method


def _python_special(value: Value, names: tuple[str, ...], specials: Optional[Specials] = None) -> Optional[str]:
    """The first of ``names`` whose special method ``value``'s class defines in Python (see
    :func:`_python_method`): the one CPython calls where it tries them in this order."""
    cls = _python_class(value)
    if cls is None:
        return None
    read = _special_method if specials is None else specials
    for name in names:
        if read(cls, name) is not None:
            return name
    return None


def _iterates_in_python(value: Value) -> bool:
    """Whether iterating ``value`` runs Python code of its class (``__iter__`` or ``__getitem__``)."""
    return _python_special(value, ("__iter__", "__getitem__")) is not None


def _by_identity(obj: Any) -> bool:
    """Whether ``==`` on ``obj`` is identity (functions, classes, modules, plain objects)."""
    return isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type)) or \
        type(obj).__eq__ is object.__eq__


def _no_place(frame: Frame) -> str:
    """Why a chain through ``frame`` is not known."""
    return f"no place for a call in {frame.code.co_name} ({frame.code.co_filename})"


def _short(filename: str) -> str:
    return os.path.basename(filename)


def _stale(code: CodeType, qualname: str, src: SourceFile, node: ast.AST) -> str:
    """Why the source read for ``code`` no longer gives its positions (the file edited after the
    import, the bytecode the same), or empty where it does."""
    fresh = src.codes.get(id(node))
    if fresh is None or fresh.co_linetable == code.co_linetable:
        return ""
    return (f"the source of {qualname} ({_short(code.co_filename)}:{code.co_firstlineno}) "
            "changed after it was imported (same bytecode, other positions); reload the module")


def _always_raises(block: list[ast.stmt]) -> bool:
    """An arm that can only raise (argument checks): the prediction takes it as not run."""
    return bool(block) and isinstance(block[-1], ast.Raise) and not any(
        isinstance(n, (ast.Return, ast.Break, ast.Continue)) for stmt in block for n in ast.walk(stmt))


#: What evaluates an expression node, ``run(interpreter, node) -> Value``, or runs a statement,
#: ``-> Optional[Signal]`` (see :func:`_runner`).
Run = Callable[["Interpreter", Any], Any]


def _runner(node: ast.AST) -> Run:
    """What evaluates or runs ``node``, made on its first run and kept on it (``tl_run``; a source
    read again is parsed into new nodes): the most frequent kinds are compiled into closures
    that hold their parts and run their operands' runners directly (no dispatch on the node's
    class, no read of its fields); the others are the visitor method ``eval_<Node>`` or
    ``exec_<Node>``."""
    compile_ = _COMPILED.get(type(node))
    if compile_ is not None:
        run = compile_(node)
    elif isinstance(node, ast.stmt):
        run = getattr(Interpreter, "exec_" + type(node).__name__, Interpreter.no_exec)
    else:
        run = getattr(Interpreter, "eval_" + type(node).__name__, Interpreter.no_eval)
    node.tl_run = run  # type: ignore[attr-defined]
    return run


def _compile_name(node: ast.Name) -> Run:
    name = node.id

    def run(interpreter: Interpreter, _: Any) -> Value:
        stack = interpreter.stack  # a local of the innermost frame (most names): read here, no call
        if stack and not interpreter.views:
            top = stack[-1]
            if type(top) is Frame:
                local = top.locals
                if name in local:
                    return local[name]
        return interpreter.lookup(name)
    return run


def _compile_constant(node: ast.Constant) -> Run:
    known = Known(node.value)  # one for the node: a value is never written into, and a constant is
    return lambda interpreter, _: known  # immutable (no run tells two evaluations apart by identity)


def _compile_attribute(node: ast.Attribute) -> Run:
    owner, name = node.value, node.attr
    get = _runner_of(owner)

    def run(interpreter: Interpreter, node: Any) -> Value:
        value = get(interpreter, owner)
        if type(value) is Known and not interpreter.views and type(value.obj) not in LIVE_CONTAINERS:
            return interpreter.known_attribute(value.obj, name, node)  # what attribute() does with it, one call less
        return interpreter.attribute(value, name, node)
    return run


def _compile_call(node: ast.Call) -> Run:
    """A call whose arguments are each one value (``*`` and ``**`` ones: :meth:`Interpreter.eval_Call`)."""
    if any(isinstance(arg, ast.Starred) for arg in node.args) or any(k.arg is None for k in node.keywords):
        return Interpreter.eval_Call
    func = node.func
    get = _runner_of(func)
    args = [(_runner_of(arg), arg) for arg in node.args]
    keywords = [(cast(str, k.arg), _runner_of(k.value), k.value) for k in node.keywords]

    placed: list[Any] = [None, None]  # (the file it was found in, the call's place there): as call_place()

    def run(interpreter: Interpreter, node: Any) -> Value:
        fn = get(interpreter, func)
        values = []  # (loops: a comprehension is one more call)
        for arg, arg_node in args:
            values.append(arg(interpreter, arg_node))
        kwargs = {}
        for name, value, value_node in keywords:
            kwargs[name] = value(interpreter, value_node)
        stack = interpreter.stack
        frame = stack[-1] if stack and type(stack[-1]) is Frame else interpreter.frame
        if frame is not None:
            source = frame.source
            if placed[0] is not source:
                placed[0], placed[1] = source, source.place(node, CALL_OPS)
            frame.at = placed[1]
        return interpreter.call(fn, values, kwargs)
    return run


def _compile_binop(node: ast.BinOp) -> Run:
    left_node, right_node, op = node.left, node.right, BINOPS[type(node.op)]
    left, right = _runner_of(left_node), _runner_of(right_node)

    def run(interpreter: Interpreter, node: Any) -> Value:
        return interpreter.binop(op, left(interpreter, left_node), right(interpreter, right_node), node, BINARY)
    return run


def _compile_unary(node: ast.UnaryOp) -> Run:
    operand_node = node.operand
    if isinstance(node.op, ast.Not):  # a bool, decided when its operand's truth is
        def negation(interpreter: Interpreter, _: Any) -> Value:
            known = interpreter.operand(operand_node)[1]
            return Opaque("not of an unknown value", Nature.NUMBER) if known is None else Known(not known)
        return negation
    stem, compute = UNARY[type(node.op)]
    if isinstance(operand_node, ast.Constant) and type(operand_node.value) in (int, float, complex):
        folded = Known(compute(operand_node.value))  # -1: what unary() makes of it, made once (as CPython folds it)
        return lambda interpreter, _: folded
    operand = _runner_of(operand_node)

    def run(interpreter: Interpreter, node: Any) -> Value:
        return interpreter.unary(stem, operand(interpreter, operand_node), node, compute)
    return run


def _compile_compare(node: ast.Compare) -> Run:
    """A comparison of two operands (most; chained ones: :meth:`Interpreter.eval_Compare`): its
    value, whose truth Python does not take here."""
    if len(node.ops) != 1:
        return Interpreter.eval_Compare
    left_node, op, right_node = node.left, node.ops[0], node.comparators[0]
    left, right = _runner_of(left_node), _runner_of(right_node)
    if isinstance(right_node, ast.Constant):  # (x is None, x == 0): its value, no call for it
        constant = Known(right_node.value)  # (one for the node, as _compile_constant makes)

        def against_constant(interpreter: Interpreter, node: Any) -> Value:
            return interpreter.compare(op, left(interpreter, left_node), constant, node)
        return against_constant

    def run(interpreter: Interpreter, node: Any) -> Value:
        return interpreter.compare(op, left(interpreter, left_node), right(interpreter, right_node), node)
    return run


def _compile_display(node: ast.Tuple | ast.List) -> Run:
    """A tuple or list display without ``*`` items (those: :meth:`Interpreter.display`)."""
    kind = tuple if isinstance(node, ast.Tuple) else list
    if any(isinstance(elt, ast.Starred) for elt in node.elts):
        return Interpreter.eval_Tuple if kind is tuple else Interpreter.eval_List
    elements = [(_runner_of(elt), elt) for elt in node.elts]

    def run(interpreter: Interpreter, node: Any) -> Value:
        items = []
        for element, element_node in elements:
            items.append(element(interpreter, element_node))
        # by identity: values compare so; (most often none: no call)
        return interpreter.displayed(items, kind, node) if UNLISTED in items else Seq(items, kind)
    return run


def _compile_subscript(node: ast.Subscript) -> Run:
    value_node, index_node = node.value, node.slice
    value, index = _runner_of(value_node), _runner_of(index_node)

    def run(interpreter: Interpreter, node: Any) -> Value:
        return interpreter.subscript(value(interpreter, value_node), index(interpreter, index_node), node)
    return run


def _compile_expr(node: ast.Expr) -> Run:
    value_node = node.value
    if isinstance(value_node, ast.Constant):  # a docstring: nothing to evaluate
        return lambda interpreter, _: None
    value = _runner_of(value_node)

    def run(interpreter: Interpreter, _: Any) -> None:
        value(interpreter, value_node)
    return run


def _compile_assign(node: ast.Assign) -> Run:
    value_node, targets = node.value, node.targets
    value = _runner_of(value_node)
    if len(targets) == 1 and isinstance(targets[0], ast.Name):  # (most): what assign() does with it
        name = targets[0].id

        def to_name(interpreter: Interpreter, _: Any) -> None:
            interpreter.bind_name(name, value(interpreter, value_node))
        return to_name

    def run(interpreter: Interpreter, _: Any) -> None:
        result = value(interpreter, value_node)
        for target in targets:
            interpreter.assign(target, result)
    return run


def _compile_return(node: ast.Return) -> Run:
    value_node = node.value
    if value_node is None:  # a signal is a frozen record: one serves every bare return
        returned = _new_signal(_RETURN, NONE)
        return lambda interpreter, _: returned
    value = _runner_of(value_node)
    return lambda interpreter, _: _new_signal(_RETURN, value(interpreter, value_node))


def _compile_if(node: ast.If) -> Run:
    test, body, orelse = node.test, node.body, node.orelse
    value = None if isinstance(test, ast.BoolOp) else _runner_of(test)

    def run(interpreter: Interpreter, _: Any) -> Optional[Signal]:
        # what condition() does: an and/or by its operands, else the truth of the test's value
        known = interpreter.condition(test) if value is None else interpreter.truth_of(value(interpreter, test), test)
        if known is True:
            return interpreter.exec_block(body)
        if known is False:
            return interpreter.exec_block(orelse)
        return interpreter.fork([body, orelse], interpreter.narrowed(test))
    return run


def _runner_of(node: ast.AST) -> Run:
    try:
        return node.tl_run  # type: ignore[attr-defined]
    except AttributeError:
        return _runner(node)


_COMPILED: dict[type, Callable[[Any], Run]] = {
    ast.Name: _compile_name, ast.Constant: _compile_constant, ast.Attribute: _compile_attribute,
    ast.Call: _compile_call, ast.BinOp: _compile_binop, ast.UnaryOp: _compile_unary, ast.Compare: _compile_compare,
    ast.Subscript: _compile_subscript, ast.Tuple: _compile_display, ast.List: _compile_display,
    ast.Expr: _compile_expr, ast.Assign: _compile_assign, ast.Return: _compile_return, ast.If: _compile_if}


class _Held:
    """A placeholder for an abstract value inside an object built for real."""

    __slots__ = ("value",)

    def __init__(self, value: Value) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"<held {type(self.value).__name__}>"


def rebound_names(body: list[ast.stmt]) -> list[str]:
    """Names a loop body assigns (outside nested functions and classes), in order, each once."""
    names: dict[str, None] = {}
    todo: list[ast.AST] = list(reversed(body))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names[node.id] = None
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(reversed(list(ast.iter_child_nodes(node))))
    return list(names)


def _counted(value: Value) -> bool:
    """Whether the items of ``value``, where the run lists them, are all its items (a tensor's
    rows from its shape, a display's items without a ``*`` it could not list, a live sized
    container): unpacking them into another number of targets raises."""
    if isinstance(value, TensorTuple):
        return value.count is not None
    if isinstance(value, Seq):
        return not value.unsure and all(item is not UNLISTED for item in value.items)
    if isinstance(value, Known):
        return isinstance(value.obj, (tuple, list, str, bytes, dict, range, set, frozenset)) \
            and not _iterates_in_python(value)
    return isinstance(value, (Tensor, Dict))


def runs_when_unpacked(value: Value) -> bool:
    """Whether unpacking ``value`` at once (``a, b = value``, ``*value`` in a display or a call)
    may run ops there: its ``__iter__`` (:func:`runs_on_iteration`), or a generator's (or a lazy
    builtin's callbacks) code, resumed by the instruction that unpacks it."""
    return runs_on_iteration(value) or isinstance(value, Lazy)


def runs_on_iteration(value: Value) -> bool:
    """Whether ``iter(value)`` may run ops or say why it cannot be followed (a tensor's
    ``__iter__``, the program's Python one, or a value the prediction lost track of): the place
    must be the ``GET_ITER``."""
    if isinstance(value, Union):
        return any(runs_on_iteration(option) for option in value.options)
    return isinstance(value, Tensor) or isinstance(value, Opaque) and value.kind is _ANY \
        or _iterates_in_python(value)
