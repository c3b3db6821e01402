//! Multi-threaded stress with concurrent compaction.
//!
//! Worker threads store, read (every read path), rewrite and free their own objects through the
//! safe and the raw layer, and read shared long-lived objects, while a compactor thread calls
//! `compact()` in a loop. Asserted: every byte read is the byte stored; compaction moved objects
//! while reads were active (`stats().objs_moved`, and readers saw the handle word of an object
//! change between two reads of it); an object never moves during its own read section; frees of
//! an object being read are refused with `Busy`; counters add up and pages return to 0.
//!
//! Each test ends on counts, not on a clock (reads checked, compactions, moves seen), so a
//! loaded machine makes it longer, never weaker; a run that cannot reach them (nothing ever
//! moves) gives up after a bounded number of compactions and fails. `STRESS_SECS=n` also runs
//! each test for at least n seconds. A soak (off in CI) runs for hours with bounded memory
//! (each worker keeps at most 400 objects) and prints its progress every minute:
//!
//! ```text
//! STRESS_SECS=14400 cargo test --release -p zsmalloc-core --test stress -- --test-threads=1 --nocapture
//! ```

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use common::counted::{run_until, soak, GIVE_UP_COMPACTIONS};
use common::pattern;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use zsmalloc_core::{Error, Handle, Pool, PoolConfig, HANDLE_SIZE};

/// Lengths: mostly zram-like (normal around 700), some large, some tiny, some a full page.
fn length(rng: &mut SmallRng, page: usize) -> usize {
    match rng.gen_range(0..20) {
        0 => page,
        1 => rng.gen_range(1..=64),
        2..=4 => rng.gen_range(page / 2..=page),
        _ => rng.gen_range(200..=1200),
    }
}

#[derive(Default)]
struct Tally {
    reads: AtomicU64,
    /// A handle word differed from the one seen at the previous read of the same object.
    moves_seen: AtomicU64,
    busy_refusals: AtomicU64,
    compactions: AtomicU64,
    pages_freed: AtomicU64,
}

impl Tally {
    fn add(&self, c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }
}

struct Own<'p> {
    h: Handle<&'p Pool>,
    seed: u64,
    len: usize,
    last_word: usize,
}

/// Safe-layer worker: own objects plus the shared ones.
fn safe_worker(
    pool: &Pool,
    id: u64,
    shared: &[(Handle<&Pool>, u64, usize)],
    stop: &AtomicBool,
    t: &Tally,
) {
    let page = pool.config().page_size as usize;
    let mut rng = SmallRng::seed_from_u64(id);
    let mut own: Vec<Own<'_>> = Vec::new();
    let mut next = id << 40;
    let mut local = vec![0u8; page + HANDLE_SIZE];
    let mut out = vec![0u8; page];
    let mut shared_words: Vec<usize> = shared.iter().map(|s| s.0.word()).collect();
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..64 {
            match rng.gen_range(0..100) {
                0..=29 if own.len() < 400 => {
                    next += 1;
                    let len = length(&mut rng, page);
                    let h = if rng.gen_bool(0.8) {
                        pool.store(&pattern(next, len)).expect("store")
                    } else {
                        let mut h = pool.malloc(len).expect("malloc");
                        pool.write(&mut h, &pattern(next, len)).expect("write");
                        h
                    };
                    let last_word = h.word();
                    own.push(Own { h, seed: next, len, last_word });
                }
                0..=54 if !own.is_empty() => {
                    let o = own.swap_remove(rng.gen_range(0..own.len()));
                    if rng.gen_bool(0.5) {
                        o.h.free().expect("free");
                    } else {
                        drop(o.h);
                    }
                }
                55..=59 if !own.is_empty() => {
                    let i = rng.gen_range(0..own.len());
                    next += 1;
                    let o = &mut own[i];
                    pool.write(&mut o.h, &pattern(next, o.len)).expect("rewrite");
                    o.seed = next;
                }
                60..=84 if !own.is_empty() => {
                    let i = rng.gen_range(0..own.len());
                    let o = &mut own[i];
                    let want = pattern(o.seed, o.len);
                    let word = o.h.word();
                    if word != o.last_word {
                        t.add(&t.moves_seen, 1);
                        o.last_word = word;
                    }
                    match rng.gen_range(0..4) {
                        0 => {
                            let sec = pool.read(&o.h, &mut local).expect("read");
                            let inside = o.h.word();
                            assert_eq!(&sec[..], &want[..], "worker {id}: object {}", o.seed);
                            std::thread::yield_now(); // let the compactor run meanwhile
                            assert_eq!(&sec[..], &want[..], "worker {id}: object {}", o.seed);
                            // Pinned: not moved while the section is open.
                            assert_eq!(o.h.word(), inside, "moved during its read section");
                        }
                        1 => {
                            assert_eq!(pool.read_into(&o.h, &mut out), Ok(o.len));
                            assert_eq!(&out[..o.len], &want[..], "worker {id}: object {}", o.seed);
                        }
                        2 => {
                            let sec = pool.read_sg(&o.h).expect("read_sg");
                            let inside = o.h.word();
                            assert_eq!(sec.segments().concat(), want, "worker {id}: sg {}", o.seed);
                            assert_eq!(o.h.word(), inside, "moved during its sg section");
                        }
                        _ => assert_eq!(pool.read_to_vec(&o.h).expect("read_to_vec"), want),
                    }
                    t.add(&t.reads, 1);
                }
                _ => {
                    let i = rng.gen_range(0..shared.len());
                    let (h, seed, len) = &shared[i];
                    let word = h.word();
                    if word != shared_words[i] {
                        t.add(&t.moves_seen, 1);
                        shared_words[i] = word;
                    }
                    let sec = pool.read(h, &mut local).expect("shared read");
                    assert_eq!(&sec[..], &pattern(*seed, *len)[..], "shared object {seed}");
                    t.add(&t.reads, 1);
                }
            }
        }
    }
    // Everything still reads back, then goes.
    for o in own {
        assert_eq!(pool.read_to_vec(&o.h).unwrap(), pattern(o.seed, o.len), "final {}", o.seed);
    }
}

