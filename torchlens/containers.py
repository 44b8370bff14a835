"""The :class:`Container` view: a recorded input or output structure, indexed like the original.

``op.container`` on an output op is a view of the model's return value; indexing it with the
original's keys, fields and positions gives the leaf :class:`~torchlens.records.Op` or a
nested :class:`Container`; ``reconstruct()`` rebuilds the Python object from saved leaf values.
:class:`ContainerRecords` is what a trace keeps of the containers one capture recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, Union

from torchlens.capture.backends import ContainerCapability
from torchlens.capture.containers import POSITIONAL, Node, NodeKind, RawContainer, Role, leaf_indices, path_text

from .errors import ContainerKeyError, OpaqueContainerError, TorchLensValueError
from .rebuild import rebuild


class Container:
    """A view of one recorded container (or of a call's arguments) at one path below its root."""

    __slots__ = ("_root", "_node", "_path")

    def __init__(self, root: RawContainer, path: tuple = ()) -> None:
        node = root.spec
        for key in path:
            node = node.children[node.keys.index(key)]
        self._root, self._node, self._path = root, node, tuple(path)

    @property
    def kind(self) -> NodeKind:
        """This container's kind: ``tuple``, ``list``, ``dict``, ``namedtuple``, ``dataclass``,
        ``model_output``, ``custom``, ``opaque`` or ``args`` (a call's arguments)."""
        return self._node.kind

    @property
    def type_name(self) -> str:
        """Its class name (``dict``, ``CausalLMOutputWithPast``)."""
        return self._node.type_name

    @property
    def root_kind(self) -> Role:
        """What the root was: ``model_output``, ``model_input``, ``module_output``, ``module_input``."""
        return self._root.role

    @property
    def root_id(self) -> str:
        """Which root: ``output``, ``input``, ``{module call}/output`` or ``{module call}/input``."""
        return self._root.id

    @property
    def path(self) -> tuple:
        """The keys from the root to this container (``()`` for the root)."""
        return self._path

    @property
    def reconstructable(self) -> bool:
        """Whether :meth:`reconstruct` succeeds: the structure was fully recorded (not paths only,
        as the JAX backend records it), nothing opaque below, every leaf value saved."""
        if self._root.capability is not ContainerCapability.FULL_SPEC:
            return False
        return self._node.reconstructable and all(self._value(i) is not None for i in leaf_indices(self._node))

    def keys(self) -> tuple:
        """Its keys, field names or positions, in order (for ``opaque``: where tensors were found)."""
        return self._node.keys

    def __len__(self) -> int:
        return len(self._node.children)

    def __getitem__(self, key: Any) -> Union["Container", Any]:
        """The child at ``key``: a leaf's :class:`Op` (``None`` if no op produced it, e.g. a
        parameter), a nested :class:`Container`, or a recorded constant (``None``, a number)."""
        position = _position(self._node, key)
        if position is None:
            raise ContainerKeyError(
                f"{self._root.id}{path_text(self._root.spec, self._path)} ({self.type_name}) has no key {key!r}; "
                f"its keys are {list(self._node.keys)!r}"
            )
        child, child_key = self._node.children[position], self._node.keys[position]
        if child.kind == NodeKind.LEAF:
            return self._op(child.data)
        if child.kind == NodeKind.CONST:
            return child.data
        return Container(self._root, (*self._path, child_key))

    @property
    def leaves(self) -> tuple:
        """The ops of every tensor below, in order (``None`` where no op produced one)."""
        return tuple(self._op(i) for i in leaf_indices(self._node))

    def reconstruct(self) -> Any:
        """Rebuild the original Python object from the saved leaf values.

        Raises :class:`~torchlens.errors.OpaqueContainerError` naming the path and type of an
        object torchlens could not record the structure of, or when only its key paths were
        recorded (the JAX backend's ``paths_only``).
        """
        if self._root.capability is not ContainerCapability.FULL_SPEC:
            raise OpaqueContainerError(
                f"cannot rebuild {self._root.id}{path_text(self._root.spec, self._path)} ({self.type_name}): "
                f"its backend records container structure as {self._root.capability.value}, which indexes "
                "the leaves but cannot rebuild the value; read the leaves (container.leaves) instead"
            )
        return rebuild(self._root.spec, self._path, self._leaf_value, self._root.id)

    def __repr__(self) -> str:
        where = path_text(self._root.spec, self._path)
        return f"<Container {self.type_name}[{len(self)}] ({self.root_kind}) {self._root.id}{where}>"

    def _op(self, leaf: int) -> Any:
        return _leaf_op(self._root, leaf)

    def _value(self, leaf: int) -> Any:
        if self._root.values is not None:
            return self._root.values[leaf]
        op = self._op(leaf)
        return None if op is None else op.out

    def _leaf_value(self, leaf: int) -> Any:
        value = self._value(leaf)
        if value is None:
            raise TorchLensValueError(
                f"cannot rebuild {self._root.id}{path_text(self._root.spec, self._path)}: leaf {leaf} has no "
                "saved value; trace with tl.options.CaptureOptions(save=\"all\") (the default) to keep op outputs"
            )
        return value


def _position(node: Node, key: Any) -> Optional[int]:
    """Where ``key`` is among ``node``'s children: by key, or by position where the kind allows it."""
    if key in node.keys:
        return node.keys.index(key)
    if isinstance(key, int) and not isinstance(key, bool) and node.kind in POSITIONAL:
        if -len(node.keys) <= key < len(node.keys):
            return key % len(node.keys)
    return None


@dataclass(frozen=True, slots=True, eq=False)
class ContainerRecords:
    """What a trace keeps of the containers its capture recorded, and how to run the model again."""

    #: Every recorded root; the model output's first (recorded on every capture).
    roots: tuple[RawContainer, ...]
    #: The traced model and the keyword arguments it was called with (for ``trace.run``).
    model: Any
    forward_kwargs: Mapping[str, Any]

    @classmethod
    def bind(cls, roots: Sequence[RawContainer], ops: Sequence[Any], model: Any,
             forward_kwargs: Mapping[str, Any]) -> "ContainerRecords":
        """Point every root at the trace's ops (capture order) and keep them."""
        for root in roots:
            root.ops = ops
        return cls(tuple(roots), model, dict(forward_kwargs))

    @property
    def output(self) -> RawContainer:
        """The model output's root."""
        return self.roots[0]

    def reconstruct_output(self) -> Any:
        """The model's return value rebuilt from the output tensors it returned."""
        return Container(self.output).reconstruct()

    def at(self, role: Role, path: tuple) -> Any:
        """``trace.output_at`` / ``trace.input_at``: the leaf op, container or constant at ``path``."""
        root = next((r for r in self.roots if r.role == role), None)
        if root is None:
            raise TorchLensValueError(
                "the model inputs' structure was not recorded; trace with "
                "tl.options.CaptureOptions(capture_container_structure=True) to use input_at"
            )
        value: Any = _leaf_op(root, 0) if root.spec.kind == NodeKind.LEAF else Container(root)
        for depth, key in enumerate(path):
            if not isinstance(value, Container):
                raise ContainerKeyError(
                    f"{root.id}{path_text(root.spec, path[:depth])} is not a container, so it has no key {key!r}"
                )
            value = value[key]
        return value


def _leaf_op(root: RawContainer, leaf: int) -> Any:
    """The op whose output leaf ``leaf`` of ``root`` is, or ``None`` (e.g. a parameter)."""
    index = root.leaves[leaf]
    return root.ops[index] if index >= 0 else None


def container_of(spec: Any) -> Optional[Container]:
    """``op.container``: the view holding an op's tensor, or ``None`` outside any container.

    Output ops see the model's whole return value; input ops (and ops in module-call inputs)
    see the argument they came in.
    """
    if spec is None:
        return None
    root, path = spec.root, spec.path
    if root.spec.kind == NodeKind.ARGS:
        return Container(root, path[:1]) if len(path) > 1 else None
    return Container(root) if path else None


def records_of(records: Optional[ContainerRecords]) -> ContainerRecords:
    """A trace's container records; a trace not made by ``tl.trace`` has none."""
    if records is None:
        raise TorchLensValueError(
            "this trace has no container records (it was not made by tl.trace); trace the model again"
        )
    return records
