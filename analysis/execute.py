"""Statements of the abstract run: assignment, branches, loops, ``try``, ``with``, ``def``.

A branch whose condition is known runs alone. A branch the prediction cannot decide runs
every arm under ``0..1`` (:data:`~analysis.passes.MAYBE`), except an arm that can only
raise, which is taken as not run (argument checks). A loop over a known iterable is
unrolled; a loop it cannot count runs its body once under a symbolic count, and a ``while``
test it cannot decide counts ``N+1`` against the body's ``N``.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from typing import Any, Optional

from .passes import MAYBE, Count
from .source import CALL_OPS, source_text
from .values import NONE, Dict, Function, Known, Opaque, Seq, Tensor, Value

__all__ = ["Executor", "Signal"]

#: Iterations a ``while`` with a static test may run before the prediction gives up counting.
MAX_WHILE = 10_000
_FOR_ITER = frozenset({"FOR_ITER"})
_STORE = frozenset({"STORE_SUBSCR", "STORE_SLICE"})


@dataclass(frozen=True, slots=True)
class Signal:
    """How a block ended early: ``return`` (with a value), ``break``, ``continue``, ``raise``."""

    kind: str
    value: Value = NONE


class Executor:
    """Mixin of :class:`analysis.interpreter.Interpreter`: executes statement nodes."""

    def exec_block(self, body: list[ast.stmt]) -> Optional[Signal]:
        for stmt in body:
            self.step()
            method = getattr(self, "exec_" + type(stmt).__name__, None)
            signal = method(stmt) if method is not None else None
            if signal is not None:
                return signal
        return None

    # -- simple statements -------------------------------------------------------------------

    def exec_Expr(self, node: ast.Expr) -> None:
        self.eval(node.value)

    def exec_Assign(self, node: ast.Assign) -> None:
        value = self.eval(node.value)
        for target in node.targets:
            self.assign(target, value)

    def exec_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.assign(node.target, self.eval(node.value))

    def exec_AugAssign(self, node: ast.AugAssign) -> None:
        from .evaluate import _BINOPS, BINARY

        current = self.eval(node.target)  # its load shares the target's instructions
        value = self.binop(_BINOPS[type(node.op)], current, self.eval(node.value), node, BINARY, inplace=True)
        self.assign(node.target, value)

    def exec_Return(self, node: ast.Return) -> Signal:
        return Signal("return", self.eval(node.value) if node.value is not None else NONE)

    def exec_Raise(self, node: ast.Raise) -> Signal:
        return Signal("raise")

    def exec_Break(self, node: ast.Break) -> Signal:
        return Signal("break")

    def exec_Continue(self, node: ast.Continue) -> Signal:
        return Signal("continue")

    def exec_Assert(self, node: ast.Assert) -> None:
        self.eval(node.test)

    def exec_Delete(self, node: ast.Delete) -> None:
        frame = self.frame
        for target in node.targets:
            if isinstance(target, ast.Name) and frame is not None:
                frame.locals.pop(target.id, None)

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
        self.bind_name(node.name, Opaque(f"class {node.name} defined in a function"))

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
        frame = self.frame
        if frame is not None:
            frame.locals[name] = value

    # -- assignment --------------------------------------------------------------------------

    def assign(self, target: ast.AST, value: Value) -> None:
        if isinstance(target, ast.Name):
            self.bind_name(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self.assign_many(target.elts, value)
        elif isinstance(target, ast.Attribute):
            self.set_attribute(self.eval(target.value), target.attr, value)
        elif isinstance(target, ast.Subscript):
            self.store_item(self.eval(target.value), self.eval(target.slice), value, target)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, value)

    def assign_many(self, targets: list[ast.expr], value: Value) -> None:
        star = next((k for k, t in enumerate(targets) if isinstance(t, ast.Starred)), None)
        items = self.unpack(value, None if star is not None else len(targets))
        if items is None:
            items = [self.element_of(value)] * len(targets)
        if star is None:
            items = (items + [Opaque("missing item")] * len(targets))[: len(targets)]
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

    def store_item(self, container: Value, index: Value, value: Value, node: ast.AST) -> None:
        if isinstance(container, Tensor):
            kind, member = self.host.tensor_attribute("__setitem__")
            if kind == "member":
                self.at_node(node, _STORE)
                self.call(self.wrap(member), [container, index, value], {})
        elif isinstance(container, Dict):
            container.items[index.obj if isinstance(index, Known) else object()] = value
        elif isinstance(container, Seq) and isinstance(index, Known) and isinstance(index.obj, int):
            if -len(container.items) <= index.obj < len(container.items):
                container.items[index.obj] = value

    # -- branches ----------------------------------------------------------------------------

    def exec_If(self, node: ast.If) -> Optional[Signal]:
        truth = self.truth(self.eval(node.test))
        if truth is True:
            return self.exec_block(node.body)
        if truth is False:
            return self.exec_block(node.orelse)
        return self.fork([node.body, node.orelse])

    def fork(self, blocks: list[list[ast.stmt]]) -> Optional[Signal]:
        """Run arms of a branch the prediction cannot decide, each under ``0..1``."""
        live = [b for b in blocks if not _always_raises(b)]
        if len(live) <= 1:
            return self.exec_block(live[0]) if live else Signal("raise")
        frame = self.frame
        if frame is None:
            return None
        base = frame.locals
        outcomes: list[tuple[dict, Optional[Signal]]] = []
        for block in live:
            frame.locals = dict(base)
            with self.scaled(MAYBE):
                signal = self.exec_block(block)
            outcomes.append((frame.locals, signal))
        through = [env for env, signal in outcomes if signal is None]
        merged = self.merge([env for env, _ in outcomes] if not through else through, base)
        base.clear()
        base.update(merged)
        frame.locals = base
        if not through:
            kinds = {signal.kind for _, signal in outcomes if signal is not None}
            values = [signal.value for _, signal in outcomes if signal is not None]
            kind = "return" if "return" in kinds else kinds.pop()
            return Signal(kind, self.join(values) if kind == "return" else NONE)
        for _, signal in outcomes:
            if signal is not None and signal.kind == "return":
                frame.maybe_returns.append(signal.value)
        if len(through) < len(outcomes):
            self.mult = self.mult * MAYBE  # what follows runs on some paths only
        return None

    def merge(self, envs: list[dict], base: dict) -> dict:
        """Variables after a fork; a tensor from before it stands for all its versions, which
        keeps identities (``q is k``) that held before the branch."""
        out: dict[str, Value] = {}
        for name in dict.fromkeys(name for env in envs for name in env):
            options = [env.get(name, Opaque(f"{name} unbound on some path")) for env in envs]
            before = base.get(name)
            if isinstance(before, Tensor) and all(isinstance(v, Tensor) for v in options):
                out[name] = before
            else:
                out[name] = self.join(options)
        return out

    # -- loops -------------------------------------------------------------------------------

    def exec_For(self, node: ast.For) -> Optional[Signal]:
        source = self.eval(node.iter)
        items = self.iterate(source)
        saved = self.mult
        frame = self.frame
        returns_before = len(frame.maybe_returns) if frame is not None else 0
        if items is None:
            count = Count(0, None, source_text(node.iter), f"{source_text(node.iter)} has no static length")
            with self.scaled(count):
                self.assign(node.target, self.element_of(source))
                signal = self.exec_block(node.body)
            return signal if signal is not None and signal.kind in ("return", "raise") else None
        broke = False
        while True:
            self.at_node(node, _FOR_ITER)  # a lazy iterator resumes from the loop's FOR_ITER
            try:
                item = next(items)
            except StopIteration:
                break
            self.assign(node.target, item)
            signal = self.exec_block(node.body)
            if signal is not None and signal.kind == "break":
                broke = True
                break
            if signal is not None and signal.kind in ("return", "raise"):
                return signal
        if frame is not None and len(frame.maybe_returns) == returns_before:
            self.mult = saved
        return None if broke else self.exec_block(node.orelse)

    exec_AsyncFor = exec_For

    def exec_While(self, node: ast.While) -> Optional[Signal]:
        saved = self.mult
        for _ in range(MAX_WHILE):
            start = len(self.events)
            truth = self.truth(self.eval(node.test))
            if truth is False:
                return self.exec_block(node.orelse)
            if truth is None:
                note = f"while at line {node.lineno}: its test is not static"
                tests = Count(1, None, "N+1", note)
                for event in self.events[start:]:
                    event.count = event.count * tests
                with self.scaled(Count(0, None, "N", note)):
                    signal = self.exec_block(node.body)
                self.mult = saved
                return signal if signal is not None and signal.kind in ("return", "raise") else None
            signal = self.exec_block(node.body)
            if signal is not None and signal.kind == "break":
                return None
            if signal is not None and signal.kind in ("return", "raise"):
                return signal
        return None

    # -- try, with ---------------------------------------------------------------------------

    def exec_Try(self, node: Any) -> Optional[Signal]:
        signal = self.exec_block(node.body)
        if signal is not None and signal.kind == "raise" and node.handlers:
            signal = self.exec_block(node.handlers[0].body)
        elif signal is None:
            signal = self.exec_block(node.orelse)
        final = self.exec_block(node.finalbody)
        return final if final is not None else signal

    exec_TryStar = exec_Try

    def exec_With(self, node: ast.With) -> Optional[Signal]:
        for item in node.items:
            self.eval(item.context_expr)
            if item.optional_vars is not None:
                self.assign(item.optional_vars, Opaque("a context manager's value"))
        return self.exec_block(node.body)

    exec_AsyncWith = exec_With


def _always_raises(block: list[ast.stmt]) -> bool:
    """An arm that can only raise (argument checks): the prediction takes it as not run."""
    return bool(block) and isinstance(block[-1], ast.Raise) and not any(
        isinstance(n, (ast.Return, ast.Break, ast.Continue)) for stmt in block for n in ast.walk(stmt))
