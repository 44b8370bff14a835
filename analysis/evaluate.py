"""Expressions of the abstract run: names, attributes, operators, subscripts, comprehensions.

Operators on tensors are op calls through the tensor type's dunders, at the operator's own
instruction (``BINARY_OP``, ``BINARY_SUBSCR``, ``COMPARE_OP``...), with the reflected dunder
when only the right operand is a tensor (``0.5 * x`` is ``rmul``). Operators on concrete
values are computed for real. Comprehensions run in their own frame on 3.10/3.11 and inline
on 3.12+ (PEP 709), as CPython runs them; a generator expression runs lazily from whoever
consumes it.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import operator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

from .passes import MAYBE, Count
from .source import CALL_OPS, source_text
from .values import (FALSE, NONE, TRUE, Bound, Dict, Function, Instance, Known, Lazy, Opaque, Seq,
                     Tensor, TensorTuple, Union, Value)

if TYPE_CHECKING:
    from .interpreter import Frame

__all__ = ["Evaluator", "BINARY", "SUBSCR_LOAD", "SUBSCR_STORE", "ATTR_LOAD"]

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.MatMult: "matmul", ast.Div: "truediv",
           ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift",
           ast.RShift: "rshift", ast.BitOr: "or", ast.BitXor: "xor", ast.BitAnd: "and"}
_CONCRETE = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "matmul": operator.matmul,
             "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
             "pow": operator.pow, "lshift": operator.lshift, "rshift": operator.rshift,
             "or": operator.or_, "xor": operator.xor, "and": operator.and_, "lt": operator.lt,
             "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq, "ne": operator.ne}
_COMPARE = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_MIRROR = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
_UNARY = {ast.USub: ("neg", operator.neg), ast.UAdd: ("pos", operator.pos), ast.Invert: ("invert", operator.invert)}
#: Plain types whose operators are safe to compute for real.
_PLAIN = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset, range, slice)

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
_COMPARE_OPS = frozenset({"COMPARE_OP"})
_UNARY_OPS = frozenset({"UNARY_NEGATIVE", "UNARY_POSITIVE", "UNARY_INVERT"})


class Evaluator:
    """Mixin of :class:`analysis.interpreter.Interpreter`: evaluates expression nodes."""

    def eval(self, node: ast.AST) -> Value:
        method = getattr(self, "eval_" + type(node).__name__, None)
        if method is None:
            return Opaque(f"{type(node).__name__} expression")
        return method(node)

    # -- leaves ------------------------------------------------------------------------------

    def eval_Constant(self, node: ast.Constant) -> Value:
        return Known(node.value)

    def eval_Name(self, node: ast.Name) -> Value:
        return self.lookup(node.id)

    def lookup(self, name: str) -> Value:
        frame = self.frame
        if frame is None:
            return Opaque(f"name {name}")
        if name in frame.locals:
            return frame.locals[name]
        for scope in frame.enclosing:
            if name in scope:
                return scope[name]
        if name in frame.globals:
            return self.wrap(frame.globals[name])
        builtins_ = frame.globals.get("__builtins__", builtins)
        table = builtins_ if isinstance(builtins_, dict) else vars(builtins_)
        if name in table:
            return Known(table[name])
        return Opaque(f"name {name} is not defined")

    def eval_JoinedStr(self, node: ast.JoinedStr) -> Value:
        return Opaque("an f-string", "number")

    def eval_Slice(self, node: ast.Slice) -> Value:
        parts = [self.eval(p) if p is not None else NONE for p in (node.lower, node.upper, node.step)]
        if all(isinstance(p, Known) for p in parts):
            return Known(slice(*(p.obj for p in parts)))  # type: ignore[union-attr]
        return Opaque("a slice with unknown bounds", "number")

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

    # -- containers --------------------------------------------------------------------------

    def eval_Tuple(self, node: ast.Tuple) -> Value:
        return Seq(self.elements(node.elts), tuple)

    def eval_List(self, node: ast.List) -> Value:
        return Seq(self.elements(node.elts), list)

    def eval_Set(self, node: ast.Set) -> Value:
        return Seq(self.elements(node.elts), list)

    def elements(self, elts: list[ast.expr]) -> list[Value]:
        out: list[Value] = []
        for elt in elts:
            if isinstance(elt, ast.Starred):
                items = self.unpack(self.eval(elt.value), None)
                out.extend(items if items is not None else [Opaque("starred items")])
            else:
                out.append(self.eval(elt))
        return out

    def eval_Dict(self, node: ast.Dict) -> Value:
        out = Dict()
        for key, value in zip(node.keys, node.values):
            if key is None:
                merged = self.eval(value)
                if isinstance(merged, Dict):
                    out.items.update(merged.items)
                elif isinstance(merged, Known) and isinstance(merged.obj, dict):
                    out.items.update((k, self.wrap(v)) for k, v in merged.obj.items())
                continue
            k = self.eval(key)
            out.items[k.obj if isinstance(k, Known) else object()] = self.eval(value)
        return out

    # -- calls -------------------------------------------------------------------------------

    def eval_Call(self, node: ast.Call) -> Value:
        fn = self.eval(node.func)
        args = self.elements(node.args)
        kwargs: dict[str, Value] = {}
        for keyword in node.keywords:
            value = self.eval(keyword.value)
            if keyword.arg is not None:
                kwargs[keyword.arg] = value
            elif isinstance(value, Dict):
                kwargs.update((k, v) for k, v in value.items.items() if isinstance(k, str))
            elif isinstance(value, Known) and isinstance(value.obj, dict):
                kwargs.update((k, self.wrap(v)) for k, v in value.obj.items())
        self.call_place(node)
        return self.call(fn, args, kwargs)

    # -- attributes --------------------------------------------------------------------------

    def eval_Attribute(self, node: ast.Attribute) -> Value:
        return self.attribute(self.eval(node.value), node.attr, node)

    def attribute(self, value: Value, name: str, node: Optional[ast.AST] = None) -> Value:
        """``value.name``; a Python property is read by running its getter."""
        if isinstance(value, Tensor):
            return self.tensor_attribute(value, name, node)
        if isinstance(value, Known):
            return self.known_attribute(value.obj, name, node)
        if isinstance(value, Instance):
            return self.instance_attribute(value, name, node)
        if isinstance(value, (Seq, Dict)):
            return Bound(Known(_PyMethod(name)), value)
        if isinstance(value, Function):
            return value.attrs.get(name, Opaque(f"attribute {name} of a function"))
        if isinstance(value, Union):
            known = [v for v in value.options if not isinstance(v, Opaque)] or list(value.options)
            return self.join([self.attribute(v, name, node) for v in known])
        return Opaque(f"attribute {name} of an unknown value", getattr(value, "kind", "any"))

    def tensor_attribute(self, value: Tensor, name: str, node: Optional[ast.AST]) -> Value:
        kind, what = self.host.tensor_attribute(name)
        if kind == "op":
            self.at_node(node, ATTR_LOAD)
            return self.call_op(what, name, [value])
        if kind == "member":
            return Bound(self.wrap(what), value)
        if kind == "tensor":
            return Tensor()
        if value.live is not None:  # metadata of an input or parameter: read it
            try:
                return self.wrap(getattr(value.live, name))
            except Exception:  # noqa: BLE001
                pass
        return Opaque(f"tensor attribute {name}", "number")

    def known_attribute(self, obj: Any, name: str, node: Optional[ast.AST]) -> Value:
        key = (id(obj), name)
        if key in self.overlay:
            return self.overlay[key]
        if isinstance(obj, _SuperRef):
            return obj.attribute(self, name, node)
        if not isinstance(obj, type):
            static = _static_attr(type(obj), name)
            if isinstance(static, property) and inspect.isfunction(static.fget):
                self.at_node(node, ATTR_LOAD)
                return self.call(Known(static.fget), [Known(obj)], {})
        try:
            return self.wrap(getattr(obj, name))
        except Exception:  # noqa: BLE001 - any failing getattr is "no such attribute" here
            return Opaque(f"{type(obj).__name__} has no attribute {name}")

    def instance_attribute(self, inst: Instance, name: str, node: Optional[ast.AST]) -> Value:
        if name in inst.attrs:
            return inst.attrs[name]
        static = _static_attr(inst.cls, name)
        if static is None:
            if name == "training":
                return TRUE
            return Opaque(f"{inst.cls.__name__}.{name} is not set by __init__")
        if isinstance(static, property) and inspect.isfunction(static.fget):
            self.at_node(node, ATTR_LOAD)
            return self.call(Known(static.fget), [inst], {})
        if isinstance(static, staticmethod):
            return self.wrap(static.__func__)
        if isinstance(static, classmethod):
            return Bound(self.wrap(static.__func__), Known(inst.cls))
        if inspect.isfunction(static):
            return Bound(Known(static), inst)
        return self.wrap(static)

    def set_attribute(self, target: Value, name: str, value: Value) -> None:
        """``target.name = value``: recorded on abstract objects, overlaid on live ones."""
        if isinstance(target, Instance):
            target.attrs[name] = value
        elif isinstance(target, Known):
            self.overlay[(id(target.obj), name)] = value
            self._keep.append(target.obj)
        elif isinstance(target, Function):
            target.attrs[name] = value

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

    def eval_BinOp(self, node: ast.BinOp) -> Value:
        left, right = self.eval(node.left), self.eval(node.right)
        return self.binop(_BINOPS[type(node.op)], left, right, node, BINARY)

    def binop(self, op: str, left: Value, right: Value, node: Optional[ast.AST], opnames: frozenset,
              inplace: bool = False) -> Value:
        """``left <op> right`` (``op`` a dunder stem: ``add``, ``lt``)."""
        if isinstance(left, Union) or isinstance(right, Union):
            lefts = left.options if isinstance(left, Union) else (left,)
            rights = right.options if isinstance(right, Union) else (right,)
            if any(isinstance(v, Tensor) for v in (*lefts, *rights)):
                left = next((v for v in lefts if isinstance(v, Tensor)), lefts[0])
                right = next((v for v in rights if isinstance(v, Tensor)), rights[0])
        tensor_left = isinstance(left, Tensor) or (isinstance(left, Opaque) and left.kind == "any"
                                                   and isinstance(right, Tensor))
        if tensor_left or isinstance(right, Tensor):
            if tensor_left:
                dunder, args = (f"__i{op}__" if inplace else f"__{op}__"), [left, right]
                if inplace and self.host.tensor_attribute(dunder)[0] != "member":
                    dunder = f"__{op}__"
            else:
                reflected = _MIRROR.get(op)
                dunder = f"__{reflected}__" if reflected else f"__r{op}__"
                args = [right, left]
            kind, member = self.host.tensor_attribute(dunder)
            if kind != "member":
                return Opaque(f"no tensor operator {dunder}")
            self.at_node(node, opnames)
            return self.call(self.wrap(member), args, {})
        if isinstance(left, Known) and isinstance(right, Known) and isinstance(left.obj, _PLAIN) \
                and isinstance(right.obj, _PLAIN):
            try:
                return Known(_CONCRETE[op](left.obj, right.obj))
            except Exception:  # noqa: BLE001 - the program would raise here; we only predict
                return Opaque(f"{op} failed", "number")
        if isinstance(left, Seq) and isinstance(right, Seq) and op == "add":
            return Seq(left.items + right.items, left.kind)
        if isinstance(left, Seq) and isinstance(right, Known) and op == "mul" and isinstance(right.obj, int):
            return Seq(left.items * right.obj, left.kind)
        numberish = all(isinstance(v, Known) or (isinstance(v, Opaque) and v.kind == "number")
                        for v in (left, right))
        return Opaque(f"{op} of unknown values", "number" if numberish else "any")

    def eval_UnaryOp(self, node: ast.UnaryOp) -> Value:
        operand = self.eval(node.operand)
        if isinstance(node.op, ast.Not):
            truth = self.truth(operand)
            return Opaque("not of an unknown value", "number") if truth is None else Known(not truth)
        stem, concrete = _UNARY[type(node.op)]
        if isinstance(operand, Tensor):
            kind, member = self.host.tensor_attribute(f"__{stem}__")
            if kind != "member":
                return Opaque(f"no tensor operator {stem}")
            self.at_node(node, _UNARY_OPS)
            return self.call(self.wrap(member), [operand], {})
        if isinstance(operand, Known) and isinstance(operand.obj, _PLAIN):
            try:
                return Known(concrete(operand.obj))
            except Exception:  # noqa: BLE001
                return Opaque(f"{stem} failed", "number")
        return Opaque(f"{stem} of an unknown value", getattr(operand, "kind", "any"))

    def eval_Compare(self, node: ast.Compare) -> Value:
        left = self.eval(node.left)
        result: Value = TRUE
        for op, comparator in zip(node.ops, node.comparators):
            right = self.eval(comparator)
            value = self.compare(op, left, right, node)
            truth = self.truth(value)
            if truth is False:
                return value if len(node.ops) == 1 else FALSE
            result = value if len(node.ops) == 1 or truth is None else result
            left = right
        return result

    def compare(self, op: ast.cmpop, left: Value, right: Value, node: ast.AST) -> Value:
        if isinstance(op, (ast.Is, ast.IsNot)):
            same = self.identical(left, right)
            if same is None:
                return Opaque("identity of unknown values", "number")
            return Known(same if isinstance(op, ast.Is) else not same)
        if isinstance(op, (ast.In, ast.NotIn)):
            found = self.contains(right, left)
            if found is None:
                return Opaque("membership of unknown values", "number")
            return Known(found if isinstance(op, ast.In) else not found)
        return self.binop(_COMPARE[type(op)], left, right, node, _COMPARE_OPS)

    def identical(self, left: Value, right: Value) -> Optional[bool]:
        """``left is right`` when decidable."""
        if isinstance(left, Union) or isinstance(right, Union):
            answers = {self.identical(a, b) for a in getattr(left, "options", (left,))
                       for b in getattr(right, "options", (right,))}
            return answers.pop() if len(answers) == 1 else None
        if isinstance(left, Known) and isinstance(right, Known):
            return left.obj is right.obj
        if left is right:
            return True
        if isinstance(left, Tensor) and isinstance(right, Tensor) and left.live is not None \
                and right.live is not None:
            return left.live is right.live
        known = left if isinstance(left, Known) else right if isinstance(right, Known) else None
        other = right if known is left else left
        if known is not None and not isinstance(other, Opaque):
            return False  # a tensor, container, function or instance is never a constant
        return None

    def contains(self, container: Value, item: Value) -> Optional[bool]:
        """``item in container`` when decidable (keys the code computed are unknown keys)."""
        if isinstance(container, Dict) and isinstance(item, Known):
            if item.obj in container.items:
                return True
            return None if any(type(k) is object for k in container.items) else False
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
        return None

    def eval_BoolOp(self, node: ast.BoolOp) -> Value:
        stop_on = isinstance(node.op, ast.Or)  # `or` stops at the first true value
        values: list[Value] = []
        uncertain = False
        for expr in node.values:
            if uncertain:
                with self.scaled(MAYBE):
                    value = self.eval(expr)
            else:
                value = self.eval(expr)
            truth = self.truth(value)
            if truth is stop_on and not uncertain:
                return value
            if truth is None:
                uncertain = True
            values.append(value)
        return self.join(values) if uncertain else values[-1]

    def eval_IfExp(self, node: ast.IfExp) -> Value:
        truth = self.truth(self.eval(node.test))
        if truth is True:
            return self.eval(node.body)
        if truth is False:
            return self.eval(node.orelse)
        with self.scaled(MAYBE):
            return self.join([self.eval(node.body), self.eval(node.orelse)])

    # -- subscripts --------------------------------------------------------------------------

    def eval_Subscript(self, node: ast.Subscript) -> Value:
        return self.subscript(self.eval(node.value), self.eval(node.slice), node)

    def subscript(self, value: Value, index: Value, node: Optional[ast.AST]) -> Value:
        if isinstance(value, Tensor):
            kind, member = self.host.tensor_attribute("__getitem__")
            self.at_node(node, SUBSCR_LOAD)
            return self.call(self.wrap(member), [value, index], {}) if kind == "member" else Tensor()
        if isinstance(value, Union):
            return self.join([self.subscript(v, index, node) for v in value.options])
        key = index.obj if isinstance(index, Known) else None
        if isinstance(value, TensorTuple):
            if isinstance(key, int) and key >= 0:
                value.resolve(key + 1)
            return Tensor() if isinstance(key, int) else Opaque("a slice of several outputs")
        if isinstance(value, Seq) and isinstance(index, Known):
            try:
                picked = value.items[key]
            except (IndexError, TypeError):
                return Opaque("index out of range")
            return Seq(picked, value.kind) if isinstance(key, slice) else picked
        if isinstance(value, Dict) and isinstance(index, Known):
            return value.items.get(key, Opaque(f"key {key!r} not set"))
        if isinstance(value, Instance) and value.items is not None and isinstance(index, Known):
            items = list(value.items.values())
            if isinstance(key, int) and -len(items) <= key < len(items):
                return items[key]
            return value.items.get(str(key), Opaque(f"item {key!r}"))
        if isinstance(value, Known) and isinstance(index, Known):
            try:
                return self.wrap(value.obj[key])
            except Exception:  # noqa: BLE001
                return Opaque(f"item {key!r} of {type(value.obj).__name__}")
        return Opaque("item of an unknown value", getattr(value, "kind", "any"))

    # -- comprehensions ----------------------------------------------------------------------

    def eval_ListComp(self, node: ast.ListComp) -> Value:
        return Seq(self.comprehension(node, lambda: [self.eval(node.elt)]), list)

    def eval_SetComp(self, node: ast.SetComp) -> Value:
        return Seq(self.comprehension(node, lambda: [self.eval(node.elt)]), list)

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
            with self.inline_scope(node):
                return list(self.generators(node.generators, 0, element, None))
        first = self.eval(node.generators[0].iter)
        frame.at = frame.source.place(node, CALL_OPS)  # the call that runs its code (≤3.11)
        own = self.child_frame(frame, code, node)
        self.stack.append(own)
        try:
            return list(self.generators(node.generators, 0, element, first))
        finally:
            self.stack.pop()

    def eval_GeneratorExp(self, node: ast.GeneratorExp) -> Value:
        frame = self.frame
        if frame is None:
            return Opaque("a generator outside any frame")
        code = frame.source.codes.get(id(node))
        first = self.eval(node.generators[0].iter)
        own = self.child_frame(frame, code, node) if code is not None else None

        def start() -> Iterator[Value]:
            items = self.generators(node.generators, 0, lambda: [self.eval(node.elt)], first)
            while True:
                if own is not None:
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

    def child_frame(self, frame: "Frame", code: Any, node: ast.AST) -> "Frame":
        from .interpreter import Frame

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
                   first: Optional[Value]) -> Iterator[Value]:
        """Items of ``gens[k:]``: iterate, filter, recurse, then evaluate the element."""
        if k == len(gens):
            yield from element()
            return
        gen = gens[k]
        source = first if k == 0 and first is not None else self.eval(gen.iter)
        items = self.iterate(source)
        count: Optional[Count] = None
        if items is None:
            count = Count(0, None, source_text(gen.iter), f"{source_text(gen.iter)} has no static length")
            items = iter([self.element_of(source)])
        for item in items:
            self.step()
            saved = self.mult
            if count is not None:
                self.mult = saved * count
            self.assign(gen.target, item)
            decided = True
            for cond in gen.ifs:
                truth = self.truth(self.eval(cond))
                if truth is False:
                    decided = False
                    break
                if truth is None:
                    self.mult = self.mult * MAYBE
            if decided:
                yield from self.generators(gens, k + 1, element, None)
            self.mult = saved

    # -- small helpers -----------------------------------------------------------------------

    def at_node(self, node: Optional[ast.AST], opnames: frozenset) -> None:
        frame = self.frame
        if frame is not None and node is not None:
            frame.at = frame.source.place(node, opnames)

    def truth(self, value: Value) -> Optional[bool]:
        """``bool(value)`` when decidable."""
        if isinstance(value, Known):
            try:
                return bool(value.obj)
            except Exception:  # noqa: BLE001
                return None
        if isinstance(value, (Seq, Dict)):
            return bool(value.items)
        if isinstance(value, (Function, Bound, Instance, TensorTuple)):
            return True
        if isinstance(value, Union):
            answers = {self.truth(v) for v in value.options}
            return answers.pop() if len(answers) == 1 else None
        return None

    def join(self, values: list[Value]) -> Value:
        """One value standing for any of ``values``."""
        distinct: list[Value] = []
        for value in values:
            for option in value.options if isinstance(value, Union) else (value,):
                if not any(self.same(option, seen) for seen in distinct):
                    distinct.append(option)
        if len(distinct) == 1:
            return distinct[0]
        if all(isinstance(v, Tensor) for v in distinct):
            return Tensor()
        return Union(tuple(distinct))

    @staticmethod
    def same(a: Value, b: Value) -> bool:
        if a is b:
            return True
        if isinstance(a, Known) and isinstance(b, Known):
            return a.obj is b.obj
        return isinstance(a, Tensor) and isinstance(b, Tensor)

    def element_of(self, source: Value) -> Value:
        """An item of an iterable whose items cannot be listed."""
        if isinstance(source, (Tensor, TensorTuple)):
            return Tensor()
        return Opaque("an item of an unknown iterable")


class _PyMethod:
    """A method of an abstract ``Seq``/``Dict`` (``d.get``, ``xs.append``), bound by :class:`Bound`."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class _SuperRef:
    """``super()`` inside a method: attribute lookup starts after ``owner`` in the MRO."""

    __slots__ = ("owner", "receiver")

    def __init__(self, owner: type, receiver: Value) -> None:
        self.owner = owner
        self.receiver = receiver

    def attribute(self, run: Any, name: str, node: Optional[ast.AST]) -> Value:
        cls = self.receiver.cls if isinstance(self.receiver, Instance) else (
            type(self.receiver.obj) if isinstance(self.receiver, Known) else self.owner)
        mro = list(getattr(cls, "__mro__", (self.owner,)))
        start = mro.index(self.owner) + 1 if self.owner in mro else 0
        for klass in mro[start:]:
            if name in vars(klass):
                found = vars(klass)[name]
                if isinstance(found, property) and inspect.isfunction(found.fget):
                    return run.call(Known(found.fget), [self.receiver], {})
                if isinstance(found, staticmethod):
                    return run.wrap(found.__func__)
                if isinstance(found, classmethod):
                    return Bound(run.wrap(found.__func__), Known(cls))
                if callable(found):
                    return Bound(run.wrap(found), self.receiver)
                return run.wrap(found)
        return Opaque(f"super() has no attribute {name}")


def _static_attr(cls: type, name: str) -> Any:
    for klass in getattr(cls, "__mro__", ()):
        if name in vars(klass):
            return vars(klass)[name]
    return None
