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
//! What the project adds for safety lives outside the pages, in each type's state (`block.rs`):
//! the slot's owner (the handle word's address), the exact length and the open read sections.
//! A handle word (`word.rs`) is checked field by field against the tables and the owner before
//! anything is dereferenced, so garbage, stale, empty and foreign words (zsmalloc's, another
//! zblock pool's, a malloc pool's) are refused with `InvalidHandle`. A free or handle move of an
//! object with an open read section is `Busy`, as in zsmalloc's raw layer. Its heap bytes are
//! `metadata_bytes().1`.
//!
//! Concurrency: one lock per block type, taken by every operation on an object of that type
//! (reads included: begin and end each take it briefly to count the section). The arena's own
//! mutex nests inside. Not modelled: vmalloc's cost, RCU-deferred freeing of blocks, and that
//! zblock's pages are unmovable (zsmalloc's are movable).

use std::sync::atomic::{AtomicU16, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::arena::PageArena;
use crate::config::{BackendKind, PoolConfig};
use crate::error::{Error, Result};

mod backend_impl;
mod block;
pub mod table;
mod word;

use block::{Freed, TypeState};
pub use table::{BlockTable, BlockType};
use word::{Word, POOL_ID_MASK};

/// Most read sections open on one object at once (as zsmalloc's raw layer).
const MAX_READERS: u32 = 65_535;

static NEXT_POOL_ID: AtomicU16 = AtomicU16::new(0);

/// A zblock pool.
pub struct ZblockPool {
    name: String,
    config: PoolConfig,
    id: u16,
    table: BlockTable,
    header: usize,
    types: Box<[Mutex<TypeState>]>,
    arena: PageArena,
    pages_allocated: AtomicU64,
    pages_peak: AtomicU64,
}

/// A validated object: its type's locked state, block and slot.
struct Found<'a> {
    st: MutexGuard<'a, TypeState>,
    w: Word,
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
        let id = loop {
            let id = NEXT_POOL_ID.fetch_add(1, Ordering::Relaxed) & POOL_ID_MASK;
            if id != 0 {
                break id;
            }
        };
        Ok(ZblockPool {
            name: name.to_string(),
            header: table::header_size(config.page_size) as usize,
            config,
            id,
            table,
            types,
            arena,
            pages_allocated: AtomicU64::new(0),
            pages_peak: AtomicU64::new(0),
        })
    }

    /// The block table of this pool's page size.
    pub fn table(&self) -> &BlockTable {
        &self.table
    }

    /// The active list of block type `ty` (block entries, head first), for tests.
    #[doc(hidden)]
    pub fn active_list(&self, ty: usize) -> Vec<u32> {
        self.lock(ty).active()
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

    /// The object `h` holds, validated (owner = `h`'s address), its type locked. An empty word is
    /// `Ok(None)`.
    fn find(&self, h: &AtomicUsize) -> Result<Option<Found<'_>>> {
        let word = h.load(Ordering::Acquire);
        if word == 0 {
            return Ok(None);
        }
        let w = Word::decode(word, self.id).map_err(Error::InvalidHandle)?;
        if w.ty as usize >= self.types.len() {
            return Err(Error::InvalidHandle("no such block type"));
        }
        let st = self.lock(w.ty as usize);
        if h.load(Ordering::Acquire) != word {
            return Err(Error::InvalidHandle("the handle changed during the call"));
        }
        let blk = st.block(w.block, w.generation).ok_or(Error::InvalidHandle("stale handle"))?;
        if !blk.is_taken(w.slot) {
            return Err(Error::InvalidHandle("the handle's slot is free (stale or freed handle)"));
        }
        if blk.slots[w.slot as usize].owner != h as *const AtomicUsize as usize {
            return Err(Error::InvalidHandle("the object belongs to another handle word"));
        }
        Ok(Some(Found { st, w }))
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
        let mut st = self.lock(ty);
        let (b, slot) = match st.claim() {
            Some(found) => found,
            None => {
                if !st.can_add() {
                    return Err(Error::OutOfMemory);
                }
                let first = self.new_block(ty, t.num_pages)?;
                let base = self.arena.page_ptr(first) as usize;
                (st.add_block(first, base), 0)
            }
        };
        let blk = st.block_mut_any(b);
        let generation = blk.generation;
        let base = blk.base;
        blk.slots[slot as usize] =
            block::Slot { owner: h as *const AtomicUsize as usize, len: len as u32, readers: 0 };
        let dst = self.slot_addr(base, ty as u32, slot);
        if let Some(data) = data {
            // SAFETY: the slot was just taken under the type's lock: no handle names it yet, and
            // it lies inside the block's pages (slot_size * slots + header <= block bytes), which
            // the arena committed when it handed the run out; `len <= slot_size`.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, len) };
        }
        st.obj_used += 1;
        st.bytes_stored += len as u64;
        let w = Word { pool: self.id, ty: ty as u32, block: b, slot, generation };
        if h.compare_exchange(0, w.encode(), Ordering::AcqRel, Ordering::Acquire).is_err() {
            // Another thread filled `h` meanwhile: give the slot back.
            self.slot_freed(&mut st, ty, b, slot, len);
            return Err(Error::HandleInUse);
        }
        Ok(())
    }

    /// A new run of `n` pages for type `ty` (the memory limit and the fault hook honoured).
    fn new_block(&self, ty: usize, n: u32) -> Result<crate::arena::Pfn> {
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

    /// Bookkeeping of a freed slot; releases the block's pages if it emptied.
    fn slot_freed(&self, st: &mut TypeState, ty: usize, b: u32, slot: u32, len: usize) {
        st.obj_used -= 1;
        st.bytes_stored -= len as u64;
        if let Freed::Released(first) = st.free_slot(b, slot) {
            let n = self.table.types()[ty].num_pages as usize;
            self.arena.free_run(first, n);
            self.pages_allocated.fetch_sub(n as u64, Ordering::AcqRel);
        }
    }

    /// Begins a read section on the object of `h` (`mem_len` its length): its address.
    fn begin(&self, h: &AtomicUsize, mem_len: usize) -> Result<*mut u8> {
        let mut f = self.find_live(h)?;
        let w = f.w;
        let blk = f.st.block_mut_any(w.block);
        let base = blk.base;
        let s = &mut blk.slots[w.slot as usize];
        if s.len as usize != mem_len {
            return Err(wrong_len("read", mem_len, s.len as usize));
        }
        if s.readers >= MAX_READERS {
            return Err(Error::TooManyReaders);
        }
        s.readers += 1;
        f.st.reads += 1;
        Ok(self.slot_addr(base, w.ty, w.slot))
    }
}

fn wrong_len(what: &str, given: usize, stored: usize) -> Error {
    Error::InvalidArgument(format!("{what} length {given} differs from the stored length {stored}"))
}
