"""The grouping pass: a pure function from a capture's keys to layers, passes and labels.

Two ops are passes of one layer exactly when their keys are equal (spec: grouping.txt):
scope (module instance), call site (collapsed frame chain), operation and output slot.
When no Python frame sat between the module boundary and the op, the key falls back to
the op's position: same op, same non-tensor arguments, same ordinal within the module call.
Inputs and outputs are always single-pass layers. A buffer's versions are grouped by the
place that wrote them; its starting value joins the layer of the first write after it when
that write's place repeats (loop-carried state), and is a layer of its own otherwise.

A capture without Python call-site evidence (``RawCapture.detector`` is ``grouper_v1``: a
jaxpr without tracebacks) groups its compute ops by the structural grouper instead
(:mod:`torchlens.analysis.structural`: loops found as back-to-back repeated blocks with
loop-carried dataflow, keyed by position within the module call).

Grouping and labels follow the key core (:mod:`torchlens.analysis.keys`), which the
prediction uses too: ``{func}_{n}`` for the n-th layer of that name in order of first
execution, ``{layer}:{k}`` for the k-th pass, ``{address}:{k}`` for a module call.
"""

from __future__ import annotations

from typing import Hashable, Optional

from torchlens.analysis.builder import builder
from torchlens.analysis.keys import call_label, group_keys, layer_labels, pass_label
from torchlens.analysis.sites import HookMark, Link
from torchlens.analysis.structural import StructOp, structural_keys
from torchlens.capture.backends import Detector
from torchlens.capture.record import (BUFFER, INPUT, OP, OUTPUT, Hooked, RawCapture, RawOp, Segment,
                                      layer_key)

from .buffers import Buffer
from .records import CallSite, Layer, Module, ModuleCall, Op, OpGraph

#: The records grouping builds (one or more per op, layer, module and module call), built
#: through :func:`~torchlens.analysis.builder.builder`.
_new_op = builder(Op)
_new_graph = builder(OpGraph)
_new_layer = builder(Layer)
_new_site = builder(CallSite)
_new_call = builder(ModuleCall)
_new_module = builder(Module)

#: What ran, by detector: ``trace.options.grouping_policy``. ``grouper_v1`` (captures without
#: call-site evidence) groups by graph structure: :mod:`torchlens.analysis.structural`.
GROUPING_POLICIES = {
    Detector.CALLSITE: {"detector": Detector.CALLSITE.value,
                        "key": ("scope", "call_site", "operation", "output_slot")},
    Detector.GROUPER: {"detector": Detector.GROUPER.value,
                       "key": ("scope", "signature", "loop_position")},
}


def group(raw: RawCapture) -> tuple[list[Layer], list[Op], dict[str, Module], dict[str, Buffer]]:
    """Turn a raw capture into layers (first-execution order), ops (capture order), modules
    and buffers."""
    raw_ops = raw.ops
    addresses = [m.address for m in raw.modules]
    call_labels = [call_label(addresses[m], k) for m, k in raw.calls]
    ordinals = _ordinals(raw)
    grouping = group_keys(_keys(raw, ordinals))
    layer_of, pass_of = grouping.layer_of, grouping.pass_of
    labels = layer_labels(raw_ops[i].name for i in grouping.first)

    op_labels = [pass_label(labels[n], k) for n, k in zip(layer_of, pass_of)]
    parents: list[tuple[str, ...]] = []
    children: list[list[str]] = [[] for _ in raw_ops]
    for label, op in zip(op_labels, raw_ops):
        sources = op.parents
        if len(sources) == 1:  # most ops: one parent, no repeat to drop
            parents.append((op_labels[sources[0]],))
            children[sources[0]].append(label)
        else:
            parents.append(_distinct(list(map(op_labels.__getitem__, sources))))
            for p in sources:
                children[p].append(label)

    index: dict[str, Layer] = {}
    gradients = raw.gradients
    graphs: dict[tuple[str, str, int, int], OpGraph] = {}  # equal frozen records: one per site key
    ops = []
    for i, op in enumerate(raw_ops):
        site_key = (addresses[op.scope], op.name, op.slot, ordinals[i])
        graph = graphs.get(site_key)
        if graph is None:
            graph = graphs[site_key] = _new_graph(site_key)
        ops.append(_new_op(
            op_labels[i], labels[layer_of[i]], pass_of[i], op.name, op.out, op.shape, op.dtype, parents[i],
            _distinct(children[i]), op.params, call_labels[op.call] if op.call >= 0 else None, graph, index,
            op.buffer, op.replay, op.container, op.meta, None if gradients is None else (gradients, i),
        ))
    layers = []
    sites: dict[Optional[tuple[Segment, ...]], CallSite] = {}  # equal frozen records: one per raw call site
    for n, members in enumerate(grouping.members()):
        head = raw_ops[members[0]]
        passes = tuple([ops[i] for i in members])
        params = head.params if len(members) == 1 else tuple(p for op in passes for p in op.params)
        site = sites.get(head.site)
        if site is None:
            site = sites[head.site] = _call_site(raw, head, addresses)
        layer = _new_layer(labels[n], head.name, addresses[head.scope], head.kind is INPUT, head.kind is OUTPUT,
                           passes, params if len(params) < 2 else tuple(dict.fromkeys(params)), site)
        layers.append(layer)
        index[layer.layer_label] = layer
    return layers, ops, _modules(raw, addresses, call_labels, op_labels), _buffers(raw, ops, addresses)


