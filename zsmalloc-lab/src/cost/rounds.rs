//! One round of a read job (a filled pool read in one mode) and of a write job (a pool's two
//! write paths): every pass timed after the caches are evicted.

use std::hint::black_box;
use std::sync::atomic::AtomicUsize;

use zsmalloc_codec::Codec;
use zsmalloc_core::{AnyPool, Backend};

use super::fill::Filled;
use super::instructions;
use super::options::Mode;
use super::pass::{timed_pass, Pass, PassCtx};
use crate::error::{LabError, LabResult};

/// One group's passes in one read round.
#[derive(Debug, Clone, Copy)]
pub struct GroupPasses {
    /// The read section alone (begin + end).
    pub section: Pass,
    /// The section plus decompressing into a page: the zram consumer.
    pub read: Pass,
    /// The zswap consumer, when it copies the object first in this mode.
    pub zswap: Option<Pass>,
}

/// One read round: per group of the pool, in the pool's group order.
pub type ReadRound = Vec<GroupPasses>;

/// The two write paths, as a write round times them.
#[derive(Debug, Clone, Copy)]
pub enum WritePath {
    /// `zs_store`: allocate and copy in one call.
    Store,
    /// `zs_malloc` + `zs_obj_write`.
    MallocWrite,
}

impl WritePath {
    pub const ALL: [WritePath; 2] = [WritePath::Store, WritePath::MallocWrite];

    pub fn name(self) -> &'static str {
        match self {
            WritePath::Store => "store",
            WritePath::MallocWrite => "malloc_write",
        }
    }
}

/// One write round: a pass per path, in [`WritePath::ALL`] order.
pub type WriteRound = [Pass; 2];

/// Buffers a read job owns (allocated before any timed batch).
pub struct ReadBuffers {
    local: Vec<u8>,
    lin: Vec<u8>,
    dst: Vec<u8>,
    codec: Codec,
}

impl ReadBuffers {
    pub fn new(page: usize, codec: Codec) -> ReadBuffers {
        ReadBuffers {
            local: vec![0u8; page + 64],
            lin: vec![0u8; page + 64],
            dst: vec![0u8; page],
            codec,
        }
    }
}

/// The begin of a section in `mode`: the object's address (a linear view: for `sg`, two
/// segments are linearised into `lin`). `None` on error.
///
/// # Safety
/// `w` holds a live object of `len` bytes; the section must be ended with `read_end_raw`.
#[inline(always)]
unsafe fn begin(
    pool: &AnyPool,
    sg: bool,
    w: &AtomicUsize,
    len: usize,
    local: *mut u8,
    lin: *mut u8,
) -> Option<*const u8> {
    if sg {
        // SAFETY: the caller's contract.
        let (segs, n) = unsafe { pool.read_sg_begin_raw(w, len) }.ok()?;
        if n == 2 {
            // SAFETY: the segments are valid for their lengths until the end; `lin` holds a
            // page, and the two lengths sum to `len` <= page; the regions do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(segs[0].0, lin, segs[0].1);
                std::ptr::copy_nonoverlapping(segs[1].0, lin.add(segs[0].1), segs[1].1);
            }
            Some(lin as *const u8)
        } else {
            Some(segs[0].0)
        }
    } else {
        // SAFETY: the caller's contract; `local` holds a page + 8 bytes.
        unsafe { pool.read_begin_raw(w, len, local) }.ok()
    }
}

