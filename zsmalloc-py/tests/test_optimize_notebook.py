"""The fleet notebook runs top to bottom on a dask LocalCluster (it asserts its own figures)."""

from __future__ import annotations

import os
import shutil

import pytest

from conftest import run_notebook

pytest.importorskip("distributed")


@pytest.mark.skipif(
    not (os.environ.get("ZSMALLOC_BIN") or shutil.which("zsmalloc")),
    reason="the zsmalloc command is not built (scripts/test-python.sh builds it)",
)
def test_optimize_fleet_notebook_executes():
    text, images = run_notebook("optimize_fleet.ipynb", timeout=900)
    assert "frontiers gathered" in text
    assert images, "the frontier plot was not drawn"
