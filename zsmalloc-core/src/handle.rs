//! Handles: the word that names an object's location, and the safe layer's pool-owned slots.
//!
//! Handles: the word that names an object's location, and the safe layer's pool-owned slots.
//!
//! Handle word (never 0 for a live object; 0 = empty):
//!
//! ```text
//!  63  61 60  57 56              33 32                            0
//! +------+------+------------------+-------------------------------+
//! | tag  | page |   zspage slot    | header position (arena offset/8)|
//! +------+------+------------------+-------------------------------+
//! ```
//!
//! The header position lets a reader start loading the object's header (and payload) from the
//! word alone, while the zspage's metadata is still on its way: the two cache misses overlap
//! instead of following each other. `page` is the header's page within its zspage; `tag` (1..=7,
//! never 0) is the pool's. A huge object's position is its payload's (its header lives in the
//! zspage's metadata).
//!
//! The word alone proves nothing: a handle is accepted only if its zspage slot is live, its page
//! and position are an object start of that zspage's class that was handed out, and the
//! object's header names this very handle word's address as its owner. That one check refuses
//! handles of another pool, garbage, stale copies and double frees.

use std::cell::Cell;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::chunked::ChunkedTable;
use crate::error::Result;
use crate::pool::Pool;

pub(crate) const MAX_ZSPAGE_SLOTS: u32 = 1 << 24;
const POS_BITS: u32 = 33;
const SLOT_SHIFT: u32 = POS_BITS;
const PAGE_SHIFT: u32 = SLOT_SHIFT + 24;
const TAG_SHIFT: u32 = PAGE_SHIFT + 4;
/// Pool tags are 1..=7.
pub(crate) const TAG_MAX: u8 = 7;

/// A decoded handle word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Location {
    pub tag: u8,
    pub slot: u32,
    /// Index of the header's page within the zspage.
    pub page: u32,
    /// Arena byte offset of the header (huge objects: of the payload) divided by 8.
    pub pos: u64,
}

impl Location {
    #[inline]
    pub fn encode(self) -> usize {
        debug_assert!((1..=TAG_MAX).contains(&self.tag));
        debug_assert!(self.slot < MAX_ZSPAGE_SLOTS && self.page < 16 && self.pos < 1 << POS_BITS);
        ((self.tag as usize) << TAG_SHIFT)
            | ((self.page as usize) << PAGE_SHIFT)
            | ((self.slot as usize) << SLOT_SHIFT)
            | self.pos as usize
    }

    /// Decodes a word; `None` for 0 or a tag field of 0 (never produced).
    #[inline]
    pub fn decode(word: usize) -> Option<Location> {
        let tag = (word >> TAG_SHIFT) as u8;
        (tag != 0).then_some(Location {
            tag,
            page: ((word >> PAGE_SHIFT) & 0xf) as u32,
            slot: ((word >> SLOT_SHIFT) & 0xff_ffff) as u32,
            pos: (word & ((1 << POS_BITS) - 1)) as u64,
        })
    }

    /// Arena byte offset of the header (huge: payload).
    #[inline]
    pub fn offset(self) -> usize {
        (self.pos as usize) << 3
    }
}

/// Where an object is, for diagnostics and tests: its zspage (table slot and the generation of
/// that slot's current zspage) and its object index within the zspage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ObjectLocation {
    pub zspage: u32,
    pub generation: u16,
    pub index: u32,
}

/// The safe layer's handle words: address-stable slots owned by the pool.
///
/// Slots are never moved or deallocated while the pool lives (16384 words per chunk, 2^26 in
/// all). Free slots form a lock-free stack; the link is kept in the free slot's own word and the
/// stack head carries a tag against ABA. Each thread also keeps the slot it freed last (of one
/// pool at a time) aside, so a free followed by a store, the steady-state step, touches the
/// shared stack not at all. A thread that exits, or moves on to another pool, while keeping a
/// slot leaves that one slot unused.
pub(crate) struct HandleSlots {
    words: ChunkedTable<AtomicUsize, 14, 4096>,
    /// Low 32 bits: top slot + 1 (0 = empty); high 32 bits: ABA tag.
    free_top: AtomicU64,
    /// Never reused by another table, so a thread's kept slot is matched to its table exactly.
    id: u64,
}

