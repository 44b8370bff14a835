"""The JAX backend: the spec's Cases rows that have a JAX equivalent, grouped by call site from
the equations' tracebacks; output equality with an untraced run; the structural fallback;
path-only containers; drawing. Skipped where jax or flax is not installed."""

from __future__ import annotations

import pickle

import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("flax")

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from flax import nnx  # noqa: E402

import torchlens as tl  # noqa: E402
from models import jaxcases as M  # noqa: E402
from torchlens.errors import OpaqueContainerError, TorchLensValueError  # noqa: E402

X = jnp.linspace(-1.0, 1.0, 12).reshape(3, 4)


def layers(trace, *names):
    """``(label, passes)`` of the compute layers, optionally only those of some op names."""
    return [(layer.layer_label, layer.num_passes) for layer in trace.layers
            if layer.is_compute and (not names or layer.func_name in names)]


CASES = [
    ("for _ in range(3): x = tanh(x) * 0.5", M.loop, [("tanh_1", 3), ("mul_1", 3)]),
    ("the two-op statement written out twice", M.unrolled, [("tanh_1", 1), ("mul_1", 1), ("tanh_2", 1), ("mul_2", 1)]),
    ("tanh(tanh(tanh(x))) on one line", M.nested_one_line, [("tanh_1", 1), ("tanh_2", 1), ("tanh_3", 1)]),
    ("sin(x) + sin(x) on one line", M.two_on_one_line, [("sin_1", 1), ("sin_2", 1), ("add_1", 1)]),
    ("two same-type ops on one line, in a loop", M.two_on_one_line_in_loop, [("sin_1", 3), ("sin_2", 3), ("add_1", 3)]),
    ("a helper called from two lines", M.helper_two_lines, [("exp_1", 1), ("exp_2", 1)]),
    ("a helper called from one loop line", M.helper_in_loop, [("exp_1", 3)]),
    ("a helper called from two loops", M.helper_two_loops, [("exp_1", 2), ("exp_2", 3)]),
    ("recursion of depth 3", M.recursion, [("cos_1", 3)]),
    ("recursion entered from two places", M.recursion_two_places, [("cos_1", 2), ("cos_2", 2)]),
    ("nested loops, 2 by 3", M.nested_loops, [("cos_1", 2), ("sin_1", 6)]),
    ("a jitted helper called from two lines", M.jit_two_lines, [("exp_1", 1), ("exp_2", 1)]),
    ("a jitted helper called from one loop line", M.jit_in_loop, [("exp_1", 3)]),
    ("lax.scan in a loop: one boundary op", M.scan_in_loop, [("scan_1", 2)]),
    ("lax.while_loop: one boundary op, a layer per output slot", M.while_in_function, [("while_1", 1), ("while_2", 1)]),
    ("lax.cond in a loop: one boundary op", M.cond_in_loop, [("cond_1", 2)]),
    ("a custom_vjp function called from two lines", M.custom_vjp_two_lines, [("tanh_1", 1), ("tanh_2", 1)]),
    ("jax.checkpoint in a loop", M.checkpoint_in_loop, [("cos_1", 3), ("mul_1", 3)]),
]


@pytest.mark.parametrize("row, function, expected", CASES, ids=[c[0] for c in CASES])
def test_cases_rows(row, function, expected):
    trace = tl.trace(function, X)
    assert trace.options.grouping_policy["detector"] == "callsite_v1"
    assert layers(trace) == expected
    np.testing.assert_array_equal(np.asarray(trace[trace.output_layers[0]].out), np.asarray(function(X)))


def test_comprehension_one_pass_per_element():
    trace = tl.trace(M.comprehension, X)
    assert layers(trace, "exp") == [("exp_1", 3)]
    assert [layer for layer in trace.output_layers] == ["output_1", "output_2", "output_3"]


def test_map_over_a_jax_function():
    """``map(jnp.sin, xs)``: one instruction calls sin through C code, one pass per element."""
    trace = tl.trace(M.mapped, X)
    assert layers(trace, "sin") == [("sin_1", 3)]


def test_one_module_shared_by_two_parents():
    trace = tl.trace(M.SharedByTwoParents(nnx.Rngs(0)), X)
    assert trace.modules["left.shared"].num_calls == 2
    assert "right.shared" not in trace.modules  # one instance, at its first address
    assert layers(trace, "tanh") == [("tanh_1", 2)]


def test_siamese_encoder():
    model = M.Siamese(nnx.Rngs(0))
    trace = tl.trace(model, X, X + 1.0)
    assert trace.modules["encoder"].num_calls == 2
    assert layers(trace, "tanh") == [("tanh_1", 2)]
    assert layers(trace, "sub") == [("sub_1", 1)]
    np.testing.assert_array_equal(np.asarray(trace["output_1"].out), np.asarray(model(X, X + 1.0)))


