"""The Python API, used the way a notebook user would."""

from __future__ import annotations

import array
import gc
import inspect

import pytest

import zsmalloc


def test_store_read_free_round_trip(pool):
    h = pool.store(b"compressed page")
    assert pool.read(h) == b"compressed page"
    assert len(h) == h.size == 15 and h.alive
    stats = pool.stats()
    assert stats["objs_inuse"] == 1 and stats["bytes_stored"] == 15
    assert pool.total_pages > 0
    pool.free(h)
    assert not h.alive
    assert pool.total_pages == 0
    assert pool.stats()["objs_inuse"] == 0


def test_any_bytes_like_object_is_stored(pool):
    sources = [
        b"bytes",
        bytearray(b"bytearray"),
        memoryview(b"a memoryview slice")[2:9],
        array.array("I", [1, 2, 3]),
    ]
    handles = [pool.store(s) for s in sources]
    for s, h in zip(sources, handles):
        assert pool.read(h) == bytes(s)


def test_dropping_the_last_reference_frees_the_object(pool):
    h = pool.store(b"x" * 100)
    assert pool.stats()["objs_inuse"] == 1
    del h
    gc.collect()
    assert pool.stats()["objs_inuse"] == 0
    assert pool.total_pages == 0


def test_handle_keeps_its_pool_alive():
    h = zsmalloc.Pool("temporary").store(b"still here")
    gc.collect()
    assert h.pool.read(h) == b"still here"
    assert h.pool.name == "temporary"


def test_read_into_fills_a_caller_buffer(pool):
    h = pool.store(b"0123456789")
    buf = bytearray(16)
    assert pool.read_into(h, buf) == 10
    assert buf[:10] == b"0123456789" and buf[10:] == bytes(6)
    mv = memoryview(bytearray(10))
    assert pool.read_into(h, mv) == 10 and mv.tobytes() == b"0123456789"


def test_malloc_then_write(pool):
    h = pool.malloc(64)
    assert len(h) == 64
    pool.write(h, b"w" * 64)
    assert pool.read(h) == b"w" * 64
    pool.write(h, bytearray(b"v" * 64))
    assert pool.read(h) == b"v" * 64


