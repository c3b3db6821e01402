//! The malloc backend: each object its own allocation from the C library's `malloc`, what a
//! user would pick instead of a compressed-memory allocator (docs/DESIGN.md, Backends).
//!
//! Pages: `ceil(Σ (malloc_usable_size + 8) / page_size)` over the live objects. The 8 bytes per
//! object model the handle an allocator keeps beside each object (a pointer in the caller's
//! record, as zsmalloc's handle is); `malloc_usable_size` counts what the allocator rounds each
//! request up to (its own chunk headers and free memory are not counted). Lengths are
//! 1..=page_size (0 is `EINVAL`, longer is `ENOSPC`), `mem_limit_pages` is honoured.
//!
//! Handles go through a table: a word encodes (marker, pool id, entry index, sequence number),
//! and the entry records the allocation, the owner (the handle word's address) and a state word
//! (live, exact length, sequence number, open read sections), the record and protocol zblock's
//! slots use too (`slot_state.rs`), so a garbage, stale, empty or foreign word (zsmalloc's,
//! zblock's, another malloc pool's) is refused with `InvalidHandle` and never dereferenced.
//! Reads are in place (one segment, never copied) and take no lock: a reader counts itself in
//! with a compare-and-swap of the state it validated, and a free or move swaps the state too, so
//! a free or move of an object with an open read section is `Busy`. Writes and `read_into` count themselves in the same way
//! while they copy. Entries are taken and given back under one short lock; `malloc` and `free`
//! are called outside it. There are no classes: `class_stats` is empty, `compact` frees 0.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::backend::{Backend, ReadKind, ReadPlacement};
use crate::chunked::ChunkedTable;
use crate::config::{BackendKind, PoolConfig};
use crate::counters::AccessCounters;
use crate::error::{Error, Result};
use crate::read::SgSegments;
use crate::slot_state::{no_reader, wrong_len, Marker, WordFrame};
use crate::stats::{ClassStats, PoolStats};

/// Bytes counted per object besides its usable size: the handle an allocator keeps for it.
pub const HANDLE_BYTES: u64 = 8;

// The handle word's fields (below the frame of `slot_state.rs`): 12..=37 the entry index,
// 0..=11 the entry's sequence number.
const INDEX_SHIFT: u32 = 12;
const SEQ_BITS: u32 = 12;

/// Entries per chunk, and chunks: 2^26 objects at most.
const CHUNK_SHIFT: u32 = 14;
const CHUNKS: usize = 4096;
const MAX_ENTRIES: usize = CHUNKS << CHUNK_SHIFT;

type State = crate::slot_state::State<SEQ_BITS>;
type SlotRec = crate::slot_state::SlotRec<SEQ_BITS>;

/// One table entry. Written only by the thread that took it (a store, under no lock: the entry
/// is its alone until published) or through compare-and-swaps of its state.
#[derive(Default)]
struct Entry {
    /// State word and owner.
    slot: SlotRec,
    /// The allocation (meaningful while live).
    addr: AtomicUsize,
    /// `malloc_usable_size` of the allocation.
    usable: AtomicU32,
}

/// Entries not in use, and the first never used.
#[derive(Default)]
struct Vacant {
    list: Vec<u32>,
    next: u32,
}

/// A malloc pool.
pub struct MallocPool {
    name: String,
    config: PoolConfig,
    /// This pool's handle words' marker and pool id.
    frame: WordFrame,
    entries: ChunkedTable<Entry, CHUNK_SHIFT, CHUNKS>,
    vacant: Mutex<Vacant>,
    live: AtomicU64,
    bytes_stored: AtomicU64,
    /// Σ (usable + 8) of the live objects.
    bytes: AtomicU64,
    pages_peak: AtomicU64,
    access: AccessCounters,
}

/// A validated live object.
struct Seen<'a> {
    index: usize,
    e: &'a Entry,
    state: State,
}

impl MallocPool {
    /// A named malloc pool (`config.backend` must be malloc; the config is validated).
    pub fn with_name(name: &str, config: PoolConfig) -> Result<MallocPool> {
        if config.backend != BackendKind::Malloc {
            return Err(Error::config(
                "backend",
                format!("a MallocPool cannot be a {} pool", config.backend.name()),
            ));
        }
        config.validate()?;
        Ok(MallocPool {
            name: name.to_string(),
            config,
            frame: WordFrame::new(Marker::Malloc),
            entries: ChunkedTable::new(),
            vacant: Mutex::new(Vacant::default()),
            live: AtomicU64::new(0),
            bytes_stored: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            pages_peak: AtomicU64::new(0),
            access: AccessCounters::new(1),
        })
    }

