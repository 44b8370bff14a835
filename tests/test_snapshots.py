"""Issue 14 point 1: nothing a trace holds changes after ``tl.trace`` returns.

Every saved tensor (op outputs, buffer versions and values, replay arguments, container
leaves, inputs returned as outputs) is the trace's own; argument lists are frozen at call
time; a replay runs under the global state the capture saw.
"""

from __future__ import annotations

import gc

import pytest
import torch
from torch import nn

import torchlens as tl
from torchlens.api import trace as unread_trace
from torchlens.capture.replay import tensor_args


class Stateful(nn.Module):
    """Train-mode BatchNorm, an in-place buffer counter, a parameter read, dropout."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)
        self.register_buffer("count", torch.zeros(1))
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        self.count.add_(1.0)
        h = self.bn(self.lin(x)) * self.count
        return self.drop(h), self.lin.weight.t()


def saved_tensors(trace) -> dict[str, torch.Tensor]:
    """Every tensor a user can read from the trace, by where it is read."""
    found = {op.label: op.out for op in trace.ops}
    for address, buffer in trace.buffers.items():
        found[f"{address} initial"] = buffer.initial_value
        found[f"{address} final"] = buffer.final_value
    for k, value in enumerate(trace.reconstruct_output()):
        found[f"output {k}"] = value
    return {key: value.detach().clone() for key, value in found.items()}


def assert_unchanged(trace, before: dict[str, torch.Tensor]) -> None:
    after = saved_tensors(trace)
    changed = [key for key in before if not torch.equal(before[key], after[key])]
    assert not changed, f"saved values changed after capture: {changed}"
    trace.check()
    assert trace.validate_forward_pass(strict=True).ok


def test_running_the_model_again_changes_nothing_saved():
    torch.manual_seed(0)
    model = Stateful().train()
    x = torch.randn(8, 4)
    trace = tl.trace(model, x)
    before = saved_tensors(trace)
    assert torch.equal(trace.buffers["count"].final_value, torch.ones(1))
    for _ in range(2):
        model(x)
    assert torch.equal(model.count, torch.full((1,), 3.0))
    assert_unchanged(trace, before)
    assert torch.equal(trace["count:2"].out, torch.ones(1))


def test_training_the_parameters_changes_nothing_saved():
    torch.manual_seed(0)
    model = Stateful().train()
    x = torch.randn(8, 4)
    trace = tl.trace(model, x)
    before = saved_tensors(trace)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(2):
        optimizer.zero_grad()
        out, _ = model(x)
        out.sum().backward()
        optimizer.step()
    assert_unchanged(trace, before)


class ReturnsInput(nn.Module):
    def forward(self, x):
        return x, x * 2


def test_an_input_returned_as_output_is_not_the_callers_tensor():
    x = torch.ones(3)
    trace = tl.trace(ReturnsInput(), x)
    x.add_(5.0)
    assert torch.equal(trace["output_1"].out, torch.ones(3))
    assert torch.equal(trace["input_1"].out, torch.ones(3))
    assert torch.equal(trace.reconstruct_output()[0], torch.ones(3))
    assert trace.validate_forward_pass(strict=True).ok


class DenseList(nn.Module):
    """DenseNet's pattern: concatenate a list the loop keeps appending to."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4 * (k + 1), 4) for k in range(3))

    def forward(self, x):
        feats = [x]
        for layer in self.layers:
            feats.append(torch.relu(layer(torch.cat(feats, 1))))
        feats[0] = feats[0] * 0  # replacing an item afterwards must not reach the record either
        return torch.cat(feats, 1)


def test_argument_lists_are_frozen_at_call_time():
    torch.manual_seed(0)
    trace = tl.trace(DenseList(), torch.randn(2, 4))
    cats = [op for op in trace.ops if op.func_name == "cat"]
    assert [tuple(op.shape) for op in cats] == [(2, 4), (2, 8), (2, 12), (2, 16)]
    report = trace.validate_forward_pass(strict=True)
    assert report.ok and report.checked == len(trace.ops) - len(trace.input_layers)