/// Raw-layer worker: boxed handle words, read sections, sg reads, handle moves, and a free
/// attempted during its own read section (refused with Busy).
fn raw_worker(pool: &Pool, id: u64, stop: &AtomicBool, t: &Tally) {
    let page = pool.config().page_size as usize;
    let mut rng = SmallRng::seed_from_u64(id);
    let mut own: Vec<(Box<AtomicUsize>, u64, usize, usize)> = Vec::new();
    let mut next = id << 40;
    let mut local = vec![0u8; page + HANDLE_SIZE];
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..64 {
            match rng.gen_range(0..100) {
                0..=29 if own.len() < 400 => {
                    next += 1;
                    let len = length(&mut rng, page);
                    let w = Box::new(AtomicUsize::new(0));
                    // SAFETY: the word is boxed and kept in `own` until freed below.
                    unsafe { pool.store_raw(&w, &pattern(next, len)) }.expect("store_raw");
                    let word = w.load(Ordering::Acquire);
                    own.push((w, next, len, word));
                }
                0..=54 if !own.is_empty() => {
                    let (w, ..) = own.swap_remove(rng.gen_range(0..own.len()));
                    // SAFETY: our own word, holding an object of this pool.
                    unsafe { pool.free_raw(&w) }.expect("free_raw");
                    assert_eq!(w.load(Ordering::Relaxed), 0);
                }
                55..=59 if !own.is_empty() => {
                    // Move the object to a new word: compaction must rewrite the new one.
                    let i = rng.gen_range(0..own.len());
                    let to = Box::new(AtomicUsize::new(0));
                    // SAFETY: both words are boxed; `to` replaces the old one in `own`.
                    unsafe { pool.handle_move_raw(&own[i].0, &to) }.expect("handle_move_raw");
                    assert_eq!(own[i].0.load(Ordering::Relaxed), 0);
                    own[i].0 = to;
                }
                _ if !own.is_empty() => {
                    let i = rng.gen_range(0..own.len());
                    let (w, seed, len, last) = &mut own[i];
                    let want = pattern(*seed, *len);
                    let word = w.load(Ordering::Acquire);
                    if word != *last {
                        t.add(&t.moves_seen, 1);
                        *last = word;
                    }
                    // SAFETY: our own word; `local` holds len + 8 bytes; each section is ended
                    // before the object is freed or the buffer reused.
                    unsafe {
                        if rng.gen_bool(0.5) {
                            let p = pool.read_begin_raw(w, *len, local.as_mut_ptr()).expect("read");
                            let inside = w.load(Ordering::Acquire);
                            if rng.gen_bool(0.1) {
                                assert_eq!(pool.free_raw(w), Err(Error::Busy));
                                t.add(&t.busy_refusals, 1);
                            }
                            std::thread::yield_now(); // let the compactor run meanwhile
                            assert_eq!(w.load(Ordering::Acquire), inside, "moved while read");
                            assert_eq!(
                                std::slice::from_raw_parts(p, *len),
                                &want[..],
                                "raw {seed}"
                            );
                        } else {
                            let (segs, n) = pool.read_sg_begin_raw(w, *len).expect("sg");
                            let mut joined = Vec::with_capacity(*len);
                            for &(p, l) in &segs[..n] {
                                joined.extend_from_slice(std::slice::from_raw_parts(p, l));
                            }
                            assert_eq!(joined, want, "raw sg {seed}");
                        }
                        pool.read_end_raw(w, Some(*len)).expect("read_end");
                    }
                    t.add(&t.reads, 1);
                }
                _ => {}
            }
        }
    }
    for (w, seed, len, _) in own {
        // SAFETY: our own word.
        unsafe {
            let p = pool.read_begin_raw(&w, len, local.as_mut_ptr()).expect("final read");
            assert_eq!(std::slice::from_raw_parts(p, len), &pattern(seed, len)[..]);
            pool.read_end_raw(&w, Some(len)).unwrap();
            pool.free_raw(&w).unwrap();
        }
    }
}

