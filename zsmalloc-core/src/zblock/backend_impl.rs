//! zblock through the backend interface.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::backend::Backend;
use crate::config::PoolConfig;
use crate::error::{Error, Result};
use crate::read::SgSegments;
use crate::stats::{ClassStats, PoolStats};

use super::{wrong_len, ZblockPool};

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
            s.reads += st.reads;
        }
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
                    reads: st.reads,
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
    /// (the arena's page bookkeeping, the safety protocol's tables: block entries, per-slot
    /// owner/length/readers). zblock itself keeps its metadata in the block headers, inside the
    /// pages.
    fn metadata_bytes(&self) -> (usize, usize) {
        let protocol = (0..self.types.len()).map(|ty| self.lock(ty).heap_bytes()).sum::<usize>()
            + self.types.len() * std::mem::size_of::<std::sync::Mutex<super::TypeState>>();
        (self.arena.heap_bytes(), protocol)
    }

    unsafe fn store_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        self.alloc_publish(h, data.len(), Some(data))
    }
    unsafe fn malloc_raw(&self, h: &AtomicUsize, len: usize) -> Result<()> {
        self.alloc_publish(h, len, None)
    }
    unsafe fn write_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        let mut f = self.find_live(h)?;
        let w = f.w;
        let blk = f.st.block_mut_any(w.block);
        let len = blk.slots[w.slot as usize].len as usize;
        if data.len() != len {
            return Err(wrong_len("write", data.len(), len));
        }
        let dst = self.slot_addr(blk.base, w.ty, w.slot);
        // SAFETY: the slot is validated (live block, taken, owned by `h`) and the type is locked,
        // so the block stays; its `len` bytes lie in the block's committed pages. The caller
        // promises no read section of the object runs meanwhile.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, len) };
        Ok(())
    }
    unsafe fn free_raw(&self, h: &AtomicUsize) -> Result<()> {
        let Some(mut f) = self.find(h)? else { return Ok(()) };
        let w = f.w;
        let s = f.st.block_mut_any(w.block).slots[w.slot as usize];
        if s.readers != 0 {
            return Err(Error::Busy);
        }
        self.slot_freed(&mut f.st, w.ty as usize, w.block, w.slot, s.len as usize);
        h.store(0, Ordering::Release);
        Ok(())
    }
    unsafe fn handle_move_raw(&self, from: &AtomicUsize, to: &AtomicUsize) -> Result<()> {
        let same = std::ptr::eq(from, to);
        if !same && to.load(Ordering::Acquire) != 0 {
            return Err(Error::HandleInUse);
        }
        let mut f = self.find_live(from)?;
        if same {
            return Ok(());
        }
        let w = f.w;
        let s = &mut f.st.block_mut_any(w.block).slots[w.slot as usize];
        if s.readers != 0 {
            return Err(Error::Busy);
        }
        s.owner = to as *const AtomicUsize as usize;
        to.store(w.encode(), Ordering::Release);
        from.store(0, Ordering::Release);
        Ok(())
    }
    /// Always in place: `local_copy` is never written (it may be NULL).
    unsafe fn read_begin_raw(
        &self,
        h: &AtomicUsize,
        mem_len: usize,
        _local_copy: *mut u8,
    ) -> Result<*const u8> {
        self.begin(h, mem_len).map(|p| p as *const u8)
    }
    unsafe fn read_end_at_raw(
        &self,
        h: &AtomicUsize,
        mem_len: Option<usize>,
        _handle_mem: *const u8,
    ) -> Result<()> {
        let mut f = self.find_live(h)?;
        let w = f.w;
        let s = &mut f.st.block_mut_any(w.block).slots[w.slot as usize];
        if s.readers == 0 {
            return Err(Error::InvalidArgument("no read section in progress".into()));
        }
        if let Some(m) = mem_len.filter(|&m| m != s.len as usize) {
            return Err(wrong_len("read", m, s.len as usize));
        }
        s.readers -= 1;
        Ok(())
    }
    /// One segment: the slot, in place (a block's pages are adjacent).
    unsafe fn read_sg_begin_raw(&self, h: &AtomicUsize, mem_len: usize) -> Result<SgSegments> {
        let p = self.begin(h, mem_len)?;
        Ok(([(p as *const u8, mem_len), (std::ptr::null(), 0)], 1))
    }
    unsafe fn read_into_raw(&self, h: &AtomicUsize, out: &mut [u8]) -> Result<usize> {
        let mut f = self.find_live(h)?;
        let w = f.w;
        let blk = f.st.block_mut_any(w.block);
        let len = blk.slots[w.slot as usize].len as usize;
        if out.len() < len {
            return Err(Error::InvalidArgument(format!(
                "buffer of {} bytes is smaller than the object ({len} bytes)",
                out.len()
            )));
        }
        let src = self.slot_addr(blk.base, w.ty, w.slot);
        // SAFETY: validated slot under the type's lock (the block stays): `len` bytes of the
        // block's committed pages, written by the store; `out` holds at least `len`.
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), len) };
        f.st.reads += 1;
        Ok(len)
    }
    unsafe fn object_len_raw(&self, h: &AtomicUsize) -> Result<usize> {
        let f = self.find_live(h)?;
        let blk =
            f.st.block(f.w.block, f.w.generation).ok_or(Error::InvalidHandle("stale handle"))?;
        Ok(blk.slots[f.w.slot as usize].len as usize)
    }
}
