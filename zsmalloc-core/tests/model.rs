//! Property tests against a simple model: random sequences of store, malloc + write, rewrite,
//! free, reads (read section, `read_into`, `read_to_vec`, scatter-gather), handle moves and
//! compaction, through the safe layer and the raw layer, over varied page sizes, chains, class
//! deltas and chain policies, in every read mode (`copy`, `map`, `contiguous`) and backing.
//!
//! The model is a list of live objects and their bytes plus the counters the pool must report.
//! Invariants checked: every live object reads back its bytes (every read path); `objs_inuse`,
//! `bytes_stored`, `reads`, `reads_spanning`, `read_copy_bytes` and `writes_spanning` agree with
//! the model; `pages_allocated == total_pages() == sum of class pages_used`; compaction never loses
//! or corrupts an object and leaves nothing freeable; pages return to 0 when everything is freed;
//! the per-class read counters add up to the pool's. Every mode places objects, counts pages and
//! spanning reads exactly as `copy` does on the same sequence (`model_modes_place_identically`);
//! only `copy` copies (`read_copy_bytes` is 0 in the others, which accept no local copy).
//!
//! Cases: 256 + 8 by default (the file runs in a few seconds in release); `PROPTEST_CASES=n` for more.

mod common;

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::model_ops::*;
use common::pattern;
use proptest::prelude::*;
use zsmalloc_core::{Backing, Handle, Pool, PoolStats, ReadMode, HANDLE_SIZE};

// ------------------------------------------------------------------------------------ model

enum Owner<'p> {
    Safe(Handle<&'p Pool>),
    /// A caller-owned handle word at a stable (boxed) address.
    Raw(Box<AtomicUsize>),
}

struct Obj<'p> {
    owner: Owner<'p>,
    data: Vec<u8>,
}

impl Obj<'_> {
    fn word(&self) -> usize {
        match &self.owner {
            Owner::Safe(h) => h.word(),
            Owner::Raw(w) => w.load(Ordering::Acquire),
        }
    }
}

/// Where the pool says an object is: its object index (`location`) and its class's geometry.
#[derive(Debug, Clone, Copy)]
struct Place {
    /// Kernel rule: a non-huge object spans when `offset + HDR + len > page`.
    spanning: bool,
    /// The payload itself crosses a page boundary (two scatter-gather segments).
    split: bool,
}

struct Model<'p> {
    pool: &'p Pool,
    setup: Setup,
    objs: Vec<Obj<'p>>,
    next_seed: u64,
    /// Expected counters.
    reads: u64,
    reads_spanning: u64,
    read_copy_bytes: u64,
    writes_spanning: u64,
    /// Scatter-gather reads that returned two segments (coverage only).
    split_sg: u64,
    /// `contiguous` only: the scatter-gather sections nested in a read section to check that it
    /// is in place, and how many were spanning (counted by the pool, not in the trace).
    nested_reads: u64,
    nested_spanning: u64,
    last: PoolStats,
    /// After each operation: (total pages, objects allocated, spanning reads, objects moved),
    /// to compare the modes.
    trace: Vec<[u64; 4]>,
}

impl<'p> Model<'p> {
    fn place(&self, o: &Obj<'_>, len: usize) -> Place {
        let t = self.pool.class_table();
        let info = &t.classes()[t.position(len + HANDLE_SIZE)];
        let obj = match &o.owner {
            Owner::Safe(h) => h.location(),
            // SAFETY: the model's own word, holding an object of this pool.
            Owner::Raw(w) => unsafe { self.pool.location_raw(w) },
        }
        .expect("location of a live object")
        .index as usize;
        assert!(obj < info.objs_per_zspage as usize, "object index {obj} beyond {info:?}");
        if info.huge {
            return Place { spanning: false, split: false };
        }
        let page = self.setup.page as usize;
        let start = obj * info.size as usize;
        let offset = start % page;
        let data = (start + HANDLE_SIZE) % page;
        assert!(len + HANDLE_SIZE <= info.size as usize, "object of {len} in {info:?}");
        Place { spanning: offset + HANDLE_SIZE + len > page, split: data + len > page }
    }

