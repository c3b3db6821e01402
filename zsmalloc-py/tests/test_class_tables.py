"""Explicit class tables: Pool(class_table=...) and zsmalloc.class_table()."""

from __future__ import annotations

import random

import pytest

import zsmalloc


def test_mainline_table_given_back_places_objects_exactly_as_mainline():
    mainline = zsmalloc.Pool(chain_size=10)
    table = zsmalloc.class_table(chain_size=10)
    explicit = zsmalloc.Pool(class_table=table)

    assert explicit.huge_class_size == mainline.huge_class_size
    assert explicit.config["class_table"] == [(r["size"], r["pages_per_zspage"]) for r in table]
    first = zsmalloc.kernel_test(mainline, n=100)
    second = zsmalloc.kernel_test(explicit, n=100)
    assert first == second
    assert first["pages"] > 0


def test_placement_agrees_through_churn_and_compaction():
    rng = random.Random(7)
    mainline = zsmalloc.Pool(page_size=16384, class_delta=16)
    table = [(r["size"], r["pages_per_zspage"]) for r in zsmalloc.class_table(page_size=16384, class_delta=16)]
    explicit = zsmalloc.Pool(page_size=16384, class_table=table)

    live = []
    for step in range(6000):
        if live and rng.random() < 0.45:
            a, b = live.pop(rng.randrange(len(live)))
            a.free()
            b.free()
        else:
            data = rng.randbytes(rng.randint(1, 16384))
            live.append((mainline.store(data), explicit.store(data)))
        if step % 1000 == 999:
            assert mainline.compact() == explicit.compact()
        assert mainline.total_pages == explicit.total_pages, step

    assert mainline.stats() == explicit.stats()
    shape = ("size", "pages_per_zspage", "fullness", "obj_used", "pages_used", "freeable")
    rows = lambda pool: [{k: r[k] for k in shape} for r in pool.class_stats()]  # noqa: E731
    assert rows(mainline) == rows(explicit)
    assert mainline.stats()["pages_compacted"] > 0


def test_a_hand_made_table():
    pool = zsmalloc.Pool(class_table=[(64, 1), (1000, 4), (3000, 3), (4096, 1)])

    h = pool.store(b"x" * 900)
    assert pool.lookup_class_index(900 + zsmalloc.HANDLE_SIZE) == 1
    assert pool.read(h) == b"x" * 900
    assert [(r["size"], r["objs_per_zspage"], r["huge"]) for r in pool.class_table()] == [
        (64, 64, False),
        (1000, 16, False),
        (3000, 4, False),
        (4096, 1, True),
    ]
    assert pool.total_pages == 4
    from_json = zsmalloc.Pool(class_table=[[64, 1], [1000, 4], [3000, 3], [4096, 1]])
    assert from_json.class_table() == pool.class_table()


def test_a_table_can_be_edited_starting_from_mainline():
    table = zsmalloc.class_table(page_size=16384, chain_policy="heuristic")
    shorter = [(r["size"], min(r["pages_per_zspage"], 2)) for r in table]

    pool = zsmalloc.Pool(page_size=16384, class_table=shorter)

    assert max(chain for _, chain in pool.config["class_table"]) == 2
    assert zsmalloc.class_table(page_size=16384, class_table=shorter) == pool.class_table()


def test_a_table_file(tmp_path):
    path = tmp_path / "mine.table"
    path.write_text("# four classes\npage_size 16K\n32 1\n1024 1\n5456 3\n16384 1\n")

    pool = zsmalloc.Pool(page_size=16384, class_table=path)
    assert [r["size"] for r in pool.class_table()] == [32, 1024, 5456, 16384]
    with pytest.raises(ValueError, match="the table is for 16384-byte pages, the pool's are 4096"):
        zsmalloc.Pool(class_table=str(path))

    path.write_text("page_size 4096\n32 1\n32 2\n4096 1\n")
    with pytest.raises(ValueError, match=r"mine\.table: line 3 \(`32 2`\): duplicate size 32"):
        zsmalloc.Pool(class_table=path)


@pytest.mark.parametrize(
    "table, message",
    [
        ([(48, 1), (32, 1), (4096, 1)], r"class_table\[1\] \(size 32, chain 1\): size 32 is below the previous"),
        ([(32, 1), (32, 2), (4096, 1)], r"class_table\[1\] \(size 32, chain 2\): duplicate size 32"),
        ([(32, 1), (44, 1), (4096, 1)], r"class_table\[1\] \(size 44, chain 1\): size 44 is not a multiple of 8"),
        ([(16, 1), (4096, 1)], r"class_table\[0\] \(size 16, chain 1\): size 16 is below the smallest"),
        ([(32, 1), (4104, 1)], r"class_table\[1\] \(size 4104, chain 1\): size 4104 is above the page"),
        ([(32, 0), (4096, 1)], r"class_table\[0\] \(size 32, chain 0\): chain 0 is outside 1..=16"),
        ([(32, 17), (4096, 1)], r"class_table\[0\] \(size 32, chain 17\): chain 17 is outside 1..=16"),
        ([(32, 1), (2048, 1)], r"class_table\[1\] \(size 2048, chain 1\): no class stores a whole page"),
        ([(32, 1), (4096, 2)], r"class_table\[1\] \(size 4096, chain 2\): the page-sized class must"),
        ([(32 + 8 * i, 1) for i in range(510)], r"class_table\[509\] .*too many classes \(510\).*at most 509"),
        ([], r"the table has no classes"),
        ([(32, 1), (-8, 1)], r"class_table\[1\]: size -8 is out of range"),
        ([{"size": 32}], r"class_table\[0\] is a dict without 'size' and 'pages_per_zspage'"),
    ],
)
def test_bad_tables_raise_value_error_naming_the_entry(table, message):
    with pytest.raises(ValueError, match=message):
        zsmalloc.Pool(class_table=table)


def test_entries_of_the_wrong_type_raise_type_error():
    with pytest.raises(TypeError, match=r"class_table\[1\] is 'abc', not a \(size, chain\) pair"):
        zsmalloc.Pool(class_table=[(32, 1), "abc"])
    with pytest.raises(TypeError, match=r"class_table\[0\]: chain 1.5 is not an int"):
        zsmalloc.Pool(class_table=[(4096, 1.5)])


def test_settings_the_table_replaces_must_stay_at_their_defaults():
    table = [(32, 1), (4096, 1)]
    with pytest.raises(ValueError, match="chain_size 10 means nothing with a class table"):
        zsmalloc.Pool(chain_size=10, class_table=table)
    with pytest.raises(ValueError, match="chain_policy 'heuristic' means nothing"):
        zsmalloc.Pool(chain_policy="heuristic", class_table=table)
    with pytest.raises(ValueError, match="the zblock backend has no size classes"):
        zsmalloc.Pool(backend="zblock", class_table=table)


def test_from_env_reads_the_table_file_named_by_zsmalloc_class_table(tmp_path, monkeypatch):
    path = tmp_path / "env.table"
    path.write_text("page_size 16384\n32 1\n1024 1\n16384 1\n")
    monkeypatch.setenv("ZSMALLOC_CLASS_TABLE", str(path))

    pool = zsmalloc.Pool.from_env("env")
    assert pool.page_size == 16384
    assert pool.config["class_table"] == [(32, 1), (1024, 1), (16384, 1)]

    path.write_text("page_size 16384\n32 1\n1024 1\n")
    with pytest.raises(ValueError, match=r"ZSMALLOC_CLASS_TABLE: .*env\.table: line 3 .*no class stores a whole page"):
        zsmalloc.Pool.from_env("env")
