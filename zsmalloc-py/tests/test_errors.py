"""Every error path: each raises a Python exception, nothing crashes, the pool stays intact."""

from __future__ import annotations

import ctypes
import errno

import pytest

import zsmalloc

EINVAL, ENOSPC, ENOMEM, EBUSY, EEXIST = (
    errno.EINVAL, errno.ENOSPC, errno.ENOMEM, errno.EBUSY, errno.EEXIST,
)


def assert_intact(pool, handles=()):
    for h, data in handles:
        assert pool.read(h) == data
    s = pool.stats()
    assert s["objs_inuse"] == len(handles)
    assert s["bytes_stored"] == sum(len(d) for _, d in handles)


# --------------------------------------------------------------------------- lengths


def test_empty_object_is_a_value_error(pool):
    with pytest.raises(ValueError) as e:
        pool.store(b"")
    assert e.value.errno == EINVAL
    with pytest.raises(ValueError):
        pool.malloc(0)
    assert_intact(pool)


def test_object_larger_than_a_page_is_a_value_error(pool):
    with pytest.raises(ValueError, match="larger than the pool stores") as e:
        pool.store(bytes(4097))
    assert e.value.errno == ENOSPC
    with pytest.raises(ValueError):
        pool.malloc(1 << 20)
    assert_intact(pool)


def test_non_bytes_like_data_is_a_type_error(pool):
    for bad in ("text", 42, None, [1, 2]):
        with pytest.raises(TypeError):
            pool.store(bad)
    assert_intact(pool)


def test_write_of_the_wrong_length(pool):
    h = pool.malloc(10)
    pool.write(h, b"0123456789")
    for bad in (b"short", b"much too long!"):
        with pytest.raises(ValueError, match="lengths must match"):
            pool.write(h, bad)
    assert_intact(pool, [(h, b"0123456789")])


def test_read_into_a_small_or_read_only_buffer(pool):
    h = pool.store(b"0123456789")
    with pytest.raises(ValueError, match="smaller than the object"):
        pool.read_into(h, bytearray(9))
    with pytest.raises(TypeError, match="writable"):
        pool.read_into(h, b"x" * 20)
    assert_intact(pool, [(h, b"0123456789")])


# --------------------------------------------------------------------------- settings


@pytest.mark.parametrize(
    "kwargs, setting",
    [
        ({"page_size": 5000}, "page_size"),
        ({"page_size": 2048}, "page_size"),
        ({"page_size": 131072}, "page_size"),
        ({"chain_size": 0}, "chain_size"),
        ({"chain_size": 17}, "chain_size"),
        ({"class_delta": 12}, "class_delta"),
        ({"chain_policy": "greedy"}, "chain_policy"),
        ({"chain_policy": "fixed-0"}, "chain_policy"),
        ({"read_mode": "mmap"}, "read_mode"),
        # Integers the field cannot hold: the same ValueError, not an anonymous OverflowError.
        ({"chain_size": -1}, "chain_size"),
        ({"page_size": 2**40}, "page_size"),
        ({"page_size": -(2**200)}, "page_size"),
        ({"class_delta": -8}, "class_delta"),
        ({"mem_limit_pages": -1}, "mem_limit_pages"),
        ({"mem_limit_pages": 2**64}, "mem_limit_pages"),
    ],
)
def test_bad_settings_are_value_errors_naming_the_setting(kwargs, setting):
    with pytest.raises(ValueError, match=setting) as e:
        zsmalloc.Pool(**kwargs)
    assert e.value.errno == EINVAL
    with pytest.raises(ValueError, match=setting):
        zsmalloc.class_table(**kwargs)


def test_an_integer_out_of_range_says_what_the_setting_accepts():
    with pytest.raises(ValueError) as e:
        zsmalloc.Pool(chain_size=-1)
    assert str(e.value) == "invalid chain_size: -1 is out of range; expected 1..=16"
    assert not isinstance(e.value, OverflowError)
    with pytest.raises(ValueError, match=r"invalid page_size: 1099511627776 is out of range"):
        zsmalloc.class_table(page_size=2**40)


