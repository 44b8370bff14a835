"""Issue 15, points 5 and 6: torch features that used to trip the capture."""

from __future__ import annotations

import collections

import pytest
import torch
from torch import nn

import torchlens as tl
from torchlens.errors import UnsupportedForwardError

from torch_state import differences, snapshot


def layers_of(trace):
    return [(layer.func_name, layer.num_passes) for layer in trace.layers]


class Unhashable(nn.Module, collections.OrderedDict):
    """An nn.Module that is also an OrderedDict: unhashable, so torch's named_modules() raises."""

    def __init__(self) -> None:
        nn.Module.__init__(self)
        collections.OrderedDict.__init__(self)
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x)


class HoldsUnhashable(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Unhashable()
        self.register_buffer("scale", torch.ones(3))

    def forward(self, x):
        return self.inner(x).relu() * self.scale


@pytest.mark.parametrize("make", [Unhashable, HoldsUnhashable])
def test_an_unhashable_module_is_traced(make):
    trace = tl.trace(make(), torch.ones(2, 3))
    assert ("linear", 1) in layers_of(trace)


def test_torch_cond_is_one_boundary_op():
    class Cond(nn.Module):
        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda x: x.sin(), lambda x: x.cos(), (x,)) + 1

    trace = tl.trace(Cond(), torch.ones(2, 3))
    assert layers_of(trace) == [("input", 1), ("sum", 1), ("gt", 1), ("cond", 1), ("add", 1), ("output", 1)]
    assert set(trace["cond_1:1"].parents) == {"input_1:1", "gt_1:1"}


def test_a_backward_pass_inside_forward_is_refused_not_recorded_disconnected():
    class GradInForward(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            (grad,) = torch.autograd.grad(self.lin(x).sum(), x, create_graph=True)
            return grad * 2

    model, x = GradInForward(), torch.ones(2, 3, requires_grad=True)
    before = snapshot()
    with pytest.raises(UnsupportedForwardError, match="backward pass"):
        tl.trace(model, x)
    assert differences(before, snapshot()) == []
    assert torch.equal(model(x), 2 * model.lin.weight.sum(0).expand(2, 3))  # the plain forward still runs


class Loop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        for _ in range(3):
            x = self.lin(x)
        return x


def test_a_torch_compiled_module_is_captured_as_the_module_it_wraps():
    compiled = torch.compile(Loop())
    trace = tl.trace(compiled, torch.ones(2, 3))
    assert layers_of(trace) == [("input", 1), ("linear", 3), ("output", 1)]
    assert list(trace.modules) == ["self", "lin"]
    sites = " ".join(str(layer.call_site) for layer in trace.layers)
    assert "linear.py" in sites and "session.py" not in sites, sites


def test_a_module_compiled_in_place_is_refused():
    model = Loop()
    model.compile()
    with pytest.raises(UnsupportedForwardError, match="compiled in place"):
        tl.trace(model, torch.ones(2, 3))
