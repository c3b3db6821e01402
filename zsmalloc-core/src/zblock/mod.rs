//! The zblock backend: the zblock allocator as merged into the mm tree in 2025 (blocks of
//! `num_pages` pages holding equal slots, one active list per block type), on this crate's
//! simulated pages (docs/DESIGN.md, Backends).
//!
//! Placement is zblock's exactly: a length goes to the first block type whose slot size is
//! strictly greater (`table.rs`); a store takes the lowest free slot of the first block of its
//! type's active list, or makes a new block (slot 0) at the head of the list; a block left with no
//! free slot leaves the list; a free clears its slot, a block that was full goes to the tail of
//! the list, a block left empty is released at once. No object spans blocks; there is no
//! compaction (`compact` frees 0). Pages = the blocks' pages.
//!
//! Blocks are runs of adjacent simulated pages from the arena (the patch vmallocs them), so a
//! slot may cross a page boundary and is still read in place: reads never copy, an SG read is
//! one segment. The block header's bytes are inside the block, so page counts are faithful;
//! nothing is stored there.
//!
//! What the project adds for safety lives outside the pages (`slots.rs`, on the record and
//! protocol it shares with the malloc backend, `slot_state.rs`): per slot, the owner (the handle
//! word's address), the exact length, a sequence number and the open read sections. A handle
//! word (`word.rs`) is checked field by field against the tables, the slot's sequence
//! number and its owner before anything is dereferenced, so garbage, stale, empty and foreign
//! words (zsmalloc's, another zblock pool's, a malloc pool's) are refused with `InvalidHandle`.
//! A free or handle move of an object with an open read section is `Busy`, as in zsmalloc's raw
//! layer. Its heap bytes are `metadata_bytes().1`.
//!
//! Concurrency: one lock per block type, taken by stores, frees, moves and writes (as the
//! patch's per-list lock); read sections take no lock (as the patch's map): they count
//! themselves in the slot's state word (`slots.rs`). The arena's own mutex nests inside a type
//! lock. Not modelled: vmalloc's cost, RCU-deferred freeing of blocks, and that zblock's pages
//! are unmovable (zsmalloc's are movable).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::arena::{PageArena, Pfn};
use crate::config::{BackendKind, PoolConfig};
use crate::counters::AccessCounters;
use crate::error::{Error, Result};
use crate::slot_state::{Marker, WordFrame};

mod backend_impl;
mod block;
mod slots;
pub mod table;
mod word;

use block::{Freed, TypeState};
use slots::{BlockRec, SlotRec, State, TypeRecs};
pub use table::{BlockTable, BlockType};
use word::Word;

/// A zblock pool.
pub struct ZblockPool {
    name: String,
    config: PoolConfig,
    /// This pool's handle words' marker and pool id.
    frame: WordFrame,
    table: BlockTable,
    header: usize,
    /// Per type: placement state (locked) and slot records (read without the lock).
    types: Box<[Mutex<TypeState>]>,
    recs: Box<[TypeRecs]>,
    arena: PageArena,
    pages_allocated: AtomicU64,
    pages_peak: AtomicU64,
    /// Read sections per type (sharded by thread).
    access: AccessCounters,
}

/// A validated object of `h`: its word and records, with its type locked.
struct Found<'a> {
    st: MutexGuard<'a, TypeState>,
    w: Word,
    blk: &'a BlockRec,
    rec: &'a SlotRec,
}

/// A validated object of `h` and its state, found without the lock.
struct Seen<'a> {
    w: Word,
    blk: &'a BlockRec,
    rec: &'a SlotRec,
    state: State,
}

