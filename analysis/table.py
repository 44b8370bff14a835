"""Plain-text tables: left-aligned columns, two spaces apart, a dashed rule under the header.

Torch-free, so the prediction, the linter's tools and the trace all print tables alike.
"""

from __future__ import annotations

from typing import Sequence


def format_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to their widest cell, a dashed rule under the header."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    lines = [header, ["-" * w for w in widths], *rows]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip() for cells in lines)
