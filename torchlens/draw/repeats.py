"""Runs of identical sibling module boxes (a ``ModuleList`` of twelve blocks) drawn once.

A run is two or more boxes of different modules in one parent box (unrolled, boxes are module
calls, and the calls of one module in a loop stay unrolled) whose modules share a type and a layer
structure: the same ops, scopes, shapes and parameter names in the same order, linked the same way
inside. Each box's nodes come right after the previous box's in the drawing's order
and something of each box feeds the next. The first box stays, fully drawn, labelled
``h.0 .. 11 (Block) x12``; the others' nodes stand for their counterparts in the first box, so
edges into and out of the run keep their ends, and the links from one box into the next (the run
itself) are what ``x12`` says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Union

from ..records import Layer, Op

if TYPE_CHECKING:
    from torchlens.analysis.dot import Scene

Unit = Union[Layer, Op]


@dataclass(frozen=True, slots=True)
class Run:
    """Boxes in a row drawn as their first; ``block_of``: every drawn node of the run -> its box's index."""

    boxes: tuple[str, ...]
    #: Drawn node of a later box -> its counterpart in the first box.
    rename: dict[str, str]
    block_of: dict[str, int]

    def across(self, tail: str, head: str) -> bool:
        """Whether an edge goes from one box of the run into another (what ``xN`` stands for)."""
        return tail in self.block_of and head in self.block_of and self.block_of[tail] != self.block_of[head]


def find_runs(scene: "Scene", units: list[tuple[str, Unit]], node_of: dict[str, str],
              edges: set[tuple[str, str]], module_of_box: dict[str, str]) -> list[Run]:
    """The runs of identical boxes, outer boxes first (runs inside a run's later boxes are not sought).

    ``units``: the layers (rolled) or ops (unrolled) in drawing order, keyed by their node_of key;
    ``module_of_box``: box name -> module address (a call's box is named by the call).
    """
    shown = [(key, unit) for key, unit in units if key in node_of]
    position = {key: i for i, (key, _) in enumerate(shown)}
    members: dict[str, list[int]] = {}
    for i, (key, _) in enumerate(shown):
        box: Optional[str] = scene.nodes[node_of[key]].cluster
        while box is not None:
            members.setdefault(box, []).append(i)
            box = scene.clusters[box].parent
    siblings: dict[Optional[str], list[str]] = {}
    for name in scene.clusters:
        if name in members:
            siblings.setdefault(scene.clusters[name].parent, []).append(name)

    def depth(box: Optional[str]) -> int:
        return 0 if box is None else 1 + depth(scene.clusters[box].parent)

    def signature(box: str) -> Optional[tuple]:
        at = members[box]
        first, last = at[0], at[-1]
        if at != list(range(first, last + 1)):
            return None
        rel = _relative_to(module_of_box[box])

        def inside(key: str) -> int:
            i = position.get(key, -1)
            return i - first if first <= i <= last else -1

        return tuple(_unit_signature(shown[i][1], rel, inside) for i in at)

    runs: list[Run] = []
    gone: set[str] = set()
    for parent in sorted(siblings, key=depth):
        if parent in gone:
            continue
        boxes = sorted(siblings[parent], key=lambda b: members[b][0])
        row: list[str] = []
        for box in boxes + [""]:
            if (row and box and module_of_box[box] != module_of_box[row[-1]]
                    and _continues(row[-1], box, members, signature, shown, node_of, edges)):
                row.append(box)
                continue
            if len(row) > 1:
                runs.append(_run(row, members, shown, node_of))
                gone.update(below(scene, row[1:]))
            row = [box]
    return runs


def _continues(prev: str, box: str, members: dict[str, list[int]], signature: Callable[[str], Optional[tuple]],
               shown: list[tuple[str, Unit]], node_of: dict[str, str], edges: set[tuple[str, str]]) -> bool:
    if members[box][0] != members[prev][-1] + 1:
        return False
    sig = signature(box)
    if sig is None or sig != signature(prev):
        return False
    tails = {node_of[shown[i][0]] for i in members[prev]}
    heads = {node_of[shown[i][0]] for i in members[box]}
    return any(t in tails and h in heads for t, h in edges)


def node_signature(units: list[tuple[str, Unit]], module: str) -> tuple:
    """What two collapsed module nodes must share to be drawn as one: the signatures of the units
    each stands for, in order, with parameters and scopes relative to its module (``module``)."""
    position = {key: i for i, (key, _) in enumerate(units)}
    return tuple(_unit_signature(unit, _relative_to(module), lambda key: position.get(key, -1)) for _, unit in units)


def _relative_to(prefix: str) -> Callable[[str], str]:
    """An address as seen from module ``prefix`` (``.0.weight``), or marked outside it (``~head``)."""

    def rel(address: str) -> str:
        return address[len(prefix):] if address == prefix or address.startswith(prefix + ".") else "~" + address

    return rel


def _unit_signature(unit: Unit, rel: Callable[[str], str], inside: Callable[[str], int]) -> tuple:
    """What must match between counterparts: scope, op, shapes, parameters, buffer, inner links."""
    rolled = isinstance(unit, Layer)
    ops = unit.ops if isinstance(unit, Layer) else (unit,)
    layer = ops[0].layer
    parents = tuple(sorted({inside(p.rpartition(":")[0] if rolled else p) for op in ops for p in op.parents}))
    buffer = rel(ops[0].buffer.address) if ops[0].buffer is not None else None
    return (rel(layer.module), layer.func_name, tuple(op.shape for op in ops), tuple(map(rel, layer.params)),
            buffer, parents)


def _run(row: list[str], members: dict[str, list[int]], shown: list[tuple[str, Unit]],
         node_of: dict[str, str]) -> Run:
    rename: dict[str, str] = {}
    block_of: dict[str, int] = {}
    for k, box in enumerate(row):
        for j, i in enumerate(members[box]):
            node = node_of[shown[i][0]]
            block_of[node] = k
            if k:
                rename[node] = node_of[shown[members[row[0]][j]][0]]
    return Run(tuple(row), rename, block_of)


def below(scene: "Scene", boxes: Iterable[str]) -> set[str]:
    """The boxes and every box inside them."""
    out = set(boxes)
    grew = True
    while grew:
        inner = {name for name, cluster in scene.clusters.items() if cluster.parent in out} - out
        out |= inner
        grew = bool(inner)
    return out
