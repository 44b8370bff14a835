"""The structural grouper (grouper_v1, :mod:`torchlens.analysis.structural`): loops folded from
back-to-back repeated blocks with loop-carried dataflow; torch-free."""

from __future__ import annotations

from torchlens.analysis.keys import group_keys
from torchlens.analysis.structural import StructOp, structural_keys


def chain(names, call=0, scope=0, start=0, carried=True):
    """Ops of one call, each reading the one before it (``carried``) or nothing."""
    return [StructOp(scope, call, name, (start + i - 1,) if carried and i else ()) for i, name in enumerate(names)]


def passes(ops):
    grouping = group_keys(structural_keys(ops))
    return [len(members) for members in grouping.members()]


def test_a_loop_folds_into_one_layer_per_body_op():
    assert passes(chain(["tanh", "mul"] * 3)) == [3, 3]


def test_repeats_without_carried_dataflow_stay_apart():
    assert passes(chain(["tanh"] * 3, carried=False)) == [1, 1, 1]


def test_the_run_covering_most_ops_wins():
    ops = chain(["exp", "tanh", "mul", "tanh", "mul", "tanh", "mul", "exp"])
    assert passes(ops) == [1, 3, 3, 1]


def test_nested_loops_fold_the_outer_body():
    """2 outer by 3 inner: the outer body is the block, so each inner iteration is its own layer."""
    assert passes(chain(["cos", "sin", "sin", "sin"] * 2)) == [2, 2, 2, 2]


def test_a_module_called_three_times_gives_passes_per_call():
    ops = [op for call in range(3) for op in chain(["dot", "add", "tanh"], call=call, scope=1, start=3 * call)]
    assert passes(ops) == [3, 3, 3]


def test_dataflow_through_ops_in_between_counts():
    """The body's glue reads the output of a nested call's op, which read the previous glue."""
    ops = []
    for k in range(3):
        base = 2 * k
        ops.append(StructOp(1, 10 + k, "inner", (base - 1,) if k else ()))
        ops.append(StructOp(0, 0, "glue", (base,)))
    keys = structural_keys(ops)
    assert len({keys[i] for i in (1, 3, 5)}) == 1


def test_different_trip_counts_keep_the_ops_after_the_loop_aligned():
    first = chain(["tanh"] * 2 + ["exp"], call=0, scope=1)
    second = chain(["tanh"] * 4 + ["exp"], call=1, scope=1, start=3)
    assert passes(first + second) == [6, 2]


def test_ops_without_a_call_are_not_keyed_and_carry_dataflow():
    # An input (no call) feeds a loop; an output (no call) reads its last pass.
    ops = [StructOp(0, None, "input", ())] + chain(["tanh", "mul"] * 2, start=1) + [StructOp(0, None, "output", (4,))]
    ops[1] = StructOp(0, 0, "tanh", (0,))
    keys = structural_keys(ops)
    assert keys[0] is None and keys[-1] is None
    assert keys[1] == keys[3] and keys[2] == keys[4] and keys[1] != keys[2]
