"""Container structure: flatten a nested value into tensor leaves and a spec tree.

The spec tree (:class:`Node`) records, for every container met, its kind, its type and its
child keys, so the value can be rebuilt from its leaves later (``torchlens.rebuild``).
Supported: tuples, lists, dicts, namedtuples, dataclasses, Hugging Face ``ModelOutput``
(recognised by its class name and module, so ``transformers`` is never imported here) and
user types registered with :func:`register`. Plain scalars (``None``, numbers, strings,
dtypes) are constants kept in the tree. Anything else is *opaque*: its tensors are found
by :func:`capture.opaque.tensors_inside` and kept as leaves, but it cannot be rebuilt.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import torch

from torchlens.analysis.caches import PerType
from torchlens.analysis.errors import ContainerFlattenError

from .backends import ContainerCapability
from .named import NamedEnum
from .opaque import tensors_inside

class NodeKind(NamedEnum):
    """What a spec-tree node is (``Container.kind``); the values are the names users read."""

    LEAF = "leaf"
    CONST = "constant"
    OPAQUE = "opaque"
    TUPLE = "tuple"
    LIST = "list"
    DICT = "dict"
    NAMEDTUPLE = "namedtuple"
    DATACLASS = "dataclass"
    MODEL_OUTPUT = "model_output"
    CUSTOM = "custom"
    #: A call's positional and keyword arguments taken together.
    ARGS = "args"


#: Kinds whose children can also be reached by position.
POSITIONAL = frozenset({NodeKind.TUPLE, NodeKind.LIST, NodeKind.CUSTOM, NodeKind.NAMEDTUPLE, NodeKind.MODEL_OUTPUT})
#: Kinds whose children are shown as attributes (``.name``) rather than items (``[key]``).
ATTRIBUTES = frozenset({NodeKind.NAMEDTUPLE, NodeKind.DATACLASS})


class Role(NamedEnum):
    """What a recorded container was to the model (``RawContainer.role``)."""

    MODEL_INPUT = "model_input"
    MODEL_OUTPUT = "model_output"
    MODULE_INPUT = "module_input"
    MODULE_OUTPUT = "module_output"

_CONSTANTS = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis), range, slice,
              torch.dtype, torch.device, torch.Size, torch.layout, torch.memory_format, enum.Enum)

#: User-registered containers: type -> (flatten, unflatten). Filled by ``tl.types.register_container``.
REGISTRY: dict[type, tuple[Callable, Callable]] = {}


@dataclass(frozen=True, slots=True)
class TypeRef:
    """A class named by a loaded trace (``module``, ``qualname``) but not looked up yet: loading
    never imports. Rebuilding a container resolves it (:func:`resolve_type`)."""

    module: str
    qualname: str

    @property
    def __name__(self) -> str:  # Node.type_name reads it as it reads a class's
        return self.qualname.rpartition(".")[2]

    def __str__(self) -> str:
        return f"{self.module}.{self.qualname}"


@dataclass(frozen=True, slots=True)
class Unsaved:
    """A constant or ``aux_data`` a saved trace could not hold as plain data (its ``repr``)."""

    text: str


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    """One value of a flattened structure."""

    #: A leaf, a constant, an opaque value or a container kind.
    kind: NodeKind
    #: The value's type (``None`` for ``ARGS``).
    type: Any
    #: Child keys: positions, dict keys, field names; for ``OPAQUE`` the attribute paths
    #: (``.layers[0].keys``) at which tensors were found inside it.
    keys: tuple = ()
    children: tuple["Node", ...] = ()
    #: ``LEAF``: the leaf index; ``CONST``: the value; ``CUSTOM``: flatten's aux data;
    #: ``DICT``: a ``defaultdict``'s default factory.
    data: Any = None
    #: How many tensor leaves lie below (1 for a leaf).
    num_leaves: int = 0
    #: Whether the value can be rebuilt: no opaque value anywhere below.
    reconstructable: bool = True

    @property
    def type_name(self) -> str:
        """The value's class name (``args`` for a call's arguments)."""
        return "args" if self.type is None else self.type.__name__


@dataclass(slots=True, eq=False)
class Flat:
    """A flattened value: its spec tree and its tensor leaves, in order."""

    spec: Node
    leaves: list[torch.Tensor]


@dataclass(slots=True, eq=False)
class RawContainer:
    """A recorded container root: a model's or a module call's inputs or output."""

    #: What the container was to the model.
    role: Role
    #: ``input``, ``output``, ``{module call}/input`` or ``{module call}/output``.
    id: str
    spec: Node
    #: For each leaf, the index of the op whose output it is (-1: none, e.g. a parameter).
    leaves: list[int]
    #: The leaf tensors themselves, kept for the model output only (``reconstruct_output``).
    values: Optional[tuple] = None
    #: The trace's ops in capture order, bound once the trace is built.
    ops: Sequence[Any] = field(default=())
    #: How much of the structure the backend recorded: ``PATHS_ONLY`` roots (JAX) can be
    #: indexed but are never reconstructable.
    capability: ContainerCapability = ContainerCapability.FULL_SPEC

    def __repr__(self) -> str:
        return f"<RawContainer {self.role} {self.id!r}: {self.spec.type_name}, {len(self.leaves)} leaves>"


@dataclass(frozen=True, slots=True)
class ContainerSpec:
    """Where one op's tensor sits in a recorded container: the root and the key path."""

    root: RawContainer
    path: tuple

    def __repr__(self) -> str:
        return f"ContainerSpec({self.root.id}{path_text(self.root.spec, self.path)})"


