"""A pool without payload: placement only, for traces larger than memory holds."""

import pytest

import zsmalloc


def fill(pool, sizes):
    return [pool.store(bytes(n)) for n in sizes]


SIZES = [(i * 7919) % 4000 + 1 for i in range(3000)]


def test_a_pool_without_payload_places_every_object_as_one_with_bytes():
    full = zsmalloc.Pool(chain_size=10)
    bare = zsmalloc.Pool(chain_size=10, payload=False)
    assert full.payload and not bare.payload
    assert bare.config["payload"] is False
    a, b = fill(full, SIZES), fill(bare, SIZES)
    for h in a[::3]:
        full.free(h)
    for h in b[::3]:
        bare.free(h)
    for ha, hb in zip(a[1::3], b[1::3]):
        full.read(ha)
        placed = bare.read_placement(hb)
        assert placed["len"] == len(hb)
    full.compact()
    bare.compact()
    assert full.stats() == bare.stats()
    assert full.class_stats() == bare.class_stats()


def test_reads_of_bytes_are_refused_with_one_clear_error():
    bare = zsmalloc.Pool(payload=False)
    h = bare.store(b"x" * 3000)
    for read in (bare.read, lambda h: bare.read_into(h, bytearray(4096))):
        with pytest.raises(ValueError, match="keeps no object bytes"):
            read(h)
    assert bare.read_placement(h) == {"len": 3000, "spanning": False, "copied": 0}


def test_malloc_has_no_placement_only_mode():
    with pytest.raises(ValueError, match="payload"):
        zsmalloc.Pool(backend="malloc", payload=False)
