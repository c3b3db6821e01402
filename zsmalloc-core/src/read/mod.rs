//! Read sections: a reader's begin makes the object stay put (neither freed nor moved) and hands
//! out its bytes; the end lets go.
//!
//! One begin ([`Pool::begin`]) and one end ([`Pool::end`]) serve both handle layers: the public
//! entries below only say which layer they are (`Layer`, `Ending`) and hand the result back in
//! the layer's form. Both dispatch on the pool's read mode, then each mode on the layer: `copy`
//! (mainline's, `copy.rs`), `map` (`map.rs`) and `contiguous` (`contiguous.rs`), with store and
//! free unchanged. The common case, an object in one page read in place, is every mode's, so the
//! begin parts by mode only after it (`begin_slow`); `contiguous` reads every non-huge object in
//! place, spanning ones included, so a raw section there skips that common case for its mode's
//! own (`contiguous.rs`). The end parts by mode only for a section it did not announce.
//!
//! The parts: `register.rs` registers a reader (every section kind begins there), `end.rs` ends
//! registrations, `whole.rs` the sections begun and ended in one call (copies out, queries),
//! `sg.rs` scatter-gather sections.

mod contiguous;
mod copy;
mod end;
mod map;
mod register;
mod sg;
mod whole;

use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::class_table::ClassInfo;
use crate::config::ReadMode;
use crate::error::{Error, Result};
use crate::handle::Handle;
use crate::open_section;
use crate::pool::Pool;

pub use sg::{SgSection, SgSegments};

pub(crate) use register::wrong_read_len;
use register::Registration;

/// The handle layer a section is begun through, and what it knows of the object.
#[derive(Clone, Copy)]
pub(crate) enum Layer<'h> {
    /// A safe handle: its slot word, the word when it was stored (a hint, which may be stale)
    /// and the object's length.
    Safe { word: &'h AtomicUsize, hint: usize, len: usize },
    /// A raw handle word and the length its caller gives (which must be the stored one).
    Raw { word: &'h AtomicUsize, mem_len: usize },
}

/// Where a spanning object may be copied: the caller's buffer and its length in bytes (for the
/// raw layer, whose caller promises `mem_len + HDR` bytes, `usize::MAX`).
#[derive(Clone, Copy)]
pub(crate) struct LocalCopy {
    pub ptr: *mut u8,
    pub len: usize,
}

/// A begun section: the object's bytes and the registration that holds them.
pub(crate) struct Begun<'a> {
    pub ptr: *const u8,
    pub len: usize,
    pub reg: Registration<'a>,
}

/// A section to end, as its layer knows it.
pub(crate) enum Ending<'a> {
    /// A safe section holds its registration and the address its begin handed out.
    Safe(&'a Registration<'a>, *const u8),
    /// A raw section is known by its handle word (and the length and the address its begin
    /// returned, null if unknown, when the caller gives them).
    Raw { word: &'a AtomicUsize, mem_len: Option<usize>, mem: *const u8 },
}

impl Pool {
    /// The one begin of a section that hands out the object's address: the common case inline
    /// (`copy_begin`: announced, in one page), then by read mode in `begin_slow`. A raw section
    /// in `contiguous` mode skips that common case, whose "in one page" test would fail every
    /// spanning object, and goes straight to its mode's own (`contiguous_begin`: any non-huge
    /// object announced in place); one out-of-line call site serves both, so the inline path
    /// of the other modes costs only the test of the mode.
    #[inline(always)]
    pub(crate) fn begin<'a>(&'a self, layer: Layer<'a>, copy: LocalCopy) -> Result<Begun<'a>> {
        self.copy_begin(layer, copy, self.config.read_mode != ReadMode::Contiguous)
    }

