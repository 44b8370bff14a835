"""Drawings as DOT: a :class:`Scene` (nodes in nested clusters, edges) written by :func:`to_digraph`
into a :class:`Drawing`, a ``graphviz.Digraph`` that renders to files by suffix and in notebooks.

Every picture torchlens draws (a trace rolled or unrolled, a prediction, a check report) is first
built as a scene, then written as DOT text in one pass. Names are always quoted, so a pass label
such as ``tanh_1:2`` is a node name and never graphviz's ``node:port`` syntax. Building needs no
Graphviz program; rendering needs ``dot``, and when it is missing every render (``.render()``,
``.pipe()``, a notebook display, ``path=``) raises :class:`GraphvizMissingError` saying how to
install it. Torch-free, so predictions draw without torch.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Union

import graphviz

from .errors import GraphvizMissingError, TorchLensValueError

#: The look shared by every drawing.
GRAPH_ATTRS = {"fontname": "Helvetica", "fontsize": "11", "nodesep": "0.25", "ranksep": "0.35",
               "newrank": "true"}
NODE_ATTRS = {"fontname": "Helvetica", "fontsize": "10", "shape": "box", "style": "rounded,filled",
              "fillcolor": "white", "color": "#555555", "margin": "0.08,0.03", "height": "0.3"}
EDGE_ATTRS = {"fontname": "Helvetica", "fontsize": "9", "color": "#555555", "arrowsize": "0.6"}
#: Fill of the model's input and output nodes (ovals), in every drawing.
INPUT_FILL, OUTPUT_FILL = "#dff0d8", "#fbe3cf"
BACK_EDGE_COLOR = "#2b6cb0"
#: An edge back round a loop (into a node drawn before its tail): blue, and left out of the layout.
BACK_EDGE = {"constraint": "false", "color": BACK_EDGE_COLOR, "fontcolor": BACK_EDGE_COLOR}


def pass_ranges(numbers: Iterable[int]) -> str:
    """``[1, 2, 3, 5]`` as ``1-3,5``."""
    runs: list[list[int]] = []
    for n in sorted(set(numbers)):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def pass_label(tail_passes: Iterable[int], n_tail: int, head_passes: Iterable[int], n_head: int) -> str:
    """An edge's label: the passes of its tail it carries where not all (``1-2``), else the
    passes of its head it feeds where not all (``to 1``), else empty."""
    tails, heads = sorted(set(tail_passes)), sorted(set(head_passes))
    if tails != list(range(1, n_tail + 1)):
        return pass_ranges(tails)
    if heads != list(range(1, n_head + 1)):
        return "to " + pass_ranges(heads)
    return ""


#: The label of an edge back that stands for every pass of a loop the prediction does not unroll.
LOOP = "loop"


def edge_key(edges: Iterable[tuple[str, str, dict[str, str]]]) -> list[str]:
    """What the edges' labels and colours mean, for those drawn (lines under a picture's title)."""
    labels = {attrs["label"] for _, _, attrs in edges if "label" in attrs}
    colors = {attrs.get("color") for _, _, attrs in edges}
    carries = any(label != LOOP and not label.startswith("to ") for label in labels)
    feeds = any(label.startswith("to ") for label in labels)
    said = " or ".join((["carries (1-2)"] if carries else []) + (["feeds (to 1)"] if feeds else []))
    marks = [(bool(said), f"edge label: the passes it {said}"),
             (BACK_EDGE_COLOR in colors, "blue edge: back, round a loop"),
             (LOOP in labels, f"{LOOP}: what each pass hands to the next")]
    return [text for shown, text in marks if shown]


@dataclass(slots=True)
class Cluster:
    """A module (or module call) box: a DOT subgraph named ``cluster_<name>``."""

    #: Without the ``cluster_`` prefix: a module address or a module call label.
    name: str
    label: str
    #: Enclosing cluster's name; ``None`` at the top level.
    parent: Optional[str]
    attrs: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Node:
    name: str
    label: str
    #: The innermost cluster it sits in; ``None`` at the top level.
    cluster: Optional[str]
    attrs: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Scene:
    """Nodes in clusters, and edges, in the order they are written."""

    title: str = ""
    direction: str = "TB"
    clusters: dict[str, Cluster] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    #: Extra top-level statements (a legend subgraph).
    extra: list[str] = field(default_factory=list)

    def node(self, name: str, label: str, cluster: Optional[str] = None, **attrs: str) -> Node:
        node = self.nodes[name] = Node(name, label, cluster, attrs)
        return node

    def edge(self, tail: str, head: str, **attrs: str) -> None:
        self.edges.append((tail, head, attrs))


def quote(text: str) -> str:
    """A DOT double-quoted string (``\\n`` and ``\\l`` kept as graphviz line breaks)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def attr_list(attrs: dict[str, str]) -> str:
    return " [" + " ".join(f"{k}={quote(v)}" for k, v in attrs.items()) + "]" if attrs else ""