def _distinct(labels: list[str]) -> tuple[str, ...]:
    """``labels`` without repeats, in order."""
    if len(labels) < 2 or len(labels) == 2 and labels[0] != labels[1]:
        return tuple(labels)
    return tuple(dict.fromkeys(labels))


def _ordinals(raw: RawCapture) -> list[int]:
    """Each op's ordinal among same-name, same-slot ops of its module call (from 0)."""
    seen: dict[tuple[int, str, int], int] = {}
    out = []
    for op in raw.ops:
        key = (op.call, op.name, op.slot)
        n = seen.get(key, 0)
        out.append(n)
        seen[key] = n + 1
    return out


def _key(i: int, op: RawOp, ordinals: list[int], raw: RawCapture) -> Hashable:
    if op.kind is BUFFER:
        info = op.buffer
        if info.writer >= 0:
            return (BUFFER, info.address, _key(info.writer, raw.ops[info.writer], ordinals, raw))
        return (BUFFER, info.address, info.write_kind, info.place)
    return layer_key(i, op, ordinals[i])


def _keys(raw: RawCapture, ordinals: list[int]) -> list[Hashable]:
    """Every op's grouping key, with each buffer's starting value placed by the rule; compute
    ops of a capture without call-site evidence by the structural grouper."""
    keys = [layer_key(i, op, ordinals[i]) if op.kind is not BUFFER else _key(i, op, ordinals, raw)
            for i, op in enumerate(raw.ops)]
    if raw.detector is Detector.GROUPER:
        structural = structural_keys([
            StructOp(op.scope, op.call if op.kind is OP else None, (op.name, op.args_text, op.slot, op.params),
                     tuple(op.parents))
            for i, op in enumerate(raw.ops)
        ])
        keys = [structural[i] if op.kind is OP else key for i, (op, key) in enumerate(zip(raw.ops, keys))]
    versions: dict[str, list[int]] = {}
    for i, op in enumerate(raw.ops):
        if op.kind is BUFFER:
            versions.setdefault(op.buffer.address, []).append(i)
    for address, indices in versions.items():
        first_write = keys[indices[1]] if len(indices) > 1 else None
        repeats = first_write is not None and sum(keys[i] == first_write for i in indices[1:]) > 1
        keys[indices[0]] = first_write if repeats else (BUFFER, address, "starting value")
    return keys


def _call_site(raw: RawCapture, op: RawOp, addresses: list[str]) -> CallSite:
    frames: list[Link] = []
    for segment in op.site or ():
        if isinstance(segment, Hooked):
            frames.append(HookMark(addresses[segment.module]))
        else:
            frames.extend(raw.chains[segment])
    return _new_site(tuple(frames))


def _modules(raw: RawCapture, addresses: list[str], call_labels: list[str],
             op_labels: list[str]) -> dict[str, Module]:
    inside: list[list[str]] = [[] for _ in raw.calls]
    enclosing: list[list[list[str]]] = []  # per call: its own and every enclosing call's list
    for n, io in enumerate(raw.call_io):  # a call's parent started before it
        enclosing.append([inside[n], *enclosing[io.parent]] if io.parent >= 0 else [inside[n]])
    for label, op in zip(op_labels, raw.ops):
        if op.call >= 0:
            for labels in enclosing[op.call]:
                labels.append(label)
    calls: list[list[ModuleCall]] = [[] for _ in raw.modules]
    label_of = op_labels.__getitem__
    for n, ((m, k), io) in enumerate(zip(raw.calls, raw.call_io)):
        calls[m].append(_new_call(
            call_labels[n], addresses[m], k, call_labels[io.parent] if io.parent >= 0 else None,
            tuple(map(label_of, io.inputs)), tuple(map(label_of, io.outputs)), tuple(inside[n]),
        ))
    return {
        m.address: _new_module(m.address, m.type_name, m.num_calls, tuple(calls[i]), m.params,
                               m.children, m.parent, m.buffers)
        for i, m in enumerate(raw.modules)
    }


def _buffers(raw: RawCapture, ops: list[Op], addresses: list[str]) -> dict[str, Buffer]:
    versions: dict[str, list[Op]] = {}
    for op in ops:
        if op.buffer is not None:
            versions.setdefault(op.buffer.address, []).append(op)
    owner = {b: m.address for m in raw.modules for b in m.buffers}
    return {
        address: Buffer(address, owner.get(address, "self"), initial, final, tuple(versions.get(address, ())))
        for address, (initial, final) in raw.buffer_values.items()
    }
