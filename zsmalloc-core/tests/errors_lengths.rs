//! Error paths of lengths and read sections: zero, oversized and wrong lengths are refused, the
//! read fast paths do all or nothing, and a section is ended once; the pool is intact after each
//! (`common/kept.rs`).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::kept::{assert_invalid_argument, compact_fully, pool, populated};
use common::pattern;
use zsmalloc_core::{Error, PoolConfig, HANDLE_SIZE};

#[test]
fn zero_length_is_einval_everywhere() {
    let p = pool(PoolConfig::default());
    let k = populated(&p);
    let before = (p.stats(), p.total_pages());
    assert_invalid_argument(p.store(&[]), "store");
    assert_invalid_argument(p.malloc(0), "malloc");
    let h = AtomicUsize::new(0);
    // SAFETY: `h` lives on this frame and stays empty (every call fails).
    unsafe {
        assert_invalid_argument(p.store_raw(&h, &[]), "store_raw");
        assert_invalid_argument(p.malloc_raw(&h, 0), "malloc_raw");
    }
    assert_eq!(h.load(Ordering::Relaxed), 0, "a failed store leaves the handle empty");
    assert_eq!((p.stats(), p.total_pages()), before);
    k.check_works();
}

#[test]
fn oversized_is_enospc_and_a_full_page_fits() {
    for page in [4096u32, 16384, 65536] {
        let p = pool(PoolConfig { page_size: page, ..Default::default() });
        let k = populated(&p);
        let before = (p.stats(), p.total_pages());
        let big = vec![7u8; page as usize + 1];
        let want = Error::TooLarge { len: page as usize + 1, max: page as usize };
        assert_eq!(p.store(&big).unwrap_err(), want);
        assert_eq!(want.errno(), libc::ENOSPC);
        assert_eq!(p.malloc(page as usize + 1).unwrap_err(), want);
        assert!(matches!(p.malloc(usize::MAX), Err(Error::TooLarge { .. })));
        let h = AtomicUsize::new(0);
        // SAFETY: `h` lives on this frame and stays empty (the call fails).
        assert_eq!(unsafe { p.store_raw(&h, &big) }.unwrap_err(), want);
        assert_eq!((p.stats(), p.total_pages()), before);
        // Exactly a page is accepted (huge class) and reads back.
        let full = pattern(9, page as usize);
        let h = p.store(&full).unwrap();
        assert_eq!(p.read_to_vec(&h).unwrap(), full);
        drop(h);
        k.check_works();
    }
}

#[test]
fn wrong_read_and_write_lengths_are_refused() {
    let p = pool(PoolConfig::default());
    let mut k = populated(&p);
    let i = k.store(77, 1234);
    let h = k.word(i);
    let mut local = vec![0u8; 8192];
    let stats = p.stats();
    // SAFETY: `h` is kept by `k`; `local` is large enough; failed begins open no section.
    unsafe {
        for wrong in [0usize, 1, 1233, 1235, 4096] {
            assert_invalid_argument(p.read_begin_raw(h, wrong, local.as_mut_ptr()), "read_begin");
            assert_invalid_argument(p.read_sg_begin_raw(h, wrong), "read_sg_begin");
            assert_invalid_argument(p.write_raw(h, &vec![0; wrong.max(1)]), "write_raw");
        }
        // A section is open: ending it with the wrong length is refused and leaves it open.
        p.read_begin_raw(h, 1234, local.as_mut_ptr()).unwrap();
        assert_invalid_argument(p.read_end_raw(h, Some(1000)), "read_end");
        assert_eq!(p.free_raw(h), Err(Error::Busy), "the section is still open");
        p.read_end_raw(h, Some(1234)).unwrap();
        // No section open: ending one is refused (and must not unbalance the zspage pin).
        assert_invalid_argument(p.read_end_raw(h, Some(1234)), "read_end without begin");
        assert_invalid_argument(p.read_end_raw(h, None), "read_end without begin");
    }
    // Only the successful section counted as a read; failed ones counted nothing.
    let after = p.stats();
    assert_eq!(after.reads, stats.reads + 1);
    // Safe layer: buffers too small, wrong write length.
    let safe = p.store(&pattern(5, 2000)).unwrap();
    let mut small = vec![0u8; 2000 + HANDLE_SIZE - 1];
    assert_invalid_argument(p.read(&safe, &mut small).map(|_| ()), "read: local copy too small");
    let mut out = vec![0u8; 1999];
    assert_invalid_argument(p.read_into(&safe, &mut out), "read_into: buffer too small");
    let mut m = p.malloc(100).unwrap();
    assert_invalid_argument(p.write(&mut m, &[1; 99]), "write shorter");
    assert_invalid_argument(p.write(&mut m, &[1; 101]), "write longer");
    p.write(&mut m, &pattern(6, 100)).unwrap();
    assert_eq!(p.read_to_vec(&m).unwrap(), pattern(6, 100));
    assert_eq!(p.read_to_vec(&safe).unwrap(), pattern(5, 2000));
    drop((m, safe));
    // The pin is balanced: compaction can still empty the zspages around `h`.
    k.check_works();
    compact_fully(&p);
}

