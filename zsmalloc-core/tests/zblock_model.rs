//! zblock against an independent model of its placement: per block type, a list of blocks
//! (each a vector of taken slots) and the active list as a plain vector, with zblock's rules
//! written the simple way (first block of the active list, lowest free slot; a new block at the
//! head; a block that stops being full at the tail; an empty block dropped at once), and the
//! lookup as a linear scan for the first slot size strictly greater than the length.
//!
//! Checked after every operation: total pages (= Σ blocks × pages per block), the peak, objects
//! per type, every byte of every object read back, and the exact place of every new object:
//! its address is its model block's base + header + slot × slot size (a model block's base is
//! learnt from its first object, slot 0). On 4K, 16K and 64K pages: a property test over random
//! sequences, and a fill-and-churn workload whose pages and peak the model predicts.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::pattern;
use proptest::prelude::*;
use zsmalloc_core::zblock::ZblockPool;
use zsmalloc_core::{Backend, BackendKind, PoolConfig};

struct ModelType {
    slots: usize,
    pages: u64,
    slot_size: usize,
    /// Blocks ever made: `None` once released. (index, taken slots, base address)
    blocks: Vec<Option<(Vec<bool>, usize)>>,
    active: Vec<usize>,
}

struct Model {
    page: usize,
    header: usize,
    types: Vec<ModelType>,
    pages: u64,
    peak: u64,
}

impl Model {
    fn new(pool: &ZblockPool) -> Model {
        let page = pool.config().page_size as usize;
        let header = if page == 4096 { 48 } else { 72 };
        let types = pool
            .table()
            .types()
            .iter()
            .map(|t| {
                let (slots, pages) = (t.slots as usize, u64::from(t.num_pages));
                let slot_size = (pages as usize * page - header) / slots / 8 * 8;
                assert_eq!(slot_size, t.slot_size as usize, "the slot-size formula");
                ModelType { slots, pages, slot_size, blocks: Vec::new(), active: Vec::new() }
            })
            .collect();
        Model { page, header, types, pages: 0, peak: 0 }
    }

    /// The type of `len`, or None if zblock refuses it.
    fn lookup(&self, len: usize) -> Option<usize> {
        if len == 0 {
            return None;
        }
        self.types.iter().position(|t| t.slot_size > len)
    }

    /// Places an object of `len`: (type, block, slot, expected address if known).
    fn store(&mut self, len: usize) -> Option<(usize, usize, usize, Option<usize>)> {
        let ty = self.lookup(len)?;
        let t = &mut self.types[ty];
        if let Some(&b) = t.active.first() {
            let (taken, base) = t.blocks[b].as_mut().unwrap();
            let s = taken.iter().position(|x| !x).unwrap();
            taken[s] = true;
            if taken.iter().all(|&x| x) {
                t.active.remove(0);
            }
            let addr = *base + self.header + s * t.slot_size;
            return Some((ty, b, s, Some(addr)));
        }
        let mut taken = vec![false; t.slots];
        taken[0] = true;
        t.blocks.push(Some((taken, 0)));
        let b = t.blocks.len() - 1;
        if t.slots > 1 {
            t.active.insert(0, b);
        }
        self.pages += t.pages;
        self.peak = self.peak.max(self.pages);
        Some((ty, b, 0, None))
    }

    /// Learns the base of a new block from its slot 0's address.
    fn learn_base(&mut self, ty: usize, b: usize, addr: usize) {
        let base = addr - self.header;
        assert_eq!(base % self.page, 0, "a block starts on a page");
        self.types[ty].blocks[b].as_mut().unwrap().1 = base;
    }

    fn free(&mut self, ty: usize, b: usize, s: usize) {
        let t = &mut self.types[ty];
        let (taken, _) = t.blocks[b].as_mut().unwrap();
        let was_full = taken.iter().all(|&x| x);
        taken[s] = false;
        if taken.iter().all(|&x| !x) {
            t.blocks[b] = None;
            t.active.retain(|&x| x != b);
            self.pages -= t.pages;
        } else if was_full {
            t.active.push(b);
        }
    }