def register(tp: type, flatten: Callable, unflatten: Callable) -> None:
    """Record ``tp`` as a user container (validated by ``tl.types.register_container``)."""
    REGISTRY[tp] = (flatten, unflatten)
    registered.clear()


def flatten(value: Any) -> Flat:
    """Flatten ``value`` into its tensor leaves and spec tree; never fails on unknown objects."""
    if type(value) is torch.Tensor:  # a lone plain tensor (a model's usual output): one spec serves all
        return Flat(_LONE_TENSOR, [value])
    leaves: list[torch.Tensor] = []
    return Flat(_Flattener(leaves).node(value), leaves)


#: The spec of a lone plain tensor (frozen, so one instance serves every flattening of one).
_LONE_TENSOR = Node(NodeKind.LEAF, torch.Tensor, data=0, num_leaves=1)


def flatten_call(args: tuple, kwargs: dict) -> Flat:
    """Flatten a call's arguments into one ``ARGS`` node: positions first, then keywords."""
    leaves: list[torch.Tensor] = []
    flattener = _Flattener(leaves)
    children = tuple(flattener.node(v) for v in (*args, *kwargs.values()))
    return Flat(_container(NodeKind.ARGS, None, (*range(len(args)), *kwargs), children), leaves)


def leaf_paths(node: Node, prefix: tuple = ()) -> list[tuple]:
    """The key path of every leaf below ``node``, in leaf order."""
    if node.kind == NodeKind.LEAF:
        return [prefix]
    return [p for key, child in zip(node.keys, node.children) for p in leaf_paths(child, (*prefix, key))]


def leaf_indices(node: Node) -> list[int]:
    """The leaf indices below ``node``, in order."""
    if node.kind == NodeKind.LEAF:
        return [node.data]
    return [i for child in node.children for i in leaf_indices(child)]


def path_text(root: Node, path: Sequence) -> str:
    """``path`` written the way Python reaches it: ``["past_key_values"][0][0]``, ``.field``."""
    parts, node = [], root
    for key in path:
        if node.kind == NodeKind.OPAQUE:
            parts.append(key)
        elif node.kind in ATTRIBUTES and isinstance(key, str):
            parts.append(f".{key}")
        else:
            parts.append(f"[{key!r}]")
        node = node.children[node.keys.index(key)] if key in node.keys else node
    return "".join(parts)


def _container(kind: NodeKind, tp: Any, keys: tuple, children: tuple, data: Any = None) -> Node:
    return Node(kind, tp, tuple(keys), children, data, sum(c.num_leaves for c in children),
                all(c.reconstructable for c in children))


def _registered(tp: type) -> Optional[tuple[Callable, Callable]]:
    """The ``(flatten, unflatten)`` registered for ``tp`` or its nearest base, if any."""
    return next((REGISTRY[base] for base in tp.__mro__ if base in REGISTRY), None)


