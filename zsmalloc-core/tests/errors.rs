//! Every error path of the pool, and that the pool is intact after each one: same counters, same
//! pages, every earlier object still reads back its bytes, and new stores still work.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::pattern;
use zsmalloc_core::config::ReadMode;
use zsmalloc_core::{Error, Fixed, FnPolicy, PolicyRef, Pool, PoolConfig, HANDLE_SIZE};

/// Objects kept in a pool through the raw layer (boxed words: stable addresses), with their bytes.
struct Kept<'p> {
    pool: &'p Pool,
    objs: Vec<(Box<AtomicUsize>, Vec<u8>)>,
}

impl<'p> Kept<'p> {
    fn new(pool: &'p Pool) -> Self {
        Kept { pool, objs: Vec::new() }
    }

    /// Stores an object of `len` bytes; returns its index.
    fn store(&mut self, seed: u64, len: usize) -> usize {
        let data = pattern(seed, len);
        let h = Box::new(AtomicUsize::new(0));
        // SAFETY: the word is boxed (stable address) and kept in `objs` until freed by `free_all`.
        unsafe { self.pool.store_raw(&h, &data) }.expect("store");
        self.objs.push((h, data));
        self.objs.len() - 1
    }

    fn word(&self, i: usize) -> &AtomicUsize {
        &self.objs[i].0
    }

    /// Every object reads back its bytes through a read section, `read_sg` and `object_len_raw`.
    fn check(&self) {
        let mut local = vec![0u8; self.pool.config().page_size as usize + HANDLE_SIZE];
        for (i, (h, data)) in self.objs.iter().enumerate() {
            // SAFETY: `local` holds len + 8 bytes; each section ends before the next begins.
            unsafe {
                assert_eq!(self.pool.object_len_raw(h), Ok(data.len()), "object {i}");
                let p = self.pool.read_begin_raw(h, data.len(), local.as_mut_ptr()).expect("read");
                assert_eq!(std::slice::from_raw_parts(p, data.len()), &data[..], "object {i}");
                self.pool.read_end_raw(h, Some(data.len())).expect("read end");
                let (segs, n) = self.pool.read_sg_begin_raw(h, data.len()).expect("sg");
                let mut joined = Vec::new();
                for &(p, l) in &segs[..n] {
                    joined.extend_from_slice(std::slice::from_raw_parts(p, l));
                }
                assert_eq!(joined, *data, "object {i} (sg)");
                self.pool.read_end_raw(h, Some(data.len())).expect("sg end");
            }
        }
        let s = self.pool.stats();
        assert_eq!(s.objs_inuse, self.objs.len() as u64);
        assert_eq!(s.bytes_stored, self.objs.iter().map(|o| o.1.len() as u64).sum::<u64>());
    }

    /// The pool still stores, reads and frees a fresh object (and the kept ones still read back).
    fn check_works(&self) {
        self.check();
        let data = pattern(0xfeed, 300);
        let h = self.pool.store(&data).expect("store after error");
        assert_eq!(self.pool.read_to_vec(&h).unwrap(), data);
        h.free().expect("free after error");
        self.check();
    }

    fn free_all(&mut self) {
        for (h, _) in self.objs.drain(..) {
            // SAFETY: the word holds an object of this pool (or is empty).
            unsafe { self.pool.free_raw(&h) }.expect("free");
            assert_eq!(h.load(Ordering::Relaxed), 0, "free empties the handle");
        }
    }
}

impl Drop for Kept<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.free_all();
            assert_eq!(self.pool.total_pages(), 0, "pages return to 0");
        } else {
            // The pool may be corrupt; leak the words rather than leave dangling owners.
            for (h, _) in self.objs.drain(..) {
                std::mem::forget(h);
            }
        }
    }
}

fn pool(cfg: PoolConfig) -> Pool {
    Pool::new(cfg).expect("valid config")
}

/// A few objects in several classes, some spanning pages, one huge.
fn populated(pool: &Pool) -> Kept<'_> {
    let mut k = Kept::new(pool);
    for (i, len) in [1usize, 7, 24, 100, 694, 1000, 2000, 3000, 4000, 4096, 1500, 1500, 1500]
        .into_iter()
        .enumerate()
    {
        k.store(i as u64, len.min(pool.config().page_size as usize));
    }
    k.check();
    k
}