    fn vacant(&self) -> MutexGuard<'_, Vacant> {
        self.vacant.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pages_of(&self, bytes: u64) -> u64 {
        bytes.div_ceil(u64::from(self.config.page_size))
    }

    fn encode(&self, index: usize, seq: u16) -> usize {
        self.frame.encode((index << INDEX_SHIFT) | (seq & State::SEQ_MASK) as usize)
    }

    /// The live object `h` holds, validated without a lock; `Ok(None)` for an empty word.
    fn find(&self, h: &AtomicUsize) -> Result<Option<(usize, Seen<'_>)>> {
        let word = h.load(Ordering::Acquire);
        if word == 0 {
            return Ok(None);
        }
        let fields = self.frame.decode(word).map_err(Error::InvalidHandle)?;
        let index = (fields >> INDEX_SHIFT) & (MAX_ENTRIES - 1);
        let e = self.entries.get(index).ok_or(Error::InvalidHandle("no such object"))?;
        let state = e.slot.load();
        e.slot.check(state, seq_of(word), h as *const AtomicUsize as usize)?;
        Ok(Some((word, Seen { index, e, state })))
    }

    fn find_live(&self, h: &AtomicUsize) -> Result<(usize, Seen<'_>)> {
        self.find(h)?.ok_or(Error::InvalidHandle("empty handle"))
    }

