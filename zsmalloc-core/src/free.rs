//! Frees (mainline `zs_free`) and handle moves: the object's header is claimed (no reader may
//! hold it) under its class lock, then the object is pushed on its zspage's freelist or handed to
//! another handle word; and the release of zspages that empty.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::announce;
use crate::arena::Pfn;
use crate::class_table::ClassInfo;
use crate::config::MAX_CHAIN_SIZE;
use crate::error::{Error, Result};
use crate::header;
use crate::payload::Payload;
use crate::placement::{Place, WORD, ZSPAGE};
use crate::pool::Pool;
use crate::size_class::{self, ClassState, SizeClass};
use crate::zspage::{Zspage, GROUP_EMPTY};

impl<P: Payload> Pool<P> {
    /// Frees the object of `h` and empties `h` (an empty handle: no-op).
    ///
    /// # Safety
    /// `h` is a handle word given to this or another pool's raw layer, or any other 8-aligned
    /// word (garbage is refused, never dereferenced).
    pub unsafe fn free_raw(&self, h: &AtomicUsize) -> Result<()> {
        self.free_word(h)
    }

    /// Moves ownership of the object of `from` to the empty handle word `to`; `from` empties.
    ///
    /// # Safety
    /// `to` obeys the contract of [`Pool::store_raw`] from now on.
    pub unsafe fn handle_move_raw(&self, from: &AtomicUsize, to: &AtomicUsize) -> Result<()> {
        self.move_word(from, to)
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
            // The zspage the word names and its class, to lock.
            let (z, class) = match self.place::<WORD>(word, None) {
                Ok(p) => (p.zspage.expect("found at WORD"), p.class),
                // Compaction moved the object and released the old zspage since the load.
                Err(_) if h.load(Ordering::Acquire) != word => continue,
                Err(e) => return Err(Error::InvalidHandle(e)),
            };
            let mut st = class.lock();
            if h.load(Ordering::Acquire) != word {
                continue; // compaction moved it before we took the lock
            }
            let (p, hw) = self.locked_object(word, z, class)?;
            let len = header::try_free(hw, addr, size_class::free_head(z), announce::in_use())
                .map_err(header::Refusal::into_error)?;
            self.object_freed(&mut st, class, p.loc.entry, z, p.obj, len);
            if st.counts[GROUP_EMPTY] != 0 {
                self.release_deferred(&mut st, class);
            }
            h.store(0, Ordering::Release);
            return Ok(());
        }
    }

    pub(crate) fn move_word(&self, from: &AtomicUsize, to: &AtomicUsize) -> Result<()> {
        let (from_addr, to_addr) = (from as *const _ as usize, to as *const _ as usize);
        // A move onto itself changes nothing, but only for a handle that owns a live object of
        // this pool: it is validated like any other.
        let same = from_addr == to_addr;
        if to_addr >= header::ADDR_LIMIT {
            return Err(Error::InvalidArgument("destination handle address does not fit".into()));
        }
        if !same && to.load(Ordering::Acquire) != 0 {
            return Err(Error::HandleInUse);
        }
        loop {
            let word = from.load(Ordering::Acquire);
            let (z, class) = match self.place::<WORD>(word, None) {
                Ok(p) => (p.zspage.expect("found at WORD"), p.class),
                // Compaction moved the object and released the old zspage since the load.
                Err(_) if word != 0 && from.load(Ordering::Acquire) != word => continue,
                Err(e) => return Err(Error::InvalidHandle(e)),
            };
            let _class_lock = class.lock();
            if from.load(Ordering::Acquire) != word {
                continue;
            }
            let (_, hw) = self.locked_object(word, z, class)?;
            if same {
                return header::check_owner(hw.load(Ordering::Acquire), from_addr)
                    .map_err(header::Refusal::into_error);
            }
            let cur = header::claim_owned(hw, from_addr, announce::in_use())
                .map_err(header::Refusal::into_error)?;
            // Claimed: no reader changes the word, so a plain store ends the claim.
            hw.store(header::encode(to_addr, header::len(cur)), Ordering::Release);
            to.store(word, Ordering::Release);
            from.store(0, Ordering::Release);
            return Ok(());
        }
    }

    /// Bookkeeping once object `obj` of the zspage at table entry `entry` is free (its header word
    /// already links the freelist): counters, fullness group, release of an emptied zspage. Caller
    /// holds the class lock.
    pub(crate) fn object_freed(
        &self,
        st: &mut ClassState,
        class: &SizeClass,
        entry: u32,
        z: &Zspage,
        obj: u32,
        len: usize,
    ) {
        size_class::obj_freed(z, obj);
        st.obj_inuse -= 1;
        st.bytes_stored -= len as u64;
        if z.inuse.load(Ordering::Relaxed) != 0 {
            st.fix_group(&self.zspages, entry, z, class.fullness());
        } else if z.pin.try_lock_migration() {
            st.remove(&self.zspages, entry);
            self.release_zspage(st, &class.info, entry);
        } else {
            st.fix_group(&self.zspages, entry, z, class.fullness()); // to the empty group, deferred
        }
    }

    /// Releases an empty, unlisted zspage (mainline `free_zspage`). Caller holds the class lock
    /// and the zspage's migration lock, which this releases once the zspage is dead.
    pub(crate) fn release_zspage(&self, st: &mut ClassState, info: &ClassInfo, entry: u32) {
        let z = self.zspage(entry);
        z.retire();
        z.pin.unlock_migration();
        let mut pages = [0 as Pfn; MAX_CHAIN_SIZE as usize];
        let n = info.pages_per_zspage as usize;
        for (i, p) in pages[..n].iter_mut().enumerate() {
            *p = z.page(i);
        }
        self.arena.free_zspage(&pages[..n], info.order);
        self.zspages.give_back(entry);
        self.pages_allocated.fetch_sub(u64::from(info.zspage_pages()), Ordering::AcqRel);
        st.obj_allocated -= u64::from(info.objs_per_zspage);
        st.zspages -= 1;
    }

    /// Releases the empty zspages a free had to leave because readers pinned them.
    pub(crate) fn release_deferred(&self, st: &mut ClassState, class: &SizeClass) {
        while let Some(entry) =
            st.find_in(&self.zspages, std::iter::once(GROUP_EMPTY), |z| z.pin.try_lock_migration())
        {
            st.remove(&self.zspages, entry);
            self.release_zspage(st, &class.info, entry);
        }
    }

    /// The object `word` names, checked (`ZSPAGE`) under the lock of `class`, which must still be
    /// the class of `z`, the zspage the word names: where it is and its header word.
    #[inline(always)]
    pub(crate) fn locked_object<'a>(
        &'a self,
        word: usize,
        z: &'a Zspage,
        class: &SizeClass,
    ) -> Result<(Place<'a>, &'a AtomicU64)> {
        let p = self.place::<ZSPAGE>(word, Some(z)).map_err(Error::InvalidHandle)?;
        if !std::ptr::eq(p.class, class) {
            return Err(Error::InvalidHandle("stale handle: its object was freed"));
        }
        Ok((p, self.header_at(z, &class.info, p.loc)))
    }
}

