//! zblock through the backend interface.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::backend::{Backend, ReadKind, ReadPlacement};
use crate::config::PoolConfig;
use crate::error::{Error, Result};
use crate::read::SgSegments;
use crate::slot_state::{no_reader, wrong_len};
use crate::stats::{ClassStats, PoolStats};

use super::{Word, ZblockPool};

impl Backend for ZblockPool {
    fn name(&self) -> &str {
        &self.name
    }
    fn config(&self) -> &PoolConfig {
        &self.config
    }
    #[inline]
    fn total_pages(&self) -> u64 {
        self.pages_allocated.load(Ordering::Acquire)
    }
    fn stats(&self) -> PoolStats {
        let mut s = PoolStats {
            pages_allocated: self.total_pages(),
            pages_peak: self.pages_peak.load(Ordering::Relaxed),
            pages_cached: self.arena.pages_cached(),
            ..PoolStats::default()
        };
        for (ty, t) in self.table.types().iter().enumerate() {
            let st = self.lock(ty);
            s.objs_allocated += st.nblocks * u64::from(t.slots);
            s.objs_inuse += st.obj_used;
            s.bytes_stored += st.bytes_stored;
        }
        s.reads = self.access.sum().0;
        s
    }
    /// One row per block type: `size` is the slot size, `pages_per_zspage` the block's pages,
    /// `objs_per_zspage` its slots. zblock has no fullness groups: `fullness` is reported as
    /// zeros; nothing spans, nothing is freeable by compaction.
    fn class_stats(&self) -> Vec<ClassStats> {
        self.table
            .types()
            .iter()
            .enumerate()
            .map(|(ty, t)| {
                let st = self.lock(ty);
                ClassStats {
                    index: ty as u32,
                    size: t.slot_size,
                    pages_per_zspage: t.num_pages,
                    objs_per_zspage: t.slots,
                    huge: false,
                    order: 0,
                    fullness: [0; 12],
                    obj_allocated: st.nblocks * u64::from(t.slots),
                    obj_used: st.obj_used,
                    pages_used: st.nblocks * u64::from(t.num_pages),
                    freeable: 0,
                    spanning_per_zspage: 0,
                    tail_waste: t.tail_waste,
                    worst_merge_waste: 0,
                    first_index: ty as u32,
                    last_index: ty as u32,
                    bytes_stored: st.bytes_stored,
                    reads: self.access.class_sum(ty).0,
                    reads_spanning: 0,
                    read_copy_bytes: 0,
                }
            })
            .collect()
    }
    /// zblock cannot compact.
    fn compact(&self) -> u64 {
        0
    }
    /// The last slot size: the smallest length zblock refuses.
    #[inline]
    fn huge_class_size(&self) -> usize {
        self.table.max_slot_size() as usize
    }
    /// The block type's index; the number of types for a length zblock refuses (0, or at least
    /// the last slot size).
    #[inline]
    fn lookup_class_index(&self, size: usize) -> u32 {
        self.table.lookup(size).unwrap_or(self.table.types().len()) as u32
    }
    /// (what zblock keeps outside the pages here: the arena's page bookkeeping and the blocks'
    /// placement state, which the patch keeps in the block headers; the safety protocol's slot
    /// records: owner, length, sequence number, readers).
    fn metadata_bytes(&self) -> (usize, usize) {
        let placement = (0..self.types.len()).map(|ty| self.lock(ty).heap_bytes()).sum::<usize>()
            + self.types.len() * std::mem::size_of::<std::sync::Mutex<super::TypeState>>();
        let protocol = self.recs.iter().map(|r| r.heap_bytes()).sum::<usize>();
        (self.arena.heap_bytes() + placement, protocol)
    }

