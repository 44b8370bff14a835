"""Functions with bytecode but no source (built by ``exec`` of a string, typed in a REPL), read
from their instructions.

On 3.11+ every instruction carries its source span, and a place is a span
(:func:`~analysis.sites.instruction_place`), so the instructions alone give the places the
capture records. Read here: straight-line code (loads and stores of locals, globals and
constants, attribute and subscript loads, calls, binary operators and comparisons, tuples and
lists, return). Anything else (a jump: branches and loops; ``with``, ``try``, closures,
generators, ``*args``) is not read, and the caller reports the function as a gap, as it does
on 3.10 (offsets there, but other instructions: not read).
"""

from __future__ import annotations

import builtins
import dis
import inspect
import sys
import types
from typing import TYPE_CHECKING, Any, Optional

from .sites import instruction_place
from .values import NONE, Known, Opaque, Seq, Value

if TYPE_CHECKING:
    from .interpreter import Interpreter

__all__ = ["run_bytecode", "unread"]

#: Instructions read, on 3.11-3.13.
_READ = frozenset({
    "RESUME", "NOP", "CACHE", "PRECALL", "PUSH_NULL", "POP_TOP", "COPY_FREE_VARS",
    "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_LOAD_FAST", "STORE_FAST", "STORE_FAST_STORE_FAST",
    "STORE_FAST_LOAD_FAST", "LOAD_CONST", "RETURN_CONST", "RETURN_VALUE", "LOAD_GLOBAL", "LOAD_ATTR",
    "LOAD_METHOD", "KW_NAMES", "CALL", "CALL_KW", "BINARY_OP", "BINARY_SUBSCR", "COMPARE_OP",
    "BUILD_TUPLE", "BUILD_LIST"})
#: ``BINARY_OP``'s symbol -> the operator's dunder stem.
_BINARY = {"+": "add", "-": "sub", "*": "mul", "@": "matmul", "/": "truediv", "//": "floordiv", "%": "mod",
           "**": "pow", "<<": "lshift", ">>": "rshift", "|": "or", "^": "xor", "&": "and"}
_COMPARE = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
#: What a method-form load or a ``PUSH_NULL`` leaves beside a callable.
_NULL = Opaque("NULL")


def unread(fn: types.FunctionType) -> Optional[str]:
    """Why ``fn``'s bytecode is not read (``None``: it is)."""
    if sys.version_info < (3, 11):
        return "its bytecode is read on Python 3.11+ only"
    code = fn.__code__
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS | inspect.CO_GENERATOR | inspect.CO_COROUTINE
                        | inspect.CO_ASYNC_GENERATOR) or code.co_freevars or code.co_cellvars:
        return "only straight-line code is read from bytecode (it has *args, a closure or yields)"
    other = next((ins for ins in dis.get_instructions(code) if ins.opname not in _READ), None)
    if other is not None:
        return f"only straight-line code is read from bytecode ({other.opname} at line {_line(other)})"
    return None


def _line(ins: dis.Instruction) -> Any:
    positions = getattr(ins, "positions", None)
    return getattr(positions, "lineno", None) or ins.starts_line


def _local(local: dict[str, Value], name: str) -> Value:
    """A local's value (made unknown only where it is unbound)."""
    value = local.get(name)
    return value if value is not None else Opaque(f"{name} unbound")