class EmaInForward(nn.Module):
    """Reads a parameter, then updates it in place inside ``forward`` (an EMA-style update)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(3))

    def forward(self, x):
        y = x * self.w
        with torch.no_grad():
            self.w.mul_(0.5)
        return y + self.w


def test_a_parameter_written_during_forward_replays_with_the_value_each_op_read():
    trace = tl.trace(EmaInForward(), torch.ones(3))
    assert torch.equal(trace.reconstruct_output(), torch.full((3,), 1.5))
    assert trace.validate_forward_pass(strict=True).ok


class Mixed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.tanh(self.lin(x)) @ self.lin.weight


def test_replay_after_leaving_autocast_runs_under_the_captured_autocast():
    torch.manual_seed(0)
    model, x = Mixed(), torch.randn(2, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        trace = tl.trace(model, x)
    assert trace["linear_1"].out.dtype == torch.bfloat16
    assert not torch.is_autocast_enabled("cpu")
    assert trace.validate_forward_pass(strict=True).ok
    assert not torch.is_autocast_enabled("cpu") and torch.is_grad_enabled()


def test_replay_under_the_captured_default_dtype_and_grad_mode():
    torch.manual_seed(0)
    model, x = Mixed().double(), torch.randn(2, 4, dtype=torch.float64)
    torch.set_default_dtype(torch.float64)
    try:
        with torch.no_grad():
            trace = tl.trace(nn.Sequential(model), x)
    finally:
        torch.set_default_dtype(torch.float32)
    assert trace.validate_forward_pass(strict=True).ok
    assert torch.get_default_dtype() == torch.float32 and torch.is_grad_enabled()


def test_the_trace_holds_no_model_state():
    torch.manual_seed(0)
    model = Stateful().train()
    trace = tl.trace(model, torch.randn(8, 4))
    state = {t.untyped_storage().data_ptr() for t in (*model.parameters(), *model.buffers())}
    held = [op.out for op in trace.ops]
    held += [b.initial_value for b in trace.buffers.values()] + [b.final_value for b in trace.buffers.values()]
    held += [t for op in trace.ops if op._replay is not None for t in op._replay.args if isinstance(t, torch.Tensor)]
    assert all(t.untyped_storage().data_ptr() not in state for t in held)


class AutocastInside(nn.Module):
    """Turns autocast on for one op and off again (as rotary embeddings do inside an autocast
    region), and changes grad mode and the default dtype for others."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = self.lin(x)
        with torch.no_grad():
            g = h.float() * 2
        torch.set_default_dtype(torch.float64)
        try:
            z = torch.zeros(4) + g.double()
        finally:
            torch.set_default_dtype(torch.float32)
        return self.lin(x) + z.float()


def test_replay_runs_each_call_under_the_modes_it_ran_under():
    torch.manual_seed(0)
    trace = tl.trace(AutocastInside(), torch.randn(2, 4))
    assert trace["linear_1:1"].out.dtype == torch.bfloat16 and trace["linear_1:2"].out.dtype == torch.float32
    assert trace["zeros_1:1"].out.dtype == torch.float64
    report = trace.validate_forward_pass(strict=True)
    assert report.ok and not torch.is_autocast_enabled("cpu") and torch.get_default_dtype() == torch.float32
    edited = trace.do({"input_1": torch.ones(2, 4)})
    assert edited["linear_1:1"].out.dtype == torch.bfloat16 and edited["zeros_1:1"].out.dtype == torch.float64
    from torchlens.persistence import dumps, loads

    assert loads(dumps(trace)).validate_forward_pass(strict=True).ok


def replay_constants(trace) -> list[torch.Tensor]:
    """The tensors replay records keep that no op produced (the weights a call read)."""
    return [t for op in trace.ops if op._replay is not None for t in op._replay.args if isinstance(t, torch.Tensor)]


def test_writing_the_weights_behind_autograd_changes_nothing_saved():
    torch.manual_seed(0)
    model = Stateful().train()
    x = torch.randn(8, 4)
    trace = tl.trace(model, x)
    before = saved_tensors(trace)
    kept = [t.clone() for t in replay_constants(trace)]
    model.lin.weight.data.mul_(3.0)  # no version bump
    with torch.no_grad():
        model.lin.bias.copy_(torch.arange(4.0))
    model.load_state_dict({k: v + 1 for k, v in model.state_dict().items()})
    assert all(torch.equal(a, b) for a, b in zip(kept, replay_constants(trace)))
    assert_unchanged(trace, before)


@pytest.mark.skipif(not hasattr(torch, "_lazy_clone"), reason="this torch has no copy-on-write clone")
def test_the_copies_of_the_weights_share_memory_until_written():
    model = nn.Linear(4, 4)
    trace = tl.trace(model, torch.randn(2, 4))
    (copy,) = [t for t in replay_constants(trace) if t.shape == (4, 4)]
    assert torch._C._is_cow_tensor(copy) and torch._C._is_cow_tensor(model.weight)
    assert "copy-on-write copies of model tensors" in str(trace).splitlines()[1]
    value = model.weight.detach().clone()
    with torch.no_grad():
        model.weight.add_(1.0)
    assert torch.equal(copy, value) and torch.equal(model.weight, value + 1)