fn compactor(pool: &Pool, stop: &AtomicBool, t: &Tally) {
    while !stop.load(Ordering::Relaxed) {
        let freed = pool.compact();
        t.add(&t.compactions, 1);
        t.add(&t.pages_freed, freed);
        std::thread::yield_now();
    }
}

/// Shared long-lived objects, created interleaved with fillers that are then freed, so their
/// zspages start sparse and compaction has something to move from the first pass.
fn shared_objects(pool: &Pool) -> Vec<(Handle<&Pool>, u64, usize)> {
    let mut rng = SmallRng::seed_from_u64(99);
    let page = pool.config().page_size as usize;
    let mut shared = Vec::new();
    let mut fillers = Vec::new();
    for k in 0..3000u64 {
        let len = length(&mut rng, page);
        let h = pool.store(&pattern(k, len)).unwrap();
        if k % 4 == 0 {
            shared.push((h, k, len));
        } else {
            fillers.push(h);
        }
    }
    drop(fillers);
    shared
}

/// Reads checked before a stress run may end.
const MIN_READS: u64 = 20_000;
/// Compactions before a stress run may end.
const MIN_COMPACTIONS: u64 = 100;

fn run(cfg: PoolConfig) {
    let pool = Pool::new(cfg).unwrap();
    let shared = shared_objects(&pool);
    let t = Tally::default();
    let stop = AtomicBool::new(false);
    let start = Barrier::new(6);
    let began = Instant::now();
    let soak_secs = soak();
    let mut next_report = Duration::from_secs(60);
    std::thread::scope(|s| {
        for id in 1..=3u64 {
            let (pool, shared, stop, t, start) = (&pool, &shared[..], &stop, &t, &start);
            s.spawn(move || {
                start.wait();
                safe_worker(pool, id, shared, stop, t)
            });
        }
        {
            let (pool, stop, t, start) = (&pool, &stop, &t, &start);
            s.spawn(move || {
                start.wait();
                raw_worker(pool, 4, stop, t)
            });
            s.spawn(move || {
                start.wait();
                compactor(pool, stop, t)
            });
        }
        start.wait();
        // Until compaction has visibly moved objects under the readers, and enough was read
        // and compacted that the run means something.
        let count = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let reached = || {
            count(&t.reads) >= MIN_READS
                && count(&t.compactions) >= MIN_COMPACTIONS
                && count(&t.moves_seen) > 0
                && pool.stats().objs_moved > 0
        };
        let give_up = || count(&t.compactions) >= GIVE_UP_COMPACTIONS;
        run_until(reached, give_up, |elapsed| {
            if soak_secs >= Duration::from_secs(120) && elapsed >= next_report {
                next_report += Duration::from_secs(60);
                let st = pool.stats();
                eprintln!(
                    "soak {elapsed:?}/{soak_secs:?}: reads {}, moves seen {}, objs_moved {}, \
                     compactions {}, objects {}, pages {}",
                    t.reads.load(Ordering::Relaxed),
                    t.moves_seen.load(Ordering::Relaxed),
                    st.objs_moved,
                    t.compactions.load(Ordering::Relaxed),
                    st.objs_inuse,
                    pool.total_pages(),
                );
            }
        });
        stop.store(true, Ordering::Relaxed);
    });
    let st = pool.stats();
    let moves_seen = t.moves_seen.load(Ordering::Relaxed);
    eprintln!(
        "{:?}: reads {}, moves seen by readers {moves_seen}, objs_moved {}, compactions {}, \
         pages freed by compaction {}, busy refusals {}",
        began.elapsed(),
        t.reads.load(Ordering::Relaxed),
        st.objs_moved,
        t.compactions.load(Ordering::Relaxed),
        t.pages_freed.load(Ordering::Relaxed),
        t.busy_refusals.load(Ordering::Relaxed),
    );
    assert!(st.objs_moved > 0, "compaction moved nothing");
    assert!(moves_seen > 0, "no reader saw a handle word change between two reads");
    assert!(t.reads.load(Ordering::Relaxed) >= MIN_READS);
    assert_eq!(st.pages_compacted, t.pages_freed.load(Ordering::Relaxed));
    assert!(st.reads >= t.reads.load(Ordering::Relaxed));
    // Shared objects survived everything; then the pool empties completely.
    assert_eq!(st.objs_inuse, shared.len() as u64);
    for (h, seed, len) in &shared {
        assert_eq!(pool.read_to_vec(h).unwrap(), pattern(*seed, *len));
    }
    drop(shared);
    let st = pool.stats();
    assert_eq!((st.objs_inuse, st.bytes_stored, st.objs_allocated), (0, 0, 0));
    assert_eq!(pool.total_pages(), 0, "pages return to 0");
    assert!(pool.class_stats().iter().all(|c| c.pages_used == 0 && c.fullness == [0; 12]));
}