def run_bytecode(run: Interpreter, fn: types.FunctionType, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """Run ``fn`` (which :func:`unread` accepts) from its instructions, in a frame of its own."""
    code = fn.__code__
    frame = run.placeholder_frame(code)
    run.stack.append(frame)
    try:
        return _execute(run, frame, fn, _bind(run, fn, args, kwargs))
    finally:
        run.stack.pop()


def _bind(run: Interpreter, fn: types.FunctionType, args: list[Value], kwargs: dict[str, Value]) -> dict[str, Value]:
    code = fn.__code__
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    local: dict[str, Value] = dict(zip(names[:code.co_argcount], args))
    local.update({k: v for k, v in kwargs.items() if k in names and k not in local})
    defaults = fn.__defaults__ or ()
    first = code.co_argcount - len(defaults)
    for k, name in enumerate(names[:code.co_argcount]):
        if name not in local:
            local[name] = run.wrap(defaults[k - first]) if k >= first else Opaque(f"argument {name} missing")
    for name in names[code.co_argcount:]:
        if name not in local:
            kw = fn.__kwdefaults__ or {}
            local[name] = run.wrap(kw[name]) if name in kw else Opaque(f"argument {name} missing")
    return local


def _execute(run: Interpreter, frame: Any, fn: types.FunctionType, local: dict[str, Value]) -> Value:
    code = fn.__code__
    stack: list[Value] = []
    kwnames: tuple = ()
    for ins in dis.get_instructions(code):
        run.step()
        op, arg = ins.opname, ins.argval
        if op in ("LOAD_FAST", "LOAD_FAST_CHECK"):
            stack.append(_local(local, arg))
        elif op == "LOAD_FAST_LOAD_FAST":
            stack.extend(_local(local, name) for name in arg)
        elif op == "STORE_FAST":
            local[arg] = stack.pop()
        elif op == "STORE_FAST_STORE_FAST":
            for name in arg:
                local[name] = stack.pop()
        elif op == "STORE_FAST_LOAD_FAST":
            local[arg[0]] = stack.pop()
            stack.append(local[arg[1]])
        elif op == "LOAD_CONST":
            stack.append(Known(arg))
        elif op == "LOAD_GLOBAL":
            if ins.arg is not None and ins.arg & 1:
                stack.append(_NULL)
            found = fn.__globals__.get(arg, getattr(builtins, arg, _NULL))
            stack.append(Opaque(f"global {arg} not found") if found is _NULL else run.wrap(found))
        elif op in ("LOAD_ATTR", "LOAD_METHOD"):
            frame.at = instruction_place(code, ins.offset)  # a property may run an op here
            obj = stack.pop()
            if op == "LOAD_METHOD" or sys.version_info >= (3, 12) and ins.arg is not None and ins.arg & 1:
                stack.append(_NULL)
            stack.append(run.attribute(obj, arg))
        elif op == "PUSH_NULL":
            stack.append(_NULL)
        elif op == "KW_NAMES":  # the names are a constant (dis does not resolve it)
            kwnames = code.co_consts[ins.arg] if ins.arg is not None else ()
        elif op in ("CALL", "CALL_KW"):
            if op == "CALL_KW":
                names = stack.pop()
                kwnames = names.obj if isinstance(names, Known) else ()
            values = [stack.pop() for _ in range(arg)][::-1]
            second, first = stack.pop(), stack.pop()
            callee, extra = (second, []) if first is _NULL else (first, []) if second is _NULL else (first, [second])
            split = len(values) - len(kwnames)
            frame.at = instruction_place(code, ins.offset)
            stack.append(run.call(callee, [*extra, *values[:split]], dict(zip(kwnames, values[split:]))))
            kwnames = ()
        elif op == "BINARY_OP":
            right, left = stack.pop(), stack.pop()
            symbol = ins.argrepr.removesuffix("=")  # "+=": in place
            frame.at = instruction_place(code, ins.offset)
            stack.append(run.binop(_BINARY.get(symbol, symbol), left, right, None, frozenset(),
                                   inplace=symbol != ins.argrepr))
        elif op == "COMPARE_OP":
            right, left = stack.pop(), stack.pop()
            symbol = ins.argrepr.removeprefix("bool(").removesuffix(")")
            frame.at = instruction_place(code, ins.offset)
            stack.append(run.binop(_COMPARE.get(symbol, symbol), left, right, None, frozenset()))
        elif op == "BINARY_SUBSCR":
            index, container = stack.pop(), stack.pop()
            frame.at = instruction_place(code, ins.offset)
            stack.append(run.subscript(container, index, None))
        elif op in ("BUILD_TUPLE", "BUILD_LIST"):
            items = [stack.pop() for _ in range(arg)][::-1]
            stack.append(Seq(items, tuple if op == "BUILD_TUPLE" else list))
        elif op == "POP_TOP":
            stack.pop()
        elif op == "RETURN_VALUE":
            return stack.pop()
        elif op == "RETURN_CONST":
            return Known(arg)
    return NONE
