"""The fleet notebook runs top to bottom on a dask LocalCluster (it asserts its own figures)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("distributed")

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "notebooks" / "optimize_fleet.ipynb"


@pytest.mark.skipif(
    not (os.environ.get("ZSMALLOC_BIN") or shutil.which("zsmalloc")),
    reason="the zsmalloc command is not built (scripts/test-python.sh builds it)",
)
def test_optimize_fleet_notebook_executes():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()
    text = "".join(
        out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
    )
    assert "frontiers gathered" in text
    assert any(
        "data" in out and "image/png" in out["data"]
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
    ), "the frontier plot was not drawn"
