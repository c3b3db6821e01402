"""zsmalloc.kernel against the running kernel: the check agrees at every step through Python
and returns the command's JSON keys. Skipped, with the reason, without root, zram control or the
zsmalloc command."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from zsmalloc import kernel
from conftest import lab_binary



def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "the kernel commands need root"
    if not Path("/sys/class/zram-control/hot_add").exists():
        return "this kernel has no zram control"
    if lab_binary() is None:
        return "the zsmalloc command is not built (cargo build --release -p zsmalloc-lab)"
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


@pytest.fixture(autouse=True)
def _bin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZSMALLOC_BIN", str(lab_binary()))


def test_check_agrees_at_every_step() -> None:
    before = sorted(os.listdir("/sys/block"))
    r = kernel.check(synthetic_pages=3000, compressor="lz4", free_share=0.4, seed=5)
    assert r["agree"] is True and r["first_disagreement"] is None
    assert [p["phase"] for p in r["phases"]] == ["fill", "free", "compact"]
    assert all(p["steps"] == p["agreeing"] for p in r["phases"])
    assert r["phases"][0]["steps"] == 3000
    assert r["kernel"]["compressor"] == "lz4" and r["kernel"]["page_size"] == os.sysconf("SC_PAGESIZE")
    assert sorted(os.listdir("/sys/block")) == before


def test_refusals_raise_with_the_exit_code() -> None:
    with pytest.raises(kernel.KernelError) as e:
        kernel.check(synthetic_pages=4, compressor="none-such")
    assert e.value.exit_code == 2 and "offers" in str(e.value)


def test_capture_and_import(tmp_path: Path) -> None:
    out = tmp_path / "k.trace"
    r = kernel.capture(str(out), synthetic_pages=500, compressor="lz4")
    assert r["kernel_pages_after_fill"] > 0 and out.exists()
    events = tmp_path / "events"
    events.write_text("zs_malloc 0x1 100 0x10\nzs_free 0x1 0x10\n")
    imp = kernel.import_trace(str(events), str(tmp_path / "i.trace"))
    assert (imp["stores"], imp["frees"]) == (1, 1)