    unsafe fn store_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        self.alloc_publish(h, data.len(), Some(data))
    }
    unsafe fn malloc_raw(&self, h: &AtomicUsize, len: usize) -> Result<()> {
        self.alloc_publish(h, len, None)
    }
    /// Under the type's lock (no free can release the block meanwhile).
    unsafe fn write_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        let f = self.find_live(h)?;
        let len = f.rec.load().len();
        if data.len() != len {
            return Err(wrong_len("write", data.len(), len));
        }
        if !self.config.payload {
            return Ok(()); // placement only: nothing is kept
        }
        let dst = self.slot_addr(f.blk.base.load(Ordering::Acquire), f.w.ty, f.w.slot);
        // SAFETY: the slot is validated (taken, live, owned by `h`) and the type is locked, so
        // the block stays; its `len` bytes lie in the block's committed pages. The caller
        // promises no read section of the object runs meanwhile.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, len) };
        drop(f);
        Ok(())
    }
    unsafe fn free_raw(&self, h: &AtomicUsize) -> Result<()> {
        let Some(mut f) = self.find(h)? else { return Ok(()) };
        let (w, addr) = (f.w, h as *const AtomicUsize as usize);
        let len = f.rec.update(f.rec.load(), w.seq, addr, no_reader, |s| s.dead())?.len();
        self.slot_freed(&mut f.st, w.ty as usize, w.block, w.slot, len);
        h.store(0, Ordering::Release);
        Ok(())
    }
    unsafe fn handle_move_raw(&self, from: &AtomicUsize, to: &AtomicUsize) -> Result<()> {
        let same = std::ptr::eq(from, to);
        if !same && to.load(Ordering::Acquire) != 0 {
            return Err(Error::HandleInUse);
        }
        let f = self.find_live(from)?;
        if same {
            return Ok(());
        }
        // A new sequence number: readers of the old word fail their count-in from now on.
        let addr = from as *const AtomicUsize as usize;
        let moved = f.rec.update(f.rec.load(), f.w.seq, addr, no_reader, |s| s.moved())?.moved();
        f.rec.owner.store(to as *const AtomicUsize as usize, Ordering::Release);
        to.store(Word { seq: moved.seq(), ..f.w }.encode(self.frame), Ordering::Release);
        from.store(0, Ordering::Release);
        Ok(())
    }
    /// Always in place: `local_copy` is never written (it may be NULL).
    #[inline]
    unsafe fn read_begin_raw(
        &self,
        h: &AtomicUsize,
        mem_len: usize,
        _local_copy: *mut u8,
    ) -> Result<*const u8> {
        self.bytes_kept()?;
        self.begin(h, mem_len).map(|p| p as *const u8)
    }
    #[inline]
    unsafe fn read_end_at_raw(
        &self,
        h: &AtomicUsize,
        mem_len: Option<usize>,
        _handle_mem: *const u8,
    ) -> Result<()> {
        self.end(h, mem_len)
    }
    /// One segment: the slot, in place (a block's pages are adjacent).
    #[inline]
    unsafe fn read_sg_begin_raw(&self, h: &AtomicUsize, mem_len: usize) -> Result<SgSegments> {
        self.bytes_kept()?;
        let p = self.begin(h, mem_len)?;
        Ok(([(p as *const u8, mem_len), (std::ptr::null(), 0)], 1))
    }
    unsafe fn read_into_raw(&self, h: &AtomicUsize, out: &mut [u8]) -> Result<usize> {
        self.bytes_kept()?;
        let len = self.see(h)?.state.len();
        if out.len() < len {
            return Err(Error::InvalidArgument(format!(
                "buffer of {} bytes is smaller than the object ({len} bytes)",
                out.len()
            )));
        }
        let src = self.begin(h, len)?;
        // SAFETY: the section is open (counted in): `len` bytes of the block's committed pages,
        // written by the store; `out` holds at least `len`.
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), len) };
        self.end(h, Some(len))?;
        Ok(len)
    }
    #[inline]
    unsafe fn object_len_raw(&self, h: &AtomicUsize) -> Result<usize> {
        Ok(self.see(h)?.state.len())
    }
    fn keeps_bytes(&self) -> bool {
        self.config.payload
    }
    /// In place: never spanning, nothing copied; counted as a read section.
    unsafe fn read_placement_raw(
        &self,
        h: &AtomicUsize,
        mem_len: Option<usize>,
        _kind: ReadKind,
    ) -> Result<ReadPlacement> {
        let seen = self.see(h)?;
        let len = seen.state.len();
        if mem_len.is_some_and(|m| m != len) {
            return Err(wrong_len("read", mem_len.unwrap_or(0), len));
        }
        self.access.record_read(seen.w.ty as usize, false, 0);
        Ok(ReadPlacement { len, spanning: false, copied: 0 })
    }
}

impl ZblockPool {
    /// Refuses a read of bytes in a placement-only pool (`PoolConfig::payload`).
    #[inline]
    fn bytes_kept(&self) -> Result<()> {
        if self.config.payload {
            Ok(())
        } else {
            Err(Error::NoPayload)
        }
    }
}
