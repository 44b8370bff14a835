"""Graph algorithms the package shares: the cycles of a directed graph.

Torch-free; no other module of the package below it.
"""

from __future__ import annotations

from typing import Hashable, Iterable, Iterator, Mapping, TypeVar

__all__ = ["cycles"]

N = TypeVar("N", bound=Hashable)


def cycles(nodes: Iterable[N], edges: Mapping[N, Iterable[N]]) -> Iterator[set[N]]:
    """The strongly connected components of the graph that hold a cycle (two nodes or more, or
    one node with an edge to itself), each once, found from ``nodes`` in their order along
    ``edges`` (node -> successors; a node missing there has none).

    Tarjan's algorithm, iterative (no recursion limit), linear in nodes and edges.
    """
    index: dict[N, int] = {}
    low: dict[N, int] = {}
    stack: list[N] = []
    on_stack: set[N] = set()
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(edges.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member is node:
                        break
                if len(group) > 1 or node in edges.get(node, ()):
                    yield group
