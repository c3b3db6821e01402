//! Mainline's older handle API for `include/zsmalloc_compat.h`: `unsigned long` handles returned
//! by `zs_malloc(pool, size, gfp, nid)`.
//!
//! Such a handle is the address of a handle word in a slot table owned by the pool (the kernel's
//! `handle_cachep`), released with the pool. Every `unsigned long` coming back from C is looked
//! up in that table before use, so garbage values, values of another pool and double frees are
//! refused instead of dereferenced. Failures of `zs_compat_malloc` are returned as the kernel
//! does: `(unsigned long)-errno`, tested with `IS_ERR_VALUE()`.

use std::collections::BTreeMap;
use std::ffi::{c_int, c_long, c_ulong, c_void};
use std::sync::atomic::AtomicUsize;
use std::sync::Mutex;

use zsmalloc_core::{Error, Pool, Result};

use crate::guard::{self, invalid};
use crate::object::{src_slice, zs_handle};
use crate::pool::zs_pool;
use crate::read::read_begin;
use crate::{gfp_t, size_t};

/// `mem_len` meaning "the stored length" (for the older 3-argument read calls).
pub const ZS_COMPAT_LEN_UNKNOWN: usize = usize::MAX;

const CHUNK: usize = 1024;

/// The pool-owned table of compat handle words. Chunks are never moved or freed before the pool.
pub(crate) struct CompatSlots {
    inner: Mutex<Slots>,
}

#[derive(Default)]
struct Slots {
    chunks: Vec<Box<[AtomicUsize]>>,
    /// Chunk base address -> chunk number.
    by_base: BTreeMap<usize, usize>,
    free: Vec<usize>,
    live: Vec<bool>,
}

