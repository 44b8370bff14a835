"""``trace.explain`` and ``pred.explain``: why ops are one layer, in words and source lines.

One layer: its scope, each frame of its call-site chain with the source line and the marked span,
its op and output slot, and where each pass came from. Two layers: which part of their keys
differs. The drawing's node tooltips carry the same text.
"""

from __future__ import annotations

import linecache
import os
from typing import Any, Optional, Sequence

from .errors import TorchLensValueError
from .sites import Place


def frame_text(frame: Any, indent: str = "  ") -> list[str]:
    """A frame of a call site: where, the source line, and a caret under the instruction's span."""
    if not isinstance(frame, Place):
        return [f"{indent}{frame}  (a module hook ran the frames below)"]
    lines = [f"{indent}{os.path.basename(frame.code.filename)}:{frame.line} in {frame.code.qualname}"]
    source = linecache.getline(frame.code.filename, frame.line or 0).rstrip()
    if source:
        stripped = source.lstrip()
        cut = len(source) - len(stripped)
        lines.append(f"{indent}    {stripped}")
        if frame.col is not None and frame.end_col is not None and frame.end_line == frame.line:
            width = max(1, frame.end_col - frame.col)
            lines.append(f"{indent}    {' ' * max(0, frame.col - cut)}{'^' * width}")
    return lines


def chain_text(frames: Optional[Sequence[Any]]) -> list[str]:
    if frames is None:
        return ["  (a place the prediction could not read)"]
    if not frames:
        return ["  (no Python frame: keyed by its position in the module call)"]
    return [line for frame in frames for line in frame_text(frame)]


def explain_layer(trace: Any, layer: Any) -> str:
    """Why the ops of ``layer`` are one layer (see the module docstring)."""
    module = trace.modules.get(layer.module)
    kind = f" ({module.type_name})" if module is not None else ""
    head = f"{layer.layer_label}: op {layer.func_name}, {layer.num_passes} pass{'es' if layer.num_passes > 1 else ''}"
    lines = [head, f"scope: {layer.module}{kind}"]
    if layer.is_input or layer.is_output:
        lines.append("a model " + ("input" if layer.is_input else "output") + ": always one pass")
        return "\n".join(lines)
    if layer.is_buffer:
        lines.append(f"buffer {layer.ops[0].buffer.address}: versions grouped by the place that wrote them")
    lines.append("call site (outermost first):")
    options = getattr(trace, "options", None)
    if not layer.call_site.frames and getattr(options, "grouping_policy", {}).get("detector") == "grouper_v1":
        lines.append("  (no Python frame in this capture: grouped by graph structure, grouper_v1: "
                     "op signature and position in a repeated loop-carried block)")
    else:
        lines += chain_text(layer.call_site.frames)
    lines.append(f"output slot {layer.ops[0].graph.site_key[2]}")
    if layer.num_passes > 1:
        calls = [op.module_call or "no module call" for op in layer.ops]
        if len(set(calls)) == len(calls) and len(calls) > 1 and layer.module != "self":
            lines.append(f"passes: one per call of {layer.module} ({', '.join(calls[:4])}{' ...' if len(calls) > 4 else ''})")
        else:
            lines.append(f"passes: this place ran {layer.num_passes} times "
                         f"(in {', '.join(dict.fromkeys(calls))})")
    return "\n".join(lines)


def _key_parts(scope: str, frames: Optional[Sequence[Any]], func: str, slot: int) -> dict[str, Any]:
    return {"scope": scope, "call site": tuple(frames) if frames is not None else None, "op": func, "slot": slot}


def compare(a_label: str, a_parts: dict[str, Any], b_label: str, b_parts: dict[str, Any]) -> str:
    """What differs between two layers' keys, part by part."""
    lines = [f"{a_label} and {b_label}:"]
    for part in ("scope", "op", "slot"):
        same = a_parts[part] == b_parts[part]
        lines.append(f"  {part}: {'same' if same else 'differs'} ({a_parts[part]}" + ("" if same else f" vs {b_parts[part]}") + ")")
    a_chain, b_chain = a_parts["call site"], b_parts["call site"]
    if a_chain == b_chain:
        lines.append("  call site: same")
    else:
        a_chain, b_chain = a_chain or (), b_chain or ()
        common = 0
        while common < min(len(a_chain), len(b_chain)) and a_chain[common] == b_chain[common]:
            common += 1
        lines.append(f"  call site: differs at frame {common + 1} (the first {common} are shared)")
        for label, chain in ((a_label, a_chain), (b_label, b_chain)):
            lines.append(f"  {label}:")
            lines += (["    (no frame there)"] if common >= len(chain)
                      else [f"  {line}" for line in frame_text(chain[common])])
    if a_chain == b_chain and all(a_parts[p] == b_parts[p] for p in ("scope", "op", "slot")):
        lines.append("  the keys are equal, so these would be passes of one layer")
    return "\n".join(lines)


def explain_trace(trace: Any, labels: Sequence[str]) -> str:
    """``trace.explain(label)`` or ``trace.explain(a, b)``: layer labels or pass labels."""
    layers = [_layer(trace, label) for label in labels]
    if len(layers) == 1:
        return explain_layer(trace, layers[0])
    if len(layers) == 2:
        a, b = layers
        return compare(a.layer_label, _key_parts(a.module, a.call_site.frames, a.func_name, a.ops[0].graph.site_key[2]),
                       b.layer_label, _key_parts(b.module, b.call_site.frames, b.func_name, b.ops[0].graph.site_key[2]))
    raise TorchLensValueError(f"explain takes one layer label or two, got {len(labels)}")


def _layer(trace: Any, label: str) -> Any:
    found = trace[label]
    layer = getattr(found, "layer", found)
    if not hasattr(layer, "call_site"):
        raise TorchLensValueError(f"explain takes layer or pass labels (tanh_1, tanh_1:2); {label!r} is a module")
    return layer


def explain_predicted(pred: Any, labels: Sequence[str]) -> str:
    """``pred.explain(label)`` or ``pred.explain(a, b)`` over predicted layers."""
    layers = [pred[label] for label in labels]
    if len(layers) == 1:
        layer = layers[0]
        lines = [f"{layer.layer_label}: op {layer.func_name}, predicted passes {layer.count}",
                 f"scope: {layer.module}", "call site (outermost first):", *chain_text(layer.call_site),
                 f"output slot {layer.slot}"]
        if layer.passes_note:
            lines.append(f"passes not static: {layer.passes_note}")
        if layer.note and layer.note != layer.passes_note:
            lines.append(f"note: {layer.note}")
        return "\n".join(lines)
    if len(layers) == 2:
        a, b = layers
        return compare(a.layer_label, _key_parts(a.module, a.call_site, a.func_name, a.slot),
                       b.layer_label, _key_parts(b.module, b.call_site, b.func_name, b.slot))
    raise TorchLensValueError(f"explain takes one layer label or two, got {len(labels)}")
