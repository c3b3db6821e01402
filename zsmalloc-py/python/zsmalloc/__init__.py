"""zsmalloc in userspace: Linux's zsmalloc allocator, the same pools from Python, C and Rust.

>>> import zsmalloc
>>> pool = zsmalloc.Pool(chain_size=10, chain_policy="heuristic")
>>> h = pool.store(b"hello")
>>> pool.read(h)
b'hello'
>>> pool.stats()["objs_inuse"]
1
>>> pool.free(h)
>>> pool.total_pages
0

Objects are 1..=page_size bytes. Handles free their object when the last reference goes.
Errors are exceptions: ``ValueError`` (bad setting, length or argument), ``MemoryError`` (the
pool's ``mem_limit_pages`` is reached) and :class:`ZsError` (freed, stale, foreign or busy
handles), each with the C ABI's ``errno``.

The extension module exports the C ABI too (``zs_create_pool``, ``zs_store``, ...):
:func:`library_path` names it so ``ctypes`` binds to the very allocator Python uses, and
``pool.address`` / :meth:`Pool.wrap` pass pools across.
"""

from __future__ import annotations

from . import _zsmalloc
from ._zsmalloc import (
    HANDLE_SIZE,
    Handle,
    Handles,
    Pool,
    View,
    ZsError,
    class_table,
)
from . import tier
from .machine import inspect

__all__ = [
    "HANDLE_SIZE",
    "Handle",
    "Handles",
    "Pool",
    "View",
    "ZsError",
    "class_table",
    "library_path",
    "kernel_test",
    "inspect",
    "tier",
    "utilization_pct",
    "__version__",
]

__version__: str = _zsmalloc.__version__


def library_path() -> str:
    """Path of a shared library exporting the C ABI over this very allocator instance.

    It is the extension module itself: ``ctypes.CDLL(zsmalloc.library_path())`` returns the
    already-loaded copy, so pools pass between Python and C by address (``pool.address``,
    :meth:`Pool.wrap`) and handles by address (``Handle.address``, :meth:`Pool.read_raw`).
    """
    return _zsmalloc.__file__


def utilization_pct(bytes_stored: int, pages: int, page_size: int = 4096) -> float:
    """Bytes stored over pages held, truncated to one decimal like the kernel test module."""
    if pages == 0:
        return 0.0
    return (1000 * bytes_stored // (pages * page_size)) / 10


def _check_kernel_test(lo: int, hi: int, step: int, n: int, page_size: int) -> None:
    def bad(message: str) -> ValueError:
        return ValueError(f"kernel_test: {message}")

    if lo < 1:
        raise bad("lo must be at least 1")
    if lo > hi:
        raise bad(f"lo {lo} is larger than hi {hi}")
    if hi > page_size:
        raise bad(f"hi {hi} exceeds the page size {page_size}")
    if step < 1:
        raise bad("step must be at least 1")
    if n < 1:
        raise bad("n must be at least 1")


def kernel_test(
    pool: Pool,
    lo: int = 32,
    hi: int = 4080,
    step: int = 16,
    n: int = 1337,
    *,
    verify: bool = True,
) -> dict:
    """The kernel ``zsmalloc_test`` module's pattern on ``pool``.

    For each size ``lo..=hi`` by ``step``, store ``n`` objects of that size; then read every
    object in store order (copy reads, as the module does) and check its bytes. Returns the
    module's figures: ``objects``, ``bytes_stored``, ``pages``, ``utilization_pct``,
    ``reads_spanning``, ``read_copy_bytes`` (measured by the pool's counters). Objects are freed
    before returning.

    Raises ``ValueError`` for what ``zsmalloc run kernel-test`` refuses: ``lo`` 0, ``lo``
    above ``hi``, ``hi`` above the pool's page size, ``step`` or ``n`` 0.
    """
    _check_kernel_test(lo, hi, step, n, pool.page_size)
    before = pool.stats()
    sizes = range(lo, hi + 1, step)
    arrays = []
    stored = 0
    for size in sizes:
        # Distinct content per object: byte j of object i is (i * 31 + j) & 0xff.
        if verify:
            base = bytes(range(256)) * (size // 256 + 2)
            data = b"".join(base[(i * 31) & 0xFF : ((i * 31) & 0xFF) + size] for i in range(n))
        else:
            data = bytes(size * n)
        arrays.append((size, data, pool.store_many(data, [size] * n)))
        stored += size * n
    pages = pool.total_pages
    for size, data, hs in arrays:
        out = bytearray(size * n)
        pool.read_many(hs, out=out)
        if verify and out != data:
            raise AssertionError(f"objects of {size} bytes did not read back")
    after = pool.stats()
    for _, _, hs in arrays:
        hs.free()
    return {
        "objects": len(sizes) * n,
        "bytes_stored": stored,
        "pages": pages,
        "utilization_pct": utilization_pct(stored, pages, pool.page_size),
        "reads_spanning": after["reads_spanning"] - before["reads_spanning"],
        "read_copy_bytes": after["read_copy_bytes"] - before["read_copy_bytes"],
    }
