"""zsmalloc.inspect and zsmalloc.machine: the machine's zram devices and zswap as the
``zsmalloc inspect`` command reports them (no root needed), sampled over time, and the
own-machine notebook run top to bottom. Skipped without the zsmalloc command."""

from __future__ import annotations

import os
import shutil

import pytest

import zsmalloc
from zsmalloc import machine

from conftest import run_notebook


pytestmark = pytest.mark.skipif(
    not (os.environ.get("ZSMALLOC_BIN") or shutil.which("zsmalloc")),
    reason="the zsmalloc command is not built (scripts/test-python.sh builds it)",
)


def _zram_devices() -> set[str]:
    return {n for n in os.listdir("/sys/block") if n.startswith("zram")}


def test_inspect_lists_every_zram_device_and_zswap() -> None:
    before = _zram_devices()
    r = zsmalloc.inspect()
    after = _zram_devices()
    names = {d["name"] for d in r["zram"]}
    assert (before & after) <= names
    assert r["page_size"] >= 4096 and isinstance(r["zswap"]["present"], bool)
    for d in r["zram"]:
        f = d["figures"]
        assert (f is None) == (not d["initialised"])
        if f is not None:
            assert f["overhead_bytes"] == d["mm_stat"]["mem_used_total"] - d["mm_stat"]["compr_data_size"]


def test_samples_become_one_row_per_device_per_report() -> None:
    reports = machine.sample(count=2, every=0.1)
    assert len(reports) == 2 and reports[1]["time_unix_s"] > reports[0]["time_unix_s"]
    rows = machine.rows(reports)
    assert len(rows) == sum(len(r["zram"]) for r in reports)
    with pytest.raises(ValueError):
        machine.sample(count=0)


def test_a_snapshot_of_no_device_is_refused() -> None:
    with pytest.raises(ValueError):
        machine.snapshot("zram4000")


def test_own_machine_notebook_executes() -> None:
    pytest.importorskip("matplotlib")
    pytest.importorskip("pandas")
    text, images = run_notebook("own_machine.ipynb", timeout=300)
    assert "sampled 4 reports" in text
    assert images, "the plot was not drawn"
