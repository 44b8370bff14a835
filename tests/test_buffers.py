"""Registered buffers as versioned state (spec: buffers.txt and grouping.txt's buffer rules)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchlens as tl
from torchlens.capture.buffers import BufferWriteError
from torchlens.validation import ValidationError


def passes(trace):
    """``(layer label, passes)`` of every non-boundary layer."""
    return [(l.layer_label, l.num_passes) for l in trace.layers if not (l.is_input or l.is_output)]


class Cell(nn.Module):
    """The spec's recurrent-state example."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("h", torch.zeros(2))

    def forward(self, x):
        self.h = torch.tanh(self.h + x)
        self.h = torch.tanh(self.h + x)
        return self.h


class InPlaceLoop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.zeros(2))

    def forward(self, x):
        for _ in range(3):
            self.count.add_(1.0)
            x = x * self.count
        return x


class ReassignLoop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("h", torch.zeros(2))

    def forward(self, x):
        for _ in range(3):
            self.h = torch.tanh(self.h + x)
        return self.h


class WrittenOnce(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("h", torch.zeros(2))

    def forward(self, x):
        self.h = x * 2
        return self.h + 1


class WriteKinds(nn.Module):
    """One buffer per explicit write spelling."""

    def __init__(self) -> None:
        super().__init__()
        for name in ("scaled", "copied", "indexed", "through_data", "sliced"):
            self.register_buffer(name, torch.ones(2, 2))

    def forward(self, x):
        self.scaled.mul_(3.0)
        self.copied.copy_(x)
        self.indexed[0] = x[1]
        self.through_data.data.copy_(x * 2)
        self.sliced[:, :1].add_(5.0)
        return x + self.scaled + self.copied + self.indexed + self.through_data + self.sliced


class DataAssign(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("state", torch.zeros(2))

    def forward(self, x):
        self.state.data = x * 2
        return x


def test_cell_versions_and_values():
    trace = tl.trace(Cell(), torch.ones(2))
    h = trace.buffers["h"]
    assert h.num_overwrites == 2 and len(h.versions) == 3
    assert torch.equal(h.initial_value, torch.zeros(2))
    first = torch.tanh(torch.ones(2))
    second = torch.tanh(first + 1)
    assert torch.allclose(h.final_value, second)
    assert torch.allclose(h.value_at(2), first) and torch.allclose(h.value_after(2), second)
    assert [op.buffer_write_kind for op in h.versions] == [None, "reassign", "reassign"]
    assert trace["h:2"] is h.versions[1] and trace["h:2"].is_buffer
    assert trace["h:2"].parents == ("tanh_1:1",) and trace["h:2"].children == ("add_2:1",)
    # Written on two lines: three single-pass buffer layers, the starting value its own.
    assert passes(trace) == [("buffer_1", 1), ("add_1", 1), ("tanh_1", 1), ("buffer_2", 1),
                             ("add_2", 1), ("tanh_2", 1), ("buffer_3", 1)]
    assert trace[trace.output_layers[0]].ops[0].parents == ("buffer_3:1",)
    with pytest.raises(tl.TorchLensError):
        h.value_at(4)


def test_inplace_loop_is_one_buffer_layer_with_the_starting_value():
    trace = tl.trace(InPlaceLoop(), torch.ones(2))
    assert passes(trace) == [("buffer_1", 4), ("add__1", 3), ("mul_1", 3)]
    count = trace.buffers["count"]
    assert [count.value_at(n).tolist() for n in (1, 2, 3, 4)] == [[0, 0], [1, 1], [2, 2], [3, 3]]
    assert count.num_overwrites == 3 and trace.layers[1].is_buffer
    assert [op.label for op in trace.buffer_write_ops] == ["buffer_1:2", "buffer_1:3", "buffer_1:4"]
    assert [op.label for op in trace.buffer_read_ops] == ["buffer_1:1", "buffer_1:2", "buffer_1:3", "buffer_1:4"]


def test_reassignment_in_a_loop_is_loop_carried_state():
    trace = tl.trace(ReassignLoop(), torch.ones(2))
    assert passes(trace) == [("buffer_1", 4), ("add_1", 3), ("tanh_1", 3)]


def test_buffer_written_once_keeps_two_single_pass_layers():
    trace = tl.trace(WrittenOnce(), torch.ones(2))
    # The starting value is observed when the write happens (nothing read it before).
    assert passes(trace) == [("mul_1", 1), ("buffer_1", 1), ("buffer_2", 1), ("add_1", 1)]
    assert trace.buffers["h"].versions[0].children == ()


def test_each_explicit_write_kind_is_journaled():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    trace = tl.trace(WriteKinds(), x)
    expected = {
        "scaled": [[3, 3], [3, 3]],
        "copied": [[1, 2], [3, 4]],
        "indexed": [[3, 4], [1, 1]],
        "through_data": [[2, 4], [6, 8]],
        "sliced": [[6, 1], [6, 1]],
    }
    for address, value in expected.items():
        buffer = trace.buffers[address]
        assert buffer.num_overwrites == 1, address
        assert buffer.versions[1].buffer_write_kind == "inplace"
        assert buffer.final_value.tolist() == value and buffer.value_after(1).tolist() == value
        assert buffer.initial_value.tolist() == [[1, 1], [1, 1]]
    assert trace.buffers["sliced"].versions[1].buffer.transition_only
    report = trace.validate_forward_pass()
    assert report.ok and report.transition_only == ("buffer_10:1",)


def test_batchnorm_training_updates_are_fused_versions():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3)).train()
    x = torch.randn(4, 3)
    trace = tl.trace(model, x)
    assert trace.modules["1"].buffers == ("1.running_mean", "1.running_var", "1.num_batches_tracked")
    mean, var, tracked = (trace.buffers[f"1.{n}"] for n in ("running_mean", "running_var", "num_batches_tracked"))
    assert [op.buffer_write_kind for op in mean.versions] == [None, "fused"]
    assert [op.buffer_value_changed for op in var.versions] == [None, True]
    assert [op.buffer_write_kind for op in tracked.versions] == [None, "inplace"]
    assert tracked.final_value.item() == 1 and trace["1.num_batches_tracked:2"].out.item() == 1
    assert torch.allclose(mean.final_value, model[1].running_mean)
    assert trace["1.running_mean:2"].parents == ("batch_norm_1:1",)
    assert mean.versions[0].children == ("batch_norm_1:1",)
    assert trace.validate_forward_pass().ok


