//! The zblock and malloc backends through the backend interface: zblock's block table and
//! placement on hand-computed cases (4K, 16K and 64K pages), refused lengths and their errnos,
//! the memory limit and injected faults, read sections (in place, one SG segment, `Busy` frees
//! and moves), foreign, garbage, stale and empty handle words refused across all three backends.
//! (The malloc backend's property test and the threaded stress: `backends_stress.rs`; zblock's
//! property test and fill-and-churn model: `zblock_model.rs`.)

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::backend_calls::{cfg, free, malloc_pool, read, store, zblock};
use common::pattern;
use zsmalloc_core::fault::{self, Point};
use zsmalloc_core::malloc_pool::MallocPool;
use zsmalloc_core::zblock::ZblockPool;
use zsmalloc_core::{AnyPool, Backend, BackendKind, Error, Pool, PoolConfig};

// -------------------------------------------------------------------------- zblock: placement

/// (slots, pages, slot size, tail waste) of the first types, computed by hand from
/// `round_down((pages * PAGE - header) / slots, 8)`.
#[test]
fn block_tables_first_types_by_hand() {
    let t4 = zblock(4096);
    let want4 = [(28, 1, 144, 16), (18, 1, 224, 16), (12, 1, 336, 16), (10, 1, 400, 48)];
    for (t, want) in t4.table().types().iter().zip(want4) {
        assert_eq!((t.slots, t.num_pages, t.slot_size, t.tail_waste), want);
    }
    assert_eq!(t4.table().types().len(), 37);
    assert_eq!(t4.huge_class_size(), 4080, "(4 * 4096 - 48) / 4 = 4084 -> 4080");
    let t16 = zblock(16384);
    // (16384 - 72) / 185 = 88.2 -> 88; / 113 = 144.4 -> 144.
    let want16 = [(185, 1, 88, 32), (113, 1, 144, 40)];
    for (t, want) in t16.table().types().iter().zip(want16) {
        assert_eq!((t.slots, t.num_pages, t.slot_size, t.tail_waste), want);
    }
    assert_eq!(t16.table().types().len(), 61);
    assert_eq!(t16.huge_class_size(), 16360, "(4 * 16384 - 72) / 4 = 16366 -> 16360");
    let t64 = zblock(65536);
    assert_eq!(t64.table().types()[0].slot_size, 352, "(65536 - 72) / 185 = 353.9 -> 352");
    // Every row of class_stats is a block type.
    let rows = t4.class_stats();
    assert_eq!(rows.len(), 37);
    for (i, (r, t)) in rows.iter().zip(t4.table().types()).enumerate() {
        assert_eq!((r.index, r.first_index, r.last_index), (i as u32, i as u32, i as u32));
        assert_eq!(
            (r.size, r.objs_per_zspage, r.pages_per_zspage),
            (t.slot_size, t.slots, t.num_pages)
        );
        assert_eq!(r.tail_waste, t.num_pages * 4096 - 48 - t.slots * t.slot_size);
        assert!(!r.huge && r.fullness == [0; 12] && r.freeable == 0);
    }
}

/// Filling one type: `slots` objects take one block, the next one a second block.
#[test]
fn filling_one_type_counts_blocks() {
    // (page, length, objects per block, pages per block)
    for (page, len, slots, pages) in
        [(4096, 100, 28, 1), (16384, 100, 113, 1), (65536, 100, 185, 1)]
    {
        let p = zblock(page);
        let mut hs = Vec::new();
        for i in 0..slots {
            hs.push(store(&p, &pattern(i, len)).unwrap());
        }
        assert_eq!(p.total_pages(), pages, "{page}: one block");
        hs.push(store(&p, &pattern(99, len)).unwrap());
        assert_eq!(p.total_pages(), 2 * pages, "{page}: the next object opens a block");
        for (i, h) in hs.iter().enumerate().take(slots as usize) {
            assert_eq!(read(&p, h).unwrap(), pattern(i as u64, len));
        }
        let s = p.stats();
        assert_eq!((s.objs_inuse, s.objs_allocated), (slots + 1, 2 * slots));
        for h in &hs {
            free(&p, h).unwrap();
        }
        assert_eq!(p.total_pages(), 0, "empty blocks are released at once");
        assert_eq!(p.stats().pages_peak, 2 * pages);
    }
}

