//! loom models of a saturated header (`header.rs`, `excess.rs`): counted sections of one object
//! beyond the header's reader bits live in the excess table, under its lock, and a claim (a
//! free, a handle move, compaction) racing them never takes an object a section holds. The real
//! `begin_read`, `end_read`, `claim`, `claim_owned` and `try_free` run on loom's atomics and
//! loom's mutex.
//!
//! The world: one object of the handle at `OWNER` whose header already counts 5 sections (begun
//! earlier); its bytes are in a loom `UnsafeCell`, so loom reports a read that is not ordered
//! after a claimer's write. A reader thread begins two more sections (5 -> 6, then one in the
//! excess table), reads, and ends both; an ender thread ends the 5 earlier sections (a section
//! may be ended by another thread); the main thread claims once, as compaction, a free or a move
//! does under the class lock, and writes the bytes if the claim succeeds.
//!
//! Run: `scripts/test-loom.sh`.

#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use zsmalloc_core::excess;
use zsmalloc_core::header::{self, Refusal};

const OWNER: usize = 0x1000;
const OTHER: usize = 0x2000;
const LEN: usize = 100;
const ALIVE: u64 = 0x5eed_0b1e_c7ed_da7a;
const REUSED: u64 = 0xdead;
/// Counted sections already open: the header's reader bits (bits 3..1) at 5, one below
/// saturation.
const EARLIER: u64 = 5;

struct World {
    header: AtomicU64,
    bytes: UnsafeCell<u64>,
    /// No announced readers in these models: claims scan an empty set of announce slots.
    slots: [AtomicUsize; 0],
}

impl World {
    fn new() -> Arc<World> {
        Arc::new(World {
            header: AtomicU64::new(header::encode(OWNER, LEN) + (EARLIER << 1)),
            bytes: UnsafeCell::new(ALIVE),
            slots: [],
        })
    }

    /// Two nested sections: begun (the second in the excess table when the first saturated the
    /// header), read, ended. `Err` if the object was claimed first.
    fn read_twice(&self) -> Result<(), Refusal> {
        header::begin_read(&self.header, OWNER)?;
        if let Err(r) = header::begin_read(&self.header, OWNER) {
            header::end_read(&self.header, OWNER).expect("our first section");
            return Err(r);
        }
        // SAFETY: loom's cell checks this read against every write of the bytes.
        assert_eq!(self.bytes.with(|p| unsafe { *p }), ALIVE);
        header::end_read(&self.header, OWNER).expect("our second section");
        header::end_read(&self.header, OWNER).expect("our first section");
        Ok(())
    }

    /// Ends the earlier sections from another thread.
    fn end_earlier(&self) {
        for _ in 0..EARLIER {
            header::end_read(&self.header, OWNER).expect("an open section");
        }
    }

    fn at(&self) -> usize {
        header::address_of(&self.header)
    }
}

#[derive(Clone, Copy)]
enum Claimer {
    Compaction,
    Free,
    Move,
}

/// One claim by `who` racing the reader and the ender; checks that a successful claim never
/// overlaps a section (loom's cell) and that everything ends balanced.
fn race(who: Claimer) {
    loom::model(move || {
        let w = World::new();
        let reader = {
            let w = w.clone();
            thread::spawn(move || w.read_twice())
        };
        let ender = {
            let w = w.clone();
            thread::spawn(move || w.end_earlier())
        };
        let claimed = match who {
            Claimer::Compaction => header::claim(&w.header, &w.slots).map(|was| {
                // SAFETY: claimed: no section holds the object.
                w.bytes.with_mut(|p| unsafe { *p = ALIVE });
                w.header.store(was, Ordering::Release); // moved back: the claim ends
            }),
            Claimer::Free => header::try_free(&w.header, OWNER, None, &w.slots).ok().map(|_| {
                // SAFETY: freed: a reader registers only on an allocated header.
                w.bytes.with_mut(|p| unsafe { *p = REUSED });
            }),
            Claimer::Move => header::claim_owned(&w.header, OWNER, &w.slots).ok().map(|was| {
                // SAFETY: claimed: no section holds the object.
                w.bytes.with_mut(|p| unsafe { *p = ALIVE });
                w.header.store(header::encode(OTHER, header::len(was)), Ordering::Release);
            }),
        };
        let read = reader.join().unwrap();
        ender.join().unwrap();
        match read {
            Ok(()) => {}
            Err(r) => {
                assert!(claimed.is_some(), "a reader refused without a claim: {r:?}");
                assert!(matches!(r, Refusal::Claimed | Refusal::Free | Refusal::OtherOwner));
            }
        }
        let now = w.header.load(Ordering::Relaxed);
        if header::is_allocated(now) {
            assert_eq!(header::readers(now), 0, "every section ended");
        }
        assert_eq!(excess::excess_of(w.at()), 0, "no excess left behind");
    });
}

#[test]
fn saturation_racing_compaction() {
    race(Claimer::Compaction);
}

#[test]
fn saturation_racing_a_free() {
    race(Claimer::Free);
}

#[test]
fn saturation_racing_a_handle_move() {
    race(Claimer::Move);
}
