//! The pool: placement, stores, frees, read sections and compaction (SPEC §3).
//!
//! Locking order and ownership:
//! - A class lock (`SizeClass::lock`) covers that class's fullness lists, its zspages' freelists
//!   and counters, zspage creation and release, and compaction of the class. No code holds two
//!   class locks. The page arena's and zspage table's own mutexes nest inside a class lock and
//!   are held only for a list push/pop.
//! - Readers take no lock. A reader of a non-huge object registers on its header (`header.rs`)
//!   and holds nothing else: it finds the header from the handle word and the role of its page
//!   (pages never change role, `arena.rs`, so the word there is a header, a link or zero, never
//!   payload). An object with readers is neither freed (`Error::Busy`) nor moved. A huge
//!   object's header lives in its zspage, so its reader pins the zspage first (`pin.rs`).
//! - Compaction moves objects only out of a zspage it could lock for migration (no huge reader's
//!   pin) and whose every allocated object it could claim (`header::claim`: no reader
//!   registered; readers meeting a claim back off). Release needs the migration lock: a free
//!   that empties a pinned (huge) zspage leaves it listed as empty; it is released by the next
//!   free or compaction of its class that can lock it (mainline's deferred free when
//!   `trylock_zspage` fails). Single-threaded, a zspage is never pinned when it empties.
//! - A store allocates, writes header and payload, and publishes the handle word, all under the
//!   class lock: the object is reachable only once complete, and nothing can move it meanwhile.
//! - Compaction rewrites each moved object's handle word (Release) before it frees the old slot,
//!   and drops the claims of the objects it left before unlocking the source.
//! - Every owner address in a header is a live handle word: the safe layer's slots live as long
//!   as the pool; raw-layer callers promise it (see `store_raw`). Compaction relies on this.

use std::ops::Deref;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

use crate::arena::{PageArena, Pfn};
use crate::class_table::{ClassInfo, ClassTable, HDR};
use crate::config::PoolConfig;
use crate::error::{Error, Result};
use crate::handle::{Handle, HandleSlots, Location, ObjectLocation, TAG_MAX};
use crate::hazard;
use crate::header::{self, Refusal};
use crate::open_section::{self, OpenSection};
use crate::pin::{self, PinWord};
use crate::size_class::{self, ClassState, SizeClass};
use crate::stats::{AccessCounters, ClassStats, PoolStats, ThreadShard};
use crate::sync::backoff;
use crate::zspage::{Zspage, ZspageTable, GROUP_EMPTY, GROUP_FULL};

/// One piece of an object's payload: page, offset in it, bytes.
#[derive(Debug, Clone, Copy, Default)]
struct Piece {
    pfn: Pfn,
    offset: usize,
    len: usize,
}

/// Where an object's bytes lie.
#[derive(Debug, Clone, Copy)]
struct Layout {
    /// Payload pieces; the second is empty unless the payload crosses a page boundary.
    pieces: [Piece; 2],
    /// The kernel's rule: `offset + HDR + len > page` for non-huge objects.
    spanning: bool,
}

/// A validated, pinned object: its registration is held until `release`, so ending a section
/// needs no second lookup.
struct Pinned<'a> {
    reg: Registration<'a>,
    /// The zspage the handle word names: checked (`check_place`) for huge and spanning objects,
    /// whose layout needs it; for others only the header registration vouches for the object.
    zspage: &'a Zspage,
    info: &'a ClassInfo,
    obj: u32,
    /// The handle's location: header page index and arena offset.
    loc: Location,
    len: usize,
}

impl<'a> Pinned<'a> {
    /// A non-huge object's reader: registered on `header` by the handle at `owner` (announced
    /// in `announced`, or counted), no pin.
    fn registered(
        zspage: &'a Zspage,
        info: &'a ClassInfo,
        loc: Location,
        obj: u32,
        len: usize,
        reg: Registration<'a>,
    ) -> Self {
        Pinned { zspage, info, obj, loc, len, reg }
    }

    /// The payload of a non-huge object that does not cross a page: just after its header
    /// word, whose address the registration already holds (no load after the locked
    /// instruction).
    #[inline]
    fn in_place(&self) -> *const u8 {
        debug_assert!(!self.info.huge);
        payload_of(self.reg.header)
    }

    fn release(&self) {
        self.reg.release();
    }
}

/// The payload of a non-huge object that does not cross a page: just after its header word.
#[inline(always)]
fn payload_of(header: &AtomicU64) -> *const u8 {
    (header as *const AtomicU64 as *const u8).wrapping_add(HDR as usize)
}

/// What a reader holds until its section ends: a registration on `header` by the handle at
/// `owner`, announced in a reader slot (`hazard.rs`) or counted in the header, plus the zspage
/// pin a huge object's reader holds (its header lives in the zspage).
#[derive(Clone, Copy)]
struct Registration<'a> {
    header: &'a AtomicU64,
    owner: usize,
    /// The reader slot this section is announced in; `None`: counted in the header.
    announced: Option<&'static AtomicUsize>,
    pin: Option<&'a PinWord>,
}

impl<'a> Registration<'a> {
    /// A non-huge object's registration (no pin).
    fn on(header: &'a AtomicU64, owner: usize, announced: Option<&'static AtomicUsize>) -> Self {
        Registration { header, owner, announced, pin: None }
    }
}

impl Registration<'_> {
    #[inline]
    fn release(&self) {
        if let Some(slot) = self.announced {
            slot.store(0, Ordering::Release);
            return;
        }
        // Cannot fail: this reader registration is ours and keeps the header unchanged.
        let _ = header::end_read(self.header, self.owner);
        if let Some(pin) = self.pin {
            pin.unpin();
        }
    }
}

/// Who owns the handle word a store publishes in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Word {
    /// A safe-layer slot just taken by this thread: nobody else writes it.
    Slot,
    /// A caller's raw word: another thread may (wrongly) store into it at the same time.
    Caller,
}

/// Segments of a scatter-gather read: one or two `(address, length)` pairs.
pub type SgSegments = ([(*const u8, usize); 2], usize);

/// A zsmalloc pool.
pub struct Pool {
    name: String,
    tag: u8,
    /// Unique among all pools ever created (the open-section records name pools by it).
    id: u64,
    config: PoolConfig,
    table: ClassTable,
    classes: Box<[SizeClass]>,
    zspages: ZspageTable,
    arena: PageArena,
    slots: HandleSlots,
    pages_allocated: AtomicU64,
    pages_peak: AtomicU64,
    pages_compacted: AtomicU64,
    objs_moved: AtomicU64,
    access: AccessCounters,
}