#[cfg(test)]
mod tests {
    use crate::handle_word::Location;
    use crate::zspage::GROUP_EMPTY;
    use crate::{Pool, PoolConfig};

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
        let z = pool.zspage(loc.entry);
        let pos = z.class_pos();
        assert!(z.pin.try_pin(), "a reader pins the zspage before registering");
        drop(h);
        assert_eq!(pool.total_pages(), pages, "pinned: pages kept");
        assert_eq!(pool.classes[pos].lock().counts[GROUP_EMPTY], 1, "listed as empty");
        z.pin.unpin();
        let other = pool.store(&vec![8; len]).unwrap();
        assert_eq!(
            other.location().unwrap().zspage,
            loc.entry,
            "a store of the class reuses the empty zspage (the last group it looks at)"
        );
        drop(other);
        assert_eq!(pool.total_pages(), 0, "unpinned: the emptying free releases it");
        let h = pool.store(&vec![9; len]).unwrap();
        let z = pool.zspage(Location::decode(h.word()).unwrap().entry);
        assert!(z.pin.try_pin());
        drop(h);
        z.pin.unpin();
        assert_eq!(pool.total_pages(), pages, "still listed after the unpin");
        pool.compact();
        assert_eq!(pool.total_pages(), 0, "compaction releases deferred zspages");
        assert_eq!(pool.class_stats().iter().map(|c| c.fullness[GROUP_EMPTY]).sum::<u64>(), 0);
    }
}
