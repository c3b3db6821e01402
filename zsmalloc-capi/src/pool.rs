//! `struct zs_pool`: creation (explicit or from the environment), destruction and pool queries.

use std::ffi::{c_char, c_uint, c_ulong, CStr};
use std::sync::Arc;

use zsmalloc_core::{AnyPool, Backend, PoolConfig, Result};

use crate::config::{self, zs_pool_config};
use crate::errors::invalid;
use crate::slots::CompatSlots;

/// A pool (opaque): made by zs_create_pool() or zs_create_pool_with_config(), released by
/// zs_destroy_pool().
//
// Rust code sharing pools with C (the Python extension) uses `zs_pool::from_arc`, `zs_pool::arc`
// and `zs_pool::get`: the allocator is reference counted, so a `struct zs_pool *` handed to C and
// a Rust owner of the same allocator can live side by side.
pub struct zs_pool {
    pool: Arc<AnyPool>,
    /// Handle words of `zsmalloc_compat.h`'s `unsigned long` handles.
    pub(crate) compat: CompatSlots,
}

impl zs_pool {
    /// Wraps a shared pool into a new `struct zs_pool *` (owned by the caller: release it with
    /// [`zs_pool::destroy`] or `zs_destroy_pool`, which drop this share of the pool only).
    pub fn from_arc(pool: Arc<AnyPool>) -> *mut zs_pool {
        Box::into_raw(Box::new(zs_pool { pool, compat: CompatSlots::new() }))
    }

    /// The allocator behind this C pool (every entry point calls its `Backend` methods: the
    /// core's one dispatch on the backend).
    #[inline(always)]
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// A new share of the allocator behind this C pool.
    pub fn arc(&self) -> Arc<AnyPool> {
        Arc::clone(&self.pool)
    }

    /// Borrows a C pool pointer; NULL is an `InvalidArgument` error.
    ///
    /// # Safety
    /// `p` is NULL or a pointer returned by `zs_create_pool*`/[`zs_pool::from_arc`] not yet
    /// destroyed, and stays so for `'a`.
    #[inline]
    pub unsafe fn get<'a>(p: *mut zs_pool) -> Result<&'a zs_pool> {
        if p.is_null() {
            return Err(invalid("pool is NULL"));
        }
        // SAFETY: non-NULL and, by the caller's promise, a live pool allocated by `from_arc`.
        Ok(unsafe { &*p })
    }

    /// Releases a C pool (NULL: no-op): what `zs_destroy_pool` does.
    ///
    /// # Safety
    /// `p` is NULL or a live pool not used by any other thread now or later.
    pub unsafe fn destroy(p: *mut zs_pool) {
        if !p.is_null() {
            // SAFETY: allocated by `from_arc` (Box::into_raw) and, by the caller's promise, not
            // destroyed before nor used after.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// `zs_destroy_pool` for Rust callers (kept for the Python extension); see [`zs_pool::destroy`].
///
/// # Safety
/// As [`zs_pool::destroy`].
pub unsafe fn zs_destroy_pool(p: *mut zs_pool) {
    // SAFETY: forwarded contract.
    unsafe { zs_pool::destroy(p) }
}

fn name_of(name: *const c_char) -> Result<String> {
    if name.is_null() {
        return Err(invalid("name is NULL"));
    }
    // SAFETY: non-NULL; the C contract makes `name` a NUL-terminated string.
    Ok(unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned())
}

fn create(name: &str, cfg: PoolConfig) -> Result<*mut zs_pool> {
    Ok(zs_pool::from_arc(Arc::new(AnyPool::with_name(name, cfg)?)))
}

/// A pool configured by the environment; a bad value is also printed on stderr (once per
/// process), so that unmodified programs show why they got no pool.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
pub(crate) unsafe fn create_from_env(name: *const c_char) -> Result<*mut zs_pool> {
    let name = name_of(name)?;
    let cfg = PoolConfig::from_env().inspect_err(|e| {
        zsmalloc_core::config::print_once(&format!("libzsmalloc: zs_create_pool: {e}"));
    })?;
    create(&name, cfg)
}

/// A pool with the explicit configuration of the caller's struct of `size` bytes.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `cfg` is NULL or readable for `size` bytes.
pub(crate) unsafe fn create_with_config(
    name: *const c_char,
    cfg: *const zs_pool_config,
    size: usize,
) -> Result<*mut zs_pool> {
    let name = name_of(name)?;
    // SAFETY: forwarded contract.
    let cfg = unsafe { config::read(cfg, size) }?;
    create(&name, cfg)
}

/// The allocator behind a C pool pointer.
///
/// # Safety
/// As [`zs_pool::get`].
#[inline(always)]
pub(crate) unsafe fn core<'a>(p: *mut zs_pool) -> Result<&'a AnyPool> {
    // SAFETY: forwarded contract.
    Ok(unsafe { zs_pool::get(p) }?.pool())
}

/// Pages held by zspages.
///
/// # Safety
/// As [`zs_pool::get`].
pub(crate) unsafe fn total_pages(p: *mut zs_pool) -> Result<c_ulong> {
    // SAFETY: forwarded contract.
    Ok(Backend::total_pages(unsafe { core(p) }?) as c_ulong)
}

/// Objects of this length or more go to huge classes.
///
/// # Safety
/// As [`zs_pool::get`].
pub(crate) unsafe fn huge_class_size(p: *mut zs_pool) -> Result<usize> {
    // SAFETY: forwarded contract.
    Ok(Backend::huge_class_size(unsafe { core(p) }?))
}

/// `huge_class_size` of band `band` (0 the base band, 1 the multi-page band): 0 for a band the
/// pool does not have (and, as `zs_huge_class_size`, band 0 of zblock and malloc is theirs).
///
/// # Safety
/// As [`zs_pool::get`].
pub(crate) unsafe fn huge_class_size_band(p: *mut zs_pool, band: c_uint) -> Result<usize> {
    // SAFETY: forwarded contract.
    let pool = unsafe { core(p) }?;
    Ok(match (pool.as_zsmalloc(), band) {
        (Some(z), _) => z.huge_class_size_of_band(band).unwrap_or(0),
        (None, 0) => Backend::huge_class_size(pool),
        (None, _) => 0,
    })
}

/// The class index serving `size` (no header added).
///
/// # Safety
/// As [`zs_pool::get`].
pub(crate) unsafe fn lookup_class_index(p: *mut zs_pool, size: c_uint) -> Result<c_uint> {
    // SAFETY: forwarded contract.
    Ok(Backend::lookup_class_index(unsafe { core(p) }?, size as usize))
}

/// Compacts every class; the pages freed.
///
/// # Safety
/// As [`zs_pool::get`].
pub(crate) unsafe fn compact(p: *mut zs_pool) -> Result<c_ulong> {
    // SAFETY: forwarded contract.
    Ok(Backend::compact(unsafe { core(p) }?) as c_ulong)
}
