"""The README's first example: ``python -m torchlens.demo``.

A block called three times from a loop: every op inside it gets one pass per call, and the
loop body's own ops one pass per iteration.
"""

import torch
from torch import nn

import torchlens as tl


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.lin = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.relu(self.lin(x))


class Net(nn.Module):
    def __init__(self, width: int = 4) -> None:
        super().__init__()
        self.block = Block(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(3):
            x = torch.tanh(x) * 0.5
            x = self.block(x)
        return x


def main() -> None:
    torch.manual_seed(0)
    model, x = Net(), torch.randn(2, 4)
    trace = tl.trace(model, x)                      # runs forward once, records every op
    for layer in trace.layers:                      # in order of first execution
        print(layer.layer_label, layer.func_name, layer.num_passes)
    print(trace.ops["tanh_1:2"].out)                # the second pass's output tensor
    print(trace.modules["block"].num_calls, [str(call) for call in trace.modules["block"].calls])
    print(trace)                                    # layers, passes, shapes, modules


if __name__ == "__main__":
    main()
