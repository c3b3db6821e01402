//! What zblock and malloc keep for each object outside its memory, so that a handle word is
//! proven before anything is dereferenced: the handle word's frame (backend marker and pool id),
//! and the slot's state word and owner, with the lock-free count of open read sections.
//!
//! The handle word:
//!
//! ```text
//!  63 61 60    56 55      44 43                                   0
//! +-----+--------+----------+--------------------------------------+
//! |  0  | marker | pool id  |  the backend's fields (seq lowest)   |
//! +-----+--------+----------+--------------------------------------+
//! ```
//!
//! The top three bits are zsmalloc's tag field, which a zsmalloc pool never leaves 0: a zblock
//! or malloc word given to zsmalloc is refused there, and a zsmalloc word (tag non-zero) is
//! refused here. The marker tells the two backends' words apart, the pool id (one counter for
//! both backends, wrapping: two pools may share one; the owner check still tells them apart) the
//! pools. The word alone proves nothing: the backend finds the slot's record from its fields,
//! and the record's state and owner must match before anything is dereferenced.
//!
//! The state word:
//!
//! ```text
//!  63     34+SEQ_BITS  34 33      17  16   15        0
//! +--------+------------+----------+------+-----------+
//! |   0    |    seq     |  length  | live |  readers  |
//! +--------+------------+----------+------+-----------+
//! ```
//!
//! Protocol. Everything that changes a slot (store, free, move) is done by one thread at a time
//! (the backend's lock, or a slot not yet published); readers hold nothing. A store writes the
//! owner, then the bytes, then publishes the state word (Release) with the next sequence number.
//! A reader loads the state, checks it is live with the handle word's sequence number and that
//! the owner is the handle word's address, then counts itself in with a compare-and-swap of that
//! very state (Acquire: it sees the bytes). A free swaps a state with no reader for a dead one
//! (same sequence), a move swaps it for the next sequence (then writes the new owner): either
//! makes a reader's compare-and-swap on the old state fail, and a counted reader makes them fail
//! (`Busy`). Records outlive their slots' objects (they are freed with the pool), so a stale word
//! is refused by its sequence number rather than followed into freed memory.

use std::sync::atomic::{AtomicU16, AtomicU64, AtomicUsize, Ordering};

use crate::error::{Error, Result};

/// The backend a handle word belongs to (its marker).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    Zblock = 0x15,
    Malloc = 0x16,
}

const MARKER_SHIFT: u32 = 56;
const POOL_SHIFT: u32 = 44;
/// Pool ids are 1..=4095.
pub(crate) const POOL_ID_MASK: u16 = 0xfff;
/// The bits below the pool id, laid out by each backend.
pub(crate) const FIELD_BITS: u32 = POOL_SHIFT;

/// The pool ids of zblock and malloc pools.
static NEXT_POOL_ID: AtomicU16 = AtomicU16::new(0);

/// A pool's handle-word frame: its backend's marker and its pool id.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WordFrame {
    marker: Marker,
    pool: u16,
}

impl WordFrame {
    /// The frame of a new pool of `marker`'s backend (the next pool id, never 0).
    pub fn new(marker: Marker) -> WordFrame {
        let pool = loop {
            let id = NEXT_POOL_ID.fetch_add(1, Ordering::Relaxed) & POOL_ID_MASK;
            if id != 0 {
                break id;
            }
        };
        WordFrame { marker, pool }
    }

    /// The frame of pool `pool` (1..=4095), for the encoding's tests.
    #[cfg(test)]
    pub fn of(marker: Marker, pool: u16) -> WordFrame {
        debug_assert!(pool != 0 && pool <= POOL_ID_MASK);
        WordFrame { marker, pool }
    }

    /// The handle word of this pool with the backend's `fields` (below `FIELD_BITS`).
    #[inline]
    pub fn encode(self, fields: usize) -> usize {
        debug_assert!(fields >> FIELD_BITS == 0);
        ((self.marker as usize) << MARKER_SHIFT) | ((self.pool as usize) << POOL_SHIFT) | fields
    }

    /// The backend's fields of `word` if it is a word of this pool; the reason otherwise.
    #[inline]
    pub fn decode(self, word: usize) -> std::result::Result<usize, &'static str> {
        if word == 0 {
            return Err("empty handle");
        }
        if word >> MARKER_SHIFT != self.marker as usize {
            return Err(match self.marker {
                Marker::Zblock => "not a zblock handle (another backend's, or garbage)",
                Marker::Malloc => "not a malloc handle (another backend's, or garbage)",
            });
        }
        if ((word >> POOL_SHIFT) as u16 & POOL_ID_MASK) != self.pool {
            return Err(match self.marker {
                Marker::Zblock => "a handle of another zblock pool",
                Marker::Malloc => "a handle of another malloc pool",
            });
        }
        Ok(word & ((1 << FIELD_BITS) - 1))
    }
}

