"""The Python-against-C speed harness runs (a smoke test: timings are reported, never asserted)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import speed  # noqa: E402


def test_object_sizes_follow_the_distribution():
    lengths, data = speed.make_objects(20_000)
    assert len(data) == sum(lengths)
    assert min(lengths) >= 1 and max(lengths) <= 4096
    mean = sum(lengths) / len(lengths)
    assert 650 < mean < 760  # normal(694, 474) clipped to 1..4096


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler for the harness's C side")
def test_harness_measures_python_and_c():
    res = speed.measure(n=2000, repeats=1)
    ops = {r["operation"] for r in res["rows"]}
    assert {"store (loop)", "store_many", "read (loop)", "read_many", "read_many (out=)"} <= ops
    assert all(r["python_ns"] > 0 and r["c_ns"] > 0 for r in res["rows"])
    assert {"store", "store_vecs", "read", "read_into", "free"} <= set(res["c"])
    assert speed.main(["-n", "500", "-r", "1", "--json"]) == 0
