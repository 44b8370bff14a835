"""Issue 15, point 3: caches keep no user object alive and hold a bounded amount of source."""

from __future__ import annotations

import collections
import gc
import weakref

import torch
from torch import nn

import torchlens as tl
from torchlens.analysis.caches import SOURCE_CHARS_KEPT, PerFile


def test_traced_classes_are_collected():
    refs = []
    for k in range(30):
        Pair = collections.namedtuple(f"Pair{k}", "a b")

        class Model(nn.Module):
            def forward(self, x, pair=Pair):
                return pair(x + 1, x * 2)

        trace = tl.trace(Model(), torch.ones(1))
        assert trace.reconstruct_output().a.item() == 2
        refs.append((weakref.ref(Pair), weakref.ref(Model)))
        del Pair, Model, trace
    gc.collect()
    assert [k for k, (pair, model) in enumerate(refs) if pair() is not None or model() is not None] == []


def test_the_per_file_source_cache_is_bounded_by_the_source_it_holds():
    cache: PerFile = PerFile()
    big = SOURCE_CHARS_KEPT // 4
    for k in range(10):
        cache.remember(f"big{k}.py", k, big)
    assert cache.chars <= SOURCE_CHARS_KEPT and len(cache) == 4 and list(cache)[-1] == "big9.py"
    cache.remember("huge.py", "kept anyway", 2 * SOURCE_CHARS_KEPT)
    assert list(cache) == ["huge.py"]
