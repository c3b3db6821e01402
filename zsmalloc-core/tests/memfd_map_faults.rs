//! Faults injected at the memfd backing's growth and at `map` mode's window mapping: a store
//! that needs the memfd to grow fails with `OutOfMemory` and changes nothing; a spanning read
//! whose mapping fails returns `MapFailed` (`ENOMEM`), holds nothing, and the object stays
//! intact, readable (also mapped, once the fault is gone) and freeable.

use std::sync::atomic::{AtomicUsize, Ordering};

use zsmalloc_core::fault::{self, Point};
use zsmalloc_core::{Backing, Error, Pool, PoolConfig, ReadMode};

/// What a store must not change when it fails.
fn snapshot(pool: &Pool) -> (u64, u64, u64, u64) {
    let s = pool.stats();
    (pool.total_pages(), s.objs_allocated, s.objs_inuse, s.bytes_stored)
}

fn pool(read_mode: ReadMode, backing: Backing) -> Pool {
    Pool::new(PoolConfig { read_mode, backing, ..PoolConfig::default() }).unwrap()
}

#[test]
fn a_store_that_needs_the_memfd_to_grow_fails_and_changes_nothing() {
    for mode in [ReadMode::Copy, ReadMode::Map, ReadMode::Contiguous] {
        let pool = pool(mode, Backing::Memfd);
        let h = AtomicUsize::new(0);
        let injected = fault::arm(Point::MemfdGrow, 0, 2);
        // SAFETY: `h` outlives its object.
        unsafe {
            assert_eq!(pool.store_raw(&h, &[1; 3000]), Err(Error::OutOfMemory), "{mode:?}");
            assert_eq!(h.load(Ordering::Relaxed), 0, "the handle stays empty");
            assert_eq!(snapshot(&pool), (0, 0, 0, 0));
            assert_eq!(pool.malloc(100).err(), Some(Error::OutOfMemory));
            assert_eq!(snapshot(&pool), (0, 0, 0, 0));
        }
        assert_eq!(fault::arm(Point::MemfdGrow, 0, 0), injected + 2, "two faults injected");
        // Once the fault is gone the memfd grows and the pool works.
        // SAFETY: as above.
        unsafe {
            pool.store_raw(&h, &[1; 3000]).unwrap();
            let mut out = [0u8; 3000];
            assert_eq!(pool.read_into_raw(&h, &mut out), Ok(3000));
            assert_eq!(out, [1; 3000]);
            pool.free_raw(&h).unwrap();
        }
    }
    // The anonymous backing has no memfd: the point is never reached.
    let anon = pool(ReadMode::Copy, Backing::Anonymous);
    let injected = fault::arm(Point::MemfdGrow, 0, 1);
    let h = anon.store(&[2; 100]).unwrap();
    assert_eq!(fault::arm(Point::MemfdGrow, 0, 0), injected, "no fault injected");
    drop(h);
}

/// Raw words of `n` objects of 3000 bytes that cross a page, each with its bytes; the other
/// objects stored on the way stay stored (with the pool, their words are leaked).
fn spanning(pool: &Pool, n: usize) -> Vec<(Box<AtomicUsize>, Vec<u8>)> {
    let mut out = Vec::new();
    let mut i = 0u8;
    while out.len() < n {
        let w = Box::new(AtomicUsize::new(0));
        let data: Vec<u8> = (0..3000).map(|k| (k as u8).wrapping_mul(i)).collect();
        i += 1;
        // SAFETY: the boxed word outlives its object; each section is ended at once.
        unsafe {
            pool.store_raw(&w, &data).unwrap();
            let (_, segs) = pool.read_sg_begin_raw(&w, 3000).unwrap();
            pool.read_end_raw(&w, Some(3000)).unwrap();
            if segs == 2 {
                out.push((w, data));
            } else {
                Box::leak(w);
            }
        }
    }
    out
}

#[test]
fn a_failed_window_mapping_fails_the_read_and_leaves_the_object_intact() {
    let pool = pool(ReadMode::Map, Backing::Memfd);
    let objs = spanning(&pool, 3);
    let before = pool.stats();
    for (w, data) in &objs {
        let injected = fault::arm(Point::MapWindow, 0, 1);
        // SAFETY: a live word; map mode needs no local copy.
        let e = unsafe { pool.read_begin_raw(w, 3000, std::ptr::null_mut()) }.unwrap_err();
        assert_eq!(e, Error::MapFailed { errno: libc::ENOMEM });
        assert_eq!(e.errno(), libc::ENOMEM);
        assert_eq!(fault::arm(Point::MapWindow, 0, 0), injected + 1, "one fault injected");
        assert_eq!(pool.map_slots_in_use(), 0, "no slot held");
        // Nothing registered: the object can be ended by nobody, read, mapped and moved.
        // SAFETY: a live word with no section open.
        unsafe {
            assert!(pool.read_end_raw(w, Some(3000)).is_err(), "no section is open");
            let mut out = vec![0u8; 3000];
            assert_eq!(pool.read_into_raw(w, &mut out), Ok(3000));
            assert_eq!(&out, data);
            let p = pool.read_begin_raw(w, 3000, std::ptr::null_mut()).unwrap();
            assert_eq!(std::slice::from_raw_parts(p, 3000), &data[..]);
            pool.read_end_at_raw(w, Some(3000), p).unwrap();
        }
    }
    let after = pool.stats();
    // A failed read counts nothing; each object was then read twice (copied out, mapped).
    assert_eq!(after.reads - before.reads, 2 * objs.len() as u64);
    assert_eq!(after.read_copy_bytes, 0);
    // Compaction may move them; they read back and free.
    pool.compact();
    for (w, data) in &objs {
        // SAFETY: live words with no section open.
        unsafe {
            let mut out = vec![0u8; 3000];
            assert_eq!(pool.read_into_raw(w, &mut out), Ok(3000));
            assert_eq!(&out, data);
            pool.free_raw(w).unwrap();
        }
    }
}

/// The safe layer's read of a spanning object fails the same way; its handle stays usable.
#[test]
fn a_failed_window_mapping_fails_a_safe_read() {
    let pool = pool(ReadMode::Map, Backing::Memfd);
    let hs: Vec<_> = (0..8).map(|i| pool.store(&[i as u8; 3000]).unwrap()).collect();
    let spanning: Vec<_> = hs.iter().filter(|h| pool.read_sg(h).unwrap().spanning()).collect();
    assert!(!spanning.is_empty());
    for h in spanning {
        let first = pool.read_to_vec(h).unwrap();
        fault::arm(Point::MapWindow, 0, 1);
        let mut none = [0u8; 0];
        let e = pool.read(h, &mut none).err();
        assert_eq!(e, Some(Error::MapFailed { errno: libc::ENOMEM }));
        fault::disarm_all();
        assert_eq!(&*pool.read(h, &mut none).unwrap(), &first[..]);
    }
    assert_eq!(pool.map_slots_in_use(), 0);
    drop(hs);
    assert_eq!(pool.stats().objs_inuse, 0);
}
