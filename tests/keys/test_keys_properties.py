"""Property-based grouping checks, torch-free: pass counts follow what actually ran.

Hypothesis picks loop lengths, branch choices and recursion depths; the expected layers
are computed by simulating which line runs how often, independently of the recorder.
"""

from __future__ import annotations

from collections import Counter

from models import standin as m
from hypothesis import given, settings
from hypothesis import strategies as st
from models.standin import trace

FEW = settings(max_examples=40, deadline=None)


@FEW
@given(picks=st.lists(st.sampled_from("abc"), max_size=12), inner=st.integers(0, 3))
def test_each_branch_line_counts_its_own_executions(picks, inner):
    # Every branch runs the same op name: only the line tells the layers apart.
    runs = []
    for pick in picks:
        runs.append(pick)
        if pick == "b":
            runs.extend(["inner"] * inner)
    counts = Counter(runs)
    expected = [("inner" if key == "inner" else "op", counts[key]) for key in dict.fromkeys(runs)]
    assert trace(m.branches, picks, inner, names=("op", "inner")).layers() == expected


@FEW
@given(n=st.integers(0, 6))
def test_while_test_runs_once_more_than_the_body(n):
    expected = [("check", n + 1)] + ([("body", n)] if n else [])
    assert trace(m.while_test, n, names=("check", "body")).layers() == expected


@FEW
@given(depths=st.lists(st.integers(1, 5), min_size=1, max_size=5))
def test_recursion_from_one_line_is_one_layer(depths):
    assert trace(m.recursion_from_one_line, depths).layers() == [("op", sum(depths))]
