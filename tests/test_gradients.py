"""Issue 14 point 5: ``CaptureOptions(save_gradients=True)`` and ``op.grad``."""

from __future__ import annotations

import gc
import weakref

import torch
from torch import nn

import torchlens as tl
from torchlens.persistence import dumps, loads

GRADIENTS = tl.options.CaptureOptions(save_gradients=True)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 2)

    def forward(self, x):
        h = self.a(x)
        h.relu_()  # in place: the linear's gradient is the one reaching its own output
        return self.b(h * 2)


def test_op_grad_holds_each_outputs_gradient_and_parameters_match_an_untraced_run():
    torch.manual_seed(0)
    model, x = Net(), torch.randn(3, 4)
    twin = Net()
    twin.load_state_dict(model.state_dict())
    trace = tl.trace(model, x, capture=GRADIENTS)
    out = trace.reconstruct_output()
    assert all(op.grad is None for op in trace.ops)
    (out ** 2).sum().backward()

    # the same computation, untraced, with the intermediate gradients asked of autograd
    h = twin.a(x)
    r = torch.relu(h)
    m = r * 2
    y = twin.b(m)
    gh, gr, gm, gy = torch.autograd.grad((y ** 2).sum(), (h, r, m, y), retain_graph=True)
    (y ** 2).sum().backward()

    assert torch.equal(trace["linear_1:1"].grad, gh)
    assert torch.equal(trace["relu__1:1"].grad, gr)
    assert torch.equal(trace["mul_1:1"].grad, gm)
    assert torch.equal(trace["linear_2:1"].grad, gy) and torch.equal(trace["output_1:1"].grad, gy)
    assert trace["input_1:1"].grad is None  # the input needs no gradient
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        assert torch.equal(p.grad, q.grad), name


def test_without_the_option_there_are_no_hooks_and_no_gradients():
    torch.manual_seed(0)
    model = Net()
    trace = tl.trace(model, torch.randn(3, 4))
    trace.reconstruct_output().sum().backward()
    assert all(op.grad is None for op in trace.ops)


def test_hooks_are_removed_when_the_trace_is_dropped():
    torch.manual_seed(0)
    model = Net()
    trace = tl.trace(model, torch.randn(3, 4), capture=GRADIENTS)
    out = trace.reconstruct_output()
    store = weakref.ref(trace.ops[0]._grad[0])
    hooked = trace["linear_2"].out
    assert hooked._backward_hooks
    del trace
    gc.collect()
    assert store() is None
    assert not hooked._backward_hooks
    out.sum().backward()  # still works, nothing left to call


def test_gradients_are_saved_with_the_trace():
    torch.manual_seed(0)
    trace = tl.trace(Net(), torch.randn(3, 4), capture=GRADIENTS)
    trace.reconstruct_output().sum().backward()
    loaded = loads(dumps(trace))
    assert loaded == trace and loaded.options.capture.save_gradients
    assert torch.equal(loaded["linear_1:1"].grad, trace["linear_1:1"].grad)
