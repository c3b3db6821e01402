//! The faithfulness guard: a reference model of mainline zsmalloc placement (Linux 6.4+), written
//! here from the semantics (docs/DESIGN.md, Placement) independently of the pool's code, driven by
//! random single-threaded operation sequences. After every step each live object's location must be
//! the model's (zspage, object index), and the per-class rows (fullness counts, obj_allocated,
//! obj_used, pages, freeable) must equal the model's.
//!
//! Model (`common/reference_model.rs`): class table walked from the largest index down with
//! merging; a zspage's free objects start as 0, 1, 2, ... and allocation pops the head, free
//! pushes onto the head (LIFO);
//! 12 fullness groups with head insertion (a zspage whose group does not change stays put);
//! allocation from the head of the first non-empty group 10, 9, ..., 0, else a new zspage; an
//! empty zspage is released at once; compaction per class from the largest index down, destination
//! from groups 10..1, source from groups 1..10 (pinned sources skipped), objects moved in
//! increasing index, source put back (or released), destination put back when full.
//!
//! Objects are located with `Handle::location` / `Pool::location_raw` (zspage entry, generation,
//! object index). Zspage slots are an implementation detail, so the model only requires a
//! consistent one-to-one mapping between its live zspages and the pool's live (slot, generation)
//! pairs.
//!
//! Cases: 128 + 64 by default (a few seconds in release); `PROPTEST_CASES=n` for more.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::reference_model::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use zsmalloc_core::{
    Classic, Fixed, Handle, Heuristic, ObjectLocation, PolicyRef, Pool, PoolConfig, SgSection,
};

// ------------------------------------------------------------------------------------ harness

#[derive(Debug, Clone)]
struct Setup {
    page: u32,
    chain: u32,
    delta: u32,
    policy: Policy,
    /// Selectors of the classes most objects go to.
    hot: [u16; 3],
}

impl Setup {
    fn config(&self) -> PoolConfig {
        PoolConfig {
            page_size: self.page,
            chain_size: self.chain,
            class_delta: self.delta,
            chain_policy: match self.policy {
                Policy::Classic => PolicyRef::new(Classic),
                Policy::Heuristic => PolicyRef::new(Heuristic),
                Policy::Fixed(n) => PolicyRef::new(Fixed(n)),
            },
            ..Default::default()
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Store {
        class_sel: u16,
        fill: u16,
        raw: bool,
    },
    /// Several stores into one class (many zspages, several per fullness group).
    StoreMany {
        class_sel: u16,
        fill: u16,
        count: u8,
    },
    Free {
        victim: usize,
    },
    /// Free several objects at once (sparse zspages for compaction).
    FreeMany {
        victim: usize,
        every: u8,
    },
    Compact,
    /// Compact with read sections open on these objects: their zspages are never sources.
    CompactPinned {
        victims: Vec<usize>,
    },
}

enum Owner<'p> {
    Safe(Handle<&'p Pool>),
    Raw(Box<AtomicUsize>),
}

impl Owner<'_> {
    fn word(&self) -> usize {
        match self {
            Owner::Safe(h) => h.word(),
            Owner::Raw(w) => w.load(Ordering::Acquire),
        }
    }

    fn location(&self, pool: &Pool) -> ObjectLocation {
        match self {
            Owner::Safe(h) => h.location(),
            // SAFETY: the harness's own word, holding an object of this pool.
            Owner::Raw(w) => unsafe { pool.location_raw(w) },
        }
        .expect("location of a live object")
    }
}

struct Harness<'p> {
    pool: &'p Pool,
    model: RefModel,
    /// Model object key -> owner (handle) and length.
    live: Vec<(u64, Owner<'p>, usize)>,
    next_key: u64,
    /// Model zspage id <-> pool (slot, generation).
    to_pool: HashMap<u64, (u32, u16)>,
    tag: Option<usize>,
    step: usize,
}

impl<'p> Harness<'p> {
    fn store(&mut self, class_sel: u16, fill: u16, raw: bool, hot: &[u16; 3]) {
        // Pick a class (mostly a hot one), then a length it serves.
        let t = &self.model.table;
        let sel = match class_sel % 16 {
            0..=7 => hot[0],
            8..=12 => hot[1 + class_sel as usize % 2],
            _ => class_sel,
        };
        let info = &t.classes[sel as usize % t.classes.len()];
        let lo = if info.first_index == 0 {
            1
        } else {
            (MIN + (info.first_index - 1) * t.delta + 1).saturating_sub(HDR).max(1)
        };
        let hi = if info.size == t.page { t.page } else { info.size - HDR };
        let len = (lo + u32::from(fill) % (hi - lo + 1)) as usize;
        assert_eq!(t.class_of_len(len), sel as usize % t.classes.len(), "len {len} of {info:?}");
        let data = vec![(self.next_key % 251) as u8; len];
        let owner = if raw {
            let w = Box::new(AtomicUsize::new(0));
            // SAFETY: boxed word (stable address), owned by the harness until freed.
            unsafe { self.pool.store_raw(&w, &data) }.expect("store_raw");
            Owner::Raw(w)
        } else {
            Owner::Safe(self.pool.store(&data).expect("store"))
        };
        self.model.store(self.next_key, len);
        self.live.push((self.next_key, owner, len));
        self.next_key += 1;
    }