registered: PerType[Optional[tuple[Callable, Callable]]] = PerType(_registered)


def resolve_type(tp: Any) -> Optional[type]:
    """The class a :class:`TypeRef` names, if this process has it: a registered container type
    of that name, else the class in its module when that module is already imported (looked
    up with ``vars``; nothing is imported or run). A class is returned as it is."""
    if not isinstance(tp, TypeRef):
        return tp
    for known in REGISTRY:
        if known.__module__ == tp.module and known.__qualname__ == tp.qualname:
            return known
    value: Any = sys.modules.get(tp.module)
    for part in tp.qualname.split("."):
        value = vars(value).get(part) if hasattr(value, "__dict__") else None
    return value if isinstance(value, type) else None


def _subclasses_model_output(tp: type) -> bool:
    """Whether ``tp`` subclasses ``transformers``' ``ModelOutput`` (without importing it)."""
    return any(c.__name__ == "ModelOutput" and c.__module__.startswith("transformers") for c in tp.__mro__)


_is_model_output: PerType[bool] = PerType(_subclasses_model_output)


class _Flattener:
    """One flattening: appends leaves in order; an object met again inside itself is opaque."""

    def __init__(self, leaves: list[torch.Tensor]) -> None:
        self.leaves = leaves
        self.active: set[int] = set()

    def node(self, value: Any) -> Node:
        if isinstance(value, torch.Tensor):
            self.leaves.append(value)
            return Node(NodeKind.LEAF, type(value), data=len(self.leaves) - 1, num_leaves=1)
        tp = type(value)
        custom = registered(tp)
        if custom is None and isinstance(value, _CONSTANTS):
            return Node(NodeKind.CONST, tp, data=value)
        if id(value) in self.active:
            return self._opaque(value)
        self.active.add(id(value))
        try:
            return self._custom(value, custom) if custom is not None else self._builtin(value, tp)
        finally:
            self.active.discard(id(value))

    def _builtin(self, value: Any, tp: type) -> Node:
        if isinstance(value, tuple) and hasattr(tp, "_fields") and hasattr(tp, "_make"):
            return self._each(NodeKind.NAMEDTUPLE, tp, tp._fields, value)
        if _is_model_output(tp):
            return self._each(NodeKind.MODEL_OUTPUT, tp, tuple(value.keys()), value.values())
        if isinstance(value, tuple):
            return self._each(NodeKind.TUPLE, tp, range(len(value)), value)
        if isinstance(value, list):
            return self._each(NodeKind.LIST, tp, range(len(value)), value)
        if isinstance(value, dict):
            return self._each(NodeKind.DICT, tp, tuple(value), value.values(), getattr(value, "default_factory", None))
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            names = tuple(f.name for f in dataclasses.fields(value) if f.init)
            return self._each(NodeKind.DATACLASS, tp, names, (getattr(value, n) for n in names))
        return self._opaque(value)

    def _each(self, kind: NodeKind, tp: type, keys: Any, values: Any, data: Any = None) -> Node:
        return _container(kind, tp, tuple(keys), tuple(self.node(v) for v in values), data)

    def _custom(self, value: Any, functions: tuple[Callable, Callable]) -> Node:
        name = type(value).__qualname__
        try:
            children, aux = functions[0](value)
        except Exception as error:
            raise ContainerFlattenError(
                f"the flatten function registered for {name} raised {type(error).__name__}: {error}"
            ) from error
        if not isinstance(children, (list, tuple)):
            raise ContainerFlattenError(
                f"the flatten function registered for {name} must return (children, aux_data) with "
                f"children a list or tuple, got children of type {type(children).__name__}"
            )
        return self._each(NodeKind.CUSTOM, type(value), range(len(children)), children, aux)

    def _opaque(self, value: Any) -> Node:
        found = tensors_inside(value)
        children = []
        for _, tensor in found:
            self.leaves.append(tensor)
            children.append(Node(NodeKind.LEAF, type(tensor), data=len(self.leaves) - 1, num_leaves=1))
        return Node(NodeKind.OPAQUE, type(value), tuple(p for p, _ in found), tuple(children), None, len(found), False)