def test_batchnorm_eval_reads_without_writing():
    model = nn.BatchNorm1d(3).eval()
    trace = tl.trace(model, torch.randn(4, 3))
    assert [b.num_overwrites for b in trace.buffers.values()] == [0, 0, 0]
    assert [len(b.versions) for b in trace.buffers.values()] == [1, 1, 0]


def test_data_assignment_raises_a_diagnostic_and_restores_everything():
    setattr_before = nn.Module.__setattr__
    with pytest.raises(BufferWriteError, match=r"`state`.*self\.state = tensor.*copy_") as info:
        tl.trace(DataAssign(), torch.ones(2))
    assert isinstance(info.value, tl.TorchLensError)
    assert nn.Module.__setattr__ is setattr_before


def test_show_buffers_option():
    assert tl.options.CaptureOptions().show_buffers == "meaningful"
    assert tl.options.CaptureOptions(show_buffers="always").show_buffers == "always"
    with pytest.raises(tl.TorchLensError, match="meaningful"):
        tl.options.CaptureOptions(show_buffers="sometimes")


def test_strict_validation_raises_on_a_tampered_trace():
    trace = tl.trace(Cell(), torch.ones(2))
    assert trace.validate_forward_pass(strict=True).ok
    trace["tanh_1:1"].out.add_(1.0)
    report = trace.validate_forward_pass()
    assert not report.ok and report.mismatches[0][0] == "tanh_1:1"
    with pytest.raises(ValidationError, match="tanh_1:1"):
        trace.validate_forward_pass(strict=True)


def test_validation_needs_saved_outputs():
    trace = tl.trace(Cell(), torch.ones(2), capture=tl.options.CaptureOptions(save_outputs=False))
    with pytest.raises(tl.TorchLensError, match="save=.none."):
        trace.validate_forward_pass()


def test_instancenorm_running_stats_are_fused_versions():
    model = nn.InstanceNorm1d(3, track_running_stats=True).train()
    trace = tl.trace(model, torch.randn(2, 3, 5))
    for name in ("running_mean", "running_var"):
        versions = trace.buffers[name].versions
        assert [op.buffer_write_kind for op in versions] == [None, "fused"]
        assert torch.allclose(versions[1].out, getattr(model, name))
    assert trace.buffers["num_batches_tracked"].versions == ()