/// Most read sections open on one object at once (as zsmalloc's raw layer).
pub(crate) const MAX_READERS: u32 = 65_535;

const READERS_MASK: u64 = 0xffff;
const LIVE: u64 = 1 << 16;
const LEN_SHIFT: u32 = 17;
const LEN_MASK: u64 = (1 << 17) - 1;
const SEQ_SHIFT: u32 = 34;

/// A slot's state word, its sequence number `SEQ_BITS` wide (as many bits as the backend's handle
/// word holds, so that the two compare equal until they wrap together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct State<const SEQ_BITS: u32>(pub u64);

impl<const SEQ_BITS: u32> State<SEQ_BITS> {
    /// Sequence numbers (wrapping).
    pub const SEQ_MASK: u16 = ((1u32 << SEQ_BITS) - 1) as u16;

    #[inline]
    pub fn live(len: usize, seq: u16) -> Self {
        debug_assert!(len as u64 <= LEN_MASK);
        State(LIVE | (len as u64) << LEN_SHIFT | u64::from(seq & Self::SEQ_MASK) << SEQ_SHIFT)
    }
    #[inline]
    pub fn is_live(self) -> bool {
        self.0 & LIVE != 0
    }
    #[inline]
    pub fn len(self) -> usize {
        ((self.0 >> LEN_SHIFT) & LEN_MASK) as usize
    }
    #[inline]
    pub fn seq(self) -> u16 {
        (self.0 >> SEQ_SHIFT) as u16 & Self::SEQ_MASK
    }
    #[inline]
    pub fn readers(self) -> u32 {
        (self.0 & READERS_MASK) as u32
    }
    /// The same slot, dead (the sequence number kept, so the next store moves past it).
    #[inline]
    pub fn dead(self) -> Self {
        State(u64::from(self.seq()) << SEQ_SHIFT)
    }
    /// The sequence number a new object (or a moved one) of this slot gets.
    #[inline]
    pub fn next_seq(self) -> u16 {
        (self.seq() + 1) & Self::SEQ_MASK
    }
    /// The same object, moved: the next sequence number (readers of the old word fail their
    /// count-in from then on).
    #[inline]
    pub fn moved(self) -> Self {
        State::live(self.len(), self.next_seq())
    }
}

/// One slot's record: its state word and its owner.
#[derive(Default)]
pub(crate) struct SlotRec<const SEQ_BITS: u32> {
    pub state: AtomicU64,
    /// Address of the owning handle word (meaningful while live).
    pub owner: AtomicUsize,
}

impl<const SEQ_BITS: u32> SlotRec<SEQ_BITS> {
    #[inline]
    pub fn load(&self) -> State<SEQ_BITS> {
        State(self.state.load(Ordering::Acquire))
    }

