//! The entry points behind the exported `zs_*` symbols: each runs its module's function through
//! the panic boundary (`guard::boundary`), once. Their documentation is the header's, in
//! one place: the `export_c_abi!` items in `exports.rs`, from which `include/zsmalloc.h` is
//! generated. Public only for that macro's expansion in other crates.
#![doc(hidden)]
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void};

use crate::config::{self, zs_pool_config, ZS_POOL_CONFIG_SIZE_VER1};
use crate::errors::{self, PANIC_ERRNO};
use crate::guard::{boundary, quiet};
use crate::handle::zs_handle;
use crate::pool::{self, zs_pool};
use crate::read::{self, zs_sg};
use crate::stats::{self, zs_class_stats, zs_pool_stats};
use crate::stats::{ZS_CLASS_STATS_SIZE_VER1, ZS_POOL_STATS_SIZE_VER1};
use crate::types::ZS_ABI_VERSION;
use crate::{compat, object};

// -------------------------------------------------------------------------- configuration

pub unsafe fn zs_pool_config_init_sized(cfg: *mut zs_pool_config, size: usize) -> c_int {
    // SAFETY: the C contract (zsmalloc.h).
    boundary("zs_pool_config_init", || unsafe { config::init(cfg, size) })
}

pub unsafe fn zs_pool_config_init(cfg: *mut zs_pool_config) {
    // SAFETY: the C contract; a caller of the size-less name has a version-1 struct.
    unsafe { zs_pool_config_init_sized(cfg, ZS_POOL_CONFIG_SIZE_VER1) };
}

pub unsafe fn zs_pool_config_from_env_sized(cfg: *mut zs_pool_config, size: usize) -> c_int {
    // SAFETY: the C contract.
    boundary("zs_pool_config_from_env", || unsafe { config::from_env(cfg, size) })
}

pub unsafe fn zs_pool_config_from_env(cfg: *mut zs_pool_config) -> c_int {
    // SAFETY: as in `zs_pool_config_init`.
    unsafe { zs_pool_config_from_env_sized(cfg, ZS_POOL_CONFIG_SIZE_VER1) }
}

// -------------------------------------------------------------------------- pools

pub unsafe fn zs_create_pool(name: *const c_char) -> *mut zs_pool {
    // SAFETY: the C contract.
    boundary("zs_create_pool", || unsafe { pool::create_from_env(name) })
}

pub unsafe fn zs_create_pool_with_config_sized(
    name: *const c_char,
    cfg: *const zs_pool_config,
    size: usize,
) -> *mut zs_pool {
    // SAFETY: the C contract.
    boundary("zs_create_pool_with_config", || unsafe { pool::create_with_config(name, cfg, size) })
}

pub unsafe fn zs_create_pool_with_config(
    name: *const c_char,
    cfg: *const zs_pool_config,
) -> *mut zs_pool {
    // SAFETY: as in `zs_pool_config_init`.
    unsafe { zs_create_pool_with_config_sized(name, cfg, ZS_POOL_CONFIG_SIZE_VER1) }
}

pub unsafe fn zs_destroy_pool(p: *mut zs_pool) {
    // SAFETY: the C contract.
    boundary("zs_destroy_pool", || {
        // SAFETY: the C contract.
        unsafe { zs_pool::destroy(p) };
        Ok(())
    })
}

// -------------------------------------------------------------------------- objects

#[inline]
pub unsafe fn zs_store(
    p: *mut zs_pool,
    h: *mut zs_handle,
    src: *const c_void,
    len: usize,
) -> c_int {
    // SAFETY: the C contract.
    boundary("zs_store", || unsafe { object::store(p, h, src, len) })
}

pub unsafe fn zs_malloc(p: *mut zs_pool, h: *mut zs_handle, size: usize) -> c_int {
    // SAFETY: the C contract.
    boundary("zs_malloc", || unsafe { object::malloc(p, h, size) })
}

