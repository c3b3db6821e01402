"""The chain-policies notebook runs top to bottom (it asserts the RFC's figures itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "notebooks" / "chain_policies.ipynb"


def test_chain_policies_notebook_executes():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    client.execute()
    text = "".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
    )
    assert "figures reproduced" in text  # printed once the notebook's own asserts passed
    images = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if "data" in out and "image/png" in out["data"]
    ]
    assert images, "the per-class plots were not drawn"