    fn free(&mut self, i: usize) {
        let (key, owner, _) = self.live.swap_remove(i);
        match owner {
            Owner::Safe(h) => h.free().expect("free"),
            // SAFETY: the harness's own word holding an object of this pool.
            Owner::Raw(w) => unsafe { self.pool.free_raw(&w) }.expect("free_raw"),
        }
        self.model.free(key);
    }

    fn compact(&mut self, victims: &[usize]) {
        let before = self.pool.stats();
        let pool = self.pool;
        let mut pinned = Vec::new();
        let mut sg: Vec<SgSection<'_>> = Vec::new();
        let mut raw: Vec<(&AtomicUsize, usize)> = Vec::new();
        for &v in victims {
            if self.live.is_empty() {
                break;
            }
            let (key, owner, len) = &self.live[v % self.live.len()];
            pinned.push(self.model.objects[key].0);
            match owner {
                Owner::Safe(h) => sg.push(pool.read_sg(h).expect("read_sg")),
                Owner::Raw(w) => {
                    // SAFETY: the harness's word; the section ends below, before any free.
                    unsafe { pool.read_sg_begin_raw(w, *len) }.expect("read_sg_begin_raw");
                    raw.push((w, *len));
                }
            }
        }
        let freed = pool.compact();
        drop(sg);
        for (w, len) in raw {
            // SAFETY: ends the section begun above on the same word.
            unsafe { pool.read_end_raw(w, Some(len)) }.expect("read_end_raw");
        }
        let moved_before = self.model.moved;
        let model_freed = self.model.compact(&pinned);
        assert_eq!(freed, model_freed, "pages freed by compaction (pinned {pinned:?})");
        let after = pool.stats();
        assert_eq!(
            after.objs_moved - before.objs_moved,
            self.model.moved - moved_before,
            "objs moved"
        );
        assert_eq!(after.pages_compacted - before.pages_compacted, freed);
    }

    /// The pool agrees with the model: placements, per-class rows, totals.
    fn check(&mut self, rows: bool) {
        // Zspages the model has released lose their mapping.
        self.to_pool.retain(|zs, _| self.model.zspages.contains_key(zs));
        let mut seen: HashMap<(u32, u16), u64> = HashMap::new();
        for (zs, &p) in &self.to_pool {
            seen.insert(p, *zs);
        }
        for (key, owner, _) in &self.live {
            let tag = owner.word() >> 61;
            let ObjectLocation { zspage: slot, generation, index: obj } = owner.location(self.pool);
            assert_eq!(*self.tag.get_or_insert(tag), tag, "one pool tag");
            let (zs, idx) = self.model.objects[key];
            assert_eq!(obj, idx, "step {}: object {key} index (model zspage {zs})", self.step);
            let p = (slot, generation);
            match self.to_pool.get(&zs) {
                Some(&q) => assert_eq!(
                    q, p,
                    "step {}: object {key} not in model zspage {zs}'s pool zspage",
                    self.step
                ),
                None => {
                    if let Some(other) = seen.insert(p, zs) {
                        panic!("step {}: pool zspage {p:?} holds objects of model zspages {other} and {zs}", self.step);
                    }
                    self.to_pool.insert(zs, p);
                }
            }
        }
        let s = self.pool.stats();
        assert_eq!(s.pages_allocated, self.model.pages, "step {}: pages", self.step);
        assert_eq!(s.objs_inuse, self.live.len() as u64);
        assert_eq!(s.objs_moved, self.model.moved);
        if rows {
            let got: Vec<_> = self.pool.class_stats().iter().map(pool_row).collect();
            let want: Vec<_> =
                (0..self.model.classes.len()).rev().map(|c| self.model.row(c)).collect();
            assert_eq!(got.len(), want.len(), "class count");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g, w, "step {}: class row (index, first, size, pages, huge, objs, fullness, allocated, used, pages_used, freeable)", self.step);
            }
        }
    }

    fn apply(&mut self, op: &Op, hot: &[u16; 3]) {
        match op {
            Op::Store { class_sel, fill, raw } => self.store(*class_sel, *fill, *raw, hot),
            Op::StoreMany { class_sel, fill, count } => {
                for k in 0..u16::from(*count) {
                    self.store(*class_sel, fill.wrapping_add(k * 13), k % 3 == 0, hot);
                }
            }
            Op::Free { victim } => {
                if !self.live.is_empty() {
                    self.free(victim % self.live.len());
                }
            }
            Op::FreeMany { victim, every } => {
                let every = usize::from(*every).max(2);
                let mut i = victim % every;
                while i < self.live.len() {
                    self.free(i);
                    i += every - 1;
                }
            }
            Op::Compact => self.compact(&[]),
            Op::CompactPinned { victims } => self.compact(victims),
        }
    }
}

