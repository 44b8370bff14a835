"""Pytree structure as path-only container records (the JAX backend's ``paths_only`` capability).

A pytree is recorded with the keys of every level (positions, dict keys, attribute names from
JAX's key paths), so ``op.container`` can be indexed like the original. Nothing here is enough
to rebuild the value, and nothing claims it is: every node is ``reconstructable=False`` and the
root carries ``ContainerCapability.PATHS_ONLY``. Builtin pytrees keep their kinds (tuple, list,
dict, namedtuple); any other registered pytree node (a Flax ``State``, a registered dataclass)
is ``custom``.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from ..containers import Node, NodeKind

_KINDS: dict[type, NodeKind] = {tuple: NodeKind.TUPLE, list: NodeKind.LIST, dict: NodeKind.DICT}


def is_array(value: Any) -> bool:
    """Whether ``value`` is an array leaf (a JAX array, or a NumPy array given as an input)."""
    return isinstance(value, (jax.Array, np.ndarray))


def paths_node(value: Any, leaves: list) -> Node:
    """The path-only node of ``value``; its array leaves are appended to ``leaves`` in order."""
    if is_array(value):
        leaves.append(value)
        return Node(NodeKind.LEAF, type(value), data=len(leaves) - 1, num_leaves=1, reconstructable=False)
    entries, _ = jax.tree_util.tree_flatten_with_path(value, is_leaf=lambda v: v is not value)
    if value is None or (entries and entries[0][0] == ()):
        return Node(NodeKind.CONST, type(value), data=value, reconstructable=False)
    keys = tuple(_key(path[0]) for path, _ in entries)
    children = tuple(paths_node(child, leaves) for _, child in entries)
    return Node(_kind(value), type(value), keys, children, None, sum(c.num_leaves for c in children), False)


def _kind(value: Any) -> NodeKind:
    kind = _KINDS.get(type(value))
    if kind is not None:
        return kind
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return NodeKind.NAMEDTUPLE
    return NodeKind.CUSTOM


def _key(entry: Any) -> Any:
    """The plain key of one key-path entry (``SequenceKey``, ``DictKey``, ``GetAttrKey``, ...)."""
    for attribute in ("idx", "key", "name"):
        if hasattr(entry, attribute):
            return getattr(entry, attribute)
    return str(entry)
