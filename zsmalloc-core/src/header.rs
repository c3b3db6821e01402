//! The object header word: who owns an object, how long it is, and who is reading it.
//!
//! Layout of an allocated object's header (`ZS_HANDLE_SIZE` = 8 bytes, at the object's start;
//! huge objects keep the same word in their zspage's metadata):
//!
//! ```text
//!  63            48 47                          4 3       1 0
//! +----------------+-----------------------------+---------+---+
//! |   length - 1   |   handle address >> 3       | readers | 1 |
//! +----------------+-----------------------------+---------+---+
//! ```
//!
//! A free object's word has bit 0 clear and holds the freelist link (`next + 1`, 0 = end) above it,
//! as the kernel's `link_free` does. Handle addresses are 8-byte aligned and below 2^47 (checked
//! when an object is stored). Most readers announce themselves in their thread's announce slot
//! instead (`announce.rs`) and only load this word; the reader bits count the others (a thread's
//! second and later open sections, threads without an announce slot, huge objects). Up to 5
//! counted sections are counted here exactly; 6 means *saturated*: 6 plus the excess that
//! `excess.rs` keeps for this word, under its lock, on the slow path. No begin ever waits for a
//! section to end: past 65,535 counted sections of one object a begin is refused
//! (`Refusal::TooManyReaders`, `EAGAIN`). A reader count of `CLAIMED` (7) is not readers:
//! compaction, a free or a handle move has claimed the object, and readers back off until the
//! claim is undone or the handle word names the copy.

use crate::announce::{self, AnnounceWord};
use crate::error::Error;
use crate::excess::{self, MAX_EXCESS};
use crate::sync::spin;
#[cfg(test)]
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;

const ALLOCATED: u64 = 1;
const READER_SHIFT: u32 = 1;
const READER_ONE: u64 = 1 << READER_SHIFT;
const READER_MASK: u64 = 0b111 << READER_SHIFT;
/// 6 counted readers in the header, and more in `excess.rs`.
const SATURATED: u64 = 6;
const CLAIMED: u64 = 7;
const ADDR_SHIFT: u32 = 4;
const ADDR_BITS: u32 = 44;
const LEN_SHIFT: u32 = 48;

/// What the protocol needs of a header word: `std`'s `AtomicU64` in the pool, loom's in
/// `tests/loom_headers.rs`, so the model checks these very functions.
pub trait HeaderWord {
    fn load(&self, order: Ordering) -> u64;
    fn store(&self, v: u64, order: Ordering);
    fn compare_exchange(&self, cur: u64, new: u64, ok: Ordering, err: Ordering)
        -> Result<u64, u64>;
    /// After a claim's `SeqCst` CAS, before the scan of the announce slots: nothing for `std`,
    /// where the CAS is a full fence; loom needs an explicit one to model that (`announce.rs`).
    #[inline(always)]
    fn fence_after_claim(&self) {}
}

macro_rules! header_word {
    ($t:ty $(, $fence:item)?) => {
        impl HeaderWord for $t {
            #[inline(always)]
            fn load(&self, order: Ordering) -> u64 {
                <$t>::load(self, order)
            }
            #[inline(always)]
            fn store(&self, v: u64, order: Ordering) {
                <$t>::store(self, v, order)
            }
            #[inline(always)]
            fn compare_exchange(
                &self,
                cur: u64,
                new: u64,
                ok: Ordering,
                err: Ordering,
            ) -> Result<u64, u64> {
                <$t>::compare_exchange(self, cur, new, ok, err)
            }
            $($fence)?
        }
    };
}

header_word!(std::sync::atomic::AtomicU64);
#[cfg(loom)]
header_word!(
    loom::sync::atomic::AtomicU64,
    fn fence_after_claim(&self) {
        loom::sync::atomic::fence(Ordering::SeqCst);
    }
);

/// The address a reader announces for header word `h`.
#[inline(always)]
pub fn address_of<H>(h: &H) -> usize {
    h as *const H as usize
}