static NEXT_TAG: AtomicU8 = AtomicU8::new(0);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Pool {
    /// A pool with `config` (validated; the environment is not read).
    pub fn new(config: PoolConfig) -> Result<Pool> {
        Self::with_name("pool", config)
    }

    /// A named pool (the name shows in reports).
    pub fn with_name(name: &str, config: PoolConfig) -> Result<Pool> {
        let table = ClassTable::new(&config)?;
        let classes = table.classes().iter().cloned().map(SizeClass::new).collect();
        Ok(Pool {
            name: name.to_owned(),
            tag: NEXT_TAG.fetch_add(1, Ordering::Relaxed) % TAG_MAX + 1,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            arena: PageArena::new(config.page_size),
            config,
            table,
            classes,
            zspages: ZspageTable::new(),
            slots: HandleSlots::new(),
            pages_allocated: AtomicU64::new(0),
            pages_peak: AtomicU64::new(0),
            pages_compacted: AtomicU64::new(0),
            objs_moved: AtomicU64::new(0),
            access: AccessCounters::new(),
        })
    }

    /// A pool configured by the `ZSMALLOC_*` environment variables.
    pub fn from_env(name: &str) -> Result<Pool> {
        Self::with_name(name, PoolConfig::from_env()?)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn config(&self) -> &PoolConfig {
        &self.config
    }

    pub fn class_table(&self) -> &ClassTable {
        &self.table
    }

    pub(crate) fn slots(&self) -> &HandleSlots {
        &self.slots
    }

    fn page(&self) -> usize {
        self.config.page_size as usize
    }

    #[inline]
    fn page_shift(&self) -> u32 {
        self.config.page_size.trailing_zeros()
    }

    // ---------------------------------------------------------------- safe layer

    /// Stores `data` (1..=page bytes) and returns the handle that owns it.
    pub fn store(&self, data: &[u8]) -> Result<Handle<&Pool>> {
        Self::store_in(self, data)
    }

    /// `store` for any pointer to a pool, e.g. `Arc<Pool>`, so the handle keeps the pool alive.
    pub fn store_in<P: Deref<Target = Pool>>(pool: P, data: &[u8]) -> Result<Handle<P>> {
        let slot = pool.slots.take().ok_or(Error::OutOfMemory)?;
        match pool.alloc_publish(pool.slots.word(slot), data.len(), Some(data), Word::Slot) {
            Ok(()) => Ok(Handle::new(pool, slot, data.len())),
            Err(e) => {
                pool.slots.give_back(slot);
                Err(e)
            }
        }
    }

    /// Allocates an object of `len` bytes to be filled by [`Pool::write`].
    pub fn malloc(&self, len: usize) -> Result<Handle<&Pool>> {
        Self::malloc_in(self, len)
    }

    /// `malloc` for any pointer to a pool.
    pub fn malloc_in<P: Deref<Target = Pool>>(pool: P, len: usize) -> Result<Handle<P>> {
        let slot = pool.slots.take().ok_or(Error::OutOfMemory)?;
        match pool.alloc_publish(pool.slots.word(slot), len, None, Word::Slot) {
            Ok(()) => Ok(Handle::new(pool, slot, len)),
            Err(e) => {
                pool.slots.give_back(slot);
                Err(e)
            }
        }
    }

    /// Writes the whole object of a handle from `malloc` (`data.len()` must equal its length).
    pub fn write<P: Deref<Target = Pool>>(&self, h: &mut Handle<P>, data: &[u8]) -> Result<()> {
        self.same_pool(h.pool())?;
        self.write_word(h.slot_word_for_bytes(), data)
    }

    /// Begins a read section: the object's bytes, in place when contiguous, otherwise copied
    /// into `local_copy` (at least `len + 8` bytes; a page always suffices).
    #[inline]
    pub fn read<'a, P: Deref<Target = Pool>>(
        &'a self,
        h: &'a Handle<P>,
        local_copy: &'a mut [u8],
    ) -> Result<ReadSection<'a>> {
        self.same_pool(h.pool())?;
        let w = h.slot_word_for_read();
        // The handle's hint first: no wait for the slot word's cache line.
        let (t, len) = (ThreadShard::current(), h.len());
        if local_copy.len() >= len + HDR as usize {
            if let Some(reg) = self.announce_in_place(h.hint(), w, len, t) {
                self.access.record_read_by(t, false, 0);
                return Ok(ReadSection { ptr: payload_of(reg.header), len, registration: reg });
            }
        }
        self.read_not_in_place(w, local_copy)
    }

    /// `read` of an object `announce_in_place` does not take.
    #[inline(never)]
    fn read_not_in_place<'a>(
        &'a self,
        w: &'a AtomicUsize,
        local_copy: &'a mut [u8],
    ) -> Result<ReadSection<'a>> {
        let p = self.pin_slow(w, None)?;
        if local_copy.len() < p.len + HDR as usize {
            p.release();
            return Err(Error::InvalidArgument(format!(
                "local copy buffer of {} bytes is smaller than the object plus its header ({})",
                local_copy.len(),
                p.len + HDR as usize
            )));
        }
        // SAFETY: `local_copy` is a live, writable buffer of at least len + HDR bytes.
        let ptr = unsafe { self.begin_copy(&p, local_copy.as_mut_ptr()) };
        Ok(ReadSection { ptr, len: p.len, registration: p.reg })
    }

    /// Copies the object into `out` (at least its length); returns the length.
    pub fn read_into<P: Deref<Target = Pool>>(
        &self,
        h: &Handle<P>,
        out: &mut [u8],
    ) -> Result<usize> {
        self.same_pool(h.pool())?;
        self.read_word_into(h.slot_word_for_read(), Some((h.hint(), h.len())), out)
    }

    /// The object's bytes as a new vector.
    pub fn read_to_vec<P: Deref<Target = Pool>>(&self, h: &Handle<P>) -> Result<Vec<u8>> {
        self.same_pool(h.pool())?;
        let mut v = vec![0; h.len()];
        self.read_word_into(h.slot_word_for_read(), Some((h.hint(), h.len())), &mut v)?;
        Ok(v)
    }

    /// Begins a scatter-gather read: one or two segments, nothing copied.
    pub fn read_sg<'a, P: Deref<Target = Pool>>(
        &'a self,
        h: &'a Handle<P>,
    ) -> Result<SgSection<'a>> {
        self.same_pool(h.pool())?;
        let p = self.pin_object(h.slot_word_for_read(), None)?;
        let layout = self.pinned_layout(&p);
        self.access.record_read(layout.spanning, 0);
        Ok(SgSection { pool: self, layout, pinned: p })
    }

    fn same_pool(&self, other: &Pool) -> Result<()> {
        if std::ptr::eq(self, other) {
            Ok(())
        } else {
            Err(Error::InvalidHandle("handle belongs to another pool"))
        }
    }

    // ---------------------------------------------------------------- raw layer

    /// Stores `data` into a new object owned by the caller's handle word `h` (which must be 0).
    ///
    /// # Safety
    /// `h` must stay at this address and stay valid until the object is freed or moved with
    /// [`Pool::handle_move_raw`]: compaction rewrites it from other threads. It may be read
    /// meanwhile but written only through this pool.
    pub unsafe fn store_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        self.alloc_publish(h, data.len(), Some(data), Word::Caller)
    }

    /// Allocates an object of `len` bytes for `h`, to be filled by [`Pool::write_raw`].
    ///
    /// # Safety
    /// As [`Pool::store_raw`].
    pub unsafe fn malloc_raw(&self, h: &AtomicUsize, len: usize) -> Result<()> {
        self.alloc_publish(h, len, None, Word::Caller)
    }

    /// Writes the whole object of `h`.
    ///
    /// # Safety
    /// No read section of this object runs on another thread meanwhile (the bytes would race).
    pub unsafe fn write_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        self.write_word(h, data)
    }

    /// Frees the object of `h` and empties `h` (an empty handle: no-op).
    ///
    /// # Safety
    /// `h` is a handle word given to this or another pool's raw layer, or any other 8-aligned
    /// word (garbage is refused, never dereferenced).
    pub unsafe fn free_raw(&self, h: &AtomicUsize) -> Result<()> {
        self.free_word(h)
    }

    /// Begins a read section of `mem_len` bytes (must equal the stored length). Returns the
    /// object's address: in place when contiguous, else `local_copy + 8` after copying the
    /// header and the object into `local_copy`.
    ///
    /// # Safety
    /// `local_copy` is writable for `mem_len + 8` bytes. The returned pointer is valid until the
    /// matching [`Pool::read_end_raw`]; the bytes must not be written through it.
    #[inline]
    pub unsafe fn read_begin_raw(
        &self,
        h: &AtomicUsize,
        mem_len: usize,
        local_copy: *mut u8,
    ) -> Result<*const u8> {
        if let Some(ptr) = self.read_begin_in_place(h, mem_len) {
            return Ok(ptr);
        }
        self.begin_not_in_place(h, mem_len, local_copy)
    }

    /// `read_begin_raw` of an object `read_begin_in_place` does not take.
    ///
    /// # Safety
    /// As [`Pool::read_begin_raw`].
    #[inline(never)]
    unsafe fn begin_not_in_place(
        &self,
        h: &AtomicUsize,
        mem_len: usize,
        local_copy: *mut u8,
    ) -> Result<*const u8> {
        let p = self.pin_slow(h, Some(mem_len))?;
        self.remember(&p);
        Ok(self.begin_copy(&p, local_copy))
    }

    /// [`Pool::read_begin_raw`]'s common case, for bindings that want it without the `Result`:
    /// a non-huge object of `mem_len` bytes in one page, announced in this thread's reader slot
    /// and returned in place. `None` changes nothing: the object is huge or crosses a page, the
    /// thread has no free reader slot, or something is wrong, and `read_begin_raw` then does the
    /// read or says what is wrong.
    ///
    /// # Safety
    /// As [`Pool::read_begin_raw`]; the section ends with [`Pool::read_end_raw`] (or
    /// [`Pool::read_end_recorded`]).
    #[inline]
    pub unsafe fn read_begin_in_place(&self, h: &AtomicUsize, mem_len: usize) -> Option<*const u8> {
        let t = ThreadShard::current();
        let reg = self.announce_in_place(h.load(Ordering::Acquire), h, mem_len, t)?;
        self.access.record_read_by(t, false, 0);
        Some(payload_of(reg.header))
    }

    /// Records a raw section begun by this thread, for `read_end_raw`.
    #[inline]
    fn remember(&self, p: &Pinned<'_>) {
        open_section::record(OpenSection {
            pool: self.id,
            handle: p.reg.owner,
            word: p.loc.encode(),
            pin: p.reg.pin.map_or(std::ptr::null(), |p| p as *const PinWord),
            header: p.reg.header,
            len: p.len,
        });
    }

    /// The read-section rule of `copy` mode for a pinned object: in place when contiguous, else
    /// header and object copied into `local_copy`, returning `local_copy + HDR`.
    ///
    /// # Safety
    /// `local_copy` is writable for `p.len + HDR` bytes.
    #[inline]
    unsafe fn begin_copy(&self, p: &Pinned<'_>, local_copy: *mut u8) -> *const u8 {
        let layout = self.pinned_layout(p);
        if !layout.spanning {
            self.access.record_read(false, 0);
            if !p.info.huge {
                return p.in_place();
            }
            let first = layout.pieces[0];
            return self.arena.page_ptr(first.pfn).add(first.offset);
        }
        let hdr = p.reg.header.load(Ordering::Acquire);
        std::ptr::copy_nonoverlapping(hdr.to_ne_bytes().as_ptr(), local_copy, HDR as usize);
        let out = std::slice::from_raw_parts_mut(local_copy.add(HDR as usize), p.len);
        self.copy_pieces_out(&layout, out);
        self.access.record_read(true, p.len as u64);
        local_copy.add(HDR as usize)
    }

    /// Copies the object of `h` into `out` (at least its length) in one call: a read section
    /// begun and ended without handing out a pointer. Returns the length.
    ///
    /// # Safety
    /// As [`Pool::free_raw`].
    pub unsafe fn read_into_raw(&self, h: &AtomicUsize, out: &mut [u8]) -> Result<usize> {
        self.read_word_into(h, None, out)
    }

    /// Ends a read section begun by `read_begin_raw` or `read_sg_begin_raw`.
    ///
    /// # Safety
    /// `h` is the handle the section was begun on.
    #[inline]
    pub unsafe fn read_end_raw(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Result<()> {
        if self.end_announced(h, mem_len) {
            return Ok(());
        }
        self.end_unannounced(h, mem_len)
    }

    /// `read_end_raw` of a section this thread did not announce on `h`'s object.
    #[inline(never)]
    fn end_unannounced(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Result<()> {
        let addr = h as *const AtomicUsize as usize;
        let Some(open) = open_section::matching(self.id, addr, h.load(Ordering::Acquire)) else {
            return self.unpin_object(h, mem_len);
        };
        if let Some(m) = mem_len.filter(|&m| m != open.len) {
            return Err(wrong_read_len(m, open.len));
        }
        self.end_recorded(&open, addr).map_err(|r| {
            // The record proved nothing this time: forget it, as a successful end does.
            open_section::clear();
            end_refusal(r)
        })
    }

    /// [`Pool::read_end_raw`]'s common case, for bindings that want it without the `Result`:
    /// ends the section this thread began last if it is `h`'s, of `mem_len` bytes. `false`
    /// changes nothing: `read_end_raw` then ends the section or says what is wrong.
    ///
    /// # Safety
    /// As [`Pool::read_end_raw`].
    #[inline]
    pub unsafe fn read_end_recorded(&self, h: &AtomicUsize, mem_len: usize) -> bool {
        if self.end_announced(h, Some(mem_len)) {
            return true;
        }
        let addr = h as *const AtomicUsize as usize;
        open_section::matching(self.id, addr, h.load(Ordering::Acquire))
            .filter(|open| open.len == mem_len)
            .is_some_and(|open| self.end_recorded(&open, addr).is_ok())
    }

    /// Ends this thread's announced section if it is on `h`'s object (of `mem_len` bytes when
    /// given). False changes nothing: the section is counted, another thread's, or not open.
    #[inline(always)]
    fn end_announced(&self, h: &AtomicUsize, mem_len: Option<usize>) -> bool {
        let Some(slot) = ThreadShard::current().owned_index().map(hazard::slot) else {
            return false;
        };
        let (held, owner) = (slot.load(Ordering::Relaxed), h as *const AtomicUsize as usize);
        // What the slot names is enough: no load of `h` (an announced object is never moved,
        // so `h` still names it) and, for an empty slot, no header (0 is outside the mapping).
        let at = hazard::announced_header(held);
        if held != hazard::announcement(at, owner) || !self.arena.holds(at) {
            return false;
        }
        // SAFETY: `at` lies in this pool's mapping, which outlives `self`, and this thread
        // announced it (only the slot's thread fills it), so it is an object start that
        // `announce_in_place` or `pin_fast_at` checked by its page's role, which never changes:
        // a header word, only ever accessed atomically. If another thread ended the section
        // meanwhile (the contract allows it), the object may be gone: then the owner check
        // below fails or the slot is already empty, and the store changes nothing of another
        // section.
        let cur = unsafe { &*(at as *const AtomicU64) }.load(Ordering::Acquire);
        // The section was begun on the header's owner: the tag alone could be another's.
        if header::owner(cur) != owner || mem_len.is_some_and(|m| m != header::len(cur)) {
            return false;
        }
        slot.store(0, Ordering::Release);
        true
    }

    /// Ends the section `open` records for the handle at `addr`; refused (changing nothing) if
    /// its header holds no reader of that handle.
    #[inline]
    fn end_recorded(&self, open: &OpenSection, addr: usize) -> std::result::Result<(), Refusal> {
        // SAFETY: a record of this pool (ids are never reused) points into its zspage table and
        // arena, which live as long as `self` (see `open_section`); `pin` may be null.
        let (pin, hw) = unsafe { (open.pin.as_ref(), &*open.header) };
        end_counted_or_announced(hw, addr)?;
        open_section::clear();
        if let Some(pin) = pin {
            pin.unpin();
        }
        Ok(())
    }

    /// Begins a scatter-gather read of `mem_len` bytes: the segment count and the segments.
    ///
    /// # Safety
    /// The segments are valid until `read_end_raw`; they must not be written.
    pub unsafe fn read_sg_begin_raw(&self, h: &AtomicUsize, mem_len: usize) -> Result<SgSegments> {
        let p = self.pin_object(h, Some(mem_len))?;
        if p.reg.announced.is_none() {
            self.remember(&p);
        }
        let layout = self.pinned_layout(&p);
        self.access.record_read(layout.spanning, 0);
        Ok(self.sg_segments(&layout))
    }

    /// Moves ownership of the object of `from` to the empty handle word `to`; `from` empties.
    ///
    /// # Safety
    /// `to` obeys the contract of [`Pool::store_raw`] from now on.
    pub unsafe fn handle_move_raw(&self, from: &AtomicUsize, to: &AtomicUsize) -> Result<()> {
        self.move_word(from, to)
    }

    /// Where the object of `h` is now (zspage slot and generation, object index): for tests,
    /// tools and diagnostics; compaction may move it at any time.
    ///
    /// # Safety
    /// As [`Pool::free_raw`].
    pub unsafe fn location_raw(&self, h: &AtomicUsize) -> Result<ObjectLocation> {
        self.locate_word(h)
    }

    /// Length of the object of `h`.
    ///
    /// # Safety
    /// As [`Pool::free_raw`].
    pub unsafe fn object_len_raw(&self, h: &AtomicUsize) -> Result<usize> {
        self.object_len(h)
    }

    // ---------------------------------------------------------------- queries

    /// Pages held by zspages (`zs_get_total_pages`).
    pub fn total_pages(&self) -> u64 {
        self.pages_allocated.load(Ordering::Relaxed)
    }

    /// Objects of this length or more are stored in huge classes (`zs_huge_class_size`).
    pub fn huge_class_size(&self) -> usize {
        self.table.huge_class_size() as usize
    }

    /// Index of the class serving `size` (no header added), as `zs_lookup_class_index`.
    pub fn lookup_class_index(&self, size: usize) -> u32 {
        self.table.lookup_class_index(size)
    }

    /// Pool-wide counters, summed now.
    pub fn stats(&self) -> PoolStats {
        let (reads, reads_spanning, read_copy_bytes, writes_spanning) = self.access.sum();
        let mut s = PoolStats {
            pages_compacted: self.pages_compacted.load(Ordering::Relaxed),
            pages_allocated: self.total_pages(),
            pages_peak: self.pages_peak.load(Ordering::Relaxed),
            pages_cached: self.arena.pages_cached(),
            reads,
            reads_spanning,
            read_copy_bytes,
            writes_spanning,
            objs_moved: self.objs_moved.load(Ordering::Relaxed),
            ..Default::default()
        };
        for c in self.classes.iter() {
            let st = c.lock();
            s.objs_allocated += st.obj_allocated;
            s.objs_inuse += st.obj_inuse;
            s.bytes_stored += st.bytes_stored;
        }
        s
    }

    /// One row per (non-alias) class, ascending by size.
    pub fn class_stats(&self) -> Vec<ClassStats> {
        let page = self.config.page_size;
        self.classes
            .iter()
            .map(|c| {
                let i = &c.info;
                let st = c.lock();
                ClassStats {
                    index: i.index,
                    size: i.size,
                    pages_per_zspage: i.pages_per_zspage,
                    objs_per_zspage: i.objs_per_zspage,
                    huge: i.huge,
                    fullness: st.counts,
                    obj_allocated: st.obj_allocated,
                    obj_used: st.obj_inuse,
                    pages_used: st.zspages * u64::from(i.pages_per_zspage),
                    freeable: st.can_compact(i),
                    spanning_per_zspage: i.spanning_per_zspage(page),
                    tail_waste: i.tail_waste(page),
                    worst_merge_waste: self.table.worst_merge_waste(i),
                    first_index: i.first_index,
                    last_index: i.index,
                    bytes_stored: st.bytes_stored,
                }
            })
            .collect()
    }

    /// Heap bytes of the pool's metadata outside its pages: (zspage metadata and classes,
    /// safe-layer handle slots).
    pub fn metadata_bytes(&self) -> (usize, usize) {
        let classes = self.classes.len() * std::mem::size_of::<SizeClass>();
        (self.zspages.heap_bytes() + self.arena.heap_bytes() + classes, self.slots.heap_bytes())
    }

    // ---------------------------------------------------------------- compaction

    /// Moves objects out of sparse zspages into fuller ones and releases emptied zspages
    /// (mainline `zs_compact`). Zspages pinned by readers are skipped. Returns pages freed.
    pub fn compact(&self) -> u64 {
        let mut buf = vec![0u8; self.page()];
        let freed: u64 =
            (0..self.classes.len()).rev().map(|pos| self.compact_class(pos, &mut buf)).sum();
        self.pages_compacted.fetch_add(freed, Ordering::Relaxed);
        freed
    }

    fn compact_class(&self, pos: usize, buf: &mut [u8]) -> u64 {
        let class = &self.classes[pos];
        let info = &class.info;
        let mut st = class.lock();
        self.release_deferred(&mut st, class);
        let mut freed = 0;
        let mut dst: Option<u32> = None;
        while st.can_compact(info) > 0 {
            let d = match dst {
                Some(d) => d,
                None => match st.fullest_in(1, GROUP_FULL) {
                    Some(d) => {
                        st.remove(&self.zspages, d);
                        dst = Some(d);
                        d
                    }
                    None => break,
                },
            };
            // The first source (groups 1..=10, each from its head) that no reader holds.
            let Some(s) = st.find_in(&self.zspages, 1..GROUP_FULL, |z| self.lock_for_move(z, info))
            else {
                break;
            };
            st.remove(&self.zspages, s);
            let (src, dz) = (self.zspage(s), self.zspage(d));
            self.migrate(info, src, d, dz, buf);
            if src.inuse.load(Ordering::Relaxed) == 0 {
                self.release_zspage(&mut st, info, s); // still locked for migration
                freed += u64::from(info.pages_per_zspage);
            } else {
                src.pin.unlock_migration();
                let g = class.fullness.group(src.inuse.load(Ordering::Relaxed));
                st.insert(&self.zspages, s, g);
            }
            if dz.inuse.load(Ordering::Relaxed) == info.objs_per_zspage {
                st.insert(&self.zspages, d, GROUP_FULL);
                dst = None;
            }
        }
        if let Some(d) = dst {
            let g = class.fullness.group(self.zspage(d).inuse.load(Ordering::Relaxed));
            st.insert(&self.zspages, d, g);
        }
        freed
    }

    /// Locks `z` (of class `info`, whose lock the caller holds) for moving its objects: its
    /// migration lock (huge readers pin it) and a claim on every allocated object (other
    /// readers register on headers). All or nothing: false if any reader holds one.
    fn lock_for_move(&self, z: &Zspage, info: &ClassInfo) -> bool {
        if !z.pin.try_lock_migration() {
            return false;
        }
        let fresh = size_class::fresh(z);
        for obj in 0..fresh {
            let word = self.header_word(z, info, obj);
            if header::is_allocated(word.load(Ordering::Acquire))
                && header::claim(word, hazard::in_use()).is_none()
            {
                self.unclaim(z, info, obj);
                z.pin.unlock_migration();
                return false;
            }
        }
        true
    }

    /// Drops the claims `lock_for_move` left on objects `0..upto` of `z` (those not moved).
    fn unclaim(&self, z: &Zspage, info: &ClassInfo, upto: u32) {
        for obj in 0..upto {
            let word = self.header_word(z, info, obj);
            let w = word.load(Ordering::Acquire);
            if header::is_claimed(w) {
                // Only the claimer changes a claimed header (readers back off, frees and moves
                // of the handle wait for the class lock we hold).
                word.store(header::without_readers(w), Ordering::Release);
            }
        }
    }

    /// Moves live objects of `src` (locked by `lock_for_move`) into `dst`, in increasing object
    /// index, until `dst` is full or `src` is empty (mainline `migrate_zspage`), then drops the
    /// claims on the objects left.
    fn migrate(&self, info: &ClassInfo, src: &Zspage, d: u32, dst: &Zspage, buf: &mut [u8]) {
        debug_assert!(src.is_live() && dst.is_live());
        for obj in 0..size_class::fresh(src) {
            let word = self.header_word(src, info, obj);
            // The reader bits are our claim: the moved copy starts with no readers.
            let hdr = header::without_readers(word.load(Ordering::Acquire));
            if !header::is_allocated(hdr) {
                continue;
            }
            let len = header::len(hdr);
            let from = self.layout(src, info, obj, len);
            self.copy_pieces_out(&from, &mut buf[..len]);
            let new_obj = size_class::obj_malloc(dst, hdr, |o| self.header_word(dst, info, o));
            let to = self.layout(dst, info, new_obj, len);
            // SAFETY: `new_obj` was just taken from dst's freelist under the class lock and is not
            // yet reachable by any handle; the range lies within its object.
            unsafe { self.copy_pieces_in(&to, &buf[..len]) };
            let moved = self.locate(d, dst, info, new_obj);
            // SAFETY: the header's owner is a live handle word (pool invariant, see module doc);
            // it is 8-aligned (checked at store) and only accessed atomically.
            let handle = unsafe { &*(header::owner(hdr) as *const AtomicUsize) };
            handle.store(moved.encode(), Ordering::Release);
            word.store(header::free_link(size_class::free_head(src)), Ordering::Release);
            size_class::obj_freed(src, obj);
            self.objs_moved.fetch_add(1, Ordering::Relaxed);
            if dst.inuse.load(Ordering::Relaxed) == info.objs_per_zspage
                || src.inuse.load(Ordering::Relaxed) == 0
            {
                break;
            }
        }
        self.unclaim(src, info, size_class::fresh(src));
    }

    // ---------------------------------------------------------------- internals

    #[inline]
    fn zspage(&self, slot: u32) -> &Zspage {
        self.zspages.get(slot).expect("zspage slot exists")
    }

    /// Geometry of object `obj` of `len` bytes in zspage `z`.
    #[inline]
    fn layout(&self, z: &Zspage, info: &ClassInfo, obj: u32, len: usize) -> Layout {
        let page = self.page();
        if info.huge {
            let pieces = [Piece { pfn: z.page(0), offset: 0, len }, Piece::default()];
            return Layout { pieces, spanning: false };
        }
        let (shift, mask) = (self.page_shift(), page - 1);
        let start = obj as usize * info.size as usize;
        let offset = start & mask;
        let spanning = offset + HDR as usize + len > page;
        let data = start + HDR as usize;
        let (dpage, doff) = (data >> shift, data & mask);
        let first = len.min(page - doff);
        let mut pieces = [Piece { pfn: z.page(dpage), offset: doff, len: first }, Piece::default()];
        if first < len {
            pieces[1] = Piece { pfn: z.page(dpage + 1), offset: 0, len: len - first };
        }
        Layout { pieces, spanning }
    }

    /// `layout` of a pinned object from its handle's location: the zspage's page list is read
    /// only when the payload continues on the next page.
    #[inline]
    fn pinned_layout(&self, p: &Pinned<'_>) -> Layout {
        self.layout_at(p.zspage, p.info, p.obj, p.loc.offset(), p.len)
    }

    /// `layout` of object `obj` whose handle location (header, or huge payload) is at arena
    /// byte `offset`: the zspage's page list is read only when the payload continues on the
    /// next page.
    #[inline]
    fn layout_at(
        &self,
        z: &Zspage,
        info: &ClassInfo,
        obj: u32,
        offset: usize,
        len: usize,
    ) -> Layout {
        let page = self.page();
        let pfn = (offset >> self.page_shift()) as Pfn;
        let in_page = offset & (page - 1);
        if info.huge {
            let pieces = [Piece { pfn, offset: 0, len }, Piece::default()];
            return Layout { pieces, spanning: false };
        }
        let spanning = in_page + HDR as usize + len > page;
        if !spanning {
            let pieces = [Piece { pfn, offset: in_page + HDR as usize, len }, Piece::default()];
            return Layout { pieces, spanning };
        }
        self.layout(z, info, obj, len)
    }

    /// The header word of object `obj` (in the page, or in the zspage for huge classes).
    #[inline]
    fn header_word<'a>(&'a self, z: &'a Zspage, info: &ClassInfo, obj: u32) -> &'a AtomicU64 {
        if info.huge {
            return &z.huge_header;
        }
        let start = obj as usize * info.size as usize;
        self.arena.word(z.page(start >> self.page_shift()), start & (self.page() - 1))
    }

    fn copy_pieces_out(&self, layout: &Layout, out: &mut [u8]) {
        let mut at = 0;
        for p in layout.pieces.iter().filter(|p| p.len > 0) {
            // SAFETY: callers hold the object (pinned with a header reader, or under migration),
            // so nobody writes these bytes meanwhile; pieces lie within their pages.
            unsafe { self.arena.read(p.pfn, p.offset, &mut out[at..at + p.len]) };
            at += p.len;
        }
    }

    /// # Safety
    /// The caller owns the object slot the layout describes.
    unsafe fn copy_pieces_in(&self, layout: &Layout, data: &[u8]) {
        let mut at = 0;
        for p in layout.pieces.iter().filter(|p| p.len > 0) {
            self.arena.write(p.pfn, p.offset, &data[at..at + p.len]);
            at += p.len;
        }
    }

    fn sg_segments(&self, layout: &Layout) -> SgSegments {
        let mut segs = [(std::ptr::null(), 0); 2];
        let mut n = 0;
        for p in layout.pieces.iter().filter(|p| p.len > 0) {
            // SAFETY: offset < page, so the pointer stays inside the page's mapping.
            segs[n] = (unsafe { self.arena.page_ptr(p.pfn).add(p.offset) } as *const u8, p.len);
            n += 1;
        }
        (segs, n)
    }

    fn check_len(&self, len: usize) -> Result<()> {
        if len == 0 {
            return Err(Error::InvalidArgument("object length is 0".into()));
        }
        if len > self.page() {
            return Err(Error::TooLarge { len, max: self.page() });
        }
        Ok(())
    }

    /// Allocates an object of `len` bytes owned by `h`, copies `data` into it (if given) and
    /// publishes it in `h`, all under the class lock.
    fn alloc_publish(
        &self,
        h: &AtomicUsize,
        len: usize,
        data: Option<&[u8]>,
        word: Word,
    ) -> Result<()> {
        self.check_len(len)?;
        let addr = h as *const AtomicUsize as usize;
        if addr >= header::ADDR_LIMIT {
            return Err(Error::InvalidArgument(format!(
                "handle address {addr:#x} does not fit the object header (limit 2^47)"
            )));
        }
        if h.load(Ordering::Acquire) != 0 {
            return Err(Error::HandleInUse);
        }
        let pos = self.table.position(len + HDR as usize);
        let class = &self.classes[pos];
        let info = &class.info;
        let next = class.next_obj.load(Ordering::Relaxed);
        if next != 0 {
            self.arena.prefetch_range(next, len + HDR as usize, true);
        }
        let mut st = class.lock();
        let (slot, new) = match st.fullest_in(0, GROUP_FULL) {
            Some(s) => (s, false),
            None => (self.create_zspage(&mut st, pos)?, true),
        };
        let z = self.zspage(slot);
        let obj =
            size_class::obj_malloc(z, header::encode(addr, len), |o| self.header_word(z, info, o));
        let group = class.fullness.group(z.inuse.load(Ordering::Relaxed));
        if new {
            st.insert(&self.zspages, slot, group);
        } else {
            st.fix_group(&self.zspages, slot, z, &class.fullness);
        }
        st.obj_inuse += 1;
        st.bytes_stored += len as u64;
        class.next_obj.store(self.next_object(&st, info), Ordering::Relaxed);
        let loc = self.locate(slot, z, info, obj);
        if let Some(data) = data {
            let layout = self.layout_at(z, info, obj, loc.offset(), len);
            // SAFETY: the object was just taken from the freelist under the class lock; no handle
            // names it yet and compaction of this class needs the lock we hold.
            unsafe { self.copy_pieces_in(&layout, data) };
            self.access.record_write(layout.spanning);
        }
        let loc = loc.encode();
        if word == Word::Slot {
            h.store(loc, Ordering::Release);
        } else if h.compare_exchange(0, loc, Ordering::AcqRel, Ordering::Acquire).is_err() {
            // Another thread filled `h` meanwhile: give the object back.
            let hw = self.header_word(z, info, obj);
            hw.store(header::free_link(size_class::free_head(z)), Ordering::Release);
            self.object_freed(&mut st, class, slot, z, obj, len);
            return Err(Error::HandleInUse);
        }
        Ok(())
    }

    fn write_word(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        let p = self.pin_object(h, Some(data.len()))?;
        let layout = self.pinned_layout(&p);
        // SAFETY: the object is pinned (not migrated, not freed); the caller guarantees no
        // concurrent read of it (`&mut Handle` in the safe layer, `write_raw`'s contract).
        unsafe { self.copy_pieces_in(&layout, data) };
        self.access.record_write(layout.spanning);
        p.release();
        Ok(())
    }

    fn create_zspage(&self, st: &mut ClassState, pos: usize) -> Result<u32> {
        let info = &self.classes[pos].info;
        let n = u64::from(info.pages_per_zspage);
        let limit = self.config.mem_limit_pages;
        let reserved =
            self.pages_allocated.fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                (limit == 0 || p + n <= limit).then_some(p + n)
            });
        let Ok(before) = reserved else {
            return Err(Error::OutOfMemory);
        };
        let mut pages = [0 as Pfn; crate::config::MAX_CHAIN_SIZE as usize];
        let pages = &mut pages[..n as usize];
        let slot = if self.arena.alloc_pages(pages, pos) {
            match self.zspages.take() {
                Some(slot) => Some(slot),
                None => {
                    self.arena.free_pages(pages);
                    None
                }
            }
        } else {
            None
        };
        let Some(slot) = slot else {
            self.pages_allocated.fetch_sub(n, Ordering::AcqRel);
            return Err(Error::OutOfMemory);
        };
        self.pages_peak.fetch_max(before + n, Ordering::Relaxed);
        self.zspage(slot).init(pos, pages);
        st.obj_allocated += u64::from(info.objs_per_zspage);
        st.zspages += 1;
        Ok(slot)
    }

    /// Releases an empty, unlisted zspage (mainline `free_zspage`). Caller holds the class lock
    /// and the zspage's migration lock, which this releases once the zspage is dead.
    fn release_zspage(&self, st: &mut ClassState, info: &ClassInfo, slot: u32) {
        let z = self.zspage(slot);
        z.retire();
        z.pin.unlock_migration();
        let mut pages = [0 as Pfn; crate::config::MAX_CHAIN_SIZE as usize];
        let n = info.pages_per_zspage as usize;
        for (i, p) in pages[..n].iter_mut().enumerate() {
            *p = z.page(i);
        }
        self.arena.free_pages(&pages[..n]);
        self.zspages.give_back(slot);
        self.pages_allocated.fetch_sub(n as u64, Ordering::AcqRel);
        st.obj_allocated -= u64::from(info.objs_per_zspage);
        st.zspages -= 1;
    }

    /// Releases the empty zspages a free had to leave because readers pinned them.
    fn release_deferred(&self, st: &mut ClassState, class: &SizeClass) {
        while let Some(slot) =
            st.find_in(&self.zspages, std::iter::once(GROUP_EMPTY), |z| z.pin.try_lock_migration())
        {
            st.remove(&self.zspages, slot);
            self.release_zspage(st, &class.info, slot);
        }
    }

    /// Bookkeeping once object `obj` of zspage `slot` is free (its header word already links
    /// the freelist): counters, fullness group, release of an emptied zspage. Caller holds the
    /// class lock.
    fn object_freed(
        &self,
        st: &mut ClassState,
        class: &SizeClass,
        slot: u32,
        z: &Zspage,
        obj: u32,
        len: usize,
    ) {
        size_class::obj_freed(z, obj);
        st.obj_inuse -= 1;
        st.bytes_stored -= len as u64;
        if z.inuse.load(Ordering::Relaxed) != 0 {
            st.fix_group(&self.zspages, slot, z, &class.fullness);
        } else if z.pin.try_lock_migration() {
            st.remove(&self.zspages, slot);
            self.release_zspage(st, &class.info, slot);
        } else {
            st.fix_group(&self.zspages, slot, z, &class.fullness); // to the empty group, deferred
        }
    }

    /// Arena offset of the object the class's next store will take if nothing changes
    /// meanwhile (0: it will create a zspage). Caller holds the class lock.
    #[inline]
    fn next_object(&self, st: &ClassState, info: &ClassInfo) -> usize {
        let Some(slot) = st.fullest_in(0, GROUP_FULL) else {
            return 0;
        };
        let z = self.zspage(slot);
        let obj = size_class::free_head(z).unwrap_or_else(|| z.fresh.load(Ordering::Relaxed));
        self.locate(slot, z, info, obj).offset()
    }

    /// The handle word of object `obj` of zspage `slot`.
    #[inline]
    fn locate(&self, slot: u32, z: &Zspage, info: &ClassInfo, obj: u32) -> Location {
        let shift = self.page_shift();
        let start = if info.huge { 0 } else { obj as usize * info.size as usize };
        let page = start >> shift;
        let offset = ((z.page(page) as usize) << shift) | (start & (self.page() - 1));
        Location { tag: self.tag, slot, page: page as u32, pos: (offset >> 3) as u64 }
    }

    /// Starts loading the object a handle word names, if it looks like one of this pool's: its
    /// header and `len` payload bytes (at least two lines) and its zspage's metadata. A prefetch
    /// only: nothing is checked or read.
    #[inline]
    pub(crate) fn prefetch_word(&self, word: usize, len: usize) {
        if let Some(loc) = Location::decode(word).filter(|l| l.tag == self.tag) {
            // The metadata first: a free's class lock and checks wait for the zspage's line, a
            // read's checks for its page's role.
            if len == 0 {
                if let Some(z) = self.zspages.get(loc.slot) {
                    crate::arena::prefetch_line(z as *const Zspage as *const u8);
                }
            } else {
                self.arena.prefetch_role((loc.offset() >> self.page_shift()) as Pfn);
            }
            if len + HDR as usize <= 128 {
                self.arena.prefetch(loc.offset()); // two lines, without a loop
            } else {
                self.arena.prefetch_range(loc.offset(), len + HDR as usize, false);
            }
        }
    }

    /// Decodes a handle word and finds its zspage, and starts loading the object's header and
    /// payload so that the metadata and object misses overlap. Checks nothing else.
    #[inline]
    fn resolve(&self, word: usize) -> Result<(Location, &Zspage)> {
        if word == 0 {
            return Err(Error::InvalidHandle("empty handle"));
        }
        let Some(loc) = Location::decode(word) else {
            return Err(Error::InvalidHandle("not a handle word"));
        };
        if loc.tag != self.tag {
            return Err(Error::InvalidHandle("handle belongs to another pool (or is garbage)"));
        }
        self.arena.prefetch(loc.offset());
        let Some(z) = self.zspages.get(loc.slot) else {
            return Err(Error::InvalidHandle("no such zspage"));
        };
        Ok((loc, z))
    }

    /// Checks that `loc` is an object start in zspage `z` (live) that was handed out at least
    /// once, so its header word is one the pool wrote, never stray bytes. Returns the class
    /// position and the object index. Stable while `z` is pinned or its class lock is held.
    #[inline]
    fn check_place(&self, z: &Zspage, loc: Location) -> Result<(usize, u32)> {
        if !z.is_live() {
            return Err(Error::InvalidHandle("stale handle: its object was freed"));
        }
        let pos = z.class_pos();
        let Some(class) = self.classes.get(pos) else {
            return Err(Error::InvalidHandle("no such class"));
        };
        let info = &class.info;
        let shift = self.page_shift();
        let offset = loc.offset();
        if loc.page >= info.pages_per_zspage
            || (offset >> shift) != z.page(loc.page as usize) as usize
        {
            return Err(Error::InvalidHandle("stale handle: its object was freed"));
        }
        let start = ((loc.page as usize) << shift) | (offset & (self.page() - 1));
        let obj = if info.huge { 0 } else { class.by_size.div(start as u32) };
        if obj as usize * info.size as usize != start || obj >= info.objs_per_zspage {
            return Err(Error::InvalidHandle("not an object of its zspage"));
        }
        if obj >= size_class::fresh(z) {
            return Err(Error::InvalidHandle("object was never allocated"));
        }
        Ok((pos, obj))
    }

    /// The header word of the object at `loc` (checked by `check_place`).
    #[inline]
    fn header_at<'a>(&'a self, z: &'a Zspage, info: &ClassInfo, loc: Location) -> &'a AtomicU64 {
        if info.huge {
            &z.huge_header
        } else {
            self.arena.word_at(loc.offset())
        }
    }

    /// Checks that `loc` is an object start by the role of its page alone (class and page index
    /// never change for a page, see `arena.rs`), so its header word is one the pool wrote or
    /// zero. Returns the class position, its info and the object index, or why not (for
    /// `check_role`'s error; `pin_fast` drops it). Reads no zspage metadata.
    #[inline(always)]
    fn place_by_role(
        &self,
        loc: Location,
    ) -> std::result::Result<(usize, &ClassInfo, u32), &'static str> {
        let shift = self.page_shift();
        let (pos, index) = self.arena.role((loc.offset() >> shift) as Pfn).ok_or("no such page")?;
        if index != loc.page {
            return Err("stale handle: its object was freed");
        }
        let class = self.classes.get(pos).ok_or("no such class")?;
        let info = &class.info;
        let start = ((loc.page as usize) << shift) | (loc.offset() & (self.page() - 1));
        let obj = if info.huge { 0 } else { class.by_size.div(start as u32) };
        if obj as usize * info.size as usize != start || obj >= info.objs_per_zspage {
            return Err("not an object of its zspage");
        }
        Ok((pos, info, obj))
    }

    /// `place_by_role` with the pool's error: the class position and the object index.
    fn check_role(&self, loc: Location) -> Result<(usize, u32)> {
        let (pos, _, obj) = self.place_by_role(loc).map_err(Error::InvalidHandle)?;
        Ok((pos, obj))
    }

    /// Registers a reader on the object of `h` (SPEC §3 read protocol): the object is then
    /// neither freed nor moved until `release`/`read_end_raw`. Checks the stored length against
    /// `mem_len` when given.
    ///
    /// A non-huge object's reader registers on its header and holds nothing else: the header
    /// word is found from the handle word and its page's role; the reader announces it in its
    /// thread's slot (`hazard.rs`) and checks it, or, without a free slot, counts itself in it
    /// with a CAS. A registration that succeeds proves the object is `h`'s (the header names
    /// `h`, the only owner of one live object) and not being moved (a free, a handle move and
    /// compaction claim the header first, and a claimed header refuses readers). A huge
    /// object's header lives in its zspage, so its reader pins the zspage first
    /// (`pin_in_zspage`).
    fn pin_object(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Result<Pinned<'_>> {
        match self.pin_fast(h, mem_len) {
            Some(p) => Ok(p),
            None => self.pin_slow(h, mem_len),
        }
    }

    /// The common read: a non-huge object of `len` bytes in one page, found by handle word
    /// `word` of `h` (loaded, or the safe layer's hint), whose page's role makes `word`'s place
    /// an object start (`is_object_start`), announced in this thread's empty reader slot and
    /// checked in its header (`header::check_announced`: `h`'s, allocated, not claimed, `len`
    /// bytes). Sound whatever `word` is: only `h`'s one live object passes the header check,
    /// and the announce then keeps it there until the section ends. `None` changes nothing
    /// (no slot, slot in use, huge, spanning or anything wrong): the general path counts the
    /// reader or says what is wrong.
    #[inline(always)]
    fn announce_in_place(
        &self,
        word: usize,
        h: &AtomicUsize,
        len: usize,
        thread: ThreadShard,
    ) -> Option<Registration<'_>> {
        let slot = hazard::slot(thread.owned_index()?);
        let loc = Location::decode(word).filter(|l| l.tag == self.tag)?;
        let (offset, page) = (loc.offset(), self.page());
        // `len` is the caller's: compared against the room after the header, it cannot overflow.
        if len > page - HDR as usize - (offset & (page - 1)) || !self.is_object_start(loc) {
            return None;
        }
        // SAFETY: the page's role makes `offset` an object start of a non-huge class (the role
        // never changes, see `arena.rs`): an 8-aligned header word inside the mapped
        // reservation, which is only ever accessed atomically.
        let hw = unsafe { &*(self.arena.addr(offset) as *const AtomicU64) };
        let addr = h as *const AtomicUsize as usize;
        header::begin_announced(slot, hw, addr, Some(len))?;
        Some(Registration::on(hw, addr, Some(slot)))
    }

    /// Whether `loc` is the start of an object of a non-huge class, by its page's role alone
    /// (`place_by_role` without the object index, the class info or an error).
    #[inline(always)]
    fn is_object_start(&self, loc: Location) -> bool {
        let shift = self.page_shift();
        let Some((pos, index)) = self.arena.role((loc.offset() >> shift) as Pfn) else {
            return false;
        };
        let Some(class) = self.classes.get(pos) else {
            return false;
        };
        let start = ((loc.page as usize) << shift) | (loc.offset() & (self.page() - 1));
        index == loc.page
            && start < class.object_area as usize
            && class.by_size.divides(start as u32)
    }

    /// `pin_object`'s common case, with every check of `check_role` and `header::begin_read`
    /// but none of their errors: a non-huge object that does not cross a page, announced (or
    /// counted) in one attempt. `None` sends the caller to `pin_slow`, which repeats the checks and says
    /// what failed.
    #[inline(always)]
    fn pin_fast(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Option<Pinned<'_>> {
        self.pin_fast_at(h.load(Ordering::Acquire), h, mem_len, ThreadShard::current())
    }

    /// `pin_fast` for the object handle word `word` names, when the caller knows the word
    /// without loading `h` (the safe layer's hint). Sound whatever `word` is: the registration
    /// succeeds only on a header that names `h`, which is `h`'s one live object, and then that
    /// object stays where `word` says until the end.
    #[inline(always)]
    fn pin_fast_at(
        &self,
        word: usize,
        h: &AtomicUsize,
        mem_len: Option<usize>,
        thread: ThreadShard,
    ) -> Option<Pinned<'_>> {
        let addr = h as *const AtomicUsize as usize;
        let loc = Location::decode(word).filter(|l| l.tag == self.tag)?;
        let (_, info, obj) = self.place_by_role(loc).ok().filter(|(_, info, _)| !info.huge)?;
        let (offset, page) = (loc.offset(), self.page());
        let in_page = offset & (page - 1);
        let fits = |len: usize| len <= page - HDR as usize - in_page;
        if mem_len.is_some_and(|l| !fits(l)) {
            return None;
        }
        let zspage = self.zspages.get(loc.slot)?;
        // SAFETY: the page's role makes `offset` an object start of a non-huge class (the role
        // never changes, see `arena.rs`): an 8-aligned header word inside the mapped
        // reservation, which is only ever accessed atomically.
        let hw = unsafe { &*(self.arena.addr(offset) as *const AtomicU64) };
        // Announced if this thread's slot is free; otherwise, or if the header refused the
        // announced reader, counted (which refuses whatever the announce refused).
        let announced = thread.owned_index().map(hazard::slot).and_then(|slot| {
            header::begin_announced(slot, hw, addr, mem_len).map(|len| (len, slot))
        });
        let (len, slot) = match announced {
            Some((len, slot)) => (len, Some(slot)),
            None => (header::try_begin_read(hw, addr, mem_len)?, None),
        };
        let p = Pinned::registered(zspage, info, loc, obj, len, Registration::on(hw, addr, slot));
        if !fits(len) {
            p.release(); // spanning: `pin_slow` also checks the zspage
            return None;
        }
        Some(p)
    }

    #[inline(never)]
    fn pin_slow(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Result<Pinned<'_>> {
        let addr = h as *const AtomicUsize as usize;
        loop {
            let word = h.load(Ordering::Acquire);
            let checked =
                self.resolve(word).and_then(|(loc, z)| Ok((loc, z, self.check_role(loc)?)));
            let (loc, z, (pos, obj)) = match checked {
                Ok(c) => c,
                // Compaction moved the object since the load.
                Err(_) if h.load(Ordering::Acquire) != word => continue,
                Err(e) => return Err(e),
            };
            let info = &self.classes[pos].info;
            if info.huge {
                return self.pin_in_zspage(h, mem_len);
            }
            let hw = self.arena.word_at(loc.offset());
            let len = match header::begin_read(hw, addr) {
                Ok(len) => len,
                Err(Refusal::Claimed) => {
                    backoff(); // being moved: the handle word will name the copy
                    continue;
                }
                Err(_) if h.load(Ordering::Acquire) != word => continue,
                Err(r) => return Err(refusal(r)),
            };
            let p = Pinned::registered(z, info, loc, obj, len, Registration::on(hw, addr, None));
            if let Some(m) = mem_len.filter(|&m| m != len) {
                p.release();
                return Err(wrong_read_len(m, len));
            }
            let in_page = loc.offset() & (self.page() - 1);
            if in_page + HDR as usize + len > self.page() {
                // Spanning: the layout reads the zspage's page list, so the word's zspage must
                // be the object's. Stable now: a registered object keeps its zspage alive.
                if let Err(e) = self.check_place(z, loc).and_then(|(at, _)| {
                    (at == pos).then_some(()).ok_or(Error::InvalidHandle("not its zspage"))
                }) {
                    p.release();
                    return Err(e);
                }
            }
            return Ok(p);
        }
    }

    /// `pin_object` for a huge object: zspage pin plus a reader on the zspage's header word.
    fn pin_in_zspage(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Result<Pinned<'_>> {
        let addr = h as *const AtomicUsize as usize;
        let (_, (loc, z), _) = pin::pin_current(
            || h.load(Ordering::Acquire),
            |word| {
                let (loc, z) = self.resolve(word)?;
                Ok(((loc, z), &z.pin))
            },
        )?;
        // Pinned with the word unchanged: `z` is neither released nor migrated meanwhile, so
        // what `check_place` finds stays true until `unpin`.
        let pinned = (|| {
            let (pos, obj) = self.check_place(z, loc)?;
            let info = &self.classes[pos].info;
            let hw = self.header_at(z, info, loc);
            let len = header::begin_read(hw, addr).map_err(refusal)?;
            if let Some(m) = mem_len.filter(|&m| m != len) {
                let _ = header::end_read(hw, addr);
                return Err(wrong_read_len(m, len));
            }
            let reg = Registration { pin: Some(&z.pin), ..Registration::on(hw, addr, None) };
            Ok(Pinned { zspage: z, info, obj, loc, len, reg })
        })();
        if pinned.is_err() {
            z.pin.unpin();
        }
        pinned
    }

    /// Ends a read of the object of `h` begun by `pin_object`, re-validating the handle.
    fn unpin_object(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Result<()> {
        let addr = h as *const AtomicUsize as usize;
        let (loc, z) = self.resolve(h.load(Ordering::Acquire))?;
        let (pos, _) = self.check_role(loc)?;
        let info = &self.classes[pos].info;
        let hw = if info.huge {
            self.check_place(z, loc)?;
            &z.huge_header
        } else {
            self.arena.word_at(loc.offset())
        };
        if let Some(m) = mem_len {
            let len = header::len(hw.load(Ordering::Acquire));
            if m != len {
                return Err(wrong_read_len(m, len));
            }
        }
        end_registration(hw, addr)?;
        if info.huge {
            z.pin.unpin();
        }
        Ok(())
    }

    /// Where the object of `h` is.
    pub(crate) fn locate_word(&self, h: &AtomicUsize) -> Result<ObjectLocation> {
        let p = self.pin_object(h, None)?;
        // The registration keeps the object, hence its zspage, where it is while we look.
        let placed = self.check_place(p.zspage, p.loc);
        let generation = p.zspage.live_generation();
        p.release();
        placed?;
        Ok(ObjectLocation {
            zspage: p.loc.slot,
            generation: generation.expect("a pinned zspage holding an object is live"),
            index: p.obj,
        })
    }

    pub(crate) fn object_len(&self, h: &AtomicUsize) -> Result<usize> {
        let p = self.pin_object(h, None)?;
        p.release();
        Ok(p.len)
    }

    /// Copies the object of `h` into `out`. `known`: the handle's word hint and the object's
    /// length as a safe handle knows them, which lets the common case start without loading `h`.
    fn read_word_into(
        &self,
        h: &AtomicUsize,
        known: Option<(usize, usize)>,
        out: &mut [u8],
    ) -> Result<usize> {
        let t = ThreadShard::current();
        if let Some((hint, len)) = known.filter(|&(_, len)| len <= out.len()) {
            if let Some(reg) = self.announce_in_place(hint, h, len, t) {
                // SAFETY: announced, so the `len` payload bytes after the header (within its
                // page: `announce_in_place` takes only objects that do not cross one) are the
                // object's and nobody writes them meanwhile; `out` holds at least `len` bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(payload_of(reg.header), out.as_mut_ptr(), len)
                };
                self.access.record_read_by(t, false, 0);
                reg.release();
                return Ok(len);
            }
        }
        let fast = match known {
            Some((hint, len)) => self.pin_fast_at(hint, h, Some(len), t),
            None => self.pin_fast_at(h.load(Ordering::Acquire), h, None, t),
        };
        if let Some(p) = fast {
            if p.len > out.len() {
                p.release();
                return Err(buffer_too_small(out.len(), p.len));
            }
            // SAFETY: registered, so the `len` payload bytes after the header (within its page:
            // `pin_fast` takes only objects that do not cross one) are the object's and nobody
            // writes them meanwhile; `out` holds at least `len` bytes.
            unsafe { std::ptr::copy_nonoverlapping(p.in_place(), out.as_mut_ptr(), p.len) };
            self.access.record_read_by(t, false, 0);
            p.release();
            return Ok(p.len);
        }
        let p = self.pin_slow(h, None)?;
        if out.len() < p.len {
            p.release();
            return Err(buffer_too_small(out.len(), p.len));
        }
        let layout = self.pinned_layout(&p);
        self.copy_pieces_out(&layout, &mut out[..p.len]);
        self.access.record_read(layout.spanning, if layout.spanning { p.len as u64 } else { 0 });
        p.release();
        Ok(p.len)
    }

    /// Frees the object of `h`, then empties `h` (an empty `h`: nothing to do).
    pub(crate) fn free_word(&self, h: &AtomicUsize) -> Result<()> {
        self.free_word_from(h, None)
    }

    /// `free_word`, starting from `guess` (a safe handle's hint) instead of loading `h` first:
    /// the class lock is taken while `h`'s line is still on its way, and `h` is checked against
    /// the guess under the lock, as it is against a loaded word.
    pub(crate) fn free_word_from(&self, h: &AtomicUsize, mut guess: Option<usize>) -> Result<()> {
        let addr = h as *const AtomicUsize as usize;
        loop {
            let word = guess.take().unwrap_or_else(|| h.load(Ordering::Acquire));
            if word == 0 {
                return Ok(());
            }
            let (loc, z, class) = match self.resolve_class(word) {
                Ok(r) => r,
                // Compaction moved the object and released the old zspage since the load.
                Err(_) if h.load(Ordering::Acquire) != word => continue,
                Err(e) => return Err(e),
            };
            let mut st = class.lock();
            if h.load(Ordering::Acquire) != word {
                continue; // compaction moved it before we took the lock
            }
            let (obj, hw) = self.check_locked(z, loc, class)?;
            let len = header::try_free(hw, addr, size_class::free_head(z), hazard::in_use())
                .map_err(refusal)?;
            self.object_freed(&mut st, class, loc.slot, z, obj, len);
            if st.counts[GROUP_EMPTY] != 0 {
                self.release_deferred(&mut st, class);
            }
            h.store(0, Ordering::Release);
            return Ok(());
        }
    }

    /// `resolve` plus the class the zspage belonged to when looked at (to be locked, then
    /// confirmed by `check_locked`).
    fn resolve_class(&self, word: usize) -> Result<(Location, &Zspage, &SizeClass)> {
        let (loc, z) = self.resolve(word)?;
        let Some(class) = self.classes.get(z.class_pos()) else {
            return Err(Error::InvalidHandle("no such class"));
        };
        Ok((loc, z, class))
    }

    /// `check_place` under the lock of `class`, which must still be the zspage's class. Returns
    /// the object index and its header word.
    fn check_locked<'a>(
        &'a self,
        z: &'a Zspage,
        loc: Location,
        class: &SizeClass,
    ) -> Result<(u32, &'a AtomicU64)> {
        let (pos, obj) = self.check_place(z, loc)?;
        if !std::ptr::eq(&self.classes[pos], class) {
            return Err(Error::InvalidHandle("stale handle: its object was freed"));
        }
        Ok((obj, self.header_at(z, &class.info, loc)))
    }

    fn move_word(&self, from: &AtomicUsize, to: &AtomicUsize) -> Result<()> {
        let (from_addr, to_addr) = (from as *const _ as usize, to as *const _ as usize);
        if from_addr == to_addr {
            return Ok(());
        }
        if to_addr >= header::ADDR_LIMIT {
            return Err(Error::InvalidArgument("destination handle address does not fit".into()));
        }
        if to.load(Ordering::Acquire) != 0 {
            return Err(Error::HandleInUse);
        }
        loop {
            let word = from.load(Ordering::Acquire);
            let (loc, z, class) = match self.resolve_class(word) {
                Ok(r) => r,
                // Compaction moved the object and released the old zspage since the load.
                Err(_) if word != 0 && from.load(Ordering::Acquire) != word => continue,
                Err(e) => return Err(e),
            };
            let _class_lock = class.lock();
            if from.load(Ordering::Acquire) != word {
                continue;
            }
            let (_, hw) = self.check_locked(z, loc, class)?;
            let cur = header::claim_owned(hw, from_addr, hazard::in_use()).map_err(refusal)?;
            // Claimed: no reader changes the word, so a plain store ends the claim.
            hw.store(header::encode(to_addr, header::len(cur)), Ordering::Release);
            to.store(word, Ordering::Release);
            from.store(0, Ordering::Release);
            return Ok(());
        }
    }
}

