"""Fixture models for the grouping spec's Cases table (``spec/grouping.txt``) and its prose.

Every model lives at module level in this real file, so source, frames and call sites are what a
user's model would have. Layout matters here: which ops share a line, and which lines a loop
repeats, *is* the test. Expected layers live next to each case in ``tests/test_cases.py``.
"""

from __future__ import annotations

import copy
import functools
import warnings
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


# --- small building blocks ------------------------------------------------------------------


class LinearTanh(nn.Module):
    """``tanh(linear(x))``: two ops, ``linear`` and ``tanh``."""

    def __init__(self, width: int = 4) -> None:
        super().__init__()
        self.lin = nn.Linear(width, width)

    def forward(self, x):
        return torch.tanh(self.lin(x))


class ResidualBlock(nn.Module):
    """Two residual adds on two lines (a transformer block's shape)."""

    def __init__(self) -> None:
        super().__init__()
        self.f1 = nn.Linear(4, 4)
        self.f2 = nn.Linear(4, 4)

    def forward(self, x):
        x = x + self.f1(x)
        x = x + self.f2(x)
        return x


def tanh_half(x):
    return torch.tanh(x) * 0.5


def tanh_only(x):
    return torch.tanh(x)


def tanh_hook(module, args, output):
    return torch.tanh(output)


# --- loops and statements -------------------------------------------------------------------


class LoopTanhMul(nn.Module):
    def forward(self, x):
        for _ in range(3):
            x = torch.tanh(x) * 0.5
        return x


class LoopTanh(nn.Module):
    def forward(self, x):
        for _ in range(3):
            x = torch.tanh(x)
        return x


class Unrolled(nn.Module):
    """The spec's example: the loop body written out twice by hand."""

    def forward(self, x):
        x = torch.tanh(x) * 0.5
        x = torch.tanh(x) * 0.5
        return x


class Looped(nn.Module):
    """The spec's example: the same body in a loop of two."""

    def forward(self, x):
        for _ in range(2):
            x = torch.tanh(x) * 0.5
        return x


class NestedTanhOneLine(nn.Module):
    def forward(self, x):
        return torch.tanh(torch.tanh(torch.tanh(x)))


class ReluReluTwoLines(nn.Module):
    def forward(self, x):
        return F.relu(
            F.relu(x))


class SameOpTwiceOneLineInLoop(nn.Module):
    def forward(self, x):
        for _ in range(3):
            x = torch.sin(x) + torch.sin(x)
        return x


class SinPlusSinOneLine(nn.Module):
    def forward(self, a):
        return torch.sin(a) + torch.sin(a)


class NestedLoops(nn.Module):
    def forward(self, x):
        for _ in range(2):
            for _ in range(3):
                x = torch.tanh(x)
            x = x * 0.5
        return x


class BreakPartway(nn.Module):
    def forward(self, x):
        for i in range(5):
            x = torch.tanh(x)
            if i == 2:
                break
            x = x * 0.5
        return x


class BranchSomeIterations(nn.Module):
    def forward(self, x):
        for i in range(4):
            x = torch.tanh(x)
            if i % 2 == 0:
                x = x * 0.5
            else:
                x = x + 1.0
        return x


class WhileTensorCondition(nn.Module):
    """With an all-zero 2x2 input the body runs 3 times and the condition is tested 4 times."""

    def forward(self, x):
        while x.sum() < 10.0:
            x = x + 1.0
        return x


class ScalarMulLoop(nn.Module):
    def forward(self, x):
        for i in range(1, 4):
            x = x * i
        return x


class GrowingCatLoop(nn.Module):
    def forward(self, x):
        acc = x
        for _ in range(3):
            acc = torch.cat([acc, x], dim=0)
        return acc


# --- helpers, recursion, decorators, exec -----------------------------------------------------


class HelperTwoLines(nn.Module):
    def forward(self, x):
        x = tanh_half(x)
        x = tanh_half(x)
        return x


class HelperLoopLine(nn.Module):
    def forward(self, x):
        for _ in range(3):
            x = tanh_half(x)
        return x


class HelperTwoLoops(nn.Module):
    def forward(self, x):
        for _ in range(2):
            x = tanh_only(x)
        for _ in range(3):
            x = tanh_only(x)
        return x


def recurse(x, depth):
    if depth == 0:
        return x
    x = torch.tanh(x) * 0.5
    return recurse(x, depth - 1)


class RecursionDepth3(nn.Module):
    def forward(self, x):
        return recurse(x, 3)


