//! Reads that report where an object lies instead of handing out its bytes, and the backend
//! interface of a pool that keeps no bytes ([`PlacementPool`]).
//!
//! A placement read looks the object up under its class lock (it registers on no header: there
//! are no bytes to keep in place) and counts itself as the read section of the pool's read mode
//! would: spanning or not, and the bytes `copy` mode copies for a spanning object. So the
//! figures of a placement-only run are the ones a run with bytes gives (`tests/payload_free.rs`).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::arena::prefetch_line;
use crate::backend::{Backend, PrefetchStage, ReadKind, ReadPlacement};
use crate::config::{PoolConfig, ReadMode};
use crate::error::{Error, Result};
use crate::handle_word::Location;
use crate::handle_word::ObjectLocation;
use crate::header;
use crate::payload::Payload;
use crate::placement::{Place, WORD};
use crate::pool::{PlacementPool, Pool};
use crate::read::SgSegments;
use crate::size_class::SizeClass;
use crate::stats::{ClassStats, PoolStats};
use crate::zspage::Zspage;

impl<P: Payload> Pool<P> {
    /// The placement of the object of `h` (`mem_len`, if given, must be its length), counted as
    /// one read of `kind` in the pool's read mode.
    ///
    /// # Safety
    /// As [`Pool::free_raw`].
    pub unsafe fn read_placement_raw(
        &self,
        h: &AtomicUsize,
        mem_len: Option<usize>,
        kind: ReadKind,
    ) -> Result<ReadPlacement> {
        self.with_object(h, |p, z, hw| {
            let len = header::len(hw.load(Ordering::Acquire));
            if mem_len.is_some_and(|m| m != len) {
                return Err(crate::read::wrong_read_len(mem_len.unwrap_or(0), len));
            }
            let info = &p.class.info;
            let spanning = self.layout_at(z, info, p.obj, p.loc.offset(), len).spanning;
            let copies = kind == ReadKind::Section && self.config.read_mode == ReadMode::Copy;
            let copied = if spanning && copies { len as u64 } else { 0 };
            self.access.record_read(p.pos, spanning, copied);
            Ok(ReadPlacement { len, spanning, copied })
        })
    }

    /// Runs `f` on the object `h` names, under its class lock: its checked place, its zspage
    /// and its header word.
    fn with_object<R>(
        &self,
        h: &AtomicUsize,
        f: impl FnOnce(&Place<'_>, &Zspage, &AtomicU64) -> Result<R>,
    ) -> Result<R> {
        loop {
            let word = h.load(Ordering::Acquire);
            let (z, class): (&Zspage, &SizeClass) = match self.place::<WORD>(word, None) {
                Ok(p) => (p.zspage.expect("found at WORD"), p.class),
                // Compaction moved the object and released the old zspage since the load.
                Err(_) if word != 0 && h.load(Ordering::Acquire) != word => continue,
                Err(e) => return Err(Error::InvalidHandle(e)),
            };
            let _class_lock = class.lock();
            if h.load(Ordering::Acquire) != word {
                continue; // compaction moved it before we took the lock
            }
            let (p, hw) = self.locked_object(word, z, class)?;
            let addr = h as *const AtomicUsize as usize;
            header::check_owner(hw.load(Ordering::Acquire), addr)
                .map_err(header::Refusal::into_error)?;
            return f(&p, z, hw);
        }
    }
}

impl PlacementPool {
    /// Where the object of `h` is now (as [`Pool::location_raw`]).
    ///
    /// # Safety
    /// As [`Pool::free_raw`].
    pub unsafe fn location_raw(&self, h: &AtomicUsize) -> Result<ObjectLocation> {
        self.with_object(h, |p, z, _| {
            Ok(ObjectLocation {
                zspage: p.loc.entry,
                generation: z.live_generation().expect("a checked zspage is live"),
                index: p.obj,
            })
        })
    }

    /// The length of the object of `h`.
    ///
    /// # Safety
    /// As [`Pool::free_raw`].
    pub unsafe fn object_len_raw(&self, h: &AtomicUsize) -> Result<usize> {
        self.with_object(h, |_, _, hw| Ok(header::len(hw.load(Ordering::Acquire))))
    }

