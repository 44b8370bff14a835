"""The grouping spec (``spec/grouping.txt``) as tests of ``tl.trace``: every Cases-table row, the
Unrolled/Looped example and the facts its prose states.

A case's ``layers`` is the exact ordered list of ``(layer_label, num_passes)`` over the compute
layers (every layer but inputs, outputs and buffer versions), in order of first execution; the
label fixes the ``func_name``. Where the ops are a torch implementation detail (recurrent cells,
attention, TorchScript, checkpoint) a ``check`` asserts the property the row states instead.
The table (models, inputs, expected layers) is :mod:`models.table`; the models are in
:mod:`models.cases`.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchlens as tl
from models import cases as C
from models.table import ALL_PARAMS, ROWS, Case, build, compute_layers, summary, traced_output


@pytest.mark.parametrize("case", ALL_PARAMS)
def test_layers(case: Case):
    model, inputs = build(case)
    trace = tl.trace(model, *inputs)
    if case.layers is not None:
        assert summary(trace) == case.layers
    for layer in compute_layers(trace):
        passes = range(1, layer.num_passes + 1)
        assert layer.func_name == layer.layer_label.rsplit("_", 1)[0]
        assert [op.label for op in layer.ops] == [f"{layer.layer_label}:{k}" for k in passes]
        assert [op.pass_num for op in layer.ops] == list(passes)
    assert list(trace.input_layers) == [f"input_{k}" for k in range(1, len(inputs) + 1)]
    assert list(trace.output_layers) == ["output_1"]
    for label in [*trace.input_layers, *trace.output_layers]:
        layer = trace[label]
        assert layer.num_passes == 1
        assert layer.func_name == ("input" if layer.is_input else "output")
        assert layer.is_input != layer.is_output
    assert trace.modules["self"].num_calls == 1
    for address, calls in case.modules.items():
        module = trace.modules[address]
        assert (module.address, module.num_calls) == (address, calls)
        assert [call.label for call in module.calls] == [f"{address}:{k}" for k in range(1, calls + 1)]
    if case.check is not None:
        case.check(trace, model, inputs)


@pytest.mark.parametrize("case", ALL_PARAMS)
def test_traced_output_equals_untraced(case: Case):
    model, inputs = build(case)
    expected = model(*inputs)
    trace = tl.trace(model, *inputs)
    torch.testing.assert_close(traced_output(trace), expected, rtol=0, atol=0)


@pytest.mark.parametrize("case", ALL_PARAMS)
def test_validate_forward_pass(case: Case):
    model, inputs = build(case)
    report = tl.trace(model, *inputs).validate_forward_pass()
    assert report.ok, str(report)
    assert report.checked >= 2


@pytest.mark.parametrize("case", ALL_PARAMS)
def test_check_passes(case: Case):
    model, inputs = build(case)
    tl.trace(model, *inputs).check()


@pytest.mark.parametrize("case", ALL_PARAMS)
def test_two_traces_same_labels(case: Case):
    model, inputs = build(case)
    first, second = tl.trace(model, *inputs), tl.trace(model, *inputs)
    assert [(layer.layer_label, layer.num_passes) for layer in first.layers] == [
        (layer.layer_label, layer.num_passes) for layer in second.layers
    ]
    assert [op.label for op in first.ops] == [op.label for op in second.ops]


# --- facts from the prose -------------------------------------------------------------------------


def test_spec_example_unrolled_vs_looped():
    """The spec's printout: Unrolled has two tanh layers, Looped one with two passes."""
    x = torch.ones(2, 4)
    printed = {}
    for model in (C.Unrolled(), C.Looped()):
        trace = tl.trace(model, x)
        layers = [layer for layer in trace.layers if layer.func_name == "tanh"]
        printed[type(model).__name__] = [(layer.layer_label, layer.num_passes) for layer in layers]
    assert printed == {"Unrolled": [("tanh_1", 1), ("tanh_2", 1)], "Looped": [("tanh_1", 2)]}
    torch.testing.assert_close(C.Unrolled()(x), C.Looped()(x))


def test_module_calls_and_pass_lookup():
    """A module called 3 times: calls block:1..3, pass k of each op inside runs in call k."""
    model, inputs = build(ROWS["module-loop"])
    (x,) = inputs
    trace = tl.trace(model, x)
    block = trace.modules["block"]
    assert (block.num_calls, [str(call) for call in block.calls]) == (3, ["block:1", "block:2", "block:3"])
    assert block.type_name == "LinearTanh"
    assert trace["block"].address == "block"
    call = trace["block:2"]
    assert call is block.calls[1]
    assert (call.label, call.module, call.index, call.parent) == ("block:2", "block", 2, "self:1")
    assert call.ops == ("linear_1:2", "tanh_1:2") and call.outputs == ("tanh_1:2",)
    assert call.inputs == ("tanh_1:1",)
    assert trace["block.lin:2"].parent == "block:2" and trace["block.lin:2"].ops == ("linear_1:2",)
    assert trace["self:1"].inputs == ("input_1:1",) and trace["self:1"].outputs == ("tanh_1:3",)
    tanh = trace["tanh_1"]
    assert tanh.module == "block"
    assert [op.module_call for op in tanh.ops] == ["block:1", "block:2", "block:3"]
    second = trace["tanh_1:2"]
    assert (second.label, second.pass_num, second.layer.layer_label) == ("tanh_1:2", 2, "tanh_1")
    with torch.no_grad():
        expected = model.block(model.block(x))
    torch.testing.assert_close(second.out, expected, rtol=0, atol=0)


def test_capture_with_a_module_called_on_a_second_thread_is_refused():
    with pytest.raises(tl.TorchLensError):
        tl.trace(C.ModuleInWorkerThread(), torch.randn(2, 4))


def test_capture_with_an_op_on_a_second_thread_is_refused():
    with pytest.raises(tl.TorchLensError):
        tl.trace(C.OpInWorkerThread(), torch.randn(2, 4))


def test_capture_started_from_a_second_thread_during_a_capture_is_refused():
    model = C.CallsInWorkerThread(lambda x: tl.trace(C.LoopTanh(), x))
    with pytest.raises(tl.TorchLensError):
        tl.trace(model, torch.randn(2, 4))


def test_data_parallel_is_refused():
    wrapped = nn.DataParallel(C.LoopTanh())  # wrapping works on CPU; capturing through it does not
    with pytest.raises(tl.TorchLensError):
        tl.trace(wrapped, torch.randn(2, 4))
