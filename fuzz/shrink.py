"""Shrink a failing spec to a minimal one, greedily and torch-free.

The shrinker only knows the spec's shape: it deletes list elements (statements, children,
functions, hooks, weights), replaces a loop or branch by its body, replaces an expression by
one of its operands, lowers integers and clears flags. A candidate is kept when it is
smaller and ``still_fails`` says it fails the same way; candidates that break a reference
fail differently (the oracle raises :class:`~fuzz.oracle.SpecError`) and are dropped by the
caller's predicate. Whatever the campaign found, the regression it prints is this result.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Iterator

from . import spec as S

_EXPRS = (S.Var, S.Unary, S.Scalar, S.Binary, S.MaxSlots, S.MatParam, S.CallChild, S.CallFunc,
          S.ListComp, S.GenSum, S.MapSum, S.SumChildren, S.MultiOut, S.MapRows, S.ReduceRows, S.ReadBuffer)
_STMTS = (S.Assign, S.For, S.ForModules, S.ForParams, S.While, S.ForGen, S.ForRows, S.With, S.Try, S.Unpack, S.BreakIf,
          S.IfIndex, S.IfShape, S.BufInplace, S.BufAssign)


def size(node: Any) -> int:
    """How big a spec is: nodes, list elements and integer values (strictly falls per step)."""
    if isinstance(node, tuple):
        return 1 + sum(size(item) for item in node)
    if isinstance(node, bool) or node is None or isinstance(node, (str, float)):
        return int(bool(node)) if isinstance(node, bool) else 0
    if isinstance(node, int):
        return max(node, 0)
    return 1 + sum(size(getattr(node, f.name)) for f in dataclasses.fields(node))


def shrink(model: S.ModelSpec, still_fails: Callable[[S.ModelSpec], bool], seconds: float = 120.0) -> S.ModelSpec:
    """The smallest variant of ``model`` found for which ``still_fails`` holds (greedy)."""
    deadline = time.monotonic() + seconds
    current, current_size = model, size(model)
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for candidate in variants(current):
            if time.monotonic() >= deadline:
                break
            candidate_size = size(candidate)
            if candidate_size < current_size and still_fails(candidate):
                current, current_size, improved = candidate, candidate_size, True
                break
    return current


def variants(node: Any) -> Iterator[Any]:
    """Every one-step simplification of ``node`` (the node replaced as a whole)."""
    if isinstance(node, _EXPRS) and not isinstance(node, S.Var):
        yield S.Var()
        for value in _fields(node):
            if isinstance(value, _EXPRS):
                yield value
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        for smaller in _value_variants(value):
            yield dataclasses.replace(node, **{f.name: smaller})


def _value_variants(value: Any) -> Iterator[Any]:
    if isinstance(value, tuple):
        yield from _tuple_variants(value)
    elif isinstance(value, bool):
        if value:
            yield False
    elif isinstance(value, int):
        for smaller in sorted({0, 1, value - 1}):
            if 0 <= smaller < value:
                yield smaller
    elif dataclasses.is_dataclass(value):
        yield from variants(value)


def _tuple_variants(items: tuple) -> Iterator[tuple]:
    for i in range(len(items)):  # delete one element
        yield items[:i] + items[i + 1:]
    for i, item in enumerate(items):  # a loop or branch replaced by its body
        if isinstance(item, _STMTS):
            for body in S.stmt_bodies(item):
                yield items[:i] + body + items[i + 1:]
    for i, item in enumerate(items):
        if dataclasses.is_dataclass(item):
            for smaller in variants(item):
                yield items[:i] + (smaller,) + items[i + 1:]


def _fields(node: Any) -> Iterator[Any]:
    return (getattr(node, f.name) for f in dataclasses.fields(node))
