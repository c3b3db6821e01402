//! Objects of several pages (docs/DESIGN.md, Objects of several pages) in every read mode:
//! random objects up to the multi-page size are stored, read back byte-exact through every read
//! path (pointer sections with a local copy of the pool's largest object, one-call copies,
//! scatter-gather, the raw layer), partly freed, compacted, and read again; the pool's page
//! count is checked against its classes' zspages at every step.

mod common;

use std::sync::atomic::AtomicUsize;

use common::pattern;
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use zsmalloc_core::{Backing, Handle, Pool, PoolConfig, ReadMode, HANDLE_SIZE};

const MODES: [(ReadMode, Backing); 4] = [
    (ReadMode::Copy, Backing::Anonymous),
    (ReadMode::Copy, Backing::Memfd),
    (ReadMode::Map, Backing::Memfd),
    (ReadMode::Contiguous, Backing::Anonymous),
];

fn pool(multi: u32, chain: u32, (read_mode, backing): (ReadMode, Backing)) -> Pool {
    let cfg = PoolConfig {
        multi_page_size: multi,
        chain_size: chain,
        read_mode,
        backing,
        ..Default::default()
    };
    Pool::new(cfg).unwrap()
}

/// Lengths of every kind: small, around a page, in the band, at its top.
fn length(rng: &mut SmallRng, max: usize) -> usize {
    match rng.gen_range(0..8) {
        0 => rng.gen_range(1..=200),
        1 => rng.gen_range(4000..=4200),
        2 => max - rng.gen_range(0..16),
        3 => rng.gen_range(1..=4096),
        _ => rng.gen_range(4097..=max),
    }
}

/// Pages the classes' zspages hold, from the class rows: `zspages * (units << order)`.
fn pages_of_rows(pool: &Pool) -> u64 {
    let rows = pool.class_stats();
    for r in &rows {
        assert_eq!(r.order, if r.size > 4096 { r.order } else { 0 });
        let zspages = r.obj_allocated / u64::from(r.objs_per_zspage);
        assert_eq!(r.pages_used, zspages * u64::from(r.pages_per_zspage << r.order));
    }
    rows.iter().map(|r| r.pages_used).sum()
}

/// Reads `h` through every path and checks the bytes.
fn check(pool: &Pool, h: &Handle<&Pool>, want: &[u8], local: &mut [u8]) {
    assert_eq!(&*pool.read(h, local).unwrap(), want);
    assert_eq!(pool.read_to_vec(h).unwrap(), want);
    let mut out = vec![0u8; want.len()];
    assert_eq!(pool.read_into(h, &mut out), Ok(want.len()));
    assert_eq!(out, want);
    let sg = pool.read_sg(h).unwrap();
    let joined: Vec<u8> = sg.segments().concat();
    assert_eq!(joined, want);
}

fn run(multi: u32, chain: u32, mode: (ReadMode, Backing), seed: u64, count: usize) {
    let pool = pool(multi, chain, mode);
    let max = pool.max_object_size();
    assert_eq!(max, multi as usize);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut local = vec![0u8; max + HANDLE_SIZE];
    let mut objs: Vec<(Handle<&Pool>, Vec<u8>)> = (0..count)
        .map(|i| {
            let data = pattern(seed ^ i as u64, length(&mut rng, max));
            (pool.store(&data).unwrap(), data)
        })
        .collect();
    assert_eq!(pool.total_pages(), pages_of_rows(&pool));
    for (h, data) in &objs {
        check(&pool, h, data, &mut local);
    }
    // Free about two thirds, leaving sparse zspages in every class, then compact.
    let mut kept = Vec::new();
    for (i, o) in objs.drain(..).enumerate() {
        if i % 3 == 0 {
            kept.push(o);
        }
    }
    let freeable: u64 = pool.class_stats().iter().map(|r| r.freeable).sum();
    let before = pool.stats();
    let freed = pool.compact();
    let after = pool.stats();
    assert_eq!(after.pages_compacted - before.pages_compacted, freed);
    // Freeable pages mean two zspages of a class not full: compaction moves from one to the other.
    if freeable > 0 {
        assert!(after.objs_moved > before.objs_moved, "compaction moved nothing");
        assert!(after.bytes_moved > before.bytes_moved);
    }
    assert_eq!(pool.total_pages(), pages_of_rows(&pool));
    for (h, data) in &kept {
        check(&pool, h, data, &mut local);
    }
    // The raw layer: store, read with a local copy of the largest object, free.
    let word = AtomicUsize::new(0);
    let data = pattern(seed, max);
    // SAFETY: `word` lives until the object is freed below; `local` holds max + 8 bytes.
    unsafe {
        pool.store_raw(&word, &data).unwrap();
        let p = pool.read_begin_raw(&word, max, local.as_mut_ptr()).unwrap();
        assert_eq!(std::slice::from_raw_parts(p, max), &data[..]);
        pool.read_end_raw(&word, Some(max)).unwrap();
        pool.free_raw(&word).unwrap();
    }
    drop(kept);
    assert_eq!((pool.total_pages(), pool.stats().objs_inuse), (0, 0));
}

#[test]
fn every_read_mode_reads_objects_of_several_pages() {
    for mode in MODES {
        for multi in [8192, 16384, 65536] {
            run(multi, 8, mode, u64::from(multi) ^ mode.0 as u64, 1500);
        }
    }
}

#[test]
fn objects_spanning_two_compound_pages_are_copied_in_copy_mode_only() {
    for mode in MODES {
        let pool = pool(16384, 8, mode);
        // 9000-byte objects: class 9024 (order 2), the second one crosses into the next unit.
        let hs: Vec<_> = (0..4).map(|i| pool.store(&pattern(i, 9000)).unwrap()).collect();
        let mut local = vec![0u8; pool.max_object_size() + HANDLE_SIZE];
        for (i, h) in hs.iter().enumerate() {
            assert_eq!(&*pool.read(h, &mut local).unwrap(), &pattern(i as u64, 9000)[..]);
        }
        let s = pool.stats();
        assert!(s.reads_spanning > 0, "{mode:?}");
        let copied = if mode.0 == ReadMode::Copy { s.reads_spanning * 9000 } else { 0 };
        assert_eq!(s.read_copy_bytes, copied, "{mode:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn random_pools_read_back_exactly(
        seed in any::<u64>(),
        k in 1u32..=4,
        chain in 4u32..=16,
        mode in 0usize..MODES.len(),
    ) {
        run(4096 << k, chain, MODES[mode], seed, 300);
    }
}