    fn fresh_bytes(&mut self, len: usize) -> Vec<u8> {
        self.next_seed += 1;
        pattern(self.next_seed, len)
    }

    fn pick(&self, victim: usize) -> Option<usize> {
        (!self.objs.is_empty()).then(|| victim % self.objs.len())
    }

    fn store(&mut self, len: usize, raw: bool) {
        let data = self.fresh_bytes(len);
        let owner = if raw {
            let w = Box::new(AtomicUsize::new(0));
            // SAFETY: the word is boxed (stable address) and owned by the model until freed.
            unsafe { self.pool.store_raw(&w, &data) }.expect("store_raw");
            Owner::Raw(w)
        } else {
            Owner::Safe(self.pool.store(&data).expect("store"))
        };
        let obj = Obj { owner, data };
        if self.place(&obj, len).spanning {
            self.writes_spanning += 1;
        }
        self.objs.push(obj);
    }

    fn malloc_write(&mut self, len: usize, raw: bool) {
        let data = self.fresh_bytes(len);
        let owner = if raw {
            let w = Box::new(AtomicUsize::new(0));
            // SAFETY: boxed word owned by the model; no read section of it is open.
            unsafe {
                self.pool.malloc_raw(&w, len).expect("malloc_raw");
                self.pool.write_raw(&w, &data).expect("write_raw");
            }
            Owner::Raw(w)
        } else {
            let mut h = self.pool.malloc(len).expect("malloc");
            assert_eq!(h.len(), len);
            self.pool.write(&mut h, &data).expect("write");
            Owner::Safe(h)
        };
        let obj = Obj { owner, data };
        if self.place(&obj, len).spanning {
            self.writes_spanning += 1;
        }
        self.objs.push(obj);
    }

    fn rewrite(&mut self, i: usize) {
        let len = self.objs[i].data.len();
        let data = self.fresh_bytes(len);
        let pool = self.pool;
        match &mut self.objs[i].owner {
            Owner::Safe(h) => pool.write(h, &data).expect("write"),
            // SAFETY: the model's own boxed word; no read section of it is open.
            Owner::Raw(w) => unsafe { pool.write_raw(w, &data) }.expect("write_raw"),
        }
        if self.place(&self.objs[i], len).spanning {
            self.writes_spanning += 1;
        }
        self.objs[i].data = data;
    }

    fn free(&mut self, i: usize) {
        let obj = self.objs.swap_remove(i);
        match obj.owner {
            Owner::Safe(h) => {
                if i.is_multiple_of(2) {
                    h.free().expect("free");
                } else {
                    drop(h); // dropping frees too
                }
            }
            Owner::Raw(w) => {
                // SAFETY: the model's own word, holding an object of this pool.
                unsafe { self.pool.free_raw(&w) }.expect("free_raw");
                assert_eq!(w.load(Ordering::Relaxed), 0, "free empties the word");
            }
        }
    }

