//! The zblock and malloc backends under random and concurrent use: a property test of the malloc
//! backend against a model, and a threaded stress per backend (stores, reads, frees and moves
//! racing on four threads, every object reading back its bytes).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::backend_calls::{free, malloc_pool, read, store, zblock};
use common::pattern;
use proptest::prelude::*;
use zsmalloc_core::{Backend, Error};

// --------------------------------------------------------------------- malloc: property test

#[derive(Debug, Clone)]
enum Op {
    Store(usize, u64),
    MallocWrite(usize, u64),
    Free(usize),
    Read(usize),
    Sg(usize),
    Move(usize),
}

fn ops(max_len: usize) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        4 => (1..=max_len, any::<u64>()).prop_map(|(l, s)| Op::Store(l, s)),
        1 => (1..=max_len, any::<u64>()).prop_map(|(l, s)| Op::MallocWrite(l, s)),
        3 => any::<usize>().prop_map(Op::Free),
        2 => any::<usize>().prop_map(Op::Read),
        1 => any::<usize>().prop_map(Op::Sg),
        1 => any::<usize>().prop_map(Op::Move),
    ];
    proptest::collection::vec(op, 1..300)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// malloc: every byte reads back; pages = ceil(Σ (usable + 8) / page) computed from the
    /// live set's own allocations; the peak is the model's.
    #[test]
    fn malloc_matches_model(ops in ops(4096)) {
        let p = malloc_pool();
        // live: (word, bytes, usable size)
        let mut live: Vec<(Box<AtomicUsize>, Vec<u8>, usize)> = Vec::new();
        let mut peak = 0;
        for op in ops {
            match op {
                Op::Store(len, seed) | Op::MallocWrite(len, seed) => {
                    let data = pattern(seed, len);
                    let h = Box::new(AtomicUsize::new(0));
                    // SAFETY: boxed word.
                    unsafe {
                        if matches!(op, Op::Store(..)) {
                            p.store_raw(&h, &data).unwrap();
                        } else {
                            p.malloc_raw(&h, len).unwrap();
                            p.write_raw(&h, &data).unwrap();
                        }
                        let ptr = p.read_begin_raw(&h, len, std::ptr::null_mut()).unwrap();
                        let usable = libc::malloc_usable_size(ptr as *mut libc::c_void);
                        p.read_end_at_raw(&h, Some(len), ptr).unwrap();
                        live.push((h, data, usable));
                    }
                }
                Op::Free(i) if !live.is_empty() => {
                    let (h, _, _) = live.swap_remove(i % live.len());
                    free(&p, &h).unwrap();
                    prop_assert_eq!(h.load(Ordering::Relaxed), 0);
                }
                Op::Read(i) if !live.is_empty() => {
                    let (h, d, _) = &live[i % live.len()];
                    prop_assert_eq!(&read(&p, h).unwrap(), d);
                }
                Op::Sg(i) if !live.is_empty() => {
                    let (h, d, _) = &live[i % live.len()];
                    // SAFETY: boxed word; the segment is readable while the section is open.
                    unsafe {
                        let (segs, n) = p.read_sg_begin_raw(h, d.len()).unwrap();
                        prop_assert_eq!(n, 1);
                        prop_assert_eq!(std::slice::from_raw_parts(segs[0].0, segs[0].1), &d[..]);
                        p.read_end_at_raw(h, Some(d.len()), segs[0].0).unwrap();
                    }
                }
                Op::Move(i) if !live.is_empty() => {
                    let k = i % live.len();
                    let to = Box::new(AtomicUsize::new(0));
                    // SAFETY: boxed words.
                    unsafe { p.handle_move_raw(&live[k].0, &to).unwrap() };
                    live[k].0 = to;
                }
                _ => {}
            }
            let bytes: u64 = live.iter().map(|(_, _, u)| *u as u64 + 8).sum();
            let pages = bytes.div_ceil(4096);
            peak = peak.max(pages);
            prop_assert_eq!(p.total_pages(), pages);
            let s = p.stats();
            prop_assert_eq!(s.objs_inuse, live.len() as u64);
            prop_assert_eq!(s.bytes_stored, live.iter().map(|(_, d, _)| d.len() as u64).sum::<u64>());
            prop_assert_eq!(s.pages_peak, peak);
        }
        for (h, d, _) in &live {
            prop_assert_eq!(&read(&p, h).unwrap(), d);
            free(&p, h).unwrap();
        }
        prop_assert_eq!(p.total_pages(), 0);
    }
}

// -------------------------------------------------------------------------- threaded stress

fn stress(p: &(dyn Backend + Sync), max_len: usize) {
    let threads = 4;
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                let mut live: Vec<(Box<AtomicUsize>, u64, usize)> = Vec::new();
                let mut x = 0x9e37_79b9u64 + t as u64;
                for i in 0..20_000u64 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if live.len() < 200 && (!x.is_multiple_of(3) || live.is_empty()) {
                        let len = 1 + (x >> 8) as usize % max_len;
                        let seed = (t as u64) << 32 | i;
                        live.push((store(p, &pattern(seed, len)).unwrap(), seed, len));
                    } else {
                        let k = (x >> 20) as usize % live.len();
                        let (h, seed, len) = &live[k];
                        assert_eq!(read(p, h).unwrap(), pattern(*seed, *len));
                        if x.is_multiple_of(2) {
                            let (h, ..) = live.swap_remove(k);
                            free(p, &h).unwrap();
                        }
                    }
                }
                for (h, seed, len) in &live {
                    assert_eq!(read(p, h).unwrap(), pattern(*seed, *len));
                    free(p, h).unwrap();
                }
            });
        }
    });
    let s = p.stats();
    assert_eq!((p.total_pages(), s.objs_inuse, s.bytes_stored), (0, 0, 0));
    assert!(s.pages_peak > 0);
}

