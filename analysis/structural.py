"""The structural grouper (``grouper_v1``): layer keys from the graph alone, without call sites.

Captures without Python call-site evidence (spec: grouping.txt; a jaxpr whose equations carry
no traceback) cannot use the call-site rule. They are grouped from what the graph itself says:

1. An op's *signature* is its operation, its non-tensor arguments, its output slot and the
   parameters it read.
2. Each module call's own ops (not those of module calls inside it), in capture order, are
   scanned for loops. At each position the run of back-to-back repetitions of one block of
   ops with equal signatures is looked for, where every repetition reads (directly or through
   ops in between) an output of the one before it: loop-carried dataflow. The run covering
   the most ops is folded (the shortest block on a tie): the op at offset ``t`` of every
   repetition is a pass of one layer. Scanning resumes after the run; an op in no run
   stands alone.
3. A layer is keyed by its scope, its signature and which of that call's layers of that
   signature it is (in order). So a module called three times gives each of its ops three
   passes, and a Python loop gives its body one layer per op with a pass per iteration.

What it cannot see: a loop written out by hand folds like a loop (nothing tells them apart
without call sites); a loop whose body has a branch or a varying op folds only where the
blocks repeat exactly; in nested loops the outer body is the folded block, so the inner
loop's ops get one layer per inner iteration, each with a pass per outer iteration.

Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Optional, Sequence

__all__ = ["StructOp", "structural_keys", "fold_loops", "Linked"]


@dataclass(frozen=True, slots=True)
class StructOp:
    """What the structural grouper reads of one op."""

    #: The scope (module instance) it ran in.
    scope: int
    #: The module call it ran in; ``None`` for an op the grouper does not key (an input,
    #: output or buffer version), which only carries dataflow between the others.
    call: Optional[int]
    #: Operation, non-tensor arguments, output slot and parameters read: equal for two ops
    #: that do the same thing.
    signature: Hashable
    #: Indices (into the same sequence) of the ops whose outputs it read.
    parents: tuple[int, ...]


def structural_keys(ops: Sequence[StructOp]) -> list[Hashable]:
    """The ``grouper_v1`` layer key of every op (see the module's description); ``None`` for
    an op without a call."""
    by_call: dict[int, list[int]] = {}
    for i, op in enumerate(ops):
        if op.call is not None:
            by_call.setdefault(op.call, []).append(i)
    keys: list[Hashable] = [None] * len(ops)
    for members in by_call.values():
        representative = fold_loops([ops[i].signature for i in members], Linked(ops, members))
        seen: dict[Hashable, int] = {}
        rank: dict[int, int] = {}
        for position, rep in enumerate(representative):
            if rep == position:
                signature = ops[members[position]].signature
                rank[position] = seen[signature] = seen.get(signature, -1) + 1
        for position, rep in enumerate(representative):
            op = ops[members[position]]
            keys[members[position]] = (op.scope, op.signature, rank[rep])
    return keys


def fold_loops(signatures: Sequence[Hashable], linked: "Linked") -> list[int]:
    """Per position: the position of the op it is a pass of (itself when it starts a layer).

    ``linked(a, b, p)``: whether the block of length ``p`` at ``b`` reads an output of the
    block at ``a`` (``b == a + p``).
    """
    ids: dict[Hashable, int] = {}
    seq = [ids.setdefault(s, len(ids)) for s in signatures]
    n = len(seq)
    representative = list(range(n))
    i = 0
    while i < n:
        best_cover, best_period, best_count = 0, 0, 0
        for period in range(1, (n - i) // 2 + 1):
            if period * ((n - i) // period) <= best_cover:
                continue  # no run of this block length can cover more
            count = 1
            block = seq[i:i + period]
            while (i + (count + 1) * period <= n and seq[i + count * period:i + (count + 1) * period] == block
                   and linked(i + (count - 1) * period, i + count * period, period)):
                count += 1
            if count > 1 and period * count > best_cover:
                best_cover, best_period, best_count = period * count, period, count
        if best_count < 2:
            i += 1
            continue
        for k in range(1, best_count):
            for t in range(best_period):
                representative[i + k * best_period + t] = i + t
        i += best_cover
    return representative


class Linked:
    """Loop-carried dataflow between two blocks of one call's op sequence."""

    __slots__ = ("_ops", "_members")

    def __init__(self, ops: Sequence[StructOp], members: Sequence[int]) -> None:
        self._ops, self._members = ops, members

    def __call__(self, a: int, b: int, period: int) -> bool:
        """Whether an op of block ``b`` reads, directly or through ops run in between (nested
        module calls'), an output of an op of block ``a``."""
        members = self._members
        reached = set(members[a:a + period])
        targets = set(members[b:b + period])
        for index in range(members[a], members[b + period - 1] + 1):
            if index in reached:
                continue
            if any(parent in reached for parent in self._ops[index].parents):
                if index in targets:
                    return True
                reached.add(index)
        return False