    fn read(&mut self, i: usize, how: ReadHow) {
        let pool = self.pool;
        let obj = &self.objs[i];
        let len = obj.data.len();
        let place = self.place(obj, len);
        let copies = self.setup.copies();
        // The modes that never copy need no local copy.
        let mut local = vec![0u8; if copies { len + HANDLE_SIZE } else { 0 }];
        let segments = |split: bool| {
            if split && self.setup.mode != ReadMode::Contiguous {
                2
            } else {
                1
            }
        };
        let (copied, sg) = match (&obj.owner, how) {
            (Owner::Safe(h), ReadHow::Section) => {
                let sec = pool.read(h, &mut local).expect("read");
                assert_eq!(&sec[..], &obj.data[..], "read section");
                if self.setup.mode == ReadMode::Contiguous {
                    // In place, spanning or not: where a scatter-gather section finds it.
                    let sg = pool.read_sg(h).expect("read_sg");
                    assert_eq!(sg.segments().len(), 1, "one segment in contiguous mode");
                    assert_eq!(sg.segments()[0].as_ptr(), sec.as_ptr(), "read in place");
                    self.nested_reads += 1;
                    self.nested_spanning += u64::from(place.spanning);
                }
                (len, false)
            }
            (Owner::Safe(h), ReadHow::Into) => {
                let mut out = vec![0u8; len + 3];
                assert_eq!(pool.read_into(h, &mut out), Ok(len));
                assert_eq!(&out[..len], &obj.data[..], "read_into");
                (len, false)
            }
            (Owner::Safe(h), ReadHow::ToVec) => {
                assert_eq!(pool.read_to_vec(h).expect("read_to_vec"), obj.data, "read_to_vec");
                (len, false)
            }
            (Owner::Safe(h), ReadHow::Sg) => {
                let sec = pool.read_sg(h).expect("read_sg");
                let segs = sec.segments();
                assert_eq!(segs.len(), segments(place.split), "segment count");
                assert_eq!(sec.spanning(), place.spanning);
                self.split_sg += u64::from(place.split);
                assert_eq!(segs.concat(), obj.data, "read_sg");
                (0, true)
            }
            (Owner::Raw(w), ReadHow::Sg) => {
                // SAFETY: the model's word; the section ends before anything else happens.
                unsafe {
                    let (segs, n) = pool.read_sg_begin_raw(w, len).expect("read_sg_begin_raw");
                    assert_eq!(n, segments(place.split), "segment count");
                    self.split_sg += u64::from(place.split);
                    let mut joined = Vec::with_capacity(len);
                    for &(p, l) in &segs[..n] {
                        joined.extend_from_slice(std::slice::from_raw_parts(p, l));
                    }
                    assert_eq!(joined, obj.data, "read_sg_begin_raw");
                    pool.read_end_raw(w, Some(len)).expect("read_end_raw");
                }
                (0, true)
            }
            (Owner::Raw(w), _) => {
                // SAFETY: `local` holds len + 8 bytes in copy mode (the others never copy and
                // get NULL); the section ends before it is reused.
                unsafe {
                    let buf = if copies { local.as_mut_ptr() } else { std::ptr::null_mut() };
                    let p = pool.read_begin_raw(w, len, buf).expect("read_begin");
                    let in_copy = copies && p == local.as_ptr().add(HANDLE_SIZE);
                    assert_eq!(in_copy, copies && place.spanning, "copied exactly when spanning");
                    assert_eq!(std::slice::from_raw_parts(p, len), &obj.data[..], "raw read");
                    if self.setup.mode == ReadMode::Contiguous {
                        // In place, spanning or not (no copy, no window): the address a
                        // scatter-gather section nested in this one gets, in the arena.
                        let (segs, n) = pool.read_sg_begin_raw(w, len).expect("nested sg");
                        assert_eq!((n, segs[0].0), (1, p), "contiguous: one segment, in place");
                        pool.read_end_raw(w, Some(len)).expect("nested sg end");
                        self.nested_reads += 1;
                        self.nested_spanning += u64::from(place.spanning);
                    }
                    if i.is_multiple_of(2) {
                        pool.read_end_raw(w, Some(len)).expect("read_end_raw");
                    } else {
                        pool.read_end_at_raw(w, Some(len), p).expect("read_end_at_raw");
                    }
                }
                (len, false)
            }
        };
        assert_eq!(pool.map_slots_in_use(), 0, "every map slot released");
        self.reads += 1;
        if place.spanning {
            self.reads_spanning += 1;
            if !sg && copies {
                self.read_copy_bytes += copied as u64;
            }
        }
    }

    fn move_raw(&mut self, i: usize) {
        let pool = self.pool;
        let Owner::Raw(from) = &self.objs[i].owner else { return };
        let to = Box::new(AtomicUsize::new(0));
        let word = from.load(Ordering::Relaxed);
        // SAFETY: both words are boxed; `to` replaces `from` in the model right away.
        unsafe { pool.handle_move_raw(from, &to) }.expect("handle_move_raw");
        assert_eq!((from.load(Ordering::Relaxed), to.load(Ordering::Relaxed)), (0, word));
        self.objs[i].owner = Owner::Raw(to);
    }

