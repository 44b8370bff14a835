"""The grouping pass: a pure function from a capture's keys to layers, passes and labels.

Two ops are passes of one layer exactly when their keys are equal (spec: grouping.txt):
scope (module instance), call site (collapsed frame chain), operation and output slot.
When no Python frame sat between the module boundary and the op, the key falls back to
the op's position: same op, same non-tensor arguments, same ordinal within the module call.
Inputs and outputs are always single-pass layers.

Labels come from one allocator: ``{func}_{n}`` for the n-th layer of that name in order of
first execution, ``{layer}:{k}`` for the k-th pass, ``{address}:{k}`` for a module call.
"""

from __future__ import annotations

from collections import Counter
from typing import Hashable

from capture.record import OP, RawCapture, RawOp

from .records import CallSite, HookBoundary, Layer, Module, Op, OpGraph

#: What ran: ``trace.options.grouping_policy``.
GROUPING_POLICY = {
    "detector": "callsite_v1",
    "key": ("scope", "call_site", "operation", "output_slot"),
}


def group(raw: RawCapture) -> tuple[list[Layer], list[Op], dict[str, Module]]:
    """Turn a raw capture into layers (first-execution order), ops (capture order), modules."""
    addresses = [m.address for m in raw.modules]
    call_labels = [f"{addresses[m]}:{k}" for m, k in raw.calls]
    ordinals = _ordinals(raw)
    layer_of, pass_of, first_ops = _assign(raw, ordinals)
    labels = _layer_labels(raw, first_ops)

    op_labels = [f"{labels[layer_of[i]]}:{pass_of[i]}" for i in range(len(raw.ops))]
    children: list[list[str]] = [[] for _ in raw.ops]
    for i, op in enumerate(raw.ops):
        for parent in op.parents:
            children[parent].append(op_labels[i])

    index: dict[str, Layer] = {}
    ops = [
        Op(op_labels[i], labels[layer_of[i]], pass_of[i], op.name, op.out, op.shape, op.dtype,
           tuple(dict.fromkeys(op_labels[p] for p in op.parents)), tuple(dict.fromkeys(children[i])),
           op.params, call_labels[op.call] if op.call >= 0 else None,
           OpGraph((addresses[op.scope], op.name, op.slot, ordinals[i])), index)
        for i, op in enumerate(raw.ops)
    ]
    passes: list[list[Op]] = [[] for _ in first_ops]
    for i, op in enumerate(ops):
        passes[layer_of[i]].append(op)
    layers = []
    for n, first in enumerate(first_ops):
        head = raw.ops[first]
        layer = Layer(
            labels[n], head.name, addresses[head.scope], head.kind == "input", head.kind == "output",
            tuple(passes[n]), tuple(dict.fromkeys(p for op in passes[n] for p in op.params)),
            _call_site(raw, head, addresses),
        )
        layers.append(layer)
        index[layer.layer_label] = layer
    return layers, ops, _modules(raw, addresses)


def _ordinals(raw: RawCapture) -> list[int]:
    """Each op's ordinal among same-name, same-slot ops of its module call (from 0)."""
    seen: Counter = Counter()
    out = []
    for op in raw.ops:
        key = (op.call, op.name, op.slot)
        out.append(seen[key])
        seen[key] += 1
    return out


def _key(i: int, op: RawOp, ordinal: int) -> Hashable:
    if op.kind != OP:
        return (op.kind, i)
    if op.site is None:
        return (op.scope, "position", op.name, op.args_text, ordinal, op.slot)
    return (op.scope, op.site, op.name, op.slot)


def _assign(raw: RawCapture, ordinals: list[int]) -> tuple[list[int], list[int], list[int]]:
    """Layer index and pass number of every op, and each layer's first op."""
    layers: dict[Hashable, int] = {}
    counts: list[int] = []
    first_ops: list[int] = []
    layer_of, pass_of = [], []
    for i, op in enumerate(raw.ops):
        key = _key(i, op, ordinals[i])
        n = layers.get(key)
        if n is None:
            n = layers[key] = len(counts)
            counts.append(0)
            first_ops.append(i)
        counts[n] += 1
        layer_of.append(n)
        pass_of.append(counts[n])
    return layer_of, pass_of, first_ops


def _layer_labels(raw: RawCapture, first_ops: list[int]) -> list[str]:
    per_name: Counter = Counter()
    labels = []
    for i in first_ops:
        name = raw.ops[i].name
        per_name[name] += 1
        labels.append(f"{name}_{per_name[name]}")
    return labels


def _call_site(raw: RawCapture, op: RawOp, addresses: list[str]) -> CallSite:
    frames: list = []
    for segment in op.site or ():
        if segment < 0:
            frames.append(HookBoundary(addresses[~segment]))
        else:
            frames.extend(raw.chains[segment])
    return CallSite(tuple(frames))


def _modules(raw: RawCapture, addresses: list[str]) -> dict[str, Module]:
    calls: dict[int, list[str]] = {}
    for m, k in raw.calls:
        calls.setdefault(m, []).append(f"{addresses[m]}:{k}")
    return {
        m.address: Module(m.address, m.type_name, m.num_calls, tuple(calls.get(i, ())), m.params,
                          m.children, m.parent)
        for i, m in enumerate(raw.modules)
    }
