"""Same pools with C: the extension module exports the C ABI, ctypes binds to the copy Python
already loaded, and pools and handles cross in both directions."""

from __future__ import annotations

import ctypes
import gc
import os
import shutil
import subprocess
import sys

import pytest

import zsmalloc

from conftest import c_read, zs_pool_config, zs_pool_stats

C_ABI_FUNCTIONS = [
    "zs_pool_config_init", "zs_pool_config_from_env", "zs_create_pool",
    "zs_create_pool_with_config", "zs_destroy_pool", "zs_store", "zs_malloc", "zs_obj_write",
    "zs_free", "zs_handle_move", "zs_obj_read_begin", "zs_obj_read_end", "zs_obj_read_sg_begin",
    "zs_obj_read_sg_end", "zs_get_total_pages", "zs_huge_class_size", "zs_lookup_class_index",
    "zs_compact", "zs_pool_stats", "zs_class_stats", "zs_last_error", "zs_strerror", "zs_version",
]

needs_nm = pytest.mark.skipif(shutil.which("nm") is None, reason="binutils' nm is not installed")


def exported_functions(path: str) -> dict[str, int]:
    """The functions a shared library exports, with their offsets in it (``nm -D``)."""
    out = subprocess.run(
        ["nm", "-D", "--defined-only", path], check=True, capture_output=True, text=True
    ).stdout
    rows = (line.split() for line in out.splitlines())
    return {r[2]: int(r[0], 16) for r in rows if len(r) == 3 and r[1] == "T"}


def mapped_at(path: str) -> list[int]:
    """Where this process maps the start of the file ``path`` (one address per loaded copy)."""
    real = os.path.realpath(path)
    with open("/proc/self/maps") as maps:
        rows = [line.split() for line in maps]
    return [
        int(r[0].split("-")[0], 16) for r in rows if len(r) == 6 and r[5] == real and int(r[2], 16) == 0
    ]


def address_of(lib: ctypes.CDLL, name: str) -> int:
    return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value


@needs_nm
def test_extension_module_exports_the_c_abi():
    exported = exported_functions(zsmalloc.library_path())
    missing = [f for f in C_ABI_FUNCTIONS if f not in exported]
    assert not missing, f"not exported by the extension module: {missing}"
    assert "PyInit__zsmalloc" in exported


@needs_nm
def test_ctypes_binds_to_the_loaded_copy(lib):
    # The process maps the imported extension module once, and no other zsmalloc library ...
    path = zsmalloc.library_path()
    (base,) = mapped_at(path)
    with open("/proc/self/maps") as maps:
        files = {line.split()[-1] for line in maps if "zsmalloc" in line and "/" in line}
    assert files == {os.path.realpath(path)}, files
    # ... and the functions ctypes finds are that copy's: its base plus each symbol's offset.
    offsets = exported_functions(path)
    for name in ["zs_create_pool", "zs_store", "zs_obj_read_begin", "zs_free", "zs_version"]:
        assert address_of(lib, name) == base + offsets[name], name


def test_python_pool_used_from_c(lib, pool):
    handle = ctypes.c_size_t(0)  # struct zs_handle in C memory
    data = b"stored by C " * 40
    assert lib.zs_store(pool.address, ctypes.byref(handle), data, len(data), 0) == 0
    assert handle.value != 0
    # State is visible both ways.
    assert pool.read_raw(ctypes.addressof(handle)) == data
    assert pool.stats()["objs_inuse"] == 1 and pool.stats()["bytes_stored"] == len(data)
    assert lib.zs_get_total_pages(pool.address) == pool.total_pages > 0
    assert lib.zs_huge_class_size(pool.address) == pool.huge_class_size
    assert lib.zs_lookup_class_index(pool.address, 100) == pool.lookup_class_index(100)

    # Python stores, C reads, C's statistics see Python's object.
    h = pool.store(b"stored by Python")
    assert c_read(lib, pool.address, h.address, len(h)) == b"stored by Python"
    stats = zs_pool_stats()
    assert lib.zs_pool_stats(pool.address, ctypes.byref(stats)) == 0
    assert stats.objs_inuse == 2 and stats.bytes_stored == len(data) + len(h)

    # C frees a Python handle: Python sees it gone.
    assert lib.zs_free(pool.address, h.address) == 0
    assert not h.alive
    with pytest.raises(zsmalloc.ZsError):
        pool.read(h)

    # A wrong-length read from C is refused and changes nothing.
    local = ctypes.create_string_buffer(4096)
    assert lib.zs_obj_read_begin(pool.address, ctypes.byref(handle), 3, local) is None
    assert lib.zs_last_error() == -22
    assert lib.zs_free(pool.address, ctypes.byref(handle)) == 0
    assert pool.total_pages == 0