/// Highest handle address a header can record (exclusive).
pub const ADDR_LIMIT: usize = 1 << (ADDR_BITS + 3);

/// Why a header refused a handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The object is free: the handle is stale or was freed.
    Free,
    /// The object belongs to another handle: a stale copy, a foreign or a garbage handle.
    OtherOwner,
    /// The object is being read (only for free).
    Busy,
    /// Compaction is moving the object: reload the handle word and try again.
    Claimed,
    /// 65,535 counted sections of the object are open already (only for a begin).
    TooManyReaders,
}

impl Refusal {
    /// The pool's error for a refusal.
    pub(crate) fn into_error(self) -> Error {
        match self {
            Refusal::Free => Error::InvalidHandle("stale handle: its object was freed"),
            Refusal::OtherOwner => Error::InvalidHandle(
                "handle does not own this object (stale copy, foreign or garbage)",
            ),
            Refusal::Busy | Refusal::Claimed => Error::Busy,
            Refusal::TooManyReaders => Error::TooManyReaders,
        }
    }
}

/// Encodes an allocated object's header. `addr` must be 8-aligned and below `ADDR_LIMIT`.
#[inline]
pub fn encode(addr: usize, len: usize) -> u64 {
    debug_assert!(addr.is_multiple_of(8) && addr < ADDR_LIMIT && (1..=65536).contains(&len));
    ((len as u64 - 1) << LEN_SHIFT) | (((addr as u64) >> 3) << ADDR_SHIFT) | ALLOCATED
}

#[inline]
pub fn is_allocated(word: u64) -> bool {
    word & ALLOCATED != 0
}

#[inline]
pub fn owner(word: u64) -> usize {
    (((word >> ADDR_SHIFT) & ((1 << ADDR_BITS) - 1)) << 3) as usize
}

#[inline]
pub fn len(word: u64) -> usize {
    (word >> LEN_SHIFT) as usize + 1
}

#[inline]
pub fn readers(word: u64) -> u64 {
    (word & READER_MASK) >> READER_SHIFT
}

/// `word` with its reader count cleared.
#[inline]
pub fn without_readers(word: u64) -> u64 {
    word & !READER_MASK
}

/// A free object's word linking to the next free object (`None` = end of list).
#[inline]
pub fn free_link(next: Option<u32>) -> u64 {
    next.map_or(0, |n| u64::from(n) + 1) << 1
}

/// The next free object of a free object's word.
#[inline]
pub fn next_free(word: u64) -> Option<u32> {
    debug_assert!(!is_allocated(word));
    ((word >> 1) as u32).checked_sub(1)
}

/// Checks that `word` holds an object owned by the handle at `addr`.
#[inline]
pub fn check_owner(word: u64, addr: usize) -> Result<(), Refusal> {
    if !is_allocated(word) {
        Err(Refusal::Free)
    } else if owner(word) != addr {
        Err(Refusal::OtherOwner)
    } else {
        Ok(())
    }
}

/// Registers a reader of the object owned by `addr`; returns the object's length. Never waits
/// for another section to end: a saturated header takes the excess table's short lock, and past
/// the limit the begin is refused.
#[inline]
pub fn begin_read(h: &impl HeaderWord, addr: usize) -> Result<usize, Refusal> {
    let mut cur = h.load(Ordering::Acquire);
    loop {
        check_owner(cur, addr)?;
        match readers(cur) {
            CLAIMED => return Err(Refusal::Claimed),
            SATURATED => match begin_excess(h, addr) {
                Some(r) => return r,
                None => cur = h.load(Ordering::Acquire),
            },
            // 5 -> 6 included: a saturated header with no excess entry holds exactly 6.
            _ => match h.compare_exchange(
                cur,
                cur + READER_ONE,
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(len(cur)),
                Err(now) => cur = now,
            },
        }
    }
}

