"""Weak references to the prediction runs made while a test patches them in (a run must be freed
when its prediction returns, without Python's cyclic collector)."""

from __future__ import annotations

import weakref
from typing import Any

from torchlens.analysis import interpreter


def remember_runs(monkeypatch: Any) -> list[weakref.ref]:
    """A list that gets a weak reference to every ``Interpreter`` made from now on in the test."""
    runs: list[weakref.ref] = []
    init = interpreter.Interpreter.__init__

    def remembered(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        runs.append(weakref.ref(self))

    monkeypatch.setattr(interpreter.Interpreter, "__init__", remembered)
    return runs