impl Drop for Harness<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for l in self.live.drain(..) {
                std::mem::forget(l);
            }
        }
    }
}

fn run(setup: Setup, ops: Vec<Op>) {
    let pool = Pool::new(setup.config()).expect("valid config");
    let table = MTable::new(setup.page, setup.chain, setup.delta, setup.policy);
    assert_eq!(pool.huge_class_size(), table.huge_class_size as usize, "huge_class_size");
    let mut h = Harness {
        pool: &pool,
        model: RefModel::new(table),
        live: Vec::new(),
        next_key: 0,
        to_pool: HashMap::new(),
        tag: None,
        step: 0,
    };
    // Hot classes: 11..=48 objects per zspage, so that zspages fill, several zspages share a
    // fullness group, and an object more or less sometimes leaves the group unchanged.
    let classes = &h.model.table.classes;
    let pick = |lo: u32, hi: u32| -> Vec<u16> {
        (0..classes.len())
            .filter(|&i| (lo..=hi).contains(&classes[i].objs))
            .map(|i| i as u16)
            .collect()
    };
    let mut few = pick(11, 48);
    if few.is_empty() {
        few = pick(2, u32::MAX);
    }
    let hot =
        if few.is_empty() { setup.hot } else { setup.hot.map(|s| few[s as usize % few.len()]) };
    h.check(true);
    for (step, op) in ops.iter().enumerate() {
        h.step = step;
        h.apply(op, &hot);
        h.check(matches!(op, Op::Compact | Op::CompactPinned { .. }) || step % 16 == 0);
    }
    h.compact(&[]);
    h.check(true);
    while !h.live.is_empty() {
        h.free(h.live.len() / 2);
        h.check(h.live.len().is_multiple_of(32));
    }
    assert_eq!(pool.total_pages(), 0);
    h.check(true);
}

fn setup() -> impl Strategy<Value = Setup> {
    (
        prop::sample::select(vec![4096u32, 4096, 8192, 16384, 65536]),
        prop::sample::select(vec![1u32, 2, 4, 8, 8, 10, 16]),
        prop::sample::select(vec![0u32, 0, 0, 16, 64, 256]),
        prop_oneof![
            4 => Just(Policy::Classic),
            2 => Just(Policy::Heuristic),
            1 => (1u32..=16).prop_map(Policy::Fixed),
        ],
        any::<[u16; 3]>(),
    )
        .prop_map(|(page, chain, delta, policy, hot)| Setup {
            page,
            chain,
            delta,
            policy,
            hot,
        })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        50 => (any::<u16>(), any::<u16>(), any::<bool>())
            .prop_map(|(class_sel, fill, raw)| Op::Store { class_sel, fill, raw }),
        4 => (any::<u16>(), any::<u16>(), 8u8..120)
            .prop_map(|(class_sel, fill, count)| Op::StoreMany { class_sel, fill, count }),
        40 => any::<usize>().prop_map(|victim| Op::Free { victim }),
        3 => (any::<usize>(), 2u8..6).prop_map(|(victim, every)| Op::FreeMany { victim, every }),
        3 => Just(Op::Compact),
        2 => prop::collection::vec(any::<usize>(), 1..4)
            .prop_map(|victims| Op::CompactPinned { victims }),
    ]
}

fn runner(default_cases: u32) -> TestRunner {
    let cases =
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default_cases);
    TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() })
}