fn assert_invalid_handle<T: std::fmt::Debug>(r: zsmalloc_core::Result<T>, what: &str) {
    match r {
        Err(e @ Error::InvalidHandle(_)) => assert_eq!(e.errno(), libc::EINVAL, "{what}"),
        other => panic!("{what}: expected InvalidHandle, got {other:?}"),
    }
}

fn assert_invalid_argument<T: std::fmt::Debug>(r: zsmalloc_core::Result<T>, what: &str) {
    match r {
        Err(e @ Error::InvalidArgument(_)) => assert_eq!(e.errno(), libc::EINVAL, "{what}"),
        other => panic!("{what}: expected InvalidArgument, got {other:?}"),
    }
}

// ------------------------------------------------------------------------------------ lengths

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

/// Compacts and asserts nothing is left to free (no leaked pin blocks a source).
fn compact_fully(p: &Pool) {
    p.compact();
    for c in p.class_stats() {
        assert_eq!(c.freeable, 0, "class {} still freeable after compact", c.size);
    }
}

// ------------------------------------------------------------------------------------ handles

#[test]
fn empty_handle_reads_are_refused_and_frees_are_noops() {
    let p = pool(PoolConfig::default());
    let k = populated(&p);
    let h = AtomicUsize::new(0);
    let mut local = vec![0u8; 8192];
    // SAFETY: `h` is an empty word on this frame.
    unsafe {
        assert_invalid_handle(p.read_begin_raw(&h, 10, local.as_mut_ptr()), "read empty");
        assert_invalid_handle(p.read_sg_begin_raw(&h, 10), "sg empty");
        assert_invalid_handle(p.read_end_raw(&h, None), "end empty");
        assert_invalid_handle(p.object_len_raw(&h), "len empty");
        assert_invalid_handle(p.write_raw(&h, &[1]), "write empty");
        assert_eq!(p.free_raw(&h), Ok(()), "free of an empty handle is a no-op");
        let to = AtomicUsize::new(0);
        assert_invalid_handle(p.handle_move_raw(&h, &to), "move empty");
    }
    k.check_works();
}

#[test]
fn garbage_words_are_refused_and_never_dereferenced() {
    let p = pool(PoolConfig::default());
    let mut k = populated(&p);
    let i = k.store(1, 500);
    let real = k.word(i).load(Ordering::Relaxed);
    let tag = real & (0b111 << 61);
    let stats = p.stats();
    let mut garbage = vec![
        1,
        2,
        0xffff,
        0x1_0000, // object field 0: never produced
        usize::MAX,
        0xdead_beef,
        0x8000_0000_0000_0000,
        tag | 0xffff,                // slot 0, page 0, a position in no page of it
        tag | (0xff_ffff << 33) | 1, // slot out of range
        real ^ (1 << 16),            // another position: not in this zspage's page
        real + 100 / 8,              // a position inside the object, not an object start
        real + 4096 / 8,             // a position in another page
        real ^ (1 << 57),            // another page index of the zspage
        real ^ (0b011 << 61),        // another tag
        real ^ (1 << 33),            // another zspage entry
    ];
    // Every other live object's word: right tag, slot, generation and index, but not owned by
    // the word that presents it.
    garbage.extend(k.objs.iter().map(|o| o.0.load(Ordering::Relaxed)));
    let mut x = 0x1234_5678_9abc_def1u64;
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        garbage.push(x as usize);
        garbage.push(tag | (x as usize & 0x00ff_ffff_ffff_ffff));
        garbage.push(tag | (x as usize & 0x0000_00ff_ffff_ffff)); // small slots
    }
    let mut local = vec![0u8; 8192];
    for &g in &garbage {
        let w = AtomicUsize::new(g);
        // SAFETY: `w` is a word on this frame; garbage must be refused without dereferencing.
        unsafe {
            assert_invalid_handle(p.read_begin_raw(&w, 500, local.as_mut_ptr()), "read");
            assert_invalid_handle(p.read_sg_begin_raw(&w, 500), "sg");
            assert_invalid_handle(p.object_len_raw(&w), "len");
            assert_invalid_handle(p.write_raw(&w, &[0; 500]), "write");
            assert_invalid_handle(p.read_end_raw(&w, None), "end");
            assert_invalid_handle(p.free_raw(&w), "free");
            let to = AtomicUsize::new(0);
            assert_invalid_handle(p.handle_move_raw(&w, &to), "move");
            assert_eq!(to.load(Ordering::Relaxed), 0);
            // A garbage word is non-empty: storing into it is refused as in use, not used.
            assert_eq!(p.store_raw(&w, &[1, 2, 3]), Err(Error::HandleInUse));
        }
        assert_eq!(w.load(Ordering::Relaxed), g, "a refused word is left untouched");
    }
    assert_eq!(p.stats().objs_inuse, stats.objs_inuse);
    assert_eq!(p.stats().bytes_stored, stats.bytes_stored);
    assert_eq!(p.total_pages(), stats.pages_allocated);
    k.check_works();
    compact_fully(&p);
    k.check();
}

