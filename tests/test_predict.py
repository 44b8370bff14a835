"""``tl.predict`` against ``tl.trace``: the static prediction equals the capture.

Every Cases-table model (``tests/models/table.py``): the predicted compute layers have the
runtime labels, func names and, wherever the prediction says the count is static, the
runtime pass counts; the check report is empty (only layers the prediction itself marks
optional, on a branch it could not decide, may stay unexecuted). Real code (torch's
attention, encoder layer and LSTM; tiny GPT-2 and BERT when ``transformers`` is installed)
must reach 95% coverage with every miss listed with a reason.
"""

from __future__ import annotations

import json
import linecache
import re
import sys

import pytest
import torch
from torch import nn

import torchlens as tl
from torchlens.analysis.errors import PredictionError, SourceUnavailableError, TorchLensTypeError
from torchlens.analysis.predict import predict_source
from torchlens.predict import runtime_key
from torchlens.torch_host import TorchHost
from models import cases as C
from models.runs import remember_runs
from models.table import ALL, build, compute_layers

#: Cases whose code the prediction cannot read, and the reason every miss must give (3.11+
#: reads exec-built straight-line code from its bytecode).
NO_SOURCE = {} if sys.version_info >= (3, 11) else {"exec-function-loop": "no source for '<string>'"}


def predicted_summary(pred) -> list[tuple[str, str, object]]:
    return [(p.layer_label, p.func_name, p.num_passes) for p in pred if not p.optional]


@pytest.mark.parametrize("name", list(ALL))
def test_prediction_equals_capture(name: str):
    case = ALL[name]
    model, inputs = build(case)
    pred = tl.predict(model, *inputs)
    trace = tl.trace(model, *inputs)
    report = trace.check_prediction(pred)
    if name in NO_SOURCE:
        assert report.unpredicted and all(NO_SOURCE[name] in miss.reason for miss in report.unpredicted)
        return
    assert report.ok, str(report)
    assert not report.unpredicted and not report.mismatched, str(report)
    assert all(label in report.optional and why.startswith("optional: ") for label, why in report.unexecuted), \
        str(report)
    assert report.coverage == 1.0
    runtime = {(layer.layer_label, layer.func_name): layer.num_passes for layer in compute_layers(trace)}
    for label, func, passes in predicted_summary(pred):
        assert (label, func) in runtime, (label, func, str(pred))
        if passes is not None:
            assert runtime[(label, func)] == passes, (label, str(pred))
    predicted, actual = predicted_parents(pred), runtime_parents(trace, pred)
    assert all(predicted[label] <= actual[label] for label in predicted), (name, predicted, actual)  # no false edge
    if name not in LOST_EDGES:
        assert predicted == actual, name
    assert pred.inputs == trace.input_layers, (pred.inputs, trace.input_layers)
    if pred.outputs:  # each output as the capture numbers them, from the layer the prediction says
        assert len(pred.outputs) == len(trace.output_layers), (pred.outputs, trace.output_layers)
        for label, output in zip(pred.outputs, trace.output_layers):
            assert [p.rpartition(":")[0] or p for p in trace[output].ops[0].parents] == [label], (label, output)


#: Cases whose predicted dataflow lacks runtime edges (never has false ones), and why.
LOST_EDGES = {
    "while-tensor-condition": "a loop it does not unroll runs its body once: no loop-carried edges",
    "checkpoint-two-lines": "the second checkpoint's input comes back through torch's generator: producer lost",
}


def runtime_parents(trace, pred) -> dict[str, set[str]]:
    """Each runtime compute layer's compute and input parents (layers whose outputs its ops read)."""
    compute = {layer.layer_label for layer in compute_layers(trace)} | set(trace.input_layers)
    return {layer.layer_label: {p.rpartition(":")[0] or p for op in layer.ops for p in op.parents} & compute
            for layer in compute_layers(trace) if pred.find(runtime_key(layer)) is not None}


def predicted_parents(pred) -> dict[str, set[str]]:
    return {layer.layer_label: set(layer.parents) for layer in pred if not layer.optional}