def test_huge_and_page_sized_objects(pool):
    assert pool.huge_class_size == 3632 - 7  # mainline on 4K pages, chain 8
    for n in (pool.huge_class_size - 1, pool.huge_class_size, 4096):
        data = bytes(range(256)) * (n // 256) + bytes(n % 256)
        h = pool.store(data)
        assert pool.read(h) == data


def test_large_pages_release_the_gil_path():
    pool = zsmalloc.Pool(page_size=65536)
    data = bytes(range(256)) * 256
    h = pool.store(data)  # 64 KiB: stored with the GIL released
    assert pool.read(h) == data
    buf = bytearray(65536)
    pool.read_into(h, buf)
    assert buf == data


def test_lookup_class_index_matches_the_class_table(pool):
    assert pool.lookup_class_index(1) == 0
    assert pool.lookup_class_index(32) == 0
    assert pool.lookup_class_index(4096) == 254
    for row in pool.class_table():
        assert pool.lookup_class_index(row["size"]) == row["index"]


def test_configuration_keywords():
    pool = zsmalloc.Pool(
        "cfg",
        page_size=16384,
        chain_size=4,
        class_delta=64,
        chain_policy="heuristic",
        read_mode="copy",
        mem_limit_pages=1000,
    )
    assert pool.config == {
        "page_size": 16384,
        "chain_size": 4,
        "class_delta": 64,
        "chain_policy": "heuristic",
        "read_mode": "copy",
        "mem_limit_pages": 1000,
        "backing": "anonymous",
        "backend": "zsmalloc",
        "class_table": None,
        "multi_page_size": 0,
        "payload": True,
    }
    assert pool.name == "cfg" and pool.page_size == 16384
    assert "heuristic" in repr(pool)


def test_defaults_are_mainline():
    cfg = zsmalloc.Pool().config
    assert cfg == {
        "page_size": 4096,
        "chain_size": 8,
        "class_delta": 16,  # page_size >> 8
        "chain_policy": "classic",
        "read_mode": "copy",
        "mem_limit_pages": 0,
        "backing": "anonymous",
        "backend": "zsmalloc",
        "class_table": None,
        "multi_page_size": 0,
        "payload": True,
    }


@pytest.mark.parametrize("function", [zsmalloc.Pool, zsmalloc.class_table])
def test_help_shows_the_defaults_a_pool_gets(function):
    params = inspect.signature(function).parameters
    shown = {k: p.default for k, p in params.items() if k != "name"}
    expected = {**zsmalloc.Pool().config, "class_delta": 0}  # 0: page_size >> 8
    if function is zsmalloc.class_table:
        del expected["backend"]  # class tables are zsmalloc's
        del expected["payload"]  # a table is placement's, whatever a pool keeps
    assert shown == expected
    assert zsmalloc.Pool(**shown).config == zsmalloc.Pool().config
    if function is zsmalloc.Pool:
        assert params["name"].default == "pool" == zsmalloc.Pool().name


def test_fixed_and_callable_chain_policies():
    fixed = zsmalloc.class_table(chain_policy="fixed-2")
    assert {r["pages_per_zspage"] for r in fixed} <= {1, 2}

    calls = []

    def one_page(size, page, max_chain):
        calls.append((size, page, max_chain))
        return 1

    pool = zsmalloc.Pool(chain_policy=one_page, chain_size=10)
    assert pool.config["chain_policy"] == "one_page"
    assert {r["pages_per_zspage"] for r in pool.class_table()} == {1}
    assert calls and all(page == 4096 and m == 10 for _, page, m in calls)
    assert pool.read(pool.store(b"ok")) == b"ok"


def test_from_env_reads_zsmalloc_variables(monkeypatch):
    monkeypatch.setenv("ZSMALLOC_PAGE_SIZE", "16384")
    monkeypatch.setenv("ZSMALLOC_CHAIN_SIZE", "10")
    monkeypatch.setenv("ZSMALLOC_CHAIN_POLICY", "heuristic")
    monkeypatch.setenv("ZSMALLOC_MEM_LIMIT_PAGES", "123")
    pool = zsmalloc.Pool.from_env("env")
    assert pool.name == "env"
    assert pool.config["page_size"] == 16384 and pool.config["chain_size"] == 10
    assert pool.config["chain_policy"] == "heuristic"
    assert pool.config["mem_limit_pages"] == 123
    # Explicit keywords ignore the environment.
    assert zsmalloc.Pool().config["page_size"] == 4096


def test_stats_have_the_zs_pool_stats_names(pool):
    names = {
        "pages_compacted", "pages_allocated", "pages_peak", "pages_cached", "objs_allocated",
        "objs_inuse", "bytes_stored", "reads", "reads_spanning", "read_copy_bytes",
        "writes_spanning", "objs_moved", "bytes_moved",
    }
    assert set(pool.stats()) == names
    # A class whose zspages hold objects that cross page boundaries.
    row = next(r for r in pool.class_table() if r["spanning_per_zspage"] and r["size"] > 900)
    n = row["size"] - zsmalloc.HANDLE_SIZE
    hs = [pool.store(bytes(n)) for _ in range(row["objs_per_zspage"])]
    for h in hs:
        pool.read(h)
    s = pool.stats()
    assert s["objs_inuse"] == len(hs) and s["bytes_stored"] == n * len(hs)
    assert s["reads"] == len(hs)
    assert s["reads_spanning"] == row["spanning_per_zspage"]
    assert s["read_copy_bytes"] == n * s["reads_spanning"]
    assert s["pages_peak"] >= s["pages_allocated"] == pool.total_pages


def test_class_stats_rows(pool):
    hs = pool.store_many([bytes(100)] * 50)
    rows = pool.class_stats()
    assert [r["size"] for r in rows] == sorted(r["size"] for r in rows)
    used = [r for r in rows if r["obj_used"]]
    assert len(used) == 1
    row = used[0]
    assert row["size"] >= 108 and row["obj_used"] == 50 and len(row["fullness"]) == 12
    assert row["bytes_stored"] == 5000
    assert row["pages_used"] == row["pages_per_zspage"] * sum(row["fullness"])
    assert row["first_index"] <= row["index"] == row["last_index"]
    del hs


def test_class_table_function_matches_pools():
    rows = zsmalloc.class_table(chain_size=10, chain_policy="heuristic")
    pool = zsmalloc.Pool(chain_size=10, chain_policy="heuristic")
    assert rows == pool.class_table()
    assert rows[0]["size"] == 32 and rows[-1]["size"] == 4096 and rows[-1]["huge"]
    c368 = next(r for r in rows if r["size"] == 368)
    assert c368["spanning_per_zspage"] == 0  # the RFC's example class
    classic = next(r for r in zsmalloc.class_table(chain_size=10) if r["size"] == 368)
    assert classic["spanning_per_zspage"] == 7
    for r in rows:
        assert r["tail_waste"] == r["pages_per_zspage"] * 4096 - r["objs_per_zspage"] * r["size"]


def test_compact_moves_objects_and_releases_pages(pool):
    data = [bytes([i % 251]) * 300 for i in range(3000)]
    hs = [pool.store(d) for d in data]
    for h in hs[::2]:
        pool.free(h)
    before = pool.total_pages
    freed = pool.compact()
    assert freed > 0 and pool.total_pages == before - freed
    s = pool.stats()
    assert s["pages_compacted"] == freed and s["objs_moved"] > 0
    for d, h in zip(data[1::2], hs[1::2]):
        assert pool.read(h) == d


def test_view_is_zero_copy_unless_the_object_spans_pages(pool):
    inside = pool.store(b"a" * 100)  # object 0 of a fresh zspage: within the first page
    with pool.view(inside) as mv:
        assert mv.readonly and bytes(mv) == b"a" * 100
    v = pool.view(inside)
    assert not v.copied and len(v) == 100
    v.release()

    # Fill a zspage of a class whose objects cross page boundaries: exactly those are copied.
    row = next(r for r in pool.class_table() if r["spanning_per_zspage"] and r["size"] > 900)
    n = row["size"] - zsmalloc.HANDLE_SIZE
    hs = [pool.store(bytes([i]) * n) for i in range(row["objs_per_zspage"])]
    copied = 0
    for i, h in enumerate(hs):
        with pool.view(h) as mv:
            assert mv.tobytes() == bytes([i]) * n
        view = pool.view(h)
        copied += view.copied
        assert view.tobytes() == bytes([i]) * n
        view.release()
    assert copied == row["spanning_per_zspage"]


def test_view_releases_its_memoryview_at_exit(pool):
    h = pool.store(b"data")
    with pool.view(h) as mv:
        pass
    with pytest.raises(ValueError):
        mv.tobytes()  # released memoryview
    pool.free(h)  # the read section has ended


def test_view_raises_at_exit_while_exported_elsewhere(pool):
    h = pool.store(b"exported")
    view = pool.view(h)
    with pytest.raises(BufferError):
        with view as mv:
            other = memoryview(view)  # a second export of the same buffer
    assert bytes(other) == b"exported"
    # The section stays open (the object is pinned) until the last export goes.
    with pytest.raises(zsmalloc.ZsError) as e:
        pool.free(h)
    assert e.value.errno == 16  # EBUSY
    other.release()
    assert not view.open
    pool.free(h)
    del mv


def test_view_without_with_and_bytes(pool):
    h = pool.store(b"plain")
    view = pool.view(h)
    assert bytes(view) == b"plain" and view.open
    view.release()
    assert not view.open
    with pytest.raises(BufferError):
        memoryview(view)


def test_compaction_skips_objects_being_viewed(pool):
    hs = [pool.store(bytes([i % 256]) * 500) for i in range(400)]
    for h in hs[::2]:
        pool.free(h)
    keep = hs[1]
    with pool.view(keep) as mv:
        pool.compact()  # does not wait for (or move) the pinned zspage
        assert bytes(mv) == bytes([1]) * 500
    assert pool.read(keep) == bytes([1]) * 500


def test_store_many_returns_packed_handles(pool):
    items = [bytes([i % 256]) * (1 + i % 700) for i in range(1000)]
    hs = pool.store_many(items)
    assert isinstance(hs, zsmalloc.Handles)
    assert len(hs) == 1000 and hs.live == 1000
    assert hs.lengths == [len(x) for x in items] and hs.nbytes == sum(map(len, items))
    assert pool.read_many(hs) == items
    assert hs.read(5) == items[5] and hs.read(-1) == items[-1]
    assert pool.stats()["objs_inuse"] == 1000
    out = bytearray(hs.nbytes)
    assert pool.read_many(hs, out=out) == hs.nbytes
    assert out == b"".join(items)
    assert hs.address(1) - hs.address(0) == 8  # contiguous struct zs_handle words
    pool.free(hs)
    assert hs.live == 0 and pool.total_pages == 0


def test_store_many_from_one_buffer_and_lengths(pool):
    data = bytes(range(256)) * 40
    lengths = [100, 200, 300, 4096, 4096, 1448]
    hs = pool.store_many(data, lengths)
    out, off = [], 0
    for n in lengths:
        out.append(data[off : off + n])
        off += n
    assert pool.read_many(hs) == out


def test_store_many_accepts_any_iterable_of_buffers(pool):
    hs = pool.store_many(bytearray([i]) * 10 for i in range(1, 5))
    assert pool.read_many(hs) == [bytes([i]) * 10 for i in range(1, 5)]
    assert len(pool.store_many([])) == 0


def test_handles_take_moves_one_object_out(pool):
    hs = pool.store_many([b"one", b"two", b"three"])
    two = hs.take(1)
    assert isinstance(two, zsmalloc.Handle) and pool.read(two) == b"two"
    assert not hs.alive(1) and hs.alive(0) and hs.live == 2
    del hs
    gc.collect()
    assert pool.stats()["objs_inuse"] == 1  # the taken object outlives the array
    assert pool.read(two) == b"two"


def test_dropping_handles_frees_every_object(pool):
    hs = pool.store_many([bytes(500)] * 300)
    assert pool.total_pages > 0
    del hs
    gc.collect()
    assert pool.total_pages == 0


def test_read_many_of_single_handles(pool):
    items = [b"alpha", b"beta", b"gamma" * 300]
    hs = [pool.store(x) for x in items]
    assert pool.read_many(hs) == items
    buf = bytearray(sum(map(len, items)))
    assert pool.read_many(iter(hs), out=buf) == len(buf)
    assert buf == b"".join(items)


def test_read_raw_reads_python_handles_by_address(pool):
    h = pool.store(b"by address")
    assert pool.read_raw(h.address) == b"by address"
    hs = pool.store_many([b"first", b"second"])
    assert pool.read_raw(hs.address(1)) == b"second"


def test_handle_word_changes_when_compaction_moves_it(pool):
    hs = [pool.store(bytes([i % 256]) * 700) for i in range(600)]
    words = {id(h): h.word for h in hs}
    for h in hs[: len(hs) // 2 + 50]:
        pool.free(h)
    pool.compact()
    survivors = hs[len(hs) // 2 + 50 :]
    assert any(h.word != words[id(h)] for h in survivors)
    for i, h in enumerate(survivors, start=len(hs) // 2 + 50):
        assert pool.read(h) == bytes([i % 256]) * 700


def test_kernel_test_helper_small():
    pool = zsmalloc.Pool(chain_size=10)
    res = zsmalloc.kernel_test(pool, 32, 512, 16, 20)
    assert res["objects"] == 31 * 20
    assert res["bytes_stored"] == sum(range(32, 513, 16)) * 20
    assert 0 < res["utilization_pct"] <= 100
    assert pool.total_pages == 0


def test_utilization_is_truncated_like_the_kernel():
    assert zsmalloc.utilization_pct(698213488, 175111) == 97.3
    assert zsmalloc.utilization_pct(698213488, 175920) == 96.8
    assert zsmalloc.utilization_pct(0, 0) == 0.0


def test_package_metadata():
    assert zsmalloc.__version__
    assert zsmalloc.HANDLE_SIZE == 8
    assert zsmalloc.library_path().endswith(".so")
    assert issubclass(zsmalloc.ZsError, OSError)


def test_an_abandoned_view_ends_its_section_when_collected(pool):
    h = pool.store(b"abandoned")
    view = pool.view(h)
    mv = view.__enter__()  # never exited: the view and its memoryview refer to each other
    assert bytes(mv) == b"abandoned"
    del view, mv
    gc.collect()
    pool.free(h)  # not EBUSY: the read section ended
    assert pool.total_pages == 0