def test_compaction_from_python_moves_c_handles(lib, pool):
    n = 2000
    words = (ctypes.c_size_t * n)()
    base = ctypes.addressof(words)
    payload = [bytes([i % 251]) * 600 for i in range(n)]
    for i, data in enumerate(payload):
        assert lib.zs_store(pool.address, base + 8 * i, data, len(data), 0) == 0
    for i in range(0, n, 2):
        assert lib.zs_free(pool.address, base + 8 * i) == 0
    before = list(words)
    assert pool.compact() > 0
    assert pool.stats()["objs_moved"] > 0
    assert list(words) != before  # Python's compaction rewrote C's handle words
    for i in range(1, n, 2):
        assert c_read(lib, pool.address, base + 8 * i, 600) == payload[i]
        assert pool.read_raw(base + 8 * i) == payload[i]
    for i in range(1, n, 2):
        assert lib.zs_free(pool.address, base + 8 * i) == 0
    assert pool.total_pages == 0


def test_c_pool_wrapped_in_python(lib):
    cfg = zs_pool_config()
    lib.zs_pool_config_init(ctypes.byref(cfg))
    cfg.max_pages_per_zspage = 10
    cfg.chain_policy = 1  # ZS_CHAIN_HEURISTIC
    address = lib.zs_create_pool_with_config(b"made by C", ctypes.byref(cfg))
    assert address
    try:
        pool = zsmalloc.Pool.wrap(address)
        assert pool.borrowed and pool.address == address and pool.name == "made by C"
        assert pool.config["chain_size"] == 10 and pool.config["chain_policy"] == "heuristic"

        h = pool.store(b"Python object in a C pool")
        assert c_read(lib, address, h.address, len(h)) == b"Python object in a C pool"
        cword = ctypes.c_size_t(0)
        assert lib.zs_store(address, ctypes.byref(cword), b"C object", 8, 0) == 0
        assert pool.read_raw(ctypes.addressof(cword)) == b"C object"
        assert lib.zs_get_total_pages(address) == pool.total_pages

        # Dropping the Python wrapper and its handles never destroys the C pool.
        del h, pool
        gc.collect()
        assert lib.zs_get_total_pages(address) > 0
        assert c_read(lib, address, ctypes.addressof(cword), 8) == b"C object"
        assert lib.zs_free(address, ctypes.byref(cword)) == 0
        assert lib.zs_get_total_pages(address) == 0
    finally:
        lib.zs_destroy_pool(address)


def test_a_wrapped_pool_outlives_zs_destroy_pool(lib):
    address = lib.zs_create_pool(b"short-lived")
    pool = zsmalloc.Pool.wrap(address)
    h = pool.store(b"still readable")
    lib.zs_destroy_pool(address)  # C lets go of its pointer; Python keeps its share
    assert pool.read(h) == b"still readable"


def test_python_pool_address_is_stable_and_distinct(lib):
    a, b = zsmalloc.Pool("a"), zsmalloc.Pool("b")
    assert a.address == a.address and a.address != b.address
    h = a.store(b"in a")
    # A handle of pool a given to C with pool b's address is refused.
    local = ctypes.create_string_buffer(64)
    assert lib.zs_obj_read_begin(b.address, h.address, len(h), local) is None
    assert lib.zs_last_error() == -22
    assert a.read(h) == b"in a"


def test_second_copy_of_the_library_would_be_detected(tmp_path):
    """Guard for the one-instance test: a second copy of the library (here the extension module
    copied to another file) is a second allocator, with other function addresses, and shows in
    the process's maps. Checked in a child process so this process keeps a single copy mapped."""
    other = tmp_path / "second_copy.so"
    shutil.copyfile(zsmalloc.library_path(), other)
    code = (
        "import ctypes, zsmalloc\n"
        f"lib = ctypes.CDLL({str(other)!r})\n"
        "ours = ctypes.CDLL(zsmalloc.library_path())\n"
        "address = lambda lib: ctypes.cast(lib.zs_store, ctypes.c_void_p).value\n"
        "maps = [line.split()[-1] for line in open('/proc/self/maps') if '/' in line]\n"
        "print(address(lib) != address(ours), len({m for m in maps if 'zsmalloc' in m or "
        f"m == {str(other)!r}}}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.split() == ["True", "2"]
