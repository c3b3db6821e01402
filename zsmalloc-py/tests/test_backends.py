"""Backends (`zsmalloc`, `zblock`, `malloc`) behind the same Pool: every byte read back, nothing
spans or is copied on the other two, their refusals named, handles never cross pools."""

from __future__ import annotations

import pytest

import zsmalloc

BACKENDS = ["zsmalloc", "zblock", "malloc"]


def objects(n: int = 2000) -> list[bytes]:
    return [bytes([i % 251 + 1]) * (1 + (i * 977) % 4000) for i in range(n)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_stores_reads_and_frees(backend):
    pool = zsmalloc.Pool(backend=backend)
    assert pool.config["backend"] == backend
    data = objects()
    hs = [pool.store(d) for d in data]
    for h, d in zip(hs, data):
        assert pool.read(h) == d
        with pool.view(h) as mv:
            assert mv.tobytes() == d
    st = pool.stats()
    assert st["objs_inuse"] == len(data)
    assert st["bytes_stored"] == sum(map(len, data))
    assert st["pages_allocated"] == pool.total_pages > 0
    if backend != "zsmalloc":
        assert st["reads_spanning"] == 0 and st["read_copy_bytes"] == 0
        assert pool.compact() == 0
    for h in hs:
        pool.free(h)
    assert pool.total_pages == 0


def test_zblock_rows_are_block_types_and_its_top_lengths_are_refused():
    pool = zsmalloc.Pool(backend="zblock")
    rows = pool.class_stats()
    assert len(rows) == 37
    assert (rows[0]["size"], rows[0]["objs_per_zspage"], rows[0]["pages_per_zspage"]) == (144, 28, 1)
    assert pool.huge_class_size == 4080
    for n in (4080, 4096):
        with pytest.raises(ValueError) as e:
            pool.store(b"x" * n)
        assert e.value.errno == 28  # ENOSPC
    assert pool.total_pages == 0
    # 28 objects of 100 bytes fill one one-page block; the 29th needs another.
    hs = [pool.store(b"a" * 100) for _ in range(28)]
    assert pool.total_pages == 1
    hs.append(pool.store(b"b" * 100))
    assert pool.total_pages == 2
    with pytest.raises(ValueError, match="no size classes"):
        pool.class_table()


@pytest.mark.parametrize("backend", ["zblock", "malloc"])
@pytest.mark.parametrize(
    "keyword,value,setting",
    [("chain_size", 10, "chain_size"), ("class_delta", 32, "class_delta"),
     ("chain_policy", "heuristic", "chain_policy"), ("read_mode", "map", "read_mode")],
)
def test_zsmalloc_only_keywords_are_refused_naming_both(backend, keyword, value, setting):
    with pytest.raises(ValueError) as e:
        zsmalloc.Pool(backend=backend, **{keyword: value})
    assert setting in str(e.value) and backend in str(e.value)


def test_unknown_backend_lists_the_accepted_ones():
    with pytest.raises(ValueError, match="zsmalloc, zblock, malloc"):
        zsmalloc.Pool(backend="slab")


@pytest.mark.parametrize("a,b", [("zsmalloc", "zblock"), ("zblock", "malloc"), ("malloc", "zblock")])
def test_handles_never_cross_pools(a, b):
    pa, pb = zsmalloc.Pool(backend=a), zsmalloc.Pool(backend=b)
    h = pa.store(b"payload" * 10)
    with pytest.raises(zsmalloc.ZsError, match="another pool"):
        pb.read(h)
    with pytest.raises(zsmalloc.ZsError, match="another pool"):
        pb.free(h)
    assert pa.read(h) == b"payload" * 10