/// A length equal to a slot size goes to the next type; lookup_class_index agrees.
#[test]
fn lookup_is_strictly_greater_at_slot_sizes() {
    for page in [4096, 16384, 65536] {
        let p = zblock(page);
        let types = p.table().types().to_vec();
        for (i, t) in types.iter().enumerate().take(types.len() - 1) {
            let s = t.slot_size as usize;
            assert_eq!(p.lookup_class_index(s - 1), i as u32);
            assert_eq!(p.lookup_class_index(s), i as u32 + 1, "{page}: {s} goes to the next type");
            let h = store(&p, &pattern(1, s)).unwrap();
            let rows = p.class_stats();
            assert_eq!(rows[i + 1].obj_used, 1);
            assert_eq!(rows[i + 1].pages_used, u64::from(types[i + 1].num_pages));
            assert_eq!(read(&p, &h).unwrap(), pattern(1, s));
            free(&p, &h).unwrap();
        }
        assert_eq!(p.lookup_class_index(0), types.len() as u32);
        assert_eq!(p.lookup_class_index(p.huge_class_size()), types.len() as u32);
        assert_eq!(p.lookup_class_index(p.huge_class_size() - 1), types.len() as u32 - 1);
    }
}

#[test]
fn refused_lengths_and_page_sizes() {
    let p = zblock(4096);
    let keep = store(&p, &[7; 50]).unwrap();
    for len in [4080, 4096] {
        let e = store(&p, &vec![1; len]).unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{len}: {e}");
        assert_eq!(e.errno(), libc::ENOSPC);
    }
    let e = store(&p, &[]).unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL);
    assert_eq!(p.total_pages(), 1, "nothing changed");
    assert_eq!(p.stats().objs_inuse, 1);
    assert!(store(&p, &vec![3; 4079]).is_ok(), "4079 is the longest on 4K pages");
    assert_eq!(read(&p, &keep).unwrap(), vec![7; 50]);
    let p16 = zblock(16384);
    assert_eq!(store(&p16, &vec![1; 16360]).unwrap_err().errno(), libc::ENOSPC);
    assert!(store(&p16, &vec![1; 16359]).is_ok());
    for page in [8192, 4095, 131072] {
        let e = ZblockPool::with_name("x", cfg(BackendKind::Zblock, page)).err().unwrap();
        assert!(matches!(e, Error::Config { setting: "page_size", .. }), "{page}: {e}");
    }
    let any = AnyPool::with_name("x", cfg(BackendKind::Zblock, 8192)).err().unwrap();
    assert!(any.to_string().contains("8192"), "{any}");
    assert!(ZblockPool::with_name("x", PoolConfig::default()).is_err(), "backend must be zblock");
    let m = malloc_pool();
    assert_eq!(store(&m, &vec![1; 4097]).unwrap_err().errno(), libc::ENOSPC);
    assert_eq!(store(&m, &[]).unwrap_err().errno(), libc::EINVAL);
    assert!(store(&m, &vec![1; 4096]).is_ok());
    assert_eq!(m.huge_class_size(), 4096);
    assert!(m.class_stats().is_empty());
    assert_eq!(m.compact(), 0);
    assert_eq!(p.compact(), 0);
}

#[test]
fn memory_limit_and_faults_change_nothing() {
    let limited = PoolConfig { mem_limit_pages: 1, ..cfg(BackendKind::Zblock, 4096) };
    let p = ZblockPool::with_name("lim", limited).unwrap();
    let hs: Vec<_> = (0..28).map(|i| store(&p, &pattern(i, 100)).unwrap()).collect();
    let h = Box::new(AtomicUsize::new(0));
    // SAFETY: boxed word.
    assert_eq!(unsafe { p.store_raw(&h, &[1; 100]) }, Err(Error::OutOfMemory));
    assert_eq!(h.load(Ordering::Relaxed), 0);
    assert_eq!(p.total_pages(), 1);
    assert_eq!(p.stats().objs_inuse, 28);
    // Another type needs another block: refused too.
    assert_eq!(store(&p, &[1; 10]).unwrap_err(), Error::OutOfMemory);
    free(&p, &hs[0]).unwrap();
    assert!(store(&p, &[1; 100]).is_ok(), "a free slot of the block: no new pages");

    let p = zblock(4096);
    fault::arm(Point::Pages, 0, 1);
    let e = store(&p, &[1; 100]).unwrap_err();
    assert_eq!(e.errno(), libc::ENOMEM);
    assert_eq!(fault::arm(Point::Pages, 0, 0), 1);
    assert_eq!((p.total_pages(), p.stats().objs_inuse), (0, 0));
    assert!(store(&p, &[1; 100]).is_ok(), "works once the fault is gone");

    let lm = PoolConfig { mem_limit_pages: 1, ..cfg(BackendKind::Malloc, 4096) };
    let m = MallocPool::with_name("lim", lm).unwrap();
    let mut n = 0;
    while store(&m, &[2; 1000]).is_ok() {
        n += 1;
    }
    assert!((1..=4).contains(&n), "{n} objects of 1000 bytes in one page");
    assert_eq!(m.total_pages(), 1);
}