impl ZblockPool {
    /// A named zblock pool (`config.backend` must be zblock; the config is validated).
    pub fn with_name(name: &str, config: PoolConfig) -> Result<ZblockPool> {
        if config.backend != BackendKind::Zblock {
            return Err(Error::config(
                "backend",
                format!("a ZblockPool cannot be a {} pool", config.backend.name()),
            ));
        }
        config.validate()?;
        let table = BlockTable::new(config.page_size)?;
        let arena = PageArena::for_config(&config)?;
        let types = table.types().iter().map(|t| Mutex::new(TypeState::new(t.slots))).collect();
        let recs = table.types().iter().map(|t| TypeRecs::new(t.slots)).collect();
        Ok(ZblockPool {
            name: name.to_string(),
            header: table::header_size(config.page_size) as usize,
            access: AccessCounters::new(table.types().len()),
            config,
            frame: WordFrame::new(Marker::Zblock),
            table,
            types,
            recs,
            arena,
            pages_allocated: AtomicU64::new(0),
            pages_peak: AtomicU64::new(0),
        })
    }

    /// The block table of this pool's page size.
    pub fn table(&self) -> &BlockTable {
        &self.table
    }

    fn lock(&self, ty: usize) -> MutexGuard<'_, TypeState> {
        self.types[ty].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Address of slot `slot` of the block at `base` of type `ty`.
    #[inline]
    fn slot_addr(&self, base: usize, ty: u32, slot: u32) -> *mut u8 {
        let size = self.table.types()[ty as usize].slot_size as usize;
        (base + self.header + slot as usize * size) as *mut u8
    }

    /// Decodes `word` and finds its records (nothing is locked or proven live yet).
    #[inline]
    fn records(&self, word: usize) -> Result<(Word, &BlockRec, &SlotRec)> {
        let w = Word::decode(word, self.frame).map_err(Error::InvalidHandle)?;
        let recs =
            self.recs.get(w.ty as usize).ok_or(Error::InvalidHandle("no such block type"))?;
        let (blk, rec) = recs.get(w.block, w.slot).ok_or(Error::InvalidHandle("no such slot"))?;
        Ok((w, blk, rec))
    }

