"""A trace as a :class:`~torchlens.draw.scene.Scene`: rolled (one node per layer) or unrolled (one
node per op), modules as nested boxes, deep or chosen modules as one node, repeats folded.

Rolled: a layer's node is named by its layer label and shows ``xN`` passes, the output shape (or
the range over passes) and its parameters; an edge is labelled with the passes it carries when it
does not carry all of them, and an edge into a layer that ran first (a loop-carried value) is
drawn back up without pushing the layout. Unrolled: an op's node is named by its op label; each
module call is its own box (``block:1``, ``block:2``). Shapes come from the records' metadata,
never from saved outputs, so traces that kept no outputs draw the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional

from torchlens.analysis.dot import BACK_EDGE, INPUT_FILL, OUTPUT_FILL, Cluster, Node, Scene, edge_key, pass_label, pass_ranges
from torchlens.analysis.explain import explain_layer

from ..records import Layer, Op
from .modules import ROOT, ModuleTree, call_parents, human, param_count
from .repeats import Unit, below, find_runs, node_signature

if TYPE_CHECKING:
    from ..trace import Trace

#: BatchNorm's bookkeeping buffers, hidden under ``show_buffers="meaningful"``.
BOOKKEEPING = frozenset({"running_mean", "running_var", "num_batches_tracked"})
#: Box fills by module depth (lighter outside).
CLUSTER_FILLS = ("#f4f6fa", "#e9eef6", "#dfe6f1", "#d5deec")
PARAM_FILL, BUFFER_FILL = "#eef1f7", "#f2f2f2"
MODULE_FILL = "#dde6f5"
#: An edge that skips ahead (a residual, a dense connection): lighter, and free to bend.
SKIP_EDGE = {"weight": "0", "color": "#9aa5b5"}


@dataclass(frozen=True, slots=True)
class Settings:
    """The drawing options after defaults from the trace's ``CaptureOptions``."""

    view: str
    show_buffers: str
    show_containers: object
    container_max_inline: int
    direction: str
    fold_repeats: bool = True


def shape_text(shape: tuple) -> str:
    return "x".join(map(str, shape)) if shape else "scalar"


def is_bookkeeping(trace: "Trace", address: str) -> bool:
    """Whether a buffer is a normalisation layer's running statistic or batch counter."""
    owner, _, name = address.rpartition(".")
    module = trace.modules.get(owner or ROOT)
    return name in BOOKKEEPING and module is not None and "Norm" in module.type_name


def layer_shown(trace: "Trace", layer: Layer, settings: Settings) -> bool:
    if not layer.is_buffer or settings.show_buffers == "always":
        return True
    return not is_bookkeeping(trace, layer.ops[0].buffer.address)  # type: ignore[union-attr]


def inside(module: str, address: str) -> str:
    """A parameter's or buffer's address as named inside the box of ``module`` (``running_mean`` in
    ``bn``); the model's own and other modules' keep their full address."""
    prefix = "" if module == ROOT else module + "."
    return address[len(prefix):] if prefix and address.startswith(prefix) else address


def params_text(layer_module: str, params: tuple[str, ...], trace: "Trace") -> str:
    """Parameter names relative to the layer's module, with their element count."""
    if not params:
        return ""
    names = [inside(layer_module, p) for p in params]
    shown = ", ".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3 else "")
    count = sum(_numel(trace.params[p].shape) for p in params if p in trace.params)
    return f"{shown} ({human(count)})"