#[test]
fn foreign_handles_are_refused_even_with_the_same_pool_tag() {
    let a = pool(PoolConfig::default());
    let b = pool(PoolConfig::default());
    let ka = populated(&a);
    let kb = populated(&b);
    let tag = |p: &Pool| {
        let h = p.store(b"x").unwrap();
        h.word() >> 61
    };
    // Safe layer: a handle of `b` given to `a`.
    let hb = b.store(&pattern(3, 900)).unwrap();
    assert_invalid_handle(a.read_to_vec(&hb), "safe read of a foreign handle");
    let mut out = vec![0u8; 900];
    assert_invalid_handle(a.read_into(&hb, &mut out), "safe read_into foreign");
    assert_invalid_handle(a.read_sg(&hb).map(|_| ()), "safe sg foreign");
    let mut local = vec![0u8; 8192];
    assert_invalid_handle(a.read(&hb, &mut local).map(|_| ()), "safe read section foreign");
    let mut hb_mut = b.malloc(10).unwrap();
    assert_invalid_handle(a.write(&mut hb_mut, &[0; 10]), "safe write foreign");
    drop(hb_mut);
    // Raw layer: b's words presented to a (by the owning word itself and by copies).
    let mut pools = vec![];
    // Find a third pool sharing a's tag (tags cycle through 7 values), so only the ownership
    // check can tell the pools apart.
    let twin = loop {
        let c = pool(PoolConfig::default());
        if tag(&c) == tag(&a) {
            break c;
        }
        pools.push(c);
        assert!(pools.len() < 1024, "no pool with the same tag found");
    };
    drop(pools);
    let kt = populated(&twin);
    for (foreign, victim) in [(&kb, &a), (&kt, &a), (&ka, &twin), (&ka, &b)] {
        for (h, data) in &foreign.objs {
            let copy = AtomicUsize::new(h.load(Ordering::Relaxed));
            // SAFETY: raw words kept alive by their `Kept`; refused calls leave them alone.
            unsafe {
                for w in [&**h, &copy] {
                    assert_invalid_handle(
                        victim.read_begin_raw(w, data.len(), local.as_mut_ptr()),
                        "foreign read",
                    );
                    assert_invalid_handle(victim.object_len_raw(w), "foreign len");
                    assert_invalid_handle(victim.free_raw(w), "foreign free");
                    let to = AtomicUsize::new(0);
                    assert_invalid_handle(victim.handle_move_raw(w, &to), "foreign move");
                }
            }
        }
    }
    assert_eq!(b.read_to_vec(&hb).unwrap(), pattern(3, 900));
    drop(hb);
    ka.check_works();
    kb.check_works();
    kt.check_works();
}

