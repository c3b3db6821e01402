//! `struct zs_pool`: creation (explicit or from the environment), destruction and pool queries.

use std::ffi::{c_char, c_uint, c_ulong, CStr};
use std::sync::Arc;

use zsmalloc_core::{Pool, PoolConfig, Result};

use crate::compat::CompatSlots;
use crate::config::zs_pool_config;
use crate::guard::{self, invalid};
use crate::size_t;

/// A pool (opaque): made by zs_create_pool() or zs_create_pool_with_config(), released by
/// zs_destroy_pool().
//
// Rust code sharing pools with C (the Python extension) uses `zs_pool::from_arc`, `zs_pool::arc`
// and `zs_pool::get`: the allocator is reference counted, so a `struct zs_pool *` handed to C and
// a Rust owner of the same allocator can live side by side.
pub struct zs_pool {
    pool: Arc<Pool>,
    /// Handle slots of `zsmalloc_compat.h`'s `unsigned long` handles.
    pub(crate) compat: CompatSlots,
}

impl zs_pool {
    /// Wraps a shared pool into a new `struct zs_pool *` (owned by the caller: release it with
    /// `zs_destroy_pool`, which drops this share of the pool only).
    pub fn from_arc(pool: Arc<Pool>) -> *mut zs_pool {
        Box::into_raw(Box::new(zs_pool { pool, compat: CompatSlots::new() }))
    }

    /// The allocator behind this C pool.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// A new share of the allocator behind this C pool.
    pub fn arc(&self) -> Arc<Pool> {
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
}

fn name_of(name: *const c_char) -> Result<String> {
    if name.is_null() {
        return Err(invalid("name is NULL"));
    }
    // SAFETY: non-NULL; the C contract makes `name` a NUL-terminated string.
    Ok(unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned())
}

fn create(name: &str, cfg: PoolConfig) -> Result<*mut zs_pool> {
    Ok(zs_pool::from_arc(Arc::new(Pool::with_name(name, cfg)?)))
}

/// `zs_create_pool`: a pool configured by the `ZSMALLOC_*` environment (SPEC §4). A bad value
/// gives NULL, `-EINVAL` in `zs_last_error()` and a message naming the variable, also printed on
/// stderr so that unmodified programs show why.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
pub unsafe fn zs_create_pool(name: *const c_char) -> *mut zs_pool {
    guard::call("zs_create_pool", std::ptr::null_mut(), || {
        let name = name_of(name)?;
        let cfg = PoolConfig::from_env().inspect_err(|e| {
            eprintln!("libzsmalloc: zs_create_pool(\"{name}\"): {e}");
        })?;
        create(&name, cfg)
    })
}

/// `zs_create_pool_with_config`: a pool with an explicit configuration (environment ignored).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `cfg` is NULL or points to a readable config.
pub unsafe fn zs_create_pool_with_config(
    name: *const c_char,
    cfg: *const zs_pool_config,
) -> *mut zs_pool {
    guard::call("zs_create_pool_with_config", std::ptr::null_mut(), || {
        let name = name_of(name)?;
        if cfg.is_null() {
            return Err(invalid("config is NULL"));
        }
        // SAFETY: non-NULL and readable by the caller's promise; any alignment accepted.
        let c = unsafe { cfg.read_unaligned() };
        create(&name, c.to_core()?)
    })
}

/// `zs_destroy_pool`: releases the pool (NULL: no-op). Objects still stored are released with
/// it; their handle words are left as they are and must not be used again.
///
/// # Safety
/// `p` is NULL or a live pool not used by any other thread now or later.
pub unsafe fn zs_destroy_pool(p: *mut zs_pool) {
    guard::call_infallible("zs_destroy_pool", (), || {
        if !p.is_null() {
            // SAFETY: allocated by `from_arc` (Box::into_raw) and, by the caller's promise, not
            // destroyed before nor used after.
            drop(unsafe { Box::from_raw(p) });
        }
    })
}

/// `zs_get_total_pages`: pages held by zspages (NULL pool: 0).
///
/// # Safety
/// `p` as for [`zs_pool::get`].
pub unsafe fn zs_get_total_pages(p: *mut zs_pool) -> c_ulong {
    guard::call("zs_get_total_pages", 0, || {
        // SAFETY: forwarded contract.
        let pool = unsafe { zs_pool::get(p) }?;
        Ok(pool.pool().total_pages() as c_ulong)
    })
}

/// `zs_huge_class_size`: objects of this length or more go to huge classes (NULL pool: 0).
///
/// # Safety
/// `p` as for [`zs_pool::get`].
pub unsafe fn zs_huge_class_size(p: *mut zs_pool) -> size_t {
    guard::call("zs_huge_class_size", 0, || {
        // SAFETY: forwarded contract.
        Ok(unsafe { zs_pool::get(p) }?.pool().huge_class_size())
    })
}

/// `zs_lookup_class_index`: the class index serving `size` (no header added; NULL pool: 0).
///
/// # Safety
/// `p` as for [`zs_pool::get`].
pub unsafe fn zs_lookup_class_index(p: *mut zs_pool, size: c_uint) -> c_uint {
    guard::call("zs_lookup_class_index", 0, || {
        // SAFETY: forwarded contract.
        Ok(unsafe { zs_pool::get(p) }?.pool().lookup_class_index(size as usize))
    })
}

/// `zs_compact`: compacts every class; returns the pages freed (NULL pool: 0).
///
/// # Safety
/// `p` as for [`zs_pool::get`].
pub unsafe fn zs_compact(p: *mut zs_pool) -> c_ulong {
    guard::call("zs_compact", 0, || {
        // SAFETY: forwarded contract.
        Ok(unsafe { zs_pool::get(p) }?.pool().compact() as c_ulong)
    })
}
