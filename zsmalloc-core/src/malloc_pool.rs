//! The malloc backend: each object its own allocation from the C library's `malloc`, what a
//! user would pick instead of a compressed-memory allocator (docs/DESIGN.md, Backends).
//!
//! Pages: `ceil(Σ (malloc_usable_size + 8) / page_size)` over the live objects. The 8 bytes per
//! object model the handle an allocator keeps beside each object (a pointer in the caller's
//! record, as zsmalloc's handle is); `malloc_usable_size` counts what the allocator rounds each
//! request up to (its own chunk headers and free memory are not counted). Lengths are
//! 1..=page_size (0 is `EINVAL`, longer is `ENOSPC`), `mem_limit_pages` is honoured.
//!
//! Handles go through a table: a word encodes (marker, pool id, entry index, generation), and
//! the entry records the allocation, its exact length, the owner (the handle word's address) and
//! the open read sections, so a garbage, stale, empty or foreign word (zsmalloc's, zblock's,
//! another malloc pool's) is refused with `InvalidHandle` and never dereferenced. Reads are in
//! place (one segment, never copied); a free or move of an object with an open read section is
//! `Busy`. There are no classes: `class_stats` is empty, `compact` frees 0.

use std::sync::atomic::{AtomicU16, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::backend::Backend;
use crate::config::{BackendKind, PoolConfig};
use crate::error::{Error, Result};
use crate::read::SgSegments;
use crate::stats::{ClassStats, PoolStats};

/// Bytes counted per object besides its usable size: the handle an allocator keeps for it.
pub const HANDLE_BYTES: u64 = 8;

/// Most read sections open on one object at once (as zsmalloc's raw layer).
const MAX_READERS: u32 = 65_535;

// The handle word: bits 61..=63 are 0 (zsmalloc's tag field, never 0 there), 56..=60 the
// marker (zblock's is another), 44..=55 the pool id, 12..=43 the entry index, 0..=11 the
// entry's generation.
const MARKER: usize = 0x16;
const MARKER_SHIFT: u32 = 56;
const POOL_SHIFT: u32 = 44;
const INDEX_SHIFT: u32 = 12;
const POOL_ID_MASK: u16 = 0xfff;
const GENERATION_MASK: u16 = 0xfff;
/// Entries a word can name.
const MAX_ENTRIES: usize = 1 << 32;

static NEXT_POOL_ID: AtomicU16 = AtomicU16::new(0);

/// One table entry; `addr == 0`: vacant.
#[derive(Clone, Copy, Default)]
struct Entry {
    addr: usize,
    len: u32,
    /// `malloc_usable_size` of the allocation.
    usable: u32,
    owner: usize,
    readers: u32,
    generation: u16,
}

#[derive(Default)]
struct Table {
    entries: Vec<Entry>,
    vacant: Vec<u32>,
    live: u64,
    bytes_stored: u64,
    reads: u64,
}

/// A malloc pool.
pub struct MallocPool {
    name: String,
    config: PoolConfig,
    id: u16,
    table: Mutex<Table>,
    /// Σ (usable + 8) of the live objects.
    bytes: AtomicU64,
    pages_peak: AtomicU64,
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
        let id = loop {
            let id = NEXT_POOL_ID.fetch_add(1, Ordering::Relaxed) & POOL_ID_MASK;
            if id != 0 {
                break id;
            }
        };
        Ok(MallocPool {
            name: name.to_string(),
            config,
            id,
            table: Mutex::new(Table::default()),
            bytes: AtomicU64::new(0),
            pages_peak: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pages_of(&self, bytes: u64) -> u64 {
        bytes.div_ceil(u64::from(self.config.page_size))
    }

    fn encode(&self, index: u32, generation: u16) -> usize {
        (MARKER << MARKER_SHIFT)
            | ((self.id as usize) << POOL_SHIFT)
            | ((index as usize) << INDEX_SHIFT)
            | (generation & GENERATION_MASK) as usize
    }

    /// The entry index `h` names, validated (live, same generation, owned by `h`), with the
    /// table locked; `Ok(None)` for an empty word.
    fn find(&self, h: &AtomicUsize) -> Result<Option<(MutexGuard<'_, Table>, usize)>> {
        let word = h.load(Ordering::Acquire);
        if word == 0 {
            return Ok(None);
        }
        if word >> MARKER_SHIFT != MARKER {
            return Err(Error::InvalidHandle(
                "not a malloc handle (another backend's, or garbage)",
            ));
        }
        if ((word >> POOL_SHIFT) as u16 & POOL_ID_MASK) != self.id {
            return Err(Error::InvalidHandle("a handle of another malloc pool"));
        }
        let index = (word >> INDEX_SHIFT) & (MAX_ENTRIES - 1);
        let generation = (word as u16) & GENERATION_MASK;
        let t = self.lock();
        if h.load(Ordering::Acquire) != word {
            return Err(Error::InvalidHandle("the handle changed during the call"));
        }
        let e = t.entries.get(index).ok_or(Error::InvalidHandle("no such object"))?;
        if e.addr == 0 || e.generation != generation {
            return Err(Error::InvalidHandle("stale or freed handle"));
        }
        if e.owner != h as *const AtomicUsize as usize {
            return Err(Error::InvalidHandle("the object belongs to another handle word"));
        }
        Ok(Some((t, index)))
    }

    fn find_live(&self, h: &AtomicUsize) -> Result<(MutexGuard<'_, Table>, usize)> {
        self.find(h)?.ok_or(Error::InvalidHandle("empty handle"))
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
        self.pages_peak.fetch_max(self.pages_of(before + cost), Ordering::Relaxed);
        if let Some(data) = data {
            // SAFETY: `p` holds at least `len` bytes and is ours alone.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, len) };
        }
        let mut t = self.lock();
        let index = match t.vacant.pop() {
            Some(i) => i as usize,
            None if t.entries.len() < MAX_ENTRIES => {
                t.entries.push(Entry::default());
                t.entries.len() - 1
            }
            None => {
                drop(t);
                self.give_back(p as usize, cost);
                return Err(Error::OutOfMemory);
            }
        };
        let e = &mut t.entries[index];
        e.generation = (e.generation + 1) & GENERATION_MASK;
        (e.addr, e.len, e.usable, e.owner, e.readers) =
            (p as usize, len as u32, usable as u32, h as *const AtomicUsize as usize, 0);
        let word = self.encode(index as u32, e.generation);
        if h.compare_exchange(0, word, Ordering::AcqRel, Ordering::Acquire).is_err() {
            t.entries[index].addr = 0;
            t.vacant.push(index as u32);
            drop(t);
            self.give_back(p as usize, cost);
            return Err(Error::HandleInUse);
        }
        t.live += 1;
        t.bytes_stored += len as u64;
        Ok(())
    }

    fn give_back(&self, addr: usize, cost: u64) {
        // SAFETY: `addr` came from `malloc` and its entry (if any) is vacant: nothing refers to it.
        unsafe { libc::free(addr as *mut libc::c_void) };
        self.bytes.fetch_sub(cost, Ordering::AcqRel);
    }

    fn begin(&self, h: &AtomicUsize, mem_len: usize) -> Result<*const u8> {
        let (mut t, i) = self.find_live(h)?;
        let e = &mut t.entries[i];
        if e.len as usize != mem_len {
            return Err(wrong_len("read", mem_len, e.len as usize));
        }
        if e.readers >= MAX_READERS {
            return Err(Error::TooManyReaders);
        }
        e.readers += 1;
        let addr = e.addr;
        t.reads += 1;
        Ok(addr as *const u8)
    }
}

fn wrong_len(what: &str, given: usize, stored: usize) -> Error {
    Error::InvalidArgument(format!("{what} length {given} differs from the stored length {stored}"))
}

impl Drop for MallocPool {
    fn drop(&mut self) {
        let t = self.table.get_mut().unwrap_or_else(|e| e.into_inner());
        for e in t.entries.iter().filter(|e| e.addr != 0) {
            // SAFETY: a live entry's allocation came from `malloc` and dies with the pool.
            unsafe { libc::free(e.addr as *mut libc::c_void) };
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
        let t = self.lock();
        PoolStats {
            pages_allocated: self.total_pages(),
            pages_peak: self.pages_peak.load(Ordering::Relaxed),
            objs_allocated: t.live,
            objs_inuse: t.live,
            bytes_stored: t.bytes_stored,
            reads: t.reads,
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
        let t = self.lock();
        let bytes = t.entries.capacity() * std::mem::size_of::<Entry>()
            + t.vacant.capacity() * std::mem::size_of::<u32>()
            + std::mem::size_of::<Mutex<Table>>();
        (bytes, 0)
    }

    unsafe fn store_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        self.alloc_publish(h, data.len(), Some(data))
    }
    unsafe fn malloc_raw(&self, h: &AtomicUsize, len: usize) -> Result<()> {
        self.alloc_publish(h, len, None)
    }
    unsafe fn write_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        let (t, i) = self.find_live(h)?;
        let e = t.entries[i];
        if data.len() != e.len as usize {
            return Err(wrong_len("write", data.len(), e.len as usize));
        }
        // SAFETY: a validated live entry (table locked, so it stays): `len` bytes of its
        // allocation; the caller promises no read section of it runs meanwhile.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), e.addr as *mut u8, data.len()) };
        Ok(())
    }
    unsafe fn free_raw(&self, h: &AtomicUsize) -> Result<()> {
        let Some((mut t, i)) = self.find(h)? else { return Ok(()) };
        let e = t.entries[i];
        if e.readers != 0 {
            return Err(Error::Busy);
        }
        t.entries[i].addr = 0;
        t.vacant.push(i as u32);
        t.live -= 1;
        t.bytes_stored -= u64::from(e.len);
        h.store(0, Ordering::Release);
        drop(t);
        self.give_back(e.addr, u64::from(e.usable) + HANDLE_BYTES);
        Ok(())
    }
    unsafe fn handle_move_raw(&self, from: &AtomicUsize, to: &AtomicUsize) -> Result<()> {
        let same = std::ptr::eq(from, to);
        if !same && to.load(Ordering::Acquire) != 0 {
            return Err(Error::HandleInUse);
        }
        let (mut t, i) = self.find_live(from)?;
        if same {
            return Ok(());
        }
        let e = &mut t.entries[i];
        if e.readers != 0 {
            return Err(Error::Busy);
        }
        e.owner = to as *const AtomicUsize as usize;
        to.store(from.load(Ordering::Acquire), Ordering::Release);
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
        self.begin(h, mem_len)
    }
    unsafe fn read_end_at_raw(
        &self,
        h: &AtomicUsize,
        mem_len: Option<usize>,
        _handle_mem: *const u8,
    ) -> Result<()> {
        let (mut t, i) = self.find_live(h)?;
        let e = &mut t.entries[i];
        if e.readers == 0 {
            return Err(Error::InvalidArgument("no read section in progress".into()));
        }
        if let Some(m) = mem_len.filter(|&m| m != e.len as usize) {
            return Err(wrong_len("read", m, e.len as usize));
        }
        e.readers -= 1;
        Ok(())
    }
    unsafe fn read_sg_begin_raw(&self, h: &AtomicUsize, mem_len: usize) -> Result<SgSegments> {
        let p = self.begin(h, mem_len)?;
        Ok(([(p, mem_len), (std::ptr::null(), 0)], 1))
    }
    unsafe fn read_into_raw(&self, h: &AtomicUsize, out: &mut [u8]) -> Result<usize> {
        let (mut t, i) = self.find_live(h)?;
        let e = t.entries[i];
        let len = e.len as usize;
        if out.len() < len {
            return Err(Error::InvalidArgument(format!(
                "buffer of {} bytes is smaller than the object ({len} bytes)",
                out.len()
            )));
        }
        // SAFETY: a validated live entry (table locked, so it stays): `len` bytes of its
        // allocation; `out` holds at least `len`.
        unsafe { std::ptr::copy_nonoverlapping(e.addr as *const u8, out.as_mut_ptr(), len) };
        t.reads += 1;
        Ok(len)
    }
    unsafe fn object_len_raw(&self, h: &AtomicUsize) -> Result<usize> {
        let (t, i) = self.find_live(h)?;
        Ok(t.entries[i].len as usize)
    }
}
