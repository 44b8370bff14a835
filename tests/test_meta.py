"""Tracing on the meta device is exact (issue 13): the same layers, labels, passes and parents as on
the CPU, for every Cases model that runs on meta at all and for tiny GPT-2 and LLaMA configs.

Meta storages all have data pointer 0 and hold no values, so the capture must not tell storages
apart by data pointer, nor compare buffer values there (BatchNorm in eval must not reach
``aten::equal``)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchlens as tl
from models.table import ALL_PARAMS, Case

NONE = tl.options.CaptureOptions(save="none")


def graph(trace) -> list:
    return [(op.label, op.func_name, op.parents, op.children, op.shape, op.module_call, op.params) for op in trace.ops]


def layers(trace) -> list:
    return [(layer.layer_label, layer.module, layer.num_passes, str(layer.call_site)) for layer in trace.layers]


def compare(make_model, make_inputs) -> None:
    torch.manual_seed(0)
    on_cpu = tl.trace(make_model(), *make_inputs(), capture=NONE)
    with torch.device("meta"):
        model = make_model()
    inputs = tuple(t.to("meta") for t in make_inputs())
    on_meta = tl.trace(model, *inputs, capture=NONE)
    assert layers(on_meta) == layers(on_cpu)
    assert graph(on_meta) == graph(on_cpu)
    assert all(op.device.type == "meta" for op in on_meta.ops)


def runs_on_meta(case: Case) -> bool:
    """Whether the model itself runs on meta (data-dependent code and CPU constants do not)."""
    try:
        with torch.device("meta"):
            model = case.model()
        model(*(t.to("meta") for t in case.inputs()))
    except (NotImplementedError, RuntimeError, TypeError, ValueError):
        return False
    return True


@pytest.mark.parametrize("case", ALL_PARAMS)
def test_meta_trace_equals_cpu_trace_on_the_cases(case: Case):
    if not runs_on_meta(case):
        pytest.skip("the model itself does not run on the meta device")
    compare(case.model, case.inputs)


def test_most_cases_run_on_meta():
    assert sum(runs_on_meta(param.values[0]) for param in ALL_PARAMS) >= len(ALL_PARAMS) // 2


class InplaceResidual(nn.Module):
    """The issue's example: on meta every storage looked like the same one, so ``add_1`` took the
    in-place ``add_`` as its parent instead of ``relu``."""

    def __init__(self) -> None:
        super().__init__()
        self.lin, self.bn = nn.Linear(4, 4), nn.BatchNorm1d(4)

    def forward(self, x):
        h = torch.relu(self.lin(x))
        y = self.bn(x)
        y.add_(1)
        return h + y


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_meta_in_place_and_batchnorm(mode):
    compare(lambda: getattr(InplaceResidual(), mode)(), lambda: (torch.randn(3, 4),))


def test_meta_in_place_parents():
    with torch.device("meta"):
        model = InplaceResidual().eval()
    trace = tl.trace(model, torch.randn(3, 4, device="meta"), capture=NONE)
    assert trace["add_1:1"].parents == ("relu_1:1", "add__1:1")
    assert trace["add__1:1"].parents == ("batch_norm_1:1",)


def test_meta_tiny_gpt2_and_llama():
    transformers = pytest.importorskip("transformers")
    transformers.utils.logging.set_verbosity_error()
    ids = lambda: (torch.randint(0, 100, (1, 8), generator=torch.Generator().manual_seed(0)),)  # noqa: E731
    gpt2 = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=16)
    compare(lambda: transformers.GPT2LMHeadModel(gpt2).eval(), ids)
    llama = transformers.LlamaConfig(num_hidden_layers=2, hidden_size=32, intermediate_size=64, num_attention_heads=4,
                                     num_key_value_heads=2, vocab_size=100)
    compare(lambda: transformers.LlamaForCausalLM(llama).eval(), ids)
