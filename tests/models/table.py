"""The Cases table of the grouping spec (``spec/grouping.txt``): each row's model, inputs and
expected grouping, shared by every suite that runs the Cases models (``tests/test_cases.py``
asserts them; prediction, saving, drawing and meta-device tests reuse them).

A case's ``layers`` is the exact ordered list of ``(layer_label, num_passes)`` over the compute
layers (every layer but inputs, outputs and buffer versions), in order of first execution; the
label fixes the ``func_name``. Where the ops are a torch implementation detail (recurrent cells,
attention, TorchScript, checkpoint) a ``check`` asserts the property the row states instead.
The models are in :mod:`models.cases`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import pytest
import torch
from torch import nn

import torchlens as tl

from . import cases as C

Summary = list[tuple[str, int]]


@dataclass(frozen=True)
class Case:
    #: Builds the model (called after ``torch.manual_seed(0)``).
    model: Callable[[], nn.Module]
    #: Builds the positional inputs, as a tuple.
    inputs: Callable[[], tuple]
    #: Exact ``(layer_label, num_passes)`` of the compute layers, in order of first execution.
    layers: Optional[Summary] = None
    #: Module address -> expected number of calls.
    modules: dict[str, int] = field(default_factory=dict)
    #: Extra property check, ``check(trace, model, inputs)``.
    check: Optional[Callable] = None
    marks: tuple = ()


def randn(*shape: int, n: int = 1) -> Callable[[], tuple]:
    return lambda: tuple(torch.randn(*shape) for _ in range(n))


def build(case: Case) -> tuple[nn.Module, tuple]:
    torch.manual_seed(0)
    return case.model(), case.inputs()


def compute_layers(trace) -> list:
    """Every layer but inputs, outputs and buffer versions."""
    return [layer for layer in trace.layers if layer.is_compute]


def summary(trace) -> Summary:
    return [(layer.layer_label, layer.num_passes) for layer in compute_layers(trace)]


def traced_output(trace) -> torch.Tensor:
    return trace[trace.output_layers[0]].ops[0].out


def param_addresses(model: nn.Module, params) -> set[str]:
    """Addresses of ``params``, whether the trace lists the Parameters themselves or records."""
    names = {id(p): name for name, p in model.named_parameters()}
    return {names[id(p)] if isinstance(p, torch.Tensor) else getattr(p, "address", p) for p in params}


# --- property checks for rows whose exact ops are torch's business --------------------------------


def every_layer_has_passes(n: int, module: str) -> Callable:
    """Every compute layer has ``n`` passes; one ``getitem`` layer; some layer inside ``module``."""

    def check(trace, model, inputs):
        layers = compute_layers(trace)
        assert layers and all(layer.num_passes == n for layer in layers), summary(trace)
        assert [layer.layer_label for layer in layers if layer.func_name == "getitem"] == ["getitem_1"]
        assert any(layer.module == module for layer in layers), summary(trace)

    return check


def check_attention(trace, model, inputs):
    layers = compute_layers(trace)
    linears = [layer for layer in layers if layer.func_name == "linear"]
    assert len(linears) >= 4, summary(trace)  # q, k, v projections and out_proj: four call sites
    assert all(layer.module == "mha" for layer in linears)
    assert all(layer.num_passes == 1 for layer in layers), summary(trace)


def check_torchscript(trace, model, inputs):
    layers = compute_layers(trace)
    boundary = [layer for layer in layers if layer.func_name == "torchscript"]
    assert [(layer.layer_label, layer.num_passes) for layer in boundary] == [("torchscript_1", 3)]
    assert all(layer.num_passes == 3 for layer in layers), summary(trace)
    assert not any(layer.func_name in ("tanh", "mul") for layer in layers)  # nothing inside is seen


def check_checkpoint(trace, model, inputs):
    inside = [
        (layer.func_name, layer.num_passes)
        for layer in compute_layers(trace)
        if layer.module == "block" or layer.module.startswith("block.")
    ]
    assert inside == [("linear", 2), ("tanh", 2)]


def buffer_passes(trace) -> list[int]:
    return [layer.num_passes for layer in trace.layers if layer.is_buffer]


def check_buffer_one_layer(trace, model, inputs):
    # The starting value joins the loop's layer: 1 + 3 versions.
    assert buffer_passes(trace) == [4]


def check_buffer_two_lines(trace, model, inputs):
    # Starting value, then one version per writing line: three single-pass layers.
    assert buffer_passes(trace) == [1, 1, 1]


def check_raw_weight_params(trace, model, inputs):
    assert param_addresses(model, trace["matmul_1"].params) == {"W"}
    assert param_addresses(model, trace["matmul_2"].params) == {"W"}


def check_parameterlist_params(trace, model, inputs):
    """The layer lists every weight its passes used; each pass lists its own."""
    matmul = trace["matmul_1"]
    assert param_addresses(model, matmul.params) == {"ws.0", "ws.1", "ws.2"}
    assert [param_addresses(model, op.params) for op in matmul.ops] == [{"ws.0"}, {"ws.1"}, {"ws.2"}]
    assert param_addresses(model, trace["tanh_1"].params) == set()


def check_retrace(trace, model, inputs):
    again = tl.trace(model, *inputs)
    assert summary(again) == summary(trace) == [("tanh_1", 3), ("mul_1", 3)]
    assert [op.label for op in again.ops] == [op.label for op in trace.ops]
    assert [op.pass_num for op in again["tanh_1"].ops] == [1, 2, 3]


def func_of(trace, label) -> str:
    return (trace[label] if isinstance(label, str) else label).func_name


def check_output_slots(trace, model, inputs):
    """One ``torch.max`` call; both its values and its indices feed later ops."""
    assert any(layer.func_name == "max" for layer in compute_layers(trace)), summary(trace)
    values, indices = torch.max(inputs[0], 1)
    scaled, shifted = trace["mul_1"].ops[0], trace["add_1"].ops[0]
    torch.testing.assert_close(scaled.out, values * 2.0)
    torch.testing.assert_close(shifted.out, indices + 1)
    assert [func_of(trace, p) for p in scaled.parents] == ["max"]
    assert [func_of(trace, p) for p in shifted.parents] == ["max"]


# --- the Cases table, one entry per row (a row naming two codes has two entries) ------------------


ROWS: dict[str, Case] = {
    "loop-tanh-mul": Case(C.LoopTanhMul, randn(2, 4), [("tanh_1", 3), ("mul_1", 3)]),
    "loop-tanh": Case(C.LoopTanh, randn(2, 4), [("tanh_1", 3)]),
    "written-twice": Case(
        C.Unrolled, randn(2, 4), [("tanh_1", 1), ("mul_1", 1), ("tanh_2", 1), ("mul_2", 1)]
    ),
    "nested-tanh-one-line": Case(
        C.NestedTanhOneLine, randn(2, 4), [("tanh_1", 1), ("tanh_2", 1), ("tanh_3", 1)]
    ),
    "rnn-cell-steps": Case(
        C.RNNCellSteps,
        lambda: (torch.randn(2, 4, 3), torch.randn(2, 5)),
        modules={"cell": 4},
        check=every_layer_has_passes(4, "cell"),
    ),
    "lstm-cell-steps": Case(
        C.LSTMCellSteps,
        lambda: (torch.randn(2, 4, 3), torch.randn(2, 5), torch.randn(2, 5)),
        modules={"cell": 4},
        check=every_layer_has_passes(4, "cell"),
    ),
    "residual-block-once": Case(
        C.ResidualBlockOnce,
        randn(2, 4),
        [("linear_1", 1), ("add_1", 1), ("linear_2", 1), ("add_2", 1)],
        modules={"block": 1, "block.f1": 1, "block.f2": 1},
    ),
    "residual-block-loop": Case(
        C.ResidualBlockLoop,
        randn(2, 4),
        [("linear_1", 3), ("add_1", 3), ("linear_2", 3), ("add_2", 3)],
        modules={"block": 3, "block.f1": 3, "block.f2": 3},
    ),
    "residual-block-list": Case(
        C.ResidualBlockList,
        randn(2, 4),
        [(f"{func}_{n}", 1) for n in range(1, 7) for func in ("linear", "add")],
        modules={"blocks.0": 1, "blocks.1": 1, "blocks.2": 1},
    ),
    "relu-relu-two-lines": Case(C.ReluReluTwoLines, randn(2, 4), [("relu_1", 1), ("relu_2", 1)]),
    "helper-two-lines": Case(
        C.HelperTwoLines, randn(2, 4), [("tanh_1", 1), ("mul_1", 1), ("tanh_2", 1), ("mul_2", 1)]
    ),
    "helper-loop-line": Case(C.HelperLoopLine, randn(2, 4), [("tanh_1", 3), ("mul_1", 3)]),
    "helper-two-loops": Case(C.HelperTwoLoops, randn(2, 4), [("tanh_1", 2), ("tanh_2", 3)]),
    "same-op-twice-one-line-loop": Case(
        C.SameOpTwiceOneLineInLoop, randn(2, 4), [("sin_1", 3), ("sin_2", 3), ("add_1", 3)]
    ),
    "raw-weight-two-lines": Case(
        C.RawWeightTwoLines,
        randn(2, 4),
        [("matmul_1", 1), ("matmul_2", 1)],
        check=check_raw_weight_params,
    ),
    "tied-embedding": Case(
        C.TiedEmbedding,
        lambda: (torch.randint(0, 10, (2, 5)),),
        [("embedding_1", 1), ("tanh_1", 1), ("linear_1", 1)],
        modules={"emb": 1, "head": 1},
    ),
    "module-loop": Case(
        C.BlockLoop,
        randn(2, 4),
        [("linear_1", 3), ("tanh_1", 3)],
        modules={"block": 3, "block.lin": 3},
    ),
    "module-three-lines": Case(
        C.BlockThreeLines,
        randn(2, 4),
        [("linear_1", 3), ("tanh_1", 3)],
        modules={"block": 3, "block.lin": 3},
    ),
    "relu-module-three-lines": Case(
        C.ReluReusedThreeLines,
        randn(2, 4),
        [("relu_1", 3), ("mul_1", 1), ("sub_1", 1)],
        modules={"act": 3},
    ),
    "shared-by-two-parents": Case(
        C.SharedByTwoParents,
        randn(2, 4),
        [("linear_1", 2), ("tanh_1", 2), ("mul_1", 1), ("mul_2", 1)],
        modules={"a": 1, "b": 1, "a.inner": 2, "a.inner.lin": 2},
    ),
    "identical-module-list": Case(
        C.IdenticalModuleList,
        randn(2, 4),
        [(f"{func}_{n}", 1) for n in range(1, 4) for func in ("linear", "tanh")],
        modules={"blocks.0": 1, "blocks.1": 1, "blocks.2": 1},
    ),
    "siamese": Case(
        C.Siamese,
        randn(2, 4, n=2),
        [("linear_1", 2), ("tanh_1", 2), ("sub_1", 1)],
        modules={"enc": 2, "enc.lin": 2},
    ),
    "exp-comprehension": Case(
        C.ExpComprehension, randn(3, 4), [("getitem_1", 3), ("exp_1", 3), ("stack_1", 1)]
    ),
    "sum-over-heads": Case(
        C.SumOverHeads,
        randn(2, 4),
        [("linear_1", 1), ("radd_1", 1), ("linear_2", 1), ("add_1", 2), ("linear_3", 1)],
        modules={"heads.0": 1, "heads.1": 1, "heads.2": 1},
    ),
    "map-builtin": Case(C.MapBuiltin, randn(3, 4), [("getitem_1", 3), ("sin_1", 3), ("stack_1", 1)]),
    "map-lambda": Case(C.MapLambda, randn(3, 4), [("getitem_1", 3), ("sin_1", 3), ("stack_1", 1)]),
    "vmap-loop": Case(C.VmapLoop, randn(2, 4), [("vmap_1", 3)]),
    "grad-loop": Case(C.GradLoop, randn(2, 4), [("grad_1", 3)]),
    "greedy-generation": Case(
        C.GreedyGenerate,
        lambda: (torch.randint(0, 10, (2, 3)),),
        [("embedding_1", 3), ("linear_1", 3), ("getitem_1", 3), ("argmax_1", 3), ("cat_1", 3)],
        modules={"lm": 3, "lm.emb": 3, "lm.head": 3},
    ),
    "nested-loops-2x3": Case(C.NestedLoops, randn(2, 4), [("tanh_1", 6), ("mul_1", 2)]),
    "break-partway": Case(C.BreakPartway, randn(2, 4), [("tanh_1", 3), ("mul_1", 2)]),
    "branch-some-iterations": Case(
        C.BranchSomeIterations, randn(2, 4), [("tanh_1", 4), ("mul_1", 2), ("add_1", 2)]
    ),
    "while-tensor-condition": Case(
        C.WhileTensorCondition,
        lambda: (torch.zeros(2, 2),),  # sums 0, 4, 8 run the body; 12 ends the loop
        [("sum_1", 4), ("lt_1", 4), ("add_1", 3)],
    ),
    "recursion-depth-3": Case(C.RecursionDepth3, randn(2, 4), [("tanh_1", 3), ("mul_1", 3)]),
    "recursion-two-entries": Case(
        C.RecursionTwoEntries, randn(2, 4), [("tanh_1", 2), ("mul_1", 2), ("tanh_2", 3), ("mul_2", 3)]
    ),
    "buffer-inplace-loop": Case(
        C.BufferLoop,
        randn(2, 4),
        [("tanh_1", 3), ("add__1", 3)],
        check=check_buffer_one_layer,
    ),
    "buffer-two-lines": Case(
        C.BufferTwoLines,
        randn(2, 4),
        [("add__1", 1), ("tanh_1", 1), ("add__2", 1)],
        check=check_buffer_two_lines,
    ),
    "scalar-mul-loop": Case(C.ScalarMulLoop, randn(2, 4), [("mul_1", 3)]),
    "growing-cat-loop": Case(C.GrowingCatLoop, randn(2, 4), [("cat_1", 3)]),
    "parameterlist-loop": Case(C.ParameterListLoop, randn(2, 4), [("matmul_1", 3), ("tanh_1", 3)]),
    "root-modulelist-glue": Case(
        C.RootModuleListGlue,
        randn(2, 4),
        [("linear_1", 1), ("add_1", 3), ("linear_2", 1), ("linear_3", 1)],
        modules={"blocks.0": 1, "blocks.1": 1, "blocks.2": 1},
    ),
    "checkpoint-two-lines": Case(
        C.CheckpointTwoLines,
        randn(2, 4),
        modules={"block": 2, "block.lin": 2},
        check=check_checkpoint,
    ),
    "hook-module-loop": Case(
        C.HookedLoop, randn(2, 4), [("linear_1", 3), ("tanh_1", 3)], modules={"lin": 3}
    ),
    "hook-two-modules": Case(
        C.HookOnTwoModules,
        randn(2, 4),
        [("linear_1", 1), ("tanh_1", 1), ("linear_2", 1), ("tanh_2", 1)],
        modules={"layers.0": 1, "layers.1": 1},
    ),
    "parameterlist-params": Case(
        C.ParameterListLoop,
        randn(2, 4),
        [("matmul_1", 3), ("tanh_1", 3)],
        check=check_parameterlist_params,
    ),
    "first-step-then-loop": Case(
        C.FirstStepThenLoop,
        randn(2, 4),
        [("matmul_1", 1), ("tanh_1", 1), ("matmul_2", 3), ("tanh_2", 3)],
    ),
    "exec-function-loop": Case(C.ExecFunctionLoop, randn(2, 4), [("tanh_1", 3), ("mul_1", 3)]),
    "twin-functions": Case(C.TwinFunctions, randn(2, 4), [("tanh_1", 1), ("tanh_2", 1)]),
    "decorator-two-lines": Case(
        C.DecoratorTwoLines, randn(2, 4), [("tanh_1", 1), ("mul_1", 1), ("tanh_2", 1), ("mul_2", 1)]
    ),
    "torchscript-loop": Case(C.TorchScriptLoop, randn(2, 4), check=check_torchscript),
    "multihead-attention": Case(
        C.Attention, randn(2, 3, 8, n=3), modules={"mha": 1}, check=check_attention
    ),
    "two-traces": Case(C.LoopTanhMul, randn(2, 4), [("tanh_1", 3), ("mul_1", 3)], check=check_retrace),
}

#: Facts from the spec's prose, held to the same standard as the rows.
PROSE: dict[str, Case] = {
    "spec-unrolled": Case(
        C.Unrolled,
        lambda: (torch.ones(2, 4),),
        [("tanh_1", 1), ("mul_1", 1), ("tanh_2", 1), ("mul_2", 1)],
    ),
    "spec-looped": Case(C.Looped, lambda: (torch.ones(2, 4),), [("tanh_1", 2), ("mul_1", 2)]),
    "sin-plus-sin-one-line": Case(
        C.SinPlusSinOneLine, randn(2, 4), [("sin_1", 1), ("sin_2", 1), ("add_1", 1)]
    ),
    "hook-module-two-lines": Case(
        C.HookedTwoLines,
        randn(2, 4),
        [("linear_1", 2), ("tanh_1", 1), ("tanh_2", 1)],
        modules={"lin": 2},
    ),
    "output-slots": Case(C.MaxSlots, randn(3, 5), check=check_output_slots),
}

ALL = {**ROWS, **PROSE}
ALL_PARAMS = [pytest.param(case, id=name, marks=case.marks) for name, case in ALL.items()]
