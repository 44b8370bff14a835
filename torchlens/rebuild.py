"""Rebuilding a recorded structure from its leaf tensors: the inverse of ``capture.containers.flatten``.

Every container kind is rebuilt with its own constructor (a namedtuple's ``_make``, a
dataclass's or ``ModelOutput``'s keyword constructor, a registered type's ``unflatten``).
An opaque value is never half-rebuilt: :class:`OpaqueContainerError` names where it sits and
what it is.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Optional

from torchlens.capture.containers import Node, NodeKind, Unsaved, path_text, registered, resolve_type

from .errors import ContainerTypeMissingError, OpaqueContainerError, TraceInvariantError


def rebuild(root: Node, path: tuple, value_of: Callable[[int], Any], where: str) -> Any:
    """Rebuild the value at ``path`` below ``root``; ``value_of(i)`` gives leaf ``i``'s tensor.

    ``where`` names the root in messages (``output``, ``input``).
    """
    node = root
    for key in path:
        node = node.children[node.keys.index(key)]
    _preflight(node, where + path_text(root, path))
    return _Rebuilder(root, value_of, where).value(node, path)


def _preflight(node: Node, where: str) -> None:
    """Before anything is rebuilt: every class below must be available (a loaded trace names
    classes it never imports) and every constant must have been saved."""
    missing: dict[str, str] = {}
    unsaved: list[str] = []
    todo = [node]
    while todo:
        node = todo.pop()
        todo.extend(node.children)
        if node.kind in (NodeKind.LEAF, NodeKind.OPAQUE, NodeKind.ARGS):
            continue
        if isinstance(node.data, Unsaved) and node.kind in (NodeKind.CONST, NodeKind.CUSTOM, NodeKind.DICT):
            unsaved.append(node.data.text)
        tp = resolve_type(node.type)
        if tp is None or (node.kind == NodeKind.CUSTOM and registered(tp) is None):
            name = str(node.type)
            missing[name] = (
                f"register it with tl.types.register_container({name.rpartition('.')[2]}, flatten, unflatten)"
                if node.kind == NodeKind.CUSTOM else f"import {node.type.module} before rebuilding"
            )
    if missing:
        raise ContainerTypeMissingError(
            f"cannot rebuild {where}: it holds " + "; ".join(f"{name}, which this process lacks: {what}"
                                                          for name, what in missing.items())
        )
    if unsaved:
        raise ContainerTypeMissingError(
            f"cannot rebuild {where}: the saved trace could not keep these values as plain data: "
            f"{', '.join(unsaved)}; rebuild it from the live trace instead"
        )


class _Rebuilder:
    def __init__(self, root: Node, value_of: Callable[[int], Any], where: str) -> None:
        self.root, self.value_of, self.where = root, value_of, where

    def value(self, node: Node, path: tuple) -> Any:
        if node.kind == NodeKind.LEAF:
            return self.value_of(node.data)
        if node.kind == NodeKind.CONST:
            return node.data
        if node.kind == NodeKind.OPAQUE:
            kind = node.type
            raise OpaqueContainerError(
                f"cannot rebuild {self.where}{path_text(self.root, path)}: it is a {kind.__module__}.{kind.__qualname__}, "
                f"which torchlens records as opaque (its {len(node.children)} tensors are recorded, its structure "
                f"is not); register it with tl.types.register_container({kind.__name__}, flatten, unflatten) "
                "or read its tensors from the container view"
            )
        items = [self.value(child, (*path, key)) for key, child in zip(node.keys, node.children)]
        return _construct(node, items)


def _construct(node: Node, items: list) -> Any:
    kind = node.kind
    if kind == NodeKind.ARGS:
        positional = [v for k, v in zip(node.keys, items) if isinstance(k, int)]
        return tuple(positional), {k: v for k, v in zip(node.keys, items) if isinstance(k, str)}
    tp: Optional[type[Any]] = resolve_type(node.type)
    custom = registered(tp) if tp is not None and kind == NodeKind.CUSTOM else None
    if tp is None or (kind == NodeKind.CUSTOM and custom is None):  # _preflight found them all first
        raise TraceInvariantError(f"recorded container class {node.type} vanished while rebuilding")
    if kind == NodeKind.NAMEDTUPLE:
        return tp._make(items)
    if kind in (NodeKind.TUPLE, NodeKind.LIST):
        return tp(items)
    if kind == NodeKind.DICT:
        if node.data is not None and issubclass(tp, defaultdict):
            return tp(node.data, zip(node.keys, items))
        return tp(zip(node.keys, items))
    if kind in (NodeKind.DATACLASS, NodeKind.MODEL_OUTPUT):
        return tp(**dict(zip(node.keys, items)))
    if custom is not None:
        return custom[1](node.data, items)
    raise TraceInvariantError(f"recorded container kind {kind!r} has no rebuild rule")
