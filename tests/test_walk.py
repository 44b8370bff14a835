"""The model walk's module records against torch's own listings (``named_modules`` and each
module's ``named_parameters``, ``named_children``, ``named_buffers`` without recursion), where
members are shared: tied weights, a parameter or buffer under two names, a module twice in a
container, a child that is the model itself, ``None`` entries; and the storages of the model's
state it reads (parameters, tensor attributes one level into containers) apart from the buffers'."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchlens.capture.buffers import storage_key
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
    assert found.param_names == {id(param): name for name, param in model.named_parameters()}
    assert [name for name, *_ in found.buffers] == [name for name, _ in model.named_buffers()]
    for record, (name, module) in zip(records, model.named_modules()):
        prefix = name + "." if name else ""
        assert record.params == tuple(prefix + n for n, _ in module.named_parameters(recurse=False))
        assert record.buffers == tuple(prefix + n for n, _ in module.named_buffers(recurse=False))
        assert record.children == tuple(prefix + n for n, _ in module.named_children())


class _Settings:
    """A config object holding a tensor: the walk does not look inside such objects."""

    def __init__(self) -> None:
        self.table = torch.ones(2)


class _EarlyAttribute(nn.Module):
    """An attribute written before ``nn.Module.__init__``: the module's ``__dict__`` does not start
    with torch's bookkeeping, so the walk finds the model's attributes by name instead."""

    def __init__(self) -> None:
        self.early = torch.ones(3)
        super().__init__()
        self.late = [torch.ones(1)]


def _state_model() -> tuple[nn.Module, list[torch.Tensor], list[torch.Tensor]]:
    """A model with tensors in every place the walk reads, and some where it does not; the
    tensors it must find as state, and the buffers."""
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2), _EarlyAttribute())
    plain, listed, keyed, paired = torch.ones(4), torch.ones(5), torch.ones(6), torch.ones(7)
    model.cache = plain
    model.history = [listed, 3, "text"]
    model.by_name = {"k": keyed, "n": None}
    model.pair = (paired, 1)
    model.kernel_size = (3, 3)
    model.names = {"a", "b"}
    model.settings = _Settings()  # one level in only: its tensor is not state
    model.nested = [[torch.ones(8)]]  # two levels in: not state either
    early = model[2]
    state = [*model.parameters(), plain, listed, keyed, paired, early.early, early.late[0]]
    return model, state, list(model.buffers())


def test_walk_finds_the_tensors_of_the_model_state_one_level_into_containers() -> None:
    model, state, buffers = _state_model()
    found = walk(model)
    assert found.readable == set(map(storage_key, state))
    assert found.buffer_storages == set(map(storage_key, buffers))
    assert [name for name, *_ in found.buffers] == [name for name, _ in model.named_buffers()]