@pytest.mark.parametrize("name", [n for n, c in ALL.items() if c.layers is not None and n not in NO_SOURCE])
def test_prediction_matches_the_spec_table(name: str):
    """Where the table's pass counts are static, the prediction states them exactly."""
    case = ALL[name]
    model, inputs = build(case)
    pred = tl.predict(model, *inputs)
    exact = [(p.layer_label, p.num_passes) for p in pred]
    if all(passes is not None for _, passes in exact):
        assert exact == case.layers, str(pred)
    else:
        assert [label for label, _ in exact] == [label for label, _ in case.layers], str(pred)


def test_while_condition_passes_are_symbolic():
    pred = tl.predict(C.WhileTensorCondition(), torch.zeros(2, 2))
    assert [(p.layer_label, str(p.count)) for p in pred] == [("sum_1", "N+1"), ("lt_1", "N+1"), ("add_1", "N")]
    assert pred["sum_1"].num_passes is None and "while" in pred["sum_1"].passes_note
    assert tl.predict(C.LoopTanhMul())["tanh_1"].num_passes == 3
    assert pred["add_1"].count.admits(3) and not pred["sum_1"].count.admits(0)


def test_prediction_table_and_lookup():
    pred = tl.predict(C.ResidualBlockLoop())
    text = str(pred)
    assert "linear_1" in text and "block.f1" in text and "cases.py" in text
    assert pred["add_2"].module == "block" and pred["add_2"].num_passes == 3
    with pytest.raises(tl.TorchLensError):
        pred["nope_1"]


def test_check_prediction_keyword_gives_the_report():
    model, x = C.BlockLoop(), torch.randn(2, 4)
    trace = tl.trace(model, x, check_prediction=True)
    assert trace.prediction.ok and trace.prediction.coverage == 1.0
    assert trace.prediction.trace == trace and trace["tanh_1:2"] is trace.ops["tanh_1:2"]  # the records checked
    assert tl.trace(model, x).prediction is None


def test_report_lists_a_layer_the_prediction_did_not_see():
    """A hook added after predicting runs ops the prediction never saw: reported, not hidden."""
    model, x = C.LoopTanh(), torch.randn(2, 4)
    pred = tl.predict(model)
    handle = model.register_forward_hook(C.tanh_hook)
    try:
        report = tl.trace(model, x).check_prediction(pred)
    finally:
        handle.remove()
    assert not report.ok and [m.func_name for m in report.unpredicted] == ["tanh"]
    assert report.coverage == pytest.approx(3 / 4)


def test_unexecuted_branch_is_reported():
    class Branchy(nn.Module):
        def forward(self, x, flag):
            if flag:
                x = torch.relu(x)
            return torch.tanh(x)

    pred = tl.predict(Branchy(), torch.randn(2), True)
    report = tl.trace(Branchy(), torch.randn(2), False).check_prediction(pred)
    assert [label for label, _ in report.unexecuted] == ["relu_1"]
    assert report.optional == frozenset()  # the prediction said relu runs for these inputs
    assert not report.ok


def test_prediction_from_class_equals_instance():
    for model in (C.ResidualBlockList(), C.SharedByTwoParents(), C.SumOverHeads(), C.IdenticalModuleList()):
        by_class = [(p.layer_label, p.module, str(p.count)) for p in tl.predict(type(model))]
        assert by_class == [(p.layer_label, p.module, str(p.count)) for p in tl.predict(model)]
        types = {name or "self": type(m).__name__ for name, m in model.named_modules()}
        assert tl.predict(type(model)).module_types == types == tl.predict(model).module_types


def test_predict_source_reads_a_file():
    pred = predict_source(C.__file__, "Looped", host=TorchHost(None))
    assert [(p.layer_label, p.num_passes) for p in pred] == [("tanh_1", 2), ("mul_1", 2)]
    with pytest.raises(SourceUnavailableError):
        predict_source("/no/such/file.py", "X", host=TorchHost(None))
    with pytest.raises(PredictionError):
        predict_source(C.__file__, "NoSuchClass", host=TorchHost(None))