/// The bindings' fast paths (`read_begin_in_place`, `read_end_recorded`) either do the whole
/// job or change nothing, so the general path after them sees the pool as it was.
#[test]
fn read_fast_paths_do_all_or_nothing() {
    let p = pool(PoolConfig::default());
    let mut k = populated(&p);
    let page = p.config().page_size as usize;
    let plain = k.store(50, 700);
    let huge = k.store(51, page);
    // An object that crosses a page: 1500-byte objects in 4 KiB pages do within three.
    let first = k.objs.len();
    (0..3).for_each(|seed| _ = k.store(52 + seed, 1500));
    let spanning = (first..first + 3)
        .find(|&i| {
            // SAFETY: the word is kept by `k`; the section is ended at once.
            unsafe {
                let (_, n) = p.read_sg_begin_raw(k.word(i), 1500).unwrap();
                p.read_end_raw(k.word(i), Some(1500)).unwrap();
                n == 2
            }
        })
        .expect("a 1500-byte object crosses a page");
    let before = p.stats();
    // SAFETY: the words are kept by `k`; every section begun is ended below.
    unsafe {
        for (i, len) in [(huge, page), (spanning, 1500), (plain, 699), (plain, 701)] {
            assert_eq!(p.read_begin_in_place(k.word(i), len), None, "object {i}, length {len}");
            assert!(!p.read_end_recorded(k.word(i), len), "no section is open on {i}");
        }
        assert_eq!(p.stats().reads, before.reads, "nothing was counted");
        let ptr = p.read_begin_in_place(k.word(plain), 700).expect("the common case");
        assert_eq!(std::slice::from_raw_parts(ptr, 700), &k.objs[plain].1[..]);
        assert!(!p.read_end_recorded(k.word(plain), 600), "wrong length: not ended");
        assert_eq!(p.free_raw(k.word(plain)), Err(Error::Busy), "still open");
        assert_invalid_argument(p.read_end_raw(k.word(plain), Some(600)), "general path says why");
        assert!(p.read_end_recorded(k.word(plain), 700));
        assert!(!p.read_end_recorded(k.word(plain), 700), "ended once only");
    }
    assert_eq!(p.stats().reads, before.reads + 1);
    k.check();
    compact_fully(&p);
}

/// A raw section's end normally trusts what its begin proved (a per-thread record). Ending the
/// section some other way first — on another thread, or on another pool that reuses the handle
/// address — must leave that record useless: the second end is refused and nothing is unbalanced.
#[test]
fn a_section_ended_elsewhere_is_not_ended_twice() {
    let p = pool(PoolConfig::default());
    let mut k = populated(&p);
    let i = k.store(40, 900);
    let h = k.word(i);
    let mut local = vec![0u8; 8192];
    // SAFETY: `h` is kept by `k`; `local` holds a page plus a header.
    unsafe {
        p.read_begin_raw(h, 900, local.as_mut_ptr()).unwrap();
        // Another thread ends this thread's section (the contract allows any thread to end it).
        std::thread::scope(|s| {
            s.spawn(|| p.read_end_raw(h, Some(900)).unwrap());
        });
        assert_invalid_argument(p.read_end_raw(h, Some(900)), "end of a section ended elsewhere");
        p.free_raw(h).unwrap();
        // The same handle word reused: a stored object, a begun section, then a second pool's
        // handle at the same address is refused without touching the first pool's section.
        p.store_raw(h, &pattern(41, 900)).unwrap();
        p.read_begin_raw(h, 900, local.as_mut_ptr()).unwrap();
        let other = pool(PoolConfig::default());
        assert!(other.read_end_raw(h, Some(900)).is_err(), "another pool's end");
        assert_eq!(p.free_raw(h), Err(Error::Busy), "the first pool's section is still open");
        p.read_end_raw(h, Some(900)).unwrap();
        k.objs[i].1 = pattern(41, 900);
    }
    // No pin was left behind: everything moves and frees, and the pages go back.
    compact_fully(&p);
    k.check();
    k.free_all();
    assert_eq!(p.total_pages(), 0);
}
