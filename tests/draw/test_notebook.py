"""``examples/tour.ipynb`` runs top to bottom and shows its drawings as SVG."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

TOUR = Path(__file__).parents[2] / "examples" / "tour.ipynb"


def test_tour_notebook_runs_and_shows_svg_drawings():
    notebook = nbformat.read(TOUR, as_version=4)
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(TOUR.parent)}}).execute()
    svgs = [output["data"]["image/svg+xml"] for cell in notebook.cells if cell.cell_type == "code"
            for output in cell.get("outputs", ()) if "image/svg+xml" in output.get("data", {})]
    assert len(svgs) == 4
    assert all("<svg" in svg for svg in svgs)
    assert any("tanh_1:3" in svg for svg in svgs) and any("legend" in svg for svg in svgs)
    printed = "".join(o.get("text", "") for cell in notebook.cells for o in cell.get("outputs", ()))
    assert "tanh_1" in printed and "call site" in printed