#[test]
fn stale_copies_and_double_frees_are_refused() {
    let p = pool(PoolConfig::default());
    let mut k = populated(&p);
    let i = k.store(42, 700);
    let j = k.store(43, 700); // a neighbour in the same zspage
    let copy = AtomicUsize::new(k.word(i).load(Ordering::Relaxed));
    let mut local = vec![0u8; 8192];
    // SAFETY: all words are kept alive (boxed in `k`, or on this frame) for every call.
    unsafe {
        // The copy is not the owner: refused while the original is live.
        assert_invalid_handle(p.read_begin_raw(&copy, 700, local.as_mut_ptr()), "copy read");
        assert_invalid_handle(p.write_raw(&copy, &[0; 700]), "copy write");
        assert_invalid_handle(p.free_raw(&copy), "copy free");
        assert_invalid_handle(p.handle_move_raw(&copy, &AtomicUsize::new(0)), "copy move");
        k.check();
        // Free through the owner; then the copy is a double free.
        let (h, data) = k.objs.remove(i);
        let stale = h.load(Ordering::Relaxed);
        p.free_raw(&h).unwrap();
        assert_eq!(h.load(Ordering::Relaxed), 0);
        assert_eq!(p.free_raw(&h), Ok(()), "the emptied owner frees as a no-op");
        assert_invalid_handle(p.free_raw(&copy), "double free through a stale copy");
        assert_invalid_handle(p.read_begin_raw(&copy, 700, local.as_mut_ptr()), "use after free");
        // Writing the stale value back into the original word (a contract breach) is refused too.
        h.store(stale, Ordering::Relaxed);
        assert_invalid_handle(p.free_raw(&h), "double free through the restored word");
        h.store(0, Ordering::Relaxed);
        // The freed slot is reused by the next object of that class (LIFO): the copy's location
        // now holds someone else's object, still refused, and that object is untouched.
        let n = k.store(44, data.len());
        assert_eq!(k.word(n).load(Ordering::Relaxed), stale, "LIFO reuse of the freed slot");
        assert_invalid_handle(p.free_raw(&copy), "stale copy of a reused slot");
        assert_invalid_handle(p.write_raw(&copy, &[0; 700]), "stale write to a reused slot");
        k.check();
        // Free the neighbour and the new object: the zspage may be released; the copy names a
        // dead (or reused) zspage.
        let _ = j;
    }
    k.free_all();
    assert_eq!(p.total_pages(), 0);
    // SAFETY: `copy` is a word on this frame; refused.
    unsafe { assert_invalid_handle(p.free_raw(&copy), "stale copy after release") };
    let k2 = populated(&p);
    // SAFETY: as above.
    unsafe { assert_invalid_handle(p.free_raw(&copy), "stale copy after zspage reuse") };
    k2.check_works();
}

#[test]
fn free_during_a_read_section_is_busy_then_succeeds() {
    let p = pool(PoolConfig::default());
    let mut k = populated(&p);
    let i = k.store(10, 3000); // spanning in classic 4K tables for some slots
    let j = k.store(11, 3000);
    let mut local = vec![0u8; 8192];
    let stats = p.stats();
    let (hj, _) = k.objs.remove(j);
    let (hi, _) = k.objs.remove(i);
    // SAFETY: `hi`/`hj` are boxed and live until the end of the test; every section is ended
    // before the objects are freed.
    unsafe {
        let (hi, hj) = (&*hi, &*hj);
        let ptr = p.read_begin_raw(hi, 3000, local.as_mut_ptr()).unwrap();
        let e = p.free_raw(hi).unwrap_err();
        assert_eq!((e.clone(), e.errno()), (Error::Busy, libc::EBUSY));
        assert_eq!(p.handle_move_raw(hi, &AtomicUsize::new(0)), Err(Error::Busy));
        // Nothing changed and the section's bytes are still the object's.
        assert_eq!(p.stats().objs_inuse, stats.objs_inuse);
        assert_eq!(std::slice::from_raw_parts(ptr, 3000), &pattern(10, 3000)[..]);
        // A second reader of the same object, and a scatter-gather section.
        let mut local2 = vec![0u8; 8192];
        p.read_begin_raw(hi, 3000, local2.as_mut_ptr()).unwrap();
        p.read_sg_begin_raw(hi, 3000).unwrap();
        // Compaction inside our own read section must not deadlock, and must not move it.
        let word = hi.load(Ordering::Relaxed);
        p.compact();
        assert_eq!(hi.load(Ordering::Relaxed), word, "a pinned object is not moved");
        p.read_end_raw(hi, Some(3000)).unwrap();
        p.read_end_raw(hi, Some(3000)).unwrap();
        assert_eq!(p.free_raw(hi), Err(Error::Busy), "one reader is still in");
        // The neighbour, not being read, frees fine and stores again.
        p.free_raw(hj).unwrap();
        p.read_end_raw(hi, Some(3000)).unwrap();
        // All sections ended: the free succeeds.
        p.free_raw(hi).unwrap();
        assert_eq!(hi.load(Ordering::Relaxed), 0);
    }
    // Safe layer: a section borrows the handle, so it cannot be dropped meanwhile; after the
    // section, `free` succeeds.
    let h = p.store(&pattern(12, 2500)).unwrap();
    {
        let sec = p.read(&h, &mut local).unwrap();
        assert_eq!(&sec[..], &pattern(12, 2500)[..]);
    }
    h.free().unwrap();
    k.check_works();
    compact_fully(&p);
}