#[test]
fn threaded_stress_zblock() {
    stress(&zblock(4096), 4079);
    stress(&zblock(16384), 16359);
}

#[test]
fn threaded_stress_malloc() {
    stress(&malloc_pool(), 4096);
}

/// The block tables as the pool computes them (`--nocapture` prints them), each row's tail
/// waste the block's bytes left after header and slots.
#[test]
fn block_tables_print() {
    for page in [4096u32, 16384, 32768, 65536] {
        let p = zblock(page);
        let header = if page == 4096 { 48 } else { 72 };
        eprintln!("zblock {page}: type slots pages slot_size tail_waste");
        for (i, t) in p.table().types().iter().enumerate() {
            assert_eq!(t.tail_waste + t.slots * t.slot_size + header, t.num_pages * page);
            assert!(t.tail_waste < t.slots * 8, "round_down to 8 loses < 8 per slot");
            eprintln!("{i} {} {} {} {}", t.slots, t.num_pages, t.slot_size, t.tail_waste);
        }
    }
}

/// Readers racing the thread that stores, frees and moves the same handle words: a read either
/// sees a whole, consistent object or is refused (the word emptied or changed under it); a free
/// or move meeting an open section is `Busy` and retried. zblock's readers take no lock.
fn racing_readers(p: &(dyn Backend + Sync)) {
    const WORDS: usize = 64;
    let words: Vec<AtomicUsize> = (0..WORDS).map(|_| AtomicUsize::new(0)).collect();
    let stop = AtomicUsize::new(0);
    let self_describing = |seed: u64| {
        let len = 8 + (seed as usize * 37) % 2000;
        let mut v = seed.to_le_bytes().to_vec();
        v.extend(pattern(seed, len - 8));
        v
    };
    let (reads, refused) = std::thread::scope(|s| {
        let readers: Vec<_> = (0..2)
            .map(|t| {
                let (words, stop) = (&words, &stop);
                s.spawn(move || {
                    let (mut ok, mut refused) = (0u64, 0u64);
                    let mut i = t;
                    while stop.load(Ordering::Acquire) == 0 {
                        i = (i * 7 + 3) % WORDS;
                        let h = &words[i];
                        // SAFETY: the words live in the vector for the whole scope.
                        let Ok(len) = (unsafe { p.object_len_raw(h) }) else {
                            refused += 1;
                            continue;
                        };
                        // SAFETY: as above; NULL local copy (in place).
                        match unsafe { p.read_begin_raw(h, len, std::ptr::null_mut()) } {
                            Ok(ptr) => {
                                // SAFETY: the section is open: `len` bytes at `ptr`.
                                let v = unsafe { std::slice::from_raw_parts(ptr, len) };
                                let seed = u64::from_le_bytes(v[..8].try_into().unwrap());
                                assert_eq!(v, &self_describing(seed)[..], "a whole object");
                                // SAFETY: ends the section just begun on `h` (which cannot
                                // move or be freed while it is open: those are Busy).
                                unsafe { p.read_end_at_raw(h, Some(len), ptr) }.unwrap();
                                ok += 1;
                            }
                            Err(Error::InvalidHandle(_)) | Err(Error::InvalidArgument(_)) => {
                                refused += 1
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                    (ok, refused)
                })
            })
            .collect();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for n in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = x as usize % WORDS;
            let h = &words[i];
            if h.load(Ordering::Acquire) == 0 {
                // SAFETY: the words live for the whole scope; only this thread writes them.
                unsafe { p.store_raw(h, &self_describing(n)) }.unwrap();
            } else if x.is_multiple_of(4) {
                let to = &words[(i + 1) % WORDS];
                // SAFETY: as above.
                match unsafe { p.handle_move_raw(h, to) } {
                    Ok(()) | Err(Error::Busy) | Err(Error::HandleInUse) => {}
                    Err(e) => panic!("{e}"),
                }
            } else {
                // SAFETY: as above.
                while let Err(e) = unsafe { p.free_raw(h) } {
                    assert_eq!(e, Error::Busy);
                    std::thread::yield_now();
                }
            }
        }
        stop.store(1, Ordering::Release);
        readers.into_iter().map(|r| r.join().unwrap()).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    });
    for h in &words {
        free(p, h).unwrap();
    }
    assert_eq!(p.total_pages(), 0);
    assert!(reads > 0, "{reads} reads, {refused} refused");
}

#[test]
fn racing_readers_zblock() {
    racing_readers(&zblock(4096));
}

#[test]
fn racing_readers_malloc() {
    racing_readers(&malloc_pool());
}
