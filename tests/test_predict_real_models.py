"""Constructs of real models whose loss made the prediction read far more than runs (and
slowly): torchvision's segmentation models build ``collections.OrderedDict`` s, and
``F.interpolate`` tests ``not input.is_cpu and torch.are_deterministic_algorithms_enabled()``
(when the first operand was unknown, both arms were read: the second is torch's Python
decomposition, 48 layers and 174 gaps for one upsampling)."""

from __future__ import annotations

import collections

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

