"""Models written to trip the static prediction (issue 12): each uses a construct the
prediction cannot follow exactly, or could once get silently wrong. The test over them
(``tests/test_predict_hostile.py``) asserts that a prediction with no gap and no note is right.
"""

from __future__ import annotations

import collections
import collections.abc
import contextlib
import copy
import dataclasses
import enum
import functools
import heapq
import importlib.util
import itertools
import logging
import math
import operator
import sys
import typing
from typing import Any

import numpy as np
import torch
import torch.utils.checkpoint
from packaging import version
from torch import nn


class EvalString(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return eval("self.lin(x).relu()")


class ExecString(nn.Module):
    def forward(self, x):
        ns = {"x": x, "torch": torch}
        exec("y = torch.tanh(x)", ns)
        return ns["y"]


class GeneratorForward(nn.Module):
    def gen(self, x):
        for k in range(3):
            yield x * k

    def forward(self, x):
        out = x
        for y in self.gen(x):
            out = out + y
        return out


class Scaled:
    """A context manager whose ``__enter__`` and ``__exit__`` run ops."""

    def __init__(self, x) -> None:
        self.x = x

    def __enter__(self):
        return torch.tanh(self.x)

    def __exit__(self, *exc) -> bool:
        torch.relu(self.x)
        return False


class ContextManagers(nn.Module):
    """``__exit__`` on every way out of the body: normally, by ``continue`` and by ``break``."""

    def forward(self, x):
        for k in range(4):
            with Scaled(x) as y:
                x = x + y
                if k == 1:
                    continue
                if k == 2:
                    break
                x = x * 2
        return x


class GeneratorsEverywhere(nn.Module):
    """``yield from``, a generator consumed by ``sum`` and by ``list``."""

    def inner(self, x):
        yield torch.sin(x)
        yield torch.cos(x)

    def outer(self, x):
        yield from self.inner(x)
        yield x.exp()

    def forward(self, x):
        total = sum(self.outer(x))
        return torch.stack(list(self.inner(total)))


class Match(nn.Module):
    def forward(self, x, mode="b"):
        match mode:
            case "a":
                return torch.tanh(x)
            case "b" | "c" if x is not None:
                return torch.sigmoid(x)
            case _:
                return torch.relu(x)


class MatchOnTensor(nn.Module):
    def forward(self, x):
        match x.sum() > 0:
            case True:
                return torch.tanh(x)
            case _:
                return torch.relu(x)


class TryExcept(nn.Module):
    def forward(self, x):
        try:
            y = x.view(-1, 7)
        except RuntimeError:
            y = torch.relu(x)
        return y


class BigWhile(nn.Module):
    def forward(self, x):
        i = 0
        while i < 10_050:
            i += 1
        return torch.tanh(x) * i


class Recurse(nn.Module):
    def step(self, x, n):
        if n == 0:
            return x
        return self.step(torch.tanh(x), n - 1)

    def forward(self, x):
        return self.step(x, 30)


class Checkpoint(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.utils.checkpoint.checkpoint(self.lin, x, use_reentrant=False)


class SortedItems(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scales = {"b": 2.0, "a": 1.0}

    def forward(self, x):
        for _, scale in sorted(self.scales.items()):
            x = x * scale
        return x


class CallOverride(nn.Module):
    def __call__(self, x):
        return torch.relu(super().__call__(x))

    def forward(self, x):
        return torch.tanh(x)


class CallOverrideParent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.child = CallOverride()

    def forward(self, x):
        return self.child(x) + 1


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


class CustomFunction(nn.Module):
    def forward(self, x):
        return Square.apply(x) + 1


class Cond(nn.Module):
    """Higher-order ops: one op each (nothing inside recorded), with as many outputs as the
    branch returns or the loop carries."""

    def forward(self, x):
        y = torch.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (x,))
        a, b = torch.cond(x.sum() > 0, lambda t: (t.sin(), t + 1), lambda t: (t.cos(), t - 1), (y,))
        i, t = torch.while_loop(lambda i, t: i < 3, lambda i, t: (i + 1, t * 2), (torch.tensor(0), a))
        return t + b * i


class Callbacks(nn.Module):
    """Builtins that call back, over the rows of a tensor (iterated at the builtin's call)."""

    def forward(self, x):
        total = functools.reduce(torch.add, x)
        scaled = functools.reduce(lambda a, b: a * b + 1, x, torch.ones(4))
        rows = list(map(torch.tanh, x)) + list(map(lambda r, s: r.relu() * s, x, [1.0, 2.0, 3.0]))
        kept = sum(filter(lambda r: r.sum() > 0, x), torch.zeros(4))  # kept rows: data decides
        ordered = sorted([x[0], x[1] * 2], key=lambda r: r.sum().item())
        best = max([x * 2, x + 1], key=lambda p: p.sum())
        return total + scaled + kept, torch.stack(rows + ordered), best


class Comprehensions(nn.Module):
    """Tensors iterated by comprehensions (the first ``for``'s ``iter`` runs in the enclosing
    code, the others in the comprehension's), and a filter the data decides."""

    def forward(self, x):
        flat = [c * 2 for r in x.unsqueeze(1) for c in r]
        total = sum(r.tanh() for r in x)
        positive = [r for r in x if r.sum() > 0]
        return torch.stack(flat), functools.reduce(lambda a, b: a + b, positive, total)


class WhileTrue(nn.Module):
    def forward(self, x):
        while True:
            x = x * 2
            if x.abs().max() > 100:
                break
        return x


class Lost(nn.Module):
    """A value the prediction cannot know (a C extension's result) used as a tensor."""

    def forward(self, x):
        y = _opaque(x)
        return y.relu() + y * 2


#: A callable object whose ``__call__`` is C code: no source to read.
_opaque = type("Opaque", (), {"__call__": staticmethod(torch.Tensor.clone)})()


class RaisesWithoutInputs(nn.Module):
    """``forward(input_ids=None)`` as Hugging Face models have it: the defaults lead to a raise."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    def forward(self, input_ids=None, inputs_embeds=None):
        if (input_ids is None) ^ (inputs_embeds is not None):
            raise ValueError("You must specify exactly one of input_ids or inputs_embeds")
        if inputs_embeds is None:
            inputs_embeds = self.emb(input_ids)
        return torch.tanh(inputs_embeds)


#: Every hostile model with the example inputs it runs on.
@dataclasses.dataclass
class Output(collections.OrderedDict):
    """Like Hugging Face's ``ModelOutput``: a dataclass that is a dict (custom ``__new__``),
    filled by ``__post_init__``, read by attribute, key or index."""

    hidden: Any = None
    extra: Any = None

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if getattr(self, f.name) is not None:
                self[f.name] = getattr(self, f.name)

    def to_tuple(self) -> tuple:
        return tuple(self[k] for k in self.keys())


class ModelOutputStyle(nn.Module):
    def forward(self, x):
        out = Output(hidden=x.tanh())
        return out.hidden + 1, out.to_tuple()[0] * 2, out["hidden"].relu()


class Layers(collections.abc.Sequence):
    """A sequence class the code builds: iterated through ``__len__`` and ``__getitem__``."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k: int) -> int:
        if k >= self.n:
            raise IndexError(k)
        return k + 1


class SequenceInstance(nn.Module):
    def forward(self, x):
        for k in Layers(3):
            x = x * k
        return x, len(Layers(2))


class ListUnderBranch(nn.Module):
    """A list appended to under a branch on data: its length is unknown, so is the loop's."""

    def forward(self, x):
        parts = []
        if x.sum() > 100:
            parts.append(x)
        parts.append(x * 2)
        for p in parts:
            x = x + p
        return x


def _zeros() -> torch.Tensor:
    return torch.zeros(4)


@dataclasses.dataclass
class Scores:
    """A dataclass: ``__init__`` generated (no source), a default factory that runs an op, an
    ``InitVar`` and a ``__post_init__`` that runs ops."""

    hidden: torch.Tensor
    scale: dataclasses.InitVar[float] = 2.0
    bias: torch.Tensor = dataclasses.field(default_factory=_zeros)

    def __post_init__(self, scale: float) -> None:
        self.scaled = self.hidden * scale + self.bias


@dataclasses.dataclass(frozen=True)
class Pair:
    first: torch.Tensor
    second: torch.Tensor


class Point(typing.NamedTuple):
    x: torch.Tensor
    y: torch.Tensor
    w: float = 1.0


Span = collections.namedtuple("Span", ["start", "end"])


class Records(nn.Module):
    """Records whose constructors Python generates: dataclasses (plain, frozen and replaced),
    ``typing.NamedTuple`` and ``collections.namedtuple``."""

    def forward(self, x):
        scores = Scores(x.tanh(), 3.0)
        pair = dataclasses.replace(Pair(x.relu(), x.sin()), second=x.cos())
        point = Point(x * 2, y=x + 1)
        start, end = Span(x.exp(), x.abs())
        return scores.scaled + pair.second + point.x * point.w + point.y + start - end


class ModuleInForward(nn.Module):
    """Modules made while the model runs, outside its named modules: the capture numbers them
    after those by first call (``<Linear#2>``); building a ``Linear`` runs its initialisers
    (``empty``, ``kaiming_uniform_``), an ``nn.init`` call in forward runs one op."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(4)

    def forward(self, x):
        self.helper = nn.ReLU()
        y = nn.Linear(4, 4)(x)
        for _ in range(2):
            y = nn.Tanh()(y)
        w = torch.empty(4, 4)
        nn.init.xavier_uniform_(w)
        torch._assert(w.dim() == 2, "a matrix")  # dispatched like nn.init, but returns no tensor: no op
        return nn.Softmax(-1)(self.helper(self.norm(y @ w))).relu()


class ModuleInBranch(nn.Module):
    """A module built and first called under a branch the data decides: the capture's numbers
    of it and of the modules first called after it depend on whether it ran."""

    def forward(self, x):
        if x.sum() > 0:
            x = nn.Tanh()(x)
        return nn.ReLU()(x)


_namespace: dict = {"torch": torch}
exec("def scaled_tanh(x, scale=2.0):\n    y = torch.tanh(x)\n    y += x.sum(dim=0)[1]\n"
     "    return torch.stack((y * scale, x.relu()), dim=0), x.shape[0] < 3\n", _namespace)
exec("def branchy(x):\n    if x.sum() > 0:\n        return x.tanh()\n    return x\n", _namespace)


class ExecFunction(nn.Module):
    """A function built by ``exec`` of a string: its bytecode is there, its source is not."""

    def forward(self, x):
        return _namespace["scaled_tanh"](x)[0] + 1


class ExecBranch(nn.Module):
    """The same with a branch: only straight-line bytecode is read."""

    def forward(self, x):
        return _namespace["branchy"](x) + 1


class Packed(nn.Module):
    """RNNs over packed sequences (``pack_padded_sequence``, ``pack_sequence``,
    ``pad_packed_sequence``): ``PackedSequence`` is a named tuple with its own ``__new__``."""

    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(4, 5, batch_first=True)
        self.lstm = nn.LSTM(4, 5, batch_first=True, num_layers=2)

    def forward(self, x):
        packed = nn.utils.rnn.pack_padded_sequence(x, torch.tensor([3, 2, 1]), batch_first=True)
        out, h = self.gru(packed)
        padded, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        out2, (h2, c2) = self.lstm(nn.utils.rnn.pack_padded_sequence(x, torch.tensor([3, 3, 1]), batch_first=True))
        padded2, _ = nn.utils.rnn.pad_packed_sequence(out2, batch_first=True, total_length=3)
        rows, _ = self.gru(nn.utils.rnn.pack_sequence([x[0], x[1, :2]]))
        return padded.sum() + h.sum(), padded2.relu(), h2 + c2, rows.data.tanh()


class Scaled2:
    """A descriptor whose ``__get__`` runs an op."""

    def __get__(self, obj, owner):
        return torch.tanh(obj.w)


class MoreCallbacks(nn.Module):
    """``operator`` functions on tensors, ``list.sort`` with a key, ``itertools``, ``dict`` of
    a zip with a ``map``, a descriptor's ``__get__``."""

    scale = Scaled2()

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(4))
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 3)})

    def forward(self, x):
        total = functools.reduce(operator.add, x) + operator.mul(x, 2)
        parts = [x * 2, x]
        parts.sort(key=lambda p: p.sum().item())
        running = list(itertools.accumulate(x, torch.mul)) + list(itertools.starmap(torch.add, zip(x, x)))
        chained = [r.relu() for r in itertools.chain(x, x[:1])]
        heads = dict(zip(self.heads.keys(), map(lambda h: h(x), self.heads.values())))
        return total, parts[0] + 1, torch.stack(running + chained), heads, x * self.scale