/// A thread's first open section is announced in its announce slot and the others are counted
/// in the headers; each end finds its own section in any order, a free is refused while any
/// section of its object is open, and nothing is left behind.
#[test]
fn interleaved_sections_of_one_thread_end_in_any_order() {
    let p = pool(PoolConfig::default());
    let mut k = populated(&p);
    let (a, b) = (k.store(20, 100), k.store(21, 200));
    let mut local = vec![0u8; 8192];
    for first_end in [a, b] {
        let (ha, hb) = (k.word(a), k.word(b));
        let other = if first_end == a { hb } else { ha };
        let first = k.word(first_end);
        let len = |h: &AtomicUsize| if std::ptr::eq(h, ha) { 100 } else { 200 };
        // SAFETY: the words are kept by `k`; `local` holds a page plus a header; every section
        // begun here is ended here.
        unsafe {
            let pa = p.read_begin_raw(ha, 100, local.as_mut_ptr()).unwrap();
            p.read_begin_raw(hb, 200, local.as_mut_ptr()).unwrap();
            p.read_begin_raw(ha, 100, local.as_mut_ptr()).unwrap();
            assert_eq!(std::slice::from_raw_parts(pa, 100), &pattern(20, 100)[..]);
            assert_eq!(p.free_raw(ha), Err(Error::Busy));
            assert_eq!(p.free_raw(hb), Err(Error::Busy));
            assert_invalid_argument(p.read_end_raw(ha, Some(99)), "wrong length at the end");
            p.read_end_raw(first, Some(len(first))).unwrap();
            p.read_end_raw(other, Some(len(other))).unwrap();
            // One section of `a` is still open, whichever ended first.
            assert_eq!(p.free_raw(ha), Err(Error::Busy));
            assert_eq!(p.handle_move_raw(ha, &AtomicUsize::new(0)), Err(Error::Busy));
            p.read_end_raw(ha, Some(100)).unwrap();
            assert_invalid_argument(p.read_end_raw(ha, Some(100)), "no section left on a");
            assert_invalid_argument(p.read_end_raw(hb, Some(200)), "no section left on b");
        }
    }
    // No announce or count was left behind: everything moves, reads back and frees.
    compact_fully(&p);
    k.check();
    k.free_all();
    assert_eq!(p.total_pages(), 0);
}

#[test]
fn store_into_a_non_empty_handle_is_handle_in_use() {
    let p = pool(PoolConfig::default());
    let mut k = populated(&p);
    let i = k.store(20, 333);
    let before = (p.stats(), p.total_pages());
    // SAFETY: words kept alive by `k`.
    unsafe {
        let e = p.store_raw(k.word(i), &[9; 50]).unwrap_err();
        assert_eq!((e.clone(), e.errno()), (Error::HandleInUse, libc::EEXIST));
        assert_eq!(p.malloc_raw(k.word(i), 50), Err(Error::HandleInUse));
    }
    assert_eq!((p.stats(), p.total_pages()), before);
    k.check_works();
}