def test_one_raw_weight_on_two_lines():
    w = jnp.eye(4)
    trace = tl.trace(M.matmul_twice, X, w)
    assert layers(trace, "dot_general") == [("dot_general_1", 1), ("dot_general_2", 1)]


@pytest.mark.parametrize("model, calls, expected", [
    (M.BlockInLoop, 3, [("tanh_1", 3)]),
    (M.BlockThreeLines, 3, [("tanh_1", 3)]),
], ids=["one module called 3 times from a loop", "one module instance called from 3 lines"])
def test_module_calls(model, calls, expected):
    module = model(nnx.Rngs(0))
    trace = tl.trace(module, X)
    assert trace.modules["block"].num_calls == calls
    assert [str(c) for c in trace.modules["block"].calls] == [f"block:{k}" for k in range(1, calls + 1)]
    assert layers(trace, "tanh") == expected
    assert [op.module_call for op in trace["tanh_1"].ops] == [f"block:{k}" for k in range(1, calls + 1)]
    assert layers(trace, "add") == [("add_1", 3), ("add_2", 3), ("add_3", 3)]  # the Linear bias, the two residuals
    np.testing.assert_allclose(np.asarray(trace[trace.output_layers[0]].out), np.asarray(module(X)), rtol=0, atol=0)


def test_a_list_of_identical_modules_gives_separate_layers():
    trace = tl.trace(M.Stack(nnx.Rngs(0)), X)
    assert layers(trace, "tanh") == [("tanh_1", 1), ("tanh_2", 1), ("tanh_3", 1)]
    assert [trace[f"tanh_{k}"].module for k in (1, 2, 3)] == ["blocks.0", "blocks.1", "blocks.2"]
    assert trace["dot_general_2"].params == ("blocks.1.lin.kernel",)
    assert trace.modules["blocks.1.lin"].parent == "blocks.1"


def test_flax_mlp():
    model = M.MLP(nnx.Rngs(0))
    trace = tl.trace(model, X)
    assert [(layer.layer_label, layer.module) for layer in trace.layers if layer.is_compute] == [
        ("dot_general_1", "fc1"), ("reshape_1", "fc1"), ("add_1", "fc1"),
        ("max_1", "self"),
        ("dot_general_2", "fc2"), ("reshape_2", "fc2"), ("add_2", "fc2"),
    ]
    assert set(trace.params) == {"fc1.kernel", "fc1.bias", "fc2.kernel", "fc2.bias"}
    assert trace.params["fc1.kernel"].shape == (4, 8) and trace.params["fc1.kernel"].module == "fc1"
    assert trace["dot_general_1"].params == ("fc1.kernel",)
    assert isinstance(trace["max_1"].out, jax.Array)
    np.testing.assert_array_equal(np.asarray(trace["output_1"].out), np.asarray(model(X)))


def test_transformer_block():
    model = M.TransformerBlock(8, 2, nnx.Rngs(0))
    x = jnp.linspace(-1.0, 1.0, 2 * 5 * 8).reshape(2, 5, 8)
    trace = tl.trace(model, x)
    assert trace.options.grouping_policy["detector"] == "callsite_v1"
    # Every place runs once, except that LayerNorm takes the means of x and x**2 in one generator
    # expression (flax's _compute_stats): its reduce_sum and div, one pass per element.
    assert [(layer.layer_label, layer.module, layer.num_passes) for layer in trace.layers if layer.num_passes > 1] == [
        ("reduce_sum_1", "norm1", 2), ("div_1", "norm1", 2), ("reduce_sum_3", "norm2", 2), ("div_3", "norm2", 2)]
    residuals = [layer.layer_label for layer in trace.layers if layer.func_name == "add" and layer.module == "self"
                 and layer.ops[0].shape == x.shape]  # gelu's own adds are on the 16-wide hidden layer
    assert residuals == ["add_7", "add_14"]
    assert {"attn:1", "norm1:1", "norm2:1", "up:1", "down:1"} <= {str(c) for m in trace.modules.values() for c in m.calls}
    assert trace.modules["attn.query"].num_calls == 1
    np.testing.assert_allclose(np.asarray(trace["output_1"].out), np.asarray(model(x)), rtol=1e-6, atol=1e-6)


def test_output_values_are_the_untraced_values():
    for function in (M.loop, M.nested_loops, M.recursion, M.jit_in_loop):
        trace = tl.trace(function, X)
        np.testing.assert_array_equal(np.asarray(trace["output_1"].out), np.asarray(function(X)))
    trace = tl.trace(M.loop, X)
    np.testing.assert_array_equal(np.asarray(trace["tanh_1:2"].out), np.asarray(jnp.tanh(jnp.tanh(X) * 0.5)))