static NEXT_TABLE_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// (table id, slot) of the slot this thread freed last; table id 0: none.
    static KEPT: Cell<(u64, u32)> = const { Cell::new((0, 0)) };
}

impl HandleSlots {
    pub fn new() -> Self {
        HandleSlots {
            words: ChunkedTable::new(),
            free_top: AtomicU64::new(0),
            id: NEXT_TABLE_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The slot this thread kept aside for this table, taken out of the keep.
    #[inline]
    fn take_kept(&self) -> Option<u32> {
        KEPT.try_with(|k| {
            let (id, slot) = k.get();
            (id == self.id).then(|| {
                k.set((0, 0));
                slot
            })
        })
        .ok()
        .flatten()
    }

    /// Keeps `slot` aside for this thread; returns the slot it displaces, if it was this
    /// table's (or `slot` itself when the thread cannot keep it).
    #[inline]
    fn keep(&self, slot: u32) -> Option<u32> {
        KEPT.try_with(|k| {
            let (id, old) = k.replace((self.id, slot));
            (id == self.id).then_some(old)
        })
        .unwrap_or(Some(slot))
    }

    #[inline]
    pub fn word(&self, slot: u32) -> &AtomicUsize {
        self.words.get(slot as usize).expect("handle slot was taken from this table")
    }

    /// Takes an empty slot; `None` when all 2^26 slots are live.
    pub fn take(&self) -> Option<u32> {
        if let Some(slot) = self.take_kept() {
            return Some(slot);
        }
        let mut top = self.free_top.load(Ordering::Acquire);
        loop {
            let Some(slot) = (top as u32).checked_sub(1) else {
                return self.words.push().map(|(idx, _)| idx as u32);
            };
            let next = self.word(slot).load(Ordering::Relaxed) as u64;
            let new = ((top >> 32).wrapping_add(1) << 32) | next;
            match self.free_top.compare_exchange_weak(top, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    self.word(slot).store(0, Ordering::Relaxed);
                    return Some(slot);
                }
                Err(now) => top = now,
            }
        }
    }

    /// Returns an empty slot.
    pub fn give_back(&self, slot: u32) {
        let Some(slot) = self.keep(slot) else { return };
        let mut top = self.free_top.load(Ordering::Acquire);
        loop {
            self.word(slot).store((top as u32) as usize, Ordering::Relaxed);
            let new = ((top >> 32).wrapping_add(1) << 32) | u64::from(slot + 1);
            match self.free_top.compare_exchange_weak(top, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(now) => top = now,
            }
        }
    }

    /// Heap bytes taken by slots (reported apart from the pool's own metadata).
    pub fn heap_bytes(&self) -> usize {
        self.words.heap_bytes()
    }
}

/// A safe handle: owns one stored object of the pool `P` points to. Dropping it frees the object.
///
/// `P` is `&Pool` for scoped use or `Arc<Pool>` (or any other pointer to a pool) when the handle
/// must own a share of its pool, as the Python binding's handles do.
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
    /// than they save once the reader copies the bytes itself (docs/PERFORMANCE.md, session 8).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_round_trips() {
        let loc = Location { tag: 5, slot: 0xff_fffe, page: 15, pos: (1 << 33) - 1 };
        assert_eq!(Location::decode(loc.encode()), Some(loc));
        let low = Location { tag: 1, slot: 0, page: 0, pos: 0 };
        assert_ne!(low.encode(), 0);
        assert_eq!(Location::decode(low.encode()), Some(low));
        assert_eq!(Location::decode(0x1234_0000), None);
    }

    #[test]
    fn slots_are_reused_lifo() {
        let s = HandleSlots::new();
        let (a, b) = (s.take().unwrap(), s.take().unwrap());
        assert_ne!(a, b);
        s.give_back(a);
        s.give_back(b);
        assert_eq!(s.take(), Some(b));
        assert_eq!(s.take(), Some(a));
        assert_eq!(s.take(), Some(2));
    }
}