impl Filled<'_> {
    /// One round of reads in `mode`: per group, the section, the section + decompress and,
    /// where zswap copies first, the zswap consumer.
    pub fn read_round(
        &self,
        mode: Mode,
        bufs: &mut ReadBuffers,
        ctx: PassCtx<'_>,
        key: &str,
        evict: &mut dyn FnMut(),
    ) -> LabResult<ReadRound> {
        let PassCtx { batch, counter, callgrind } = ctx;
        let sg = mode == Mode::Sg;
        let page = self.corpus.page;
        let pool = &self.pool;
        let words = &self.words;
        let placed = &self.placed;
        let mut out = Vec::new();
        let fail =
            |what: &str| LabError::runtime(format!("a {what} read failed in mode {}", mode.name()));
        for g in &self.groups {
            let gk = |what: &str| format!("read|{key}|{}|{}|{what}", g.kind.name(), g.spanning);
            let ReadBuffers { local, lin, dst, codec } = &mut *bufs;
            let (local, lin) = (local.as_mut_ptr(), lin.as_mut_ptr());
            let section = |i: u32| {
                let (w, len) = (&words[i as usize], placed[i as usize].len as usize);
                // SAFETY: `w` holds a live object of `len` bytes; ended right after.
                match unsafe { begin(pool, sg, w, len, local, lin) } {
                    Some(p) => {
                        black_box(p);
                        // SAFETY: ends the section just begun on `w`.
                        unsafe { pool.read_end_raw(w, Some(len)) }.is_ok()
                    }
                    None => false,
                }
            };
            evict();
            let section = instructions::pass(
                callgrind,
                || gk("section"),
                || timed_pass(&g.order, batch, counter, section),
            )
            .ok_or_else(|| fail("section"))?;
            let mut read = |i: u32, copy_first: bool| {
                let o = placed[i as usize];
                let (w, len) = (&words[i as usize], o.len as usize);
                // SAFETY: `w` holds a live object of `len` bytes; ended below.
                let Some(mut p) = (unsafe { begin(pool, sg, w, len, local, lin) }) else {
                    return false;
                };
                if copy_first {
                    // SAFETY: `p` is valid for `len` bytes until the end; `lin` holds a page
                    // and is not the object's address in these modes.
                    unsafe { std::ptr::copy_nonoverlapping(p, lin, len) };
                    p = lin;
                }
                // SAFETY: `p` is valid for `len` bytes until the section ends.
                let src = unsafe { std::slice::from_raw_parts(p, len) };
                let n = if o.raw {
                    dst.copy_from_slice(src);
                    page
                } else {
                    codec.decompress(src, dst).unwrap_or(0)
                };
                // SAFETY: ends the section just begun on `w`.
                let ended = unsafe { pool.read_end_raw(w, Some(len)) }.is_ok();
                ended && n == page
            };
            evict();
            let read_pass = instructions::pass(
                callgrind,
                || gk("read"),
                || timed_pass(&g.order, batch, counter, |i| read(i, false)),
            )
            .ok_or_else(|| fail("decompressing"))?;
            let zswap = if mode.zswap_copies(g.spanning) {
                evict();
                Some(
                    instructions::pass(
                        callgrind,
                        || gk("zswap"),
                        || timed_pass(&g.order, batch, counter, |i| read(i, true)),
                    )
                    .ok_or_else(|| fail("zswap"))?,
                )
            } else {
                None
            };
            out.push(GroupPasses { section, read: read_pass, zswap });
        }
        Ok(out)
    }

    /// One round of writes: per path, a batch of stores of the corpus objects `picks` into
    /// `scratch`, freed untimed after the batch.
    pub fn write_round(
        &self,
        scratch: &[AtomicUsize],
        picks: &[u32],
        ctx: PassCtx<'_>,
        key: &str,
        evict: &mut dyn FnMut(),
    ) -> LabResult<WriteRound> {
        let PassCtx { counter, callgrind, .. } = ctx;
        let huge = self.pool.huge_class_size();
        let pool = &self.pool;
        let mut res = [Pass::default(); 2];
        for (path, res) in WritePath::ALL.into_iter().zip(res.iter_mut()) {
            let mut at = 0usize;
            let op = |e: u32| {
                let data = self.corpus.stored(e as usize, huge).bytes;
                let w = &scratch[at];
                at += 1;
                // SAFETY: `w` is 0 (freed after each batch) and stays at its address until
                // freed below.
                unsafe {
                    match path {
                        WritePath::Store => pool.store_raw(w, data).is_ok(),
                        WritePath::MallocWrite => {
                            pool.malloc_raw(w, data.len()).is_ok()
                                && pool.write_raw(w, data).is_ok()
                        }
                    }
                }
            };
            evict();
            let k = || format!("write|{key}|{}", path.name());
            let p =
                instructions::pass(callgrind, k, || timed_pass(picks, scratch.len(), counter, op))
                    .ok_or_else(|| LabError::runtime("a timed store failed"))?;
            for w in scratch {
                // SAFETY: each word holds the object just stored (or 0, refused harmlessly).
                let _ = unsafe { pool.free_raw(w) };
            }
            *res = p;
        }
        Ok(res)
    }
}
