"""The fallback traversal of objects no container rule knows (``capture/opaque.py``)."""

from __future__ import annotations

import torch

from torchlens.capture import opaque


class Base:
    __slots__ = "first"


class Slotted(Base):
    __slots__ = ("second", "_hidden", "__dict__")


def test_public_attributes_slots_and_items_in_order() -> None:
    a, b, c, d, e = (torch.full((1,), float(k)) for k in range(5))
    value = Slotted()
    value.first, value.second, value._hidden = a, [b, {"k": c}], e
    value.plain = (d, torch.float32, torch.device("cpu"), "text", 3, None)
    found = opaque.tensors_inside(value)
    assert [path for path, _ in found] == [".plain[0]", ".second[0]", ".second[1]['k']", ".first"]
    assert [t is x for (_, t), x in zip(found, (d, b, c, a))] == [True] * 4


def test_the_walk_stops_at_its_depth_and_visits_each_object_once() -> None:
    t = torch.ones(1)
    nested: list = [t]
    for _ in range(opaque.MAX_DEPTH):
        nested = [nested]
    assert opaque.tensors_inside([nested, t]) == [("[1]", t)]
    shared = [t]
    assert [path for path, _ in opaque.tensors_inside([shared, shared])] == ["[0][0]"]
