"""Static prediction, torch-free, on every interpreter: predicted keys == recorded keys.

Each stand-in model of ``tests/models/standin.py`` is predicted from its source and
bytecode (:func:`analysis.predict.predict_function`) and then run under the stand-in
recorder, which keys ops as the real capture does. The predicted layers (op name and
call-site chain, in order of first execution) must equal the recorded ones exactly, and so
must the pass counts wherever the prediction says they are static. This runs on 3.10
(bytecode offsets, folded ``while`` copies), 3.11 (comprehension frames, positions) and
3.12/3.13 (inlined comprehensions).
"""

from __future__ import annotations

import sys

import pytest
from models import standin as m
from models.runs import remember_runs
from standin_host import StandinHost

from torchlens.analysis.errors import SourceUnavailableError
from torchlens.analysis.predict import predict_function
from torchlens.analysis.source import source_file
from torchlens.capture.standin import StandinRecorder, Value


def run_both(model, *args, names=("op",), value=False):
    """Predict, then record, ``model(o, *args)``; return (prediction, recorder)."""
    rec = StandinRecorder()
    o = m.ops(rec, *names)
    full = ((Value(rec),) if value else ()) + args
    pred = predict_function(model, o, *full, host=StandinHost())
    rec.run(model, o, *full)
    return pred, rec


def recorded_layers(rec) -> list[tuple[str, tuple, int]]:
    counts = dict(rec.layers())  # not unique by name: rebuild per key below
    del counts
    seen: dict[tuple, int] = {}
    for name, places in rec.sites():
        seen[(name, places)] = seen.get((name, places), 0) + 1
    return [(name, places, n) for (name, places), n in seen.items()]


def assert_same(pred, rec):
    recorded = recorded_layers(rec)
    predicted = [(p.func_name, p.call_site) for p in pred]
    assert predicted == [(name, places) for name, places, _ in recorded], str(pred)
    for layer, (_, _, n) in zip(pred, recorded):
        assert layer.count.admits(n), (layer.layer_label, str(layer.count), n)
        if layer.num_passes is not None:
            assert layer.num_passes == n, (layer.layer_label, n)


