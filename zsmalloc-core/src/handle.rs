//! The safe handle: owns one stored object of a pool, on top of the pool's handle slots
//! (`handle_slots.rs`) and handle words (`handle_word.rs`). Dropping it frees the object.

use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::Result;
pub use crate::handle_word::ObjectLocation;
use crate::pool::Pool;

/// A safe handle: owns one stored object of the pool `P` points to. Dropping it frees the object.
///
/// `P` is the pointer to the pool the handle holds: `&Pool` for the handles [`Pool::store`] and
/// [`Pool::malloc`] return.
pub struct Handle<P: Deref<Target = Pool>> {
    pool: P,
    slot: u32,
    /// The object's length, which never changes while the handle owns it.
    len: u32,
    /// The slot's word when the object was stored: only a hint (compaction may have changed the
    /// word since). Reads register through it without waiting for the slot word, frees lock its
    /// class meanwhile; a stale hint fails their checks and they follow the slot word.
    hint: usize,
}

impl<P: Deref<Target = Pool>> Handle<P> {
    pub(crate) fn new(pool: P, slot: u32, len: usize) -> Self {
        let hint = pool.slots().word(slot).load(Ordering::Relaxed);
        // Lengths are at most a page (65536 bytes), checked before any object is stored.
        Handle { pool, slot, len: len as u32, hint }
    }

    /// The pool holding the object.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The handle word (for diagnostics: it changes when compaction moves the object).
    pub fn word(&self) -> usize {
        self.pool.slots().word(self.slot).load(Ordering::Acquire)
    }

    /// The slot's word when the object was stored (see `Pool::announce_in_place`: reading
    /// through it is sound even after compaction moved the object; it then just fails).
    #[inline]
    pub(crate) fn hint(&self) -> usize {
        self.hint
    }

    /// The slot word, with the hinted object's header already on its way into the cache.
    #[inline]
    pub(crate) fn slot_word(&self) -> &AtomicUsize {
        self.pool.prefetch_word(self.hint, 0);
        self.pool.slots().word(self.slot)
    }

    /// The slot word, with the whole hinted object on its way into the cache (for writes of
    /// its bytes).
    #[inline]
    pub(crate) fn slot_word_for_bytes(&self) -> &AtomicUsize {
        self.pool.prefetch_word(self.hint, self.len as usize);
        self.pool.slots().word(self.slot)
    }

    /// The slot word, with the hinted object's page role and first two lines on their way into
    /// the cache (for reads). Not the whole object: a prefetch loop's instructions cost more
    /// than they save once the reader copies the bytes itself.
    #[inline]
    pub(crate) fn slot_word_for_read(&self) -> &AtomicUsize {
        self.pool.prefetch_word(self.hint, (self.len as usize).min(64));
        self.pool.slots().word(self.slot)
    }

    /// Where the object is now (see [`ObjectLocation`]); compaction may move it at any time.
    pub fn location(&self) -> Result<ObjectLocation> {
        self.pool.locate_word(self.slot_word())
    }

    /// Length of the stored object in bytes.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Never true for a handle returned by the pool (objects are 1..=page bytes).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Frees the object now, reporting refusal (an active read section) instead of leaking.
    pub fn free(self) -> Result<()> {
        let res = self.pool.free_word_from(self.slot_word(), Some(self.hint));
        if res.is_ok() {
            self.pool.slots().give_back(self.slot);
        }
        std::mem::forget(self);
        res
    }
}

impl<P: Deref<Target = Pool>> Drop for Handle<P> {
    fn drop(&mut self) {
        // A safe handle cannot be dropped during its own read section (the section borrows it),
        // so the free succeeds; if it somehow did not, the slot is leaked rather than reused.
        if self.pool.free_word_from(self.slot_word(), Some(self.hint)).is_ok() {
            self.pool.slots().give_back(self.slot);
        }
    }
}

impl<P: Deref<Target = Pool>> std::fmt::Debug for Handle<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle").field("slot", &self.slot).field("word", &self.word()).finish()
    }
}