def _without_tracebacks(closed):
    from jax._src import source_info_util

    eqns = [e.replace(source_info=source_info_util.new_source_info()) for e in closed.jaxpr.eqns]
    return closed.replace(jaxpr=closed.jaxpr.replace(eqns=eqns))


def test_structural_fallback_without_tracebacks():
    """A jaxpr whose equations carry no Python traceback is grouped by structure (grouper_v1):
    the loop is found from its repeated, loop-carried body; a loop written out by hand looks
    the same, so it folds too (call sites are what tell them apart)."""
    for function, expected in ((M.loop, [("tanh_1", 3), ("mul_1", 3)]),
                               (M.unrolled, [("tanh_1", 2), ("mul_1", 2)]),
                               (M.two_on_one_line, [("sin_1", 1), ("sin_2", 1), ("add_1", 1)])):
        closed = _without_tracebacks(jax.make_jaxpr(function)(X))
        trace = tl.trace(closed, X)
        assert trace.options.grouping_policy["detector"] == "grouper_v1"
        assert layers(trace) == expected
        assert str(trace["tanh_1" if "tanh_1" in trace else "sin_1"].call_site) == "(no Python frame)"
        np.testing.assert_array_equal(np.asarray(trace["output_1"].out), np.asarray(function(X)))


def test_a_jaxpr_with_tracebacks_is_grouped_by_call_site():
    trace = tl.trace(jax.make_jaxpr(M.loop)(X), X)
    assert trace.options.grouping_policy["detector"] == "callsite_v1"
    assert layers(trace) == [("tanh_1", 3), ("mul_1", 3)]


def test_containers_are_paths_only():
    trace = tl.trace(M.dict_output, X, capture=tl.options.CaptureOptions(capture_container_structure=True))
    container = trace["output_1"].container
    assert container.kind == "dict" and container.keys() == ("a", "pair")
    assert container.reconstructable is False
    assert container["pair"][1][0] is trace["output_3:1"]
    assert container["pair"].reconstructable is False
    with pytest.raises(OpaqueContainerError, match="paths_only"):
        container.reconstruct()
    with pytest.raises(OpaqueContainerError, match="paths_only"):
        trace.reconstruct_output()
    assert trace.input_at(0) is trace["input_1:1"]
    assert trace.output_at("pair", 0) is trace["output_2:1"]


def test_custom_pytrees_are_never_reconstructable():
    model = M.MLP(nnx.Rngs(0))
    trace = tl.trace(lambda state, x: {"y": model(x), "state": state}, nnx.state(model), X,
                     capture=tl.options.CaptureOptions(capture_container_structure=True))
    view = trace.output_at("state")
    assert view.kind == "custom" and view.reconstructable is False


def test_draw_and_table():
    trace = tl.trace(M.BlockInLoop(nnx.Rngs(0)), X)
    dot = trace.draw().source
    assert "tanh_1" in dot and "block" in dot
    assert "tanh_1" in str(trace)


def test_torch_only_features_are_refused():
    trace = tl.trace(M.loop, X)
    other = tl.trace(M.loop, X)
    for call in (trace.validate_forward_pass, lambda: trace.do({}), lambda: trace.run(X), lambda: tl.save(trace, "x"),
                 lambda: pickle.dumps(trace), lambda: trace == other):
        with pytest.raises(TorchLensValueError, match="JAX"):
            call()
    with pytest.raises(TorchLensValueError, match="tl.predict"):
        tl.trace(M.loop, X, check_prediction=True)
    with pytest.raises(TorchLensValueError, match="save"):
        tl.trace(M.loop, X, capture=tl.options.CaptureOptions(save=("tanh",)))


def test_save_none_keeps_no_array():
    trace = tl.trace(M.loop, X, capture=tl.options.CaptureOptions(save="none"))
    assert all(op.out is None for op in trace.ops)
    assert trace["tanh_1:2"].shape == (3, 4)


def test_another_threads_module_calls_are_not_the_traces():
    model = M.CallsFromAThread(nnx.Rngs(0))
    trace = tl.trace(model, X)
    assert trace.modules["block"].num_calls == 1 and len(model.seen) == 1
    assert layers(trace, "tanh") == [("tanh_1", 1)]


def test_the_model_is_left_as_it_was():
    before = {cls: cls.__dict__["__call__"] for cls in (M.Block, M.BlockInLoop, nnx.Linear)}
    model = M.BlockInLoop(nnx.Rngs(0))

    def raises(x):
        model(x)
        raise ZeroDivisionError("the model's own error")

    with pytest.raises(ZeroDivisionError, match="own error"):
        tl.trace(raises, X)
    tl.trace(model, X)
    assert before == {cls: cls.__dict__["__call__"] for cls in before}
