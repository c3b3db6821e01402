"""Objects of several pages: Pool(multi_page_size=...), the band's classes, per-band huge sizes,
objects up to the multi-page size in every read mode, compaction of them."""

from __future__ import annotations

import random

import pytest

import zsmalloc


def test_off_by_default_and_bad_sizes_refused() -> None:
    pool = zsmalloc.Pool()
    assert pool.max_object_size == 4096
    assert pool.config["multi_page_size"] == 0
    assert pool.huge_class_size_band(0) == pool.huge_class_size == 3625
    assert pool.huge_class_size_band(1) == 0
    with pytest.raises(ValueError, match="multi_page_size"):
        zsmalloc.Pool(multi_page_size=12288)
    with pytest.raises(ValueError, match="multi_page_size"):
        zsmalloc.Pool(multi_page_size=-1)
    with pytest.raises(ValueError, match="multi"):
        zsmalloc.Pool(multi_page_size=16384, backend="zblock")


def test_the_band_s_classes() -> None:
    rows = zsmalloc.class_table(multi_page_size=16384)
    assert {r["order"] for r in rows if r["size"] > 4096} == {2}
    assert all(r["order"] == 0 for r in rows if r["size"] <= 4096)
    c404 = next(r for r in rows if r["index"] == 404)
    assert (c404["size"], c404["first_index"]) == (13632, 396)
    pool = zsmalloc.Pool(multi_page_size=16384, chain_size=10)
    assert (pool.huge_class_size_band(0), pool.huge_class_size_band(1)) == (3705, 14841)
    assert pool.max_object_size == 16384


@pytest.mark.parametrize("read_mode", ["copy", "map", "contiguous"])
def test_objects_round_trip_through_compaction(read_mode: str) -> None:
    pool = zsmalloc.Pool(multi_page_size=16384, read_mode=read_mode)
    rng = random.Random(read_mode)
    # A few classes of each band with many objects each, so that compaction has work.
    sizes = [700, 3000, 4096, 5000, 9000, 12000, 16384]
    lens = [rng.choice(sizes) - rng.randint(0, 6) for _ in range(600)]
    data = [rng.randbytes(n) for n in lens]
    handles = [pool.store(d) for d in data]
    for h, d in zip(handles, data):
        assert pool.read(h) == d
    rows = pool.class_stats()
    assert pool.total_pages == sum(r["pages_used"] for r in rows)
    for r in rows:
        zspages = r["obj_allocated"] // r["objs_per_zspage"]
        assert r["pages_used"] == zspages * (r["pages_per_zspage"] << r["order"])
    kept = [(h, d) for i, (h, d) in enumerate(zip(handles, data)) if i % 3 == 0]
    del handles
    pool.compact()
    stats = pool.stats()
    assert stats["objs_moved"] > 0 and stats["bytes_moved"] > 0
    for h, d in kept:
        assert pool.read(h) == d
    with pytest.raises(ValueError):
        pool.store(b"x" * 16385)
    del kept, h
    assert pool.total_pages == 0


def test_a_band_table_given_back_places_objects_the_same(tmp_path) -> None:
    rows = zsmalloc.class_table(multi_page_size=16384)
    assert [r["size"] for r in rows].count(4096) == 1, "the band's unused first class is left out"
    computed = zsmalloc.Pool(multi_page_size=16384)
    # Rows carry their order, so the table brings its multi-page size.
    given = zsmalloc.Pool(class_table=rows)
    assert given.config["multi_page_size"] == 16384
    pairs = zsmalloc.Pool(class_table=given.config["class_table"], multi_page_size=16384)
    triples = [(r["size"], r["pages_per_zspage"], r["order"]) for r in rows]
    path = tmp_path / "band.table"
    path.write_text(
        "page_size 4096\n" + "".join(f"{s} {c} {o}\n" for s, c, o in triples), encoding="utf-8"
    )
    from_file = zsmalloc.Pool(class_table=path)
    pools = [computed, given, pairs, zsmalloc.Pool(class_table=triples), from_file]
    rng = random.Random(7)
    lens = [rng.randint(1, 16384) for _ in range(500)]
    kept = [[p.store(bytes(n)) for n in lens] for p in pools]
    assert len({p.total_pages for p in pools}) == 1
    assert len({p.huge_class_size_band(1) for p in pools}) == 1
    del kept


def test_a_band_table_breaking_the_rules_names_the_entry() -> None:
    with pytest.raises(ValueError, match=r"class_table\[1\] \(size 8192, chain 2\).*order"):
        zsmalloc.Pool(class_table=[(4096, 1), (8192, 2), (16384, 1)])
    with pytest.raises(ValueError, match="must agree"):
        zsmalloc.Pool(class_table=[(4096, 1, 0), (8192, 2, 2), (16384, 1, 2)], multi_page_size=32768)
