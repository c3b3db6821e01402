//! Stores: allocation of an object in its class (mainline `zs_malloc`), its header and bytes,
//! and the publication of its handle word; writes of a `malloc`ed object's bytes.

use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::arena::Pfn;
use crate::class_table::{ClassInfo, HDR};
use crate::config::MAX_CHAIN_SIZE;
use crate::error::{Error, Result};
use crate::handle::Handle;
use crate::header;
use crate::payload::Payload;
use crate::pool::Pool;
use crate::size_class::{self, ClassState};
use crate::zspage::GROUP_FULL;

/// Who owns the handle word a store publishes in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Word {
    /// A handle slot just taken by this thread: nobody else writes it.
    Slot,
    /// A caller's raw word: another thread may (wrongly) store into it at the same time.
    Caller,
}

impl<P: Payload> Pool<P> {
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

    fn check_len(&self, len: usize) -> Result<()> {
        if len == 0 {
            return Err(Error::InvalidArgument("object length is 0".into()));
        }
        let max = self.table.max_size() as usize;
        if len > max {
            return Err(Error::TooLarge { len, max });
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
        let (entry, new) = match st.fullest_in(0, GROUP_FULL) {
            Some(e) => (e, false),
            None => (self.create_zspage(&mut st, pos)?, true),
        };
        let z = self.zspage(entry);
        let obj =
            size_class::obj_malloc(z, header::encode(addr, len), |o| self.header_word(z, info, o));
        let group = class.fullness().group(z.inuse.load(Ordering::Relaxed));
        if new {
            st.insert(&self.zspages, entry, group);
        } else {
            st.fix_group(&self.zspages, entry, z, class.fullness());
        }
        st.obj_inuse += 1;
        st.bytes_stored += len as u64;
        class.next_obj.store(self.next_object(&st, info), Ordering::Relaxed);
        let loc = self.locate(entry, z, info, obj);
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
            self.object_freed(&mut st, class, entry, z, obj, len);
            return Err(Error::HandleInUse);
        }
        Ok(())
    }

    fn create_zspage(&self, st: &mut ClassState, pos: usize) -> Result<u32> {
        let info = &self.classes[pos].info;
        // Pages counted: units << order (the multi-page band's zspages are compound pages).
        let n = u64::from(info.zspage_pages());
        let limit = self.config.mem_limit_pages;
        let reserved =
            self.pages_allocated.fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                (limit == 0 || p + n <= limit).then_some(p + n)
            });
        let Ok(before) = reserved else {
            return Err(Error::OutOfMemory);
        };
        let mut pages = [0 as Pfn; MAX_CHAIN_SIZE as usize];
        let pages = &mut pages[..info.pages_per_zspage as usize];
        let entry = if self.arena.alloc_zspage(pages, pos, info.order) {
            match self.zspages.take() {
                Some(entry) if self.payload.units_taken(pages, info) => Some(entry),
                taken => {
                    if let Some(entry) = taken {
                        self.zspages.give_back(entry);
                    }
                    self.arena.free_zspage(pages, info.order);
                    None
                }
            }
        } else {
            None
        };
        let Some(entry) = entry else {
            self.pages_allocated.fetch_sub(n, Ordering::AcqRel);
            return Err(Error::OutOfMemory);
        };
        self.pages_peak.fetch_max(before + n, Ordering::Relaxed);
        self.zspage(entry).init(pos, pages);
        st.obj_allocated += u64::from(info.objs_per_zspage);
        st.zspages += 1;
        Ok(entry)
    }

    /// Arena offset of the object the class's next store will take if nothing changes
    /// meanwhile (0: it will create a zspage). Caller holds the class lock.
    #[inline]
    pub(crate) fn next_object(&self, st: &ClassState, info: &ClassInfo) -> usize {
        let Some(entry) = st.fullest_in(0, GROUP_FULL) else {
            return 0;
        };
        let z = self.zspage(entry);
        let obj = size_class::free_head(z).unwrap_or_else(|| z.fresh.load(Ordering::Relaxed));
        self.locate(entry, z, info, obj).offset()
    }
}

/// The safe layer's stores and every write of bytes: a pool that keeps them.
impl Pool {
    /// Stores `data` (1..=[`Pool::max_object_size`] bytes) and returns the handle that owns it.
    pub fn store(&self, data: &[u8]) -> Result<Handle<&Pool>> {
        Self::new_handle(self, data.len(), Some(data))
    }

    /// Allocates an object of `len` bytes to be filled by [`Pool::write`].
    pub fn malloc(&self, len: usize) -> Result<Handle<&Pool>> {
        Self::new_handle(self, len, None)
    }

    /// `store` (with `data`) or `malloc` (without) into a handle slot taken for the new handle.
    fn new_handle<Q: Deref<Target = Pool>>(
        pool: Q,
        len: usize,
        data: Option<&[u8]>,
    ) -> Result<Handle<Q>> {
        let slot = pool.slots.take().ok_or(Error::OutOfMemory)?;
        match pool.alloc_publish(pool.slots.word(slot), len, data, Word::Slot) {
            Ok(()) => Ok(Handle::new(pool, slot, len)),
            Err(e) => {
                pool.slots.give_back(slot);
                Err(e)
            }
        }
    }

    /// Writes the whole object of a handle from `malloc` (`data.len()` must equal its length).
    pub fn write<Q: Deref<Target = Pool>>(&self, h: &mut Handle<Q>, data: &[u8]) -> Result<()> {
        self.same_pool(h.pool())?;
        self.write_word(h.slot_word_for_bytes(), data)
    }

    /// Writes the whole object of `h`.
    ///
    /// # Safety
    /// No read section of this object runs on another thread meanwhile (the bytes would race).
    pub unsafe fn write_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        self.write_word(h, data)
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
}