    /// A write of the whole object: nothing is kept, but the write is checked and counted as a
    /// pool with bytes counts it (spanning or not).
    fn write_placement(&self, h: &AtomicUsize, len: usize) -> Result<()> {
        self.with_object(h, |p, z, hw| {
            let stored = header::len(hw.load(Ordering::Acquire));
            if stored != len {
                return Err(crate::read::wrong_read_len(len, stored));
            }
            let spanning = self.layout_at(z, &p.class.info, p.obj, p.loc.offset(), len).spanning;
            self.access.record_write(spanning);
            Ok(())
        })
    }
}

/// A pool without bytes through the interface: placement and stores as any zsmalloc pool; every
/// read of bytes refused with [`Error::NoPayload`] (the placement of a read is
/// [`Backend::read_placement_raw`]).
impl Backend for PlacementPool {
    fn name(&self) -> &str {
        Pool::name(self)
    }
    fn config(&self) -> &PoolConfig {
        Pool::config(self)
    }
    fn total_pages(&self) -> u64 {
        Pool::total_pages(self)
    }
    fn stats(&self) -> PoolStats {
        Pool::stats(self)
    }
    fn class_stats(&self) -> Vec<ClassStats> {
        Pool::class_stats(self)
    }
    fn compact(&self) -> u64 {
        Pool::compact(self)
    }
    fn huge_class_size(&self) -> usize {
        Pool::huge_class_size(self)
    }
    fn lookup_class_index(&self, size: usize) -> u32 {
        Pool::lookup_class_index(self, size)
    }
    fn metadata_bytes(&self) -> (usize, usize) {
        Pool::metadata_bytes(self)
    }
    fn keeps_bytes(&self) -> bool {
        false
    }
    #[inline]
    fn prefetch_raw(&self, h: &AtomicUsize, stage: PrefetchStage) {
        // The location and zspage the word names, if it names one of this pool's (a hint
        // checks no more than it needs to compute an address).
        let named = || {
            let loc = Location::decode(h.load(Ordering::Relaxed)).filter(|l| l.tag == self.tag)?;
            Some((loc, self.zspages.get(loc.entry)?))
        };
        match stage {
            PrefetchStage::Word => prefetch_line(h as *const AtomicUsize as *const u8),
            PrefetchStage::Metadata => {
                if let Some((loc, z)) = named() {
                    prefetch_line(z as *const Zspage as *const u8);
                    self.payload.prefetch_first_word(loc.offset() >> self.page_shift());
                }
            }
            PrefetchStage::Header => {
                let class =
                    named().and_then(|(loc, z)| Some((loc, self.classes.get(z.class_pos())?)));
                if let Some((loc, class)) = class.filter(|(_, c)| !c.info.huge) {
                    self.payload.prefetch_header(self.page_shift(), loc.offset(), &class.info);
                }
            }
        }
    }
    unsafe fn store_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { Pool::store_raw(self, h, data) }
    }
    unsafe fn malloc_raw(&self, h: &AtomicUsize, len: usize) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { Pool::malloc_raw(self, h, len) }
    }
    unsafe fn write_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        self.write_placement(h, data.len())
    }
    unsafe fn free_raw(&self, h: &AtomicUsize) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { Pool::free_raw(self, h) }
    }
    unsafe fn handle_move_raw(&self, from: &AtomicUsize, to: &AtomicUsize) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { Pool::handle_move_raw(self, from, to) }
    }
    unsafe fn read_begin_raw(&self, _: &AtomicUsize, _: usize, _: *mut u8) -> Result<*const u8> {
        Err(Error::NoPayload)
    }
    unsafe fn read_end_at_raw(
        &self,
        _: &AtomicUsize,
        _: Option<usize>,
        _: *const u8,
    ) -> Result<()> {
        Err(Error::NoPayload)
    }
    unsafe fn read_sg_begin_raw(&self, _: &AtomicUsize, _: usize) -> Result<SgSegments> {
        Err(Error::NoPayload)
    }
    unsafe fn read_into_raw(&self, _: &AtomicUsize, _: &mut [u8]) -> Result<usize> {
        Err(Error::NoPayload)
    }
    unsafe fn object_len_raw(&self, h: &AtomicUsize) -> Result<usize> {
        // SAFETY: forwarded contract.
        unsafe { PlacementPool::object_len_raw(self, h) }
    }
    unsafe fn read_placement_raw(
        &self,
        h: &AtomicUsize,
        mem_len: Option<usize>,
        kind: ReadKind,
    ) -> Result<ReadPlacement> {
        // SAFETY: forwarded contract.
        unsafe { Pool::read_placement_raw(self, h, mem_len, kind) }
    }
}
