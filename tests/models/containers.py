"""Fixture models for the containers spec (``spec/containers.txt``): models that take and
return structured values."""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from dataclasses import dataclass

import torch
from torch import nn

Pair = namedtuple("Pair", ["first", "second"])


@dataclass
class Result:
    """A dataclass return value with a tensor, a nested list and a constant."""

    hidden: torch.Tensor
    extras: list
    step: int = 0


class PairBox:
    """The spec's user container: two values, registered with ``tl.types.register_container``."""

    def __init__(self, left, right) -> None:
        self.left, self.right = left, right


class Unknown:
    """An unregistered class: torchlens records it as opaque."""

    def __init__(self, **members) -> None:
        self.__dict__.update(members)


class CacheLM(nn.Module):
    """The spec's example: a dict with ``logits`` and a legacy ``past_key_values`` tuple of
    ``(key, value)`` pairs per layer."""

    def __init__(self, layers: int = 2, width: int = 4, vocab: int = 3) -> None:
        super().__init__()
        self.keys = nn.ModuleList(nn.Linear(width, width) for _ in range(layers))
        self.values = nn.ModuleList(nn.Linear(width, width) for _ in range(layers))
        self.head = nn.Linear(width, vocab)

    def forward(self, x):
        cache = []
        for key, value in zip(self.keys, self.values):
            cache.append((key(x), value(x)))
            x = torch.tanh(x)
        return {"logits": self.head(x), "past_key_values": tuple(cache)}


class Returns(nn.Module):
    """Returns ``tanh(x)`` and ``sigmoid(x)`` packed by ``pack``."""

    def __init__(self, pack) -> None:
        super().__init__()
        self.pack = pack

    def forward(self, x):
        return self.pack(torch.tanh(x), torch.sigmoid(x))


class TakesBatch(nn.Module):
    """Takes a dict holding a tensor and a (tensor, tensor) pair, plus a keyword tensor."""

    def forward(self, batch, *, bias):
        first, second = batch["pair"]
        return batch["ids"] * first + second - bias


class Halves(nn.Module):
    """A submodule returning a tuple: a module-boundary container."""

    def forward(self, x):
        return x + 1, x * 2


class UsesHalves(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.halves = Halves()

    def forward(self, x):
        low, high = self.halves(x)
        return low - high


class VariableKeys(nn.Module):
    """Returns an extra key when ``extra`` is set: its output structure depends on the call."""

    def forward(self, x, extra: bool = False):
        out = {"y": torch.tanh(x)}
        if extra:
            out["z"] = torch.sigmoid(x)
        return out


PACKS = {
    "tuple": lambda a, b: (a, (b, None)),
    "list": lambda a, b: [a, [b, 3]],
    "dict": lambda a, b: {"a": a, "inner": {"b": b, "n": 3}},
    "ordered_dict": lambda a, b: OrderedDict(a=a, inner=OrderedDict(b=b)),
    "namedtuple": lambda a, b: Pair(a, Pair(b, "s")),
    "dataclass": lambda a, b: Result(a, [b], 7),
}
