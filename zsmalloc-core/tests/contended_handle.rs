//! One raw handle word contended by a reader and one or two freers/re-storers while a
//! compactor runs: whole objects or refusals, never torn bytes; nothing leaks. Each test ends on
//! counts (common::counted), not on a clock; `STRESS_SECS=n` runs it for at least n seconds.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::counted::{soak, GIVE_UP_COMPACTIONS};
use common::pattern;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use zsmalloc_core::{Error, Pool, PoolConfig, HANDLE_SIZE};

/// Compactions before a contended run may end.
const MIN_COMPACTIONS: u64 = 100;

/// One raw handle word shared by a reader and a freer/re-storer, with compaction running: the
/// reader sees either a whole, self-consistent object or a refusal, never torn or foreign bytes;
/// frees during the reader's section are refused with Busy, and never refused otherwise (the
/// word is live: compaction moving it must not make it look freed); nothing leaks.
#[test]
fn contended_handle_read_vs_free_vs_compaction() {
    contended_handle(1);
}

/// As above with two freers/re-storers racing each other as well: a store into a word the other
/// just filled is refused (HandleInUse), and a free racing the other thread's free of the same
/// object may be refused as a double free (InvalidHandle) instead of being a no-op.
#[test]
fn contended_handle_two_freers() {
    contended_handle(2);
}

/// Reads that saw a whole object, and versions stored, before a contended run may end.
const MIN_CONTENDED: u64 = 1000;

fn contended_handle(freers: usize) {
    let pool = Pool::new(PoolConfig::default()).unwrap();
    let word = Box::new(AtomicUsize::new(0));
    // Object version v: 8 bytes of v, then pattern(v, len - 8), len depends on v.
    let object = |v: u64| {
        let len = 16 + (v as usize * 97) % 3000;
        let mut d = v.to_le_bytes().to_vec();
        d.extend(pattern(v, len - 8));
        d
    };
    // Neighbours in the same classes so that zspages are shared and compaction has work.
    let mut rng = SmallRng::seed_from_u64(5);
    let mut neighbours: Vec<_> = (0..2000u64)
        .map(|k| (pool.store(&pattern(k, 16 + (k as usize * 97) % 3000)).unwrap(), k))
        .collect();
    // SAFETY: `word` is boxed and outlives every use; it is freed at the end.
    unsafe { pool.store_raw(&word, &object(1)) }.unwrap();
    let stop = AtomicBool::new(false);
    let (busy, compactions) = (AtomicU64::new(0), AtomicU64::new(0));
    let (ok_reads, refused, versions) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(1));
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut local = vec![0u8; 4096 + HANDLE_SIZE];
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: `word` outlives the scope; sections are ended right away.
                unsafe {
                    let Ok(len) = pool.object_len_raw(&word) else {
                        refused.fetch_add(1, Ordering::Relaxed);
                        continue;
                    };
                    match pool.read_begin_raw(&word, len, local.as_mut_ptr()) {
                        Ok(p) => {
                            let got = std::slice::from_raw_parts(p, len);
                            let v = u64::from_le_bytes(got[..8].try_into().unwrap());
                            assert_eq!(got, &object(v)[..], "version {v}: torn or foreign bytes");
                            pool.read_end_raw(&word, Some(len)).expect("read_end");
                            ok_reads.fetch_add(1, Ordering::Relaxed);
                        }
                        // Freed, replaced (other length) or empty meanwhile.
                        Err(Error::InvalidHandle(_) | Error::InvalidArgument(_)) => {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("unexpected read error {e:?}"),
                    }
                }
            }
        });
        for _ in 0..freers {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    // SAFETY: `word` outlives the scope; only this pool writes it.
                    unsafe {
                        match pool.free_raw(&word) {
                            Ok(()) => {
                                let v = versions.fetch_add(1, Ordering::Relaxed) + 1;
                                match pool.store_raw(&word, &object(v)) {
                                    Ok(()) | Err(Error::HandleInUse) => {}
                                    Err(e) => panic!("unexpected store error {e:?}"),
                                }
                            }
                            Err(Error::Busy) => _ = busy.fetch_add(1, Ordering::Relaxed),
                            Err(Error::InvalidHandle(_)) if freers > 1 => {}
                            Err(e) => panic!("unexpected free error {e:?}"),
                        }
                    }
                }
            });
        }
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                pool.compact();
                compactions.fetch_add(1, Ordering::Relaxed);
                std::thread::yield_now();
            }
        });
        // Churn the neighbours so compaction keeps finding sparse zspages, until the reader
        // and the freers have each got through often, among compactions.
        let count = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let reached = || {
            count(&ok_reads) >= MIN_CONTENDED
                && count(&versions) >= MIN_CONTENDED
                && count(&compactions) >= MIN_COMPACTIONS
        };
        let (began, least) = (Instant::now(), soak());
        let mut k = 1_000_000u64;
        while !(reached() && began.elapsed() >= least) && count(&compactions) < GIVE_UP_COMPACTIONS
        {
            for _ in 0..200 {
                let i = rng.gen_range(0..neighbours.len());
                k += 1;
                let len = 16 + (k as usize * 97) % 3000;
                neighbours[i] = (pool.store(&pattern(k, len)).unwrap(), k);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        stop.store(true, Ordering::Relaxed);
    });
    eprintln!(
        "reads ok {}, refused {}, versions {}, busy {}, objs_moved {}",
        ok_reads.load(Ordering::Relaxed),
        refused.load(Ordering::Relaxed),
        versions.load(Ordering::Relaxed),
        busy.load(Ordering::Relaxed),
        pool.stats().objs_moved
    );
    assert!(ok_reads.load(Ordering::Relaxed) >= MIN_CONTENDED, "the reader seldom got through");
    assert!(versions.load(Ordering::Relaxed) >= MIN_CONTENDED, "the freers seldom got through");
    for (h, k) in &neighbours {
        assert_eq!(pool.read_to_vec(h).unwrap(), pattern(*k, 16 + (*k as usize * 97) % 3000));
    }
    // Every read section has ended: the object must be freeable (a Busy here is a reader count
    // left on its header by a read that did not end its registration).
    // SAFETY: `word` holds an object of this pool, or is empty.
    let freed = unsafe { pool.free_raw(&word) };
    if freed.is_err() {
        pool.compact();
        // SAFETY: as above.
        let again = unsafe { pool.free_raw(&word) };
        panic!("free after all readers ended: {freed:?}; after a compaction: {again:?}");
    }
    assert_eq!(pool.stats().objs_inuse, neighbours.len() as u64, "a store was lost or leaked");
    drop(neighbours);
    assert_eq!(pool.total_pages(), 0);
}
