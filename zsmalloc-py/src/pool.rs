//! The `zsmalloc.Pool` object: a share of a core pool and the C ABI's `struct zs_pool *` for it.
//!
//! Only the data, and what the handle types need of it; its Python methods are in
//! `pool_api.rs`, on top of the handle types.

use std::sync::Arc;

use pyo3::prelude::*;
use zsmalloc::zs_pool;
use zsmalloc_core::{AnyPool as CorePool, Error, PoolConfig};

use crate::errors::{other_pool_error, PyRes};

/// How a Python pool holds its allocator: a share of the core pool, plus the C ABI's
/// `struct zs_pool *` for it (made here and destroyed with the Python pool, or borrowed from C).
struct Hold {
    pool: Arc<CorePool>,
    c_pool: *mut zs_pool,
    /// Made by Python (destroyed on drop) rather than borrowed from C by `Pool.wrap`.
    owns_c_pool: bool,
}

// SAFETY: `CorePool` is `Send + Sync`; `c_pool` is only handed out as an address (the C ABI's
// entry points are thread-safe) and destroyed once, in `Drop`, if owned.
unsafe impl Send for Hold {}
// SAFETY: as above.
unsafe impl Sync for Hold {}

impl Drop for Hold {
    fn drop(&mut self) {
        if self.owns_c_pool {
            // SAFETY: made by `zs_pool::from_arc` in `Pool::create` and destroyed only here; it
            // drops that pointer's share of the allocator only. C code that kept `pool.address`
            // past the Python pool's life broke its contract.
            unsafe { crate::__zsmalloc_c_abi::zs_destroy_pool(self.c_pool) };
        }
    }
}

/// A zsmalloc pool of objects of 1..=page_size bytes (1..=multi_page_size with the multi-page
/// band).
///
/// Keywords (the defaults are mainline's; the environment is ignored, see `Pool.from_env`):
/// `page_size` 4096 (4096..=65536, a power of two), `chain_size` 8 (most pages per zspage,
/// 1..=16), `class_delta` 0 (size-class spacing; 0 means `page_size >> 8`), `chain_policy`
/// "classic" ("heuristic", "fixed-N" or a callable `f(class_size, page_size, max_chain) ->
/// pages`), `read_mode` "copy", `mem_limit_pages` 0 (no limit), `backing` "anonymous"
/// ("memfd"), `backend` "zsmalloc" ("zblock", "malloc": the other allocators, which refuse the
/// zsmalloc-only keywords set to anything but their defaults), `multi_page_size` 0 (off; else
/// `page_size << K`, K in 1..=4, at most 65536: classes of compound pages and objects up to that
/// size, docs/PYTHON.md).
///
/// All methods may be called from several threads at once. Bulk calls (`store_many`,
/// `read_many`), `compact`, `stats` and `class_stats` release the GIL.
#[pyclass(frozen, module = "zsmalloc._zsmalloc")]
pub struct Pool {
    hold: Hold,
}

impl Pool {
    /// A new pool, with a `struct zs_pool *` of its own for C callers.
    pub fn create(name: &str, config: PoolConfig) -> PyResult<Self> {
        let pool = Arc::new(CorePool::with_name(name, config).py()?);
        let c_pool = zs_pool::from_arc(Arc::clone(&pool));
        Ok(Pool { hold: Hold { pool, c_pool, owns_c_pool: true } })
    }

    /// Borrows the pool made by C at `address`; takes a share of its allocator, so the Python
    /// side stays valid even if C destroys its `struct zs_pool` first.
    pub fn borrow_c_pool(address: usize) -> PyResult<Self> {
        let c_pool = address as *mut zs_pool;
        if c_pool.is_null() || !c_pool.is_aligned() {
            return Err(Error::InvalidArgument(format!(
                "{address:#x} is not a struct zs_pool pointer"
            )))
            .py();
        }
        // SAFETY: non-NULL and aligned; that it is a live pool of this library is `Pool.wrap`'s
        // documented contract (as for any C caller of the ABI).
        let pool = unsafe { zs_pool::get(c_pool) }.py()?.arc();
        Ok(Pool { hold: Hold { pool, c_pool, owns_c_pool: false } })
    }

    #[inline]
    pub fn core(&self) -> &CorePool {
        &self.hold.pool
    }

    /// The `struct zs_pool *` of this pool.
    pub fn c_pool(&self) -> *mut zs_pool {
        self.hold.c_pool
    }

    /// True if this pool was made by C and only borrowed here.
    pub fn borrowed(&self) -> bool {
        !self.hold.owns_c_pool
    }

    /// Refuses a handle of another pool (the core would too; this names the reason).
    pub fn check_same(&self, other: &Pool) -> PyResult<()> {
        if std::ptr::eq(self.core(), other.core()) {
            Ok(())
        } else {
            Err(other_pool_error())
        }
    }
}
