//! loom models of the header protocol that non-huge reads use (`header.rs`, `announce.rs`): a
//! reader announces the header in its thread's slot (or, when it has none, counts itself in the
//! header) and holds nothing else; compaction claims a header before it moves the object,
//! rewrites the handle word, frees the old slot, and the slot's bytes are then reused. The real
//! `announce`, `check_announced`, `begin_read`, `end_read`, `claim` and `try_free` run on loom's
//! atomics.
//!
//! The world: one object of the handle at `OWNER`, first in slot A, named by a handle word. Each
//! slot has a header word and the object's bytes in a loom `UnsafeCell`, so loom reports any read
//! of a slot's bytes that is not ordered after their last write (a data race), and the tests
//! assert that a reader reads the live object. Pages keep their role (`arena.rs`), which the
//! model reflects by giving each header word a fixed place: a stale reader finds a header, a
//! freelist link or a claim there, never the bytes of another object.
//!
//! Run: `scripts/test-loom.sh`.

#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use zsmalloc_core::header::{self, Refusal};

/// The handle word's address, recorded as the owner in the header.
const OWNER: usize = 0x1000;
const LEN: usize = 100;
const ALIVE: u64 = 0x5eed_0b1e_c7ed_da7a;
/// What a reused slot holds: another object's bytes.
const REUSED: u64 = 0xdead;
const WORD_A: usize = 0xa1;
const WORD_B: usize = 0xb1;

struct Slot {
    header: AtomicU64,
    bytes: UnsafeCell<u64>,
}

struct World {
    handle: AtomicUsize,
    a: Slot,
    b: Slot,
    /// Two threads' announce slots (`announce.rs`), scanned by every claim.
    readers: [AtomicUsize; 2],
}

impl World {
    fn new() -> Arc<World> {
        Arc::new(World {
            handle: AtomicUsize::new(WORD_A),
            a: Slot {
                header: AtomicU64::new(header::encode(OWNER, LEN)),
                bytes: UnsafeCell::new(ALIVE),
            },
            b: Slot { header: AtomicU64::new(header::free_link(None)), bytes: UnsafeCell::new(0) },
            readers: [AtomicUsize::new(0), AtomicUsize::new(0)],
        })
    }

    fn slot(&self, word: usize) -> &Slot {
        if word == WORD_A {
            &self.a
        } else {
            &self.b
        }
    }

    /// The pool's `pin_object` for a non-huge object, then the read and its end: announced in
    /// announce slot `me` (`header::begin_announced`), else counted in the header (`pin_slow`).
    fn read(&self, me: Option<usize>) -> Result<u64, Refusal> {
        if let Some(slot) = me.map(|i| &self.readers[i]) {
            let word = self.handle.load(Ordering::Acquire);
            let s = self.slot(word);
            if header::begin_announced(slot, &s.header, OWNER, Some(LEN)).is_some() {
                // SAFETY: loom's cell checks this read against every write of the bytes.
                let v = s.bytes.with(|p| unsafe { *p });
                slot.store(0, Ordering::Release);
                return Ok(v);
            }
        }
        loop {
            let word = self.handle.load(Ordering::Acquire);
            let s = self.slot(word);
            match header::begin_read(&s.header, OWNER) {
                Ok(len) => {
                    assert_eq!(len, LEN);
                    // SAFETY: loom's cell checks this read against every write of the bytes.
                    let v = s.bytes.with(|p| unsafe { *p });
                    header::end_read(&s.header, OWNER).expect("our registration");
                    return Ok(v);
                }
                Err(Refusal::Claimed) => thread::yield_now(), // being moved
                Err(_) if self.handle.load(Ordering::Acquire) != word => {} // moved: follow
                Err(r) => return Err(r),
            }
        }
    }

    /// Compaction of the object (under the class lock in the pool): claim, copy, publish the
    /// copy's header and the handle word, free the old slot, and reuse its bytes at once (the
    /// worst case: a store into the freed slot, or its page handed to another zspage of the
    /// same role). Returns whether it moved the object; it never waits for a reader.
    fn compact(&self) -> bool {
        let Some(was) = header::claim(&self.a.header, &self.readers) else {
            return false; // read right now: skip
        };
        // SAFETY: claimed: readers back off; the copy's slot is free and unreachable.
        let v = self.a.bytes.with(|p| unsafe { *p });
        self.b.bytes.with_mut(|p| unsafe { *p = v });
        self.b.header.store(header::without_readers(was), Ordering::Release);
        self.handle.store(WORD_B, Ordering::Release);
        self.a.header.store(header::free_link(None), Ordering::Release);
        // SAFETY: the slot is free; a reader can only register on an allocated header.
        self.a.bytes.with_mut(|p| unsafe { *p = REUSED });
        true
    }
}

/// A reader racing one compaction reads the live object (from A or from B), never a claimed,
/// freed or reused slot, and the compaction never moves an object mid-read.
#[test]
fn reader_and_compaction_never_race() {
    loom::model(|| {
        let w = World::new();
        let c = {
            let w = w.clone();
            thread::spawn(move || w.compact())
        };
        assert_eq!(w.read(Some(0)), Ok(ALIVE));
        let moved = c.join().unwrap();
        assert_eq!(w.handle.load(Ordering::Relaxed), if moved { WORD_B } else { WORD_A });
        let h = w.slot(w.handle.load(Ordering::Relaxed));
        assert_eq!(header::readers(h.header.load(Ordering::Relaxed)), 0, "registration ended");
    });
}

/// A free (the owner's, under the class lock) and a read of the same object: the free is
/// refused while the read is registered; once it succeeds, the slot is reused and a late reader
/// is refused, never reading the reused bytes.
#[test]
fn free_is_refused_while_read_and_a_freed_slot_is_never_read() {
    loom::model(|| {
        let w = World::new();
        let r = {
            let w = w.clone();
            thread::spawn(move || w.read(Some(1)))
        };
        let freed = header::try_free(&w.a.header, OWNER, None, &w.readers);
        if freed.is_ok() {
            // SAFETY: freed: a reader can only register on an allocated header.
            w.a.bytes.with_mut(|p| unsafe { *p = REUSED });
        }
        match r.join().unwrap() {
            Ok(v) => assert_eq!(v, ALIVE),
            Err(e) => {
                assert_eq!(e, Refusal::Free);
                assert!(freed.is_ok(), "refused although never freed");
            }
        }
        assert!(freed.is_ok() || freed == Err(Refusal::Busy), "{freed:?}");
    });
}

/// Two readers at once share the object, one announced and one counted (a thread without a
/// slot); a compaction between them never moves it mid-read. The counted reader makes a single
/// attempt (two threads retrying on a claimed header are an unbounded model for loom, and one
/// retrying reader is covered above).
#[test]
fn two_readers_and_a_compaction() {
    loom::model(|| {
        let w = World::new();
        let c = {
            let w = w.clone();
            thread::spawn(move || w.compact())
        };
        let once = {
            let w = w.clone();
            thread::spawn(move || {
                let word = w.handle.load(Ordering::Acquire);
                let s = w.slot(word);
                header::begin_read(&s.header, OWNER).ok()?;
                // SAFETY: loom's cell checks this read against every write of the bytes.
                let v = s.bytes.with(|p| unsafe { *p });
                header::end_read(&s.header, OWNER).expect("our registration");
                Some(v)
            })
        };
        assert_eq!(w.read(Some(0)), Ok(ALIVE));
        let second = once.join().unwrap();
        assert!(second.is_none() || second == Some(ALIVE), "{second:?}");
        c.join().unwrap();
    });
}