def test_bad_argument_is_a_typed_error():
    with pytest.raises(tl.errors.TorchLensTypeError):
        tl.predict(42)


def test_code_without_source_is_marked_not_crashed():
    """A forward built by exec without linecache, with a loop (straight-line code is read from
    its bytecode on 3.11+): its ops are unpredicted, with the reason."""
    namespace: dict = {"torch": torch, "nn": nn}
    exec("class Hidden(nn.Module):\n    def forward(self, x):\n        for _ in range(1):\n"
         "            x = torch.tanh(x)\n        return x\n", namespace)
    model = namespace["Hidden"]()
    assert "<string>" not in linecache.cache
    pred = tl.predict(model)
    assert len(pred) == 0 and any("no source" in gap.why for gap in pred.gaps)
    report = tl.trace(model, torch.randn(2)).check_prediction(pred)
    assert [m.func_name for m in report.unpredicted] == ["tanh"] and "no source" in report.unpredicted[0].reason


# --- real code --------------------------------------------------------------------------------


def real_models():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8)
    seq, mem = torch.randn(5, 2, 8), torch.randn(7, 2, 8)
    yield "MultiheadAttention", nn.MultiheadAttention(8, 2, batch_first=True).eval(), (x, x, x)
    yield "TransformerEncoderLayer", nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).eval(), (x,)
    yield "LSTM", nn.LSTM(3, 5, num_layers=2, batch_first=True), (torch.randn(2, 4, 3),)
    yield "Transformer", nn.Transformer(8, 2, 1, 1, 16).eval(), (mem, seq)
    yield "TransformerDecoderLayer", nn.TransformerDecoderLayer(8, 2, 16).eval(), (seq, mem)


@pytest.mark.parametrize("name", ["Transformer", "TransformerDecoderLayer"])
def test_shapes_make_cross_attention_exact(name: str):
    """Cross attention asks ``q is k`` of a computed tensor and an input, and reshapes by sizes
    it reads: with shapes carried through the run (fake tensors) both are decided."""
    model, inputs = next((m, i) for n, m, i in real_models() if n == name)
    pred = tl.predict(model, *inputs)
    report = tl.trace(model, *inputs).check_prediction(pred)
    assert report.ok and report.coverage == 1.0 and not pred.gaps and not pred.notes, str(report)


class ShapeDriven(nn.Module):
    """Counts, branches and loops that only the input's shape decides."""

    def forward(self, x):
        total = sum(part.tanh() for part in x.chunk(x.shape[0]))
        for row in x:  # a tensor's __iter__: unbind(0), one layer per output
            total = total + row
        a, b = x[:2]
        if x.shape[-1] > 3:
            total = total.relu()
        else:
            total = total.sigmoid()
        for _ in range(x.size(1)):
            total = total * 2
        return total + a + b + x.float().sum(), len(x)


def test_shapes_decide_counts_branches_and_loops():
    model, x = ShapeDriven(), torch.randn(3, 4)
    pred = tl.predict(model, x)
    report = tl.trace(model, x).check_prediction(pred)
    assert report.ok and report.coverage == 1.0 and not report.unexecuted and not pred.gaps and not pred.notes, \
        str(report)
    assert pred["tanh_1"].num_passes == 3 and pred["mul_1"].num_passes == 4
    assert [layer.func_name for layer in pred].count("unbind") == 5  # 3 rows, then a, b
    assert "sigmoid" not in [layer.func_name for layer in pred]


def transformers_models():
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    ids = torch.randint(0, 50, (1, 5))
    gpt2 = transformers.GPT2Model(transformers.GPT2Config(
        n_layer=2, n_embd=16, n_head=2, vocab_size=50, n_positions=16, bos_token_id=0, eos_token_id=0))
    bert = transformers.BertModel(transformers.BertConfig(
        num_hidden_layers=2, hidden_size=16, num_attention_heads=2, intermediate_size=32, vocab_size=50))
    return [("GPT2", gpt2.eval(), (ids,)), ("BERT", bert.eval(), (ids,))]


