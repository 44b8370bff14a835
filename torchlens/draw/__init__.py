"""Drawing: a trace, a prediction or a check report as a ``graphviz.Digraph``.

A pure function of the records: it reads layers, ops, modules, buffers and containers and never
runs the model again. ``trace.draw()``, ``pred.draw()`` and ``report.draw()`` call in here.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

from torchlens.analysis.dot import Drawing, svg_bundle, to_digraph

from ..errors import TorchLensValueError
from ..options import CaptureOptions
from .containers import decorate_containers
from .modules import Collapse, ModuleTree
from .trace_view import Settings, TraceDrawing

if TYPE_CHECKING:
    from ..trace import Trace

__all__ = ["draw_trace", "Drawing", "svg_bundle", "VIEWS", "DIRECTIONS"]

VIEWS = ("rolled", "unrolled")
DIRECTIONS = ("TB", "LR", "BT", "RL")


def settings_for(options: CaptureOptions, view: str, show_buffers: Optional[str], show_containers: Any,
                 container_max_inline: Optional[int], direction: str, fold_repeats: bool = True) -> Settings:
    """Validated settings; options left ``None`` come from the trace's ``CaptureOptions``."""
    if view not in VIEWS:
        raise TorchLensValueError(f"draw(view=...) must be 'rolled' or 'unrolled', got {view!r}")
    if direction not in DIRECTIONS:
        raise TorchLensValueError(f"draw(direction=...) must be one of {', '.join(DIRECTIONS)}, got {direction!r}")
    chosen: dict[str, Any] = {k: v for k, v in (("show_buffers", show_buffers), ("show_containers", show_containers),
                                ("container_max_inline", container_max_inline)) if v is not None}
    options = dataclasses.replace(options, **chosen)  # validates like CaptureOptions does
    return Settings(view, options.show_buffers, options.show_containers, options.container_max_inline,
                    direction, fold_repeats)


def draw_trace(trace: "Trace", view: str = "rolled", depth: Optional[int] = None,
               show_buffers: Optional[str] = None, show_containers: Any = None,
               container_max_inline: Optional[int] = None, direction: str = "TB",
               path: Optional[Union[str, Path]] = None, collapse: Collapse = None,
               fold_repeats: bool = True) -> Drawing:
    """See :meth:`torchlens.Trace.draw`."""
    settings = settings_for(trace.options.capture, view, show_buffers, show_containers, container_max_inline,
                            direction, fold_repeats)
    drawing = TraceDrawing(trace, settings, ModuleTree.of(trace, depth, collapse))
    scene = drawing.rolled() if view == "rolled" else drawing.unrolled()
    decorate_containers(drawing)
    return to_digraph(scene, path)