    /// The live object `h` holds, without the lock (its state as loaded).
    #[inline]
    fn see(&self, h: &AtomicUsize) -> Result<Seen<'_>> {
        let word = h.load(Ordering::Acquire);
        if word == 0 {
            return Err(Error::InvalidHandle("empty handle"));
        }
        let (w, blk, rec) = self.records(word)?;
        let state = rec.load();
        rec.check(state, w.seq, h as *const AtomicUsize as usize)?;
        Ok(Seen { w, blk, rec, state })
    }

    /// The object `h` holds, validated, its type locked. An empty word is `Ok(None)`.
    fn find(&self, h: &AtomicUsize) -> Result<Option<Found<'_>>> {
        let word = h.load(Ordering::Acquire);
        if word == 0 {
            return Ok(None);
        }
        let (w, blk, rec) = self.records(word)?;
        let st = self.lock(w.ty as usize);
        if h.load(Ordering::Acquire) != word {
            return Err(Error::InvalidHandle("the handle changed during the call"));
        }
        if !st.is_taken(w.block, w.slot) {
            return Err(Error::InvalidHandle("the handle's slot is free (stale or freed handle)"));
        }
        rec.check(rec.load(), w.seq, h as *const AtomicUsize as usize)?;
        Ok(Some(Found { st, w, blk, rec }))
    }

    /// As `find`, an empty word refused.
    fn find_live(&self, h: &AtomicUsize) -> Result<Found<'_>> {
        self.find(h)?.ok_or(Error::InvalidHandle("empty handle"))
    }

    /// Allocates an object of `len` bytes for `h`, copies `data` (if given) into it and
    /// publishes it in `h`, under the type's lock.
    fn alloc_publish(&self, h: &AtomicUsize, len: usize, data: Option<&[u8]>) -> Result<()> {
        let ty = self.table.lookup(len)?;
        if h.load(Ordering::Acquire) != 0 {
            return Err(Error::HandleInUse);
        }
        let t = self.table.types()[ty];
        let recs = &self.recs[ty];
        let mut st = self.lock(ty);
        let (b, slot, blk) = match st.claim() {
            Some((b, slot)) => {
                let blk = recs.get(b, slot).expect("a live block has records").0;
                (b, slot, blk)
            }
            None => {
                if !st.can_add() {
                    return Err(Error::OutOfMemory);
                }
                let first = self.new_block(ty, t.num_pages)?;
                let base = self.arena.page_ptr(first) as usize;
                let Some(blk) = recs.prepare(st.next_entry(), base) else {
                    self.give_back(ty, first);
                    return Err(Error::OutOfMemory);
                };
                (st.add_block(first), 0, blk)
            }
        };
        let rec = recs.slot(blk, slot).expect("a block's records cover its slots");
        let seq = rec.load().next_seq();
        rec.owner.store(h as *const AtomicUsize as usize, Ordering::Relaxed);
        let base = blk.base.load(Ordering::Relaxed);
        if let Some(data) = data.filter(|_| self.config.payload) {
            let dst = self.slot_addr(base, ty as u32, slot);
            // SAFETY: the slot was just taken under the type's lock: no handle names it yet (its
            // state is dead, so no reader counts on it), and it lies inside the block's pages
            // (header + slots * slot_size <= block bytes), committed when the arena handed the
            // run out; `len < slot_size`.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, len) };
        }
        // Publishes owner and bytes to readers that see the live state.
        rec.publish(State::live(len, seq));
        st.obj_used += 1;
        st.bytes_stored += len as u64;
        let w = Word { ty: ty as u32, block: b, slot, seq };
        if h.compare_exchange(0, w.encode(self.frame), Ordering::AcqRel, Ordering::Acquire).is_err()
        {
            // Another thread filled `h` meanwhile: give the slot back (nobody could read it).
            rec.publish(State::live(len, seq).dead());
            self.slot_freed(&mut st, ty, b, slot, len);
            return Err(Error::HandleInUse);
        }
        Ok(())
    }

    /// A new run of `n` pages for type `ty` (the memory limit and the fault hook honoured).
    fn new_block(&self, ty: usize, n: u32) -> Result<Pfn> {
        let n = u64::from(n);
        let limit = self.config.mem_limit_pages;
        let before = self
            .pages_allocated
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                (limit == 0 || p + n <= limit).then_some(p + n)
            })
            .map_err(|_| Error::OutOfMemory)?;
        let run = if crate::fault::fails(crate::fault::Point::Pages) {
            None
        } else {
            self.arena.alloc_run(ty, n as usize)
        };
        let Some(first) = run else {
            self.pages_allocated.fetch_sub(n, Ordering::AcqRel);
            return Err(Error::OutOfMemory);
        };
        self.pages_peak.fetch_max(before + n, Ordering::Relaxed);
        Ok(first)
    }

    /// Gives a block's pages back to the arena.
    fn give_back(&self, ty: usize, first: Pfn) {
        let n = self.table.types()[ty].num_pages as usize;
        self.arena.free_run(first, n);
        self.pages_allocated.fetch_sub(n as u64, Ordering::AcqRel);
    }

    /// Bookkeeping of a freed slot (its state already dead); releases the block if it emptied.
    fn slot_freed(&self, st: &mut TypeState, ty: usize, b: u32, slot: u32, len: usize) {
        st.obj_used -= 1;
        st.bytes_stored -= len as u64;
        if let Freed::Released(first) = st.free_slot(b, slot) {
            self.give_back(ty, first);
        }
    }

    /// Begins a read section on the object of `h` (`mem_len` its length), without the lock:
    /// counts a reader in the slot's state; returns the object's address.
    #[inline]
    fn begin(&self, h: &AtomicUsize, mem_len: usize) -> Result<*mut u8> {
        let seen = self.see(h)?;
        let addr = h as *const AtomicUsize as usize;
        seen.rec.count_in(seen.state, seen.w.seq, addr, Some(mem_len))?;
        self.access.record_read(seen.w.ty as usize, false, 0);
        // Counted in: the block stays (a free of this slot is refused) and its base is the one
        // published before the state this reader saw.
        let base = seen.blk.base.load(Ordering::Acquire);
        Ok(self.slot_addr(base, seen.w.ty, seen.w.slot))
    }

    /// Ends a read section on the object of `h`, without the lock.
    #[inline]
    fn end(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Result<()> {
        let seen = self.see(h)?;
        let addr = h as *const AtomicUsize as usize;
        seen.rec.count_out(seen.state, seen.w.seq, addr, mem_len).map(|_| ())
    }
}