def check_real(model, inputs):
    pred = tl.predict(model, *inputs)
    report = tl.trace(model, *inputs).check_prediction(pred)
    assert report.ok and report.coverage == 1.0, str(report)
    return report


@pytest.mark.parametrize("name", ["MultiheadAttention", "TransformerEncoderLayer", "LSTM"])
def test_real_torch_modules(name: str):
    model, inputs = next((m, i) for n, m, i in real_models() if n == name)
    check_real(model, inputs)


@pytest.mark.parametrize("name", ["GPT2", "BERT"])
def test_tiny_transformers(name: str):
    model, inputs = next((m, i) for n, m, i in transformers_models() if n == name)
    check_real(model, inputs)


class OperatorZoo(nn.Module):
    """Every operator: the capture names some differently from their dunder (``/`` is ``div``)."""

    def forward(self, x):
        y = x + 1; y = x - 1; y = x * 2; y = x / 2; y = x // 2; y = x % 2; y = x ** 2; y = x @ x.T  # noqa: E702
        y = -x; y = +x; y = ~(x > 0); y = (x > 0) & (x > 0); y = (x > 0) | (x > 0)  # noqa: E702
        y = 1 + x; y = 1 - x; y = 2 * x; y = 2 / x; y = 2 ** x; y = 2 // x; y = 2 % x  # noqa: E702
        y = x < 1; y = x <= 1; y = x >= 1; y = x == 1; y = x != 1; y = abs(x)  # noqa: E702
        z = x.clone()
        z += 1
        z -= 1
        z *= 2
        z /= 2
        z[0] = 1
        return y + z


def test_operator_names_match_the_capture():
    model, x = OperatorZoo(), torch.randn(3, 3)
    report = tl.trace(model, x).check_prediction(tl.predict(model, x))
    assert report.ok and report.coverage == 1.0 and not report.unexecuted, str(report)


class NestedInputs(nn.Module):
    def forward(self, pair, scale, extra=None, *, table):
        a, b = pair
        return [torch.relu(a) * scale, b + table["w"]], {"same": torch.tanh(table["again"])}


class ObjectInput(nn.Module):
    def forward(self, box, x):
        return x + box.t


@pytest.mark.parametrize("shared", [False, True])
def test_predicted_inputs_and_outputs_are_the_capture_s(shared):
    """The forward's tensor leaves are numbered as the capture numbers its input layers (into
    lists, tuples and dicts; a tensor given twice is one input), and each returned tensor
    is the layer the capture's output layer takes."""
    a, b, w = torch.randn(2), torch.randn(2), torch.randn(2)
    table = {"w": w, "again": a if shared else torch.randn(2)}
    model, args, kwargs = NestedInputs(), ((a, b), 2.0), {"table": table}
    pred, trace = tl.predict(model, *args, forward_kwargs=kwargs), tl.trace(model, *args, forward_kwargs=kwargs)
    assert trace.check_prediction(pred).ok
    assert pred.inputs == trace.input_layers == tuple(f"input_{n}" for n in range(1, 4 if shared else 5))
    assert len(pred.outputs) == len(trace.output_layers) == 3
    for label, output in zip(pred.outputs, trace.output_layers):
        assert [p.rpartition(":")[0] for p in trace[output].ops[0].parents] == [label]
    assert set(pred["tanh_1"].parents) == {"input_1" if shared else "input_4"}
    assert set(pred["add_1"].parents) == {"input_2", "input_3"}


def test_inputs_are_not_numbered_past_an_object_argument():
    """An object may hold tensors the capture numbers first: no input is claimed."""
    box = type("Box", (), {"t": torch.randn(2)})()
    pred = tl.predict(ObjectInput(), box, torch.randn(2))
    assert pred.inputs == () and pred["add_1"].parents == ()


# --- the prediction's drawing ---------------------------------------------------------------