class RecursionTwoEntries(nn.Module):
    def forward(self, x):
        x = recurse(x, 2)
        x = recurse(x, 3)
        return x


_exec_namespace: dict = {"torch": torch}
exec("def exec_step(x):\n    return torch.tanh(x) * 0.5\n", _exec_namespace)
exec_step = _exec_namespace["exec_step"]


class ExecFunctionLoop(nn.Module):
    def forward(self, x):
        for _ in range(3):
            x = exec_step(x)
        return x


def twin_a(x):
    return torch.tanh(x)


def twin_b(x):
    return torch.tanh(x)


class TwinFunctions(nn.Module):
    """Two separately written identical functions, reached from one loop line."""

    def forward(self, x):
        for f in (twin_a, twin_b):
            x = f(x)
        return x


def apply_twice(f):
    @functools.wraps(f)
    def wrapper(x):
        x = f(x)
        x = f(x)
        return x

    return wrapper


@apply_twice
def decorated_step(x):
    return torch.tanh(x) * 0.5


class DecoratorTwoLines(nn.Module):
    def forward(self, x):
        return decorated_step(x)


# --- comprehensions, builtins, map --------------------------------------------------------------


class ExpComprehension(nn.Module):
    def forward(self, x):
        cs = [x[i] for i in range(3)]
        ys = [torch.exp(c) for c in cs]
        return torch.stack(ys)


class MapBuiltin(nn.Module):
    def forward(self, x):
        xs = [x[i] for i in range(3)]
        ys = list(map(torch.sin, xs))
        return torch.stack(ys)


class MapLambda(nn.Module):
    def forward(self, x):
        xs = [x[i] for i in range(3)]
        ys = list(map(lambda t: torch.sin(t), xs))
        return torch.stack(ys)


class SumOverHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        return sum(h(x) for h in self.heads)


# --- modules: calls, sharing, containers ---------------------------------------------------------


