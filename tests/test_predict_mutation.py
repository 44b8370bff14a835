"""Dicts and lists changed where the prediction cannot tell how: never a silent claim.

A key or index the data decides, or a write under a branch (or a loop count) the prediction
cannot decide, leaves the container's contents unknown: what reads them later (``in``,
``len``, iteration, an item) is then unknown too, so the prediction says so (a layer that
may not run, or a gap) instead of claiming what it cannot know. Each model runs with data
that takes either side; the rule checked is the prediction's first promise: no gap and no
note means the capture agrees.
"""

from __future__ import annotations

import functools

import pytest
import torch
from torch import nn

import torchlens as tl


def _pick(x):
    return "a" if x.sum() > 0 else "b"


class _ReadsA(nn.Module):
    """Runs ``relu`` when key ``a`` is still in the dict that ``change`` changed."""

    def forward(self, x):
        d = {"a": 1, "b": 2}
        self.change(d, x)
        if "a" in d:
            x = torch.relu(x)
        return x


class DelDataKey(_ReadsA):
    def change(self, d, x):
        del d[_pick(x)]


class PopDataKey(_ReadsA):
    def change(self, d, x):
        d.pop(_pick(x))


class DelInBranch(_ReadsA):
    def change(self, d, x):
        if x.sum() > 0:
            del d["a"]


class PopInBranch(_ReadsA):
    def change(self, d, x):
        if x.sum() > 0:
            d.pop("a")


class ClearInBranch(_ReadsA):
    def change(self, d, x):
        if x.sum() > 0:
            d.clear()


class UpdateByData(_ReadsA):
    def change(self, d, x):
        d.clear()
        d.update({"a": 1} if x.sum() > 0 else {})


class SetInBranch(nn.Module):
    def forward(self, x):
        d = {}
        if x.sum() > 0:
            d["a"] = 1
        if "a" in d:
            x = torch.relu(x)
        return x


class LenAfterBranch(nn.Module):
    def forward(self, x):
        d = {"a": x}
        if x.sum() > 0:
            d["b"] = x
        for _ in range(len(d)):
            x = torch.tanh(x)
        return x


class IterDataKeys(nn.Module):
    def forward(self, x):
        d = {}
        d[_pick(x)] = x
        d["c"] = x
        for key in d:
            x = torch.tanh(x)
        return x


class ListPopInBranch(nn.Module):
    def forward(self, x):
        xs = [x]
        if x.sum() > 0:
            xs.pop()
        if xs:
            x = torch.relu(x)
        return x


class ListSetDataIndex(nn.Module):
    def forward(self, x):
        xs = [x, x * 2]
        xs[0 if x.sum() > 0 else 1] = torch.zeros_like(x)
        return xs[0] + 1


MODELS = [DelDataKey, PopDataKey, DelInBranch, PopInBranch, ClearInBranch, UpdateByData, SetInBranch, LenAfterBranch,
          IterDataKeys, ListPopInBranch, ListSetDataIndex]


@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("cls", MODELS, ids=lambda cls: cls.__name__)
def test_no_gap_and_no_note_means_the_capture_agrees(cls, sign):
    x = torch.full((3,), sign)
    pred = tl.predict(cls(), x)
    report = tl.trace(cls(), x).check_prediction(pred)
    assert report.ok or pred.gaps or pred.notes, (str(pred), str(report))


class DecidedChanges(nn.Module):
    """Changes the prediction can follow: known keys, no undecided branch."""

    def forward(self, x):
        d = {"a": 1, "b": 2, "c": 3}
        del d["a"]
        d.pop("b")
        d.update({"e": 5})
        d["f"] = 6
        xs = [x, x]
        xs.pop()
        xs[0] = torch.relu(xs[0])
        for _ in d:
            x = torch.tanh(x)
        if "a" not in d and xs:
            x = x + xs[0]
        return x


def test_decided_changes_stay_exact():
    x = torch.ones(3)
    pred = tl.predict(DecidedChanges(), x)
    report = tl.trace(DecidedChanges(), x).check_prediction(pred)
    assert not pred.gaps and not pred.notes and report.ok and report.coverage == 1.0, str(report)
    assert pred["tanh_1"].num_passes == 3


class _Registry(dict):
    """A dict subclass reading itself through ``dict``'s own methods (transformers' output registry)."""

    def get(self, key):
        return super().get(str(key)) or dict.get(self, "default", {})


_REGISTRY = _Registry({"flags": {"cross": True}})


class ReadsRegistry(nn.Module):
    def forward(self, x):
        if "cross" in _REGISTRY.get("flags"):
            x = torch.relu(x)
        return x


class SetRegistry(nn.Module):
    def forward(self, x):
        seen = {1, 2}
        set.difference_update(seen, {1})
        if 1 in seen:
            x = torch.relu(x)
        return x


def test_dict_methods_called_through_their_class_are_read():
    """``super().get(k)`` and ``dict.get(d, k)`` read the live dict (no side effect), decide
    what follows, and leave it as it was; ``set.difference_update`` is modelled, never run."""
    for cls in (ReadsRegistry, SetRegistry):
        x = torch.ones(2)
        pred = tl.predict(cls(), x)
        report = tl.trace(cls(), x).check_prediction(pred)
        assert report.ok or pred.gaps or pred.notes, str(report)
    assert tl.predict(ReadsRegistry(), torch.ones(2))["relu_1"].num_passes == 1
    assert _REGISTRY == {"flags": {"cross": True}}