class Nexts(nn.Module):
    """``next`` of a generator expression and of ``iter`` over a tensor's rows; ``send``."""

    def echo(self, x):
        y = yield x.tanh()
        yield y * 2

    def forward(self, x):
        gen = self.echo(x)
        sent = gen.send(next(gen) + 1)
        first = next(r.tanh() for r in x)
        rows = iter(x)
        a, b = next(rows), next(rows)
        rest = [r.relu() for r in rows]  # the iterator goes on from where next stopped
        return first + a * b, torch.stack(rest), next(iter([]), x).sin(), sent


def _forwarding(fn):
    """A decorator whose wrapper is a plain function returning what ``fn`` returns (as
    ``typing_extensions.deprecated`` wraps torch's ``sdp_kernel``)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


@contextlib.contextmanager
def _scaled_inside(x):
    yield x * 3


@contextlib.contextmanager
@_forwarding
def _outer_scaled(x):
    """A context manager from a forwarded generator whose ``yield`` sits in a ``with`` of its
    own (the shape of torch's deprecated ``sdp_kernel``)."""
    with _scaled_inside(x) as y:
        try:
            yield y
        finally:
            pass


class GeneratorProtocol(nn.Module):
    """``close`` of generators (left at a plain ``yield``, and never started), ``next`` of an
    exhausted iterator caught by its ``except StopIteration``, and a context manager whose
    generator is made by a forwarding wrapper and yields inside a ``with``."""

    def steps(self, x):
        yield x.sin()
        yield x.cos()

    def forward(self, x):
        with _outer_scaled(x) as y:
            x = x + y
        gen = self.steps(x)
        first = next(gen)
        gen.close()  # left at its first yield: cos never runs
        unstarted = self.steps(x)
        unstarted.close()
        rows = iter(x[:1])
        head = next(rows)
        try:
            tail = next(rows)
        except StopIteration:
            tail = head.tanh()
        return first + next(gen, x).exp() + next(unstarted, x).relu() + tail


class Cached(nn.Module):
    """A method under ``functools.lru_cache``: whether it runs depends on its cache (a miss, then
    a hit; another key, then a miss again past ``maxsize``)."""

    @functools.lru_cache(maxsize=None)
    def mask(self, n):
        return torch.tril(torch.ones(n, n))

    @staticmethod
    @functools.lru_cache(maxsize=1)
    def scale(n):
        return torch.full((n,), 2.0)

    def forward(self, x):
        y = x @ self.mask(4) + self.mask(4).sum()
        return y * self.scale(4) + self.scale(1) * self.scale(4)


@dataclasses.dataclass(frozen=True)
class _Recipe:
    heads: int


@functools.lru_cache(maxsize=None)
def _recipe(heads):
    return _Recipe(heads)


@functools.lru_cache(maxsize=None)
def _cooked(recipe, width):
    return (recipe.heads, width // recipe.heads)


class CachedRecipes(nn.Module):
    """einops' shape: a cached function given a record another cached function built (from empty
    caches: a miss, whatever the record equals; then the same record again: a hit), and a try
    whose body only reads a dict the code built (it cannot raise: the except arm does not run)."""

    def forward(self, x):
        table = {"heads": 2, "input": x}
        try:
            heads = table["heads"]
        except KeyError:
            x = x.sin()
        first = x.view(x.shape[0], *_cooked(_recipe(heads), x.shape[-1]))
        return first.relu() + x.view(x.shape[0], *_cooked(_recipe(heads), x.shape[-1]))


class _Plan:
    """einops' ``TransformRecipe``: a plain class, equal to itself alone."""

    def __init__(self, heads: int) -> None:
        self.heads = heads


@functools.lru_cache(maxsize=None)
def _plan(heads):
    return _Plan(heads)


@functools.lru_cache(maxsize=None)
def _planned(plan, width):
    return (plan.heads, width // plan.heads)


class CachedPlans(nn.Module):
    """Two records compared by identity, built by one cached function for two patterns and
    each given to another cached function (einops' ``rearrange`` then ``reduce`` in one
    forward): from empty caches the second is a miss for sure, whatever the first one's entry."""

    def forward(self, x):
        first = x.view(x.shape[0], *_planned(_plan(2), x.shape[-1]))
        return first.sum() + x.view(x.shape[0], *_planned(_plan(4), x.shape[-1])).sum()


class _Axes:
    """einops' parsed pattern: the names it holds, a set filled by ``add``."""

    def __init__(self, text: str) -> None:
        self.identifiers = set()
        for name in text.split():
            self.identifiers.add(name)


class SetMutations(nn.Module):
    """Sets the code builds and changes by their methods and operators (einops' ellipsis: the
    pattern's names widened by ``update``, ``...`` removed), iterated in Python's order after
    the changes (strings hash differently in each process), popped, and compared."""

    def forward(self, x):
        axes = _Axes("b ... d")
        axes.identifiers.update([f"...{i}" for i in range(x.dim())])
        axes.identifiers.remove("...")
        axes.identifiers.discard("missing")
        axes.identifiers -= {"b"}
        set.difference_update(axes.identifiers, {"d"})
        for name in axes.identifiers:
            x = x.sin() if name.endswith("0") else x.cos()
        kept = {"p", "q", "r"}
        kept.intersection_update({"q", "r", "s"})
        kept.symmetric_difference_update({"r", "t"})
        popped = kept.pop()
        both = set.symmetric_difference(kept, {"u"}) | {"v"}
        return x * len(both) + (x.relu() if popped == "q" else x.tanh())


class SetOrder(nn.Module):
    """Where a set of small integers iterates from: a copy (``set(s)``, ``s.copy()``, ``s | t``,
    ``{*s}``) is sized afresh, so it can start elsewhere than ``s`` (16 first, not 1); an add
    after a removal may take the freed slot."""

    def forward(self, x):
        s = set()
        for k in (1, 2, 3, 4, 16):
            s.add(k)
        for group in (s, set(s), {*s}, s.copy(), s | set(), {0, *s}):
            x = x.sin() if next(iter(group)) == 1 else x.cos()
        s.remove(1)
        s.add(33)
        return x.relu() if next(iter(s)) == 33 else x.tanh()


class _Settings:
    def __init__(self) -> None:
        self.names = ["a"]
        self.kinds = {"x", "y"}


class DeepCopiedRecord(nn.Module):
    """``copy.deepcopy`` of a record holding a list and a set: the copy's are its own, so
    changing them leaves the original's as they were."""

    def forward(self, x):
        settings = _Settings()
        other = copy.deepcopy(settings)
        other.names.append("b")
        other.kinds.discard("x")
        x = x.relu() if len(settings.names) == 1 else x.sin()
        return x.cos() if len(settings.kinds) == 2 else x.tanh()


_Pair = collections.namedtuple("_Pair", "scale shift")


class ReorderedRecords(nn.Module):
    """Dicts reordered by their methods (an ``OrderedDict``'s ``move_to_end`` to either end and
    ``popitem`` from either end, a dict's ``popitem``) and a named tuple's ``_replace`` and
    ``_asdict``: which ops run hangs on the order and the fields."""

    def forward(self, x):
        steps = collections.OrderedDict(relu=1, sin=2, cos=3)
        steps.move_to_end("relu")
        steps.move_to_end("cos", last=False)
        name, _ = steps.popitem(last=False)
        last, _ = {"a": 1, "tanh": 2}.popitem()
        for step in [*steps, name, last]:
            x = getattr(x, step)()
        pair = _Pair(1, 2)._replace(shift=3)
        return x * pair.scale + pair._asdict()["shift"]


class _Stop(Exception):
    pass


class RaiseInDataLoop(nn.Module):
    """A loop whose test the prediction cannot decide and whose body can only raise (taken as
    not run), inside a try whose body then raises for sure: the ops in between run only if
    the loop did not (the fuzzer's shrunk case)."""

    def forward(self, x, y):
        try:
            c0 = torch.zeros(())
            while c0.sum() < 1:
                raise _Stop()
                c0 = c0 + 1.0
            x = 2.0 * y
            raise _Stop()
        except _Stop:
            pass
        return x


class SortedTensors(nn.Module):
    """``sorted`` comparing two tensors (one ``lt`` from C, the order the data decides), by a key
    and reversed; three tensors take a number of comparisons their values decide."""

    def forward(self, x):
        low, high = sorted([x[0].sum(), x[1].sum()])
        first, _ = sorted([x[0], x[1]], key=lambda r: r.mean(), reverse=True)
        return torch.stack([low, high]), first


class SortedThree(nn.Module):
    def forward(self, x):
        return torch.stack(sorted([x[0].sum(), x[1].sum(), x[2].sum()]))


class BiasTable(nn.Module):
    """A cache keyed by device in a dict attribute, filled in forward (timm's attention biases),
    and a class-level table shared by every instance."""

    table: dict = {}

    def __init__(self) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.randn(4))
        self.cache: dict = {}

    def biases(self, device):
        key = str(device)
        if key not in self.cache:
            self.cache[key] = self.bias * 2
        return self.cache[key]

    def shared(self, x):
        if len(x) not in BiasTable.table:
            BiasTable.table[len(x)] = torch.ones(len(x), 1)
        return BiasTable.table[len(x)]

    def forward(self, x):
        return x + self.biases(x.device) + self.biases(x.device) * self.shared(x)


class LiveCaches(nn.Module):
    """Two instances of one class share its class-level table: the first fills it, the second
    reads it; a live list is appended to, popped and read back; a dict's setdefault."""

    def __init__(self) -> None:
        super().__init__()
        self.first, self.second = BiasTable(), BiasTable()
        self.seen: list = []
        self.named: dict = {}

    def forward(self, x):
        y = self.second(self.first(x))
        self.seen.append(y.tanh())
        last = self.seen.pop()
        self.named["scratch"] = y
        del self.named["scratch"]
        out = self.named.setdefault("y", last * 3) + len(self.seen)
        return out.relu() if "scratch" in self.named else out


class CacheUnderBranch(nn.Module):
    """A write into a live dict that the data decides: what reads it later is not known."""

    def __init__(self) -> None:
        super().__init__()
        self.cache: dict = {}

    def forward(self, x):
        if x.sum() > 0:
            self.cache["k"] = x.tanh()
        return self.cache["k"] * 2 if "k" in self.cache else x.relu()


class _Missing:
    """A stand-in for a backend the build lacks (torch's ``_dummy_type``): building one raises."""

    def __new__(cls):
        raise RuntimeError("not built")


def _capturing():
    try:
        return _Missing()
    except Exception:
        return False


class FlagsAndShapes(nn.Module):
    """transformers' ``is_tracing`` (an ``or`` of flags, one from a ``try`` the prediction cannot
    decide, then ``|=``) and GPT-2's output shape, a tuple built with ``+`` around a shape."""

    def forward(self, x):
        tracing = _capturing() or _capturing()
        tracing |= x.dim() > 5
        shape = (-1,) + x.shape[1:] + (x.size(-1),)
        return x.unsqueeze(-1).expand(*x.shape, x.size(-1)).reshape(shape), tracing


class LostFlag(nn.Module):
    """An ``or`` with a value the prediction lost track of (it may be a tensor)."""

    def forward(self, x):
        flag = _opaque(x > 0) | (x.dim() > 5)
        return x.relu(), flag


class Boxed:
    """A tensor wrapper whose operators are Python code that runs ops."""

    def __init__(self, t):
        self.t = t

    def __add__(self, other):
        if not isinstance(other, Boxed):
            return NotImplemented  # a number: Python tries other.__radd__, then Boxed's own below
        return Boxed(self.t + other.t)

    def __radd__(self, other):
        return Boxed(self.t + other)

    def __lt__(self, other):
        return bool(self.t.sum() < other.t.sum())

    def __eq__(self, other):
        return isinstance(other, Boxed) and bool((self.t == other.t).all())

    __hash__ = None  # type: ignore[assignment]


class Doubled(Boxed):
    """A subclass overriding the reflected operator: Python calls it first."""

    def __radd__(self, other):
        return Doubled(self.t * 2 + other.t)


class Operators(nn.Module):
    """Operators defined in Python on the program's objects run their ops: ``+`` (reflected when
    the left one gives NotImplemented, the subclass's reflected first), ``<`` and ``in`` (its
    ``==`` on each item until one is equal)."""

    def forward(self, x):
        total = Boxed(x.sin()) + Boxed(x.cos())
        shifted = 1.0 + Boxed(x)
        doubled = Boxed(x) + Doubled(x.exp())
        if Boxed(x) < Boxed(x * 2):  # undecided: a tensor's sum decides
            x = x.tanh()
        seen = [Boxed(x.abs()), Boxed(x)]
        found = Boxed(x) in seen  # compares the first (abs differs), then the second
        return total.t, shifted.t, doubled.t, found


class OperatorFunctions(nn.Module):
    """``operator``'s functions and builtins given tensors run the tensor's operators from C at
    their call: unary, item and in-place forms, shifts, ``pow`` (with ``None`` as modulus),
    ``reversed`` (the tensor's ``__reversed__``), ``math.fsum`` (iterates it), ``map`` of an
    operator, ``itemgetter``/``attrgetter``/``methodcaller`` objects, and ``operator.call``."""

    def forward(self, x):
        y = operator.neg(x) + operator.pos(x) + operator.abs(x)
        flags = operator.inv(x > 0).float()
        row = operator.getitem(y, 0)
        operator.setitem(y, 1, row)
        y = operator.iadd(y, 1.0)
        y = operator.imatmul(y, x.t() @ x)
        bits = operator.rshift(operator.lshift(x.long(), 2), 1)
        bits = operator.ilshift(bits, 1)
        z = pow(y, 2) + pow(y, 3, None) + pow(2.0, flags.sum())
        flipped = torch.stack(list(reversed(z)))
        total = math.fsum(z[0])
        negs = torch.stack(list(map(operator.neg, [x, flipped])))
        first = operator.itemgetter(0, 1)(negs)[1]
        picked = operator.attrgetter("T.T")(first) + operator.methodcaller("sum", dim=0)(negs)
        called = operator.call(torch.relu, picked) if hasattr(operator, "call") else torch.relu(picked)
        return called * total, bits


class ReflectedOperators(nn.Module):
    """Operators torch wraps in its ``TypeError`` -> ``NotImplemented`` guard (``1 - x``,
    ``x ** 2``...): exact where the op is computed; a ``try`` of the model's own still says so."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = 2.0

    def forward(self, x):
        y = (1 - x) + 2 / (x + 1) + x ** 2 + 2 ** x + x // 0.5 + 3 % (x + 1)
        try:
            y = y * self.scale
        except TypeError:
            y = y.relu()
        return y


def _rows_over(x, limit):
    for t in x:
        if t.sum() > limit:  # the data decides: the yield, and what follows it, run 0..1 times
            yield t * 2
            t.cos()


class ShortCircuits(nn.Module):
    """Consumers that stop at the first item deciding them (``any``, ``all``, ``next`` of a
    filter) over iterators that yield under a data-dependent condition: the items after an
    undecided one run 0..1 times; a ``for`` over such a generator function runs its body 0..1
    times per item; ``torch.where(cond)`` gives one index tensor per dimension; conversions
    (``.float()``) of a tensor whose shape the data decides are tensors."""

    def forward(self, x):
        a = x * 2 if any(t.sum() > 0 for t in x) else x
        b = x * 3 if all(t.sum() < 0 for t in x) else x
        c = next((t for t in x if t.sum() > 2), x[0]) * 2
        d = next(filter(lambda t: t.sum() > 1.5, x), x[1]) * 2
        e = next(_rows_over(x, 1.5), x[2])
        y = x[0]
        for r in _rows_over(x, 1.0):
            y = y + r.sin()
        rows, cols = torch.where(x > 0.5)
        picked = torch.stack(torch.where(x[None] > 0.5)).float().sum()
        flags = (x > 0.5).nonzero().int().sum() + sum(i.sum() for i in (x > 0.5).nonzero(as_tuple=True))
        return a, b, c, d, e, y, x[rows, cols].sum() * picked * flags


class NamedOutputs(nn.Module):
    """Outputs read by name (``max(x, 1).values``, ``topk(...).indices``, ``aminmax().max``) and
    a ``ModuleList`` walked backwards (``reversed``), as decoders do."""

    def __init__(self) -> None:
        super().__init__()
        self.ups = nn.ModuleList([nn.Linear(4, 4), nn.Tanh()])

    def forward(self, x):
        y = x + x.max(dim=1).values[:, None] * x.max(1).indices[:, None] + x.sort(dim=1).values
        y = y + x.topk(2, dim=1).indices.float().sum() + torch.aminmax(x).max
        for up in reversed(self.ups):
            y = up(y)
        return y


class CFunctionGivenTensors(nn.Module):
    """C code of a module that the prediction does not model, given tensors: ``heapq.heappush``
    compares them (an op), ``operator.countOf`` compares each item (ops): gaps."""

    def forward(self, x):
        heap = [x[0, 0]]
        heapq.heappush(heap, x[1, 0])
        return x * operator.countOf(list(x[0]), 0.5) * heap[0]


class PlainChecks(nn.Module):
    """Conditions on lists and tuples the code builds, ``str.join`` of a ``map`` and version
    checks with ``packaging`` are decided."""

    def forward(self, x):
        n = x.dim()
        if [n, 3] == [2, 3] and (n,) < (3,):
            x = x.sin()
        if ".".join(map(str, (n, 1))) == "2.1":
            x = x.cos()
        if version.parse("2.13.0+cpu").base_version == "2.13.0" and version.parse("2.13") > version.parse("2.9"):
            x = x.exp()
        return x


class IterateUnion(nn.Module):
    """Iterating a value from a branch the data decides: a tensor (iterating it runs ``unbind``)
    or a list of tensors; every builtin that iterates, unpacking, ``*`` and a for loop."""

    def __init__(self, form: str) -> None:
        super().__init__()
        self.form = form

    def forward(self, x):
        xs = x if x.sum() > 0 else [x, x]
        form = self.form
        if form == "for":
            out = x
            for _ in xs:
                out = out + 1
            return out
        if form == "sum":
            return sum(xs)
        if form == "reduce":
            return functools.reduce(lambda a, b: a * b, xs)
        if form == "map":
            return list(map(torch.tanh, xs))
        if form == "list":
            return torch.stack(list(xs))
        if form == "star":
            return torch.stack([*xs])
        if form == "unpack":
            first, *rest = xs
            return first.neg()
        if form == "zip":
            return [a * k for a, k in zip(xs, range(4))], [k for k, _ in enumerate(xs)]
        if form == "comprehension":
            return [r.exp() for r in xs]
        if form == "sorted":
            return sorted(xs, key=lambda r: id(r)), min(xs, key=lambda r: r.sum())
        if form == "accumulate":
            return list(itertools.accumulate(xs)), list(itertools.chain(xs, [x]))
        raise ValueError(form)


#: The forms :class:`IterateUnion` takes.
ITERATE_UNION_FORMS = ("for", "sum", "reduce", "map", "list", "star", "unpack", "zip", "comprehension", "sorted",
                       "accumulate")


class KeysUnion(nn.Module):
    """A dict from a branch the data decides, iterated and read by the keys it gives."""

    def forward(self, x):
        d = {"a": x} if x.sum() > 0 else {"b": x.neg()}
        return [d[k] * 2 for k in d]


class StarUnknown(nn.Module):
    """A function given ``*`` items whose number the data decides (it fills a default)."""

    def pair(self, a, b=None):
        return a.relu() if b is None else a + b

    def forward(self, x):
        xs = [x, x] if x.sum() > 0 else [x]
        return self.pair(*xs)


class SuppressedKeyError(nn.Module):
    """A subscript that raises for certain, in a ``with`` that suppresses the exception."""

    def forward(self, x):
        with contextlib.suppress(KeyError):
            x = x.sin()
            x = {"a": x}["b"].cos()
        return x.exp()


class GeneratorLeftInFinally(nn.Module):
    """A generator left at a yield inside ``try``/``finally``: its ``finally`` runs as it is closed."""

    def rows(self, x):
        try:
            yield x.sin()
            yield x.cos()
        finally:
            x.tan()

    def forward(self, x):
        for row in self.rows(x):
            return row.exp()


class ShiftedWindows(nn.Module):
    """torchvision's Swin: a copy of a live list of sizes, written where the shapes say, summed."""

    def __init__(self) -> None:
        super().__init__()
        self.shift, self.window = [2, 2], [7, 7]

    def forward(self, x):
        shift = self.shift.copy()
        if self.window[0] < x.shape[0]:  # not for these inputs: the copy is summed as it is
            shift[0] = 0
        if sum(shift) > 0 and sum(shift, 1) > 1:
            x = torch.roll(x, shifts=(-shift[0], -shift[1]), dims=(0, 1))
        return x.sin()


class SetsAndNumbers(nn.Module):
    """A set display and ``set()`` of known items (duplicates dropped, Python's order), and a
    builtin of numbers the prediction cannot know (a number: ``float * tensor`` is ``rmul``)."""

    def forward(self, x):
        scaled = [x * k for k in {1, 2, 2, 3}] + [x * k for k in set((4, 4))]
        return scaled, max(x.sum(1).tolist()) * x


class Holder:
    """Special methods in Python that run ops, reached by syntax and by builtins."""

    def __init__(self, t):
        self.t = t

    def __getitem__(self, i):
        return self.t[i] * 2

    def __setitem__(self, i, v):
        self.t = self.t.index_put((torch.tensor(i),), v)

    def __neg__(self):
        return Holder(-self.t)

    def __iadd__(self, other):
        self.t = self.t + other
        return self

    def __bool__(self):
        return bool(self.t.sum() > 0)

    def __len__(self):
        return int(self.t.shape[0])

    def __iter__(self):
        return iter([self.t.sin(), self.t.cos()])

    def __contains__(self, v):
        return bool((self.t == v).any())

    def __abs__(self):
        return Holder(self.t.abs())

    def __float__(self):
        return float(self.t.mean())

    def __str__(self):
        return str(self.t.max().item())

    def __getattr__(self, name):
        return self.t.sum(dim=0) if name == "total" else None


class Specials(nn.Module):
    """Each special method of :class:`Holder` from the syntax or builtin that calls it, on an
    object built in forward and on one the model holds."""

    def __init__(self):
        super().__init__()
        self.held = Holder(torch.ones(3, 4))

    def forward(self, x):
        h = Holder(x.clone())
        h[0] = x[1]
        h += 1.0
        first, second = h
        flag = 0.5 in h
        if h:
            x = x + 1
        text = f"{h}" + str(-h)
        rows = [r.exp() for r in h]
        return h[1], abs(h).t, float(h), h.total, first + second, flag, text, rows, len(self.held), -self.held


class Counting:
    """An iterator whose ``__next__`` runs an op per item."""

    def __init__(self, t):
        self.t, self.k = t, 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.k >= 2:
            raise StopIteration
        self.k += 1
        return self.t * self.k


class SelfIterating(nn.Module):
    def forward(self, x):
        return [t for t in Counting(x)]


class ConvNorm(nn.Sequential):
    """A subclass of a torch container (torchvision's ``Conv2dNormActivation``): torch's own
    ``__iter__``/``__len__``/``__getitem__`` are read as before, not as the program's."""

    def __init__(self):
        super().__init__(nn.Linear(4, 4), nn.ReLU())


class SequentialSubclass(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(ConvNorm(), ConvNorm())

    def forward(self, x):
        if len(self.blocks[0]) == 2 and self.blocks:
            x = x.sin()
        return self.blocks(x), [m for m in self.blocks[1]]


class InputWritten(nn.Module):
    """An input resized in place and written through a view (it then requires grad): what is
    read of it afterwards is what the writes made, not the tensor as given. It changes the
    tensor it is given: it has an input of its own."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(3, 4))

    def forward(self, x):
        x.unsqueeze_(0)
        grown = len(x) == 1
        v = x.view(3, 4)
        v.copy_(self.w)
        if x.requires_grad:
            x = x.tanh()
        y = x.clone()
        y.unsqueeze_(0)
        if y.dim() == 4:
            y = y.sin()
        if grown:
            y = y.cos()
        return x, y


class OneOf(nn.Module):
    """A model whose forward takes one of several ways, named by ``how``."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how


class OpRaises(OneOf):
    """An op that raises on the example inputs' shapes (``x`` is 3x4): the forward stops there."""

    def forward(self, x):
        y = torch.tanh(x)
        if self.how == "view":
            y = y.view(5, 7)
        elif self.how == "cat":
            y = torch.cat([y, y.t()])
        elif self.how == "index":
            y = y[7]
        return y.exp()


#: Python reading a tensor of several elements (or any tensor: ``round``, ``len`` of a 0-d one)
#: as a plain value, which raises: the form, then the line's text.
READS = {"if": "if y > 0:", "not": "if not y:", "chain": "if 0 < y < 1:", "and": "if y.sum() < 100 and y:",
         "min": "y = min(y[0], y[1])", "any": "if any(r > 0 for r in y):", "float": "y = y * float(y)",
         "isclose": "if math.isclose(y, 0.5):", "round": "y = y * round(y[0, 0])", "len": "y = y * len(y[0, 0])",
         "index": "y = [y, -y][y[0, 0]]", "range": "for _ in range(y.sum()):", "format": "y = y * len(f'{y:.2f}')",
         "divmod": "y = divmod(y, 2)[0]"}


class ReadsAsPython(OneOf):
    """Python reads a tensor as a truth value, a number, an index, a length or text where that
    raises on the example inputs (``x`` is 3x4): the forward stops there."""

    def forward(self, x):
        y, how = torch.tanh(x), self.how
        if how == "if":
            if y > 0:
                y = y * 2
        elif how == "not":
            if not y:
                y = y * 2
        elif how == "chain":
            if 0 < y < 1:
                y = y * 2
        elif how == "and":
            if y.sum() < 100 and y:
                y = y * 2
        elif how == "min":
            y = min(y[0], y[1])
        elif how == "any":
            if any(r > 0 for r in y):
                y = y * 2
        elif how == "float":
            y = y * float(y)
        elif how == "isclose":
            if math.isclose(y, 0.5):
                y = y * 2
        elif how == "round":
            y = y * round(y[0, 0])
        elif how == "len":
            y = y * len(y[0, 0])
        elif how == "index":
            y = [y, -y][y[0, 0]]
        elif how == "range":
            for _ in range(y.sum()):
                y = y * 2
        elif how == "format":
            y = y * len(f'{y:.2f}')
        elif how == "divmod":
            y = divmod(y, 2)[0]
        return y.exp()


class ReadsOneElement(nn.Module):
    """The same reads of one-element tensors, which Python takes: no gap, and exact. The value of
    an ``and`` is not tested (its last operand's truth is not taken)."""

    def forward(self, x):
        y = torch.tanh(x)
        one = y[0, 0]
        if one > -2 and 0 < one + 2 < 4:
            y = y * 2
        if not one > 2:
            y = y + 1
        if any(r.sum() > -100 for r in y):
            y = y - 1
        y = y * float(one) + min(y[0, 0], y[1, 0]) + math.floor(y[0, :1] + 2)
        y = y * [1.0, 2.0][(one * 0).long()]
        kept = (one > -2) and y
        return kept * len(f"{one:.2f}") + len(y[0])


class LostLeftOperand(nn.Module):
    """An operator whose left operand the prediction lost track of, the right a tensor: a number
    there makes it the tensor's reflected op, so the op is said to be taken as a tensor's."""

    def forward(self, x):
        return {x: 2}[x] * x


class Asserts(nn.Module):
    """An assert the shapes decide true (its message is not built), one the data leaves
    undecided (its message's op runs 0..1 times), and an attribute written through
    ``self.__dict__`` read back: exact."""

    def forward(self, x):
        assert x.shape[0] == 3, f"{x.sum()}"
        assert x.abs().sum() < 1e9, f"too big: {x.mean()}"
        self.__dict__["scaled"] = x * 2
        return self.scaled + 1


class Marked(torch.Tensor):
    """A tensor subclass with nothing of its own."""


class OutsideData(nn.Module):
    """A tensor through NumPy and back (``numpy`` gives no tensor, ``from_numpy`` is no op the
    capture sees), through a sparse layout, and as a subclass (``as_subclass``: no op either): exact."""

    def forward(self, x):
        return torch.from_numpy(x.numpy() * 2) + x.to_sparse().to_dense() + (x.as_subclass(Marked) * 2).relu()


@functools.lru_cache
def _probe_installed() -> bool:
    return importlib.util.find_spec("torchlens_no_such_package") is not None


_probe_installed.__wrapped__._dynamo_marked_constant = True  # type: ignore[attr-defined]
# what torch._dynamo.assume_constant_result sets (transformers sets it by hand on its install probes)


class ConstantProbe(nn.Module):
    """An install probe marked as a constant, behind ``lru_cache`` and not yet called: run for
    real (importlib's machinery is not interpreted): exact."""

    def forward(self, x):
        return x.relu() if _probe_installed() else x.tanh()



class BuiltContainers(nn.Module):
    """Dicts built by ``dict.fromkeys`` (a method of the dict type, run for real on known keys),
    written with tensors and read back, as transformers' linear-attention cache layers keep their
    states: exact."""

    def forward(self, x):
        states, ready = dict.fromkeys(range(2)), dict.fromkeys([0, 1], False)
        states[0] = x * 2
        if not ready[0]:
            ready[0] = True
            states[1] = states[0].tanh()
        return states[0] + states[1]


class Kind(nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind


class SetComprehensions(nn.Module):
    """Loops over set comprehensions of the layers' kinds (as transformers' Dory builds one
    rotary embedding per attention type): a set has no duplicates, so one pass per distinct
    kind (it ran a pass per layer); a set of tensors (hashed by identity): its size is known."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Kind("a"), Kind("a"), Kind("b")])

    def forward(self, x):
        per_kind = {kind: x * len(kind) for kind in {layer.kind for layer in self.layers}}
        first = [x.relu() for _ in {layer.kind for layer in self.layers[:2]}]
        return per_kind["a"] + per_kind["b"] + first[0] + len({row.sum() for row in x})


def packed(mask, rows: int):
    """transformers' ``pack_gqa`` form: an ``or`` whose second operand reads what the first
    tested against ``None``, and an early return that leaves the rest to the tensor."""
    if mask is None or mask.shape[0] == 1:
        return mask
    return mask.reshape(rows, -1)


class NarrowedNone(nn.Module):
    """A mask that is ``None`` or a tensor as the data decides, tested ``is not None``: inside
    the branch it is the tensor (reading its shape was said to raise, from its ``None``), and so
    in the operands of an ``and``/``or`` after the test, in the arms of an ``if`` whose test is
    such an ``and``/``or``, and in a conditional expression; and ``F.unfold`` given
    ``dilation=1`` (torch's ``_pair``: ``itertools.repeat`` a known number of times) keeps its
    output's shape, so a loop over its rows has a known count: exact."""

    def forward(self, x):
        mask = None
        if x.sum() > 0:
            mask = x > 0
        if mask is not None:
            x = x.masked_fill(mask, 0.0) * mask.shape[0]
        if mask is not None and mask.shape[1] == 4:
            x = x + packed(mask, 2).sum()
        rows = x.shape[0] if mask is None else mask.shape[0]
        x = x * (mask.float() if mask is not None else rows)
        total = x.new_zeros(())
        for row in nn.functional.unfold(x[None, None], kernel_size=2, dilation=1)[0]:
            total = total + row.relu()
        return total


class ParameterQueries(nn.Module):
    """transformers' ``self.dtype`` (``next`` of a filtered generator over ``self.parameters()``)
    and a loop over the parameters of a model that registers one module twice: torch's own
    generators skip a member already in their memo set (tensors and modules hash by identity);
    the set was a list whose ``add`` the prediction did not model: a gap and a loop of unknown
    count. Now exact."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = self.a
        self.c = nn.Linear(4, 4)

    @property
    def dtype(self):
        return next(p.dtype for p in self.parameters() if p.is_floating_point())

    def forward(self, x):
        x = x.to(self.dtype) * torch.finfo(self.dtype).eps
        for p in self.parameters():
            x = x + p.sum()
        return self.c(x) if self.c.weight in set(self.parameters()) else x


class KnownLists(nn.Module):
    """Lists made for real from known sizes, joined by ``+`` and repeated by ``*`` (TAPAS's
    segment shapes, ``list(index.batch_shape()) + [n] + list(vector_shape)``): the result was a
    number the run lost track of, so the view's shape and the loop over its rows were not known
    (a gap); ``functools.reduce(operator.mul, sizes)`` of known sizes (Reformer's axial position
    shape) was too. Exact."""

    def __init__(self) -> None:
        super().__init__()
        self.axial = [4, 8]

    def forward(self, x):
        shape = list(x.shape[:1]) + list(x.shape[1:]) * 1
        total = x.new_zeros(())
        for row in x.view(shape):
            total = total + row.sum()
        if x.shape[1] < functools.reduce(operator.mul, self.axial):  # Reformer's axial sizes
            total = total * 2
        return total


class NumpyNumbers(nn.Module):
    """NumPy's ufuncs on plain numbers (VITS's spline constant ``np.log(np.exp(1 - d) - 1)``,
    Pegasus-X's ``np.log``) were C code it does not call: a gap. Computed for real now, a test
    and a loop count on them are decided: exact."""

    def forward(self, x):
        constant = np.log(np.exp(1 - 1e-3) - 1)
        if constant > 0:
            x = x * constant
        for _ in range(int(np.ceil(np.log2(8)))):
            x = x.relu()


class ConstantContents(nn.Module):
    """Tests on tensors made from constants alone (transformers' packed-sequence check on
    position ids made by ``arange``; a flag tensor; ``item`` of a count) and sizes given as such
    tensors: their contents are computed, so each is decided as the run decides it, and a
    loop over rows of such a size is unrolled. Exact."""

    def forward(self, x):
        pos = torch.arange(x.shape[1])[None]
        packed = (torch.diff(pos, prepend=pos[:, :1] - 1, dim=-1) != 1).cumsum(-1)
        if (packed[:, -1] == 0).all():
            x = x * 2
        else:
            x = x.exp()
        if not torch.ones(3, dtype=torch.bool).all():
            x = x.cos()
        for _ in range(torch.tensor([1, 2]).sum().item()):
            x = x.relu()
        size = torch.prod(torch.tensor(list(x.shape[:1]))) * 2  # TAPAS's segment sizes: a 0-d tensor
        for row in torch.zeros(size, 1):  # a size fakes cannot read: its contents give it
            x = x + row
        return x.view(list(x.shape[:1]) + list(x.shape[1:]))  # a list's + of known lists


class ContentsNotClaimed(nn.Module):
    """Contents that do not hold on every run: a tensor made or rebound under a branch the data
    decides or in a loop of unknown count, written in place (``setitem``, ``add_``), joined from
    two branches (a name, an attribute), or read on each pass of a loop; and the inputs'
    contents, never known. Each test on them stays undecided, whatever the data."""

    def forward(self, x):
        t = torch.zeros(1)
        if x.sum() > 0:
            t = t + 1
        if t:
            x = x * 2
        u = torch.zeros(1)
        for _ in range(int(x.sum() > 0)):
            u = torch.ones(1)
        if u:
            x = x - 1
        v = torch.zeros(2)
        v[0] = 1
        if v.any():
            x = x + 3
        w = torch.zeros(1)
        w.add_(x.sum().clamp(0, 1))
        if w:
            x = x / 2
        z = torch.ones(1) if x.mean() > 0 else torch.zeros(1)
        if z:
            x = x.abs()
        k = torch.zeros(1)
        for _ in range(int(x.shape[0])):
            if (k == 0).all():
                x = x.relu()
            k = k + 1
        if (x > 0).all():
            x = x.exp()
        one, a = torch.ones(1), torch.zeros(1)
        for _ in range(int(x.sum() > 0)):
            a = one
        if a:
            x = x.sin()
        self.flag = torch.zeros(1)
        if x.sum() > 0:
            self.flag = torch.ones(1)
        if self.flag:
            x = x.tanh()
        self.count = torch.zeros(1)
        for _ in range(int(x.sum() > 0) + 1):
            if self.count:
                x = x.sigmoid()
            self.count = self.count + 1
        return x


class Shelf:
    """A plain Python object with a method named like a list's mutator."""

    def __init__(self) -> None:
        self.items: list = []

    def update(self, t):
        self.items.append(t)
        return t * 2


class MutatorNames(nn.Module):
    """Once forward has written into a live dict, calls whose names are those of a container's
    mutating methods but are not (``torch.sort``, ``torch.add``, a Python class's ``update``)
    were taken for writes into a live object: 13 gaps; now exact."""

    def __init__(self) -> None:
        super().__init__()
        self.cache: dict = {}
        self.shelf = Shelf()

    def forward(self, x):
        self.cache["k"] = x.relu()
        values, order = torch.sort(x.flatten())
        return self.shelf.update(torch.add(values, 1)) + order.float().sum()


class AutocastOff(nn.Module):
    """``torch.autocast`` around a matmul (timm's EfficientViT): its ``__enter__``/``__exit__``
    call ``torch._C``'s own state bindings (``set_autocast_enabled``...), which no mode sees, so
    they are no ops; its ``__init__`` compares the device with the name of torch's private-use
    backend (a query run for real): exact."""

    def forward(self, x):
        with torch.autocast(device_type=x.device.type, enabled=False):
            y = x @ x.t()
        return y.relu()


class WrittenUnknown(nn.Module):
    """A dict built from a count the data decides (a builtin of numbers it cannot know: no tensor
    in it), then given a tensor: what is read back may be one, so the op on it is said to be taken
    as a tensor's (it was taken silently as a number's reflected ``radd``)."""

    def forward(self, x):
        d = dict.fromkeys(range(int(x.sum().item() > 0) + 1))
        d[0] = x * 2
        return d[0] + x

#: Statements that raise on the example inputs: the form, then the line's text.
STATEMENTS = {"assert": "assert x.shape[0] == 5", "attribute": "return self.missing",
              "getattr": "return getattr(self, 'absent')", "unpack rows": "a, b = x",
              "unpack outputs": "a, b = x.split(1)", "unpack starred": "a, b, c, *rest = x.shape",
              "uncaught": "raise ValueError('no arm takes it')"}


class RaisesInPython(OneOf):
    """An assert the shapes decide false; an attribute the module does not have, read or got;
    unpacking a tensor's rows, an op's outputs or a shape into another number of targets."""

    def forward(self, x):
        x = torch.tanh(x)
        if self.how == "assert":
            assert x.shape[0] == 5, "wants 5 rows"
        elif self.how == "attribute":
            return self.missing
        elif self.how == "getattr":
            return getattr(self, 'absent')
        elif self.how == "unpack rows":
            a, b = x
        elif self.how == "unpack outputs":
            a, b = x.split(1)
        elif self.how == "uncaught":
            try:
                raise ValueError('no arm takes it')
            except (TypeError, KeyError):
                x = x.relu()
        else:
            a, b, c, *rest = x.shape
        return x.exp()


class CaughtByClass(nn.Module):
    """Raises the run is certain of, each taken by the ``except`` arm its class picks: a raise
    statement, a raise in a called function, an op refusing the shapes, a missing attribute
    raised again from its arm, a raise passing a ``finally``, a generator's raise."""

    def check(self, x):
        if x.dim() == 2:
            raise KeyError("rows")
        return x.sin()

    def rows(self, x):
        yield x.sin()
        raise IndexError("no third row")

    def forward(self, x):
        try:
            raise ValueError("a")
        except TypeError:
            x = x.relu()
        except (KeyError, ValueError) as error:
            x = x.sigmoid() if isinstance(error, ValueError) else x
        try:
            y = self.check(x)
            y = y.cos()
        except LookupError:
            y = x.tanh()
        try:
            try:
                z = y.view(7, 13)
            except ValueError:
                z = y.neg()
        except RuntimeError:
            z = y.abs()
        try:
            try:
                w = self.missing
            except AttributeError:
                w = z.exp()
                raise
        except Exception:
            w = z.log1p()
        try:
            try:
                self.check(w)
            finally:
                w = w.floor()
        except KeyError:
            w = w.ceil()
        try:
            for row in self.rows(w):
                w = w + row
        except IndexError:
            w = w.square()
        return x + y + z + w


class Unavailable:
    """Stands for what a build lacks, as torch's stand-ins do (``torch.cuda``'s on a CPU
    build): making one raises, in its ``__new__``."""

    def __new__(cls, *args, **kwargs):
        raise RuntimeError(f"{cls.__name__} is not available in this build")


class MadeByNew:
    """A ``__new__`` in Python that makes the object and sets it up, then ``__init__``."""

    def __new__(cls, factor):
        made = super().__new__(cls)
        made.factor = factor * 2
        return made

    def __init__(self, factor):
        self.steps = factor


class PythonNew(nn.Module):
    """Classes with a ``__new__`` in Python, made in forward: one that raises inside a ``try``
    (transformers' ``is_tracing`` probes CUDA graph capture so), one that builds the object."""

    def forward(self, x):
        try:
            capturing = Unavailable()
        except RuntimeError:
            capturing = False
        if capturing:
            x = x.cos()
        doubled = MadeByNew(2)
        for _ in range(doubled.factor + doubled.steps):
            x = x.relu()
        return x


class LegacyConstructors(nn.Module):
    """``torch.IntTensor([n])`` and ``torch.FloatTensor(rows, 1)`` (VITS's channel count): tensors
    made by no op the capture records, read by ops it does (``channels[0]``). The tensor was taken
    for a number and every read of it was missed, with no gap."""

    def forward(self, x):
        channels = torch.IntTensor([x.shape[1]])
        for _ in range(2):
            x = x * channels[0]
        return x + torch.FloatTensor(x.shape[0], 1).zero_()


class DataSizedCheck(nn.Module):
    """``torch._check_tensor_all`` of a test on a boolean-mask selection, whose size the data
    decides (VITS's spline): its ``_is_all_true`` op was taken for a query that runs no op (it
    was missed, with no gap), and ``type()`` of what it read was a gap."""

    def forward(self, x):
        inside = x[x > 0]
        torch._check_tensor_all((inside.min() >= -5) & (inside.max() <= 5))
        return x.sin()


class ReraisingArm(nn.Module):
    """A ``try`` whose only ``except`` arm raises again with a clearer message (LayoutLM's bbox
    lookup): if an op in it raises, the forward stops, so it is predicted as not raising with
    no note, as a branch arm that can only raise."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    def forward(self, x):
        ids = torch.arange(x.shape[0]) % 10
        try:
            rows = self.emb(ids)
        except IndexError as error:
            raise IndexError("ids should be within 0-9") from error
        return x + rows.sum()


class UnknownClassRaised(nn.Module):
    """``raise self.error()``: the class of what it raises is not read, so whether
    ``except ValueError`` takes it is not known (a gap, not the first arm)."""

    def error(self):
        return ValueError("made")

    def forward(self, x):
        try:
            raise self.error()
        except ValueError:
            x = x.sin()
        return x.cos()


class EveryArmRaises(nn.Module):
    """Branches the prediction cannot decide (the data's sign) whose every arm raises, inside a
    ``try``: what is raised is one of the arms' classes, so the ``except`` arm taking every one
    of them runs for certain. In the second, one arm can only raise and is taken as not run, so
    the ops after it (the ``elif``'s test) are predicted as running: a note says so."""

    def forward(self, x):
        try:
            if x.sum() > 0:
                raise ValueError("positive")
            else:
                raise KeyError("not positive")
        except (ValueError, KeyError):
            x = x.sin()
        try:
            if x.mean() > 0:
                x = x.cos()
                raise IndexError("positive mean")
            elif x.max() > 5:
                raise KeyError("large")
            else:
                raise IndexError("small")
        except Exception:
            x = x.tanh()
        return x.exp()


@functools.lru_cache(16)
def _heads_plan(shape: tuple, heads: int) -> tuple:
    return shape[0], heads, shape[1] // heads


class GuardedCache(nn.Module):
    """einops' pattern: a cached plan called inside ``try`` whose ``except TypeError`` calls the
    uncached function (for arguments that cannot be hashed), and a setting read from a dict
    with ``except KeyError``. Neither body runs an op and the prediction follows both exactly
    (every value known), so neither can raise: their ``except`` arms do not run."""

    def __init__(self) -> None:
        super().__init__()
        self.settings = {"heads": 2}

    def forward(self, x):
        try:
            heads = self.settings["heads"]
        except KeyError:
            heads = 1
        try:
            plan = _heads_plan(tuple(x.shape), heads)
        except TypeError:
            plan = _heads_plan.__wrapped__(list(x.shape), heads)
        return x.reshape(plan).transpose(0, 1)


class GuardedUnknown(nn.Module):
    """A ``try`` whose body runs no op but reads a number the data decides: it may raise (here
    it does), so its ``except`` arm may run (predicted as optional)."""

    def forward(self, x):
        total = x.abs().sum().item()
        try:
            (0, 1)[int(total) + 5]
        except IndexError:
            x = x.sin()
        return x.cos()


class AskedTwice(nn.Module):
    """A generator expression's items asked for at two places: each item's op has the call
    site of the ``next`` that asked for it (two layers)."""

    def forward(self, x):
        rows = (r.tanh() for r in x)
        first = next(rows)
        second = next(rows)
        return first + second


class LiveListsCompared(nn.Module):
    """Lists, tuples and dicts of plain values the module holds, compared with ``==``/``<`` to
    ones the code makes (einops' layers: ``recipe.axes_permutation == list(range(n))`` decides
    whether the axes are permuted): undecided before, so the permute was optional and the
    shapes after it lost; compared for real now. Exact."""

    def __init__(self) -> None:
        super().__init__()
        self.order = [1, 0]
        self.sizes = (2, 3)
        self.table = {"a": 1}

    def forward(self, x):
        order = self.order
        if self.order == list(range(len(self.order))):
            order = None
        if order is not None:
            x = x.permute(order)
        if self.sizes < (2, 4) and self.table == {"a": 1}:
            x = x.sin()
        return x.cos()


class EnumerateFrom(nn.Module):
    """``enumerate(..., start=1)`` and ``enumerate(xs, 2)`` with the last pass tested by
    ``layer == len(...)`` (vit-pytorch's JumboViT): the keyword ``start`` was taken as 0, so
    the last pass was never found and its skipped ops predicted twice, silently. Exact."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        for layer, linear in enumerate(self.layers, start=1):
            x = linear(x)
            if layer == len(self.layers):
                continue
            x = x.sin()
        for k, _ in enumerate(self.layers, 2):
            if k == 4:
                x = x.cos()
        return x


class _Backend:
    framework = ""


class _TorchBackend(_Backend):
    framework = "torch"


class _NumpyBackend(_TorchBackend):
    framework = "numpy"


class SubclassWalk(nn.Module):
    """einops' backend lookup on its first call: a worklist of ``__subclasses__`` of a class
    grown with ``+=`` inside a ``while``, the first whose name is imported picked."""

    def backend(self):
        found, todo = [], _Backend.__subclasses__()
        while todo:
            cls = todo.pop()
            todo += cls.__subclasses__()
            found.append(cls)
        return next(cls for cls in found if cls.framework == "torch" and cls.framework in sys.modules)

    def forward(self, x):
        return x.relu() if self.backend() is _TorchBackend else x.sin()


class ZipStrict(nn.Module):
    """``zip(..., strict=True)`` of a source whose length the data decides with a ``ModuleList``:
    the source is as long as the list (or zip raises), so each module runs once."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])

    def forward(self, x):
        for _, linear in zip(range(int(x.abs().sum() > 0) * 2), self.layers, strict=True):
            x = linear(x)
        return x


class ZipMixedLengths(nn.Module):
    """``zip`` of a source whose length the data decides with a ``ModuleList``: each pass runs
    another module, so each is optional (only the first module was predicted, N times, silently);
    and NesT's ``zip(reversed(range(n)), self.layers)``, whose levels are known: exact."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])

    def forward(self, x):
        for level, linear in zip(reversed(range(len(self.layers))), self.layers):
            x = linear(x) * 2 ** level
            if level == 0:
                x = x.sin()
        for _, linear in zip(range(int(x.abs().sum() > 0)), self.layers):
            x = linear(x)
        return x


def _first_given(*args):
    for arg in args:
        if arg is not None:
            return arg() if callable(arg) else arg
    return None


class CallableChecks(nn.Module):
    """``callable()`` of a tensor an op made (x-transformers' ``default(context, x)``), of a
    module, a lambda and a number: the first was a value the prediction lost track of, so
    the keys' shapes after it were lost. Exact."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x, context=None):
        h = self.proj(x)
        kv = _first_given(context, h)
        if kv.ndim == 2 and callable(self.proj) and callable(lambda: 0) and not callable(3):
            kv = kv.view(3, 2, 2).sum(-1)
        return kv


class _Scope:
    """A context manager whose ``__exit__`` never suppresses (as ``torch.autocast``'s)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is not None:
            return False
        return None


class ArgumentCheckInWith(nn.Module):
    """An argument check (an arm that can only raise) inside ``with`` a manager whose
    ``__exit__`` cannot suppress: the raise would go on, as outside a ``with`` (a note before)."""

    def forward(self, x):
        with _Scope():
            if x.sum() > 100:
                raise ValueError("too large")
            x = x.sin()
        return x.cos()


class LocalClasses(nn.Module):
    """Classes defined in ``forward``, made for real around their methods: a closure, ``super()``
    between two of them, a dataclass with a ``__post_init__``, a named tuple, an enum,
    properties, static and class methods, ``__slots__``, class constants read by a default, and
    a class made anew on each pass of a loop (an unknown value before)."""

    def forward(self, x):
        scale = 3

        class Base:
            __slots__ = ("t",)
            LIMIT = 2
            DOUBLE = LIMIT * 2

            def __init__(self, t):
                self.t = t

            def f(self, k=DOUBLE):
                return self.t.relu() * k * scale

        class Child(Base):
            __slots__ = ()

            def f(self, k=1):
                return super().f(k).sin()

            @property
            def doubled(self):
                return self.t * 2

            @staticmethod
            def shift(t):
                return t - 1

            @classmethod
            def made(cls, t):
                return cls(t.neg())

        @dataclasses.dataclass
        class Record:
            a: torch.Tensor
            n: int = 2

            def __post_init__(self):
                self.a = self.a.exp()

        class Pair(typing.NamedTuple):
            a: torch.Tensor
            b: int

        class Mode(enum.Enum):
            FAST = 1
            SLOW = 2

        child = Child.made(x)
        y = child.f() + Child.shift(child.doubled) + Base(x).f()
        y = y * Record(y).n + Record(y).a + Pair(y.cos(), 3).a
        for k in range(2):
            class Step:
                n = k

                def scaled(self, t):
                    return t * self.n
            y = Step().scaled(y).tanh()
        return y.sigmoid() if Mode["FAST"].value == 1 else y.abs()


class LocalClassRunsCode(nn.Module):
    """A class whose body runs torch (a class attribute made by ``torch.ones``): not made, said."""

    def forward(self, x):
        class Offset:
            w = torch.ones(4)

            def add(self, t):
                return t + self.w
        return Offset().add(x).relu()


_DEBUG_LOG = logging.getLogger("torchlens.tests.hostile.debugging")
_DEBUG_LOG.setLevel(logging.DEBUG)


class LoggingQueries(nn.Module):
    """Branches on what ``logging`` answers: a logger whose level is DEBUG (its extra op runs), one
    made in ``forward`` and asked for its level (silently wrong before: every logging function was
    taken as returning ``None``, so the branch was taken as never run)."""

    def forward(self, x):
        if _DEBUG_LOG.isEnabledFor(logging.DEBUG):
            x = x + x.mean()
        if logging.getLogger("torchlens.tests.hostile.quiet").getEffectiveLevel() > logging.INFO:
            x = x.sin()
        logging.getLogger("torchlens.tests.hostile.quiet").debug("shape %s", x.shape)
        return x.relu()


_DEFAULT_OPTIONS = {"scale": 2, "act": "relu"}


class DictMerges(nn.Module):
    """Dicts merged by ``|`` and ``|=``: displays, a module-level dict, an ``OrderedDict`` and a
    dict the module holds (written by ``|=`` in the pass), read back by key and by order (gaps
    and a lost tensor before)."""

    def __init__(self):
        super().__init__()
        self.options = {"bias": 1}

    def forward(self, x):
        merged = {"a": 1} | {"b": 2}
        merged |= {"c": x.relu()}
        config = _DEFAULT_OPTIONS | {"act": "tanh"}
        ordered = collections.OrderedDict(z=1) | {"y": x.sin()}
        self.options |= {"bias": 3}
        y = getattr(merged["c"], config["act"])() * len(merged) * config["scale"] + list(ordered.values())[1]
        return y + self.options["bias"] if self.options["bias"] == 3 else y.neg()


class IteratorOfModules(nn.Module):
    """``iter()`` of a ``ModuleList`` and a ``Sequential``, consumed by ``zip`` of one iterator
    twice (layers in pairs) and by ``next`` (a gap and no op of them predicted before)."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(4))
        self.head = nn.Sequential(nn.Linear(4, 4), nn.Tanh())

    def forward(self, x):
        layers = iter(self.layers)
        for first, second in zip(*[layers] * 2):
            x = second(first(x)).relu()
        head = iter(self.head)
        return next(head)(next(head)(x))


def raising_models() -> dict[str, tuple[nn.Module, tuple]]:
    """Models whose forward raises from an op, or from Python reading a tensor, on their example inputs."""
    torch.manual_seed(0)
    out = {how: (OpRaises(how), (torch.randn(3, 4),)) for how in ("view", "cat", "index")}
    out.update({f"read {how}": (ReadsAsPython(how), (torch.randn(3, 4),)) for how in READS})
    return {**out, **{how: (RaisesInPython(how), (torch.randn(3, 4),)) for how in STATEMENTS}}


def hostile_models() -> dict[str, tuple[nn.Module, tuple]]:
    torch.manual_seed(0)
    x = torch.randn(3, 4)
    plain = [EvalString, ExecString, GeneratorForward, ContextManagers, GeneratorsEverywhere, Match, MatchOnTensor, TryExcept, BigWhile, Recurse,
             Checkpoint, SortedItems, CallOverrideParent, CustomFunction, WhileTrue, Lost, ModelOutputStyle,
             SequenceInstance, ListUnderBranch, Cond, Callbacks, Comprehensions, Records, MoreCallbacks, Cached, Nexts,
             LiveCaches, CacheUnderBranch, FlagsAndShapes, LostFlag,
             ModuleInBranch, SortedTensors, SortedThree, Operators, PlainChecks, KeysUnion, StarUnknown,
             SuppressedKeyError, GeneratorLeftInFinally, ShiftedWindows,
             SetsAndNumbers, Specials, SelfIterating, SequentialSubclass, OperatorFunctions, CFunctionGivenTensors,
             ReflectedOperators, ShortCircuits, NamedOutputs, ReadsOneElement, LostLeftOperand,
             Asserts, OutsideData, ConstantProbe, BuiltContainers, WrittenUnknown,
             SetComprehensions, NarrowedNone, MutatorNames, AutocastOff,
             ParameterQueries, KnownLists, NumpyNumbers, CaughtByClass, UnknownClassRaised,
             ConstantContents, ContentsNotClaimed, PythonNew, LegacyConstructors, DataSizedCheck,
             ReraisingArm, EveryArmRaises, GuardedCache, GuardedUnknown, AskedTwice, LiveListsCompared,
             EnumerateFrom, ZipMixedLengths, CallableChecks, ArgumentCheckInWith, GeneratorProtocol,
             ZipStrict, SubclassWalk, CachedPlans, SetMutations, SetOrder,
             DeepCopiedRecord, ReorderedRecords, LocalClasses, LocalClassRunsCode,
             LoggingQueries, DictMerges, IteratorOfModules]
    out = {cls.__name__: (cls(), (x,)) for cls in plain}
    out["RaisesWithoutInputs"] = (RaisesWithoutInputs(), (torch.tensor([[1, 2, 3]]),))
    out["ModuleInForward"] = (ModuleInForward(), (x,))
    out["ExecFunction"] = (ExecFunction(), (x,))
    out["ExecBranch"] = (ExecBranch(), (x,))
    out["Packed"] = (Packed(), (torch.randn(3, 3, 4),))
    out["InputWritten"] = (InputWritten(), (torch.randn(3, 4),))
    out["RaiseInDataLoop"] = (RaiseInDataLoop(), (x, torch.randn(3, 4)))
    return out