fn buffer_too_small(buffer: usize, object: usize) -> Error {
    Error::InvalidArgument(format!(
        "buffer of {buffer} bytes is smaller than the object ({object} bytes)"
    ))
}

fn wrong_read_len(given: usize, stored: usize) -> Error {
    Error::InvalidArgument(format!("read length {given} differs from the stored length {stored}"))
}

/// Ends the reader registration of the handle at `addr` on header `hw`.
fn end_registration(hw: &AtomicU64, addr: usize) -> Result<()> {
    end_counted_or_announced(hw, addr).map_err(end_refusal)
}

/// Ends one section on the object owned by `addr` at header `hw`, begun by any thread: a
/// counted one, else one announced in some thread's slot (the contract lets any thread end a
/// section, and sections of one handle are alike).
fn end_counted_or_announced(hw: &AtomicU64, addr: usize) -> std::result::Result<(), Refusal> {
    header::end_read(hw, addr).or_else(|r| {
        let announced = header::check_owner(hw.load(Ordering::Acquire), addr).is_ok()
            && hazard::retract_any(
                hazard::in_use(),
                hazard::announcement(header::address_of(hw), addr),
            );
        if announced {
            Ok(())
        } else {
            Err(r)
        }
    })
}

/// Why a section's end was refused: a header without this handle's reader has no section open.
fn end_refusal(r: Refusal) -> Error {
    match r {
        Refusal::Busy => Error::InvalidArgument("no read section in progress".into()),
        other => refusal(other),
    }
}

