"""Paths that name spec nodes, and a walk over a spec that yields them (torch-free).

A node's path is its position: the owner (``("root", "body")``, ``("class", 2, "body")``,
``("func", 0, "body")``, ``("hook", 1, "expr")``, ``("ctx", 0, "enter")``) followed by field names and tuple indices.
The oracle keys places by path, and the rule registry reads specs through :func:`walk`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Hashable, Iterator

from . import spec as S

Path = tuple[Hashable, ...]


def sub(path: Path, *parts: Hashable) -> Path:
    """The path of a node below ``path``."""
    return (*path, *parts)


def owners(model: S.ModelSpec) -> Iterator[tuple[Path, Any]]:
    """Every body or hook expression of the model with its path."""
    yield ("root", "body"), model.root.body
    for k, cls in enumerate(model.classes):
        yield ("class", k, "body"), cls.body
    for k, func in enumerate(model.functions):
        yield ("func", k, "body"), func.body
    for k, hook in enumerate(model.hooks):
        yield ("hook", k, "expr"), hook.expr
    for k, cm in enumerate(model.contexts):
        yield ("ctx", k, "enter"), cm.enter
        yield ("ctx", k, "exit"), cm.exit


def walk(model: S.ModelSpec) -> Iterator[tuple[Path, Any, tuple[Any, ...]]]:
    """``(path, node, ancestors)`` for every statement and expression, outermost first."""
    for path, top in owners(model):
        if isinstance(top, tuple):
            for i, stmt in enumerate(top):
                yield from _walk(stmt, sub(path, i), ())
        else:
            yield from _walk(top, path, ())


_LEAVES = (S.Var, S.ReadBuffer, S.BreakIf)


def _walk(node: Any, path: Path, ancestors: tuple[Any, ...]) -> Iterator[tuple[Path, Any, tuple[Any, ...]]]:
    yield path, node, ancestors
    if isinstance(node, _LEAVES):
        return
    inner = (*ancestors, node)
    for field in dataclasses.fields(node):
        value = getattr(node, field.name)
        if isinstance(value, tuple):
            for i, item in enumerate(value):
                if dataclasses.is_dataclass(item):
                    yield from _walk(item, sub(path, field.name, i), inner)
        elif dataclasses.is_dataclass(value):
            yield from _walk(value, sub(path, field.name), inner)
