"""``CaptureOptions(save=...)``, ``trace.nbytes`` and ``tl.record`` (issue 13, the grouping spec's
predicate capture): which outputs a capture keeps, what unsaved ops still say, and that a lean
capture groups exactly as ``tl.trace`` does."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
from torch import nn

import torchlens as tl
from models.table import ALL_PARAMS, Case, build

CaptureOptions = tl.options.CaptureOptions


class Stash(nn.Module):
    """Keeps a weak reference to every tensor its forward pass makes, and a BatchNorm buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.lin, self.bn = nn.Linear(4, 4), nn.BatchNorm1d(4)
        self.refs: list[weakref.ref] = []

    def forward(self, x):
        for _ in range(3):
            x = torch.relu(self.bn(self.lin(x)))
            self.refs.append(weakref.ref(x))
        x = x + 1
        x.mul_(2)
        self.refs.append(weakref.ref(x))
        return x * 2


def stash_trace(save):
    torch.manual_seed(0)
    model = Stash().train()
    trace = tl.trace(model, torch.randn(3, 4), capture=CaptureOptions(save=save))
    return model, trace


def full_trace():
    return stash_trace("all")[1]


def test_save_none_holds_no_tensor_after_trace_returns():
    model, trace = stash_trace("none")
    gc.collect()
    assert model.refs and all(ref() is None for ref in model.refs)
    assert all(op.out is None and op._replay is None for op in trace.ops)
    assert all(b.initial_value is None and b.final_value is None for b in trace.buffers.values())
    assert trace.nbytes == 0
    assert "memory: 0 B held; 0 of" in str(trace)


def test_save_none_holds_no_tensor_before_its_records_are_first_read():
    from torchlens.api import trace as unread_trace  # without the test-wide check, which reads every record

    torch.manual_seed(0)
    model = Stash().train()
    trace = unread_trace(model, torch.randn(3, 4), capture=CaptureOptions(save="none"))
    gc.collect()
    assert trace._later is not None and model.refs and all(ref() is None for ref in model.refs)
    assert trace.nbytes == 0 and trace._later is None


def test_a_dropped_trace_frees_its_tensors_at_once():
    """Nothing a capture makes refers back to it (its buffer journal, its thread guard, its undo
    steps), so a trace whose records were not read is freed with every tensor it holds as soon as
    it is dropped, not when Python's cycle collector next runs."""
    from torchlens.api import trace as unread_trace  # (the records, once built, refer to each other)

    torch.manual_seed(0)
    model = Stash().train()
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        trace = unread_trace(model, torch.randn(3, 4))
        assert model.refs and all(ref() is not None for ref in model.refs)
        del trace
        assert all(ref() is None for ref in model.refs)
    finally:
        if enabled:
            gc.enable()


def test_unsaved_ops_keep_their_metadata():
    full, (_, none) = full_trace(), stash_trace("none")
    assert [op.label for op in none.ops] == [op.label for op in full.ops]
    for lean, op in zip(none.ops, full.ops):
        assert (lean.shape, lean.dtype, lean.device, lean.stride, lean.requires_grad) == (
            op.shape, op.dtype, op.device, op.stride, op.requires_grad)
        assert lean.shape == tuple(op.out.shape) and lean.dtype == op.out.dtype
        assert lean.parents == op.parents and lean.children == op.children
    # What the op made, not the trace's detached copy of it.
    assert none["linear_1:1"].requires_grad and full["linear_1:1"].requires_grad
    assert none["linear_1:1"].stride == (4, 1) and none["linear_1:1"].device == torch.device("cpu")


@pytest.mark.parametrize("save, expected", [
    (("relu_1",), {"relu_1:1", "relu_1:2", "relu_1:3"}),
    (["relu_1:2"], {"relu_1:2"}),
    ({"add"}, {"add_1:1"}),
    (("lin",), {"linear_1:1", "linear_1:2", "linear_1:3"}),
    (("bn.running_mean:2",), {"bn.running_mean:2"}),
    (lambda op: op.func_name == "mul_" or op.pass_num == 3 and op.module == "self", {"relu_1:3", "mul__1:1"}),
])
def test_selection_keeps_exactly_the_selected_outputs_with_their_values(save, expected):
    full, (_, trace) = full_trace(), stash_trace(save)
    by_label = {op.label: op for op in full.ops}
    buffer_labels = {f"{op.buffer.address}:{op.buffer.version}": op.label for op in full.ops if op.is_buffer}
    kept = {op.label for op in trace.ops if op.out is not None}
    assert kept == {buffer_labels.get(label, label) for label in expected}
    for op in trace.ops:
        if op.out is not None:
            torch.testing.assert_close(op.out, by_label[op.label].out, rtol=0, atol=0)
    assert 0 < trace.nbytes < full.nbytes


def test_an_in_place_write_does_not_change_a_selected_output():
    _, trace = stash_trace(("add",))
    full = full_trace()
    torch.testing.assert_close(trace["add_1:1"].out, full["add_1:1"].out, rtol=0, atol=0)
    assert not torch.equal(trace["add_1:1"].out, full["mul__1:1"].out)