CASES = {
    "nested calls on one line": (m.nested_calls, (1,), {}),
    "two calls on one line": (m.two_calls_one_line, (), {"value": True}),
    "for loop": (m.for_loop, (3,), {"names": ("tanh",), "value": True}),
    "while test (3.10 fold)": (m.while_test, (3,), {"names": ("check", "body")}),
    "two ops in a while test": (m.while_two_ops_in_test, (3,), {"names": ("lo", "hi")}),
    "nested loops": (m.nested_loops, (0,), {"names": ("outer", "inner")}),
    "break": (m.loop_with_break, (0,), {}),
    "branch on index": (m.branch_on_index, (0,), {}),
    "finally copies": (m.run_finally_exits, (["normal", "return", "break", "continue"],), {"names": ("fin",)}),
    "helper from two lines": (m.helper_two_lines, (0,), {"names": ("op", "op2")}),
    "helper from a loop line": (m.helper_one_loop_line, (0, 3), {"names": ("op", "op2")}),
    "helper from two loops": (m.helper_two_loops, (0,), {"names": ("op", "op2")}),
    "identical functions": (m.identical_functions, (0,), {}),
    "recursion": (m.recursion_once, (0,), {}),
    "recursion from two places": (m.recursion_two_entries, (0,), {}),
    "mutual recursion": (m.mutual_recursion, (0,), {"names": ("ping", "pong")}),
    "decorator calling twice": (m.twice_decorated, (0,), {}),
    "decorated caller, two lines": (m.decorated_caller, (0,), {}),
    "decorated recursion": (m.decorated_recursion, (0, 3), {}),
    "list comprehension": (m.list_comprehension, ([1, 2, 3],), {}),
    "generator expression": (m.genexpr_sum, ([1, 2, 3],), {}),
    "map of an op": (m.map_op, ([1, 2, 3],), {}),
    "map of a lambda": (m.map_lambda, ([1, 2, 3],), {}),
    "yield from a generator": (m.yield_from, (0,), {}),
    "generators unpacked": (m.unpacked_generators, ([1, 2],), {}),
    "sum of values": (m.sum_of_values, (), {"value": True}),
    "value operators": (m.value_operators, (), {"value": True}),
    "python special methods": (m.python_specials, (0,), {"names": m.SPECIAL_OPS}),
    "classes made by the function": (m.local_classes, (0,), {"names": ("op", "op2")}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_predicted_keys_equal_recorded_keys(name: str):
    model, args, options = CASES[name]
    if options.get("value") and model in (m.value_operators,):
        rec = StandinRecorder()
        o = m.ops(rec, "op")
        a, b = Value(rec), Value(rec)
        pred = predict_function(model, o, a, b, host=StandinHost())
        rec.run(model, o, a, b)
    else:
        pred, rec = run_both(model, *args, **options)
    assert len(pred) > 0
    assert_same(pred, rec)


def test_while_test_is_one_layer_with_n_plus_1_passes():
    pred, rec = run_both(m.while_test, 3, names=("check", "body"))
    assert [(p.func_name, p.num_passes) for p in pred] == [("check", 4), ("body", 3)]
    if sys.version_info < (3, 11):  # the place is a bytecode offset: the first copy's
        assert pred["check_1"].call_site[-1].offset is not None


def test_exec_function_with_source_in_linecache_is_predicted():
    built = m.exec_function(m.EXEC_SOURCE, "built", filename="<predict-built>", register=True)
    pred, rec = run_both(m.call_each, [(built, (0,)), (built, (1,))])
    assert_same(pred, rec)
    assert pred["op_1"].num_passes == 2 and pred["op_1"].call_site[-1].code.filename == "<predict-built>"


STRAIGHT = "def straight(o, x, k=1):\n    y = o.op(x)\n    z = o.op(o.op(y), k)\n    return o.op(z)\n"
BRANCHY = "def branchy(o, x):\n    if x:\n        return o.op(x)\n    return x\n"


def test_exec_function_without_source_is_read_from_its_bytecode():
    """No source ('<string>', not in linecache): on 3.11+ the instructions' positions are the
    places, so straight-line code is predicted exactly; on 3.10 it is a gap that says why."""
    built = m.exec_function(STRAIGHT, "straight")
    pred, rec = run_both(built, 0)
    with pytest.raises(SourceUnavailableError):
        source_file("<string>")
    if sys.version_info >= (3, 11):
        assert_same(pred, rec)
        assert [(p.func_name, p.num_passes) for p in pred] == [("op", 1), ("op", 1), ("op", 1), ("op", 1)]
        assert not pred.gaps
    else:
        assert len(pred) == 0 and rec.records
        assert any("no source" in g.why and "read on Python 3.11+ only" in g.why for g in pred.gaps)


def test_exec_function_beyond_straight_lines_is_a_gap_not_a_crash():
    built = m.exec_function(BRANCHY, "branchy")
    pred, rec = run_both(built, 1)
    assert len(pred) == 0 and rec.records
    assert any("no source" in gap.why for gap in pred.gaps)


def test_unknown_trip_count_is_symbolic():
    rec = StandinRecorder()
    o = m.ops(rec, "tanh")
    pred = predict_function(m.for_loop, o, Value(rec), host=StandinHost())  # n not given
    assert pred["tanh_1"].num_passes is None and str(pred["tanh_1"].count) == "range(n)"
    assert "no static length" in pred["tanh_1"].passes_note



class _Interrupted(StandinHost):
    """A host whose first op is interrupted (as by Ctrl-C)."""

    def op_result(self, *args, **kwargs):
        raise KeyboardInterrupt


class _Counting(StandinHost):
    """A host noting, at each op, how many collections the collector had started by then."""

    def __init__(self, started: list[str]) -> None:
        self.started, self.seen = started, []

    def op_result(self, *args, **kwargs):
        self.seen.append(len(self.started))
        return super().op_result(*args, **kwargs)


@pytest.mark.parametrize("enabled", [True, False])
def test_no_automatic_collection_runs_during_a_prediction_and_the_collector_is_left_as_it_was(enabled):
    """The cyclic collector is paused while a prediction runs (it would scan the whole heap,
    torch and the model included, several times) and left as it was after it, also when the
    prediction is interrupted."""
    import gc

    started: list[str] = []

    def count(phase, info):
        if phase == "start":
            started.append(phase)

    rec = StandinRecorder()
    o = m.ops(rec, "tanh")
    host = _Counting(started)
    was = gc.isenabled()
    gc.callbacks.append(count)
    try:
        gc.enable() if enabled else gc.disable()
        pred = predict_function(m.for_loop, o, Value(rec), 2000, host=host)
        assert gc.isenabled() is enabled
        with pytest.raises(KeyboardInterrupt):
            predict_function(m.for_loop, o, Value(rec), 3, host=_Interrupted())
        assert gc.isenabled() is enabled
    finally:
        gc.callbacks.remove(count)
        gc.enable() if was else gc.disable()
    assert len(host.seen) == 4000 and host.seen[0] == host.seen[-1]
    assert [layer.func_name for layer in pred] == ["tanh", "mul"]


def test_a_finished_run_is_freed_without_the_collector(monkeypatch: pytest.MonkeyPatch):
    """Nothing of a prediction's run is left for Python's cyclic collector (its thousands of
    objects would be scanned and promoted by every later collection): the run is freed when
    the prediction returns."""
    import gc

    runs = remember_runs(monkeypatch)
    enabled = gc.isenabled()
    gc.disable()
    try:
        pred, _ = run_both(m.nested_calls, Value(StandinRecorder()))
        assert pred.layers and len(runs) == 1
        assert runs[0]() is None
    finally:
        if enabled:
            gc.enable()
