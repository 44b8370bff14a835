"""Every model the fuzzer ever found failing, kept as a permanent test.

Each ``case_*.py`` here is a shrunk generated model followed by what the oracle expects of its
trace (``EXPECTED_LAYERS``, ``EXPECTED_CALLS``), as ``python -m torchlens.fuzz`` prints it. To add one,
paste the printed file here as ``case_<what>.py``. ``XFAIL`` names a capture bug not fixed
yet (the test then must fail: strict); set it to ``None`` when the bug is fixed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

import torchlens as tl
from torchlens.fuzz.check import layer_rows

CASES = sorted(Path(__file__).parent.glob("case_*.py"))


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"regression_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _params():
    for path in CASES:
        reason = _load(path).XFAIL
        marks = (pytest.mark.xfail(reason=reason, strict=True),) if reason else ()
        yield pytest.param(path, id=path.stem, marks=marks)


@pytest.mark.parametrize("path", list(_params()))
def test_regression(path: Path):
    case = _load(path)
    generator = torch.Generator().manual_seed(1)  # the inputs fuzz.build.GeneratedModel gives
    inputs = tuple(torch.randn(2, 4, generator=generator) for _ in range(case.INPUTS))
    torch.manual_seed(0)
    untraced = case.Model()(*inputs)
    torch.manual_seed(0)
    trace = tl.trace(case.Model(), *inputs)
    assert layer_rows(trace) == [tuple(row) for row in case.EXPECTED_LAYERS]
    assert {a: m.num_calls for a, m in trace.modules.items()} == case.EXPECTED_CALLS
    torch.testing.assert_close(trace[trace.output_layers[0]].ops[0].out, untraced, rtol=0, atol=0)


def test_there_are_stored_cases():
    assert CASES, "tests/regressions holds no case_*.py"