fn refusal(r: Refusal) -> Error {
    match r {
        Refusal::Free => Error::InvalidHandle("stale handle: its object was freed"),
        Refusal::OtherOwner => {
            Error::InvalidHandle("handle does not own this object (stale copy, foreign or garbage)")
        }
        Refusal::Busy | Refusal::Claimed => Error::Busy,
    }
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("name", &self.name)
            .field("config", &self.config)
            .field("total_pages", &self.total_pages())
            .finish()
    }
}

/// An open read section: the object's bytes. Dropping it ends the section.
pub struct ReadSection<'a> {
    ptr: *const u8,
    len: usize,
    registration: Registration<'a>,
}

impl Deref for ReadSection<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the object is pinned until drop (no migration, no free); writes need `&mut
        // Handle`, which the section's borrow excludes; `ptr` is in the page or the local copy
        // (borrowed for the section's lifetime) and covers `len` bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for ReadSection<'_> {
    #[inline]
    fn drop(&mut self) {
        self.registration.release();
    }
}

/// An open scatter-gather read section. Dropping it ends the section.
pub struct SgSection<'a> {
    pool: &'a Pool,
    layout: Layout,
    pinned: Pinned<'a>,
}

impl SgSection<'_> {
    /// One segment when the object is contiguous, two when it crosses a page boundary.
    pub fn segments(&self) -> Vec<&[u8]> {
        let (segs, n) = self.pool.sg_segments(&self.layout);
        segs[..n]
            .iter()
            // SAFETY: as `ReadSection::deref`: pinned, unwritable while borrowed, in the page.
            .map(|&(p, l)| unsafe { std::slice::from_raw_parts(p, l) })
            .collect()
    }

    /// The kernel's spanning rule for this object.
    pub fn spanning(&self) -> bool {
        self.layout.spanning
    }
}