def test_prediction_drawing_has_dataflow_edges_and_folds_like_the_table(tmp_path, capsys):
    pred = tl.predict(C.ResidualBlockList())
    full = pred.draw().source
    edges = {line.strip() for line in full.splitlines() if "->" in line and "invis" not in line}
    for layer in pred:
        for parent in layer.parents:
            assert f'"{parent}" -> "{layer.layer_label}"' in edges, (parent, layer.layer_label)
    assert edges and "style=invis" not in full
    assert pred.inputs == ("input_1",) and len(pred.outputs) == 1
    assert f'"{pred.outputs[0]}" -> "output_1"' in edges and '"input_1" [' in full and '"output_1" [' in full
    assert 'label="blocks.0 (ResidualBlock)"' in full  # a module's box: its name and class
    folded = pred.draw(depth=0).source
    assert '"[blocks.0]" [label="blocks.0\\nResidualBlock\\n' in folded
    assert '"[blocks.0]"' in folded and '"[blocks.0]" -> "[blocks.1]"' in folded
    assert not any(f'"{layer.layer_label}" [' in folded for layer in pred if layer.module != "self")
    assert pred.draw(collapse=["blocks.1"]).source.count('"[blocks.1]" [') == 1
    assert pred.draw(collapse=lambda address: address == "blocks.2").source.count('"[blocks.2]" [') == 1
    with pytest.raises(tl.errors.TorchLensValueError):
        pred.draw(depth=-1)
    from torchlens.cli import main
    assert main(["draw", f"{C.__file__}:ResidualBlockList", "--depth", "0", "-o", str(tmp_path / "p.dot")]) == 0
    assert '"[blocks.0]"' in (tmp_path / "p.dot").read_text()


def drawn_edges(drawing, nodes) -> dict:
    """``(tail, head) -> (label, drawn back)`` of a drawing's edges between ``nodes``."""
    edges = {}
    for tail, head, attrs in re.findall(r'^\t"([^"]+)" -> "([^"]+)"(?: \[(.*)\])?$', drawing.source, re.M):
        if tail in nodes and head in nodes and "invis" not in attrs:
            found = dict(re.findall(r'(\w+)="([^"]*)"', attrs))
            edges[(tail, head)] = (found.get("label", ""), found.get("constraint") == "false")
    return edges


@pytest.mark.parametrize("name", ["scalar-mul-loop", "loop-tanh-mul", "spec-looped", "nested-loops-2x3",
                                  "branch-some-iterations", "break-partway", "helper-two-loops"])
def test_prediction_drawing_of_an_unrolled_loop_has_the_traces_edges_back(name):
    """A loop the prediction unrolls: the value one pass hands to the next is an edge back,
    labelled with the passes it carries, as the trace's drawing has it."""
    model, x = build(ALL[name])
    layers = [layer.layer_label for layer in compute_layers(tl.trace(model, *x))]
    traced = drawn_edges(tl.trace(model, *x).draw(), layers)
    assert any(back for _, back in traced.values())
    assert drawn_edges(tl.predict(model).draw(), layers) == traced


def test_prediction_drawing_of_a_loop_it_does_not_unroll_has_the_edges_back():
    """``while x.sum() < 10: x = x + 1``: the test's passes are ``N+1``, the body's ``N``; the
    ``add`` of one pass feeds the next pass's ``sum`` and ``add``: edges back labelled ``loop``,
    where the trace draws them back with the passes it counted."""
    model, x = build(ALL["while-tensor-condition"])
    pred = tl.predict(model)
    assert {layer.layer_label: layer.carried for layer in pred} == {"sum_1": ("add_1",), "lt_1": (),
                                                                    "add_1": ("add_1",)}
    layers = ["sum_1", "lt_1", "add_1"]
    predicted = drawn_edges(pred.draw(), layers)
    assert predicted == {("sum_1", "lt_1"): ("", False), ("add_1", "sum_1"): ("loop", True),
                         ("add_1", "add_1"): ("loop", True)}
    traced = drawn_edges(tl.trace(model, *x).draw(), layers)
    assert traced == {("sum_1", "lt_1"): ("", False), ("add_1", "sum_1"): ("to 2-4", True),
                      ("add_1", "add_1"): ("1-2", True)}


class _CollectInWhile(nn.Module):
    def forward(self, x):
        outs, i = [], 0
        while i < 3:  # a static test: unrolled
            outs.append(x)
            x = torch.tanh(x) + 1.0
            i += 1
        return torch.stack(outs)


