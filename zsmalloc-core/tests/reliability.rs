//! Refusals that must change nothing: a handle moved onto itself is validated like any other
//! move; a refused read counts nothing; a store whose pages the system refuses (injected faults
//! at the arena's reserve, commit and page allocation) fails with `OutOfMemory` and leaves the
//! pool as it was, and the pool keeps working once the fault is gone.

use std::sync::atomic::{AtomicUsize, Ordering};

use zsmalloc_core::fault::{self, Point};
use zsmalloc_core::{Error, Pool, PoolConfig};

fn pool() -> Pool {
    Pool::new(PoolConfig::default()).unwrap()
}

/// `handle_move_raw(h, h)` refuses an empty word, garbage, another pool's handle and a stale
/// copy, as a move to another word would; a live handle of this pool stays as it is.
#[test]
fn a_move_onto_itself_is_validated() {
    let (a, b) = (pool(), pool());
    let h = AtomicUsize::new(0);
    // SAFETY: every word here outlives the pools' use of it; garbage is refused, never followed.
    unsafe {
        assert!(matches!(a.handle_move_raw(&h, &h), Err(Error::InvalidHandle(_))), "empty");
        h.store(0xdead_bee8, Ordering::Relaxed);
        assert!(matches!(a.handle_move_raw(&h, &h), Err(Error::InvalidHandle(_))), "garbage");
        h.store(0, Ordering::Relaxed);
        b.store_raw(&h, &[1; 100]).unwrap();
        assert!(a.handle_move_raw(&h, &h).is_err(), "another pool's handle");
        assert_eq!(b.handle_move_raw(&h, &h), Ok(()), "its own pool's: nothing to do");
        let copy = AtomicUsize::new(h.load(Ordering::Relaxed));
        assert!(b.handle_move_raw(&copy, &copy).is_err(), "a copy does not own the object");
        let mut out = [0u8; 100];
        assert_eq!(b.read_into_raw(&h, &mut out), Ok(100));
        assert_eq!(out, [1; 100]);
        b.free_raw(&h).unwrap();
        h.store(copy.load(Ordering::Relaxed), Ordering::Relaxed);
        assert!(b.handle_move_raw(&h, &h).is_err(), "a freed object's handle");
    }
}

/// A begin without a local copy on an object crossing a page is refused and counts no read.
#[test]
fn a_refused_read_counts_nothing() {
    let pool = pool();
    let hs: Vec<_> = (0..2).map(|_| Box::new(AtomicUsize::new(0))).collect();
    // SAFETY: the boxed words outlive their objects.
    unsafe {
        for h in &hs {
            pool.store_raw(h, &[4; 3000]).unwrap(); // the second crosses a page
        }
        let before = pool.stats();
        let e = pool.read_begin_raw(&hs[1], 3000, std::ptr::null_mut()).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
        let after = pool.stats();
        assert_eq!((after.reads, after.reads_spanning), (before.reads, before.reads_spanning));
        assert_eq!(pool.free_raw(&hs[1]), Ok(()), "nothing left registered");
        let p = pool.read_begin_raw(&hs[0], 3000, std::ptr::null_mut()).unwrap();
        assert_eq!(*p, 4);
        assert_eq!(pool.stats().reads, before.reads + 1, "a section begun counts");
        pool.read_end_raw(&hs[0], Some(3000)).unwrap();
        pool.free_raw(&hs[0]).unwrap();
    }
}

/// What a store must not change when it fails.
fn snapshot(pool: &Pool) -> (u64, u64, u64, u64) {
    let s = pool.stats();
    (pool.total_pages(), s.objs_allocated, s.objs_inuse, s.bytes_stored)
}

/// Faults at each point: the store that needs a new zspage fails with `OutOfMemory`, the pool and
/// the handle are unchanged, earlier objects read back, and the next store (fault gone) works.
#[test]
fn injected_faults_fail_stores_and_change_nothing() {
    // Commit: the first store of a fresh pool makes the first step of the range accessible.
    let pool = pool();
    let h = AtomicUsize::new(0);
    fault::arm(Point::Commit, 0, 1);
    // SAFETY: `h` outlives its object.
    unsafe {
        assert_eq!(pool.store_raw(&h, &[1; 100]), Err(Error::OutOfMemory));
        assert_eq!(h.load(Ordering::Relaxed), 0, "the handle stays empty");
        assert_eq!(snapshot(&pool), (0, 0, 0, 0));
        pool.store_raw(&h, &[1; 100]).unwrap();
    }
    assert_eq!(fault::arm(Point::Commit, 0, 0), 1, "one fault injected");

    // Pages: any new zspage; stores into existing zspages still succeed.
    let kept: Vec<_> = (0..3).map(|i| pool.store(&[i as u8; 3000]).unwrap()).collect();
    let before = snapshot(&pool);
    fault::arm(Point::Pages, 0, u32::MAX);
    let small = pool.store(&[9; 100]).expect("room in the zspage of the first object's class");
    assert_eq!(snapshot(&pool).3, before.3 + 100);
    drop(small);
    let before_small = snapshot(&pool);
    assert_eq!(before_small, before);
    for len in [2000usize, 4096, 1] {
        // 2000 and 4096 need a new zspage; 1 byte (class 32) too, a class not used yet.
        assert_eq!(pool.store(&vec![9; len]).err(), Some(Error::OutOfMemory), "len {len}");
        assert_eq!(pool.malloc(len).err(), Some(Error::OutOfMemory), "malloc of {len}");
        assert_eq!(snapshot(&pool), before_small);
    }
    let injected = fault::arm(Point::Pages, 0, 0);
    assert!(injected >= 6, "{injected}");
    for (i, k) in kept.iter().enumerate() {
        assert_eq!(pool.read_to_vec(k).unwrap(), vec![i as u8; 3000]);
    }
    let more = pool.store(&[5; 2000]).unwrap();
    assert_eq!(pool.read_to_vec(&more).unwrap(), vec![5; 2000]);
    drop((kept, more));
    pool.compact();

    // Reserve: a pool whose range could not be reserved has no pages: every store fails.
    fault::arm(Point::Reserve, 0, 1);
    let empty = Pool::new(PoolConfig::default()).unwrap();
    assert_eq!(empty.store(&[1; 10]).err(), Some(Error::OutOfMemory));
    assert_eq!(snapshot(&empty), (0, 0, 0, 0));
    fault::disarm_all();
    // SAFETY: `h` holds this pool's object.
    unsafe { pool.free_raw(&h) }.unwrap();
}

/// A fault between the zspages a run of stores needs: every store before it succeeded, the one
/// it hits fails alone, and all objects stored read back.
#[test]
fn a_fault_in_the_middle_of_a_run_loses_nothing() {
    let pool = pool();
    fault::arm(Point::Pages, 5, 1);
    let mut kept = Vec::new();
    let mut failures = 0;
    for i in 0..200u32 {
        match pool.store(&vec![i as u8; 1500]) {
            Ok(h) => kept.push((i, h)),
            Err(e) => {
                assert_eq!(e, Error::OutOfMemory);
                failures += 1;
            }
        }
    }
    fault::disarm_all();
    assert_eq!(failures, 1);
    for (i, h) in &kept {
        assert_eq!(pool.read_to_vec(h).unwrap(), vec![*i as u8; 1500]);
    }
    assert_eq!(pool.stats().objs_inuse, 199);
}