    fn compact(&mut self) {
        let before = self.pool.stats();
        let freed = self.pool.compact();
        let after = self.pool.stats();
        assert_eq!(after.pages_compacted, before.pages_compacted + freed);
        assert_eq!(after.pages_allocated + freed, before.pages_allocated);
        for c in self.pool.class_stats() {
            assert_eq!(c.freeable, 0, "class {} freeable after compact: {c:?}", c.size);
        }
        self.verify_all();
    }

    fn compact_while_reading(&mut self, i: usize) {
        let pool = self.pool;
        let len = self.objs[i].data.len();
        let copies = self.setup.copies();
        let mut local = vec![0u8; if copies { len + HANDLE_SIZE } else { 0 }];
        let word = self.objs[i].word();
        let spanning = self.place(&self.objs[i], len).spanning;
        match &self.objs[i].owner {
            Owner::Safe(h) => {
                let sec = pool.read(h, &mut local).expect("read");
                pool.compact();
                assert_eq!(h.word(), word, "an object being read is not moved");
                assert_eq!(&sec[..], &self.objs[i].data[..]);
            }
            // SAFETY: the model's boxed word; the section ends before the word is touched.
            Owner::Raw(w) => unsafe {
                let buf = if copies { local.as_mut_ptr() } else { std::ptr::null_mut() };
                let p = pool.read_begin_raw(w, len, buf).expect("read_begin");
                pool.compact();
                assert_eq!(w.load(Ordering::Relaxed), word, "an object being read is not moved");
                assert_eq!(std::slice::from_raw_parts(p, len), &self.objs[i].data[..]);
                pool.read_end_raw(w, Some(len)).expect("read_end");
            },
        }
        self.reads += 1;
        if spanning {
            self.reads_spanning += 1;
            if copies {
                self.read_copy_bytes += len as u64;
            }
        }
        self.check_stats(false);
        self.compact();
    }

    /// Counters against the model (`classes`: also the per-class rows, which cost more).
    fn check_stats(&mut self, classes: bool) {
        let s = self.pool.stats();
        assert_eq!(s.objs_inuse, self.objs.len() as u64, "objs_inuse");
        let bytes: u64 = self.objs.iter().map(|o| o.data.len() as u64).sum();
        assert_eq!(s.bytes_stored, bytes, "bytes_stored");
        assert_eq!(s.reads, self.reads + self.nested_reads, "reads");
        let spanning = self.reads_spanning + self.nested_spanning;
        assert_eq!(s.reads_spanning, spanning, "reads_spanning");
        assert_eq!(s.read_copy_bytes, self.read_copy_bytes, "read_copy_bytes");
        assert_eq!(s.writes_spanning, self.writes_spanning, "writes_spanning");
        assert_eq!(s.pages_allocated, self.pool.total_pages());
        assert!(s.objs_allocated >= s.objs_inuse);
        assert!(s.pages_peak >= s.pages_allocated && s.pages_peak >= self.last.pages_peak);
        assert!(
            s.objs_moved >= self.last.objs_moved && s.pages_compacted >= self.last.pages_compacted
        );
        if self.objs.is_empty() {
            assert_eq!((s.pages_allocated, s.objs_allocated), (0, 0), "empty pool holds pages");
        }
        if classes {
            let rows = self.pool.class_stats();
            let sum = |f: fn(&zsmalloc_core::ClassStats) -> u64| rows.iter().map(f).sum::<u64>();
            assert_eq!(sum(|c| c.pages_used), s.pages_allocated, "pages = sum of class pages");
            assert_eq!(sum(|c| c.obj_allocated), s.objs_allocated);
            assert_eq!(sum(|c| c.obj_used), s.objs_inuse);
            assert_eq!(sum(|c| c.bytes_stored), s.bytes_stored);
            assert_eq!(sum(|c| c.reads), s.reads, "class reads add up");
            assert_eq!(sum(|c| c.reads_spanning), s.reads_spanning, "class spanning reads");
            assert_eq!(sum(|c| c.read_copy_bytes), s.read_copy_bytes, "class bytes copied");
            for c in &rows {
                let zspages: u64 = c.fullness.iter().sum();
                assert_eq!(c.fullness[0], 0, "an empty zspage is released at once: {c:?}");
                assert_eq!(zspages * u64::from(c.pages_per_zspage), c.pages_used, "{c:?}");
                assert_eq!(zspages * u64::from(c.objs_per_zspage), c.obj_allocated, "{c:?}");
                assert!(c.obj_used <= c.obj_allocated);
                assert!(
                    c.obj_used >= c.fullness[11] * u64::from(c.objs_per_zspage),
                    "full zspages hold objects: {c:?}"
                );
            }
            // Every object is in the class its length maps to.
            for c in &rows {
                let t = self.pool.class_table();
                let n = self
                    .objs
                    .iter()
                    .filter(|o| t.lookup_class_index(o.data.len() + HANDLE_SIZE) == c.index)
                    .count() as u64;
                assert_eq!(c.obj_used, n, "objects of class {}", c.size);
            }
        }
        self.last = s;
    }