def to_digraph(scene: Scene, path: Optional[Union[str, Path]] = None) -> "Drawing":
    """The scene as a :class:`Drawing` (its ``.source`` is the DOT text), written to ``path`` if given."""
    members: dict[Optional[str], list[str]] = {}
    for node in scene.nodes.values():
        line = f"{quote(node.name)}{attr_list({'label': node.label, **node.attrs})}"
        members.setdefault(node.cluster, []).append(line)
    children: dict[Optional[str], list[Cluster]] = {}
    for cluster in scene.clusters.values():
        children.setdefault(cluster.parent, []).append(cluster)
    body: list[str] = []

    def write(parent: Optional[str], indent: str) -> None:
        for cluster in children.get(parent, ()):
            body.append(f"{indent}subgraph {quote('cluster_' + cluster.name)} {{\n")
            for key, value in {"label": cluster.label, **cluster.attrs}.items():
                body.append(f"{indent}\t{key}={quote(value)}\n")
            write(cluster.name, indent + "\t")
            body.append(f"{indent}}}\n")
        body.extend(f"{indent}{line}\n" for line in members.get(parent, ()))

    write(None, "\t")
    body.extend(f"\t{quote(t)} -> {quote(h)}{attr_list(a)}\n" for t, h, a in scene.edges)
    body.extend(f"\t{line}\n" for line in scene.extra)
    graph_attrs = dict(GRAPH_ATTRS, rankdir=scene.direction)
    if scene.title:
        graph_attrs.update(label=scene.title, labelloc="t")
    drawing = Drawing(name="torchlens", graph_attr=graph_attrs, node_attr=NODE_ATTRS, edge_attr=EDGE_ATTRS,
                      body=body)
    if path is not None:
        drawing.save_as(path)
    return drawing

#: File suffix -> graphviz output format (``None``: the DOT text itself).
FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".dot": None, ".gv": None}

INSTALL = ("drawing needs Graphviz's `dot` program, which was not found on PATH; install Graphviz "
           "(Debian/Ubuntu: `apt-get install graphviz`, macOS: `brew install graphviz`, conda: "
           "`conda install graphviz`, Windows: https://graphviz.org/download/) and try again. "
           "The drawing itself is built: `.source` holds its DOT text")


@contextlib.contextmanager
def dot_required() -> Iterator[None]:
    """Turn graphviz's missing-executable error into a :class:`GraphvizMissingError`."""
    try:
        yield
    except graphviz.ExecutableNotFound as error:
        raise GraphvizMissingError(INSTALL) from error


class Drawing(graphviz.Digraph):
    """A torchlens drawing: a ``graphviz.Digraph`` whose renders say how to install ``dot``."""

    def pipe(self, *args: Any, **kwargs: Any) -> Any:
        with dot_required():
            return super().pipe(*args, **kwargs)

    def render(self, *args: Any, **kwargs: Any) -> Any:
        with dot_required():
            return super().render(*args, **kwargs)

    def save_as(self, path: Union[str, Path]) -> Path:
        """Write the drawing to ``path``: SVG, PNG, PDF or DOT (``.dot``/``.gv``) by its suffix."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in FORMATS:
            raise TorchLensValueError(
                f"draw(path={str(path)!r}): the suffix says which format to write; use one of "
                f"{', '.join(FORMATS)}"
            )
        fmt = FORMATS[suffix]
        if fmt is None:
            path.write_text(self.source)
        else:
            path.write_bytes(self.pipe(format=fmt))
        return path


def svg_bundle(owner: Any, drawing: Drawing) -> dict[str, str]:
    """What ``_repr_mimebundle_`` returns: the SVG, or the text form with the install advice."""
    try:
        return {"image/svg+xml": drawing.pipe(format="svg", encoding="utf-8"), "text/plain": repr(owner)}
    except GraphvizMissingError as error:
        return {"text/plain": f"{owner!r}\n({error})"}