/// `begin_read` on a header found saturated: one more excess section, under the table's lock.
/// `None`: the header is no longer saturated (an end took it to 5 meanwhile): retry.
#[cold]
#[inline(never)]
fn begin_excess(h: &impl HeaderWord, addr: usize) -> Option<Result<usize, Refusal>> {
    let mut table = excess::lock();
    // Under the lock a saturated header stays so, and its owner and length with it (a claim
    // needs no readers).
    let cur = h.load(Ordering::Acquire);
    if let Err(r) = check_owner(cur, addr) {
        return Some(Err(r));
    }
    if readers(cur) != SATURATED {
        return None;
    }
    let n = table.entry(address_of(h)).or_insert(0);
    if *n >= MAX_EXCESS {
        return Some(Err(Refusal::TooManyReaders));
    }
    *n += 1;
    Some(Ok(len(cur)))
}

/// `end_read` on a header found saturated: one excess section fewer, or 6 -> 5 when there is
/// none, under the table's lock. `None`: no longer saturated: retry.
#[cold]
#[inline(never)]
fn end_excess(h: &impl HeaderWord, addr: usize) -> Option<Result<(), Refusal>> {
    let mut table = excess::lock();
    let cur = h.load(Ordering::Acquire);
    if let Err(r) = check_owner(cur, addr) {
        return Some(Err(r));
    }
    if readers(cur) != SATURATED {
        return None;
    }
    let at = address_of(h);
    match table.get_mut(&at) {
        Some(n) if *n > 1 => *n -= 1,
        Some(_) => {
            table.remove(&at);
        }
        // Only holders of the lock change a saturated word, so this cannot fail; a failure
        // would only mean a retry.
        None => {
            if h.compare_exchange(cur, cur - READER_ONE, Ordering::Release, Ordering::Acquire)
                .is_err()
            {
                return None;
            }
        }
    }
    Some(Ok(()))
}

/// `begin_read` in one attempt, for the common case: the object is `addr`'s, unclaimed, not
/// saturated and (when `want` is given) `want` bytes long, and nobody changes the header
/// between the load and the CAS. `None` otherwise; the caller then takes `begin_read`.
#[inline(always)]
pub fn try_begin_read(h: &impl HeaderWord, addr: usize, want: Option<usize>) -> Option<usize> {
    let cur = h.load(Ordering::Acquire);
    // `readers < SATURATED` also excludes `CLAIMED`.
    if !is_allocated(cur) || owner(cur) != addr || readers(cur) >= SATURATED {
        return None;
    }
    let len = len(cur);
    if want.is_some_and(|w| w != len) {
        return None;
    }
    h.compare_exchange(cur, cur + READER_ONE, Ordering::Acquire, Ordering::Relaxed)
        .ok()
        .map(|_| len)
}

/// The announced reader's check, after `announce::announce` named `h` in its announce slot: the
/// object is `addr`'s, not claimed and (when `want` is given) `want` bytes long. Returns its
/// length; `None` means the reader must retract its announce (and take `begin_read`, which says
/// why).
#[inline(always)]
pub fn check_announced(h: &impl HeaderWord, addr: usize, want: Option<usize>) -> Option<usize> {
    let cur = h.load(Ordering::SeqCst);
    if !is_allocated(cur) || owner(cur) != addr || readers(cur) == CLAIMED {
        return None;
    }
    let len = len(cur);
    want.is_none_or(|w| w == len).then_some(len)
}

/// The announced reader's registration on header word `h` by the handle at `addr`: announces it in
/// the reader's announce `slot` (`announce::announce`), then checks it (`check_announced`), and
/// retracts the announce if the check fails. Returns the object's length; `None` registers nothing:
/// the announce slot was in use (the caller counts itself in the header instead) or the header
/// refused (`begin_read` says why).
#[inline(always)]
pub fn begin_announced(
    slot: &impl AnnounceWord,
    h: &impl HeaderWord,
    addr: usize,
    want: Option<usize>,
) -> Option<usize> {
    if !announce::announce(slot, announce::announcement(address_of(h), addr)) {
        return None;
    }
    if let Some(len) = check_announced(h, addr, want) {
        return Some(len);
    }
    slot.store(0, Ordering::Release);
    None
}

