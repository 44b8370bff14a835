"""The model walk's module records against torch's own listings (``named_modules`` and each
module's ``named_parameters``, ``named_children``, ``named_buffers`` without recursion), where
members are shared: tied weights, a parameter or buffer under two names, a module twice in a
container, a child that is the model itself, ``None`` entries."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchlens.capture.walk import walk


def tied() -> nn.Module:
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    model[1].weight = model[0].weight
    return model


def twice_in_one_module() -> nn.Module:
    model = nn.Linear(2, 2)
    model.register_parameter("again", model.weight)
    model.register_buffer("table", torch.ones(2))
    model.register_buffer("table_again", model.table)
    return model


def module_twice_in_a_container() -> nn.Module:
    shared = nn.Linear(2, 2)
    return nn.Sequential(shared, nn.ReLU(), shared)


def none_entries() -> nn.Module:
    model = nn.Sequential(nn.Linear(2, 2))
    model.register_module("nothing", None)
    model[0].register_parameter("nothing", None)
    model[0].register_buffer("nothing_either", None)
    return model


def shared_buffers() -> nn.Module:
    model = nn.Sequential(nn.BatchNorm1d(2), nn.BatchNorm1d(2))
    model[1].running_mean = model[0].running_mean
    return model


def child_is_the_model() -> nn.Module:
    model = nn.Sequential(nn.Linear(2, 2))
    model[0].register_module("back", model)
    return model


def shared_at_two_depths() -> nn.Module:
    model = nn.Module()
    model.a = nn.Sequential(nn.Linear(2, 2))
    model.b = model.a[0]
    return model


@pytest.mark.parametrize("make", [tied, twice_in_one_module, module_twice_in_a_container, none_entries,
                                  shared_buffers, child_is_the_model, shared_at_two_depths])
def test_module_records_list_each_member_once_as_torch_does(make) -> None:
    model = make()
    records: list = []
    found = walk(model, records)
    assert [name for name, _ in found.modules] == [name for name, _ in model.named_modules()]
    assert [name for name, _ in found.params] == [name for name, _ in model.named_parameters()]
    assert [name for name, *_ in found.buffers] == [name for name, _ in model.named_buffers()]
    for record, (name, module) in zip(records, model.named_modules()):
        prefix = name + "." if name else ""
        assert record.params == tuple(prefix + n for n, _ in module.named_parameters(recurse=False))
        assert record.buffers == tuple(prefix + n for n, _ in module.named_buffers(recurse=False))
        assert record.children == tuple(prefix + n for n, _ in module.named_children())