pub unsafe fn zs_obj_write(
    p: *mut zs_pool,
    h: *mut zs_handle,
    src: *const c_void,
    len: usize,
) -> c_int {
    // SAFETY: the C contract.
    boundary("zs_obj_write", || unsafe { object::write(p, h, src, len) })
}

#[inline]
pub unsafe fn zs_free(p: *mut zs_pool, h: *mut zs_handle) -> c_int {
    // SAFETY: the C contract.
    boundary("zs_free", || unsafe { object::free(p, h) })
}

pub unsafe fn zs_handle_move(p: *mut zs_pool, from: *mut zs_handle, to: *mut zs_handle) -> c_int {
    // SAFETY: the C contract.
    boundary("zs_handle_move", || unsafe { object::handle_move(p, from, to) })
}

// -------------------------------------------------------------------------- reads

#[inline]
pub unsafe fn zs_obj_read_begin(
    p: *mut zs_pool,
    h: *mut zs_handle,
    mem_len: usize,
    local_copy: *mut c_void,
) -> *mut c_void {
    // SAFETY: the C contract.
    boundary("zs_obj_read_begin", || unsafe { read::begin(p, h, mem_len, local_copy) })
}

#[inline]
pub unsafe fn zs_obj_read_end(
    p: *mut zs_pool,
    h: *mut zs_handle,
    mem_len: usize,
    handle_mem: *mut c_void,
) -> c_int {
    // SAFETY: the C contract.
    boundary("zs_obj_read_end", || unsafe { read::end(p, h, mem_len, handle_mem) })
}

pub unsafe fn zs_obj_read_sg_begin(
    p: *mut zs_pool,
    h: *mut zs_handle,
    sg: *mut zs_sg,
    mem_len: usize,
) -> c_int {
    // SAFETY: the C contract.
    boundary("zs_obj_read_sg_begin", || unsafe { read::sg_begin(p, h, sg, mem_len) })
}

pub unsafe fn zs_obj_read_sg_end(p: *mut zs_pool, h: *mut zs_handle) -> c_int {
    // SAFETY: the C contract.
    boundary("zs_obj_read_sg_end", || unsafe { read::sg_end(p, h) })
}

// -------------------------------------------------------------------------- queries

pub unsafe fn zs_get_total_pages(p: *mut zs_pool) -> c_ulong {
    // SAFETY: the C contract.
    boundary("zs_get_total_pages", || unsafe { pool::total_pages(p) })
}

pub unsafe fn zs_huge_class_size(p: *mut zs_pool) -> usize {
    // SAFETY: the C contract.
    boundary("zs_huge_class_size", || unsafe { pool::huge_class_size(p) })
}

pub unsafe fn zs_huge_class_size_band(p: *mut zs_pool, band: c_uint) -> usize {
    // SAFETY: the C contract.
    boundary("zs_huge_class_size_band", || unsafe { pool::huge_class_size_band(p, band) })
}

pub unsafe fn zs_lookup_class_index(p: *mut zs_pool, size: c_uint) -> c_uint {
    // SAFETY: the C contract.
    boundary("zs_lookup_class_index", || unsafe { pool::lookup_class_index(p, size) })
}

pub unsafe fn zs_compact(p: *mut zs_pool) -> c_ulong {
    // SAFETY: the C contract.
    boundary("zs_compact", || unsafe { pool::compact(p) })
}

pub unsafe fn zs_pool_stats_sized(p: *mut zs_pool, out: *mut zs_pool_stats, size: usize) -> c_int {
    // SAFETY: the C contract.
    boundary("zs_pool_stats", || unsafe { stats::pool_stats(p, out, size) })
}

pub unsafe fn zs_pool_stats(p: *mut zs_pool, out: *mut zs_pool_stats) -> c_int {
    // SAFETY: as in `zs_pool_config_init`.
    unsafe { zs_pool_stats_sized(p, out, ZS_POOL_STATS_SIZE_VER1) }
}