/// Ends a read registered by `begin_read` on the object owned by `addr`.
#[inline]
pub fn end_read(h: &impl HeaderWord, addr: usize) -> Result<(), Refusal> {
    let mut cur = h.load(Ordering::Acquire);
    loop {
        check_owner(cur, addr)?;
        match readers(cur) {
            0 | CLAIMED => return Err(Refusal::Busy),
            SATURATED => match end_excess(h, addr) {
                Some(r) => return r,
                None => cur = h.load(Ordering::Acquire),
            },
            _ => match h.compare_exchange(
                cur,
                cur - READER_ONE,
                Ordering::Release,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(()),
                Err(now) => cur = now,
            },
        }
    }
}

/// Claims the object owned by `addr` if nobody reads it (neither counted nor announced in
/// `slots`): readers then back off until the caller stores the header's next value (or undoes
/// the claim by storing the returned one). Caller holds the class lock.
#[inline]
pub fn claim_owned<S: AnnounceWord>(
    h: &impl HeaderWord,
    addr: usize,
    slots: &[S],
) -> Result<u64, Refusal> {
    let cur = h.load(Ordering::Acquire);
    check_owner(cur, addr)?;
    if readers(cur) != 0 {
        return Err(Refusal::Busy);
    }
    claim_word(h, cur, slots).ok_or(Refusal::Busy)
}

/// Frees the object owned by `addr` if nobody reads it: the word becomes the free link.
/// Returns the object's length. Caller holds the class lock.
#[inline]
pub fn try_free<S: AnnounceWord>(
    h: &impl HeaderWord,
    addr: usize,
    next: Option<u32>,
    slots: &[S],
) -> Result<usize, Refusal> {
    let cur = claim_owned(h, addr, slots)?;
    // Claimed: no reader changes the word, so a plain store ends the claim.
    h.store(free_link(next), Ordering::Release);
    Ok(len(cur))
}

/// Claims the allocated object of header `h` for a move if nobody reads it: its reader count
/// becomes `CLAIMED`, so readers back off and a free or a move of the handle is refused. Returns
/// the header as it was. Caller holds the class lock (which also excludes frees).
#[inline]
pub fn claim<S: AnnounceWord>(h: &impl HeaderWord, slots: &[S]) -> Option<u64> {
    let cur = h.load(Ordering::Acquire);
    if !is_allocated(cur) || readers(cur) != 0 {
        return None;
    }
    claim_word(h, cur, slots)
}

/// How many times a claim re-scans the announce slots before it gives way to an announced reader.
/// An announce that is not a section (a reader about to see the claim, or one whose handle
/// turned out not to own the object) is retracted within a few instructions; a section is not.
#[cfg(not(loom))]
const ANNOUNCE_RESCANS: u32 = 64;
#[cfg(loom)]
const ANNOUNCE_RESCANS: u32 = 1;

/// Claims `h` from `cur` (allocated, uncounted), then undoes the claim if a reader announced
/// itself on `h` through its owner and keeps its announce (`announce.rs`: the `SeqCst` CAS orders
/// the claim before the scan). New readers back off meanwhile, so only announces older than the
/// claim can remain.
#[inline]
fn claim_word<S: AnnounceWord>(h: &impl HeaderWord, cur: u64, slots: &[S]) -> Option<u64> {
    // Counted readers only add themselves by CAS on an unchanged word: a failed CAS means one did.
    h.compare_exchange(cur, cur | (CLAIMED << READER_SHIFT), Ordering::SeqCst, Ordering::Acquire)
        .ok()?;
    h.fence_after_claim();
    let mut rescans = 0;
    let reader = announce::announcement(address_of(h), owner(cur));
    while announce::announced(slots, reader) {
        if rescans == ANNOUNCE_RESCANS {
            h.store(cur, Ordering::Release);
            return None;
        }
        rescans += 1;
        spin();
    }
    Some(cur)
}