    fn used(&self, ty: usize) -> u64 {
        let t = &self.types[ty];
        t.blocks
            .iter()
            .flatten()
            .map(|(taken, _)| taken.iter().filter(|&&x| x).count() as u64)
            .sum()
    }
}

struct Obj {
    h: Box<AtomicUsize>,
    data: Vec<u8>,
    place: (usize, usize, usize),
}

/// The object's in-place address (a read section begun and ended), checking its bytes.
fn addr_and_check(p: &ZblockPool, o: &Obj) -> usize {
    let len = o.data.len();
    // SAFETY: boxed word; NULL local copy (zblock reads in place); the section is ended here.
    unsafe {
        let ptr = p.read_begin_raw(&o.h, len, std::ptr::null_mut()).unwrap();
        assert_eq!(std::slice::from_raw_parts(ptr, len), &o.data[..]);
        p.read_end_at_raw(&o.h, Some(len), ptr).unwrap();
        ptr as usize
    }
}

/// Stores `data` in pool and model; checks the place. `None` if both refuse it.
fn store(p: &ZblockPool, m: &mut Model, data: Vec<u8>, via_malloc: bool) -> Option<Obj> {
    let h = Box::new(AtomicUsize::new(0));
    // SAFETY: boxed word.
    let r = unsafe {
        if via_malloc {
            p.malloc_raw(&h, data.len()).and_then(|()| p.write_raw(&h, &data))
        } else {
            p.store_raw(&h, &data)
        }
    };
    let Some((ty, b, s, want)) = m.store(data.len()) else {
        assert!(r.is_err(), "the model refuses {}", data.len());
        assert_eq!(h.load(Ordering::Relaxed), 0);
        return None;
    };
    r.unwrap();
    let o = Obj { h, data, place: (ty, b, s) };
    let addr = addr_and_check(p, &o);
    match want {
        Some(want) => assert_eq!(addr, want, "type {ty} block {b} slot {s}"),
        None => m.learn_base(ty, b, addr),
    }
    Some(o)
}

fn free(p: &ZblockPool, m: &mut Model, o: Obj) {
    // SAFETY: boxed word.
    unsafe { p.free_raw(&o.h) }.unwrap();
    let (ty, b, s) = o.place;
    m.free(ty, b, s);
}

fn check(p: &ZblockPool, m: &Model) {
    assert_eq!(p.total_pages(), m.pages);
    let s = p.stats();
    assert_eq!(s.pages_peak, m.peak);
    let rows = p.class_stats();
    for (ty, r) in rows.iter().enumerate() {
        assert_eq!(r.obj_used, m.used(ty), "type {ty}");
        let blocks = m.types[ty].blocks.iter().flatten().count() as u64;
        assert_eq!(r.pages_used, blocks * m.types[ty].pages);
        assert_eq!(r.obj_allocated, blocks * m.types[ty].slots as u64);
    }
    assert_eq!(rows.iter().map(|r| r.pages_used).sum::<u64>(), m.pages);
}

fn pool(page: u32) -> ZblockPool {
    let cfg = PoolConfig { backend: BackendKind::Zblock, page_size: page, ..PoolConfig::default() };
    ZblockPool::with_name("model", cfg).unwrap()
}

#[derive(Debug, Clone)]
enum Op {
    Store(usize, u64),
    MallocWrite(usize, u64),
    Free(usize),
    Read(usize),
    Sg(usize),
    Move(usize),
}

