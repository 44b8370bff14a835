"""Constructs of real models whose loss made the prediction read far more than runs (and
slowly): torchvision's segmentation models build ``collections.OrderedDict`` s, and
``F.interpolate`` tests ``not input.is_cpu and torch.are_deterministic_algorithms_enabled()``
(when the first operand was unknown, both arms were read: the second is torch's Python
decomposition, 48 layers and 174 gaps for one upsampling)."""

from __future__ import annotations

import collections

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torchlens as tl


class Segmenter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        features = collections.OrderedDict()
        features["out"] = self.conv(x)
        result = collections.OrderedDict(features)
        if isinstance(result, collections.OrderedDict) and type(result) is collections.OrderedDict:
            result["out"] = F.interpolate(result["out"], size=(8, 8), mode="bilinear", align_corners=False)
        return result


def test_tensors_in_an_ordered_dict_keep_their_shape() -> None:
    """``collections.OrderedDict`` holds its tensors as a dict does, and is one."""
    model, x = Segmenter(), torch.randn(1, 3, 6, 6)
    pred = tl.predict(model, x)
    assert [layer.func_name for layer in pred.layers] == ["conv2d", "upsample_bilinear2d"]
    assert not pred.gaps and all(str(layer.count) == "1" for layer in pred.layers)
    assert tl.trace(model, x).check_prediction(pred).ok


class Decided(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.never = False

    def forward(self, x):
        if x.sum() > 0 and self.never:  # false whatever the sum
            x = torch.relu(x)
        if not (x.sum() > 0 or not self.never):  # `or True`: the branch never runs
            x = torch.sigmoid(x)
        if x.sum() > 0 or torch.tanh(x).sum() > 0 and False:  # tanh may run, the branch too
            x = torch.exp(x)
        while x.sum() > 0 and self.never:
            x = torch.cos(x)
        return [torch.sin(v) for v in x if v.sum() > 0 and self.never]


def test_and_or_are_decided_by_the_operand_that_decides_them() -> None:
    model, x = Decided(), torch.randn(3, 2)
    pred = tl.predict(model, x)
    ops = {layer.func_name: str(layer.count) for layer in pred.layers}
    assert "relu" not in ops and "sigmoid" not in ops and "cos" not in ops and "sin" not in ops
    assert ops["tanh"] == "0..1" and ops["exp"] == "0..1"
    assert tl.trace(model, x).check_prediction(pred).ok


def test_a_mixture_of_experts_is_exact() -> None:
    """Mixtral's experts run through ``torch._grouped_mm``, whose fake kernel wants bfloat16 on
    CPU where the real one takes float32: its output's shape comes from the real kernel on zeros.
    Once it was lost, so was every shape after it: layer 1's attention was a gap."""
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.MixtralConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=2, num_key_value_heads=1, vocab_size=100,
                                        num_local_experts=4, num_experts_per_tok=2)
    model, ids = transformers.MixtralForCausalLM(config).eval(), torch.randint(0, 100, (1, 8))
    pred = tl.predict(model, ids)
    assert not pred.gaps and not pred.notes, (pred.gap_lines(), pred.notes)
    report = tl.trace(model, ids).check_prediction(pred)
    assert report.ok and report.coverage == 1.0, str(report)
