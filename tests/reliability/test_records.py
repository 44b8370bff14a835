"""Issue 15, points 6 and 7: read-only records, total ``in``, typed arguments, clear messages."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchlens as tl
from torchlens.errors import CaptureThreadError, TorchLensTypeError


@pytest.fixture(scope="module")
def trace():
    return tl.trace(nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)), torch.ones(3, 2))


@pytest.mark.parametrize("mapping", ["modules", "params", "buffers"])
def test_the_trace_mappings_are_read_only(trace, mapping):
    view = getattr(trace, mapping)
    some_key = next(iter(view))
    with pytest.raises(TypeError):
        view[some_key] = None
    with pytest.raises(TypeError):
        view["new"] = None
    assert some_key in getattr(trace, mapping)


@pytest.mark.parametrize("key", [[], {}, {1}, torch.ones(2), None, 3, "linear_1", "no such label"])
def test_in_is_total(trace, key):
    assert (key in trace) is (isinstance(key, str) and key == "linear_1")


@pytest.mark.parametrize("pred", [None, "a prediction", 3])
def test_check_prediction_takes_a_prediction_only(trace, pred):
    with pytest.raises(TorchLensTypeError, match=r"check_prediction\(pred\) must be a tl.predict"):
        trace.check_prediction(pred)


def test_boolean_options_are_booleans(trace):
    with pytest.raises(TorchLensTypeError, match="check_prediction"):
        tl.trace(nn.ReLU(), torch.ones(1), check_prediction="yes")
    with pytest.raises(TorchLensTypeError, match="strict"):
        trace.validate_forward_pass(strict="no")


def test_the_note_names_the_module_once():
    class Raises(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom") as info:
        tl.trace(Raises(), torch.ones(1))
    (note,) = info.value.__notes__
    assert note.startswith("torchlens: raised in module `self` at ") and note.count("module") == 1


def test_a_trace_inside_a_traced_forward_is_called_nested():
    class Nested(nn.Module):
        def forward(self, x):
            return tl.trace(nn.ReLU(), x).ops[-1].out

    with pytest.raises(CaptureThreadError, match="nested trace") as info:
        tl.trace(Nested(), torch.ones(1))
    assert "another thread" not in str(info.value)