pub unsafe fn zs_class_stats_sized(
    p: *mut zs_pool,
    index: c_uint,
    out: *mut zs_class_stats,
    size: usize,
) -> c_int {
    // SAFETY: the C contract.
    boundary("zs_class_stats", || unsafe { stats::class_stats(p, index, out, size) })
}

pub unsafe fn zs_class_stats(p: *mut zs_pool, index: c_uint, out: *mut zs_class_stats) -> c_int {
    // SAFETY: as in `zs_pool_config_init`.
    unsafe { zs_class_stats_sized(p, index, out, ZS_CLASS_STATS_SIZE_VER1) }
}

// -------------------------------------------------------------------------- errors, version

pub fn zs_last_error() -> c_int {
    quiet(-PANIC_ERRNO, errors::last_error)
}

pub fn zs_last_error_message() -> *const c_char {
    quiet(c"".as_ptr(), errors::last_error_message)
}

pub fn zs_strerror(err: c_int) -> *const c_char {
    quiet(c"".as_ptr(), || errors::strerror(err).as_ptr())
}

pub fn zs_version() -> c_uint {
    ZS_ABI_VERSION
}

/// The test hook `zsmalloc_fault_inject` (not in zsmalloc.h): arms fault point `point` of the
/// calling thread (`zsmalloc_core::fault`: 0 reserve, 1 commit, 2 zspage pages, 3 memfd growth,
/// 4 map-window mapping) so that after `skip` calls the next `fail` calls fail (`fail == 0`
/// disarms). Returns the faults injected at that point on this thread so far, or -EINVAL for an
/// unknown point.
#[doc(hidden)]
pub fn zsmalloc_fault_inject(point: c_uint, skip: c_uint, fail: c_uint) -> i64 {
    match zsmalloc_core::fault::Point::from_u32(point) {
        Some(p) => zsmalloc_core::fault::arm(p, skip, fail).min(i64::MAX as u64) as i64,
        None => -i64::from(libc::EINVAL),
    }
}

// -------------------------------------------------------------------------- zsmalloc_compat.h

pub unsafe fn zs_compat_malloc(p: *mut zs_pool, size: usize) -> c_ulong {
    // SAFETY: the C contract.
    boundary("zs_malloc", || unsafe { compat::malloc(p, size) }).0
}

pub unsafe fn zs_compat_free(p: *mut zs_pool, handle: c_ulong) -> c_int {
    // SAFETY: the C contract.
    boundary("zs_free", || unsafe { compat::free(p, handle) })
}

pub unsafe fn zs_compat_obj_write(
    p: *mut zs_pool,
    handle: c_ulong,
    src: *const c_void,
    mem_len: usize,
) -> c_int {
    // SAFETY: the C contract.
    boundary("zs_obj_write", || unsafe { compat::write(p, handle, src, mem_len) })
}

pub unsafe fn zs_compat_obj_read_begin(
    p: *mut zs_pool,
    handle: c_ulong,
    mem_len: usize,
    local_copy: *mut c_void,
) -> *mut c_void {
    // SAFETY: the C contract.
    boundary("zs_obj_read_begin", || unsafe { compat::read_begin(p, handle, mem_len, local_copy) })
}

pub unsafe fn zs_compat_obj_read_end(
    p: *mut zs_pool,
    handle: c_ulong,
    mem_len: usize,
    handle_mem: *mut c_void,
) -> c_int {
    // SAFETY: the C contract.
    boundary("zs_obj_read_end", || unsafe { compat::read_end(p, handle, mem_len, handle_mem) })
}

pub unsafe fn zs_compat_handle(p: *mut zs_pool, handle: c_ulong) -> *mut zs_handle {
    // SAFETY: the C contract.
    boundary("zs_compat_handle", || unsafe { compat::handle_of(p, handle) })
}