def _numel(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def shapes_text(ops: tuple[Op, ...]) -> str:
    shapes = list(dict.fromkeys(op.shape for op in ops))
    if len(shapes) == 1:
        return shape_text(shapes[0])
    return f"{shape_text(shapes[0])} .. {shape_text(shapes[-1])} ({len(shapes)} shapes)"


def node_style(layer: Layer) -> dict[str, str]:
    if layer.is_input:
        return {"shape": "oval", "fillcolor": INPUT_FILL}
    if layer.is_output:
        return {"shape": "oval", "fillcolor": OUTPUT_FILL}
    if layer.is_buffer:
        return {"shape": "cylinder", "fillcolor": BUFFER_FILL, "style": "filled"}
    if layer.params:
        return {"fillcolor": PARAM_FILL}
    return {}


def buffer_title(layer: Layer) -> str:
    """``running_mean v1-2``: the buffer named inside its box (the tooltip has its address), its versions."""
    versions = pass_ranges([op.buffer.version for op in layer.ops])  # type: ignore[union-attr]
    return f"{inside(layer.module, layer.ops[0].buffer.address)} v{versions}"  # type: ignore[union-attr]


@dataclass(slots=True)
class _Edges:
    """Edges between drawn nodes, merged, with the passes each carries on either end."""

    tails: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    heads: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def add(self, tail: str, head: str, tail_pass: int, head_pass: int) -> None:
        self.tails.setdefault((tail, head), []).append(tail_pass)
        self.heads.setdefault((tail, head), []).append(head_pass)

    def rename(self, names: dict[str, str], drop: Callable[[str, str], bool]) -> None:
        """Renamed ends (merging the edges that meet), leaving out the edges ``drop`` names."""
        merged = _Edges()
        for key, tail_passes in self.tails.items():
            if drop(*key):
                continue
            tail, head = names.get(key[0], key[0]), names.get(key[1], key[1])
            for t, h in zip(tail_passes, self.heads[key]):
                merged.add(tail, head, t, h)
        self.tails, self.heads = merged.tails, merged.heads


class TraceDrawing:
    """Builds the scene of one trace under one set of options."""

    def __init__(self, trace: "Trace", settings: Settings, tree: ModuleTree, tooltips: bool = True) -> None:
        self.trace, self.settings, self.tree = trace, settings, tree
        self.scene = Scene(title=_title(trace, settings), direction=settings.direction)
        self.tooltips = tooltips
        #: Node name of every drawn layer (rolled) or op (unrolled); absent = hidden.
        self.node_of: dict[str, str] = {}
        #: Draw order of every node (first execution), for loop-carried edges.
        self.order: dict[str, int] = {}
        #: Passes of each drawn node; a module's node counts its calls (rolled) or is one call (unrolled).
        self.passes: dict[str, int] = {}
        #: Nodes that stand for a collapsed module (rolled) or module call (unrolled).
        self.module_nodes: set[str] = set()
        #: Nodes of buffer versions (state): never a node's main line.
        self.state_nodes: set[str] = set()
        #: Module call label -> the call it ran inside.
        self.call_parent = call_parents(trace)

    # -- clusters --------------------------------------------------------------------------------

    def module_cluster(self, address: str, call: Optional[str] = None, parent_call: Optional[str] = None) -> str:
        """The box of a module (rolled) or of one module call (unrolled), with its ancestors."""
        name = call or address
        if name in self.scene.clusters:
            return name
        module = self.tree.modules[address]
        above = self.tree.parent.get(address)
        parent: Optional[str] = None
        if call is not None and parent_call is not None:
            parent = self.module_cluster(_module_of(parent_call), parent_call, self.call_parent.get(parent_call))
        elif call is None and above is not None:
            parent = self.module_cluster(above)
        times = f" x{module.num_calls}" if call is None and module.num_calls > 1 else ""
        label = f"{_relative(name, parent)} ({module.type_name}){times}"
        fill = CLUSTER_FILLS[(self.tree.depth.get(address, 1) - 1) % len(CLUSTER_FILLS)]
        self.scene.clusters[name] = Cluster(name, label, parent, {
            "style": "rounded,filled", "fillcolor": fill, "color": "#8da2c0", "fontsize": "10",
            "labeljust": "l", "fontcolor": "#2d3f5f", "tooltip": f"{name} ({module.type_name})"})
        return name

    # -- nodes -----------------------------------------------------------------------------------

    def module_node(self, address: str, order: int, call: Optional[str] = None) -> str:
        """The single node standing for a collapsed module (or one of its calls, unrolled)."""
        name = call or address
        if name in self.scene.nodes:
            return name
        module = self.tree.modules[address]
        inside = self.tree.subtree(address)
        scope = set(inside)
        if call is None:
            count = sum(1 for layer in self.trace.layers if layer.module in scope and layer_shown(self.trace, layer, self.settings))
            what = f"{count} layer{'s' if count != 1 else ''}"
        else:
            count = sum(1 for op in self.trace.ops if op.layer.module in scope and op.module_call is not None
                        and self._inside_call(op, call))
            what = f"{count} op{'s' if count != 1 else ''}"
        params = param_count(self.trace, inside)
        times = f" x{module.num_calls}" if call is None and module.num_calls > 1 else ""
        cluster = self._cluster_for(address, call)
        lines = [f"{_relative(name, cluster)}{times}", module.type_name,
                 what + (f", {human(params)} params" if params else "")]
        self.scene.node(name, "\n".join(lines), cluster, fillcolor=MODULE_FILL, style="filled", shape="box3d",
                        tooltip=f"{name} ({module.type_name})")
        self.order[name] = order
        self.passes[name] = module.num_calls if call is None else 1
        self.module_nodes.add(name)
        return name

    def nodes_inside(self, call: str) -> set[str]:
        """The drawn nodes of the ops that ran inside a module call (or its own collapsed node)."""
        rolled = self.settings.view == "rolled"
        names = (self.node_of.get(op.layer_label if rolled else op.label) for op in self.trace.ops
                 if op.module_call is not None and self._inside_call(op, call))
        return {name for name in names if name is not None}

    def _inside_call(self, op: Op, call: str) -> bool:
        at: Optional[str] = op.module_call
        while at is not None:
            if at == call:
                return True
            at = self.call_parent.get(at)
        return False

    def _cluster_for(self, address: str, call: Optional[str]) -> Optional[str]:
        """The box a node of module ``address`` (or of one of its calls) sits in: its parent's."""
        above = self.tree.parent.get(address)
        if above is None:
            return None
        if call is None:
            return self.module_cluster(above)
        parent_call = self.call_parent.get(call)
        if parent_call is None:
            return None
        return self.module_cluster(_module_of(parent_call), parent_call, self.call_parent.get(parent_call))

    # -- the two views -----------------------------------------------------------------------------

    def rolled(self) -> Scene:
        trace, tree = self.trace, self.tree
        for i, layer in enumerate(trace.layers):
            if not layer_shown(trace, layer, self.settings):
                continue
            folded = tree.node_of(layer.module)
            if folded is not None:
                self.node_of[layer.layer_label] = self.module_node(folded, i)
                continue
            name = layer.layer_label
            self.node_of[name] = name
            self.order[name] = i
            self.passes[name] = layer.num_passes
            cluster = self.module_cluster(layer.module) if layer.module != ROOT else None
            self.scene.node(name, self.layer_label(layer), cluster, **self.layer_attrs(layer))
            if layer.is_buffer:
                self.state_nodes.add(name)
        self.write_edges(lambda op: op.layer_label)
        return self.scene

    def unrolled(self) -> Scene:
        trace, tree = self.trace, self.tree
        for i, op in enumerate(trace.ops):
            layer = op.layer
            if not layer_shown(trace, layer, self.settings):
                continue
            folded = tree.node_of(layer.module)
            if folded is not None:
                self.node_of[op.label] = self.module_node(folded, i, self._call_of(op, folded))
                continue
            self.node_of[op.label] = op.label
            self.order[op.label] = i
            self.passes[op.label] = 1
            cluster = None
            if layer.module != ROOT and op.module_call is not None:
                cluster = self.module_cluster(layer.module, op.module_call, self.call_parent.get(op.module_call))
            elif layer.module != ROOT:
                cluster = self.module_cluster(layer.module)
            self.scene.node(op.label, self.op_label(op), cluster, **self.layer_attrs(layer, op))
            if layer.is_buffer:
                self.state_nodes.add(op.label)
        self.write_edges(lambda op: op.label)
        return self.scene

    def write_edges(self, node_key: Callable[[Op], str]) -> None:
        """An edge for each pair of drawn nodes that parent links join, with the passes it carries.

        ``node_key`` names an op's node: its layer label (rolled) or its own label (unrolled). A
        link inside one collapsed module call draws nothing; one from a module's call to a later
        call of it is a loop-carried edge.
        """
        edges = _Edges()
        for op in self.trace.ops:
            head = self.node_of.get(node_key(op))
            if head is None:
                continue
            for parent_label in op.parents:
                parent = self.trace.ops[parent_label]
                tail = self.node_of.get(node_key(parent))
                if tail is None:
                    continue
                tail_pass, head_pass = self.pass_at(tail, parent), self.pass_at(head, op)
                if tail == head and tail in self.module_nodes and tail_pass == head_pass:
                    continue
                edges.add(tail, head, tail_pass, head_pass)
        if self.settings.fold_repeats:
            self.fold_blocks(edges)
            self.fold_repeats(edges)
        skips = self.skips(edges)
        for (tail, head), tail_passes in edges.tails.items():
            attrs = self.edge_attrs(tail, head, tail_passes, edges.heads[(tail, head)])
            if (tail, head) in skips:
                attrs.update(SKIP_EDGE)
            self.scene.edge(tail, head, **attrs)
        for tail, head in self.layout_ties(edges):
            self.scene.edge(tail, head, style="invis")
        key = self.key()
        if key:
            self.scene.title += "\\n" + "\\n".join(key)

    def key(self) -> list[str]:
        """What the marks of this picture mean, for the marks it has (lines under the title)."""
        colors = {attrs.get("color") for _, _, attrs in self.scene.edges}
        marks = [(SKIP_EDGE["color"] in colors, "grey edge: skips ahead (a residual)"),
                 (bool(self.module_nodes), "3D box: a module drawn as one node"),
                 (any("peripheries" in node.attrs for node in self.scene.nodes.values()),
                  "double border: identical ones in a row, drawn once"),
                 (any("penwidth" in box.attrs for box in self.scene.clusters.values()),
                  "thick box: identical blocks in a row, drawn once")]
        return edge_key(self.scene.edges) + [text for shown, text in marks if shown]

    def layout_ties(self, edges: _Edges) -> list[tuple[str, str]]:
        """Invisible edges that keep what a later pass feeds below what fed that pass.

        A node fed again on a loop-carried edge (a ResNet block's ``relu x2``: after ``bn1``,
        then after ``add``) sits where its first pass runs, so what its later passes feed (the
        next block) would hang beside the block; a tie from the loop-carried edge's tail to each
        such consumer keeps it below.
        """
        fed_back: dict[str, list[tuple[str, set[int]]]] = {}
        for (tail, head), head_passes in edges.heads.items():
            if tail != head and self.order[head] <= self.order[tail]:
                fed_back.setdefault(head, []).append((tail, set(head_passes)))
        ties: dict[tuple[str, str], None] = {}
        for (node, consumer), tail_passes in edges.tails.items():
            for source, passes in fed_back.get(node, ()):
                if (self.order[consumer] > self.order[source] and not passes.isdisjoint(tail_passes)
                        and (source, consumer) not in edges.tails):
                    ties[(source, consumer)] = None
        return list(ties)

    def skips(self, edges: _Edges) -> set[tuple[str, str]]:
        """Edges that skip ahead: into a node from an ancestor of its latest computed input (a
        residual, a dense connection). The latest input is the main line the layout keeps
        straight; parallel inputs (``q`` and ``k`` into a ``matmul``) are not skips, and buffer
        versions (state read beside the data) are neither."""
        inputs: dict[str, list[str]] = {}
        for tail, head in edges.tails:
            if self.order[tail] < self.order[head] and tail not in self.state_nodes:
                inputs.setdefault(head, []).append(tail)
        skips: set[tuple[str, str]] = set()
        for head, tails in inputs.items():
            if len(tails) > 1:
                main = max(tails, key=self.order.__getitem__)
                skips.update((tail, head) for tail in tails if tail != main and self._reaches(inputs, tail, main))
        return skips

    def _reaches(self, inputs: dict[str, list[str]], source: str, target: str) -> bool:
        """Whether ``source`` is an ancestor of ``target`` along forward edges (whose draw order
        only grows, so the search stops below ``source``'s)."""
        floor = self.order[source]
        todo, seen = [target], {target}
        while todo:
            for tail in inputs.get(todo.pop(), ()):
                if tail == source:
                    return True
                if tail not in seen and self.order[tail] > floor:
                    seen.add(tail)
                    todo.append(tail)
        return False

    def pass_at(self, node: str, op: Op) -> int:
        """Which pass of ``node`` an op is: its pass (rolled layer), the number of the module's call
        it ran in (rolled module node), or 1 (unrolled: a node per op or per call)."""
        if self.settings.view == "unrolled":
            return 1
        if node in self.module_nodes:
            call = self._call_of(op, node)
            return int(call.rpartition(":")[2]) if call is not None else 1
        return op.pass_num

    def _call_of(self, op: Op, address: str) -> Optional[str]:
        """The call of module ``address`` an op ran inside."""
        at: Optional[str] = op.module_call
        while at is not None and _module_of(at) != address:
            at = self.call_parent.get(at)
        return at

    # -- labels ----------------------------------------------------------------------------------

    def layer_label(self, layer: Layer) -> str:
        title = buffer_title(layer) if layer.is_buffer else layer.layer_label
        lines = [title + (f" x{layer.num_passes}" if layer.num_passes > 1 and not layer.is_buffer else ""),
                 shapes_text(layer.ops)]
        params = params_text(layer.module, layer.params, self.trace)
        if params:
            lines.append(params)
        return "\n".join(lines)

    def op_label(self, op: Op) -> str:
        layer = op.layer
        if layer.is_buffer:
            title = f"{inside(layer.module, op.buffer.address)}:{op.buffer.version}"  # type: ignore[union-attr]
        else:
            title = op.label if layer.num_passes > 1 else layer.layer_label
        lines = [title, shape_text(op.shape)]
        params = params_text(layer.module, op.params, self.trace)
        if params:
            lines.append(params)
        return "\n".join(lines)

    def layer_attrs(self, layer: Layer, op: Optional[Op] = None) -> dict[str, str]:
        attrs = node_style(layer)
        if self.tooltips:
            attrs["tooltip"] = explain_layer(self.trace, layer)
        return attrs

    def edge_attrs(self, tail: str, head: str, tail_passes: list[int], head_passes: list[int]) -> dict[str, str]:
        label = pass_label(tail_passes, self.passes[tail], head_passes, self.passes[head])
        attrs = {"label": label} if label else {}
        if self.order[head] <= self.order[tail]:
            attrs.update(BACK_EDGE)
        return attrs

    # -- repeated blocks -------------------------------------------------------------------------

    def units(self) -> list[tuple[str, Unit]]:
        """The layers (rolled) or ops (unrolled) in drawing order, keyed as ``node_of`` keys them."""
        if self.settings.view == "rolled":
            return [(layer.layer_label, layer) for layer in self.trace.layers]
        return [(op.label, op) for op in self.trace.ops]

    def fold_blocks(self, edges: _Edges) -> None:
        """Runs of identical sibling module boxes drawn once, expanded (see :mod:`.repeats`)."""
        boxes = {name: _module_of(name) if ":" in name else name for name in self.scene.clusters}
        for run in find_runs(self.scene, self.units(), self.node_of, set(edges.tails), boxes):
            edges.rename(run.rename, run.across)
            for node in run.rename:
                del self.scene.nodes[node]
            for box in below(self.scene, run.boxes[1:]):
                del self.scene.clusters[box]
            self.node_of.update({k: run.rename[v] for k, v in self.node_of.items() if v in run.rename})
            first = self.scene.clusters[run.boxes[0]]
            module = self.tree.modules[boxes[first.name]]
            last = range_end(first.name, run.boxes[-1])
            first.label = f"{_relative(first.name, first.parent)} .. {last} ({module.type_name}) x{len(run.boxes)}"
            first.attrs.update(penwidth="2.5", tooltip=f"{first.name} .. {run.boxes[-1]} ({module.type_name}): "
                               f"{len(run.boxes)} identical blocks in a row, drawn once")

    def fold_repeats(self, edges: _Edges) -> None:
        """Chains of identical collapsed sibling modules (a ``ModuleList`` of blocks) become one node.

        Siblings fold when they share a box, a type and the same layers inside (ops, shapes,
        parameter names, inner links: :func:`.repeats.node_signature`), and each feeds the next;
        the first node is kept, relabelled ``first .. last xN``.
        """
        nodes = [n for n in self.scene.nodes.values() if n.name in self.module_nodes]
        nodes.sort(key=lambda n: self.order[n.name])
        inside: dict[str, list[tuple[str, Unit]]] = {}
        for key, unit in self.units():
            if self.node_of.get(key) in self.module_nodes:
                inside.setdefault(self.node_of[key], []).append((key, unit))

        def same(a: Node, b: Node) -> bool:
            return (a.cluster == b.cluster and a.label.split("\n")[1:] == b.label.split("\n")[1:]
                    and node_signature(inside.get(a.name, []), _module_of(a.name) if ":" in a.name else a.name)
                    == node_signature(inside.get(b.name, []), _module_of(b.name) if ":" in b.name else b.name))

        linked = set(edges.tails)
        runs: list[list] = []
        for node in nodes:
            run = runs[-1] if runs else None
            if run is not None and same(run[-1], node) and (run[-1].name, node.name) in linked:
                run.append(node)
            else:
                runs.append([node])
        rename: dict[str, str] = {}
        for run in runs:
            if len(run) < 2:
                continue
            first = run[0]
            head, *rest = first.label.split("\n")
            last = range_end(first.name, run[-1].name)
            first.label = "\n".join([f"{_relative(first.name, first.cluster)} .. {last} x{len(run)}", *rest])
            first.attrs["peripheries"] = "2"
            for node in run[1:]:
                rename[node.name] = first.name
                del self.scene.nodes[node.name]
        self._fold_outputs(edges, rename)
        if not rename:
            return
        self.node_of.update({k: rename.get(v, v) for k, v in self.node_of.items() if v in rename})
        # one folded block feeding the next is the run itself
        edges.rename(rename, lambda tail, head: tail != head and rename.get(tail, tail) == rename.get(head, head))

    def _fold_outputs(self, edges: _Edges, rename: dict[str, str]) -> None:
        """Three or more same-shaped model outputs fed by one node (a folded block's caches) become one node."""
        feeds: dict[tuple[str, str], list[str]] = {}
        outputs = {self.node_of[label] for label in self.trace.output_layers if label in self.node_of}
        outputs |= {self.node_of.get(op.label, "") for op in self.trace.ops if op.layer.is_output}
        for (tail, head) in edges.tails:
            node = self.scene.nodes.get(head)
            if head in outputs and node is not None:
                feeds.setdefault((rename.get(tail, tail), node.label.split("\n")[1]), []).append(head)
        for heads in feeds.values():
            if len(heads) < 3 or any(sum(1 for key in edges.tails if key[1] == h) != 1 for h in heads):
                continue
            first = self.scene.nodes[heads[0]]
            shape = first.label.split("\n")[1]
            first.label = f"{first.label.split(chr(10))[0]} .. {heads[-1].rpartition('_')[2]} x{len(heads)}\n{shape}"
            first.attrs["peripheries"] = "2"
            for head in heads[1:]:
                rename[head] = heads[0]
                del self.scene.nodes[head]


def _relative(name: str, parent: Optional[str]) -> str:
    """A box's name inside its parent box: ``conv1`` in ``layer1.0``, ``f1:2`` in ``block:2``."""
    if parent is None:
        return name
    prefix = parent.rpartition(":")[0] if ":" in name else parent
    return name[len(prefix) + 1:] if name.startswith(prefix + ".") else name


def range_end(first: str, last: str) -> str:
    """How ``first .. last`` ends: ``11`` after ``h.0``, ``11`` after ``encoder_layer_0``, ``2:1`` after
    ``blocks.0:1`` (the last name less what it shares with the first, cut back to a whole number)."""
    first, last = first.rpartition(".")[2], last.rpartition(".")[2]
    shared = 0
    while shared < min(len(first), len(last)) and first[shared] == last[shared]:
        shared += 1
    while shared and last[shared - 1].isdigit():
        shared -= 1
    return last[shared:]


def _module_of(call: str) -> str:
    """``blocks.0:2`` -> ``blocks.0``."""
    return call.rpartition(":")[0]


def _title(trace: "Trace", settings: Settings) -> str:
    root = trace.modules[ROOT]
    return f"{root.type_name} ({settings.view}): {len(trace.layers)} layers, {len(trace.ops)} ops"
