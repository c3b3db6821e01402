//! `contiguous` read mode: an object that crosses a page is read in place, through both layers,
//! whether the thread's announce slot is free (the mode's common case) or busy (a section held
//! open: the counted path), with no local copy, nothing copied, and the address a
//! scatter-gather section gets as its one segment (an address in the pool's pages, not a
//! buffer or a window). Huge objects are in place too.

mod common;

use std::sync::atomic::AtomicUsize;

use common::pattern;
use zsmalloc_core::{Pool, PoolConfig, ReadMode};

fn pool(page_size: u32) -> Pool {
    let cfg = PoolConfig { page_size, read_mode: ReadMode::Contiguous, ..PoolConfig::default() };
    Pool::new(cfg).unwrap()
}

/// Raw objects of `len` bytes until `n` of them cross a page (the others stay stored): the
/// words, each with whether its object crosses a page.
fn stored(p: &Pool, len: usize, n: usize) -> Vec<(Box<AtomicUsize>, bool)> {
    let mut out = Vec::new();
    let mut spanning = 0;
    while spanning < n {
        let w = Box::new(AtomicUsize::new(0));
        // SAFETY: the boxed word outlives its object (freed at the end of each test); the
        // section is ended at once.
        let split = unsafe {
            p.store_raw(&w, &pattern(out.len() as u64, len)).unwrap();
            let (_, n) = p.read_sg_begin_raw(&w, len).unwrap();
            p.read_end_raw(&w, Some(len)).unwrap();
            n
        };
        assert_eq!(split, 1, "contiguous: one segment");
        let sp = spans(p, &w, len);
        spanning += usize::from(sp);
        out.push((w, sp));
    }
    out
}

/// Whether the object of `w` crosses a page, by the pool's own counter: one read, counted
/// spanning or not.
fn spans(p: &Pool, w: &AtomicUsize, len: usize) -> bool {
    let before = p.stats().reads_spanning;
    let mut out = vec![0u8; len];
    // SAFETY: a live word.
    unsafe { p.read_into_raw(w, &mut out) }.unwrap();
    p.stats().reads_spanning > before
}

/// The one segment a scatter-gather section nested in an open section gets.
fn sg_address(p: &Pool, w: &AtomicUsize, len: usize) -> *const u8 {
    // SAFETY: a live word; the nested section is ended at once.
    unsafe {
        let (segs, n) = p.read_sg_begin_raw(w, len).unwrap();
        assert_eq!(n, 1);
        p.read_end_raw(w, Some(len)).unwrap();
        segs[0].0
    }
}

#[test]
fn spanning_raw_reads_are_in_place_and_copy_nothing() {
    for (page, len) in [(4096u32, 3000usize), (16384, 9000), (16384, 2500)] {
        let p = pool(page);
        let ws = stored(&p, len, 8);
        let before = p.stats();
        let mut spanning = 0;
        for (i, (w, sp)) in ws.iter().enumerate() {
            // SAFETY: a live word; no local copy (contiguous never copies); ended below.
            unsafe {
                let ptr = p.read_begin_raw(w, len, std::ptr::null_mut()).unwrap();
                assert_eq!(std::slice::from_raw_parts(ptr, len), &pattern(i as u64, len)[..]);
                assert_eq!(ptr, sg_address(&p, w, len), "in place, in the pool's pages");
                p.read_end_raw(w, Some(len)).unwrap();
            }
            spanning += u64::from(*sp);
        }
        let after = p.stats();
        assert_eq!(after.reads - before.reads, 2 * ws.len() as u64);
        assert_eq!(after.reads_spanning - before.reads_spanning, 2 * spanning);
        assert_eq!(after.read_copy_bytes, 0, "nothing copied");
        let class_copied: u64 = p.class_stats().iter().map(|c| c.read_copy_bytes).sum();
        assert_eq!(class_copied, 0);
        for (w, _) in &ws {
            // SAFETY: a live word with no section open.
            unsafe { p.free_raw(w) }.unwrap();
        }
    }
}

/// With this thread's announce slot held by an open section, the next sections are counted in
/// their headers: still in place, and ended in any order.
#[test]
fn spanning_reads_with_the_announce_slot_busy_are_in_place() {
    let p = pool(4096);
    let len = 3000;
    let ws = stored(&p, len, 6);
    let spanning: Vec<&AtomicUsize> = ws.iter().filter(|(_, sp)| *sp).map(|(w, _)| &**w).collect();
    // SAFETY: live words; every section is ended below, in reverse.
    unsafe {
        let ptrs: Vec<*const u8> = spanning
            .iter()
            .map(|w| p.read_begin_raw(w, len, std::ptr::null_mut()).unwrap())
            .collect();
        for (w, &ptr) in spanning.iter().zip(&ptrs) {
            assert_eq!(ptr, sg_address(&p, w, len));
        }
        for w in spanning.iter().rev() {
            p.read_end_raw(w, Some(len)).unwrap();
        }
        for (w, _) in &ws {
            p.free_raw(w).unwrap(); // nothing left registered
        }
    }
    assert_eq!(p.stats().read_copy_bytes, 0);
}

#[test]
fn spanning_safe_reads_are_in_place() {
    let p = pool(4096);
    let hs: Vec<_> = (0..12).map(|i| p.store(&pattern(i, 3000)).unwrap()).collect();
    let before = p.stats();
    let mut spanning = 0;
    for (i, h) in hs.iter().enumerate() {
        let sg = p.read_sg(h).unwrap();
        assert_eq!(sg.segments().len(), 1, "contiguous: one segment");
        spanning += u64::from(sg.spanning());
        let mut local = [0u8; 0]; // contiguous never copies
        let sec = p.read(h, &mut local).unwrap();
        assert_eq!(&sec[..], &pattern(i as u64, 3000)[..]);
        assert_eq!(sec.as_ptr(), sg.segments()[0].as_ptr(), "in place");
    }
    assert!(spanning > 0, "some objects cross a page");
    let after = p.stats();
    assert_eq!(after.reads_spanning - before.reads_spanning, 2 * spanning);
    assert_eq!(after.read_copy_bytes, 0);
}

#[test]
fn huge_objects_are_read_in_place() {
    let p = pool(4096);
    let w = AtomicUsize::new(0);
    let data = pattern(7, 4000);
    // SAFETY: `w` outlives its object; the section is ended at once.
    unsafe {
        p.store_raw(&w, &data).unwrap();
        let ptr = p.read_begin_raw(&w, 4000, std::ptr::null_mut()).unwrap();
        assert_eq!(std::slice::from_raw_parts(ptr, 4000), &data[..]);
        assert_eq!(ptr, sg_address(&p, &w, 4000));
        p.read_end_raw(&w, Some(4000)).unwrap();
        p.free_raw(&w).unwrap();
    }
    assert_eq!(p.stats().read_copy_bytes, 0);
}