    /// The begin of a section the common case did not take, by read mode (each mode then by
    /// layer): `mem_len` is the raw layer's, `known` the safe layer's hint and length. Also the
    /// place a new mode's begin goes.
    #[inline(never)]
    pub(crate) fn begin_slow<'a>(
        &'a self,
        h: &'a AtomicUsize,
        mem_len: Option<usize>,
        known: Option<(usize, usize)>,
        copy: LocalCopy,
    ) -> Result<Begun<'a>> {
        match self.config.read_mode {
            // Only the raw layer passes NULL (a slice's pointer never is).
            ReadMode::Copy if copy.ptr.is_null() => match mem_len {
                Some(mem_len) => self.in_one_page_begin(h, mem_len),
                None => Err(Error::InvalidArgument("local copy is NULL".into())),
            },
            ReadMode::Copy => self.copy_begin_slow(h, mem_len, copy),
            ReadMode::Map => self.map_begin_slow(h, mem_len),
            ReadMode::Contiguous => self.contiguous_begin(h, mem_len, known),
        }
    }

    /// The one end of a section, by read mode (each mode then by layer). A section the common
    /// case announced holds only its announcement in every mode; `map` also releases the map
    /// slot of a section that has one.
    #[inline(always)]
    pub(crate) fn end(&self, ending: Ending<'_>) -> Result<()> {
        match ending {
            Ending::Safe(reg, mem) => {
                if let Some(slot) = reg.announced {
                    slot.store(0, Ordering::Release);
                    return Ok(());
                }
                self.end_safe_counted(reg, mem);
                Ok(())
            }
            Ending::Raw { word, mem_len, mem } => {
                if self.end_announced(word, mem_len) {
                    return Ok(());
                }
                match self.config.read_mode {
                    ReadMode::Copy | ReadMode::Contiguous => self.end_unannounced(word, mem_len),
                    ReadMode::Map => self.map_end_unannounced(word, mem_len, mem),
                }
            }
        }
    }

    /// The end of a safe section counted in its header (or pinned): `map` mode also releases
    /// its map slot, if it has one (`mem` is the address its begin handed out).
    #[cold]
    #[inline(never)]
    fn end_safe_counted(&self, reg: &Registration<'_>, mem: *const u8) {
        if self.config.read_mode == ReadMode::Map {
            self.map_release_at(reg.owner, mem);
        }
        reg.release();
    }

    /// The position of the class whose `info` this is, in `self.classes` (for the per-class
    /// counters): address arithmetic, no load.
    #[inline(always)]
    pub(crate) fn class_pos_of(&self, info: &ClassInfo) -> usize {
        let first = &self.classes[0].info as *const ClassInfo as usize;
        (info as *const ClassInfo as usize - first)
            / std::mem::size_of::<crate::size_class::SizeClass>()
    }

    // ---------------------------------------------------------------- safe layer

    /// Begins a read section: the object's bytes, in place when contiguous, otherwise copied
    /// into `local_copy` (at least `len + 8` bytes; a page always suffices).
    #[inline]
    pub fn read<'a, P: Deref<Target = Pool>>(
        &'a self,
        h: &'a Handle<P>,
        local_copy: &'a mut [u8],
    ) -> Result<ReadSection<'a>> {
        self.same_pool(h.pool())?;
        let layer = Layer::Safe { word: h.slot_word_for_read(), hint: h.hint(), len: h.len() };
        let copy = LocalCopy { ptr: local_copy.as_mut_ptr(), len: local_copy.len() };
        let b = self.begin(layer, copy)?;
        Ok(ReadSection { pool: self, ptr: b.ptr, len: b.len, registration: b.reg })
    }

    // ---------------------------------------------------------------- raw layer

    /// Begins a read section of `mem_len` bytes (must equal the stored length). Returns the
    /// object's address: in place when it lies in one page (or the read mode reads it in place),
    /// else, in `copy` mode, `local_copy + 8` after copying the header and the object into
    /// `local_copy`. With `local_copy` NULL, `copy` mode serves only objects in one page: one
    /// that crosses a page is refused (`InvalidArgument`) and nothing is counted; `map` and
    /// `contiguous` never copy. The same contract as [`Backend::read_begin_raw`] for every
    /// backend.
    ///
    /// # Safety
    /// `local_copy` is NULL or writable for `mem_len + 8` bytes. The returned pointer is valid
    /// until the matching [`Pool::read_end_raw`]; the bytes must not be written through it.
    ///
    /// [`Backend::read_begin_raw`]: crate::Backend::read_begin_raw
    #[inline(always)]
    pub unsafe fn read_begin_raw(
        &self,
        h: &AtomicUsize,
        mem_len: usize,
        local_copy: *mut u8,
    ) -> Result<*const u8> {
        // The caller promises `mem_len + 8` bytes, checked against the stored length before
        // anything is copied; a NULL buffer is never written (`begin_slow`).
        let copy = LocalCopy { ptr: local_copy, len: usize::MAX };
        self.begin(Layer::Raw { word: h, mem_len }, copy).map(|b| b.ptr)
    }

    /// [`Pool::read_begin_raw`]'s common case, for bindings that want it without the `Result`:
    /// a non-huge object of `mem_len` bytes in one page, announced in this thread's announce
    /// slot and returned in place. `None` changes nothing: the object is huge or crosses a page,
    /// the thread has no free announce slot, or something is wrong, and `read_begin_raw` then
    /// does the read or says what is wrong.
    ///
    /// # Safety
    /// As [`Pool::read_begin_raw`]; the section ends with [`Pool::read_end_raw`] (or
    /// [`Pool::read_end_recorded`]).
    #[inline]
    pub unsafe fn read_begin_in_place(&self, h: &AtomicUsize, mem_len: usize) -> Option<*const u8> {
        match self.config.read_mode {
            ReadMode::Copy | ReadMode::Map => self.copy_begin_in_place(h, mem_len).map(|b| b.ptr),
            ReadMode::Contiguous => self.contiguous_begin_in_place(h, mem_len).map(|b| b.ptr),
        }
    }

    /// Ends a read section begun by `read_begin_raw` or `read_sg_begin_raw`.
    ///
    /// # Safety
    /// `h` is the handle the section was begun on.
    #[inline]
    pub unsafe fn read_end_raw(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Result<()> {
        self.end(Ending::Raw { word: h, mem_len, mem: std::ptr::null() })
    }

    /// [`Pool::read_end_raw`] given the address the section's begin returned (`handle_mem`, as
    /// the kernel's `zs_obj_read_end` takes it): in `map` mode it names the section's map slot
    /// exactly. Without it the slot is found by the handle (the calling thread's ring first),
    /// which is exact unless one handle has several mapped sections open at once.
    ///
    /// # Safety
    /// As [`Pool::read_end_raw`].
    #[inline]
    pub unsafe fn read_end_at_raw(
        &self,
        h: &AtomicUsize,
        mem_len: Option<usize>,
        handle_mem: *const u8,
    ) -> Result<()> {
        self.end(Ending::Raw { word: h, mem_len, mem: handle_mem })
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
        let ended = open_section::matching(self.id, addr, h.load(Ordering::Acquire))
            .filter(|open| open.len == mem_len)
            .is_some_and(|open| self.end_recorded(&open, addr).is_ok());
        match self.config.read_mode {
            ReadMode::Copy | ReadMode::Contiguous => ended,
            ReadMode::Map => {
                if ended {
                    self.map_release_at(addr, std::ptr::null());
                }
                ended
            }
        }
    }
}

/// An open read section: the object's bytes. Dropping it ends the section.
pub struct ReadSection<'a> {
    pool: &'a Pool,
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
        // A safe section's end cannot fail: its registration is its own.
        let _ = self.pool.end(Ending::Safe(&self.registration, self.ptr));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::announce;
    use crate::tid::Tid;
    use crate::{Pool, PoolConfig};

    /// A read section announces itself in this thread's announce slot; one left open when its pool
    /// goes away (a broken contract) is retracted with the mapping, so it cannot make a header at
    /// the same address in a later pool look read forever.
    #[test]
    fn announces_are_retracted_with_their_pool() {
        let mine = || Tid::current().owned_index().map(announce::slot_of).expect("owned");
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
}
