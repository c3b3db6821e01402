"""No call hangs and refusals change nothing: many views of one handle (nested, across threads,
released elsewhere), and stores whose pages the system refuses (a fault injected through the
library's hidden test hook) raising MemoryError.

Each case that could hang runs in a subprocess with a timeout, so a regression fails instead of
hanging the suite.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
import textwrap

import pytest

import zsmalloc

TIMEOUT = 120


def run_isolated(code: str) -> None:
    """Runs `code` in a fresh interpreter; fails on a non-zero exit or after TIMEOUT seconds."""
    try:
        r = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for {TIMEOUT} s")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok" in r.stdout, r.stdout + r.stderr


def test_many_views_of_one_handle():
    run_isolated(
        """
        import zsmalloc
        pool = zsmalloc.Pool("views")
        pad = pool.store(bytes(3000))  # the next 3000-byte object crosses a page
        for n in (100, 3000, 4096):
            h = pool.store(bytes([n % 251]) * n)
            views = [pool.view(h) for _ in range(10_000 if n == 100 else 1_000)]
            assert all(v.tobytes() == bytes([n % 251]) * n for v in views[:50])
            try:
                pool.free(h)
                raise AssertionError("freed while viewed")
            except zsmalloc.ZsError as e:
                assert e.errno == 16  # EBUSY
            for v in views:
                v.release()
            pool.free(h)
        pool.free(pad)
        assert pool.total_pages == 0
        print("ok")
        """
    )


def test_views_held_by_many_threads_at_a_barrier():
    run_isolated(
        """
        import threading
        import zsmalloc
        for n, threads in ((4096, 256), (100, 72)):
            pool = zsmalloc.Pool("threads")
            h = pool.store(b"t" * n)
            barrier = threading.Barrier(threads + 1)
            seen = []
            def hold():
                with pool.view(h) as mv:
                    barrier.wait()
                    seen.append(mv.tobytes() == b"t" * n)
                    barrier.wait()
            ts = [threading.Thread(target=hold) for _ in range(threads)]
            for t in ts:
                t.start()
            barrier.wait()
            try:
                pool.free(h)
                raise AssertionError("freed while viewed")
            except zsmalloc.ZsError:
                pass
            barrier.wait()
            for t in ts:
                t.join()
            assert seen == [True] * threads, seen
            pool.free(h)
        print("ok")
        """
    )


def test_views_released_by_another_thread():
    run_isolated(
        """
        import threading
        import zsmalloc
        pool = zsmalloc.Pool("elsewhere")
        for n in (100, 4096):
            h = pool.store(b"e" * n)
            views = [pool.view(h) for _ in range(64)]
            t = threading.Thread(target=lambda: [v.release() for v in views])
            t.start()
            t.join()
            assert not any(v.open for v in views)
            pool.free(h)
        print("ok")
        """
    )


# --------------------------------------------------------------------------- injected faults

FAULT_RESERVE, FAULT_COMMIT, FAULT_PAGES = 0, 1, 2


@pytest.fixture
def fault():
    """The library's hidden test hook `zsmalloc_fault_inject(point, skip, fail)`: after `skip`
    calls at `point` (of the calling thread) the next `fail` fail; returns the faults injected.
    Every point is disarmed afterwards."""
    lib = ctypes.CDLL(zsmalloc.library_path())
    f = lib.zsmalloc_fault_inject
    f.restype = ctypes.c_int64
    f.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_uint]
    yield f
    for point in (FAULT_RESERVE, FAULT_COMMIT, FAULT_PAGES):
        f(point, 0, 0)


def test_an_injected_fault_is_a_memory_error_and_changes_nothing(fault):
    pool = zsmalloc.Pool("faults")
    fault(FAULT_COMMIT, 0, 1)
    with pytest.raises(MemoryError) as e:
        pool.store(b"x" * 100)
    assert e.value.errno == 12  # ENOMEM
    assert pool.total_pages == 0 and pool.stats()["objs_inuse"] == 0
    kept = [pool.store(bytes([i]) * 1000) for i in range(20)]
    assert fault(FAULT_COMMIT, 0, 0) == 1

    fault(FAULT_PAGES, 0, 1_000)
    before = pool.stats()
    for n in (2000, 4096):
        with pytest.raises(MemoryError):
            pool.store(bytes(n))
        with pytest.raises(MemoryError):
            pool.malloc(n)
    with pytest.raises(MemoryError):
        pool.store_many([bytes(3000)] * 10)
    assert pool.stats() == before
    assert fault(FAULT_PAGES, 0, 0) >= 5

    assert [pool.read(h) for h in kept] == [bytes([i]) * 1000 for i in range(20)]
    h = pool.store(bytes(2000))  # the pool keeps working
    assert pool.read(h) == bytes(2000)

    fault(FAULT_RESERVE, 0, 1)
    empty = zsmalloc.Pool("no-range")
    with pytest.raises(MemoryError):
        empty.store(b"y")
    assert fault(FAULT_RESERVE, 0, 0) == 1
