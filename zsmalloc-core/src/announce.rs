//! Announced readers: how most read sections register without writing the object's header.
//!
//! Each thread with an owned index (`tid.rs`) has one *announce slot* here, on its own cache
//! line. A reader that finds its slot empty *announces* the header
//! word it is about to read by swapping an `announcement` (the word's address and a tag of the
//! handle it reads through) into the slot, then loads the header and checks it
//! (`header::check_announced`). Its section ends with a plain store of 0. So the
//! common read writes no shared line: no locked instruction waits for the header's cache miss,
//! and the end has none at all. A thread whose slot is in use
//! (a second open section) or that has no slot counts itself in the header instead
//! (`header::begin_read`), as every reader did before.
//!
//! Who may change an allocated header while it could be read — a free, a handle move,
//! compaction — claims it first (`header::claim_owned`, `header::claim`), then scans the slots
//! for an announcement of the header by its owner (`announced`), and undoes the claim if one
//! stays. Readers that find a claim back off and retry (`Refusal::Claimed`), so a free refused
//! because of a reader never makes that reader fail. An announce through any other handle (a
//! stale copy whose old object's place was reused) can never become a section, so it does not
//! hold up the claim, however long its thread is preempted before it retracts.
//!
//! Invariants (the Dekker pairing, checked by `tests/loom_headers.rs`):
//! - A reader's announce is a `SeqCst` swap before its `SeqCst` load of the header; a writer's
//!   claim is a `SeqCst` CAS before its `SeqCst` loads of `tid::owned_high` and the slots. In the
//!   single order of those operations, either the reader's load follows the claim (it sees the
//!   claim and backs off) or the writer's scan follows the announce (it sees the reader and
//!   undoes).
//! - `tid::owned_high` covers every slot ever announced in: a thread raises it when it gets its
//!   index, before its first announce, and it never falls.
//! - Only a slot's thread fills it, and only when it is empty; any thread may empty it (a
//!   section may be ended by another thread), by CAS from the header it names.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::excess;
use crate::tid;

/// What the protocol needs of a slot: `std`'s `AtomicUsize` here, loom's (with the `SeqCst`
/// fence loom needs to model an `SeqCst` read-modify-write as a full fence) in the loom models.
pub trait AnnounceWord {
    fn load(&self, order: Ordering) -> usize;
    /// Fills the slot with `header` (`SeqCst`: ordered before the reader's header load).
    fn announce(&self, header: usize);
    fn store(&self, v: usize, order: Ordering);
    fn compare_exchange(&self, cur: usize, new: usize) -> Result<usize, usize>;
}

impl AnnounceWord for AtomicUsize {
    #[inline(always)]
    fn load(&self, order: Ordering) -> usize {
        AtomicUsize::load(self, order)
    }
    #[inline(always)]
    fn announce(&self, header: usize) {
        self.swap(header, Ordering::SeqCst);
    }
    #[inline(always)]
    fn store(&self, v: usize, order: Ordering) {
        AtomicUsize::store(self, v, order)
    }
    #[inline(always)]
    fn compare_exchange(&self, cur: usize, new: usize) -> Result<usize, usize> {
        AtomicUsize::compare_exchange(self, cur, new, Ordering::AcqRel, Ordering::Relaxed)
    }
}

#[cfg(loom)]
impl AnnounceWord for loom::sync::atomic::AtomicUsize {
    fn load(&self, order: Ordering) -> usize {
        loom::sync::atomic::AtomicUsize::load(self, order)
    }
    fn announce(&self, header: usize) {
        self.swap(header, Ordering::SeqCst);
        loom::sync::atomic::fence(Ordering::SeqCst);
    }
    fn store(&self, v: usize, order: Ordering) {
        loom::sync::atomic::AtomicUsize::store(self, v, order)
    }
    fn compare_exchange(&self, cur: usize, new: usize) -> Result<usize, usize> {
        loom::sync::atomic::AtomicUsize::compare_exchange(
            self,
            cur,
            new,
            Ordering::AcqRel,
            Ordering::Relaxed,
        )
    }
}

/// Header addresses are user-space addresses, below 2^48; the bits above carry the owner tag.
const ADDR_MASK: usize = (1 << 48) - 1;

/// What a reader of the header word at `header` through the handle word at `owner` announces:
/// the header's address with a 16-bit tag of the handle's (its address's low bits above the
/// alignment). Only the header's owner can read it, so a claim looks for its owner's tag alone;
/// two owners sharing a tag only make a claim wait for the other's announce to be retracted.
#[inline(always)]
pub fn announcement(header: usize, owner: usize) -> usize {
    debug_assert!(header & !ADDR_MASK == 0);
    header | ((owner >> 3) << 48)
}

