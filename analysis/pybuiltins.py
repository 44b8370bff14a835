"""Python's operators and builtins as tables and pure functions, for the abstract run.

The interpreter (:mod:`torchlens.analysis.interpreter`) computes operators on concrete values
for real (:data:`CONCRETE`), calls pure builtins for real (:func:`is_pure`), and models the
builtins that call back into Python or consume iterables itself. The instruction sets here
say which instruction of a statement an op is reached through (``BINARY_OP``, ``COMPARE_OP``).
"""

from __future__ import annotations

import ast
import builtins
import collections
import math
import operator
import re
import types
from typing import Any, Callable

from .values import Known, Value

__all__ = ["BINOPS", "CONCRETE", "COMPARE", "MIRROR", "UNARY", "PLAIN", "BINARY", "SUBSCR_LOAD",
           "SUBSCR_STORE", "ATTR_LOAD", "COMPARE_OPS", "CONTAINS_OPS", "BOOL_OPS", "CONVERT_OPS", "FORMAT_OPS",
           "UNARY_OPS", "FOR_ITER", "GET_ITER", "UNPACK", "STAR_ITER", "WITH_ENTER", "MAX_UNROLL",
           "NUMERIC", "TENSOR_QUERIES", "ITERATING", "READS", "MUTATORS", "LIVE_CONTAINERS", "is_pure", "class_attr",
           "hashable", "keep"]

BINOPS: dict[type, str] = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.MatMult: "matmul", ast.Div: "truediv",
    ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift", ast.RShift: "rshift",
    ast.BitOr: "or", ast.BitXor: "xor", ast.BitAnd: "and"}
CONCRETE: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "matmul": operator.matmul,
    "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "lshift": operator.lshift, "rshift": operator.rshift, "or": operator.or_, "xor": operator.xor,
    "and": operator.and_, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "eq": operator.eq, "ne": operator.ne}
COMPARE: dict[type, str] = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
                            ast.NotEq: "ne"}
#: The comparison a reflected operand runs (``1 < x`` is ``x.__gt__(1)``).
MIRROR = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
UNARY: dict[type, tuple[str, Callable[[Any], Any]]] = {
    ast.USub: ("neg", operator.neg), ast.UAdd: ("pos", operator.pos), ast.Invert: ("invert", operator.invert)}
#: Plain types whose operators are safe to compute for real.
PLAIN = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset, range, slice)

#: Opnames of each kind of instruction an op can be reached through.
BINARY = frozenset({"BINARY_OP", "BINARY_ADD", "BINARY_SUBTRACT", "BINARY_MULTIPLY", "BINARY_MATRIX_MULTIPLY",
                    "BINARY_TRUE_DIVIDE", "BINARY_FLOOR_DIVIDE", "BINARY_MODULO", "BINARY_POWER",
                    "BINARY_LSHIFT", "BINARY_RSHIFT", "BINARY_OR", "BINARY_XOR", "BINARY_AND",
                    "INPLACE_ADD", "INPLACE_SUBTRACT", "INPLACE_MULTIPLY", "INPLACE_MATRIX_MULTIPLY",
                    "INPLACE_TRUE_DIVIDE", "INPLACE_FLOOR_DIVIDE", "INPLACE_MODULO", "INPLACE_POWER",
                    "INPLACE_LSHIFT", "INPLACE_RSHIFT", "INPLACE_OR", "INPLACE_XOR", "INPLACE_AND"})
SUBSCR_LOAD = frozenset({"BINARY_SUBSCR", "BINARY_SLICE"})
SUBSCR_STORE = frozenset({"STORE_SUBSCR", "STORE_SLICE"})
ATTR_LOAD = frozenset({"LOAD_ATTR", "LOAD_METHOD"})
COMPARE_OPS = frozenset({"COMPARE_OP"})
CONTAINS_OPS = frozenset({"CONTAINS_OP"})
#: Instructions of an f-string's formatted value: the conversion (``!s``, ``!r``; 3.13 has its own)
#: and the formatting, 3.10-3.13.
CONVERT_OPS = frozenset({"CONVERT_VALUE", "FORMAT_VALUE"})
FORMAT_OPS = frozenset({"FORMAT_SIMPLE", "FORMAT_WITH_SPEC", "FORMAT_VALUE"})
#: Instructions that take a value's truth (where its ``__bool__`` or ``__len__`` runs), 3.10-3.13.
BOOL_OPS = frozenset({"TO_BOOL", "UNARY_NOT", "POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_FORWARD_IF_FALSE",
                      "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_TRUE",
                      "JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP"})
UNARY_OPS = frozenset({"UNARY_NEGATIVE", "UNARY_POSITIVE", "UNARY_INVERT"})
FOR_ITER = frozenset({"FOR_ITER"})
GET_ITER = frozenset({"GET_ITER"})
UNPACK = frozenset({"UNPACK_SEQUENCE", "UNPACK_EX"})
#: Where a ``*`` item of a display or call is iterated (each in order; a lone ``f(*x)``: the call).
STAR_ITER = frozenset({"LIST_EXTEND", "SET_UPDATE", "CALL_FUNCTION_EX"})
WITH_ENTER = frozenset({"BEFORE_WITH", "SETUP_WITH", "BEFORE_ASYNC_WITH", "SETUP_ASYNC_WITH"})

#: Concrete iterables longer than this are not unrolled (their loops get a count instead).
MAX_UNROLL = 4096
#: Builtins that are pure on concrete arguments: called for real.
_PURE = {builtins.len, builtins.isinstance, builtins.issubclass, builtins.hasattr, builtins.range,
         builtins.int, builtins.float, builtins.bool, builtins.str, builtins.abs, builtins.round,
         builtins.divmod, builtins.pow, builtins.repr, builtins.callable, builtins.tuple, builtins.frozenset,
         builtins.min, builtins.max, builtins.hash, builtins.slice, builtins.ord, builtins.chr, builtins.type,
         builtins.sorted, builtins.any, builtins.all, builtins.list, builtins.set, builtins.dict,
         builtins.format, builtins.id, builtins.bin, builtins.hex}