#[test]
fn handle_move_relocates_ownership() {
    let p = pool(PoolConfig::default());
    let mut k = populated(&p);
    // The moved object is the first of a fresh class (1800 bytes: class 1808), so compaction can
    // be made to move it below.
    let len = 1800;
    let info = p.class_table().classes()[p.class_table().position(len + HANDLE_SIZE)].clone();
    let objs = info.objs_per_zspage as usize;
    assert!(objs > 2 && !info.huge, "{info:?}");
    let i = k.store(30, len);
    let to = Box::new(AtomicUsize::new(0));
    let data = pattern(30, len);
    let mut local = vec![0u8; 8192];
    // SAFETY: `to` and `fill` are boxed and kept until freed below; other words are kept by `k`.
    unsafe {
        let from = k.word(i);
        let word = from.load(Ordering::Relaxed);
        assert_eq!(p.handle_move_raw(from, from), Ok(()), "moving onto itself: no-op");
        assert_eq!(from.load(Ordering::Relaxed), word);
        // Into a non-empty word: refused, nothing changes.
        let j = k.store(31, 10);
        assert_eq!(p.handle_move_raw(k.word(i), k.word(j)), Err(Error::HandleInUse));
        k.check();
        let before = p.stats();
        let from = k.word(i);
        assert_eq!(p.handle_move_raw(from, &to), Ok(()));
        assert_eq!((from.load(Ordering::Relaxed), to.load(Ordering::Relaxed)), (0, word));
        assert_eq!(p.stats(), before, "a move changes no counter");
        // `to` owns it now; `from` is empty; the old word put back into `from` is refused.
        assert_eq!(p.object_len_raw(&to), Ok(len));
        assert_invalid_handle(p.object_len_raw(from), "moved-from handle");
        from.store(word, Ordering::Relaxed);
        assert_invalid_handle(p.read_begin_raw(from, len, local.as_mut_ptr()), "old owner");
        assert_invalid_handle(p.free_raw(from), "old owner free");
        from.store(0, Ordering::Relaxed);
        let r = p.read_begin_raw(&to, len, local.as_mut_ptr()).unwrap();
        assert_eq!(std::slice::from_raw_parts(r, len), &data[..]);
        p.read_end_raw(&to, Some(len)).unwrap();
        // Fill the rest of its zspage and one more zspage, then empty the first zspage but for
        // the moved object and take one object out of the second: compaction must move the
        // moved object (the sparsest source) into the second zspage, rewriting `to`.
        let fill: Vec<Box<AtomicUsize>> = (0..2 * objs - 1)
            .map(|s| {
                let b = Box::new(AtomicUsize::new(0));
                p.store_raw(&b, &pattern(1000 + s as u64, len)).unwrap();
                b
            })
            .collect();
        let pages_per = u64::from(info.pages_per_zspage);
        for b in &fill[..objs - 1] {
            p.free_raw(b).unwrap();
        }
        p.free_raw(&fill[objs]).unwrap();
        let moved_before = p.stats().objs_moved;
        assert_eq!(p.compact(), pages_per);
        assert_eq!(p.stats().objs_moved, moved_before + 1);
        assert_ne!(to.load(Ordering::Relaxed), word, "compaction rewrote the new owner");
        assert_eq!(from.load(Ordering::Relaxed), 0, "compaction never writes the old owner");
        assert_eq!(p.object_len_raw(&to), Ok(len));
        let r = p.read_begin_raw(&to, len, local.as_mut_ptr()).unwrap();
        assert_eq!(std::slice::from_raw_parts(r, len), &data[..]);
        p.read_end_raw(&to, Some(len)).unwrap();
        for (s, b) in fill.iter().enumerate().skip(objs - 1) {
            if s != objs {
                let r = p.read_begin_raw(b, len, local.as_mut_ptr()).unwrap();
                assert_eq!(std::slice::from_raw_parts(r, len), &pattern(1000 + s as u64, len)[..]);
                p.read_end_raw(b, Some(len)).unwrap();
                p.free_raw(b).unwrap();
            }
        }
        // Move back, then `k` frees through the original word.
        assert_eq!(p.handle_move_raw(&to, k.word(i)), Ok(()));
        assert_eq!(to.load(Ordering::Relaxed), 0);
    }
    k.check_works();
}

// ------------------------------------------------------------------------------------ limits