    /// Swaps the state of `h`'s object for `f(state)` once `ok(state)` accepts it (re-validated
    /// after every lost race). Returns the state swapped out.
    fn update(
        &self,
        h: &AtomicUsize,
        ok: impl Fn(State) -> Result<()>,
        f: impl Fn(State) -> State,
    ) -> Result<Seen<'_>> {
        let addr = h as *const AtomicUsize as usize;
        let (word, mut seen) = self.find_live(h)?;
        seen.state = seen.e.slot.update(seen.state, seq_of(word), addr, ok, f)?;
        Ok(seen)
    }

    fn alloc_publish(&self, h: &AtomicUsize, len: usize, data: Option<&[u8]>) -> Result<()> {
        let page = self.config.page_size as usize;
        if len == 0 {
            return Err(Error::InvalidArgument("object length is 0".into()));
        }
        if len > page {
            return Err(Error::TooLarge { len, max: page });
        }
        if h.load(Ordering::Acquire) != 0 {
            return Err(Error::HandleInUse);
        }
        // SAFETY: plain C allocation of `len` (> 0) bytes; NULL is handled.
        let p = unsafe { libc::malloc(len) } as *mut u8;
        if p.is_null() {
            return Err(Error::OutOfMemory);
        }
        // SAFETY: `p` is a live allocation from `malloc`.
        let usable = unsafe { libc::malloc_usable_size(p.cast()) };
        let cost = usable as u64 + HANDLE_BYTES;
        let limit = self.config.mem_limit_pages;
        let reserved = self.bytes.fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
            (limit == 0 || self.pages_of(b + cost) <= limit).then_some(b + cost)
        });
        let Ok(before) = reserved else {
            // SAFETY: `p` came from `malloc` and nothing else refers to it.
            unsafe { libc::free(p.cast()) };
            return Err(Error::OutOfMemory);
        };
        if let Some(data) = data {
            // SAFETY: `p` holds at least `len` bytes and is ours alone.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, len) };
        }
        let Some((index, e)) = self.take_entry() else {
            self.give_back(p as usize, cost);
            return Err(Error::OutOfMemory);
        };
        let seq = e.slot.load().next_seq();
        e.addr.store(p as usize, Ordering::Relaxed);
        e.usable.store(usable as u32, Ordering::Relaxed);
        e.slot.owner.store(h as *const AtomicUsize as usize, Ordering::Relaxed);
        // Publishes the entry's fields and the bytes to readers that see the live state.
        e.slot.publish(State::live(len, seq));
        if h.compare_exchange(0, self.encode(index, seq), Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // Another thread filled `h` meanwhile: nobody could name the entry; give it back.
            e.slot.publish(State::live(len, seq).dead());
            self.vacant().list.push(index as u32);
            self.give_back(p as usize, cost);
            return Err(Error::HandleInUse);
        }
        self.pages_peak.fetch_max(self.pages_of(before + cost), Ordering::Relaxed);
        self.live.fetch_add(1, Ordering::Relaxed);
        self.bytes_stored.fetch_add(len as u64, Ordering::Relaxed);
        Ok(())
    }

    /// An entry no live object uses, now the caller's.
    fn take_entry(&self) -> Option<(usize, &Entry)> {
        let mut v = self.vacant();
        let index = match v.list.pop() {
            Some(i) => i as usize,
            None if (v.next as usize) < MAX_ENTRIES => {
                v.next += 1;
                v.next as usize - 1
            }
            None => return None,
        };
        drop(v);
        match self.entries.get_or_alloc(index) {
            Some(e) => Some((index, e)),
            None => {
                self.vacant().list.push(index as u32);
                None
            }
        }
    }

    fn give_back(&self, addr: usize, cost: u64) {
        // SAFETY: `addr` came from `malloc` and no live entry names it: nothing refers to it.
        unsafe { libc::free(addr as *mut libc::c_void) };
        self.bytes.fetch_sub(cost, Ordering::AcqRel);
    }

    /// Counts a reader in on `h`'s object (`mem_len` its length, if given); its address.
    fn begin(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Result<(usize, *mut u8)> {
        let (word, seen) = self.find_live(h)?;
        let addr = h as *const AtomicUsize as usize;
        let s = seen.e.slot.count_in(seen.state, seq_of(word), addr, mem_len)?;
        Ok((s.len(), seen.e.addr.load(Ordering::Acquire) as *mut u8))
    }

    /// Counts a reader out of `h`'s object.
    fn end(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Result<()> {
        let (word, seen) = self.find_live(h)?;
        let addr = h as *const AtomicUsize as usize;
        seen.e.slot.count_out(seen.state, seq_of(word), addr, mem_len).map(|_| ())
    }
}

/// The sequence number a handle word holds.
#[inline]
fn seq_of(word: usize) -> u16 {
    word as u16 & State::SEQ_MASK
}

impl Drop for MallocPool {
    fn drop(&mut self) {
        let next = self.vacant.get_mut().unwrap_or_else(|e| e.into_inner()).next as usize;
        for i in 0..next {
            let Some(e) = self.entries.get(i) else { continue };
            if e.slot.load().is_live() {
                // SAFETY: a live entry's allocation came from `malloc` and dies with the pool.
                unsafe { libc::free(e.addr.load(Ordering::Relaxed) as *mut libc::c_void) };
            }
        }
    }
}

impl Backend for MallocPool {
    fn name(&self) -> &str {
        &self.name
    }
    fn config(&self) -> &PoolConfig {
        &self.config
    }
    /// `ceil(Σ (malloc_usable_size + 8) / page_size)`.
    #[inline]
    fn total_pages(&self) -> u64 {
        self.pages_of(self.bytes.load(Ordering::Acquire))
    }
    fn stats(&self) -> PoolStats {
        let live = self.live.load(Ordering::Relaxed);
        PoolStats {
            pages_allocated: self.total_pages(),
            pages_peak: self.pages_peak.load(Ordering::Relaxed),
            objs_allocated: live,
            objs_inuse: live,
            bytes_stored: self.bytes_stored.load(Ordering::Relaxed),
            reads: self.access.sum().0,
            ..PoolStats::default()
        }
    }
    /// No classes.
    fn class_stats(&self) -> Vec<ClassStats> {
        Vec::new()
    }
    fn compact(&self) -> u64 {
        0
    }
    /// The page size: the longest length stored.
    fn huge_class_size(&self) -> usize {
        self.config.page_size as usize
    }
    /// No classes: 0 for a length it stores (1..=page), 1 for one it refuses.
    fn lookup_class_index(&self, size: usize) -> u32 {
        u32::from(size == 0 || size > self.config.page_size as usize)
    }
    /// (the handle table, 0).
    fn metadata_bytes(&self) -> (usize, usize) {
        let vacant = self.vacant().list.capacity() * std::mem::size_of::<u32>();
        (self.entries.heap_bytes() + vacant, 0)
    }

    unsafe fn store_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        self.alloc_publish(h, data.len(), Some(data))
    }
    unsafe fn malloc_raw(&self, h: &AtomicUsize, len: usize) -> Result<()> {
        self.alloc_publish(h, len, None)
    }
    /// Counted in as a reader while it copies, so a racing free is `Busy`.
    unsafe fn write_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        let (_, seen) = self.find_live(h)?;
        if data.len() != seen.state.len() {
            return Err(wrong_len("write", data.len(), seen.state.len()));
        }
        let (len, p) = self.begin(h, Some(data.len()))?;
        // SAFETY: counted in on a validated live entry: its allocation of `len` bytes stays
        // until the count-out below. The caller promises no read section of it runs meanwhile.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, len) };
        self.end(h, Some(len))
    }
    unsafe fn free_raw(&self, h: &AtomicUsize) -> Result<()> {
        if self.find(h)?.is_none() {
            return Ok(());
        }
        let seen = self.update(h, no_reader, State::dead)?;
        h.store(0, Ordering::Release);
        let e = seen.e;
        let (addr, usable) = (e.addr.load(Ordering::Relaxed), e.usable.load(Ordering::Relaxed));
        self.live.fetch_sub(1, Ordering::Relaxed);
        self.bytes_stored.fetch_sub(seen.state.len() as u64, Ordering::Relaxed);
        self.give_back(addr, u64::from(usable) + HANDLE_BYTES);
        self.vacant().list.push(seen.index as u32);
        Ok(())
    }
    unsafe fn handle_move_raw(&self, from: &AtomicUsize, to: &AtomicUsize) -> Result<()> {
        let same = std::ptr::eq(from, to);
        if !same && to.load(Ordering::Acquire) != 0 {
            return Err(Error::HandleInUse);
        }
        if same {
            return self.find_live(from).map(|_| ());
        }
        // A new sequence number: readers of the old word fail their count-in from now on.
        let seen = self.update(from, no_reader, State::moved)?;
        seen.e.slot.owner.store(to as *const AtomicUsize as usize, Ordering::Release);
        to.store(self.encode(seen.index, seen.state.next_seq()), Ordering::Release);
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
        let (_, p) = self.begin(h, Some(mem_len))?;
        self.access.record_read(0, false, 0);
        Ok(p)
    }
    unsafe fn read_end_at_raw(
        &self,
        h: &AtomicUsize,
        mem_len: Option<usize>,
        _handle_mem: *const u8,
    ) -> Result<()> {
        self.end(h, mem_len)
    }
    unsafe fn read_sg_begin_raw(&self, h: &AtomicUsize, mem_len: usize) -> Result<SgSegments> {
        let (_, p) = self.begin(h, Some(mem_len))?;
        self.access.record_read(0, false, 0);
        Ok(([(p as *const u8, mem_len), (std::ptr::null(), 0)], 1))
    }
    unsafe fn read_into_raw(&self, h: &AtomicUsize, out: &mut [u8]) -> Result<usize> {
        let (_, seen) = self.find_live(h)?;
        let len = seen.state.len();
        if out.len() < len {
            return Err(Error::InvalidArgument(format!(
                "buffer of {} bytes is smaller than the object ({len} bytes)",
                out.len()
            )));
        }
        let (len, p) = self.begin(h, Some(len))?;
        // SAFETY: counted in on a validated live entry: `len` bytes of its allocation stay until
        // the count-out below; `out` holds at least `len`.
        unsafe { std::ptr::copy_nonoverlapping(p, out.as_mut_ptr(), len) };
        self.access.record_read(0, false, 0);
        self.end(h, Some(len))?;
        Ok(len)
    }
    unsafe fn object_len_raw(&self, h: &AtomicUsize) -> Result<usize> {
        Ok(self.find_live(h)?.1.state.len())
    }
    /// In place: never spanning, nothing copied; counted as a read section.
    unsafe fn read_placement_raw(
        &self,
        h: &AtomicUsize,
        mem_len: Option<usize>,
        _kind: ReadKind,
    ) -> Result<ReadPlacement> {
        let len = self.find_live(h)?.1.state.len();
        if mem_len.is_some_and(|m| m != len) {
            return Err(wrong_len("read", mem_len.unwrap_or(0), len));
        }
        self.access.record_read(0, false, 0);
        Ok(ReadPlacement { len, spanning: false, copied: 0 })
    }
}
