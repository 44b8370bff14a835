"""A class statement inside the code being read (``class P: ...`` in ``forward``), made for real.

The run makes the class as CPython would, with ``types.new_class``, when its body only
defines things: methods (plain, or made static, class or property methods), values of plain
Python (numbers, strings, tuples, names of modules and classes, ``dataclasses.field``) and
annotations. Each method is put in the class as a *stand-in*, a real function over the
method's own code object; the run's :class:`~analysis.values.Function` for it (with the
enclosing function's locals, late bound as in Python) is what the stand-in stands for
(``Interpreter.held``), so a call of it, found through the class in any way, reads the
method's source. The class's decorators (``@dataclass``) and the machinery of its bases
(``Enum``, ``NamedTuple``) run for real: they are the standard library's and read no tensor.

Anything else keeps the class unknown, with the reason: a body that runs code (a call, an
operator on what is not a number or a string), a base or metaclass from outside the standard
library (its ``__init_subclass__`` or metaclass would run the user's code, and a subclass
would be registered in the user's class), a value whose type hooks into class creation.
"""

from __future__ import annotations

import __future__
import abc
import ast
import builtins
import dataclasses
import enum
import functools
import inspect
import operator
import types
import typing
from typing import TYPE_CHECKING, Any, Callable

from .values import Function, Known, Opaque, Value

if TYPE_CHECKING:
    from .interpreter import Frame, Interpreter

__all__ = ["build_class"]

#: Modules whose classes, metaclasses and decorators may run while a class is made.
_SAFE_MODULES = frozenset({"builtins", "abc", "enum", "typing", "typing_extensions", "collections",
                           "_collections_abc", "dataclasses", "functools", "types", "numbers"})
#: Decorators of a method, run for real on its stand-in.
_METHOD_DECORATORS = (staticmethod, classmethod, property, functools.cached_property, abc.abstractmethod)
#: Values of these types may hook into class creation (``__set_name__``) harmlessly.
_SET_NAME_OK = (property, staticmethod, classmethod, functools.cached_property, types.FunctionType,
                dataclasses.Field)
#: Methods that making a class (or a subclass of it) calls: never made, as a stand-in must not run.
_HOOKS = frozenset({"__init_subclass__", "__set_name__", "__mro_entries__", "__prepare__", "__class_getitem__"})
#: What an ``Enum`` calls while making its members.
_ENUM_HOOKS = frozenset({"__new__", "__init__", "_generate_next_value_", "_missing_", "__hash__", "__eq__"})
#: What a stand-in may be wrapped in, in the namespace.
_WRAPPERS = (types.FunctionType, staticmethod, classmethod, property, functools.cached_property)
#: Decorators of the class, run for real on it.
_CLASS_DECORATORS = (dataclasses.dataclass, functools.total_ordering, enum.unique, typing.final)
#: Descriptors a class attribute may be read through without running the user's code.
_PLAIN_DESCRIPTORS = (types.FunctionType, types.BuiltinFunctionType, staticmethod, classmethod, property,
                      types.MethodDescriptorType, types.WrapperDescriptorType, types.ClassMethodDescriptorType,
                      types.GetSetDescriptorType, types.MemberDescriptorType)
_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert}
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
#: Plain values an operator in a class body may combine (no user code runs).
_PLAIN_OPERANDS = (bool, int, float, str, bytes, tuple)


class _Unfollowed(Exception):
    """Why the class statement is not made (the class is then unknown)."""


def build_class(run: Interpreter, frame: Frame, node: ast.ClassDef) -> Value:
    """The class ``node`` makes, or an unknown value saying why it is not made."""
    try:
        return Known(_Maker(run, frame, node).make())
    except _Unfollowed as why:
        return Opaque(f"class {node.name} defined{run.where(node)}: {why}")