#[test]
fn memory_limit_is_enomem_and_changes_nothing() {
    for (limit, chain) in [(10u64, 8u32), (1, 1), (24, 4)] {
        let p =
            pool(PoolConfig { mem_limit_pages: limit, chain_size: chain, ..Default::default() });
        let mut k = Kept::new(&p);
        let mut seed = 0;
        // Fill with 3000-byte objects until the limit refuses a new zspage.
        let err = loop {
            let h = Box::new(AtomicUsize::new(0));
            let data = pattern(seed, 3000);
            // SAFETY: `h` is boxed and kept in `k` on success; left empty on failure.
            match unsafe { p.store_raw(&h, &data) } {
                Ok(()) => k.objs.push((h, data)),
                Err(e) => {
                    assert_eq!(h.load(Ordering::Relaxed), 0, "failed store leaves handle empty");
                    break e;
                }
            }
            seed += 1;
            assert!(seed < 10_000, "the limit never hit");
        };
        assert_eq!((err.clone(), err.errno()), (Error::OutOfMemory, libc::ENOMEM));
        assert!(p.total_pages() <= limit);
        let before = (p.stats(), p.class_stats(), p.total_pages());
        // Every other way of asking for a new zspage of that class fails the same way.
        assert_eq!(p.store(&pattern(1, 3000)).unwrap_err(), Error::OutOfMemory);
        assert_eq!(p.malloc(3000).unwrap_err(), Error::OutOfMemory);
        assert_eq!((p.stats(), p.class_stats(), p.total_pages()), before, "limit {limit}");
        assert!(p.stats().pages_peak <= limit);
        k.check();
        // Freeing one object makes room in its zspage: a store of the same class succeeds
        // without a new zspage.
        let (h, _) = k.objs.pop().unwrap();
        // SAFETY: `h` holds an object of this pool.
        unsafe { p.free_raw(&h).unwrap() };
        let again = p.store(&pattern(5, 3000)).unwrap();
        assert_eq!(p.read_to_vec(&again).unwrap(), pattern(5, 3000));
        drop(again);
        k.check();
        drop(k);
        assert_eq!(p.total_pages(), 0);
        // Empty again: a store succeeds.
        let h = p.store(&pattern(6, 100)).unwrap();
        assert_eq!(p.read_to_vec(&h).unwrap(), pattern(6, 100));
    }
}

#[test]
fn memory_limit_refuses_a_zspage_that_does_not_fit_whole() {
    // Classic 4K, chain 8: with a 3-page zspage held, a 4-page zspage does not fit under a
    // 6-page limit even though 3 pages remain.
    let p = pool(PoolConfig { mem_limit_pages: 6, ..Default::default() });
    let mut k = Kept::new(&p);
    let big = p.class_table().classes().iter().find(|c| c.pages_per_zspage == 3).unwrap().clone();
    let four = p.class_table().classes().iter().find(|c| c.pages_per_zspage == 4).unwrap().clone();
    k.store(1, big.size as usize - HANDLE_SIZE);
    assert_eq!(p.total_pages(), 3);
    let before = (p.stats(), p.class_stats());
    assert_eq!(
        p.store(&vec![1; four.size as usize - HANDLE_SIZE]).unwrap_err(),
        Error::OutOfMemory
    );
    assert_eq!((p.stats(), p.class_stats()), before);
    // A 1-page class still fits (4 pages used of 6).
    k.store(2, 4096);
    assert_eq!(p.total_pages(), 4);
    k.check();
}

// ------------------------------------------------------------------------------------ configs

