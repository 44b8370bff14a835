"""``torchlens draw`` / ``torchlens trace``, the ``--input`` expression language, prediction and
check-report drawings, ``explain`` and the filtered tables."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import torchlens as tl
from models import cases as C
from torchlens.cli import main
from torchlens.tensorexpr import parse_inputs

CASES = str(Path(__file__).parents[1] / "models" / "cases.py")


def cli(capsys, *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_input_expressions_build_tensors_and_refuse_code():
    a, b = parse_inputs("randn(2, 7, 16), randint(0, 10, (2, 5))")
    assert a.shape == (2, 7, 16) and b.shape == (2, 5) and b.dtype == torch.long
    (c,) = parse_inputs("ones(3, dtype=float16)")
    assert c.dtype == torch.float16 and parse_inputs("tensor([1, -2])")[0].tolist() == [1, -2]
    for bad in ("__import__('os')", "torch.randn(2)", "randn(2).sum()", "x", "randn(2, dtype=object)", "randn("):
        with pytest.raises(tl.errors.TorchLensValueError):
            parse_inputs(bad)


def test_cli_draws_the_prediction_or_the_trace_and_prints_the_table(tmp_path, capsys):
    status, out, err = cli(capsys, "draw", f"{CASES}:Looped", "-o", str(tmp_path / "looped.dot"))
    assert status == 0, err
    assert '"tanh_1" [label="tanh_1 x2' in (tmp_path / "looped.dot").read_text()
    status, out, err = cli(capsys, "draw", f"{CASES}:ResidualBlockLoop", "--input", "randn(2, 4)", "--view",
                           "unrolled", "-o", str(tmp_path / "block.svg"))
    assert status == 0, err
    assert "cluster_block:3" in (tmp_path / "block.svg").read_text()
    status, out, err = cli(capsys, "trace", f"{CASES}:Looped", "--input", "ones(2, 4)")
    assert status == 0 and "tanh_1    tanh    2" in out
    status, out, err = cli(capsys, "trace", f"{CASES}:Looped", "--input", "open('x')")
    assert status == 2 and "not allowed" in err


def test_prediction_draws_before_running_with_symbolic_passes():
    pred = tl.predict(C.WhileTensorCondition())
    source = pred.draw().source
    assert 'label="sum_1 xN+1' in source and 'label="add_1 xN' in source
    assert "<svg" in pred._repr_mimebundle_()["image/svg+xml"]
    assert "N+1" in pred.explain("sum_1") and "while x.sum() < 10.0:" in pred.explain("sum_1")


def test_check_report_colours_the_trace_and_has_a_legend():
    model = C.WhileTensorCondition()
    report = tl.trace(model, torch.zeros(2, 2)).check_prediction(tl.predict(model))
    source = report.draw().source
    assert 'subgraph "cluster_legend"' in source and '"legend unexecuted"' in source
    line = next(line for line in source.splitlines() if line.strip().startswith('"sum_1" ['))
    assert 'fillcolor="#e3f4e1"' in line and 'color="#3c8d3c"' in line


def test_explain_two_layers_says_which_key_part_differs():
    trace = tl.trace(C.Unrolled(), torch.ones(2, 4))
    text = trace.explain("tanh_1", "tanh_2")
    assert "scope: same" in text and "op: same" in text and "call site: differs at frame 1" in text


def test_table_fits_100_columns_and_filters():
    trace = tl.trace(C.ResidualBlockList(), torch.randn(2, 4))
    text = trace.table()
    assert max(map(len, text.splitlines())) <= 100
    shallow = trace.table(depth=0)
    assert "[0]" in shallow and "linear_1" not in shallow and "4 layers inside" in shallow
    only = trace.table(module="blocks.1")
    assert "linear_3" in only and "linear_1 " not in only
    assert "more rows" in trace.table(limit=2)
    pred_table = tl.predict(C.ResidualBlockList()).table(module="blocks.2")
    assert "linear_5" in pred_table and "linear_1 " not in pred_table


def test_table_names_buffer_rows_by_address():
    trace = tl.trace(C.BufferLoop(), torch.randn(2, 4))
    address = next(iter(trace.buffers))
    assert f"{address} v1-" in trace.table()


def test_tl_trace_and_tl_predict_stay_functions_after_their_modules_are_imported():
    import importlib

    for name in ("predict", "trace"):  # what the import system does after importing a submodule
        setattr(tl, name, importlib.import_module(f"torchlens.{name}"))
    assert callable(tl.predict) and callable(tl.trace) and tl.predict.__module__ == "torchlens.predict"
