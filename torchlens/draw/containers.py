"""Containers in a drawing, as the spec's Visualization section says (``show_containers``).

Each setting adds to the one before:

- ``"labels"``: the key path (``['logits']``, ``[1][0]``, ``.hidden``) on the edge out of a
  model-input leaf, into a model-output leaf, on the edges out of a module's returned leaf, and
  on the edges that carry a leaf of a container passed into a module call into that call.
- ``"collapsed"``: one node per container, ``dict[3] (model output)``, listing up to
  ``container_max_inline`` keys, tied to its leaves by light dashed member-of lines; a flat
  container of more leaves than that is summarised by one node, ``tuple x16 (model output)``,
  which stands for its leaves and is the container node.
- ``"nodes"``: a model-input container fans out to its leaves and model-output leaves fan into a
  sink node, on solid edges carrying the keys; mid-graph containers keep the dashed ties, and
  dataflow is never routed through a container node.

Membership is per pass: a rolled node of several passes carries no container decoration. A
container given to a module call (``self.head([a, b])``) is a mid-graph container titled by the
call (``list[2] (head:1 input)``): its leaves are other ops' outputs, tied to it, and its keys
label only the edges that enter the call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from torchlens.capture.containers import POSITIONAL, Node, NodeKind, Role, leaf_indices, path_text

if TYPE_CHECKING:
    from .trace_view import TraceDrawing

CONTAINER_FILL = "#fff7d6"
#: A member-of tie; mid-graph ties also leave the layout alone (``constraint=false``).
TIE = {"style": "dashed", "arrowhead": "none", "color": "#b0a060"}


def decorate_containers(drawing: "TraceDrawing") -> None:
    """Add the container decoration ``drawing.settings.show_containers`` asks for."""
    level = drawing.settings.show_containers
    records = drawing.trace.containers
    if not isinstance(level, str) or records is None:
        return
    for root in records.roots:
        if root.role in (Role.MODEL_INPUT, Role.MODULE_INPUT):
            for key, child in zip(root.spec.keys, root.spec.children):
                if child.num_leaves and child.kind != NodeKind.LEAF:
                    _decorate(drawing, root, child, (key,), level)
        elif root.role in (Role.MODEL_OUTPUT, Role.MODULE_OUTPUT) and root.spec.num_leaves and root.spec.kind != NodeKind.LEAF:
            _decorate(drawing, root, root.spec, (), level)


def _role_text(root: Any) -> str:
    if root.role == Role.MODEL_OUTPUT:
        return "model output"
    if root.role == Role.MODEL_INPUT:
        return "model input"
    call, _, which = root.id.partition("/")
    return f"{call} {which}"


def _title(node: Node, role: str) -> str:
    if node.kind == NodeKind.MODEL_OUTPUT:
        return f"{node.type_name} ({role})"
    return f"{node.type_name}[{len(node.keys)}] ({role})"


def _leaf_nodes(drawing: "TraceDrawing", root: Any, node: Node, prefix: tuple) -> list[tuple[str, str]]:
    """``(drawn node, key path text)`` of each leaf below ``node`` that has a single-pass node."""
    out = []
    for leaf, path in zip(leaf_indices(node), _paths(node, prefix)):
        index = root.leaves[leaf]
        if index < 0:
            continue
        op = drawing.trace.ops[index]
        rolled = drawing.settings.view == "rolled"
        if rolled and op.layer.num_passes > 1:
            continue  # per-pass membership: a rolled node of several passes carries no decoration
        name = drawing.node_of.get(op.layer_label if rolled else op.label)
        if name is not None and name not in drawing.module_nodes:
            out.append((name, path_text(root.spec, path)))
    return out


def _paths(node: Node, prefix: tuple) -> list[tuple]:
    if node.kind == NodeKind.LEAF:
        return [prefix]
    return [p for key, child in zip(node.keys, node.children) for p in _paths(child, (*prefix, key))]


def _decorate(drawing: "TraceDrawing", root: Any, node: Node, prefix: tuple, level: str) -> None:
    scene = drawing.scene
    leaves = _leaf_nodes(drawing, root, node, prefix)
    if not leaves:
        return
    role = _role_text(root)
    is_input, is_output = root.role == Role.MODEL_INPUT, root.role == Role.MODEL_OUTPUT
    into = drawing.nodes_inside(root.id.partition("/")[0]) if root.role == Role.MODULE_INPUT else None
    if level == "labels":
        _label_edges(drawing, leaves, is_output, into)
        return
    name = f"container {root.id}{path_text(root.spec, prefix)}"
    max_inline = drawing.settings.container_max_inline
    flat = node.kind in POSITIONAL and all(c.kind == NodeKind.LEAF for c in node.children)
    if (is_input or is_output) and flat and len(leaves) == len(node.children) > max_inline:
        _summarise(drawing, name, f"{node.type_name} x{len(leaves)} ({role})", [n for n, _ in leaves], is_input)
        return
    keys = [str(k) for k in node.keys]
    shown = ", ".join(keys[:max_inline]) + (f", +{len(keys) - max_inline} more" if len(keys) > max_inline else "")
    label = _title(node, role) + (f"\n{shown}" if max_inline and keys else "")
    scene.node(name, label, None, shape="folder", fillcolor=CONTAINER_FILL, style="filled")
    if level == "nodes" and (is_input or is_output):
        for leaf, key in leaves:
            if is_input:
                scene.edge(name, leaf, label=key)
            else:
                scene.edge(leaf, name, label=key)
        return
    _label_edges(drawing, leaves, is_output, into)
    tie = TIE if is_input or is_output else {**TIE, "constraint": "false"}
    for leaf, _ in leaves:
        if is_input:
            scene.edge(name, leaf, **tie)
        else:
            scene.edge(leaf, name, **tie)


def _label_edges(drawing: "TraceDrawing", leaves: list[tuple[str, str]], is_output: bool,
                 into: Optional[set[str]]) -> None:
    """Key labels on the real edges: out of input leaves, into output leaves, out of module returns,
    and out of a module call's argument leaves into the nodes ``into`` of that call."""
    keys = dict(leaves)
    for tail, head, attrs in drawing.scene.edges:
        end = head if is_output else tail
        if into is not None and head not in into:
            continue
        if end in keys and attrs.get("style") not in ("dashed", "invis"):
            attrs["label"] = f"{attrs['label']} {keys[end]}" if "label" in attrs else keys[end]


def _summarise(drawing: "TraceDrawing", name: str, label: str, members: list[str], is_input: bool) -> None:
    """Draw one node for a flat container's leaves: edges to the leaves go to it instead."""
    scene = drawing.scene
    first: Optional[Any] = scene.nodes.get(members[0])
    scene.node(name, label, first.cluster if first else None, shape="oval", fillcolor=CONTAINER_FILL,
               style="filled", peripheries="2")
    gone = set(members)
    for member in members:
        scene.nodes.pop(member, None)
    edges, seen = [], set()
    for tail, head, attrs in scene.edges:
        tail, head = (name if tail in gone else tail), (name if head in gone else head)
        if (tail, head) in seen or tail == head:
            continue
        seen.add((tail, head))
        edges.append((tail, head, attrs))
    scene.edges[:] = edges