def test_weights_torch_cannot_clone_lazily_are_copied_at_once():
    torch.manual_seed(0)
    model = Mixed().share_memory()  # shared-memory storages: no copy-on-write clone
    trace = tl.trace(model, torch.randn(2, 4))
    with torch.no_grad():
        model.lin.weight.mul_(2.0)
    assert trace.validate_forward_pass(strict=True).ok


class PlainState(nn.Module):
    """Tensors in plain attributes (not registered): one, a list of them, and one the forward
    pass itself stores (a cache it writes in place on the next call)."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.full((3,), 2.0)
        self.table = [torch.ones(3), torch.zeros(3)]
        self.cache = None

    def forward(self, x):
        h = x * self.scale + self.table[0]
        if self.cache is None:
            self.cache = h
        else:
            self.cache.add_(h)
        return h


def test_tensors_in_plain_module_attributes_are_not_shared_with_the_trace():
    model = PlainState()
    trace = tl.trace(model, torch.ones(3))
    before = saved_tensors(trace)
    model.scale.mul_(10.0)
    model.table[0].add_(5.0)
    model(torch.ones(3))  # writes the cache the first pass stored, in place
    assert_unchanged(trace, before)


class StashBeforeInit(nn.Module):
    """A tensor attribute written before ``nn.Module.__init__`` (so its ``__dict__`` does not
    start with torch's bookkeeping) where the forward pass stores an output, written in place by
    the next pass."""

    def __init__(self) -> None:
        object.__setattr__(self, "stash", None)
        super().__init__()

    def forward(self, x):
        h = x * 2.0
        if self.stash is None:
            self.stash = h
        else:
            self.stash.add_(h)
        return h + 1.0


def test_an_output_stored_in_an_attribute_written_before_module_init_is_not_shared_with_the_trace():
    model = StashBeforeInit()
    assert next(iter(vars(model))) == "stash"
    trace = tl.trace(model, torch.ones(3))
    before = saved_tensors(trace)
    model(torch.ones(3))  # writes the stash the first pass stored, in place
    assert_unchanged(trace, before)


class StoresItsOutput(nn.Module):
    """Keeps an output of its forward pass in its own state, by one of several routes the end
    of the capture must see (:meth:`capture.walk.Walk.again`): an item of a list or dict it
    already held, an attribute written past ``nn.Module.__setattr__``, a list of a child's, or a
    parameter's storage swapped with ``.data``."""

    ROUTES = ("list", "dict", "object_setattr", "dict_write", "child_list", "param_data")

    def __init__(self, route: str) -> None:
        super().__init__()
        self.route = route
        self.cache: list = []
        self.store: dict = {}
        self.child = nn.Module()
        self.child.cache = []
        self.p = nn.Parameter(torch.ones(3), requires_grad=False)

    def forward(self, x):
        h = x * 2.0
        if self.route == "list":
            self.cache.append(h)
        elif self.route == "dict":
            self.store["h"] = h
        elif self.route == "object_setattr":
            object.__setattr__(self, "stash", h)
        elif self.route == "dict_write":
            vars(self)["stash"] = h
        elif self.route == "child_list":
            self.child.cache.append(h)
        else:
            self.p.data = h
        return h + 1.0

    def stored(self) -> torch.Tensor:
        return {"list": lambda: self.cache[0], "dict": lambda: self.store["h"], "child_list": lambda: self.child.cache[0],
                "param_data": lambda: self.p.data}.get(self.route, lambda: vars(self)["stash"])()


@pytest.mark.parametrize("route", StoresItsOutput.ROUTES)
def test_an_output_the_model_keeps_by_any_route_is_not_shared_with_the_trace(route: str) -> None:
    model = StoresItsOutput(route)
    trace = tl.trace(model, torch.ones(3))
    before = saved_tensors(trace)
    model.stored().add_(5.0)
    assert_unchanged(trace, before)


class ClaimsToBeATensor(nn.Module):
    """A module attribute whose ``__class__`` says Tensor (a mock made with ``spec``): it is not
    one, and reading its storage as a tensor's crashed the process."""

    def __init__(self) -> None:
        super().__init__()
        from unittest import mock

        self.lin = nn.Linear(2, 2)
        self.probe = mock.Mock(spec=torch.Tensor)
        self.probes = [mock.Mock(spec=torch.Tensor)]

    def forward(self, x):
        return self.lin(x)


def test_a_module_attribute_that_only_claims_to_be_a_tensor_is_not_read_as_one():
    model = ClaimsToBeATensor()
    assert isinstance(model.probe, torch.Tensor)
    trace = tl.trace(model, torch.ones(1, 2))
    assert [layer.func_name for layer in trace.layers] == ["input", "linear", "output"]


class LinearLoop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        for _ in range(3):
            x = torch.tanh(self.lin(x))
        return x


def test_calls_reading_the_same_parameters_share_their_settled_arguments():
    """Settling shares one owned argument tuple between calls that read the same objects: each
    call still replays from a snapshot of the weight, not from the live weight."""
    model = LinearLoop()
    trace = tl.trace(model, torch.randn(2, 4))
    calls = [op._replay for op in trace.ops if op.func_name == "linear"]
    assert len(calls) == 3 and len({id(call) for call in calls}) == 3
    assert len({id(call.args) for call in calls}) == 1
    weight = calls[0].args[1]
    assert weight is not model.lin.weight and torch.equal(weight, model.lin.weight)
    assert [call.sources for call in calls] == [[0, -1, -1], [2, -1, -1], [4, -1, -1]]
    with torch.no_grad():
        model.lin.weight.mul_(2.0)
    assert not torch.equal(weight, model.lin.weight)
    assert trace.validate_forward_pass(strict=True).ok


# A trace's records, replay calls included, are built when it is first read (``Trace.later``):
# these traces come from ``torchlens.api.trace``, which no test fixture reads at once.


def test_weights_written_before_the_first_read_do_not_reach_the_replay():
    model = LinearLoop()
    x = torch.randn(2, 4)
    weight, bias = model.lin.weight.detach().clone(), model.lin.bias.detach().clone()
    trace = unread_trace(model, x)
    with torch.no_grad():
        model.lin.weight.mul_(2.0)
    model.lin.bias.data.add_(1.0)  # behind autograd: no version bump
    calls = [op._replay for op in trace.ops if op.func_name == "linear"]
    assert all(torch.equal(call.args[1], weight) and torch.equal(call.args[2], bias) for call in calls)
    assert trace.validate_forward_pass(strict=True).ok


class Lerps(nn.Module):
    """Each step passes a float made for that step only: freed after the call, were it not held."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(3))

    def forward(self, x):
        for i in range(20):
            x = torch.lerp(x, self.w, 0.05 * (i + 1))
        return x


def test_calls_built_after_the_capture_keep_their_own_arguments():
    """No id of an argument a call read is taken for another's, however late the calls are built."""
    trace = unread_trace(Lerps(), torch.randn(3))
    gc.collect()
    calls = [op._replay for op in trace.ops if op.func_name == "lerp"]
    assert [call.args[2] for call in calls] == [0.05 * (i + 1) for i in range(20)]
    assert trace.validate_forward_pass(strict=True).ok


class ReshapedInPlace(nn.Module):
    def forward(self, x):
        y = torch.tanh(x)
        y.unsqueeze_(0)
        return y * 2


def test_an_output_reshaped_in_place_later_keeps_its_shape():
    trace = unread_trace(ReshapedInPlace(), torch.randn(3))
    assert [(op.func_name, op.shape) for op in trace.ops if op.func_name != "input"] == [
        ("tanh", (3,)), ("unsqueeze_", (1, 3)), ("mul", (1, 3)), ("output", (1, 3))]
    assert trace["tanh_1:1"].out.shape == (3,)


def test_a_call_with_several_outputs_replays_from_the_weights_it_read():
    """An LSTM's call has several outputs (built as it is recorded, settled at the end)."""
    model = nn.LSTM(3, 4, batch_first=True)
    weights = [p.detach().clone() for p in model.parameters()]
    trace = unread_trace(model, torch.randn(2, 5, 3))
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(2.0)
    (call,) = {id(op._replay): op._replay for op in trace.ops if op.func_name == "lstm"}.values()
    read = [t for t in tensor_args(call.args, call.kwargs) if isinstance(t, torch.Tensor)]  # no op made them
    assert len(read) == len(weights) and all(torch.equal(a, b) for a, b in zip(read, weights))
    assert trace.validate_forward_pass(strict=True).ok


class ShiftsInPlace(nn.Module):
    """In-place bitwise operators torch hands the mode under their own names (``__ior__``...)."""

    def forward(self, x):
        bits = (x * 10).long() >> 1
        bits |= 1
        bits <<= 1
        bits ^= 2
        bits &= 7
        bits >>= 1
        return bits


def test_in_place_operator_dunders_leave_earlier_outputs_as_they_were():
    x = torch.rand(3, 4)
    trace = tl.trace(ShiftsInPlace(), x)
    first = (x * 10).long() >> 1
    saved = {layer.layer_label: layer.out for layer in trace.layers}
    assert torch.equal(saved["rshift_1"], first)
    assert torch.equal(saved["ior_1"], first | 1)
    assert torch.equal(saved["ilshift_1"], (first | 1) << 1)
    assert trace.validate_forward_pass().ok
