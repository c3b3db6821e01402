"""Read modes (`copy`, `map`, `contiguous`) and backings: the same placement and spanning reads
as `copy`, nothing copied outside `copy`, every byte read back, per-class read counters."""

from __future__ import annotations

import pytest

import zsmalloc

MODES = [("copy", "anonymous"), ("copy", "memfd"), ("map", "anonymous"), ("contiguous", "anonymous"),
         ("contiguous", "memfd")]


def workload(pool):
    """Stores, frees, compacts, reads every object by every path; returns what must match."""
    data = [bytes([i % 251 + 1]) * (200 + (i * 977) % 3800) for i in range(3000)]
    hs = [pool.store(d) for d in data]
    for i in range(0, len(hs), 3):
        pool.free(hs[i])
    pool.compact()
    copied_views = 0
    for i, h in enumerate(hs):
        if i % 3 == 0:
            continue
        assert pool.read(h) == data[i]
        with pool.view(h) as mv:
            assert mv.tobytes() == data[i]
        v = pool.view(h)
        copied_views += v.copied
        assert v.tobytes() == data[i]
        v.release()
    rows = pool.class_stats()
    st = pool.stats()
    placement = [(r["index"], r["fullness"], r["obj_used"], r["pages_used"]) for r in rows]
    reads = [(r["index"], r["reads"], r["reads_spanning"]) for r in rows]
    for key in ("reads", "reads_spanning", "read_copy_bytes"):
        assert sum(r[key] for r in rows) == st[key], key
    return placement, reads, st, copied_views


@pytest.mark.parametrize("mode,backing", MODES[1:])
def test_every_mode_places_and_counts_as_copy(mode, backing):
    base = workload(zsmalloc.Pool())
    got = workload(zsmalloc.Pool(read_mode=mode, backing=backing))
    assert got[0] == base[0], "placement"
    assert got[1] == base[1], "per-class reads and spanning reads"
    for key in ("pages_allocated", "pages_peak", "pages_compacted", "objs_moved", "reads",
                "reads_spanning", "writes_spanning"):
        assert got[2][key] == base[2][key], key
    assert base[2]["read_copy_bytes"] > 0 and base[3] > 0
    if mode == "copy":
        assert got[2]["read_copy_bytes"] == base[2]["read_copy_bytes"]
    else:
        assert got[2]["read_copy_bytes"] == 0, "nothing copied"
        assert got[3] == 0, "views are zero-copy"


@pytest.mark.parametrize("mode,backing", MODES)
def test_config_and_scatter_free_round_trip(mode, backing):
    pool = zsmalloc.Pool(read_mode=mode, backing=backing)
    assert pool.config["read_mode"] == mode
    assert pool.config["backing"] == ("memfd" if mode == "map" else backing)
    hs = pool.store_many([bytes([7]) * 3000] * 20)
    assert all(x == bytes([7]) * 3000 for x in pool.read_many(hs))
    del hs
    assert pool.total_pages == 0


def test_many_open_map_views_in_one_thread_raise_eagain_never_wait():
    pool = zsmalloc.Pool(read_mode="map")
    row = next(r for r in pool.class_table() if r["spanning_per_zspage"] and r["size"] > 2000)
    n = row["size"] - zsmalloc.HANDLE_SIZE
    hs = [pool.store(bytes([i % 255 + 1]) * n) for i in range(300)]
    views, refused = [], None
    for h in hs:
        try:
            views.append(pool.view(h))
        except zsmalloc.ZsError as e:
            refused = e
            break
    assert refused is not None and refused.errno == 11  # EAGAIN
    assert len(views) >= 64
    for v in views:
        v.release()
    assert all(pool.read(h) == bytes([i % 255 + 1]) * n for i, h in enumerate(hs))


def test_unknown_mode_and_backing_list_the_accepted_ones():
    with pytest.raises(ValueError, match="copy, map, contiguous"):
        zsmalloc.Pool(read_mode="mmap")
    with pytest.raises(ValueError, match="anonymous, memfd"):
        zsmalloc.Pool(backing="shm")
