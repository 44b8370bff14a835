"""Grouping by call site, torch-free: which recorded ops are passes of one layer.

Every case of the grouping spec that needs only Python (loops, duplicated code, helpers,
recursion, decorators, comprehensions, lazy iterators, exec) is run through the stand-in
recorder on whatever interpreter runs the tests (3.10 to 3.13), and ``rec.layers()`` is
compared exactly. Where the spec names the line a layer belongs to, the chain is checked too.
"""

from __future__ import annotations

import sys

from models import standin as m
from models.standin import call_copies, layer_chains, line_of, trace


# --- places on one line -----------------------------------------------------------------------


def test_nested_calls_on_one_line_are_three_places():
    rec = trace(m.nested_calls, 1)
    assert rec.layers() == [("op", 1), ("op", 1), ("op", 1)]
    lines = {chain for _, chain in layer_chains(rec)}
    assert lines == {(("nested_calls", m.nested_calls.__code__.co_firstlineno + 1),)}


def test_same_op_twice_on_one_line_is_two_places():
    rec = trace(m.two_calls_one_line, value=True)
    assert rec.layers() == [("op", 1), ("op", 1), ("add", 1)]


# --- loops ------------------------------------------------------------------------------------


def test_for_loop_is_one_layer_per_op():
    rec = trace(m.for_loop, 3, names=("tanh",), value=True)
    assert rec.layers() == [("tanh", 3), ("mul", 3)]


def test_op_in_while_test_is_one_layer_with_n_plus_1_passes():
    rec = trace(m.while_test, 3, names=("check", "body"))
    assert rec.layers() == [("check", 4), ("body", 3)]
    line = m.while_test.__code__.co_firstlineno + 2
    assert layer_chains(rec)[0] == ("check", (("while_test", line),))


def test_two_ops_in_while_test_stay_two_layers():
    # The compiler wrote each call twice; folding must merge copies, not the two calls.
    assert len(call_copies(m.while_two_ops_in_test, "test")) == 4
    rec = trace(m.while_two_ops_in_test, 3, names=("lo", "hi"))
    assert rec.layers() == [("lo", 4), ("hi", 4)]


def test_nested_loops_multiply():
    rec = trace(m.nested_loops, 0, names=("outer", "inner"))
    assert rec.layers() == [("outer", 2), ("inner", 6)]


def test_break_counts_executed_passes_only():
    assert trace(m.loop_with_break, 0).layers() == [("op", 4)]


def test_branch_on_index_each_line_counts_its_own():
    rec = trace(m.branch_on_index, 0)
    assert rec.layers() == [("op", 3), ("op", 2)]
    first = m.branch_on_index.__code__.co_firstlineno
    assert [chain for _, chain in layer_chains(rec)] == [
        (("branch_on_index", first + 5),),
        (("branch_on_index", first + 3),),
    ]


# --- code the compiler duplicates -------------------------------------------------------------


def test_finally_body_copies_fold_to_one_layer():
    modes = ["normal", "return", "raise", "break", "continue", "normal"]
    # One copy per exit path (normal, exception, return, break, continue), at least.
    assert len(call_copies(m.finally_exits, "fin")) >= 5
    rec = trace(m.run_finally_exits, modes, names=("fin",))
    assert rec.layers() == [("fin", 6)]
    assert layer_chains(rec)[0][1][-1] == ("finally_exits", line_of(m.finally_exits, "fin"))


def test_with_exit_copies_fold_to_one_layer():
    modes = ["normal", "return", "raise", "break", "continue"]
    # Ctx(o) plus one __exit__ call per exit path (the exceptional one is WITH_EXCEPT_START).
    assert len(call_copies(m.with_exits, "with")) >= 6
    rec = trace(m.run_with_exits, modes, names=("enter", "exit"))
    assert rec.layers() == [("enter", 5), ("exit", 5)]
    with_line = line_of(m.with_exits, "with")
    for name, chain in layer_chains(rec):
        assert chain[1] == ("with_exits", with_line), name
        assert chain[2][0] == f"__{name}__"


# --- helpers ----------------------------------------------------------------------------------


def test_helper_called_from_two_lines_is_two_layers():
    rec = trace(m.helper_two_lines, 0, names=("op", "op2"))
    assert rec.layers() == [("op", 1), ("op2", 1), ("op", 1), ("op2", 1)]
    outer = [chain[0] for _, chain in layer_chains(rec)]
    first = ("helper_two_lines", line_of(m.helper_two_lines, "first"))
    second = ("helper_two_lines", line_of(m.helper_two_lines, "second"))
    assert outer == [first, first, second, second]


def test_helper_called_from_one_loop_line_is_one_layer():
    rec = trace(m.helper_one_loop_line, 0, 4, names=("op", "op2"))
    assert rec.layers() == [("op", 4), ("op2", 4)]


def test_helper_called_from_two_loops():
    rec = trace(m.helper_two_loops, 0, names=("op", "op2"))
    assert rec.layers() == [("op", 2), ("op2", 2), ("op", 3), ("op2", 3)]


