"""The lint rules: code, severity, whether on by default, and the ``--explain`` text.

Codes by family: TL1xx how places become layers, TL2xx passes that are easy to miscount,
TL3xx model state, TL4xx what a capture cannot do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

from . import checks
from .model import SourceModel


@dataclass(frozen=True, slots=True)
class Rule:
    """One lint rule."""

    #: ``TL101``.
    code: str
    #: Short kebab-case name (``written-out-repeat``).
    name: str
    #: ``error``, ``warning`` or ``info``.
    severity: str
    #: Whether the rule runs when nothing is selected (informational rules are off).
    default: bool
    #: The check: yields ``(node, message)``.
    check: Callable[[SourceModel], Iterator[checks.Hit]]
    #: What ``torchlens lint --explain CODE`` prints: why, with a wrong/right example.
    explain: str


RULES: dict[str, Rule] = {rule.code: rule for rule in (
    Rule("TL101", "written-out-repeat", "warning", True, checks.repeated_statements, """\
The same operation with the same weights is written out at several places in sequence.
Each place is its own layer, so N copies give N single-pass layers where a loop gives one
layer with N passes. That is intended (a layer is one operation at one place), but it is
often not what the reader of the labels expects.

    x = x @ self.W          # matmul_1
    x = x @ self.W          # matmul_2
    x = x @ self.W          # matmul_3

    for _ in range(3):      # matmul_1, 3 passes
        x = x @ self.W
"""),
    Rule("TL102", "helper-several-lines", "info", False, checks.helpers_from_several_lines, """\
A helper function or method is called from several lines. The call site is part of every
op's place, so the helper's ops are one layer per calling line.

    y = self.proj(x)        # linear_1 (via helper proj)
    z = self.proj(y)        # linear_2

    for _ in range(2):      # linear_1, 2 passes
        x = self.proj(x)
"""),
    Rule("TL103", "recursion-several-entries", "warning", True, checks.recursion_entries, """\
A recursive function is entered from more than one place. Every depth of one entry maps
to the same place (recursion collapses), so its ops are passes of one layer; a second
entry is a second place and gives a second set of layers.

    a = self.tree(x, 3)     # tanh_1, 3 passes
    b = self.tree(x, 2)     # tanh_2, 2 passes

    for depth in (3, 2):    # tanh_1, 5 passes
        x = self.tree(x, depth)
"""),
    Rule("TL104", "shared-weights", "info", False, checks.shared_weights, """\
A weight (or a pair of tied weights) is used at several places. Weights are never part of
a layer's key: each place is its own layer even when the weights are the same tensor.

    a = x @ self.W          # matmul_1
    b = y @ self.W          # matmul_2  (same weight, different layer)
    self.head.weight = self.embed.weight   # tied: embedding and head stay separate layers
"""),
    Rule("TL105", "shared-module", "warning", True, checks.shared_modules, """\
One module instance is reachable under two parents. Scope is the module instance, so its
ops are one layer whose passes come from both parents (one pass per module call).

    shared = Block()
    self.left = shared
    self.right = shared     # left and right are one scope: block ops get 2 passes

    self.left, self.right = Block(), Block()   # two scopes: separate layers
"""),
    Rule("TL201", "while-condition-op", "warning", True, checks.while_condition_ops, """\
A tensor operation sits in a `while` condition. The condition runs once more than the
body (the last check fails), so its ops get N+1 passes when the body runs N times.

    while x.norm() > 1:     # norm_1 and gt_1: N+1 passes
        x = x / 2           # div_1: N passes
"""),
    Rule("TL202", "builtin-c-calls", "warning", True, checks.builtin_c_calls, """\
Builtin `sum`, `map` or `functools.reduce` makes torch calls from C code. No Python frame
tells those calls apart, so they are passes of one layer, keyed at the instruction that
consumes the iterator. `sum` over tensors gives `radd` once (0 + t) and `add` N-1 times.

    y = sum(h(x) for h in self.heads)    # radd_1, and add_1 with N-1 passes

    y = self.heads[0](x)
    for h in self.heads[1:]:             # add_1 with N-1 passes, at a place you wrote
        y = y + h(x)
"""),
    Rule("TL301", "buffer-data-assign", "error", True, checks.buffer_data_assignment, """\
`buf.data = tensor` on a registered buffer bypasses both module reassignment and in-place
ops, so the capture cannot record the write; tl.trace raises a BufferWriteError.

    self.state.data = x * 2              # unsupported

    self.state = x * 2                   # recorded as a reassignment
    self.state.copy_(x * 2)              # recorded as an in-place write

`torchlens lint --fix` rewrites `self.state.data = v` to `self.state = v.detach()`: like
`.data =` it takes v's storage, shape and dtype without copying or joining the autograd
graph; the buffer becomes a new tensor object. `--diff` shows the rewrite first.
"""),
    Rule("TL302", "plain-tensor-state", "warning", True, checks.plain_tensor_state, """\
Tensor state is kept in a plain attribute and updated during forward. Only registered
buffers are tracked as versioned model state.

    self.memory = torch.tanh(self.memory + x)          # not tracked

    self.register_buffer("memory", torch.zeros(d))     # in __init__: tracked as a buffer
"""),
    Rule("TL401", "threads", "warning", True, checks.threads, """\
Capturing across concurrent Python threads is not supported: torch function modes are per
thread. tl.trace refuses nn.DataParallel (trace `model.module`), and torch calls on a
thread started during a capture raise CaptureThreadError.
"""),
    Rule("TL402", "hook-ops", "info", False, checks.hook_ops, """\
Ops in a forward hook or pre-hook run outside the module's own forward. They belong to
the caller's scope, with the hooked module as part of the place: one hook on two modules
gives two layers, a hooked module called from one loop line gives one pass per call.
"""),
)}
