"""The plain-text table of a trace: one row per layer, then one row per module."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from torchlens.analysis.table import format_table

from .memory import memory_line

if TYPE_CHECKING:
    from .trace import Trace


def render_trace(trace: "Trace") -> str:
    """The readable form of a trace: layers with passes, shapes, modules, params, places."""
    rows = []
    for layer in trace.layers:
        head = layer.ops[0]
        place = layer.call_site.innermost
        where = f"{os.path.basename(place.code.filename)}:{place.line}" if place else ""
        rows.append([
            layer.layer_label, layer.func_name, str(layer.num_passes),
            "x".join(map(str, head.shape)) or "scalar", layer.module,
            ", ".join(layer.params), where,
        ])
    modules = [
        [m.address, m.type_name, str(m.num_calls), ", ".join(map(str, m.calls[:3])) + (" ..." if m.num_calls > 3 else "")]
        for m in trace.modules.values()
    ]
    return "\n".join([
        repr(trace),
        memory_line(trace),
        "",
        format_table(["layer", "func", "passes", "shape", "module", "params", "written at"], rows),
        "",
        format_table(["module", "type", "calls", "call labels"], modules),
    ])
