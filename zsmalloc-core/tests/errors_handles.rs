//! Error paths of handle words: empty, garbage, foreign, stale and copied words are refused and
//! never dereferenced; frees and moves of objects being read are `Busy`; stores into a full word
//! are refused; moves relocate ownership. The pool is intact after each (`common/kept.rs`).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::kept::{
    assert_invalid_argument, assert_invalid_handle, compact_fully, pool, populated,
};
use common::pattern;
use zsmalloc_core::{Error, Pool, PoolConfig, HANDLE_SIZE};

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