class _Maker:
    """One execution of a class statement."""

    def __init__(self, run: Interpreter, frame: Frame, node: ast.ClassDef) -> None:
        self.run, self.frame, self.node = run, frame, node
        self.namespace: dict[str, Any] = {}
        #: The methods' stand-ins, with the functions they stand for.
        self.stand_ins: list[tuple[types.FunctionType, Function]] = []
        #: Names the body binds: read from the namespace, globals and builtins only (``LOAD_NAME``).
        self.own = {t.id for s in node.body for t in _targets(s)}
        code = frame.source.codes.get(id(node))
        if code is None:
            raise _Unfollowed("its code is not found")
        self.code: types.CodeType = code

    def make(self) -> Any:
        node = self.node
        decorators = [self.class_decorator(d) for d in node.decorator_list]
        bases = tuple(self.value(b) for b in node.bases)
        keywords = {k.arg: self.value(k.value) for k in node.keywords if k.arg is not None}
        if len(keywords) != len(node.keywords):
            raise _Unfollowed("its keywords are unpacked from a mapping")
        resolved = types.resolve_bases(bases)
        meta = keywords.get("metaclass", type)
        for cls in (*resolved, meta):
            self.check_safe(cls)
        namespace = self.namespace
        namespace["__module__"] = self.frame.globals.get("__name__")
        namespace["__qualname__"] = getattr(self.code, "co_qualname", node.name)
        doc = ast.get_docstring(node, clean=False)
        if doc is not None:
            namespace["__doc__"] = doc
        for stmt in node.body:
            self.statement(stmt)
        enum_made = any(isinstance(c, enum.EnumMeta) for c in resolved) or issubclass(meta, enum.EnumMeta)
        called = (_HOOKS | _ENUM_HOOKS if enum_made else _HOOKS).intersection(
            name for name, value in namespace.items() if isinstance(value, _WRAPPERS))
        if called:
            raise _Unfollowed(f"making it would call its {', '.join(sorted(called))} for real")
        try:
            cls = types.new_class(node.name, bases, keywords, functools.partial(_fill, namespace))
            self.run.held[id(cls)] = (cls, Known(cls))  # made here: a safe base (check_safe)
            for stand_in, fn in self.stand_ins:
                if "__class__" in stand_in.__code__.co_freevars:  # super() or __class__ in a method
                    cells = stand_in.__closure__ or ()
                    cells[stand_in.__code__.co_freevars.index("__class__")].cell_contents = cls
                    fn.enclosing.insert(0, {"__class__": Known(cls)})
            for decorator in reversed(decorators):
                cls = decorator(cls)
        except Exception as error:  # noqa: BLE001 - the program raises here too
            raise _Unfollowed(f"making it raises {error!r}") from None
        return cls

    def statement(self, stmt: ast.stmt) -> None:
        namespace = self.namespace
        if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            pass  # the docstring is read in make
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            namespace[stmt.name] = self.method(stmt)
        elif isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
            value = self.member(stmt.value)
            namespace.update((name.id, value) for name in _targets(stmt))
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.simple:
            annotations = namespace.setdefault("__annotations__", {})
            annotations[stmt.target.id] = self.annotation(stmt.annotation)
            if stmt.value is not None:
                namespace[stmt.target.id] = self.member(stmt.value)
        else:
            raise _Unfollowed(f"its body runs a {type(stmt).__name__} statement at line {stmt.lineno}")

    def method(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> Any:
        decorators = [self.value(d) for d in node.decorator_list]
        for decorator in decorators:
            if not _method_decorator(decorator):
                raise _Unfollowed(f"method {node.name} has a decorator that is not followed ({decorator!r})")
        made = self.function(node)
        for decorator in reversed(decorators):
            made = decorator(made)
        return made

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> Any:
        """A stand-in for a function the body defines, with the run's :class:`Function` behind it."""
        code = self.frame.source.codes.get(id(node))
        if code is None:
            raise _Unfollowed(f"the code of {getattr(node, 'name', 'a lambda')} is not found")
        spec = node.args
        wrap = self.run.wrap
        defaults = [wrap(self.value(d)) for d in spec.defaults]
        kw_defaults = {a.arg: wrap(self.value(d)) for a, d in zip(spec.kwonlyargs, spec.kw_defaults) if d is not None}
        frame = self.frame
        fn = Function(node, code, frame.source, frame.globals, [frame.locals, *frame.enclosing], defaults, kw_defaults)
        closure = tuple(types.CellType() for _ in code.co_freevars) if code.co_freevars else None
        stand_in = types.FunctionType(code, frame.globals, code.co_name, None, closure)
        stand_in.__qualname__ = getattr(code, "co_qualname", code.co_name)
        self.run.held[id(stand_in)] = (stand_in, fn)
        self.stand_ins.append((stand_in, fn))
        return stand_in

    def member(self, node: ast.expr) -> Any:
        """A value the body binds in the class."""
        if isinstance(node, ast.Lambda):
            return self.function(node)
        value = self.value(node)
        if hasattr(type(value), "__set_name__") and not isinstance(value, _SET_NAME_OK):
            raise _Unfollowed(f"{type(value).__qualname__} at line {node.lineno} hooks into class creation")
        return value

    def annotation(self, node: ast.expr) -> Any:
        """An annotation's value as CPython stores it (a string under ``from __future__ import
        annotations``; written out when it is not a plain value)."""
        if self.code.co_flags & __future__.annotations.compiler_flag:
            return ast.unparse(node)
        try:
            return self.value(node)
        except _Unfollowed:
            return ast.unparse(node)

    def class_decorator(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Call):
            made = self.value(node.func)
            if made is not dataclasses.dataclass or node.args:
                raise _Unfollowed(f"its decorator at line {node.lineno} is not followed")
            return made(**{k.arg: self.value(k.value) for k in node.keywords if k.arg is not None})
        decorator = self.value(node)
        if decorator not in _CLASS_DECORATORS:
            raise _Unfollowed(f"its decorator {ast.unparse(node)} is not followed")
        return decorator

    def value(self, node: ast.expr) -> Any:
        """A plain value the body computes without running code of its own."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.Attribute):
            base = self.value(node.value)
            if isinstance(base, property) and node.attr in ("setter", "getter", "deleter"):
                return getattr(base, node.attr)
            if isinstance(base, types.ModuleType) and node.attr in vars(base):  # not a module's __getattr__
                return vars(base)[node.attr]
            if isinstance(base, type) and _module_of(type(base)) in _SAFE_MODULES:
                try:
                    static = inspect.getattr_static(base, node.attr)
                except AttributeError:
                    raise _Unfollowed(f"{ast.unparse(node)} at line {node.lineno} is not found") from None
                if not hasattr(type(static), "__get__") or isinstance(static, _PLAIN_DESCRIPTORS):
                    return getattr(base, node.attr)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = [self.value(e) for e in node.elts]
            return tuple(items) if isinstance(node, ast.Tuple) else list(items) if isinstance(node, ast.List) else set(items)
        elif isinstance(node, ast.Subscript):  # an annotation: Optional[int], list[str]
            base = self.value(node.value)
            if _module_of(base) in ("typing", "typing_extensions", "builtins", "collections"):
                return base[self.value(node.slice)]
        elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            operand = self.value(node.operand)
            if isinstance(operand, _PLAIN_OPERANDS):
                return _UNARY[type(node.op)](operand)
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = self.value(node.left), self.value(node.right)
            if isinstance(left, _PLAIN_OPERANDS) and isinstance(right, _PLAIN_OPERANDS):
                return _BINARY[type(node.op)](left, right)
        elif isinstance(node, ast.Call) and not node.args and self.value(node.func) is dataclasses.field:
            return dataclasses.field(**{k.arg: self.member(k.value) for k in node.keywords if k.arg is not None})
        raise _Unfollowed(f"{ast.unparse(node)} at line {getattr(node, 'lineno', '?')} runs code")

    def check_safe(self, cls: Any) -> None:
        """Raise unless making a subclass of ``cls`` (or a class of metaclass ``cls``) runs only the
        standard library's code: its classes are the standard library's or made by this run
        (whose hooks were refused when it was made)."""
        if not isinstance(cls, type):
            raise _Unfollowed(f"its base {cls!r} is not a class")
        held = self.run.held
        for each in (*cls.__mro__, *type.mro(type(cls))):
            made = held.get(id(each))
            if _module_of(each) not in _SAFE_MODULES and (made is None or made[0] is not each):
                raise _Unfollowed(f"its base or metaclass {each.__qualname__} is not from the standard library")

    def name(self, name: str) -> Any:
        if name in self.namespace:
            return self.namespace[name]
        if name in self.own:  # bound by the body later, or only in it: LOAD_NAME skips the enclosing function
            found = self.frame.globals.get(name, vars(builtins).get(name, _MISSING))
        else:
            value = self.run.lookup(name)
            if not isinstance(value, Known):
                why = f" ({value.why})" if isinstance(value, Opaque) else ""
                raise _Unfollowed(f"{name} is not a plain value here{why}")
            found = value.obj
        if found is _MISSING:
            raise _Unfollowed(f"{name} is not defined")
        return found


_MISSING = object()


def _fill(namespace: dict[str, Any], prepared: Any) -> None:
    """Bind the body's names in the namespace the metaclass prepared, one by one as the body
    would (an ``Enum``'s records its members in ``__setitem__``, which ``update`` skips on 3.10)."""
    for name, value in namespace.items():
        prepared[name] = value


def _targets(stmt: ast.stmt) -> list[ast.Name]:
    if isinstance(stmt, ast.Assign):
        return [t for t in stmt.targets if isinstance(t, ast.Name)]
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return [stmt.target]
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [ast.Name(stmt.name)]
    return []


def _module_of(obj: Any) -> str:
    return (getattr(obj, "__module__", None) or "").partition(".")[0]




def _method_decorator(decorator: Any) -> bool:
    if decorator in _METHOD_DECORATORS:
        return True
    owner = getattr(decorator, "__self__", None)  # a property's .setter
    return isinstance(owner, property) and getattr(decorator, "__name__", "") in ("setter", "getter", "deleter")

