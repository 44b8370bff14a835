"""A trace ``tl.trace`` returns builds its records on first read: once, the same as its
constructor makes, whoever reads first, and holding no more than the built trace."""

from __future__ import annotations

import dataclasses
import pickle
import threading
import time

import torch
from torch import nn

import torchlens.api as api
from models import cases as C
from torchlens.persistence import dumps, loads
from torchlens.recording import record
from torchlens.trace import Trace


class Batch(nn.Module):
    """Buffers, several passes and module calls: every kind of record a trace builds."""

    def __init__(self) -> None:
        super().__init__()
        self.lin, self.bn = nn.Linear(4, 4), nn.BatchNorm1d(4)

    def forward(self, x):
        for _ in range(3):
            x = torch.relu(self.bn(self.lin(x)))
        return x


def unread(model: nn.Module, *inputs: torch.Tensor, **options) -> Trace:
    """``tl.trace`` without the test-wide check, which reads every record."""
    trace = api.trace(model, *inputs, **options)
    assert trace._later is not None
    return trace


def test_the_records_built_on_first_read_are_what_the_constructor_makes():
    trace = unread(Batch().train(), torch.randn(3, 4))
    layers = trace.layers  # builds them all
    assert trace._later is None and trace.layers is layers
    again = Trace(**{f.name: getattr(trace, f.name) for f in dataclasses.fields(Trace) if f.init})
    for f in dataclasses.fields(Trace):
        assert getattr(again, f.name) == getattr(trace, f.name), f.name
    assert again == trace and again._index == trace._index
    trace.check()


class Grows(nn.Module):
    """Swaps its parameter for a larger one during the forward pass."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(2, 3))

    def forward(self, x):
        self.w.data = torch.ones(4, 5)
        return x + 1


def test_parameter_shapes_are_read_as_the_pass_ends_and_kept_as_plain_tuples():
    model = Grows()
    trace = unread(model, torch.ones(2))
    model.w.data = torch.ones(6)  # after the capture, before the first read
    assert trace.params["w"].shape == (4, 5) and type(trace.params["w"].shape) is tuple
    assert trace.params["w"].dtype is torch.float32


def test_repr_pickling_and_saving_read_the_records_as_before():
    model, x = C.ResidualBlockList(), torch.randn(2, 4)
    read = unread(model, x)
    read.check()
    assert repr(unread(model, x)) == repr(read)
    assert pickle.loads(pickle.dumps(unread(model, x))) == read
    assert loads(dumps(unread(model, x))) == read
    assert unread(model, x) == read


def test_readers_on_several_threads_build_once_and_see_the_same_records(monkeypatch):
    builds = []
    group = api.group

    def slow_group(raw):
        builds.append(threading.get_ident())
        time.sleep(0.05)  # every other reader arrives while the first one builds
        return group(raw)

    monkeypatch.setattr(api, "group", slow_group)
    trace = unread(Batch().train(), torch.randn(3, 4))
    names = ["layers", "ops", "modules", "params", "buffers", "containers", "input_layers", "output_layers"] * 2
    start, seen = threading.Barrier(len(names)), {}

    def read(n: int) -> None:
        start.wait()
        seen[n] = getattr(trace, names[n])

    threads = [threading.Thread(target=read, args=(n,)) for n in range(len(names))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(builds) == 1
    assert all(seen[n] is getattr(trace, names[n]) for n in range(len(names)))


def test_a_missing_attribute_is_an_attribute_error_before_and_after_the_build():
    trace = unread(Batch(), torch.randn(3, 4))
    for _ in range(2):
        try:
            trace.no_such_field  # noqa: B018
        except AttributeError as error:
            assert "no_such_field" in str(error)
        else:
            raise AssertionError("no AttributeError")
        assert trace._later is not None
    len(trace)
    assert trace._later is None and not hasattr(trace, "no_such_field")


def test_a_trace_keeps_its_capture_without_a_copy_and_without_the_model_output(monkeypatch):
    """``tl.trace`` cooks the capture it made itself as it is (no copy: nothing else holds it),
    without the model's return value; a capture cooked again (a ``Recording``'s) is copied."""
    copies = []
    monkeypatch.setattr(api, "replace",
                        lambda *args, **changes: copies.append(changes) or dataclasses.replace(*args, **changes))
    trace = unread(Batch().eval(), torch.randn(3, 4))
    assert not copies
    assert trace.layers[-1].is_output and trace.ops[-1].out is not None
    recording = record(Batch().eval(), torch.randn(3, 4), predicate=lambda info: info.func_name == "relu")
    assert recording.to_trace().layers and copies == [{"output": None, "selected": []}]
