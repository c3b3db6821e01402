//! The pool: placement, stores, frees, read sections and compaction (SPEC §3).
//!
//! Locking order and ownership:
//! - A class lock (`SizeClass::lock`) covers that class's fullness lists, its zspages' freelists
//!   and counters, zspage creation and release, and compaction of the class. No code holds two
//!   class locks. The page arena's and zspage table's own mutexes nest inside a class lock and
//!   are held only for a list push/pop.
//! - Readers take no lock: they pin the zspage (`pin.rs`), then register on the object's header
//!   (`header.rs`). A pinned zspage is neither migrated nor released; an object with readers is
//!   not freed (`Error::Busy`).
//! - A store reserves its slot and writes the header under the class lock, pins the zspage, then
//!   copies the payload and publishes the handle word outside the lock.
//! - Compaction moves objects only out of zspages it could lock for migration (no pins), and
//!   rewrites each moved object's handle word (Release) before unlocking the source.
//! - Every owner address in a header is a live handle word: the safe layer's slots live as long
//!   as the pool; raw-layer callers promise it (see `store_raw`). Compaction relies on this.

use std::ops::Deref;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

use crate::arena::{PageArena, Pfn};
use crate::class_table::{ClassInfo, ClassTable, HDR};
use crate::config::PoolConfig;
use crate::error::{Error, Result};
use crate::handle::{Handle, HandleSlots, Location};
use crate::header::{self, Refusal};
use crate::pin;
use crate::size_class::{self, ClassState, SizeClass};
use crate::stats::{AccessCounters, ClassStats, PoolStats};
use crate::zspage::{Zspage, ZspageTable, GROUP_FULL};

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

/// A validated, pinned object: both the zspage pin and a header reader are held until
/// `release`, so ending a section needs no second lookup.
struct Pinned<'a> {
    zspage: &'a Zspage,
    info: &'a ClassInfo,
    loc: Location,
    len: usize,
    header: &'a AtomicU64,
    owner: usize,
}

impl Pinned<'_> {
    fn release(&self) {
        // Cannot fail: this reader registration is ours and keeps the header unchanged.
        let _ = header::end_read(self.header, self.owner);
        self.zspage.pin.unpin();
    }
}

/// Segments of a scatter-gather read: one or two `(address, length)` pairs.
pub type SgSegments = ([(*const u8, usize); 2], usize);

/// A zsmalloc pool.
pub struct Pool {
    name: String,
    tag: u8,
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

static NEXT_TAG: AtomicU8 = AtomicU8::new(0x5a);

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
            tag: NEXT_TAG.fetch_add(0x3b, Ordering::Relaxed),
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
        match pool.store_word(pool.slots.word(slot), data) {
            Ok(()) => Ok(Handle::new(pool, slot)),
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
        match pool.alloc_word(pool.slots.word(slot), len) {
            Ok(()) => Ok(Handle::new(pool, slot)),
            Err(e) => {
                pool.slots.give_back(slot);
                Err(e)
            }
        }
    }

    /// Writes the whole object of a handle from `malloc` (`data.len()` must equal its length).
    pub fn write<P: Deref<Target = Pool>>(&self, h: &mut Handle<P>, data: &[u8]) -> Result<()> {
        self.same_pool(h.pool())?;
        self.write_word(h.slot_word(), data)
    }

