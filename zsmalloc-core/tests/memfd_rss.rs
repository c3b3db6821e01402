//! On the memfd backing (`map` mode's, offered to every mode), resident memory follows
//! `total_pages`: released pages are hole-punched, so shared memory (`RssShmem`) goes down as
//! zspages are released, map slots that still map released pages included. One test in its own
//! binary, so that no other test's pages move the figure.

use std::sync::atomic::AtomicUsize;

use zsmalloc_core::{Backing, Pool, PoolConfig, ReadMode};

/// This process's resident shared memory (`RssShmem` of /proc/self/status), in KiB.
fn rss_shmem_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssShmem:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("RssShmem in /proc/self/status")
}

#[test]
fn resident_memory_follows_total_pages_on_the_memfd_backing() {
    for mode in [ReadMode::Map, ReadMode::Copy, ReadMode::Contiguous] {
        let cfg = PoolConfig { read_mode: mode, backing: Backing::Memfd, ..Default::default() };
        let pool = Pool::new(cfg).unwrap();
        let base = rss_shmem_kib();
        let words: Vec<Box<AtomicUsize>> =
            (0..20_000).map(|_| Box::new(AtomicUsize::new(0))).collect();
        for (k, w) in words.iter().enumerate() {
            // SAFETY: boxed words, freed below before they are dropped.
            unsafe { pool.store_raw(w, &vec![k as u8 | 1; 3000]) }.unwrap();
        }
        // Read every object once (in map mode: spanning ones through map slots, which keep
        // their last mapping until reused).
        let mut local = vec![0u8; 4096];
        for w in &words {
            // SAFETY: live words; `local` holds a page.
            unsafe {
                let p = pool.read_begin_raw(w, 3000, local.as_mut_ptr()).unwrap();
                assert_eq!(*p, *p.add(2999));
                pool.read_end_at_raw(w, Some(3000), p).unwrap();
            }
        }
        let pages_kib = pool.total_pages() * 4;
        let full = rss_shmem_kib() - base;
        // Stale map slots may map up to 64 * 2 pages a second time.
        assert!(
            full >= pages_kib * 9 / 10 && full <= pages_kib + 64 * 2 * 4 + 1024,
            "{mode:?}: resident {full} KiB for {pages_kib} KiB of pages"
        );
        // Free all but every 10th object: most zspages are released.
        for (k, w) in words.iter().enumerate() {
            if k % 10 != 0 {
                // SAFETY: a live word.
                unsafe { pool.free_raw(w) }.unwrap();
            }
        }
        pool.compact();
        let left_kib = pool.total_pages() * 4;
        let cached_kib = pool.stats().pages_cached * 4;
        let after = rss_shmem_kib().saturating_sub(base);
        eprintln!(
            "{mode:?}: full {full} KiB ({pages_kib} KiB of pages); after frees {after} KiB \
             ({left_kib} KiB of pages + {cached_kib} KiB cached)"
        );
        assert!(
            after <= left_kib + cached_kib + 64 * 2 * 4 + 256,
            "{mode:?}: resident {after} KiB after frees, for {left_kib} KiB of pages and \
             {cached_kib} KiB cached"
        );
        for (k, w) in words.iter().enumerate() {
            if k % 10 == 0 {
                // SAFETY: a live word.
                unsafe { pool.free_raw(w) }.unwrap();
            }
        }
        assert_eq!(pool.total_pages(), 0);
    }
}