    /// Every object reads back through every read path (counting those reads in the model).
    fn verify_all(&mut self) {
        for i in 0..self.objs.len() {
            let how = [ReadHow::Section, ReadHow::Into, ReadHow::ToVec, ReadHow::Sg][i % 4];
            self.read(i, how);
            let len = self.objs[i].data.len();
            let got = match &self.objs[i].owner {
                Owner::Safe(h) => h.len(),
                // SAFETY: the model's own word.
                Owner::Raw(w) => unsafe { self.pool.object_len_raw(w) }.expect("len"),
            };
            assert_eq!(got, len, "object length");
        }
        self.check_stats(true);
    }

    fn apply(&mut self, op: &Op) {
        let s = self.setup.clone();
        match *op {
            Op::Store { len, raw } => self.store(len.get(&s), raw),
            Op::MallocWrite { len, raw } => self.malloc_write(len.get(&s), raw),
            Op::Rewrite { victim } => {
                if let Some(i) = self.pick(victim) {
                    self.rewrite(i)
                }
            }
            Op::Free { victim } => {
                if let Some(i) = self.pick(victim) {
                    self.free(i)
                }
            }
            Op::Read { victim, how } => {
                if let Some(i) = self.pick(victim) {
                    self.read(i, how)
                }
            }
            Op::Move { victim } => {
                if let Some(i) = self.pick(victim) {
                    self.move_raw(i)
                }
            }
            Op::Compact => self.compact(),
            Op::CompactWhileReading { victim } => {
                if let Some(i) = self.pick(victim) {
                    self.compact_while_reading(i)
                }
            }
        }
    }
}

impl Drop for Model<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // The pool may be corrupt: never let compaction or free touch these words again.
            for o in self.objs.drain(..) {
                std::mem::forget(o);
            }
        }
    }
}

/// Runs one case; returns what it exercised (objects moved, pages compacted, spanning reads,
/// scatter-gather reads in two segments).
fn run(setup: Setup, ops: Vec<Op>) -> [u64; 4] {
    run_traced(setup, ops).0
}

