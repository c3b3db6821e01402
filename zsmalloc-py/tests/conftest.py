"""Shared fixtures: pools, the C ABI bound with ctypes from zsmalloc.library_path(), and the
example notebooks run top to bottom."""

from __future__ import annotations

import ctypes
import os
import ctypes.util
from pathlib import Path

import pytest

import zsmalloc


NOTEBOOKS = Path(__file__).resolve().parents[2] / "examples" / "notebooks"


def lab_binary() -> str | None:
    """The `zsmalloc` command the tests drive: `ZSMALLOC_BIN`, else this checkout's release build."""
    repo = Path(__file__).resolve().parents[2]
    for candidate in (
        os.environ.get("ZSMALLOC_BIN"),
        os.path.join(os.environ.get("CARGO_TARGET_DIR", repo / "target"), "release", "zsmalloc"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def run_notebook(name: str, timeout: int) -> tuple[str, int]:
    """Executes examples/notebooks/`name` top to bottom in its own folder (skipped without
    nbformat and nbclient); returns the text its code cells printed and how many PNG images
    they drew."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    path = NOTEBOOKS / name
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    ).execute()
    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    text = "".join(out.get("text", "") for out in outputs)
    images = sum(1 for out in outputs if "image/png" in out.get("data", {}))
    return text, images


@pytest.fixture
def pool() -> zsmalloc.Pool:
    """A default pool (4K pages, chain 8, classic)."""
    return zsmalloc.Pool("test")


class zs_pool_stats(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint64)
        for name in (
            "pages_compacted",
            "pages_allocated",
            "pages_peak",
            "pages_cached",
            "objs_allocated",
            "objs_inuse",
            "bytes_stored",
            "reads",
            "reads_spanning",
            "read_copy_bytes",
            "writes_spanning",
            "objs_moved",
        )
    ]


class zs_pool_config(ctypes.Structure):
    _fields_ = [
        ("page_size", ctypes.c_uint32),
        ("max_pages_per_zspage", ctypes.c_uint32),
        ("size_class_delta", ctypes.c_uint32),
        ("chain_policy", ctypes.c_uint32),
        ("read_mode", ctypes.c_uint32),
        ("mem_limit_pages", ctypes.c_uint64),
    ]


def bind(path: str) -> ctypes.CDLL:
    """The kernel-shaped C ABI of `include/zsmalloc.h`, typed for ctypes."""
    lib = ctypes.CDLL(path)
    P, H, V = ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p
    sig = {
        "zs_create_pool": (P, [ctypes.c_char_p]),
        "zs_create_pool_with_config": (P, [ctypes.c_char_p, ctypes.POINTER(zs_pool_config)]),
        "zs_pool_config_init": (None, [ctypes.POINTER(zs_pool_config)]),
        "zs_destroy_pool": (None, [P]),
        "zs_store": (ctypes.c_int, [P, H, V, ctypes.c_size_t, ctypes.c_uint]),
        "zs_malloc": (ctypes.c_int, [P, H, ctypes.c_size_t, ctypes.c_uint]),
        "zs_obj_write": (ctypes.c_int, [P, H, V, ctypes.c_size_t]),
        "zs_free": (ctypes.c_int, [P, H]),
        "zs_handle_move": (ctypes.c_int, [P, H, H]),
        "zs_obj_read_begin": (V, [P, H, ctypes.c_size_t, V]),
        "zs_obj_read_end": (ctypes.c_int, [P, H, ctypes.c_size_t, V]),
        "zs_get_total_pages": (ctypes.c_ulong, [P]),
        "zs_huge_class_size": (ctypes.c_size_t, [P]),
        "zs_lookup_class_index": (ctypes.c_uint, [P, ctypes.c_uint]),
        "zs_compact": (ctypes.c_ulong, [P]),
        "zs_pool_stats": (ctypes.c_int, [P, ctypes.POINTER(zs_pool_stats)]),
        "zs_last_error": (ctypes.c_int, []),
        "zs_version": (ctypes.c_uint, []),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


@pytest.fixture(scope="session")
def lib() -> ctypes.CDLL:
    return bind(zsmalloc.library_path())


def c_read(lib: ctypes.CDLL, pool_address: int, handle_address: int, length: int) -> bytes:
    """Reads an object through the C ABI: zs_obj_read_begin / zs_obj_read_end."""
    local = ctypes.create_string_buffer(length + zsmalloc.HANDLE_SIZE)
    ptr = lib.zs_obj_read_begin(pool_address, handle_address, length, local)
    assert ptr, f"zs_obj_read_begin failed: {lib.zs_last_error()}"
    data = ctypes.string_at(ptr, length)
    assert lib.zs_obj_read_end(pool_address, handle_address, length, ptr) == 0
    return data
