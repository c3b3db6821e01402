"""zsmalloc.frames (pandas) and zsmalloc.plot (matplotlib)."""

from __future__ import annotations

import pytest

import zsmalloc

pd = pytest.importorskip("pandas")
matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import zsmalloc.frames as zf  # noqa: E402
import zsmalloc.plot as zp  # noqa: E402


def test_class_stats_frame(pool):
    hs = pool.store_many([bytes(100)] * 40 + [bytes(2000)] * 10)
    df = zf.class_stats(pool)
    assert df.index.name == "index"
    assert df["obj_used"].sum() == 50
    assert {"fullness_0", "fullness_11", "tail_waste_pct", "zspage_bytes"} <= set(df.columns)
    assert (df["tail_waste_pct"] >= 0).all()
    del hs


def test_class_table_frames():
    df = zf.class_table(chain_size=10)
    assert len(df) == len(zsmalloc.class_table(chain_size=10))
    per_index = zf.class_table(chain_size=10, by_index=True)
    assert len(per_index) == 255 and list(per_index.index) == list(range(255))
    assert per_index.loc[0, "logical_size"] == 32 and per_index.loc[254, "logical_size"] == 4096
    assert (per_index["size"] >= per_index["logical_size"]).all()


def test_results_frame_with_deltas():
    runs = {
        "classic": {"pages": 175111, "reads_spanning": 110377, "utilization_pct": 97.3},
        "heuristic": {"pages": 175920, "reads_spanning": 103256, "utilization_pct": 96.8},
    }
    df = zf.results(runs, base="classic")
    delta = df.loc["Δ% heuristic vs classic"]
    assert delta["pages"] == 0.5 and delta["reads_spanning"] == -6.5
    assert df.loc["classic", "pages"] == 175111
    assert len(zf.results([runs["classic"], runs["heuristic"]])) == 2


def test_stats_frames(pool):
    other = zsmalloc.Pool("other")
    h = pool.store(b"x")
    assert zf.stats(pool).loc["test", "objs_inuse"] == 1
    both = zf.stats({"a": pool, "b": other})
    assert list(both.index) == ["a", "b"] and both.loc["b", "objs_inuse"] == 0
    del h


def test_plots_draw_each_configuration():
    tables = {p: zsmalloc.class_table(chain_size=10, chain_policy=p) for p in ("classic", "heuristic")}
    for draw in (zp.spanning, zp.waste, zp.chains):
        ax = draw(tables)
        assert len(ax.get_lines()) == 2
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["classic", "heuristic"]
    fig = zp.overview(tables)
    assert len(fig.axes) == 3


def test_plot_from_live_class_stats(pool):
    hs = pool.store_many([bytes(300)] * 100)
    ax = zp.spanning({"live": pool.class_stats()})
    assert len(ax.get_lines()) == 1
    del hs


def test_class_rows_carry_their_page_size(pool):
    assert all(r["page_size"] == 16384 for r in zsmalloc.class_table(page_size=16384))
    hs = pool.store_many([bytes(300)] * 10)
    assert all(r["page_size"] == pool.page_size for r in pool.class_stats())
    del hs


def test_waste_plot_scales_by_the_rows_page_size():
    rows16 = zsmalloc.class_table(page_size=16384)
    ax = zp.waste({"16K": rows16})
    _, ys = ax.get_lines()[0].get_data()
    regular = [r for r in rows16 if not r["huge"]]
    want = [100.0 * r["tail_waste"] / (r["pages_per_zspage"] * 16384) for r in regular]
    assert list(ys) == pytest.approx(want)


def test_plots_refuse_rows_without_a_page_size_or_a_contradicting_one():
    bare = [{k: v for k, v in r.items() if k != "page_size"} for r in zsmalloc.class_table(page_size=16384)]
    with pytest.raises(ValueError, match="page_size"):
        zp.waste({"bare": bare})
    zp.waste({"bare": bare}, page_size=16384)  # told the page size: fine
    with pytest.raises(ValueError, match="contradicts"):
        zp.overview({"16K": zsmalloc.class_table(page_size=16384)}, page_size=4096)
