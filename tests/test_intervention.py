"""Issue 14 point 4: ``trace.do(edits)``, intervention replay as the buffers spec states it."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import torchlens as tl
from torchlens.errors import BufferThreadGapError, BufferThreadGapWarning, InterventionError, TorchLensValueError


class AddLoop(nn.Module):
    """The spec's example: ``self.b.add_(1.0)`` in a loop, captured as versions 0, 1, 2, 3."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("b", torch.zeros(1))

    def forward(self, x):
        for _ in range(3):
            self.b.add_(1.0)
        return x * self.b


def values(ops) -> list[float]:
    return [op.out.item() for op in ops]


def test_buffer_versions_thread_through_an_edit():
    trace = tl.trace(AddLoop(), torch.ones(1))
    assert values(trace.buffers["b"].versions) == [0.0, 1.0, 2.0, 3.0]
    assert trace["buffer_1"].num_passes == 4
    edited = trace.do({"buffer_1:1": torch.full((1,), 7.0)})
    assert values(edited.buffers["b"].versions) == [7.0, 8.0, 9.0, 10.0]
    assert edited.reconstruct_output().item() == 10.0
    assert values(edited["add__1"].ops) == [8.0, 9.0, 10.0]
    assert edited.buffers["b"].initial_value.item() == 7.0 and edited.buffers["b"].final_value.item() == 10.0
    # the original trace is untouched; the buffer version's own label names the same op
    assert values(trace.buffers["b"].versions) == [0.0, 1.0, 2.0, 3.0]
    assert values(trace.do({"b:1": torch.full((1,), 7.0)}).buffers["b"].versions) == [7.0, 8.0, 9.0, 10.0]
    edited.check()
    assert edited.validate_forward_pass(strict=True).ok


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)
        self.side = nn.Linear(4, 4)

    def forward(self, x):
        h = torch.relu(self.a(x))
        side = self.side(x)
        h = torch.relu_(self.b(h))
        return h + side


def test_only_the_cone_of_effect_is_recomputed():
    torch.manual_seed(0)
    model, x = Net(), torch.randn(2, 4)
    trace = tl.trace(model, x)
    edited = trace.do({"relu_1": lambda out: out * 0})
    with torch.no_grad():
        expected = torch.relu(model.b(torch.zeros(2, 4))) + model.side(x)
    torch.testing.assert_close(edited.reconstruct_output(), expected)
    assert torch.equal(edited["relu_1"].out, torch.zeros(2, 4))
    assert trace["linear_2"].module == "side" and trace["linear_3"].module == "b"
    for label in ("linear_1", "linear_2", "input_1"):  # outside the cone: the very same saved values
        assert edited[label].out is trace[label].out
    assert not torch.equal(edited["linear_3"].out, trace["linear_3"].out)
    assert [layer.layer_label for layer in edited.layers] == [layer.layer_label for layer in trace.layers]


def test_replay_never_writes_into_the_edit_or_the_capture():
    torch.manual_seed(0)
    trace = tl.trace(Net(), torch.randn(2, 4))
    saved = {op.label: op.out.clone() for op in trace.ops}
    edit = torch.full((2, 4), -1.0)
    edited = trace.do({"linear_3": edit})  # relu_ runs in place on it
    assert torch.equal(edit, torch.full((2, 4), -1.0))
    assert edited["linear_3"].out is not edit
    assert torch.equal(edited["relu__1"].out, torch.zeros(2, 4))
    assert all(torch.equal(op.out, saved[op.label]) for op in trace.ops)


class NormDrop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.bn(self.lin(x)))


def test_a_fused_write_keeps_its_value_and_warns_or_raises_under_strict():
    torch.manual_seed(0)
    trace = tl.trace(NormDrop().train(), torch.randn(8, 4))
    with pytest.warns(BufferThreadGapWarning, match="bn.running_mean"):
        edited = trace.do({"linear_1": lambda out: out + 1})
    running = trace.buffers["bn.running_mean"].versions[-1]
    assert torch.equal(edited[running.label].out, running.out)
    with pytest.raises(BufferThreadGapError, match="cannot be certified"):
        trace.do({"linear_1": lambda out: out + 1}, strict=True)


def test_random_ops_draw_what_they_drew():
    torch.manual_seed(0)
    trace = tl.trace(NormDrop().train(), torch.randn(8, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BufferThreadGapWarning)
        same = trace.do({"linear_1": lambda out: out})
    assert torch.equal(same.reconstruct_output(), trace.reconstruct_output())


class SliceWrite(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("s", torch.zeros(2, 2))

    def forward(self, x):
        self.s[:, :1].add_(x)
        return self.s * 2


def test_a_slice_write_is_a_gap():
    trace = tl.trace(SliceWrite(), torch.ones(2, 1))
    with pytest.raises(BufferThreadGapError):
        trace.do({"input_1": torch.full((2, 1), 3.0)}, strict=True)


def test_bad_edits_are_refused_with_what_to_do():
    torch.manual_seed(0)
    trace = tl.trace(Net(), torch.randn(2, 4))
    with pytest.raises(InterventionError, match="must be a tensor"):
        trace.do({"relu_1": lambda out: 3})
    with pytest.raises(TorchLensValueError, match="not a layer label"):
        trace.do({"nope_1:1": torch.zeros(1)})
    with pytest.raises(tl.errors.TorchLensTypeError):
        trace.do(["relu_1"])
    bare = tl.trace(Net(), torch.randn(2, 4), capture=tl.options.CaptureOptions(save_outputs=False))
    with pytest.raises(InterventionError, match="save_outputs"):
        bare.do({"relu_1": torch.zeros(2, 4)})


class ViewWrittenOutput(nn.Module):
    """Returns a tensor after writing it through a view: no replayed value is exactly it."""

    def forward(self, x):
        y = x * 2
        y.view(-1).add_(1)
        return y


def test_an_output_written_through_a_view_has_both_parents_and_is_a_gap():
    x = torch.randn(2, 3)
    trace = tl.trace(ViewWrittenOutput(), x)
    assert torch.equal(trace["output_1"].out, x * 2 + 1)
    assert trace.ops["output_1:1"].parents == ("mul_1:1", "add__1:1")
    report = trace.validate_forward_pass()
    assert report.ok and report.transition_only == ("output_1:1",), str(report)
    with pytest.raises(BufferThreadGapError, match=r"output_1:1 \(written through a view by add__1:1\)"):
        trace.do({"input_1": torch.zeros(2, 3)}, strict=True)
    with pytest.warns(BufferThreadGapWarning):
        edited = trace.do({"input_1": torch.zeros(2, 3)})
    assert torch.equal(edited["output_1"].out, x * 2 + 1)  # kept, as the warning says


class ReturnsAnAttribute(nn.Module):
    """Returns a plain tensor attribute that no op made beside a computed one."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.full((3,), 2.0)

    def forward(self, x):
        return x * self.scale, self.scale


def test_an_output_no_op_made_replays_as_saved():
    trace = tl.trace(ReturnsAnAttribute(), torch.ones(3))
    assert trace.ops["output_2:1"].parents == ()
    report = trace.validate_forward_pass()
    assert report.ok and report.checked == 2, str(report)  # mul_1 and output_1; output_2 is as saved
