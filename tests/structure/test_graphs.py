"""The shared cycle finder (``analysis.graphs.cycles``), used by the linter and the import test."""

from __future__ import annotations

from torchlens.analysis.graphs import cycles


def test_each_cycle_once_and_no_acyclic_node():
    edges = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": ["e"], "e": ["d"], "f": ["a"]}
    assert sorted(sorted(c) for c in cycles(sorted(edges), edges)) == [["a", "b", "c"], ["d", "e"]]


def test_a_self_edge_is_a_cycle_and_a_missing_node_has_no_edges():
    assert list(cycles(["a", "b"], {"a": ["a", "b"]})) == [{"a"}]


def test_a_long_chain_needs_no_recursion():
    n = 50_000
    edges = {k: [k + 1] for k in range(n)} | {n: [0]}
    assert [len(c) for c in cycles(range(n + 1), edges)] == [n + 1]