#: Pure builtins whose result is never a tensor, even on unknown arguments.
NUMERIC = frozenset({builtins.len, builtins.int, builtins.float, builtins.bool, builtins.round, builtins.id,
                     builtins.hash, builtins.repr, builtins.str, builtins.format})
PURE_MODULES = ("math", "operator", "_operator")
#: Functions of ``PURE_MODULES`` that, given a tensor, run none of its ops the capture records:
#: they read it as a number, a truth value, a length or an identity (the ``math`` ones not
#: listed in ``ITERATING`` take numbers; ``operator``'s other functions given a tensor call its
#: operators, which ``callbacks`` models or the prediction says it cannot).
TENSOR_QUERIES = frozenset({operator.not_, operator.truth, operator.is_, operator.is_not, operator.index,
                            operator.length_hint, operator.contains})
#: ``math`` functions that iterate an argument (a tensor's rows: its ``__iter__`` runs).
ITERATING = frozenset({math.fsum, math.prod, math.dist, *([math.sumprod] if hasattr(math, "sumprod") else [])})
#: Builtins that read their tensor arguments as plain Python values (a truth value, a number, an
#: index, a length, text), mapped to the read that may raise there (a tensor of several elements
#: taken as a number, a float tensor as an index, ``round`` of a tensor, which lacks ``__round__``):
#: ``None`` where it is the builtin itself on all its arguments, else a read of each tensor
#: (``math``'s functions take numbers through ``float``, their integer ones through ``__index__``).
READS: dict[Any, Any] = {
    **{fn: float for fn in vars(math).values() if isinstance(fn, types.BuiltinFunctionType) and fn not in ITERATING},
    **{fn: operator.index for fn in (math.factorial, math.gcd, math.lcm, math.comb, math.perm, math.isqrt)},
    **dict.fromkeys((builtins.bool, builtins.float, builtins.int, builtins.complex, builtins.len, builtins.round,
                     builtins.format, builtins.divmod, builtins.range, builtins.chr, builtins.bin, builtins.hex,
                     builtins.oct, operator.index, operator.truth, operator.not_, math.trunc))}
#: Methods of concrete builtin values that mutate them.
MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault",
                       "add", "discard", "sort", "reverse", "popitem", "__setitem__", "__delitem__",
                       "write", "send", "close", "difference_update", "intersection_update",
                       "symmetric_difference_update"})
#: Live containers the prediction copies on the code's first write into one (see
#: ``Interpreter.written``), with the mutating methods it models on its copy.
LIVE_CONTAINERS: dict[type, frozenset] = {
    dict: frozenset({"setdefault", "update", "pop", "popitem", "clear"}),
    collections.OrderedDict: frozenset({"setdefault", "update", "pop", "popitem", "move_to_end", "clear"}),
    list: frozenset({"append", "extend", "insert", "pop", "clear", "sort", "reverse"})}
#: Values whose builtin methods change nothing but what ``MUTATORS`` names (compiled regular
#: expressions and their matches included: version strings are parsed with them).
_PLAIN_RECEIVERS = (str, bytes, int, float, complex, tuple, frozenset, range, dict, list, set, type(None),
                    re.Pattern, re.Match)

#: Methods of a class that read it and change nothing (``type.__subclasses__``, ``type.mro``).
_CLASS_QUERIES = frozenset({"__subclasses__", "mro"})


def is_pure(fn: Any) -> bool:
    """Whether a builtin may be called for real on concrete arguments (no side effect, no op)."""
    if hashable(fn) and fn in _PURE:
        return True
    if getattr(fn, "__module__", None) in PURE_MODULES and isinstance(fn, types.BuiltinFunctionType):
        return True
    receiver = getattr(fn, "__self__", None)
    if isinstance(fn, types.BuiltinMethodType) and (isinstance(receiver, _PLAIN_RECEIVERS) or isinstance(
            receiver, type) and receiver in _PLAIN_RECEIVERS):  # dict.fromkeys (compared as a class, never by ==)
        return fn.__name__ not in MUTATORS
    if isinstance(fn, types.MethodDescriptorType) and fn.__objclass__ in _PLAIN_RECEIVERS:  # dict.get(d, k)
        return fn.__name__ not in MUTATORS
    # a class's own queries: its subclasses now (einops' backend lookup walks them), its MRO
    return isinstance(fn, types.BuiltinMethodType) and isinstance(receiver, type) and fn.__name__ in _CLASS_QUERIES


def numbers_ufunc(fn: Any, args: list[Value], kwargs: dict[str, Value]) -> bool:
    """A NumPy ufunc (``np.exp``, ``np.log``) given known plain numbers alone: computed for real
    (a number back; with no keyword, no ``out=`` to write into)."""
    return type(fn).__name__ == "ufunc" and not kwargs and bool(args) and all(
        isinstance(a, Known) and isinstance(a.obj, (int, float, complex)) for a in args)


def class_attr(cls: Any, name: str) -> Any:
    """``name`` as found on ``cls``'s MRO without invoking descriptors, or ``None``."""
    for klass in getattr(cls, "__mro__", (cls,)):
        if name in vars(klass):
            return vars(klass)[name]
    return None


def hashable(obj: Any) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True


def keep(fn: Any) -> Any:
    """What ``functools.wraps(f)`` returns, as the prediction models it: the wrapper itself."""
    return fn