fn case() -> impl Strategy<Value = (u32, [usize; 3], Vec<Op>)> {
    (prop_oneof![Just(4096u32), Just(16384), Just(65536)], any::<[u16; 3]>()).prop_flat_map(
        |(page, a)| {
            let anchors = a.map(|x| 1 + x as usize % page as usize);
            let len = move |pick: usize, jitter: usize| {
                let l = anchors[pick % 3] + jitter % 64;
                l.min(page as usize + 8)
            };
            let op = prop_oneof![
                5 => (any::<usize>(), any::<usize>(), any::<u64>())
                    .prop_map(move |(p, j, s)| Op::Store(len(p, j), s)),
                1 => (any::<usize>(), any::<usize>(), any::<u64>())
                    .prop_map(move |(p, j, s)| Op::MallocWrite(len(p, j), s)),
                4 => any::<usize>().prop_map(Op::Free),
                1 => any::<usize>().prop_map(Op::Read),
                1 => any::<usize>().prop_map(Op::Sg),
                1 => any::<usize>().prop_map(Op::Move),
            ];
            (Just(page), Just(anchors), proptest::collection::vec(op, 1..400))
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn zblock_matches_model((page, _anchors, ops) in case()) {
        let p = pool(page);
        let mut m = Model::new(&p);
        let mut live: Vec<Obj> = Vec::new();
        for op in ops {
            match op {
                Op::Store(len, seed) | Op::MallocWrite(len, seed) => {
                    let via_malloc = matches!(op, Op::MallocWrite(..));
                    if let Some(o) = store(&p, &mut m, pattern(seed, len), via_malloc) {
                        live.push(o);
                    }
                }
                Op::Free(i) if !live.is_empty() => {
                    let o = live.swap_remove(i % live.len());
                    free(&p, &mut m, o);
                }
                Op::Read(i) if !live.is_empty() => {
                    addr_and_check(&p, &live[i % live.len()]);
                }
                Op::Sg(i) if !live.is_empty() => {
                    let o = &live[i % live.len()];
                    // SAFETY: boxed word; the segment is readable while the section is open.
                    unsafe {
                        let (segs, n) = p.read_sg_begin_raw(&o.h, o.data.len()).unwrap();
                        prop_assert_eq!(n, 1);
                        prop_assert_eq!(std::slice::from_raw_parts(segs[0].0, segs[0].1), &o.data[..]);
                        p.read_end_at_raw(&o.h, None, segs[0].0).unwrap();
                    }
                }
                Op::Move(i) if !live.is_empty() => {
                    let k = i % live.len();
                    let to = Box::new(AtomicUsize::new(0));
                    // SAFETY: boxed words.
                    unsafe { p.handle_move_raw(&live[k].h, &to).unwrap() };
                    live[k].h = to;
                }
                _ => {}
            }
            check(&p, &m);
        }
        for o in live.drain(..) {
            addr_and_check(&p, &o);
            free(&p, &mut m, o);
        }
        check(&p, &m);
        prop_assert_eq!(p.total_pages(), 0);
    }
}

/// Lengths of Dan Magenheimer's 2012 zram distribution (mean 694, sd 474), clipped to 1..=max:
/// a Box-Muller normal from a xorshift stream.
fn lengths(n: usize, max: usize, mut x: u64) -> Vec<usize> {
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let (u, v) = (next().max(1e-12), next());
            let z = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
            ((694.0 + 474.0 * z).round() as i64).clamp(1, max as i64) as usize
        })
        .collect()
}

/// Fill, then churn (free a third at random, store as many again, three rounds), then drain:
/// pages and peak as the model predicts at every step, on 4K, 16K and 64K pages.
#[test]
fn fill_and_churn_pages_and_peaks() {
    for (page, scale) in [(4096u32, 1usize), (16384, 2), (65536, 3)] {
        let p = pool(page);
        let mut m = Model::new(&p);
        let max = p.huge_class_size() - 1;
        let mut live = Vec::new();
        let mut seed = 0;
        for len in lengths(6000, max, 0x5eed + page as u64) {
            let len = (len * scale).min(max);
            seed += 1;
            live.extend(store(&p, &mut m, pattern(seed, len), false));
        }
        check(&p, &m);
        let filled = (p.total_pages(), p.stats().pages_peak);
        let mut x = 0x1234_5678u64 ^ page as u64;
        for round in 0..3 {
            for _ in 0..live.len() / 3 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let o = live.swap_remove(x as usize % live.len());
                free(&p, &mut m, o);
                check(&p, &m);
            }
            for len in lengths(2000, max, 0xc4u64 + round) {
                let len = (len * scale).min(max);
                seed += 1;
                live.extend(store(&p, &mut m, pattern(seed, len), false));
            }
            check(&p, &m);
        }
        let churned = (p.total_pages(), p.stats().pages_peak);
        for o in live.drain(..) {
            free(&p, &mut m, o);
        }
        check(&p, &m);
        assert_eq!(p.total_pages(), 0);
        eprintln!("zblock {page}: filled {filled:?} churned {churned:?} (pages, peak)");
    }
}