/// `run`, also returning the trace (see `Model::trace`) and every object's location before the
/// final frees.
fn run_traced(setup: Setup, ops: Vec<Op>) -> ([u64; 4], Vec<[u64; 4]>, Vec<String>) {
    let pool = Pool::new(setup.config()).expect("generated configs are valid");
    let mut m = Model {
        pool: &pool,
        setup,
        objs: Vec::new(),
        next_seed: 0,
        reads: 0,
        reads_spanning: 0,
        read_copy_bytes: 0,
        writes_spanning: 0,
        split_sg: 0,
        nested_reads: 0,
        nested_spanning: 0,
        last: PoolStats::default(),
        trace: Vec::new(),
    };
    for (step, op) in ops.iter().enumerate() {
        m.apply(op);
        m.check_stats(step % 32 == 31);
        let s = pool.stats();
        let spanning = s.reads_spanning - m.nested_spanning;
        m.trace.push([s.pages_allocated, s.objs_allocated, spanning, s.objs_moved]);
    }
    m.verify_all();
    m.compact();
    let locations: Vec<String> = m
        .objs
        .iter()
        .map(|o| {
            let loc = match &o.owner {
                Owner::Safe(h) => h.location(),
                // SAFETY: the model's own word, holding an object of this pool.
                Owner::Raw(w) => unsafe { pool.location_raw(w) },
            };
            format!("{loc:?}")
        })
        .collect();
    // Free everything (in a scrambled order); pages return to 0.
    let mut k = 7usize;
    while !m.objs.is_empty() {
        k = k.wrapping_mul(31).wrapping_add(17);
        let i = k % m.objs.len();
        m.free(i);
        if m.objs.len().is_multiple_of(64) {
            m.check_stats(false);
        }
    }
    m.check_stats(true);
    let s = pool.stats();
    let exercised = [s.objs_moved, s.pages_compacted, m.reads_spanning, m.split_sg];
    assert_eq!((s.pages_allocated, s.objs_allocated, s.objs_inuse, s.bytes_stored), (0, 0, 0, 0));
    assert_eq!(pool.total_pages(), 0);
    assert_eq!(pool.compact(), 0);
    if !setup_copies(&pool) {
        assert_eq!(s.read_copy_bytes, 0, "only copy mode copies");
    }
    (exercised, std::mem::take(&mut m.trace), locations)
}

fn setup_copies(pool: &Pool) -> bool {
    pool.config().read_mode == ReadMode::Copy
}

/// Runs cases and asserts that, summed over them, objects were moved, pages compacted, spanning
/// objects read and scatter-gather reads split (so the properties were not checked vacuously).
fn run_cases<S: Strategy<Value = (Setup, Vec<Op>)>>(default_cases: u32, strategy: S) {
    let total = Cell::new([0u64; 4]);
    runner(default_cases)
        .run(&strategy, |(s, ops)| {
            let got = run(s, ops);
            let mut t = total.get();
            for (t, g) in t.iter_mut().zip(got) {
                *t += g;
            }
            total.set(t);
            Ok(())
        })
        .unwrap();
    let t = total.get();
    assert!(t.iter().all(|&n| n > 0), "moved, compacted, spanning reads, split sg: {t:?}");
}

#[test]
fn model_random_sequences() {
    run_cases(256, (setup(), prop::collection::vec(op(), 1..300)));
}

/// Long runs on one mainline-shaped pool (4K pages, chain 8, classic): many zspages per class, so
/// fullness groups, freelist reuse and compaction see deep lists.
#[test]
fn model_long_sequences_mainline_shape() {
    let setup = Just(Setup {
        page: 4096,
        chain: 8,
        delta: 0,
        policy: Policy::Classic,
        anchors: [100, 700, 3000],
        mode: ReadMode::Copy,
        backing: Backing::Anonymous,
    });
    run_cases(8, (setup, prop::collection::vec(op(), 500..1500)));
}

/// The same sequence in every read mode and backing: identical placement (every object's
/// location), page counts, objects allocated, spanning reads and objects moved after every
/// operation.
#[test]
fn model_modes_place_identically() {
    runner(48)
        .run(&(setup(), prop::collection::vec(op(), 1..300)), |(s, ops)| {
            let with = |mode, backing| Setup { mode, backing, ..s.clone() };
            let (_, trace, locations) =
                run_traced(with(ReadMode::Copy, Backing::Anonymous), ops.clone());
            for (mode, backing) in [
                (ReadMode::Copy, Backing::Memfd),
                (ReadMode::Map, Backing::Memfd),
                (ReadMode::Contiguous, Backing::Anonymous),
                (ReadMode::Contiguous, Backing::Memfd),
            ] {
                let (_, t, l) = run_traced(with(mode, backing), ops.clone());
                prop_assert_eq!(&t, &trace, "{:?} on {:?}: pages, spanning reads", mode, backing);
                prop_assert_eq!(&l, &locations, "{:?} on {:?}: placement", mode, backing);
            }
            Ok(())
        })
        .unwrap();
}