/// Whether `word` is an allocated object's header claimed by `claim`.
#[inline]
pub fn is_claimed(word: u64) -> bool {
    is_allocated(word) && readers(word) == CLAIMED
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    const NO_SLOTS: &[AtomicUsize] = &[];

    #[test]
    fn round_trips_owner_and_length() {
        for (addr, l) in [(8usize, 1usize), (0x7fff_ffff_fff8, 65536), (0x1234_5678, 694)] {
            let w = encode(addr, l);
            assert!(is_allocated(w));
            assert_eq!((owner(w), len(w), readers(w)), (addr, l, 0));
        }
        assert_eq!(next_free(free_link(Some(41))), Some(41));
        assert_eq!(next_free(free_link(None)), None);
    }

    #[test]
    fn readers_block_free_and_must_match_owner() {
        let h = AtomicU64::new(encode(64, 100));
        assert_eq!(begin_read(&h, 72), Err(Refusal::OtherOwner));
        assert_eq!(begin_read(&h, 64), Ok(100));
        assert_eq!(try_free(&h, 64, None, NO_SLOTS), Err(Refusal::Busy));
        assert_eq!(end_read(&h, 64), Ok(()));
        assert_eq!(end_read(&h, 64), Err(Refusal::Busy));
        assert_eq!(try_free(&h, 64, Some(3), NO_SLOTS), Ok(100));
        assert_eq!(begin_read(&h, 64), Err(Refusal::Free));
    }

    #[test]
    fn claims_exclude_readers_and_readers_exclude_claims() {
        let h = AtomicU64::new(encode(64, 100));
        assert_eq!(begin_read(&h, 64), Ok(100));
        assert_eq!(claim(&h, NO_SLOTS), None, "a read object is not claimed");
        assert_eq!(end_read(&h, 64), Ok(()));
        let was = claim(&h, NO_SLOTS).expect("unread: claimed");
        assert_eq!(was, encode(64, 100));
        assert!(is_claimed(h.load(Ordering::Relaxed)));
        assert_eq!(begin_read(&h, 64), Err(Refusal::Claimed));
        assert_eq!(end_read(&h, 64), Err(Refusal::Busy), "a claim is not a reader to end");
        assert_eq!(try_free(&h, 64, None, NO_SLOTS), Err(Refusal::Busy));
        assert_eq!(without_readers(h.load(Ordering::Relaxed)), encode(64, 100));
        let free = AtomicU64::new(free_link(Some(2)));
        assert_eq!(claim(&free, NO_SLOTS), None, "free objects are not claimed");
    }

    #[test]
    fn announced_readers_refuse_claims_and_claims_refuse_them() {
        let h = AtomicU64::new(encode(64, 100));
        let slots: Vec<AtomicUsize> = (0..2).map(|_| AtomicUsize::new(0)).collect();
        let ours = announce::announcement(address_of(&h), 64);
        assert!(announce::announce(&slots[1], ours));
        assert_eq!(check_announced(&h, 64, Some(100)), Some(100));
        assert_eq!(check_announced(&h, 64, Some(99)), None, "wrong length");
        assert_eq!(check_announced(&h, 72, None), None, "another owner");
        assert_eq!(try_free(&h, 64, None, &slots), Err(Refusal::Busy));
        assert_eq!(claim(&h, &slots), None);
        assert_eq!(h.load(Ordering::Relaxed), encode(64, 100), "claims undone");
        slots[1].store(0, Ordering::Release);
        let was = claim(&h, &slots).expect("unread: claimed");
        assert!(announce::announce(&slots[0], ours));
        assert_eq!(check_announced(&h, 64, None), None, "a claimed object is not read");
        slots[0].store(0, Ordering::Release);
        h.store(was, Ordering::Release);
        // Another handle's announce (a stale copy about to fail its owner check, whose thread
        // may be preempted for long) never holds up the owner's free.
        assert!(announce::announce(&slots[0], announce::announcement(address_of(&h), 72)));
        assert_eq!(check_announced(&h, 72, None), None);
        assert_eq!(try_free(&h, 64, Some(1), &slots), Ok(100));
        assert_eq!(next_free(h.load(Ordering::Relaxed)), Some(1));
    }
}
