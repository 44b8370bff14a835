"""Records the capture and the prediction build through ``analysis.builder.builder`` are the frozen records themselves."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import torchlens as tl
from models import cases as C
from torchlens.analysis.builder import builder
from torchlens.analysis.prediction import PredictedLayer
from torchlens.capture.replay import RecordedCall
from torchlens.records import ModuleCall, Op, OpGraph


@dataclasses.dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int = 0
    tags: tuple = dataclasses.field(default_factory=tuple)


def test_a_built_record_is_the_record_frozen_with_its_defaults():
    point = builder(Point)(1, tags=("a",))
    assert type(point) is Point and point == Point(1, 0, ("a",)) and hash(point) == hash(Point(1, 0, ("a",)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        builder(Point)()  # a field without a default is still required


@dataclasses.dataclass(frozen=True, slots=True)
class Bag:
    items: list = dataclasses.field(default_factory=list)


def test_a_default_factory_makes_a_value_per_built_record():
    first, second = builder(Bag)(), builder(Bag)()
    assert first == Bag() and first.items is not second.items and type(first) is Bag


@dataclasses.dataclass(frozen=True, slots=True)
class Checked:
    x: int

    def __post_init__(self) -> None:
        if self.x < 0:
            raise ValueError("negative")


@dataclasses.dataclass(frozen=True, slots=True)
class Derived:
    x: int
    double: int = dataclasses.field(init=False, default=0)


@pytest.mark.parametrize("record", [Checked, Derived])
def test_a_record_whose_constructor_does_more_than_set_fields_is_refused(record):
    with pytest.raises(TypeError, match="its own constructor"):
        builder(record)


def _same_as_constructed(record: object) -> bool:
    kind = type(record)
    again = kind(**{f.name: getattr(record, f.name) for f in dataclasses.fields(kind)})  # type: ignore[call-overload]
    return all(getattr(again, f.name) is getattr(record, f.name) for f in dataclasses.fields(kind))  # type: ignore[arg-type]


def test_every_record_a_trace_builds_is_frozen_and_what_its_constructor_makes():
    trace = tl.trace(C.ResidualBlockList(), torch.randn(2, 4))
    calls = [op._replay for op in trace.ops if op._replay is not None]
    module_calls = [call for module in trace.modules.values() for call in module.calls]
    built = [*trace.ops, *(op.graph for op in trace.ops), *calls, *module_calls]
    assert {type(r) for r in built} == {Op, OpGraph, RecordedCall, ModuleCall}
    for record in built:
        assert _same_as_constructed(record)
        field = dataclasses.fields(record)[0].name  # type: ignore[arg-type]
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, field, None)


def test_every_layer_a_prediction_builds_is_frozen_and_what_its_constructor_makes():
    pred = tl.predict(C.ResidualBlockList(), torch.randn(2, 4))
    assert pred.layers and {type(layer) for layer in pred.layers} == {PredictedLayer}
    for layer in pred.layers:
        assert _same_as_constructed(layer)
        with pytest.raises(dataclasses.FrozenInstanceError):
            layer.slot = 1  # type: ignore[misc]