def test_settings_of_the_wrong_type():
    with pytest.raises(TypeError):
        zsmalloc.Pool(chain_policy=3)
    with pytest.raises(TypeError, match="page_size"):
        zsmalloc.Pool(page_size="4096")
    with pytest.raises(TypeError, match="chain_size"):
        zsmalloc.class_table(chain_size=10.0)


@pytest.mark.parametrize(
    "args, message",
    [
        ((100, 50), "lo 100 is larger than hi 50"),
        ((0, 64), "lo must be at least 1"),
        ((32, 4096 + 16), "hi 4112 exceeds the page size 4096"),
        ((32, 64, 0), "step must be at least 1"),
        ((32, 64, 16, 0), "n must be at least 1"),
    ],
)
def test_kernel_test_refuses_what_the_command_refuses(args, message):
    pool = zsmalloc.Pool()
    with pytest.raises(ValueError, match=f"^kernel_test: {message}$"):
        zsmalloc.kernel_test(pool, *args)
    assert pool.stats()["reads"] == 0
    assert_intact(pool)


def test_a_failing_chain_policy_callable_is_raised():
    def broken(size, page, max_chain):
        raise RuntimeError("policy bug")

    with pytest.raises(RuntimeError, match="policy bug"):
        zsmalloc.Pool(chain_policy=broken)
    with pytest.raises(ValueError, match="expected 1..=8"):
        zsmalloc.Pool(chain_policy=lambda size, page, max_chain: 0)
    with pytest.raises(ValueError, match="expected 1..=8"):
        zsmalloc.class_table(chain_policy=lambda size, page, max_chain: 99)