class ResidualBlockOnce(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = ResidualBlock()

    def forward(self, x):
        return self.block(x)


class ResidualBlockLoop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = ResidualBlock()

    def forward(self, x):
        for _ in range(3):
            x = self.block(x)
        return x


class ResidualBlockList(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([ResidualBlock() for _ in range(3)])

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return x


class BlockLoop(nn.Module):
    """One module called 3 times from a loop."""

    def __init__(self) -> None:
        super().__init__()
        self.block = LinearTanh()

    def forward(self, x):
        for _ in range(3):
            x = self.block(x)
        return x


class BlockThreeLines(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = LinearTanh()

    def forward(self, x):
        x = self.block(x)
        x = self.block(x)
        x = self.block(x)
        return x


class ReluReusedThreeLines(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.act = nn.ReLU()

    def forward(self, x):
        x = self.act(x)
        x = x * 2.0
        x = self.act(x)
        x = x - 1.0
        x = self.act(x)
        return x


class Parent(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x) * 2.0


class SharedByTwoParents(nn.Module):
    """One ``LinearTanh`` instance inside two parents: named_modules() lists it as ``a.inner``."""

    def __init__(self) -> None:
        super().__init__()
        shared = LinearTanh()
        self.a = Parent(shared)
        self.b = Parent(shared)

    def forward(self, x):
        x = self.a(x)
        x = self.b(x)
        return x


class IdenticalModuleList(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        first = LinearTanh()
        self.blocks = nn.ModuleList([first, copy.deepcopy(first), copy.deepcopy(first)])

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return x


class Siamese(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = LinearTanh()

    def forward(self, a, b):
        ea = self.enc(a)
        eb = self.enc(b)
        return ea - eb


class TiedEmbedding(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids):
        h = self.emb(ids)
        h = torch.tanh(h)
        return self.head(h)


class RootModuleListGlue(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        for blk in self.blocks:
            x = x + blk(x)
        return x


class TinyLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 8)
        self.head = nn.Linear(8, 10)

    def forward(self, ids):
        return self.head(self.emb(ids))


class GreedyGenerate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lm = TinyLM()

    def forward(self, ids):
        for _ in range(3):
            logits = self.lm(ids)
            next_id = logits[:, -1].argmax(-1, keepdim=True)
            ids = torch.cat([ids, next_id], dim=1)
        return ids


# --- raw weights and ParameterLists ---------------------------------------------------------------


class RawWeightTwoLines(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.W = nn.Parameter(torch.randn(4, 4) * 0.5)

    def forward(self, x):
        x = x @ self.W
        x = x @ self.W
        return x


class ParameterListLoop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ws = nn.ParameterList([nn.Parameter(torch.randn(4, 4) * 0.5) for _ in range(3)])

    def forward(self, x):
        for w in self.ws:
            x = torch.tanh(x @ w)
        return x


class FirstStepThenLoop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.W = nn.Parameter(torch.randn(4, 4) * 0.5)

    def forward(self, x):
        x = torch.tanh(x @ self.W)
        for _ in range(3):
            x = torch.tanh(x @ self.W)
        return x


# --- recurrent cells ------------------------------------------------------------------------------


class RNNCellSteps(nn.Module):
    """``nn.RNNCell`` over 4 time steps; ``h`` is an input so the cell never creates zeros."""

    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.RNNCell(3, 5)

    def forward(self, x, h):
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
        return h


class LSTMCellSteps(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.LSTMCell(3, 5)

    def forward(self, x, h, c):
        for t in range(x.shape[1]):
            h, c = self.cell(x[:, t], (h, c))
        return h


# --- hooks ----------------------------------------------------------------------------------------


class HookedLoop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.lin.register_forward_hook(tanh_hook)

    def forward(self, x):
        for _ in range(3):
            x = self.lin(x)
        return x


class HookOnTwoModules(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])
        for layer in self.layers:
            layer.register_forward_hook(tanh_hook)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class HookedTwoLines(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.lin.register_forward_hook(tanh_hook)

    def forward(self, x):
        x = self.lin(x)
        x = self.lin(x)
        return x


# --- boundaries: torch.func, TorchScript, checkpoint, attention -----------------------------------


def sin_sum(t):
    return torch.sin(t).sum()


class VmapLoop(nn.Module):
    def forward(self, x):
        for _ in range(3):
            x = torch.func.vmap(torch.sin)(x)
        return x


class GradLoop(nn.Module):
    def forward(self, x):
        for _ in range(3):
            x = torch.func.grad(sin_sum)(x)
        return x


class ScriptedBody(nn.Module):
    def forward(self, x):
        return torch.tanh(x) * 0.5


class TorchScriptLoop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit.script is deprecated
            self.ts = torch.jit.script(ScriptedBody())

    def forward(self, x):
        for _ in range(3):
            x = self.ts(x)
        return x


class CheckpointTwoLines(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = LinearTanh()

    def forward(self, x):
        x = checkpoint(self.block, x, use_reentrant=False)
        x = checkpoint(self.block, x, use_reentrant=False)
        return x


class Attention(nn.Module):
    """Cross attention with distinct q, k, v: torch takes its slow Python path (4 ``linear`` sites).

    Sequence-first (``batch_first=False``): with ``batch_first=True`` torch transposes q, k and v
    in one generator expression, which is rightly one ``transpose`` layer with 3 passes.
    """

    def __init__(self) -> None:
        super().__init__()
        self.mha = nn.MultiheadAttention(8, 2)

    def forward(self, q, k, v):
        out, _ = self.mha(q, k, v, need_weights=False)
        return out


# --- registered buffers (issue 5) -----------------------------------------------------------------


class BufferLoop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("total", torch.zeros(2, 4))

    def forward(self, x):
        for _ in range(3):
            x = torch.tanh(x)
            self.total.add_(x)
        return x


class BufferTwoLines(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.zeros(1))

    def forward(self, x):
        self.count.add_(1.0)
        x = torch.tanh(x)
        self.count.add_(1.0)
        return x


# --- output slots and threads ---------------------------------------------------------------------


class MaxSlots(nn.Module):
    """Both outputs of one ``torch.max`` call feed later ops."""

    def forward(self, x):
        values, indices = torch.max(x, 1)
        scaled = values * 2.0
        shifted = indices + 1
        return scaled + shifted


class OpInWorkerThread(nn.Module):
    """Runs an op on another thread mid-forward, as ``nn.DataParallel`` does with its replicas."""

    def forward(self, x):
        with ThreadPoolExecutor(max_workers=1) as pool:
            y = pool.submit(torch.tanh, x).result()
        return y * 0.5


class ModuleInWorkerThread(nn.Module):
    """Calls a submodule on another thread mid-forward (``nn.DataParallel``'s ``parallel_apply``)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        with ThreadPoolExecutor(max_workers=1) as pool:
            y = pool.submit(self.lin, x).result()
        return y * 0.5


class CallsInWorkerThread(nn.Module):
    """Calls ``fn(x)`` on another thread mid-forward (the test passes a second ``tl.trace``)."""

    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x):
        with ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(self.fn, x).result()
        return torch.tanh(x)