// ---------------------------------------------------------------------------- read sections

fn sections_behave(p: &dyn Backend) {
    let data = pattern(5, 300);
    let h = store(p, &data).unwrap();
    // SAFETY: boxed words throughout.
    unsafe {
        let ptr = p.read_begin_raw(&h, 300, std::ptr::null_mut()).unwrap();
        assert_eq!(std::slice::from_raw_parts(ptr, 300), &data[..]);
        let (segs, n) = p.read_sg_begin_raw(&h, 300).unwrap();
        assert_eq!(n, 1, "one segment");
        assert_eq!(segs[0], (ptr, 300), "in place, the same address");
        assert_eq!(p.free_raw(&h), Err(Error::Busy));
        let to = AtomicUsize::new(0);
        assert_eq!(p.handle_move_raw(&h, &to), Err(Error::Busy));
        p.read_end_at_raw(&h, Some(300), ptr).unwrap();
        assert_eq!(p.free_raw(&h), Err(Error::Busy), "one section still open");
        assert!(matches!(p.read_end_at_raw(&h, Some(299), ptr), Err(Error::InvalidArgument(_))));
        p.read_end_at_raw(&h, None, std::ptr::null()).unwrap();
        assert!(matches!(p.read_end_at_raw(&h, None, ptr), Err(Error::InvalidArgument(_))));
        assert!(matches!(
            p.read_begin_raw(&h, 301, std::ptr::null_mut()),
            Err(Error::InvalidArgument(_))
        ));
        // Moves: onto a full word refused; then the object follows the word.
        let full = store(p, &[1; 10]).unwrap();
        assert_eq!(p.handle_move_raw(&h, &full), Err(Error::HandleInUse));
        p.handle_move_raw(&h, &h).unwrap();
        p.handle_move_raw(&h, &to).unwrap();
        assert_eq!(h.load(Ordering::Relaxed), 0);
        assert_eq!(read(p, &to).unwrap(), data);
        let mut out = vec![0; 300];
        assert_eq!(p.read_into_raw(&to, &mut out).unwrap(), 300);
        assert_eq!(out, data);
        assert!(p.read_into_raw(&to, &mut out[..299]).is_err());
        // malloc + write.
        let w = AtomicUsize::new(0);
        p.malloc_raw(&w, 64).unwrap();
        assert!(p.write_raw(&w, &[9; 63]).is_err());
        p.write_raw(&w, &[9; 64]).unwrap();
        assert_eq!(read(p, &w).unwrap(), vec![9; 64]);
        assert_eq!(p.store_raw(&w, &[1]), Err(Error::HandleInUse));
        let s = p.stats();
        assert_eq!((s.reads_spanning, s.read_copy_bytes), (0, 0));
        assert_eq!(s.reads, 5);
        for x in [&to, &*full, &w] {
            p.free_raw(x).unwrap();
        }
        p.free_raw(&w).unwrap(); // empty word: nothing to do
    }
    assert_eq!(p.total_pages(), 0);
}

#[test]
fn read_sections_zblock() {
    sections_behave(&zblock(4096));
    sections_behave(&zblock(16384));
    sections_behave(&zblock(32768));
    let memfd =
        PoolConfig { backing: zsmalloc_core::Backing::Memfd, ..cfg(BackendKind::Zblock, 4096) };
    sections_behave(&ZblockPool::with_name("memfd", memfd).unwrap());
    let contiguous = PoolConfig {
        read_mode: zsmalloc_core::ReadMode::Contiguous,
        ..cfg(BackendKind::Zblock, 65536)
    };
    sections_behave(&ZblockPool::with_name("contiguous", contiguous).unwrap());
}

#[test]
fn read_sections_malloc() {
    sections_behave(&malloc_pool());
}