    /// Begins a read section: the object's bytes, in place when contiguous, otherwise copied
    /// into `local_copy` (at least `len + 8` bytes; a page always suffices).
    pub fn read<'a, P: Deref<Target = Pool>>(
        &'a self,
        h: &'a Handle<P>,
        local_copy: &'a mut [u8],
    ) -> Result<ReadSection<'a>> {
        self.same_pool(h.pool())?;
        let p = self.pin_object(h.slot_word(), None)?;
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
        Ok(ReadSection { ptr, pinned: p })
    }

    /// Copies the object into `out` (at least its length); returns the length.
    pub fn read_into<P: Deref<Target = Pool>>(
        &self,
        h: &Handle<P>,
        out: &mut [u8],
    ) -> Result<usize> {
        self.same_pool(h.pool())?;
        self.read_word_into(h.slot_word(), out)
    }

    /// The object's bytes as a new vector.
    pub fn read_to_vec<P: Deref<Target = Pool>>(&self, h: &Handle<P>) -> Result<Vec<u8>> {
        self.same_pool(h.pool())?;
        let len = self.object_len(h.slot_word())?;
        let mut v = vec![0; len];
        self.read_word_into(h.slot_word(), &mut v)?;
        Ok(v)
    }

    /// Begins a scatter-gather read: one or two segments, nothing copied.
    pub fn read_sg<'a, P: Deref<Target = Pool>>(
        &'a self,
        h: &'a Handle<P>,
    ) -> Result<SgSection<'a>> {
        self.same_pool(h.pool())?;
        let p = self.pin_object(h.slot_word(), None)?;
        let layout = self.layout(p.zspage, p.info, p.loc.obj, p.len);
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
        self.store_word(h, data)
    }

    /// Allocates an object of `len` bytes for `h`, to be filled by [`Pool::write_raw`].
    ///
    /// # Safety
    /// As [`Pool::store_raw`].
    pub unsafe fn malloc_raw(&self, h: &AtomicUsize, len: usize) -> Result<()> {
        self.alloc_word(h, len)
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
    pub unsafe fn read_begin_raw(
        &self,
        h: &AtomicUsize,
        mem_len: usize,
        local_copy: *mut u8,
    ) -> Result<*const u8> {
        let p = self.pin_object(h, Some(mem_len))?;
        Ok(self.begin_copy(&p, local_copy))
    }

    /// The read-section rule of `copy` mode for a pinned object: in place when contiguous, else
    /// header and object copied into `local_copy`, returning `local_copy + HDR`.
    ///
    /// # Safety
    /// `local_copy` is writable for `p.len + HDR` bytes.
    #[inline]
    unsafe fn begin_copy(&self, p: &Pinned<'_>, local_copy: *mut u8) -> *const u8 {
        let layout = self.layout(p.zspage, p.info, p.loc.obj, p.len);
        if !layout.spanning {
            self.access.record_read(false, 0);
            let first = layout.pieces[0];
            return self.arena.page_ptr(first.pfn).add(first.offset);
        }
        let hdr = p.header.load(Ordering::Acquire);
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
        self.read_word_into(h, out)
    }

    /// Ends a read section begun by `read_begin_raw` or `read_sg_begin_raw`.
    ///
    /// # Safety
    /// `h` is the handle the section was begun on.
    pub unsafe fn read_end_raw(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Result<()> {
        self.unpin_object(h, mem_len)
    }

    /// Begins a scatter-gather read of `mem_len` bytes: the segment count and the segments.
    ///
    /// # Safety
    /// The segments are valid until `read_end_raw`; they must not be written.
    pub unsafe fn read_sg_begin_raw(&self, h: &AtomicUsize, mem_len: usize) -> Result<SgSegments> {
        let p = self.pin_object(h, Some(mem_len))?;
        let layout = self.layout(p.zspage, p.info, p.loc.obj, p.len);
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
        (self.zspages.heap_bytes() + classes, self.slots.heap_bytes())
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
        let mut freed = 0;
        let mut dst: Option<u32> = None;
        while st.can_compact(info) > 0 {
            let d = match dst {
                Some(d) => d,
                None => match st.first_in((1..GROUP_FULL).rev()) {
                    Some(d) => {
                        st.remove(&self.zspages, d);
                        dst = Some(d);
                        d
                    }
                    None => break,
                },
            };
            // The first source (groups 1..=10, each from its head) no reader has pinned.
            let Some(s) = st.find_in(&self.zspages, 1..GROUP_FULL, |z| z.pin.try_lock_migration())
            else {
                break;
            };
            st.remove(&self.zspages, s);
            let (src, dz) = (self.zspage(s), self.zspage(d));
            self.migrate(info, src, d, dz, buf);
            src.pin.unlock_migration();
            if src.inuse.load(Ordering::Relaxed) == 0 {
                self.release_zspage(&mut st, info, s);
                freed += u64::from(info.pages_per_zspage);
            } else {
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

    /// Moves live objects of `src` (locked for migration) into `dst`, in increasing object
    /// index, until `dst` is full or `src` is empty (mainline `migrate_zspage`).
    fn migrate(&self, info: &ClassInfo, src: &Zspage, d: u32, dst: &Zspage, buf: &mut [u8]) {
        let src_gen = src.live_generation();
        let dst_gen = dst.live_generation().expect("destination zspage is live");
        debug_assert!(src_gen.is_some());
        for obj in 0..size_class::fresh(src) {
            let word = self.header_word(src, info, obj);
            // Reader bits on a zspage locked for migration belong to a reader that raced a free
            // and a page reuse and is backing out (it holds no pin here, and fails its own
            // generation check): the moved copy starts with none, so none can leak.
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
            let moved = Location { tag: self.tag, slot: d, generation: dst_gen, obj: new_obj };
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

    /// Allocates an object of `len` bytes owned by `h` and writes its header. Returns the pinned
    /// zspage and the object's location; the caller copies the payload, publishes, unpins.
    fn reserve(&self, h: &AtomicUsize, len: usize) -> Result<(&Zspage, &ClassInfo, Location)> {
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
        let mut st = class.lock();
        let (slot, new) = match st.first_in((0..GROUP_FULL).rev()) {
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
            st.fix_group(&self.zspages, slot, &class.fullness);
        }
        st.obj_inuse += 1;
        st.bytes_stored += len as u64;
        // No migration can hold this zspage: compaction of this class needs the lock we hold.
        z.pin.pin_wait();
        drop(st);
        let generation = z.live_generation().expect("zspage just used is live");
        Ok((z, info, Location { tag: self.tag, slot, generation, obj }))
    }

    /// Publishes a reserved object in `h` and unpins; undoes the reservation if `h` was filled
    /// concurrently by another thread.
    fn publish(&self, h: &AtomicUsize, z: &Zspage, loc: Location) -> Result<()> {
        let published = h.compare_exchange(0, loc.encode(), Ordering::AcqRel, Ordering::Acquire);
        if published.is_err() {
            // The header names `h` as owner; free through a word that carries the location.
            // Still pinned, so compaction cannot move the object (and rewrite `h`) meanwhile.
            let located = AtomicUsize::new(loc.encode());
            let undone = self.free_located(h, &located);
            z.pin.unpin();
            undone?;
            return Err(Error::HandleInUse);
        }
        z.pin.unpin();
        Ok(())
    }

    fn store_word(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        let (z, info, loc) = self.reserve(h, data.len())?;
        let layout = self.layout(z, info, loc.obj, data.len());
        // SAFETY: the object was just reserved for `h`, is pinned and not yet published.
        unsafe { self.copy_pieces_in(&layout, data) };
        self.access.record_write(layout.spanning);
        self.publish(h, z, loc)
    }

    fn alloc_word(&self, h: &AtomicUsize, len: usize) -> Result<()> {
        let (z, _info, loc) = self.reserve(h, len)?;
        self.publish(h, z, loc)
    }

    fn write_word(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        let p = self.pin_object(h, Some(data.len()))?;
        let layout = self.layout(p.zspage, p.info, p.loc.obj, p.len);
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
        let slot = if self.arena.alloc_pages(pages) {
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

    /// Releases an empty, unlisted zspage (mainline `free_zspage`). Caller holds the class lock.
    fn release_zspage(&self, st: &mut ClassState, info: &ClassInfo, slot: u32) {
        let z = self.zspage(slot);
        z.retire();
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

    /// Decodes and checks a handle word without pinning: the tag, the slot, its generation.
    fn resolve(&self, word: usize) -> Result<(Location, &Zspage, usize)> {
        let loc = Location::decode(word).ok_or(Error::InvalidHandle("not a handle word"))?;
        if loc.tag != self.tag {
            return Err(Error::InvalidHandle("handle belongs to another pool (or is garbage)"));
        }
        let z = self.zspages.get(loc.slot).ok_or(Error::InvalidHandle("no such zspage"))?;
        if z.live_generation() != Some(loc.generation) {
            return Err(Error::InvalidHandle("stale handle: its object was freed"));
        }
        let pos = z.class_pos();
        let info = &self.classes.get(pos).ok_or(Error::InvalidHandle("no such class"))?.info;
        if loc.obj >= info.objs_per_zspage {
            return Err(Error::InvalidHandle("object index out of range"));
        }
        Ok((loc, z, pos))
    }

    /// Pins the object of `h` for reading: zspage pin plus a header reader. Checks the stored
    /// length against `mem_len` when given.
    fn pin_object(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Result<Pinned<'_>> {
        let addr = h as *const AtomicUsize as usize;
        let (_, (loc, z, pos), _) = pin::pin_current(
            || h.load(Ordering::Acquire),
            |word| {
                if word == 0 {
                    return Err(Error::InvalidHandle("empty handle"));
                }
                let (loc, z, pos) = self.resolve(word)?;
                Ok(((loc, z, pos), &z.pin))
            },
        )?;
        let info = &self.classes[pos].info;
        let hw = self.header_word(z, info, loc.obj);
        let checked = (|| {
            if z.live_generation() != Some(loc.generation) || z.class_pos() != pos {
                return Err(Error::InvalidHandle("stale handle: its object was freed"));
            }
            if loc.obj >= size_class::fresh(z) {
                return Err(Error::InvalidHandle("object was never allocated"));
            }
            let len = header::begin_read(hw, addr).map_err(refusal)?;
            // A free racing with us may have released the zspage before our reader landed.
            if z.live_generation() != Some(loc.generation) {
                let _ = header::end_read(hw, addr);
                return Err(Error::InvalidHandle("stale handle: its object was freed"));
            }
            if let Some(m) = mem_len.filter(|&m| m != len) {
                let _ = header::end_read(hw, addr);
                return Err(Error::InvalidArgument(format!(
                    "read length {m} differs from the stored length {len}"
                )));
            }
            Ok(len)
        })();
        match checked {
            Ok(len) => Ok(Pinned { zspage: z, info, loc, len, header: hw, owner: addr }),
            Err(e) => {
                z.pin.unpin();
                Err(e)
            }
        }
    }

    /// Ends a read of the object of `h` begun by `pin_object`.
    fn unpin_object(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Result<()> {
        let addr = h as *const AtomicUsize as usize;
        let word = h.load(Ordering::Acquire);
        if word == 0 {
            return Err(Error::InvalidHandle("empty handle"));
        }
        let (loc, z, pos) = self.resolve(word)?;
        let hw = self.header_word(z, &self.classes[pos].info, loc.obj);
        if let Some(m) = mem_len {
            let len = header::len(hw.load(Ordering::Acquire));
            if m != len {
                return Err(Error::InvalidArgument(format!(
                    "read length {m} differs from the stored length {len}"
                )));
            }
        }
        header::end_read(hw, addr).map_err(|r| match r {
            Refusal::Busy => Error::InvalidArgument("no read section in progress".into()),
            other => refusal(other),
        })?;
        z.pin.unpin();
        Ok(())
    }

    pub(crate) fn object_len(&self, h: &AtomicUsize) -> Result<usize> {
        let p = self.pin_object(h, None)?;
        p.release();
        Ok(p.len)
    }

    fn read_word_into(&self, h: &AtomicUsize, out: &mut [u8]) -> Result<usize> {
        let p = self.pin_object(h, None)?;
        if out.len() < p.len {
            p.release();
            return Err(Error::InvalidArgument(format!(
                "buffer of {} bytes is smaller than the object ({} bytes)",
                out.len(),
                p.len
            )));
        }
        let layout = self.layout(p.zspage, p.info, p.loc.obj, p.len);
        self.copy_pieces_out(&layout, &mut out[..p.len]);
        self.access.record_read(layout.spanning, if layout.spanning { p.len as u64 } else { 0 });
        p.release();
        Ok(p.len)
    }

    pub(crate) fn free_word(&self, h: &AtomicUsize) -> Result<()> {
        self.free_located(h, h)
    }

    /// Frees the object that `loc_word` locates and `owner` owns, then empties `loc_word`.
    fn free_located(&self, owner: &AtomicUsize, loc_word: &AtomicUsize) -> Result<()> {
        let addr = owner as *const AtomicUsize as usize;
        loop {
            let word = loc_word.load(Ordering::Acquire);
            if word == 0 {
                return Ok(());
            }
            let (loc, z, pos) = match self.resolve(word) {
                Ok(r) => r,
                // Compaction moved the object and released the old zspage since the load.
                Err(_) if loc_word.load(Ordering::Acquire) != word => continue,
                Err(e) => return Err(e),
            };
            let class = &self.classes[pos];
            let info = &class.info;
            let mut st = class.lock();
            if loc_word.load(Ordering::Acquire) != word {
                continue; // compaction moved it before we took the lock
            }
            if z.live_generation() != Some(loc.generation) || z.class_pos() != pos {
                return Err(Error::InvalidHandle("stale handle: its object was freed"));
            }
            if loc.obj >= size_class::fresh(z) {
                return Err(Error::InvalidHandle("object was never allocated"));
            }
            let hw = self.header_word(z, info, loc.obj);
            let len = header::try_free(hw, addr, size_class::free_head(z)).map_err(refusal)?;
            size_class::obj_freed(z, loc.obj);
            st.obj_inuse -= 1;
            st.bytes_stored -= len as u64;
            if z.inuse.load(Ordering::Relaxed) == 0 {
                st.remove(&self.zspages, loc.slot);
                self.release_zspage(&mut st, info, loc.slot);
            } else {
                st.fix_group(&self.zspages, loc.slot, &class.fullness);
            }
            loc_word.store(0, Ordering::Release);
            return Ok(());
        }
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
            if word == 0 {
                return Err(Error::InvalidHandle("empty handle"));
            }
            let (loc, z, pos) = match self.resolve(word) {
                Ok(r) => r,
                // Compaction moved the object and released the old zspage since the load.
                Err(_) if from.load(Ordering::Acquire) != word => continue,
                Err(e) => return Err(e),
            };
            let class = &self.classes[pos];
            let _class_lock = class.lock();
            if from.load(Ordering::Acquire) != word {
                continue;
            }
            if loc.obj >= size_class::fresh(z) {
                return Err(Error::InvalidHandle("object was never allocated"));
            }
            let hw = self.header_word(z, &class.info, loc.obj);
            let cur = hw.load(Ordering::Acquire);
            header::check_owner(cur, from_addr).map_err(refusal)?;
            if header::readers(cur) != 0 {
                return Err(Error::Busy);
            }
            let moved = header::encode(to_addr, header::len(cur));
            hw.compare_exchange(cur, moved, Ordering::AcqRel, Ordering::Acquire)
                .map_err(|_| Error::Busy)?;
            to.store(word, Ordering::Release);
            from.store(0, Ordering::Release);
            return Ok(());
        }
    }
}

fn refusal(r: Refusal) -> Error {
    match r {
        Refusal::Free => Error::InvalidHandle("stale handle: its object was freed"),
        Refusal::OtherOwner => {
            Error::InvalidHandle("handle does not own this object (stale copy, foreign or garbage)")
        }
        Refusal::Busy => Error::Busy,
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
    pinned: Pinned<'a>,
}

impl Deref for ReadSection<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the object is pinned until drop (no migration, no free); writes need `&mut
        // Handle`, which the section's borrow excludes; `ptr` is in the page or the local copy
        // (borrowed for the section's lifetime) and covers `len` bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.pinned.len) }
    }
}

impl Drop for ReadSection<'_> {
    fn drop(&mut self) {
        self.pinned.release();
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