class _RecurOverLength(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        h = x[:, 0]
        for t in range(x.shape[1]):  # no static length: one pass stands for all
            h = torch.tanh(self.lin(x[:, t]) + h)
        return h


def test_loop_carried_edges_of_a_for_of_unknown_length_and_a_value_kept_past_its_pass():
    """The ``for`` over ``range(x.shape[1])``: ``tanh`` hands ``h`` to the next pass's ``add``
    (``loop``); a loop value kept in a list still has its real producer (``stack`` after ``add``)."""
    pred = tl.predict(_RecurOverLength())
    assert pred["add_1"].carried == ("tanh_1",)
    assert drawn_edges(pred.draw(), ["add_1", "tanh_1"]) == {("add_1", "tanh_1"): ("", False),
                                                             ("tanh_1", "add_1"): ("loop", True)}
    model, x = _CollectInWhile(), torch.randn(2, 3)
    layers = ["tanh_1", "add_1", "stack_1"]
    predicted = drawn_edges(tl.predict(model).draw(), layers)
    assert predicted == drawn_edges(tl.trace(model, x).draw(), layers)
    assert predicted[("add_1", "stack_1")] == ("1-2", False) and predicted[("add_1", "tanh_1")] == ("1-2", True)


def test_json_carries_the_predicted_dataflow_and_survives_a_round_trip():
    """``to_json`` holds every dataflow field (``parents``, ``carried``, ``pass_links``) and
    reads back from JSON text unchanged: unrolled passes as ``[parent, pass, pass]`` lists, a
    loop that is not unrolled as ``null``."""
    unrolled, rolled = tl.predict(_CollectInWhile()).to_json(), tl.predict(_RecurOverLength()).to_json()
    for data in (unrolled, rolled):
        assert json.loads(json.dumps(data)) == data
    add = next(layer for layer in unrolled["layers"] if layer["label"] == "add_1")
    assert add["parents"] == ["tanh_1"] and add["carried"] == []
    assert add["pass_links"] == [["tanh_1", 1, 1], ["tanh_1", 2, 2], ["tanh_1", 3, 3]]
    tanh = next(layer for layer in rolled["layers"] if layer["label"] == "tanh_1")
    add = next(layer for layer in rolled["layers"] if layer["label"] == "add_1")
    assert add["carried"] == ["tanh_1"] and add["pass_links"] is None and tanh["carried"] == []


def test_predict_takes_forward_kwargs_as_trace_does():
    class Scaled(nn.Module):
        def forward(self, x, scale=1.0, bias=None):
            return x * scale if bias is None else torch.tanh(x * scale + bias)

    kwargs = {"scale": 3.0, "bias": torch.ones(2)}
    pred = tl.predict(Scaled(), torch.ones(2), forward_kwargs=kwargs)
    assert [layer.func_name for layer in pred.layers] == ["mul", "add", "tanh"]
    assert tl.trace(Scaled(), torch.ones(2), forward_kwargs=kwargs).check_prediction(pred).ok
    assert [layer.func_name for layer in tl.predict(Scaled(), torch.ones(2)).layers] == ["mul"]
    with pytest.raises(TorchLensTypeError, match="forward_kwargs"):
        tl.predict(Scaled(), torch.ones(2), forward_kwargs=[("scale", 3.0)])


class _IterAtTheBuiltinsCall(nn.Module):
    def forward(self, x):
        x = torch.stack(list(map(torch.tanh, x)))  # iter(x) runs at map(...), tanh at list(...)
        x = torch.stack([a + b for a, b in zip(x, torch.sin(x))])
        return torch.stack([r * k for k, r in enumerate(x)])


def test_map_zip_enumerate_take_their_sources_iterator_at_their_own_call():
    """As in CPython, ``map``/``zip``/``enumerate`` call ``iter()`` of a tensor source when they
    are called: its ``unbind`` sits at the builtin's call, not where the result is consumed
    (found by the fuzz campaign: ``torch.stack(list(map(torch.tanh, x)))``)."""
    model, x = _IterAtTheBuiltinsCall(), torch.randn(2, 4)
    pred = tl.predict(model, x)
    report = tl.trace(model, x).check_prediction(pred)
    assert not pred.gaps and not pred.notes and report.ok, report


class _WhileThatCanOnlyRaise(nn.Module):
    def forward(self, x):
        c = torch.zeros(())
        while c.sum() < 0:  # a test the prediction cannot decide
            x = torch.tanh(x)
            raise ValueError("never reached: the test is false")
        return x - 1.0


def test_a_while_whose_body_can_only_raise_is_taken_as_not_run():
    """Like a branch arm that can only raise, such a body is predicted not to run: the ops after
    the loop are predicted (found by the fuzz campaign: they were dropped with no gap)."""
    model, x = _WhileThatCanOnlyRaise(), torch.randn(2, 4)
    pred = tl.predict(model, x)
    report = tl.trace(model, x).check_prediction(pred)
    assert [(layer.layer_label, str(layer.count)) for layer in pred] == [
        ("zeros_1", "1"), ("sum_1", "1"), ("lt_1", "1"), ("sub_1", "1")]
    assert not pred.gaps and not pred.notes and report.ok, report


class _Suppress:
    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        return kind is KeyError


class _RaiseInWith(nn.Module):
    def forward(self, x):
        with _Suppress():
            c = x.sum() * 0  # contents the prediction cannot know (of zeros it would decide the test)
            while c.sum() < 1:  # true at runtime: the raise runs, __exit__ suppresses it
                raise KeyError("leave the with")
            x = torch.tanh(x)  # so this never runs
        return x - 1.0


class _RaiseThroughWith(nn.Module):
    def forward(self, x):
        c = torch.zeros(())
        while c.sum() < 1:  # runs once: the raise is suppressed, the step runs
            with _Suppress():
                raise KeyError("leave the with")
            c = c + 1.0
        return x - 1.0


@pytest.mark.parametrize("model, said", [
    # ``__exit__`` may suppress the exception, so "the model does not raise" is no longer a safe guess
    (_RaiseInWith, "predicted as not raising where it may"),
    # whether ``__exit__`` suppresses it is not followed (the loop was predicted not to run, silently)
    (_RaiseThroughWith, "if __exit__ suppresses it the ops after the with run"),
])
def test_a_raise_in_a_with_body_is_a_note(model, said):
    """Found by the fuzz campaign: both were wrong with no gap and no note."""
    x = torch.randn(2, 4)
    pred = tl.predict(model(), x)
    assert not tl.trace(model(), x).check_prediction(pred).ok
    assert any(said in note for note in pred.notes), pred.notes


class _Tanh(nn.Module):
    def forward(self, x):
        return torch.tanh(x)


class FirstPassMayNotRun(nn.Module):
    """Found by the fuzz campaign: ``par.tanh``'s first pass is in a ``while`` that may not run."""

    def __init__(self):
        super().__init__()
        self.par = _Tanh()

    def forward(self, x):
        c = torch.zeros(())
        while c.sum() < 0:
            x = self.par(x)
            c = c + 1.0
        x = torch.tanh(x)
        return self.par(x)


class LastPassMayNotRunEither(nn.Module):
    """The campaign's second find: every pass of ``par.tanh`` is under an undecided ``while``."""

    def __init__(self):
        super().__init__()
        self.par = _Tanh()

    def forward(self, x):
        c0 = torch.zeros(())
        while c0.sum() < 1:
            c1 = torch.zeros(())
            while c1.sum() < 0:
                x = self.par(x)
                c1 = c1 + 1.0
            x = torch.tanh(x)
            x = self.par(x)
            c0 = c0 + 1.0
        return x


@pytest.mark.parametrize("model", [FirstPassMayNotRun, LastPassMayNotRunEither])
def test_labels_that_hang_on_a_pass_that_may_not_run_are_a_note_not_a_claim(model):
    model, x = model(), torch.randn(2, 4)
    pred = tl.predict(model, x)
    assert [layer.layer_label for layer in pred.layers if layer.func_name == "tanh"] == ["tanh_1", "tanh_2"]
    assert any(note.startswith("labels tanh_1, tanh_2 depend on whether tanh_1's first pass runs (while at line")
               for note in pred.notes)
    report = tl.trace(model, x).check_prediction(pred)
    assert not report.ok and {m.layer_label for m in report.mismatched} == {"tanh_1", "tanh_2"}


class PoolsByFlag(nn.Module):
    """Functions ``torch.nn.functional`` builds with ``boolean_dispatch`` (a wrapper that picks
    one of two functions by ``return_indices``): the capture records the op in the one picked."""

    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        x = self.pool(x)
        x = torch.nn.functional.max_pool2d(x, 2, return_indices=True)[0]
        x = torch.nn.functional.adaptive_max_pool2d(x, 1)
        return torch.nn.functional.max_pool1d(x.flatten(2), 1)


class AssertsAndSymMax(nn.Module):
    """``torch._assert`` and ``torch.sym_max`` call the torch-function check through
    ``torch.overrides`` but return no tensor: the capture records no op for them."""

    def forward(self, x):
        torch._assert(x.dim() == 2, "2-d input")
        return torch.relu(x) * torch.sym_max(x.shape[0], 1)


@pytest.mark.parametrize("cls, shape", [(PoolsByFlag, (1, 2, 8, 8)), (AssertsAndSymMax, (2, 3))],
                         ids=["boolean-dispatch", "no-tensor-returned"])
def test_torch_python_is_predicted_as_the_capture_records_it(cls, shape):
    """A ``boolean_dispatch`` wrapper is followed into the function it picks; torch's Python
    that returns no tensor is no op."""
    x = torch.randn(*shape)
    pred = tl.predict(cls(), x)
    report = tl.trace(cls(), x).check_prediction(pred)
    assert report.ok and report.coverage == 1.0 and not pred.gaps and not pred.notes, str(report)


class _CountsReads:
    """A config that runs Python for every attribute read (as transformers' configs do), and
    counts the reads of ``__class__``."""

    def __init__(self) -> None:
        self.scale, self.flag, self.class_reads = 2.0, True, 0

    def __getattribute__(self, name: str):
        if name == "__class__":
            object.__setattr__(self, "class_reads", object.__getattribute__(self, "class_reads") + 1)
        return object.__getattribute__(self, name)


class ReadsAConfig(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.config = _CountsReads()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        if self.config.flag:
            x = self.lin(x) * self.config.scale
        return x


def test_an_object_s_class_is_its_type_not_its_own_class_attribute():
    """The prediction asks what an object is (a tensor, a module, a class, a plain value) by its
    type, as CPython finds special methods, never through the object's own ``__class__``: a
    config's Python ``__getattribute__`` runs only for the attributes the model reads."""
    model, x = ReadsAConfig(), torch.randn(2, 3)
    model.config.class_reads = 0  # nn.Module.__setattr__ asks isinstance(config, Parameter)
    pred = tl.predict(model, x)
    assert model.config.class_reads == 0
    report = tl.trace(model, x).check_prediction(pred)
    assert report.ok and report.coverage == 1.0 and not pred.gaps and not pred.notes, str(report)


@pytest.mark.parametrize("from_class", [False, True])
def test_a_finished_prediction_is_freed_without_the_collector(monkeypatch: pytest.MonkeyPatch, from_class: bool):
    """``tl.predict`` of a model (with inputs) or a class leaves nothing of its run to Python's
    cyclic collector: no reference cycle keeps the run once the prediction returns. (The first
    fake mode of a process imports torch modules, one of which keeps the frames that imported
    it, the first run's among them: the run checked is the second.)"""
    import gc

    runs = remember_runs(monkeypatch)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(2):
            pred = tl.predict(nn.Sequential if from_class else model, *([] if from_class else [torch.randn(2, 4)]))
        assert len(runs) == 2 and (from_class or len(pred.layers) == 2)
        assert runs[1]() is None
    finally:
        if enabled:
            gc.enable()