#[test]
fn read_sections_through_any_pool() {
    for b in [BackendKind::Zblock, BackendKind::Malloc] {
        let p = AnyPool::with_name("any", cfg(b, 4096)).unwrap();
        assert_eq!(p.kind(), b);
        sections_behave(&p);
    }
}

// -------------------------------------------------------------------------- foreign handles

/// Every word that is not `p`'s own live object, given to `p`: refused as an invalid handle,
/// nothing changed.
/// (zsmalloc, `strict == false`, may say EINVAL another way, e.g. "no read section".)
fn refuses(p: &dyn Backend, word: usize, what: &str, strict: bool) {
    let h = AtomicUsize::new(word);
    let pages = p.total_pages();
    let inuse = p.stats().objs_inuse;
    // SAFETY: any word is acceptable to the raw layer's checks; `h` stays put.
    unsafe {
        let bad = |r: Result<(), Error>, op: &str| {
            let ok = match &r {
                Err(Error::InvalidHandle(_)) => true,
                Err(e) => !strict && e.errno() == libc::EINVAL,
                Ok(()) => false,
            };
            assert!(ok, "{what}: {op}: {r:?}");
        };
        bad(p.read_begin_raw(&h, 100, std::ptr::null_mut()).map(|_| ()), "read");
        bad(p.read_sg_begin_raw(&h, 100).map(|_| ()), "sg");
        bad(p.read_end_at_raw(&h, None, std::ptr::null()), "end");
        bad(p.object_len_raw(&h).map(|_| ()), "len");
        bad(p.read_into_raw(&h, &mut [0; 4096]).map(|_| ()), "read_into");
        bad(p.write_raw(&h, &[0; 100]), "write");
        let to = AtomicUsize::new(0);
        bad(p.handle_move_raw(&h, &to), "move");
        if word != 0 {
            bad(p.free_raw(&h), "free");
            assert_eq!(p.store_raw(&h, &[1]), Err(Error::HandleInUse), "{what}");
        }
    }
    assert_eq!((p.total_pages(), p.stats().objs_inuse), (pages, inuse), "{what}");
    assert_eq!(h.load(Ordering::Relaxed), word);
}

#[test]
fn foreign_garbage_stale_and_empty_words_are_refused() {
    let zs = Pool::with_name("zs", PoolConfig::default()).unwrap();
    let zb = zblock(4096);
    let zb2 = zblock(4096);
    let m = malloc_pool();
    let m2 = malloc_pool();
    let pools: [(&dyn Backend, &str); 5] =
        [(&zs, "zsmalloc"), (&zb, "zblock"), (&zb2, "zblock 2"), (&m, "malloc"), (&m2, "malloc 2")];
    let held: Vec<Box<AtomicUsize>> =
        pools.iter().map(|(p, _)| store(*p, &pattern(3, 100)).unwrap()).collect();
    for (i, (p, name)) in pools.iter().enumerate() {
        for (j, (_, other)) in pools.iter().enumerate() {
            if i != j {
                let w = held[j].load(Ordering::Relaxed);
                refuses(*p, w, &format!("{other}'s word to {name}"), i != 0);
            }
        }
        // The pool's own word at another address: not its owner.
        let w = held[i].load(Ordering::Relaxed);
        refuses(*p, w, &format!("{name}'s word copied"), i != 0);
        // A freed word.
        let f = store(*p, &[4; 100]).unwrap();
        let stale = f.load(Ordering::Relaxed);
        free(*p, &f).unwrap();
        f.store(stale, Ordering::Relaxed);
        if i != 0 {
            // (zsmalloc's freed-word behaviour is its own tests' business)
            refuses(*p, stale, &format!("{name}'s freed word"), true);
        }
        f.store(0, Ordering::Relaxed);
        refuses(*p, 0, &format!("{name}: empty word"), i != 0);
    }
    // Garbage: random words, and random words wearing each backend's marker.
    let mut x: u64 = 0x1234_5678_9abc_def1;
    for k in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let w = match k % 3 {
            0 => x as usize,
            1 => (x as usize & ((1 << 56) - 1)) | 0x15 << 56,
            _ => (x as usize & ((1 << 56) - 1)) | 0x16 << 56,
        };
        for (p, name) in &pools[1..] {
            refuses(*p, w, &format!("garbage {w:#x} to {name}"), true);
        }
    }
    for ((p, _), h) in pools.iter().zip(&held) {
        assert_eq!(read(*p, h).unwrap(), pattern(3, 100), "the owners' objects are intact");
        free(*p, h).unwrap();
    }
}