class NamedByFString(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc0, self.fc1 = nn.Linear(2, 2), nn.Linear(2, 2)

    def forward(self, x, **kwargs):
        flags = {f"output_{k}": kwargs.get(f"output_{k}", False) for k in ("a", "b")}
        for i in range(2):
            x = getattr(self, f"fc{i}")(x)
        if flags[f"output_{'b'!s:>1}"]:
            x = torch.relu(x)
        return x


@pytest.mark.parametrize("flag", [False, True])
def test_f_strings_of_known_values_are_known(flag):
    """An f-string of plain known values is its text: names built with it resolve."""
    x = torch.ones(2)
    pred = tl.predict(NamedByFString(), x, forward_kwargs={"output_b": flag})
    report = tl.trace(NamedByFString(), x, forward_kwargs={"output_b": flag}).check_prediction(pred)
    assert not pred.gaps and not pred.notes and report.ok and report.coverage == 1.0, str(report)
    assert [layer.layer_label for layer in pred] == ["linear_1", "linear_2", *(["relu_1"] if flag else [])]


class _Flag:
    def __init__(self):
        self.on = False


class InstanceFlagInBranch(nn.Module):
    def forward(self, x):
        flag = _Flag()
        if x.sum() > 0:
            flag.on = True
        if flag.on:
            x = torch.relu(x)
        return x


class ModuleFlagInBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.on = False

    def forward(self, x):
        self.on = False
        if x.sum() > 0:
            self.on = True
        if self.on:
            x = torch.relu(x)
        return x


class NonlocalCounter(nn.Module):
    def forward(self, x):
        n = 0

        def bump():
            nonlocal n
            n += 1

        if x.sum() > 0:
            bump()
        bump()
        if n == 2:
            x = torch.relu(x)
        return x


_CALLS = 0


class GlobalCounter(nn.Module):
    def forward(self, x):
        global _CALLS
        _CALLS = 1
        if _CALLS == 1:
            x = torch.relu(x)
        return x


class SetInBranchAdd(nn.Module):
    def forward(self, x):
        seen = set()
        if x.sum() > 0:
            seen.add(1)
        if 1 in seen:
            x = torch.relu(x)
        return x


@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("cls", [InstanceFlagInBranch, ModuleFlagInBranch, NonlocalCounter, GlobalCounter,
                                 SetInBranchAdd], ids=lambda cls: cls.__name__)
def test_state_written_where_it_cannot_tell_is_not_claimed(cls, sign):
    """Attributes written under an undecided branch may keep their old value; a closure's
    ``nonlocal`` writes reach the enclosing function; a ``global`` write is a gap (the live
    module is never written); a set method it does not model leaves the set unknown."""
    x = torch.full((3,), sign)
    pred = tl.predict(cls(), x)
    report = tl.trace(cls(), x).check_prediction(pred)
    assert report.ok or pred.gaps or pred.notes, (str(pred), str(report))


def test_nonlocal_writes_are_followed():
    pred = tl.predict(NonlocalCounter(), torch.ones(3))
    assert pred["relu_1"].count.lo == 0 and pred["relu_1"].count.hi == 1  # n is 1 or 2: undecided
    assert "relu_1" not in [layer.layer_label for layer in tl.predict(_NonlocalOnce(), torch.ones(3))]


class _NonlocalOnce(nn.Module):
    def forward(self, x):
        n = 0

        def bump():
            nonlocal n
            n += 1

        bump()
        if n == 0:
            x = torch.relu(x)
        return x


class DeletesAttribute(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 2.0

    def forward(self, x):
        del self.scale
        if hasattr(self, "scale"):
            x = torch.relu(x)
        return x


def test_deleting_a_live_attribute_is_a_gap():
    pred = tl.predict(DeletesAttribute(), torch.ones(2))
    assert any("del of attribute scale" in gap.why for gap in pred.gaps)


class _Holds:
    def __init__(self, x):
        self.x = x

    def __enter__(self):
        return functools.reduce(torch.mul, self.x).expand(2, 4)

    def __exit__(self, *exc):
        return False


class MadeInUndecidedLoop(nn.Module):
    """Found by the fuzz campaign: an object made in a loop the prediction does not unroll
    sets its attribute in ``__init__``; that attribute had no value before, so reading it
    gives what was written (it was joined with "unset" and the rows ``reduce`` iterates were
    lost, with no gap)."""

    def forward(self, x):
        c0 = torch.zeros(())
        while c0.sum() < 1:
            with _Holds(x) as x:
                pass
            c0 = c0 + 1.0
        return x


def test_an_attribute_first_set_under_an_undecided_loop_is_what_was_written():
    x = torch.randn(2, 4)
    pred = tl.predict(MadeInUndecidedLoop(), x)
    report = tl.trace(MadeInUndecidedLoop(), x).check_prediction(pred)
    assert report.ok and not pred.gaps, str(report)
