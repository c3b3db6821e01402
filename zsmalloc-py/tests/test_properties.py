"""Property tests against a dict model: stored bytes always read back, and `total_pages`
returns to 0 once everything is freed."""

from __future__ import annotations

import gc

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    precondition,
    rule,
)

import zsmalloc

# Lengths biased to the interesting edges: tiny, around the huge-class threshold, a full page.
lengths = st.one_of(
    st.integers(1, 64),
    st.integers(1, 4096),
    st.integers(3600, 3640),
    st.just(4096),
)


@st.composite
def blobs(draw, length=lengths):
    n = draw(length)
    seed = draw(st.integers(0, 255))
    return bytes((seed + 7 * i) & 0xFF for i in range(n))


configs = st.fixed_dictionaries(
    {
        "page_size": st.sampled_from([4096, 8192, 16384]),
        "chain_size": st.integers(1, 16),
        "chain_policy": st.sampled_from(["classic", "heuristic", "fixed-1", "fixed-3"]),
    }
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs, st.lists(blobs(), max_size=60))
def test_bulk_round_trip_and_release(config, items):
    pool = zsmalloc.Pool(**config)
    hs = pool.store_many(items)
    assert pool.read_many(hs) == items
    out = bytearray(hs.nbytes)
    pool.read_many(hs, out=out)
    assert out == b"".join(items)
    assert pool.stats()["bytes_stored"] == sum(map(len, items))
    hs.free()
    assert pool.total_pages == 0


class PoolModel(RuleBasedStateMachine):
    """Random stores, frees, writes, reads, compactions and bulk calls on one pool, checked
    against a dict of what should be stored."""

    handles = Bundle("handles")

    def __init__(self):
        super().__init__()
        self.pool = zsmalloc.Pool("model", chain_size=4)
        self.model: dict[int, bytes] = {}
        self.objects: dict[int, zsmalloc.Handle] = {}
        self.bulk: list[tuple[zsmalloc.Handles, list[bytes]]] = []
        self.next = 0

    @rule(target=handles, data=blobs())
    def store(self, data):
        key = self.next
        self.next += 1
        self.objects[key] = self.pool.store(data)
        self.model[key] = data
        return key

    @rule(target=handles, length=lengths, fill=st.integers(0, 255))
    def malloc_and_write(self, length, fill):
        key = self.next
        self.next += 1
        h = self.pool.malloc(length)
        data = bytes([fill]) * length
        self.pool.write(h, data)
        self.objects[key] = h
        self.model[key] = data
        return key

    @rule(key=consumes(handles))
    def free(self, key):
        self.pool.free(self.objects.pop(key))
        del self.model[key]

    @rule(key=consumes(handles))
    def drop(self, key):
        del self.objects[key]  # the last reference frees it
        del self.model[key]

    @rule(key=handles, fill=st.integers(0, 255))
    def overwrite(self, key, fill):
        data = bytes([fill]) * len(self.model[key])
        self.pool.write(self.objects[key], data)
        self.model[key] = data

    @rule(key=handles)
    def read(self, key):
        assert self.pool.read(self.objects[key]) == self.model[key]

    @rule(key=handles)
    def view(self, key):
        with self.pool.view(self.objects[key]) as mv:
            assert bytes(mv) == self.model[key]

    @rule()
    def compact(self):
        self.pool.compact()

    @rule(items=st.lists(blobs(), min_size=1, max_size=20))
    def store_many(self, items):
        self.bulk.append((self.pool.store_many(items), items))

    @precondition(lambda self: self.bulk)
    @rule()
    def free_bulk(self):
        hs, _ = self.bulk.pop(0)
        hs.free()

    @invariant()
    def everything_reads_back(self):
        for key, data in self.model.items():
            assert self.pool.read(self.objects[key]) == data
        for hs, items in self.bulk:
            assert self.pool.read_many(hs) == items

    @invariant()
    def counters_match_the_model(self):
        s = self.pool.stats()
        live = list(self.model.values()) + [x for _, items in self.bulk for x in items]
        assert s["objs_inuse"] == len(live)
        assert s["bytes_stored"] == sum(map(len, live))
        assert s["pages_allocated"] == self.pool.total_pages <= s["pages_peak"]

    def teardown(self):
        self.objects.clear()
        self.bulk.clear()
        gc.collect()
        assert self.pool.total_pages == 0
        assert self.pool.stats()["objs_inuse"] == 0


PoolModel.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestPoolModel = PoolModel.TestCase