#[test]
fn bad_configurations_name_the_setting() {
    let cases: Vec<(PoolConfig, &str)> = vec![
        (PoolConfig { page_size: 0, ..Default::default() }, "page_size"),
        (PoolConfig { page_size: 2048, ..Default::default() }, "page_size"),
        (PoolConfig { page_size: 5000, ..Default::default() }, "page_size"),
        (PoolConfig { page_size: 131072, ..Default::default() }, "page_size"),
        (PoolConfig { page_size: u32::MAX, ..Default::default() }, "page_size"),
        (PoolConfig { chain_size: 0, ..Default::default() }, "chain_size"),
        (PoolConfig { chain_size: 17, ..Default::default() }, "chain_size"),
        (PoolConfig { class_delta: 4, ..Default::default() }, "class_delta"),
        (PoolConfig { class_delta: 12, ..Default::default() }, "class_delta"),
        (PoolConfig { class_delta: 4096, ..Default::default() }, "class_delta"),
        (PoolConfig { class_delta: 8192, page_size: 8192, ..Default::default() }, "class_delta"),
    ];
    for (cfg, setting) in cases {
        let err = Pool::new(cfg.clone()).unwrap_err();
        match &err {
            Error::Config { setting: s, message } => {
                assert_eq!(*s, setting, "{cfg:?}");
                assert!(!message.is_empty());
            }
            other => panic!("{cfg:?}: expected a configuration error, got {other:?}"),
        }
        assert_eq!(err.errno(), libc::EINVAL);
        assert!(err.to_string().contains(setting), "{err}");
        assert!(zsmalloc_core::ClassTable::new(&cfg).is_err());
    }
    // Edges that are accepted.
    for cfg in [
        PoolConfig { page_size: 65536, chain_size: 16, class_delta: 8, ..Default::default() },
        PoolConfig { page_size: 4096, chain_size: 1, class_delta: 4088, ..Default::default() },
    ] {
        let p = Pool::new(cfg).unwrap();
        let h = p.store(&[1, 2, 3]).unwrap();
        assert_eq!(p.read_to_vec(&h).unwrap(), [1, 2, 3]);
    }
    // Unknown read modes name the setting and list the accepted ones.
    for m in ["mmap", "", "Map", "copy "] {
        match ReadMode::parse(m) {
            Err(e @ Error::Config { setting: "read_mode", .. }) => {
                assert!(e.to_string().contains("copy, map, contiguous"), "{e}")
            }
            other => panic!("read mode {m:?}: {other:?}"),
        }
    }
    assert_eq!(ReadMode::parse("copy"), Ok(ReadMode::Copy));
    assert_eq!(ReadMode::parse("map"), Ok(ReadMode::Map));
    assert_eq!(ReadMode::parse("contiguous"), Ok(ReadMode::Contiguous));
    // The environment path names the variable (read through a lookup, not the process env).
    for (var, value) in [
        ("ZSMALLOC_PAGE_SIZE", "4095"),
        ("ZSMALLOC_PAGE_SIZE", "-4096"),
        ("ZSMALLOC_PAGE_SIZE", "99999999999"),
        ("ZSMALLOC_CHAIN_SIZE", "0"),
        ("ZSMALLOC_CHAIN_SIZE", "x"),
        ("ZSMALLOC_CLASS_DELTA", "7"),
        ("ZSMALLOC_CHAIN_POLICY", "fixed-17"),
        ("ZSMALLOC_CHAIN_POLICY", "Classic"),
        ("ZSMALLOC_READ_MODE", "mmap"),
        ("ZSMALLOC_BACKING", "shm"),
        ("ZSMALLOC_MEM_LIMIT_PAGES", "ten"),
    ] {
        let err = PoolConfig::from_lookup(|k| (k == var).then(|| value.to_string())).unwrap_err();
        assert!(matches!(err, Error::Config { setting, .. } if setting == var), "{var}={value}");
        assert!(err.to_string().contains(var), "{err}");
    }
}

#[test]
fn out_of_range_policy_answers_are_clamped() {
    // A user callback answering nonsense cannot break the table: chains stay in 1..=chain.
    for answer in [0u32, 1, 3, 16, 1000] {
        let cfg = PoolConfig {
            chain_size: 4,
            chain_policy: PolicyRef::new(FnPolicy::new("odd", move |_, _, _| answer)),
            ..Default::default()
        };
        let p = Pool::new(cfg).unwrap();
        for c in p.class_table().classes() {
            assert!((1..=4).contains(&c.pages_per_zspage), "{c:?}");
        }
        let mut k = Kept::new(&p);
        for (s, len) in [1usize, 100, 2000, 4000, 4095, 4096].into_iter().enumerate() {
            k.store(s as u64, len);
            k.store(100 + s as u64, len);
        }
        k.check_works();
    }
}

/// A chain policy that gives the page-sized class more than one page makes that class non-huge
/// (objects carry an 8-byte header), yet lengths up to a full page are sent to it.
#[test]
fn page_sized_objects_fit_with_any_policy() {
    for n in [2u32, 3, 8] {
        for page in [4096u32, 16384] {
            let cfg = PoolConfig {
                page_size: page,
                chain_size: 8,
                chain_policy: PolicyRef::new(Fixed(n)),
                ..Default::default()
            };
            let p = Pool::new(cfg).unwrap();
            let mut k = Kept::new(&p);
            for s in 0..(2 * n as u64 + 1) {
                for len in [page as usize, page as usize - 1, page as usize - 7] {
                    k.store(s * 3 + len as u64, len);
                }
            }
            k.check_works();
            compact_fully(&p);
            k.check();
        }
    }
}
