"""Threads sharing one pool: stores, reads, frees and compaction at once; bulk calls and
compaction release the GIL."""

from __future__ import annotations

import random
import sys
import threading

import pytest

import zsmalloc


def run_threads(targets):
    errors = []

    def wrap(fn):
        def run():
            try:
                fn()
            except BaseException as e:  # surfaced in the main thread
                errors.append(e)

        return run

    threads = [threading.Thread(target=wrap(t)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_workers_and_a_compactor_share_a_pool():
    pool = zsmalloc.Pool("shared", chain_size=10)
    stop = threading.Event()
    compacted = []

    def worker(seed):
        def run():
            rng = random.Random(seed)
            live = {}
            for step in range(3000):
                if live and rng.random() < 0.45:
                    key = rng.choice(list(live))
                    h, data = live.pop(key)
                    assert pool.read(h) == data
                    pool.free(h)
                else:
                    data = bytes([seed, step & 0xFF]) * rng.randint(1, 1500)
                    live[step] = (pool.store(data), data)
                if step % 500 == 0:
                    hs = pool.store_many([d for _, d in live.values()])
                    assert pool.read_many(hs) == [d for _, d in live.values()]
                    hs.free()
            for h, data in live.values():
                assert pool.read(h) == data
                pool.free(h)

        return run

    def compactor():
        while not stop.is_set():
            compacted.append(pool.compact())

    workers = [worker(seed) for seed in range(4)]

    def main():
        try:
            run_threads(workers)
        finally:
            stop.set()

    run_threads([main, compactor])
    assert pool.total_pages == 0
    assert pool.stats()["objs_inuse"] == 0


def test_readers_never_see_a_torn_write():
    pool = zsmalloc.Pool()
    n = 3000  # spans pages in its class, so copies are not atomic
    patterns = (b"\x00" * n, b"\xff" * n)
    h = pool.store(patterns[0])
    done = threading.Event()

    def reader():
        while not done.is_set():
            assert pool.read(h) in patterns
            with pool.view(h) as mv:
                assert bytes(mv) in patterns

    def writer_tolerating_views():
        # A write while another thread's view is open is refused (EBUSY), never torn.
        for i in range(2000):
            try:
                pool.write(h, patterns[i % 2])
            except zsmalloc.ZsError as e:
                assert e.errno == 16
        done.set()

    run_threads([writer_tolerating_views, reader, reader])
    assert pool.read(h) in patterns


def test_concurrent_frees_of_one_handle_free_it_once(pool):
    for _ in range(50):
        h = pool.store(b"once" * 100)
        outcomes = []

        def free():
            try:
                pool.free(h)
                outcomes.append("freed")
            except zsmalloc.ZsError:
                outcomes.append("refused")

        run_threads([free] * 4)
        assert outcomes.count("freed") == 1
    assert pool.total_pages == 0


@pytest.mark.parametrize("call", ["store_many", "read_many", "compact"])
def test_heavy_calls_release_the_gil(call):
    """With a long switch interval, another Python thread can only run during a call if the
    call itself released the GIL. (A few attempts: on a loaded machine the OS may not schedule
    the observing thread inside one short call.)"""
    items = [bytes([i & 0xFF]) * 700 for i in range(150_000)]
    for _ in range(5):
        if _ran_during(call, items):
            return
    pytest.fail(f"{call} held the GIL for its whole run, 5 times")


def _ran_during(call, items):
    pool = zsmalloc.Pool()
    hs = pool.store_many(items) if call != "store_many" else None
    kept = []
    if call == "compact":
        kept = [(i, hs.take(i)) for i in range(1, len(items), 40)]
        hs.free()
    started, in_call, done = threading.Event(), threading.Event(), threading.Event()
    ran_during_call = []

    def heavy():
        started.set()
        in_call.set()
        if call == "store_many":
            pool.store_many(items)
        elif call == "read_many":
            pool.read_many(hs)
        else:
            assert pool.compact() > 0
        done.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(5.0)
    try:
        t = threading.Thread(target=heavy)
        t.start()
        started.wait()
        while not done.is_set():
            if in_call.is_set() and not done.is_set():
                ran_during_call.append(1)
                if len(ran_during_call) > 10:
                    break
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert all(pool.read(h) == items[i] for i, h in kept)  # moved by compaction, intact
    return bool(ran_during_call)