impl Drop for SgSection<'_> {
    fn drop(&mut self) {
        self.pinned.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A read section announces itself in this thread's slot; one left open when its pool goes
    /// away (a broken contract) is retracted with the mapping, so it cannot make a header at the
    /// same address in a later pool look read forever.
    #[test]
    fn announces_are_retracted_with_their_pool() {
        let mine = || ThreadShard::current().owned_index().map(hazard::slot).expect("owned");
        let word = AtomicUsize::new(0);
        let mut local = vec![0u8; 4104];
        {
            let pool = Pool::new(PoolConfig::default()).unwrap();
            // SAFETY: `word` outlives the pool's use of it; `local` holds a page plus a header.
            unsafe {
                pool.store_raw(&word, &[7; 100]).unwrap();
                pool.read_begin_raw(&word, 100, local.as_mut_ptr()).unwrap();
            }
            assert_ne!(mine().load(Ordering::Relaxed), 0, "the section is announced");
        }
        assert_eq!(mine().load(Ordering::Relaxed), 0, "retracted when the pool was dropped");
    }

    /// A safe handle reads through its hint (the word when stored) without loading its slot;
    /// once compaction has moved the object the hint names a freed slot, the fast path fails
    /// and the read follows the slot word. Every read still returns the object's bytes.
    #[test]
    fn a_stale_hint_falls_back_to_the_slot_word() {
        let pool = Pool::new(PoolConfig::default()).unwrap();
        let data = |i: usize| vec![i as u8; 700];
        let mut hs: Vec<_> = (0..40).map(|i| Some(pool.store(&data(i)).unwrap())).collect();
        for h in hs.iter_mut().step_by(2) {
            h.take(); // leave every zspage half empty
        }
        pool.compact();
        let moved = hs.iter().flatten().filter(|h| h.word() != h.hint()).count();
        assert!(moved > 0, "compaction moved none of the objects");
        let before = pool.stats().reads;
        let mut local = vec![0u8; 4096];
        let mut out = vec![0u8; 700];
        for (i, h) in hs.iter().enumerate().filter_map(|(i, h)| h.as_ref().map(|h| (i, h))) {
            assert_eq!(&*pool.read(h, &mut local).unwrap(), &data(i)[..]);
            assert_eq!(pool.read_into(h, &mut out), Ok(700));
            assert_eq!(out, data(i));
            assert_eq!(pool.read_to_vec(h).unwrap(), data(i));
        }
        assert_eq!(pool.stats().reads, before + 3 * 20);
    }

    /// A free that empties a zspage some reader still pins keeps the zspage (listed as empty)
    /// instead of releasing pages the reader may touch; the next free or compaction of the class
    /// releases it once unpinned.
    #[test]
    fn release_of_a_pinned_empty_zspage_is_deferred() {
        let pool = Pool::new(PoolConfig::default()).unwrap();
        let len = 3000;
        let h = pool.store(&vec![7; len]).unwrap();
        let pages = pool.total_pages();
        let word = h.word();
        let loc = Location::decode(word).unwrap();
        let z = pool.zspage(loc.slot);
        let pos = z.class_pos();
        assert!(z.pin.try_pin(), "a reader pins the zspage before registering");
        drop(h);
        assert_eq!(pool.total_pages(), pages, "pinned: pages kept");
        assert_eq!(pool.classes[pos].lock().counts[GROUP_EMPTY], 1, "listed as empty");
        z.pin.unpin();
        let other = pool.store(&vec![8; len]).unwrap();
        assert_eq!(
            other.location().unwrap().zspage,
            loc.slot,
            "a store of the class reuses the empty zspage (the last group it looks at)"
        );
        drop(other);
        assert_eq!(pool.total_pages(), 0, "unpinned: the emptying free releases it");
        let h = pool.store(&vec![9; len]).unwrap();
        let z = pool.zspage(Location::decode(h.word()).unwrap().slot);
        assert!(z.pin.try_pin());
        drop(h);
        z.pin.unpin();
        assert_eq!(pool.total_pages(), pages, "still listed after the unpin");
        pool.compact();
        assert_eq!(pool.total_pages(), 0, "compaction releases deferred zspages");
        assert_eq!(pool.class_stats().iter().map(|c| c.fullness[GROUP_EMPTY]).sum::<u64>(), 0);
    }
}