impl CompatSlots {
    pub fn new() -> Self {
        CompatSlots { inner: Mutex::new(Slots::default()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn word_ptr(s: &Slots, id: usize) -> *const AtomicUsize {
        &s.chunks[id / CHUNK][id % CHUNK]
    }

    /// Takes an empty slot; returns its handle word.
    fn take(&self) -> &AtomicUsize {
        let mut s = self.lock();
        let id = match s.free.pop() {
            Some(id) => id,
            None => {
                let n = s.chunks.len();
                let chunk: Box<[AtomicUsize]> = (0..CHUNK).map(|_| AtomicUsize::new(0)).collect();
                s.by_base.insert(chunk.as_ptr() as usize, n);
                s.chunks.push(chunk);
                s.live.resize((n + 1) * CHUNK, false);
                s.free.extend((n * CHUNK + 1..(n + 1) * CHUNK).rev());
                n * CHUNK
            }
        };
        s.live[id] = true;
        let p = Self::word_ptr(&s, id);
        drop(s);
        // SAFETY: chunk storage is heap memory owned by `self`, never moved (the Vec holds boxes)
        // nor freed before `self` is dropped.
        unsafe { &*p }
    }

    /// The slot number of a compat handle value, if it is one of this table's live slots.
    fn id_of(s: &Slots, value: usize) -> Option<usize> {
        let (&base, &n) = s.by_base.range(..=value).next_back()?;
        let off = value - base;
        let size = std::mem::size_of::<AtomicUsize>();
        if !off.is_multiple_of(size) || off / size >= CHUNK {
            return None;
        }
        let id = n * CHUNK + off / size;
        s.live[id].then_some(id)
    }

    /// The handle word of a live compat handle.
    fn get(&self, value: c_ulong) -> Result<&AtomicUsize> {
        let s = self.lock();
        let id = Self::id_of(&s, value as usize)
            .ok_or(Error::InvalidHandle("not a live handle of this pool's zs_malloc"))?;
        let p = Self::word_ptr(&s, id);
        drop(s);
        // SAFETY: as in `take`.
        Ok(unsafe { &*p })
    }

    /// Returns the slot of a compat handle (its word is empty).
    fn give_back(&self, value: c_ulong) {
        let mut s = self.lock();
        if let Some(id) = Self::id_of(&s, value as usize) {
            s.live[id] = false;
            s.free.push(id);
        }
    }
}

/// The kernel's `IS_ERR_VALUE`.
fn is_err_value(v: c_ulong) -> bool {
    v >= (-4095_i64) as c_ulong
}

fn parts<'a>(p: *mut zs_pool, handle: c_ulong) -> Result<(&'a Pool, &'a AtomicUsize)> {
    // SAFETY: `p` is NULL or a live pool (the C contract of every compat function).
    let zp = unsafe { zs_pool::get(p) }?;
    Ok((zp.pool(), zp.compat.get(handle)?))
}

/// `zs_malloc` of the compat header: a new object of `size` bytes and its `unsigned long`
/// handle, or `(unsigned long)-errno` (test with `IS_ERR_VALUE`).
///
/// # Safety
/// `p` is NULL or a live pool.
pub unsafe fn zs_compat_malloc(p: *mut zs_pool, size: size_t, _gfp: gfp_t, _nid: c_int) -> c_ulong {
    guard::call_errno(
        "zs_malloc",
        |neg| neg as c_long as c_ulong,
        || {
            // SAFETY: forwarded contract.
            let zp = unsafe { zs_pool::get(p) }?;
            let word = zp.compat.take();
            let value = word as *const AtomicUsize as usize as c_ulong;
            // SAFETY: the word lives in the pool's slot table until the pool is destroyed.
            if let Err(e) = unsafe { zp.pool().malloc_raw(word, size) } {
                zp.compat.give_back(value);
                return Err(e);
            }
            Ok(value)
        },
    )
}

/// `zs_free` of the compat header: frees the object and its handle slot. 0 and error values are
/// ignored (as the kernel does); anything else that is not a live handle of this pool gives
/// `-EINVAL` and changes nothing.
///
/// # Safety
/// `p` is NULL or a live pool.
pub unsafe fn zs_compat_free(p: *mut zs_pool, handle: c_ulong) -> c_int {
    guard::call_int("zs_free", || {
        // SAFETY: forwarded contract.
        let zp = unsafe { zs_pool::get(p) }?;
        if handle == 0 || is_err_value(handle) {
            return Ok(0);
        }
        let word = zp.compat.get(handle)?;
        // SAFETY: a live slot word of this pool.
        unsafe { zp.pool().free_raw(word) }?;
        zp.compat.give_back(handle);
        Ok(0)
    })
}

/// `zs_obj_write` of the compat header (mainline argument order: handle, source, length).
///
/// # Safety
/// `p` is NULL or a live pool; `src` readable for `mem_len` bytes; no read of this object runs.
pub unsafe fn zs_compat_obj_write(
    p: *mut zs_pool,
    handle: c_ulong,
    src: *const c_void,
    mem_len: size_t,
) -> c_int {
    guard::call_int("zs_obj_write", || {
        let (pool, word) = parts(p, handle)?;
        let page = pool.config().page_size as usize;
        // SAFETY: forwarded contract on `src`.
        let data = unsafe {
            src_slice(src, mem_len, page, || {
                invalid(format!("write length {mem_len} is larger than a page ({page})"))
            })
        }?;
        // SAFETY: a live slot word; the caller promises no concurrent read of the object.
        unsafe { pool.write_raw(word, data) }?;
        Ok(0)
    })
}

/// `zs_obj_read_begin` of the compat header; `mem_len == ZS_COMPAT_LEN_UNKNOWN` reads the
/// stored length (the older three-argument form).
///
/// # Safety
/// `p` is NULL or a live pool; `local_copy` as for `zs_obj_read_begin`.
pub unsafe fn zs_compat_obj_read_begin(
    p: *mut zs_pool,
    handle: c_ulong,
    mem_len: size_t,
    local_copy: *mut c_void,
) -> *mut c_void {
    guard::call("zs_obj_read_begin", std::ptr::null_mut(), || {
        let (pool, word) = parts(p, handle)?;
        let len = if mem_len == ZS_COMPAT_LEN_UNKNOWN {
            // SAFETY: a live slot word.
            unsafe { pool.object_len_raw(word) }?
        } else {
            mem_len
        };
        // SAFETY: forwarded contract on `local_copy`.
        unsafe { read_begin(pool, word, len, local_copy) }
    })
}

/// `zs_obj_read_end` of the compat header; `mem_len == ZS_COMPAT_LEN_UNKNOWN` skips the
/// length check (the older three-argument form).
///
/// # Safety
/// `p` is NULL or a live pool.
pub unsafe fn zs_compat_obj_read_end(
    p: *mut zs_pool,
    handle: c_ulong,
    mem_len: size_t,
    _handle_mem: *mut c_void,
) -> c_int {
    guard::call_int("zs_obj_read_end", || {
        let (pool, word) = parts(p, handle)?;
        let len = (mem_len != ZS_COMPAT_LEN_UNKNOWN).then_some(mem_len);
        // SAFETY: a live slot word; the core checks a section is open on it.
        unsafe { pool.read_end_raw(word, len) }?;
        Ok(0)
    })
}

/// The `struct zs_handle *` of a compat handle, to use it with the rest of the API (e.g. the
/// scatter-gather reads); NULL if it is not a live handle of this pool.
///
/// # Safety
/// `p` is NULL or a live pool.
pub unsafe fn zs_compat_handle(p: *mut zs_pool, handle: c_ulong) -> *mut zs_handle {
    guard::call("zs_compat_handle", std::ptr::null_mut(), || {
        let (_, word) = parts(p, handle)?;
        Ok(word as *const AtomicUsize as *mut zs_handle)
    })
}
