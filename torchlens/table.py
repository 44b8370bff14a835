"""The plain-text table of a trace: one row per layer (or per collapsed module), then modules.

Fits ``width`` columns (100 by default); buffer rows are named by the buffer's address; "written
at" is the innermost frame in the user's code (``torch_frames=True`` shows torch's own, which is
where a layer inside ``nn.Linear`` runs); ``depth``, ``module`` and ``limit`` filter the rows.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping, Optional

from torchlens.analysis.dot import pass_ranges
from torchlens.analysis.table import fit_table, library_file

from .draw.modules import ROOT, ModuleTree, human, param_count
from .draw.trace_view import params_text, shapes_text
from .memory import memory_line

if TYPE_CHECKING:
    from .records import Layer
    from .trace import Trace


def written_at(layer: "Layer", modules: Mapping[str, Any], torch_frames: bool = False) -> str:
    """The innermost place in the user's code, as ``file:line``; ``(in Linear)`` when every frame is torch's."""
    places: list[Any] = [f for f in layer.call_site.frames if hasattr(f, "code")]
    if not torch_frames:
        user = [p for p in places if not library_file(p.code.filename)]
        if not user and places:
            module = modules.get(layer.module)
            return f"(in {module.type_name})" if module is not None else "(in torch)"
        places = user
    if not places:
        return ""
    place = places[-1]
    return f"{os.path.basename(place.code.filename)}:{place.line}"


def render_trace(trace: "Trace", depth: Optional[int] = None, module: Optional[str] = None,
                 limit: Optional[int] = None, width: int = 100, torch_frames: bool = False) -> str:
    """The readable form of a trace: layers with passes, shapes, modules, params, places."""
    tree = ModuleTree.of(trace, depth, None)
    inside = (lambda a: True) if module in (None, ROOT) else (lambda a: a == module or a.startswith(f"{module}."))
    if module is not None and module not in trace.modules:
        from .errors import TorchLensValueError

        raise TorchLensValueError(f"table(module={module!r}): no such module; modules are {', '.join(list(trace.modules)[:6])} ...")
    rows, seen = [], set()
    for layer in trace.layers:
        if not inside(layer.module):
            continue
        folded = tree.node_of(layer.module)
        if folded is not None:
            if folded not in seen:
                seen.add(folded)
                m = trace.modules[folded]
                count = sum(1 for other in trace.layers if tree.node_of(other.module) == folded)
                params = param_count(trace, tree.subtree(folded))
                rows.append([f"[{folded.rpartition('.')[2]}]", m.type_name, str(m.num_calls), "", folded,
                             f"({human(params)})" if params else "", f"{count} layer{'s' if count != 1 else ''} inside"])
            continue
        head = layer.ops[0]
        op = layer.func_name
        if head.buffer is not None:
            op = f"{head.buffer.address} v{pass_ranges([o.buffer.version for o in layer.ops if o.buffer])}"
        rows.append([layer.layer_label, op, str(layer.num_passes), shapes_text(layer.ops), layer.module,
                     params_text(layer.module, layer.params, trace), written_at(layer, trace.modules, torch_frames)])
    more = ""
    if limit is not None and len(rows) > limit:
        more = f"... {len(rows) - limit} more rows (table(limit=None) shows all)"
        rows = rows[:limit]
    modules = [
        [m.address, m.type_name, str(m.num_calls), ", ".join(map(str, m.calls[:3])) + (" ..." if m.num_calls > 3 else "")]
        for m in trace.modules.values()
        if inside(m.address) and not _below_folded(m.address, tree)
    ]
    parts = [repr(trace), memory_line(trace), "",
             fit_table(["layer", "op", "passes", "shape", "module", "params", "written at"], rows, width,
                       {1: False, 4: True, 5: False})]
    if more:
        parts.append(more)
    parts += ["", fit_table(["module", "type", "calls", "call labels"], modules, width, {0: True, 3: False})]
    return "\n".join(parts)


def _below_folded(address: str, tree: ModuleTree) -> bool:
    """Whether a module sits inside a module the table shows as one row."""
    parts = address.split(".")
    return any(tree.node_of(".".join(parts[:k])) is not None for k in range(1, len(parts)))