def test_replay_needs_save_all():
    _, trace = stash_trace(("relu",))
    with pytest.raises(tl.TorchLensError, match="save=frozenset"):
        trace.validate_forward_pass()
    assert full_trace().validate_forward_pass().ok


def test_save_outputs_is_an_alias_of_save():
    assert CaptureOptions(save_outputs=False).save == "none"
    assert CaptureOptions(save_outputs=True).save == "all"
    assert CaptureOptions(save="none").save_outputs is False
    assert CaptureOptions(save=("relu",)).save_outputs is False
    assert CaptureOptions().save_outputs is True
    with pytest.raises(tl.TorchLensError, match="disagree"):
        CaptureOptions(save="none", save_outputs=True)


@pytest.mark.parametrize("save, error", [
    ("relu", tl.errors.TorchLensValueError),
    (3, tl.errors.TorchLensTypeError),
    (("relu", 1), tl.errors.TorchLensTypeError),
])
def test_bad_save_values_say_what_is_allowed(save, error):
    with pytest.raises(error, match="save="):
        CaptureOptions(save=save)


def test_memory_line_counts_saved_outputs():
    full = full_trace()
    assert f"{len(full.ops)} of {len(full.ops)} op outputs saved" in str(full)
    assert full.nbytes >= sum(op.out.untyped_storage().nbytes() for op in full.ops if not op.is_buffer
                              and op.func_name in {"linear", "relu"})


# -- online labels and tl.record ------------------------------------------------------------------


def summary(trace) -> list:
    return [(layer.layer_label, layer.func_name, layer.module, [(op.label, op.parents, op.children, op.shape)
                                                               for op in layer.ops]) for layer in trace.layers]


@pytest.mark.parametrize("case", ALL_PARAMS)
def test_record_to_trace_equals_trace_on_the_cases(case: Case):
    model, inputs = build(case)
    seen: list = []
    recording = tl.record(model, *inputs, predicate=lambda op: seen.append(op) or op.pass_num == 1)
    model, inputs = build(case)
    full = tl.trace(model, *inputs)
    cooked = recording.to_trace()
    assert summary(cooked) == summary(full)
    # Compute and boundary ops are labelled as grouping labels them; buffer versions by address.
    assert [op.label for op in full.ops if not op.is_buffer] == [op.label for op in seen if op.func_name != "buffer"]
    versions = [f"{op.buffer.address}:{op.buffer.version}" for op in full.ops if op.is_buffer]
    assert sorted(op.label for op in seen if op.func_name == "buffer") == sorted(versions)
    kept = [op.info.label for op in recording if op.info.func_name != "buffer"]
    assert kept == [op.label for op in full.ops if op.pass_num == 1 and not op.is_buffer]
    cooked.check()


def test_recording_keeps_only_the_selected_outputs():
    torch.manual_seed(0)
    model = Stash().eval()
    recording = tl.record(model, torch.randn(3, 4), predicate=("relu_1",))
    assert [op.info.label for op in recording] == ["relu_1:1", "relu_1:2", "relu_1:3"]
    assert recording["relu_1:2"].out.shape == (3, 4)
    assert (recording["relu_1:2"].info.module_call, recording["relu_1:2"].info.module) == ("self:1", "self")
    cooked = recording.to_trace()
    assert {op.label for op in cooked.ops if op.out is not None} == {"relu_1:1", "relu_1:2", "relu_1:3"}
    with pytest.raises(tl.TorchLensError, match="not a pass label"):
        recording["linear_1:1"]
    with pytest.raises(tl.TorchLensError, match="tl.record"):
        tl.record(model, torch.randn(3, 4), predicate="all")


def test_a_module_input_whose_id_a_dead_output_had_is_not_that_output():
    """With outputs not kept, a tensor may take the id of a freed op output: the producer table
    is checked against its weak reference (``capture.producer_of``) before it names a parent."""
    import types
    import weakref

    from torchlens.capture.boundary import call_inputs, call_outputs

    dead, alive = torch.zeros(1), torch.ones(1)
    capture = types.SimpleNamespace(producer={id(alive): 3}, refs={id(alive): weakref.ref(dead)})
    capture.producer_of = lambda t: None if capture.refs[id(t)]() is not t else capture.producer[id(t)]
    assert call_inputs(capture, (alive,), {}) == [] and call_outputs(capture, alive) == []
    capture.refs = {id(alive): weakref.ref(alive)}
    assert call_inputs(capture, ([alive],), {}) == [3] and call_outputs(capture, (alive,)) == [3]


def test_an_op_argument_whose_id_a_dead_output_had_is_not_that_output():
    """With outputs not kept, an op's argument may have the id of a freed op output: the lean
    path's argument reader (``Capture._read_by_id``, which ``save="none"`` takes) checks the
    id's weak reference before it names that output as the argument's source."""
    from torchlens.capture.session import Capture

    capture = Capture(nn.Linear(2, 2), save="none")
    assert capture.lean
    dead, alive = torch.zeros(1), torch.ones(1)
    capture.producer[id(alive)] = 0
    for held, expected in ((dead, [-1]), (alive, [0])):  # -1: no op's output
        capture.refs[id(alive)] = weakref.ref(held)
        sources: list = []
        capture._read_by_id((alive,), sources, [])
        assert sources == expected