@pytest.mark.parametrize(
    "var, value",
    [
        ("ZSMALLOC_PAGE_SIZE", "5000"),
        ("ZSMALLOC_PAGE_SIZE", "lots"),
        ("ZSMALLOC_CHAIN_SIZE", "17"),
        ("ZSMALLOC_CLASS_DELTA", "12"),
        ("ZSMALLOC_CHAIN_POLICY", "greedy"),
        ("ZSMALLOC_READ_MODE", "mmap"),
        ("ZSMALLOC_MEM_LIMIT_PAGES", "-1"),
    ],
)
def test_bad_environment_names_the_variable(monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    with pytest.raises(ValueError, match=var):
        zsmalloc.Pool.from_env()


# --------------------------------------------------------------------------- handles


def test_freed_handle_is_refused_everywhere(pool):
    h = pool.store(b"gone")
    address = h.address
    pool.free(h)
    for op in (
        lambda: pool.read(h),
        lambda: pool.read_into(h, bytearray(8)),
        lambda: pool.write(h, b"back"),
        lambda: pool.view(h),
        lambda: pool.free(h),  # double free
        lambda: h.free(),
        lambda: pool.read_many([h]),
        lambda: pool.read_raw(address),  # the word is empty now
    ):
        with pytest.raises(zsmalloc.ZsError) as e:
            op()
        assert e.value.errno == EINVAL
    assert_intact(pool)


def test_handle_of_another_pool_is_refused(pool):
    other = zsmalloc.Pool("other")
    h = other.store(b"not yours")
    mine = pool.store(b"mine")
    for op in (
        lambda: pool.read(h),
        lambda: pool.read_into(h, bytearray(16)),
        lambda: pool.write(h, b"not mine!"),
        lambda: pool.view(h),
        lambda: pool.free(h),
        lambda: pool.read_many([mine, h]),
        lambda: pool.read_many(other.store_many([b"a"])),
        lambda: pool.free(other.store_many([b"a"])),
        lambda: pool.read_raw(h.address),  # the core's own check: the word's pool tag
    ):
        with pytest.raises(zsmalloc.ZsError, match="another pool|invalid handle") as e:
            op()
        assert e.value.errno == EINVAL
    assert other.read(h) == b"not yours"
    assert_intact(pool, [(mine, b"mine")])


def test_garbage_and_misaligned_raw_addresses(pool):
    h = pool.store(b"real")
    garbage = ctypes.c_size_t(0x5A00_0000_0042_0007)  # shaped like a handle, names nothing
    with pytest.raises(zsmalloc.ZsError):
        pool.read_raw(ctypes.addressof(garbage))
    stale = ctypes.c_size_t(h.word)  # a copy of a live word at another address
    with pytest.raises(zsmalloc.ZsError, match="does not own"):
        pool.read_raw(ctypes.addressof(stale))
    with pytest.raises(ValueError, match="NULL"):
        pool.read_raw(0)
    with pytest.raises(ValueError, match="aligned"):
        pool.read_raw(h.address + 1)
    assert_intact(pool, [(h, b"real")])


def test_wrap_refuses_null_and_misaligned_addresses():
    with pytest.raises(ValueError):
        zsmalloc.Pool.wrap(0)
    with pytest.raises(ValueError):
        zsmalloc.Pool.wrap(12345)


def test_busy_object_cannot_be_freed_or_written(pool):
    h = pool.store(b"pinned!")
    with pool.view(h) as mv:
        with pytest.raises(zsmalloc.ZsError) as e:
            pool.free(h)
        assert e.value.errno == EBUSY
        with pytest.raises(zsmalloc.ZsError) as e:
            pool.write(h, b"changed")
        assert e.value.errno == EBUSY
        assert bytes(mv) == b"pinned!"
    pool.write(h, b"changed")
    assert pool.read(h) == b"changed"
    pool.free(h)
    assert_intact(pool)


def test_views_are_read_only(pool):
    h = pool.store(b"ro")
    with pool.view(h) as mv:
        with pytest.raises(TypeError):
            mv[0] = 0
    v = pool.view(h)
    with pytest.raises(TypeError, match="writable"):
        pool.read_into(pool.store(b"xy"), v)
    v.release()
    v.release()  # idempotent
    with pytest.raises(BufferError, match="closed"):
        v.tobytes()


def test_handles_errors(pool):
    hs = pool.store_many([b"a", b"b"])
    with pytest.raises(IndexError):
        hs.read(2)
    with pytest.raises(IndexError):
        hs.address(-3)
    taken = hs.take(0)
    with pytest.raises(zsmalloc.ZsError):
        hs.take(0)
    with pytest.raises(zsmalloc.ZsError):
        hs.read(0)
    with pytest.raises(zsmalloc.ZsError):
        pool.read_many(hs)  # one of them was taken
    with pytest.raises(ValueError, match="smaller than the objects"):
        pool.read_many(pool.store_many([b"xyz"]), out=bytearray(2))
    with pytest.raises(TypeError):
        pool.free(b"not a handle")
    with pytest.raises(TypeError):
        pool.read_many([b"not a handle"])
    assert pool.read(taken) == b"a"


def test_store_many_is_all_or_nothing(pool):
    with pytest.raises(ValueError):
        pool.store_many([b"ok", b"", b"never"])
    with pytest.raises(ValueError, match="larger than the pool stores"):
        pool.store_many([b"ok", bytes(5000)])
    with pytest.raises(ValueError, match="add up"):
        pool.store_many(b"abc", [1, 1])
    with pytest.raises(TypeError):
        pool.store_many([b"ok", "text"])
    assert_intact(pool)


# --------------------------------------------------------------------------- memory limit


def test_memory_limit_is_a_memory_error_and_changes_nothing():
    pool = zsmalloc.Pool(mem_limit_pages=8)
    kept = []
    with pytest.raises(MemoryError) as e:
        for i in range(10_000):
            data = bytes([i % 256]) * 1000
            kept.append((pool.store(data), data))
    assert e.value.errno == ENOMEM
    assert pool.total_pages <= 8
    assert_intact(pool, kept)
    before = pool.stats()
    with pytest.raises(MemoryError):
        pool.store_many([bytes(3000)] * 100)
    assert pool.stats() == before  # all or nothing
    for h, _ in kept:
        pool.free(h)
    assert pool.total_pages == 0


def test_error_messages_are_informative(pool):
    h = pool.store(b"x")
    pool.free(h)
    with pytest.raises(zsmalloc.ZsError) as e:
        pool.read(h)
    assert "freed" in str(e.value) and e.value.errno == EINVAL and e.value.strerror
