"""Plain-text tables: left-aligned columns, two spaces apart, a dashed rule under the header.

Torch-free, so the prediction, the linter's tools and the trace all print tables alike.
"""

from __future__ import annotations

from typing import Optional, Sequence


def format_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to their widest cell, a dashed rule under the header."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    lines = [header, ["-" * w for w in widths], *rows]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip() for cells in lines)


def fit_table(header: Sequence[str], rows: Sequence[Sequence[str]], width: int,
              shrink: Optional[dict[int, bool]] = None) -> str:
    """:func:`format_table` narrowed to ``width`` columns by shortening the widest cells.

    Only the columns in ``shrink`` (all when ``None``) are cut, with ``…``: from the left where
    ``shrink[i]`` is true (module paths, whose last parts say the most), else from the right.
    No column goes below its header or 8 characters.
    """
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    shrink = dict.fromkeys(range(len(header)), False) if shrink is None else shrink
    floor = [max(len(h), 8) if i in shrink else widths[i] for i, h in enumerate(header)]
    while sum(widths) + 2 * (len(widths) - 1) > width:
        i = max(range(len(widths)), key=lambda k: widths[k] - floor[k])
        if widths[i] <= floor[i]:
            break
        widths[i] -= 1
    cut = [[_cut(str(c), w, shrink.get(i, False)) for i, (c, w) in enumerate(zip(row, widths))] for row in rows]
    return format_table(header, cut)


def _cut(text: str, width: int, keep_end: bool) -> str:
    if len(text) <= width:
        return text
    return "…" + text[len(text) - width + 1:] if keep_end else text[:width - 1] + "…"


def library_file(filename: str) -> bool:
    """Whether a file belongs to torch itself, or to JAX or Flax for a JAX trace (their frames are
    not where a user wrote a layer)."""
    return any(filename.startswith(root) for root in _torch_roots())


def _torch_roots() -> tuple[str, ...]:
    global _ROOTS
    if _ROOTS is None:
        import importlib.util
        import os

        roots: list[str] = []
        for name in ("torch", "jax", "jaxlib", "flax"):
            spec = importlib.util.find_spec(name)  # finds the package without importing it
            roots.extend(os.path.join(p, "") for p in ((spec.submodule_search_locations or ()) if spec else ()))
        _ROOTS = tuple(roots)
    return _ROOTS


_ROOTS: "tuple[str, ...] | None" = None