/// The header address an announcement names.
#[inline(always)]
pub fn announced_header(announced: usize) -> usize {
    announced & ADDR_MASK
}

/// Fills `slot` with `announced` (an `announcement`), if the slot is empty (only its own thread
/// fills it). False: the caller counts itself in the header instead.
#[inline(always)]
pub fn announce(slot: &impl AnnounceWord, announced: usize) -> bool {
    if slot.load(Ordering::Relaxed) != 0 {
        return false;
    }
    slot.announce(announced);
    true
}

/// Whether a slot holds `announced`. The caller claimed the header with a `SeqCst`
/// read-modify-write just before.
#[inline]
pub fn announced<S: AnnounceWord>(slots: &[S], announced: usize) -> bool {
    slots.iter().any(|s| s.load(Ordering::SeqCst) == announced)
}

/// Empties `slot` if what it holds satisfies `ends` (by CAS: an announce made since the load
/// stays).
fn retract_if(slot: &impl AnnounceWord, ends: impl Fn(usize) -> bool) -> bool {
    let v = slot.load(Ordering::Acquire);
    v != 0 && ends(v) && slot.compare_exchange(v, 0).is_ok()
}

/// Ends a section announced as `announced` that some thread holds (a section may be ended by
/// another thread than its own). False if none does.
pub fn retract_any<S: AnnounceWord>(slots: &[S], announced: usize) -> bool {
    slots.iter().any(|s| retract_if(s, |v| v == announced))
}

/// Empties every slot naming a header in `lo..hi` (a mapping about to go away), and forgets the
/// counted sections beyond those headers' own (`excess.rs`).
pub(crate) fn retract_range(lo: usize, hi: usize) {
    for s in in_use() {
        retract_if(s, |v| (lo..hi).contains(&announced_header(v)));
    }
    excess::forget_range(lo, hi);
}

/// One thread's announce slot, alone on its cache line so announces never contend.
#[repr(align(128))]
pub(crate) struct AnnounceSlot(pub(crate) AtomicUsize);

#[allow(clippy::declare_interior_mutable_const)] // a template for the array below only
const EMPTY: AnnounceSlot = AnnounceSlot(AtomicUsize::new(0));
static SLOTS: [AnnounceSlot; tid::OWNED] = [EMPTY; tid::OWNED];

/// The announce slot of owned thread index `index`.
#[inline(always)]
pub(crate) fn slot_of(index: usize) -> &'static AtomicUsize {
    const { assert!(tid::OWNED.is_power_of_two()) };
    // Owned indices are below OWNED: the mask only spares the bounds check.
    &SLOTS[index & (tid::OWNED - 1)].0
}

/// The slots a writer must scan (`SeqCst`, after its claim).
#[inline]
pub(crate) fn in_use() -> &'static [AnnounceSlot] {
    &SLOTS[..tid::owned_high()]
}

impl AnnounceWord for AnnounceSlot {
    #[inline(always)]
    fn load(&self, order: Ordering) -> usize {
        self.0.load(order)
    }
    #[inline(always)]
    fn announce(&self, header: usize) {
        AnnounceWord::announce(&self.0, header)
    }
    #[inline(always)]
    fn store(&self, v: usize, order: Ordering) {
        self.0.store(v, order)
    }
    #[inline(always)]
    fn compare_exchange(&self, cur: usize, new: usize) -> Result<usize, usize> {
        AnnounceWord::compare_exchange(&self.0, cur, new)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_full_slot_is_not_announced_in_and_any_thread_may_empty_it() {
        let slots: Vec<AtomicUsize> = (0..3).map(|_| AtomicUsize::new(0)).collect();
        let (a, b) = (announcement(0x1000, 0x40), announcement(0x2000, 0x40));
        assert!(announce(&slots[1], a));
        assert!(!announce(&slots[1], b), "one announced section per slot");
        assert!(announced(&slots, a));
        assert!(!announced(&slots, b));
        assert!(!retract_any(&slots, b));
        assert!(retract_any(&slots, a));
        assert!(!announced(&slots, a));
        assert!(announce(&slots[1], b), "empty again");
    }

    #[test]
    fn announcements_name_their_owner() {
        assert_eq!(announced_header(announcement(0x1000, 0x40)), 0x1000);
        assert_ne!(announcement(0x1000, 0x40), announcement(0x1000, 0x48));
    }
}