def test_two_identical_functions_are_separate_layers():
    assert m.identical_1.__code__.co_code == m.identical_2.__code__.co_code
    rec = trace(m.identical_functions, 0)
    assert rec.layers() == [("op", 2), ("op", 1)]


# --- recursion --------------------------------------------------------------------------------


def test_recursion_depth_3_is_one_layer():
    assert trace(m.recursion_once, 0).layers() == [("op", 3)]


def test_recursion_entered_from_two_places_is_two_layers():
    rec = trace(m.recursion_two_entries, 0)
    assert rec.layers() == [("op", 3), ("op", 2)]
    outer = [chain[0] for _, chain in layer_chains(rec)]
    assert outer == [
        ("recursion_two_entries", line_of(m.recursion_two_entries, "first")),
        ("recursion_two_entries", line_of(m.recursion_two_entries, "second")),
    ]


def test_mutual_recursion_collapses():
    rec = trace(m.mutual_recursion, 0, names=("ping", "pong"))
    assert rec.layers() == [("ping", 3), ("pong", 3)]
    assert [len(chain) for _, chain in layer_chains(rec)] == [2, 3]


# --- decorators: shared wrapper code (§4) -----------------------------------------------------


def test_wrapper_calling_f_on_two_lines_is_two_layers():
    rec = trace(m.twice_decorated, 0)
    assert rec.layers() == [("op", 1), ("op", 1)]
    wrapper = m.twice_decorated.__code__
    lines = [chain[0] for _, chain in layer_chains(rec)]
    assert lines == [("wrapper", line_of(wrapper, "first")),
                     ("wrapper", line_of(wrapper, "second"))]


def test_decorated_f_calling_decorated_g_on_two_lines_is_not_merged():
    # Both decorated functions run the same wrapper code: erasure by code alone would merge.
    assert m.decorated_caller.__code__ is m.decorated_leaf.__code__
    rec = trace(m.decorated_caller, 0)
    assert rec.layers() == [("op", 1), ("op", 1)]
    caller = m.decorated_caller.__wrapped__
    assert [chain[1] for _, chain in layer_chains(rec)] == [
        ("decorated_caller", line_of(caller, "first")),
        ("decorated_caller", line_of(caller, "second")),
    ]


def test_decorated_recursion_still_collapses():
    rec = trace(m.decorated_recursion, 0, 3)
    assert rec.layers() == [("op", 3)]


# --- comprehensions, generators, lazy iterators -----------------------------------------------


def test_list_comprehension_one_pass_per_element():
    rec = trace(m.list_comprehension, [1, 2, 3])
    assert rec.layers() == [("op", 3)]
    ((_, chain),) = layer_chains(rec)
    # PEP 709 (3.12+) inlines the comprehension: no <listcomp> frame, a shorter chain.
    if sys.version_info >= (3, 12):
        assert [name for name, _ in chain] == ["list_comprehension"]
    else:
        assert [name for name, _ in chain] == ["list_comprehension", "<listcomp>"]


def test_sum_of_genexpr():
    rec = trace(m.genexpr_sum, [1, 2, 3])
    assert rec.layers() == [("op", 3)]
    ((_, chain),) = layer_chains(rec)
    assert [name for name, _ in chain] == ["genexpr_sum", "<genexpr>"]


def test_map_of_op_is_keyed_at_the_consumer():
    rec = trace(m.map_op, [1, 2, 3])
    assert rec.layers() == [("op", 3)]
    assert layer_chains(rec)[0][1] == (("map_op", line_of(m.map_op, "consume")),)


def test_map_of_lambda():
    rec = trace(m.map_lambda, [1, 2, 3])
    assert rec.layers() == [("op", 3)]
    ((_, chain),) = layer_chains(rec)
    assert [name for name, _ in chain] == ["map_lambda", "<lambda>"]


def test_builtin_sum_of_values_gives_radd_once_then_add():
    assert trace(m.sum_of_values, value=True).layers() == [("radd", 1), ("add", 2)]


# --- exec-built code --------------------------------------------------------------------------


def test_exec_built_function_in_a_loop_is_one_layer():
    a = m.exec_function(m.EXEC_SOURCE, "built")
    b = m.exec_function(m.EXEC_SOURCE, "built")
    assert a.__code__ is not b.__code__
    assert trace(m.exec_in_loop, 0, 3).layers() == [("op", 3)]


def test_exec_built_while_without_source_folds():
    # No source in linecache: 3.10 falls back to the bytecode-only while fold.
    fns = [m.exec_function(m.EXEC_WHILE_SOURCE, "built_while") for _ in range(2)]
    rec = trace(m.call_each, [(fn, (3,)) for fn in fns], names=("check",))
    assert rec.layers() == [("check", 8)]


def test_exec_built_finally_with_registered_source_folds():
    fn = m.exec_function(m.EXEC_FINALLY_SOURCE, "built_finally", "<keys-finally>", register=True)
    calls = [(fn, (mode,)) for mode in ("normal", "return", "raise", "normal")]
    rec = trace(m.call_each, calls, names=("fin",))
    assert rec.layers() == [("fin", 4)]