#[test]
fn stress_4k_classic_with_concurrent_compaction() {
    run(PoolConfig::default());
}

#[test]
fn stress_16k_heuristic_with_concurrent_compaction() {
    let cfg = PoolConfig {
        page_size: 16384,
        chain_size: 10,
        chain_policy: zsmalloc_core::PolicyRef::new(zsmalloc_core::Heuristic),
        ..Default::default()
    };
    run(cfg);
}

/// More reader threads alive at once than there are announce slots (64): the threads past the
/// slots count themselves in the headers, on the same objects that others announce, while
/// compaction moves those objects and a raw worker stores and frees around them. Every read
/// returns the stored bytes, and the pool still empties completely.
#[test]
fn more_reader_threads_than_reader_slots() {
    const READERS: usize = 80;
    let pool = Pool::new(PoolConfig::default()).unwrap();
    let shared = shared_objects(&pool);
    let (stop, t) = (AtomicBool::new(false), Tally::default());
    // Whole passes over its share of the objects, per reader.
    let passes: Vec<AtomicU64> = (0..READERS).map(|_| AtomicU64::new(0)).collect();
    let start = Barrier::new(READERS + 1);
    std::thread::scope(|s| {
        for (id, passes) in passes.iter().enumerate() {
            let (pool, shared, stop, t, start) = (&pool, &shared[..], &stop, &t, &start);
            s.spawn(move || {
                start.wait();
                let mut local = vec![0u8; pool.config().page_size as usize + HANDLE_SIZE];
                while !stop.load(Ordering::Relaxed) {
                    for (h, seed, len) in shared.iter().skip(id % 7).step_by(7) {
                        let sec = pool.read(h, &mut local).expect("a shared object reads");
                        assert_eq!(&sec[..], &pattern(*seed, *len)[..]);
                        t.add(&t.reads, 1);
                    }
                    passes.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        s.spawn(|| compactor(&pool, &stop, &t));
        s.spawn(|| raw_worker(&pool, 5, &stop, &t));
        start.wait();
        // Until every reader has read its share twice, with compactions among the passes (a
        // few: each scans the pool while 80 threads hold sections).
        let reached = || {
            passes.iter().all(|p| p.load(Ordering::Relaxed) >= 2)
                && t.compactions.load(Ordering::Relaxed) >= 10
        };
        run_until(reached, || t.compactions.load(Ordering::Relaxed) >= GIVE_UP_COMPACTIONS, |_| {});
        stop.store(true, Ordering::Relaxed);
    });
    eprintln!(
        "reads {}, objs_moved {}, busy refusals {}, compactions {}, fewest passes {:?}",
        t.reads.load(Ordering::Relaxed),
        pool.stats().objs_moved,
        t.busy_refusals.load(Ordering::Relaxed),
        t.compactions.load(Ordering::Relaxed),
        passes.iter().map(|p| p.load(Ordering::Relaxed)).min()
    );
    let idle = passes.iter().filter(|p| p.load(Ordering::Relaxed) < 2).count();
    assert_eq!(idle, 0, "readers that did not read their share twice");
    for (h, seed, len) in &shared {
        assert_eq!(pool.read_to_vec(h).unwrap(), pattern(*seed, *len));
    }
    drop(shared);
    assert_eq!(pool.stats().objs_inuse, 0);
    assert_eq!(pool.total_pages(), 0, "no section was left behind: pages return to 0");
}

#[test]
fn stress_map_mode_with_concurrent_compaction() {
    let cfg = PoolConfig { read_mode: zsmalloc_core::ReadMode::Map, ..Default::default() };
    run(cfg);
}

#[test]
fn stress_contiguous_mode_with_concurrent_compaction() {
    let cfg = PoolConfig {
        page_size: 16384,
        read_mode: zsmalloc_core::ReadMode::Contiguous,
        backing: zsmalloc_core::Backing::Memfd,
        ..Default::default()
    };
    run(cfg);
}