#[test]
fn class_tables_match_the_reference() {
    runner(256)
        .run(&setup(), |s| {
            let pool = Pool::new(s.config()).unwrap();
            let m = MTable::new(s.page, s.chain, s.delta, s.policy);
            let t = pool.class_table();
            assert_eq!(t.index_count() as usize, m.by_index.len());
            assert_eq!(t.huge_class_size(), m.huge_class_size);
            let got: Vec<_> = t
                .classes()
                .iter()
                .rev()
                .map(|c| {
                    (c.index, c.first_index, c.size, c.pages_per_zspage, c.objs_per_zspage, c.huge)
                })
                .collect();
            let want: Vec<_> = m
                .classes
                .iter()
                .map(|c| (c.index, c.first_index, c.size, c.pages, c.objs, c.huge))
                .collect();
            assert_eq!(got, want);
            // lookup_class_index: the formula on the size as given, reporting the target index.
            for size in (0..=s.page as usize + 64).step_by(7).chain([1, 32, 33, s.page as usize]) {
                let idx = if size <= MIN as usize {
                    0
                } else {
                    (size - MIN as usize).div_ceil(m.delta as usize)
                };
                let want = m.classes[m.by_index[idx.min(m.by_index.len() - 1)]].index;
                assert_eq!(pool.lookup_class_index(size), want, "size {size}");
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn placement_matches_the_reference_model() {
    runner(128)
        .run(&(setup(), prop::collection::vec(op(), 1..400)), |(s, ops)| {
            run(s, ops);
            Ok(())
        })
        .unwrap();
}

/// Mainline's shape (4K, chain 8, classic) with long sequences: deep fullness lists.
#[test]
fn placement_long_sequences_mainline() {
    let s = Just(Setup { page: 4096, chain: 8, delta: 0, policy: Policy::Classic, hot: [0, 1, 2] });
    runner(64)
        .run(&(s, prop::collection::vec(op(), 300..1200)), |(s, ops)| {
            run(s, ops);
            Ok(())
        })
        .unwrap();
}

/// Known facts of mainline placement, stated directly.
#[test]
fn lifo_reuse_head_insertion_and_compaction_order() {
    let pool = Pool::new(PoolConfig::default()).unwrap();
    let t = pool.class_table();
    // Class 3264 (4K, chain 8, classic): 4 pages, 5 objects.
    let info = t.classes()[t.position(3264)].clone();
    assert_eq!((info.size, info.pages_per_zspage, info.objs_per_zspage), (3264, 4, 5));
    let len = 3256; // + 8 = 3264
    let obj = |h: &Handle<&Pool>| h.location().unwrap().index;
    let zs = |h: &Handle<&Pool>| {
        let l = h.location().unwrap();
        (l.zspage, l.generation)
    };
    let mut a: Vec<_> = (0..5).map(|_| pool.store(&vec![1; len]).unwrap()).collect();
    assert_eq!(a.iter().map(obj).collect::<Vec<_>>(), [0, 1, 2, 3, 4], "fresh objects in order");
    let b: Vec<_> = (0..5).map(|_| pool.store(&vec![2; len]).unwrap()).collect();
    assert!(b.iter().all(|h| zs(h) != zs(&a[0])), "a full zspage takes nothing");
    // Free 3 then 1 of `a`: the next two stores take 1 then 3 (LIFO).
    let a3 = a.remove(3);
    let a1 = a.remove(1);
    drop(a3);
    drop(a1);
    // `a`'s zspage (3/5 = group 7) is fuller than nothing else non-full: it serves the store.
    let c1 = pool.store(&vec![3; len]).unwrap();
    let c3 = pool.store(&vec![3; len]).unwrap();
    assert_eq!((obj(&c1), obj(&c3)), (1, 3));
    assert_eq!(zs(&c1), zs(&a[0]));
    // Sparse zspages: free all but object 0 of `b`, and all but objects 0 (a[0]) and 1 (c1) of
    // `a`'s zspage: its freelist becomes 4, 2, 3 (the last freed first).
    let mut b = b;
    drop(b.split_off(1));
    drop(c3);
    drop(a.split_off(1)); // frees objects 2 then 4
                          // `a`'s zspage: 2/5 (group 5), `b`'s: 1/5 (group 3). Compaction takes the
                          // fuller as the destination and the sparser as the source; b's object
                          // moves to the freelist head (4).
    let moved = pool.stats().objs_moved;
    assert_eq!(pool.compact(), 4);
    assert_eq!(pool.stats().objs_moved, moved + 1);
    assert_eq!(pool.total_pages(), 4);
    assert_eq!((zs(&b[0]), obj(&b[0])), (zs(&a[0]), 4));
    assert_eq!(pool.read_to_vec(&b[0]).unwrap(), vec![2; len]);
    // The next store takes the head again: object 2.
    let d = pool.store(&vec![4; len]).unwrap();
    assert_eq!((zs(&d), obj(&d)), (zs(&a[0]), 2));
    drop((a, b, c1, d));
    assert_eq!(pool.total_pages(), 0);
}
