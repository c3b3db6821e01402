//! `map` mode's map slots under concurrency: reader threads hold several mapped sections open
//! at once (nested and held sections), end some of them from another thread, and check every
//! byte, while a compactor compacts and a writer stores and frees around them. Asserted: every
//! read returns the stored bytes; an object being read is neither moved nor freed (`Busy`);
//! every map slot is released at the end; a full ring answers `Again`, never a wait; pages
//! return to 0.
//!
//! The run ends on counts, not on a clock, so a loaded machine makes it longer, never weaker:
//! at least MIN_READS reads checked and MIN_ROUNDS compactions, some object moved and some
//! read spanning (about a second on an idle machine); `STRESS_SECS=n` runs for n seconds more.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::pattern;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use zsmalloc_core::{Error, Pool, PoolConfig, ReadMode};

/// `STRESS_SECS`: how long to go on once the counts are reached (none by default).
fn extra_duration() -> Duration {
    std::env::var("STRESS_SECS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(Duration::ZERO, Duration::from_secs_f64)
}

/// Reads checked before the run may end.
const MIN_READS: u64 = 10_000;
/// Compactions (each after 50 stores and frees) before the run may end.
const MIN_ROUNDS: u64 = 200;
/// Compactions after which a run that has moved nothing gives up (and fails): the writer's
/// churn leaves holes for compaction within a few rounds.
const MAX_ROUNDS: u64 = 1_000_000;

/// Lengths that often cross a page (4K pages): 1000..=3500 bytes.
fn length(rng: &mut SmallRng) -> usize {
    rng.gen_range(1000..=3500)
}

/// A boxed handle word with its object's seed and length.
struct Obj {
    word: Box<AtomicUsize>,
    seed: u64,
    len: usize,
}

fn store(pool: &Pool, seed: u64, len: usize) -> Obj {
    let word = Box::new(AtomicUsize::new(0));
    // SAFETY: the word is boxed and freed (by `free`) before it is dropped.
    unsafe { pool.store_raw(&word, &pattern(seed, len)) }.expect("store_raw");
    Obj { word, seed, len }
}

fn free(pool: &Pool, o: Obj) {
    // SAFETY: the object's own word; no section of it is open.
    unsafe { pool.free_raw(&o.word) }.expect("free_raw");
}

/// A section handed to another thread to end: the handle word's address, length, the address
/// the begin returned, and the flag the ender clears once it has ended the section.
struct Handoff {
    word: usize,
    len: usize,
    mem: usize,
    flag: usize,
}

fn reader(pool: &Pool, id: u64, stop: &AtomicBool, reads: &AtomicU64, tx: mpsc::Sender<Handoff>) {
    let mut rng = SmallRng::seed_from_u64(id);
    let objs: Vec<Obj> = (0..200).map(|k| store(pool, id << 32 | k, length(&mut rng))).collect();
    // Set while another thread still has to end a section of the object.
    let handed: Vec<AtomicBool> = objs.iter().map(|_| AtomicBool::new(false)).collect();
    while !stop.load(Ordering::Relaxed) {
        // Up to 12 sections open at once, on distinct objects, ended in a random order.
        let n = rng.gen_range(1..=12);
        let mut open = Vec::new();
        for _ in 0..n {
            let i = rng.gen_range(0..objs.len());
            if handed[i].load(Ordering::Acquire) || open.iter().any(|&(j, _, _)| j == i) {
                continue;
            }
            let o = &objs[i];
            // SAFETY: the object's own word; map mode never copies, so no local copy.
            let p = unsafe { pool.read_begin_raw(&o.word, o.len, std::ptr::null_mut()) }
                .expect("read_begin_raw");
            let word = o.word.load(Ordering::Acquire);
            open.push((i, p, word));
            if rng.gen_bool(0.05) {
                // SAFETY: a section is open on the word: the free is refused.
                assert_eq!(unsafe { pool.free_raw(&o.word) }, Err(Error::Busy));
            }
        }
        std::thread::yield_now(); // let the compactor and the writer run meanwhile
        while !open.is_empty() {
            let (i, p, word) = open.swap_remove(rng.gen_range(0..open.len()));
            let o = &objs[i];
            assert_eq!(o.word.load(Ordering::Acquire), word, "moved while read");
            // SAFETY: the section is open: `p` holds the object's `len` bytes until its end.
            let got = unsafe { std::slice::from_raw_parts(p, o.len) };
            assert_eq!(got, &pattern(o.seed, o.len)[..], "object {} of reader {id}", o.seed);
            reads.fetch_add(1, Ordering::Relaxed);
            match rng.gen_range(0..10) {
                0 => {
                    handed[i].store(true, Ordering::Release);
                    tx.send(Handoff {
                        word: &*o.word as *const AtomicUsize as usize,
                        len: o.len,
                        mem: p as usize,
                        flag: &handed[i] as *const AtomicBool as usize,
                    })
                    .unwrap();
                }
                // SAFETY: ends the section just checked, by its address.
                1..=4 => unsafe { pool.read_end_at_raw(&o.word, Some(o.len), p) }.unwrap(),
                // SAFETY: ends the section just checked, found by its handle.
                _ => unsafe { pool.read_end_raw(&o.word, Some(o.len)) }.unwrap(),
            }
        }
    }
    drop(tx);
    while handed.iter().any(|h| h.load(Ordering::Acquire)) {
        std::thread::yield_now();
    }
    for o in objs {
        free(pool, o);
    }
}

#[test]
fn map_windows_under_concurrent_compaction_and_frees() {
    let pool = Pool::new(PoolConfig { read_mode: ReadMode::Map, ..Default::default() }).unwrap();
    let extra = extra_duration();
    let stop = AtomicBool::new(false);
    let reads = AtomicU64::new(0);
    let rounds = AtomicU64::new(0);
    let (tx, rx) = mpsc::channel::<Handoff>();
    std::thread::scope(|s| {
        for id in 1..=3u64 {
            let (pool, stop, reads, tx) = (&pool, &stop, &reads, tx.clone());
            s.spawn(move || reader(pool, id, stop, reads, tx));
        }
        drop(tx);
        // The ender: ends sections other threads began, by address or by handle.
        let pool_ref = &pool;
        s.spawn(move || {
            for (k, h) in rx.into_iter().enumerate() {
                // SAFETY: the word and the flag are alive (their owner waits for the flag to
                // clear before freeing either), and a section of `len` bytes is open on it.
                unsafe {
                    let w = &*(h.word as *const AtomicUsize);
                    if k % 2 == 0 {
                        pool_ref.read_end_at_raw(w, Some(h.len), h.mem as *const u8).unwrap();
                    } else {
                        pool_ref.read_end_raw(w, Some(h.len)).unwrap();
                    }
                    (*(h.flag as *const AtomicBool)).store(false, Ordering::Release);
                }
            }
        });
        // The compactor and the writer, which frees around the readers.
        let (pool, stop, rounds_ref) = (&pool, &stop, &rounds);
        s.spawn(move || {
            let mut rng = SmallRng::seed_from_u64(7);
            let mut mine: Vec<Obj> = Vec::new();
            let mut k = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..50 {
                    if mine.len() < 500 && rng.gen_bool(0.55) {
                        k += 1;
                        mine.push(store(pool, 1 << 60 | k, length(&mut rng)));
                    } else if !mine.is_empty() {
                        free(pool, mine.swap_remove(rng.gen_range(0..mine.len())));
                    }
                }
                pool.compact();
                rounds_ref.fetch_add(1, Ordering::Relaxed);
            }
            for o in mine {
                free(pool, o);
            }
        });
        // Polled, not timed: the end is decided by what the threads have done.
        let mut reached: Option<Instant> = None;
        loop {
            std::thread::sleep(Duration::from_millis(10));
            let (n, r, st) =
                (reads.load(Ordering::Relaxed), rounds.load(Ordering::Relaxed), pool.stats());
            let counts =
                n >= MIN_READS && r >= MIN_ROUNDS && st.objs_moved > 0 && st.reads_spanning > 0;
            if counts {
                let at = *reached.get_or_insert_with(Instant::now);
                if at.elapsed() >= extra {
                    break;
                }
            } else if n >= MIN_READS && r >= MAX_ROUNDS {
                break; // nothing moved in a million compactions: the assertions below say so
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    let st = pool.stats();
    eprintln!(
        "reads {}, objs_moved {}, reads_spanning {}",
        reads.load(Ordering::Relaxed),
        st.objs_moved,
        st.reads_spanning
    );
    assert_eq!(pool.map_slots_in_use(), 0, "every map slot released");
    assert!(reads.load(Ordering::Relaxed) >= MIN_READS);
    assert!(st.reads_spanning > 0 && st.objs_moved > 0, "{st:?}");
    assert_eq!(st.read_copy_bytes, 0, "map mode copies nothing");
    assert_eq!(pool.total_pages(), 0, "pages return to 0");
}

/// A full ring of map slots answers `Again` at once, and the thread's sections still end.
#[test]
fn a_full_ring_answers_again() {
    let pool = Pool::new(PoolConfig { read_mode: ReadMode::Map, ..Default::default() }).unwrap();
    let objs: Vec<Obj> = (0..400).map(|k| store(&pool, k, 3000)).collect();
    let mut open = Vec::new();
    let mut refused = 0;
    for o in &objs {
        // SAFETY: the object's own word.
        match unsafe { pool.read_begin_raw(&o.word, o.len, std::ptr::null_mut()) } {
            Ok(p) => open.push((o, p)),
            Err(e) => {
                assert!(matches!(e, Error::Again(_)), "{e}");
                assert_eq!(e.errno(), libc::EAGAIN);
                refused += 1;
            }
        }
    }
    assert!(refused > 0 && open.len() >= 64, "open {}, refused {refused}", open.len());
    for (o, p) in open {
        // SAFETY: the section is open; its bytes are the object's.
        unsafe {
            assert_eq!(std::slice::from_raw_parts(p, o.len), &pattern(o.seed, o.len)[..]);
            pool.read_end_at_raw(&o.word, Some(o.len), p).unwrap();
        }
    }
    assert_eq!(pool.map_slots_in_use(), 0);
    for o in objs {
        free(&pool, o);
    }
    assert_eq!(pool.total_pages(), 0);
}