    /// Swaps `cur` for `new`; false if the state changed meanwhile.
    #[inline]
    pub fn swap(&self, cur: State<SEQ_BITS>, new: State<SEQ_BITS>) -> bool {
        self.state.compare_exchange(cur.0, new.0, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    /// Publishes `state` (Release: the owner and the bytes written before it go with it).
    #[inline]
    pub fn publish(&self, state: State<SEQ_BITS>) {
        self.state.store(state.0, Ordering::Release);
    }

    /// Whether `s` is the live object of sequence number `seq`, owned by the handle word at
    /// `addr`.
    #[inline]
    pub fn check(&self, s: State<SEQ_BITS>, seq: u16, addr: usize) -> Result<()> {
        if !s.is_live() || s.seq() != seq {
            return Err(Error::InvalidHandle("stale or freed handle"));
        }
        if self.owner.load(Ordering::Acquire) != addr {
            return Err(Error::InvalidHandle("the object belongs to another handle word"));
        }
        Ok(())
    }

    /// Swaps the state `s` (already checked against `seq` and `addr`) for `f(state)` once
    /// `ok(state)` accepts it, loading and checking the state again after every lost race.
    /// Returns the state swapped out.
    #[inline]
    pub fn update(
        &self,
        mut s: State<SEQ_BITS>,
        seq: u16,
        addr: usize,
        ok: impl Fn(State<SEQ_BITS>) -> Result<()>,
        f: impl Fn(State<SEQ_BITS>) -> State<SEQ_BITS>,
    ) -> Result<State<SEQ_BITS>> {
        loop {
            ok(s)?;
            if self.swap(s, f(s)) {
                return Ok(s);
            }
            s = self.load();
            self.check(s, seq, addr)?;
        }
    }

    /// Counts a reader in (`s` as for `update`; `mem_len`, if given, must be the stored length).
    #[inline]
    pub fn count_in(
        &self,
        s: State<SEQ_BITS>,
        seq: u16,
        addr: usize,
        mem_len: Option<usize>,
    ) -> Result<State<SEQ_BITS>> {
        let ok = |s: State<SEQ_BITS>| {
            if let Some(m) = mem_len.filter(|&m| m != s.len()) {
                return Err(wrong_len("read", m, s.len()));
            }
            if s.readers() >= MAX_READERS {
                return Err(Error::TooManyReaders);
            }
            Ok(())
        };
        self.update(s, seq, addr, ok, |s| State(s.0 + 1))
    }

    /// Counts a reader out (`s` as for `update`; `mem_len`, if given, must be the stored length).
    #[inline]
    pub fn count_out(
        &self,
        s: State<SEQ_BITS>,
        seq: u16,
        addr: usize,
        mem_len: Option<usize>,
    ) -> Result<State<SEQ_BITS>> {
        let ok = |s: State<SEQ_BITS>| {
            if s.readers() == 0 {
                return Err(Error::InvalidArgument("no read section in progress".into()));
            }
            if let Some(m) = mem_len.filter(|&m| m != s.len()) {
                return Err(wrong_len("read", m, s.len()));
            }
            Ok(())
        };
        self.update(s, seq, addr, ok, |s| State(s.0 - 1))
    }
}

/// A free or a move waits for no reader: it is refused while one is counted in.
#[inline]
pub(crate) fn no_reader<const SEQ_BITS: u32>(s: State<SEQ_BITS>) -> Result<()> {
    if s.readers() != 0 {
        Err(Error::Busy)
    } else {
        Ok(())
    }
}

/// A length that is not the stored one.
pub(crate) fn wrong_len(what: &str, given: usize, stored: usize) -> Error {
    Error::InvalidArgument(format!("{what} length {given} differs from the stored length {stored}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_and_refuse_others() {
        let z = WordFrame::of(Marker::Zblock, 4095);
        let w = z.encode((1 << FIELD_BITS) - 1);
        assert_eq!(z.decode(w), Ok((1 << FIELD_BITS) - 1));
        assert_eq!(w >> 61, 0, "zsmalloc's tag field stays 0");
        assert!(WordFrame::of(Marker::Zblock, 7).decode(w).is_err(), "another pool's");
        assert!(WordFrame::of(Marker::Malloc, 4095).decode(w).is_err(), "another backend's");
        assert!(z.decode(0).is_err());
        assert!(z.decode(1 << 61 | 5).is_err(), "a zsmalloc word");
    }

    #[test]
    fn state_fields() {
        let s = State::<10>::live(65511, 1023);
        assert!(s.is_live());
        assert_eq!((s.len(), s.seq(), s.readers()), (65511, 1023, 0));
        assert_eq!(State::<10>(s.0 + 3).readers(), 3);
        assert!(!s.dead().is_live());
        assert_eq!(s.dead().seq(), 1023);
        assert_eq!(s.next_seq(), 0, "wraps at the word's width");
        assert_eq!(State::<12>::live(1, 1023).next_seq(), 1024);
        assert_eq!(s.moved(), State::live(65511, 0));
    }

    #[test]
    fn readers_count_in_and_out_and_block_frees() {
        let rec = SlotRec::<12>::default();
        rec.owner.store(0x1000, Ordering::Relaxed);
        rec.publish(State::live(100, 5));
        let s = rec.load();
        assert_eq!(rec.check(s, 5, 0x1000), Ok(()));
        assert!(rec.check(s, 6, 0x1000).is_err(), "stale sequence number");
        assert!(rec.check(s, 5, 0x2000).is_err(), "another owner");
        assert!(rec.count_in(s, 5, 0x1000, Some(99)).is_err(), "wrong length");
        rec.count_in(s, 5, 0x1000, Some(100)).unwrap();
        assert_eq!(rec.update(rec.load(), 5, 0x1000, no_reader, State::dead), Err(Error::Busy));
        rec.count_out(rec.load(), 5, 0x1000, None).unwrap();
        assert!(rec.count_out(rec.load(), 5, 0x1000, None).is_err(), "no section open");
        rec.update(rec.load(), 5, 0x1000, no_reader, State::dead).unwrap();
        assert!(!rec.load().is_live());
    }
}
