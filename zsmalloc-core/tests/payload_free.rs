//! A pool without payload (docs/DESIGN.md, Placement without payload) is placement-identical to
//! the pool with every byte: the same operations through both give the same pages after every
//! step, every live handle the same zspage and object index, the same class rows and pool
//! counters (reads, spanning reads, bytes copied, compaction's moves), on every page size,
//! chain, chain policy, class delta, merge setting, explicit table, multi-page band, read mode
//! and on zblock. Random sequences (proptest) and long churn both.

use std::sync::atomic::AtomicUsize;

use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use zsmalloc_core::{
    AnyPool, Backend, BackendKind, Backing, ClassTableSpec, Error, Fixed, Heuristic, PolicyRef,
    PoolConfig, PrefetchStage, ReadKind, ReadMode,
};

/// One operation of a sequence; indices pick among the live objects.
#[derive(Debug, Clone, Copy)]
enum Op {
    Store(usize),
    /// `malloc` then a write of the whole object (zram's path).
    MallocWrite(usize),
    Free(usize),
    Read(usize),
    ReadSg(usize),
    Move(usize),
    Compact,
}

/// The configurations the identity is checked on.
fn configs() -> Vec<(String, PoolConfig)> {
    let mut out = Vec::new();
    let mut add = |name: String, cfg: PoolConfig| out.push((name, cfg));
    for page in [4096u32, 16384, 65536] {
        for chain in [1u32, 4, 10, 16] {
            add(
                format!("page {page} chain {chain}"),
                PoolConfig { page_size: page, chain_size: chain, ..Default::default() },
            );
        }
    }
    add(
        "heuristic".into(),
        PoolConfig {
            chain_size: 16,
            chain_policy: PolicyRef::new(Heuristic),
            ..Default::default()
        },
    );
    add(
        "fixed-3".into(),
        PoolConfig { chain_policy: PolicyRef::new(Fixed(3)), ..Default::default() },
    );
    add("delta 64".into(), PoolConfig { class_delta: 64, ..Default::default() });
    add("unmerged".into(), PoolConfig { merge_classes: false, ..Default::default() });
    for multi in [8192u32, 16384, 65536] {
        add(
            format!("band {multi}"),
            PoolConfig { multi_page_size: multi, chain_size: 8, ..Default::default() },
        );
    }
    let table = "page_size 4096\n64 1\n512 2\n1000 4\n2000 3\n3000 3\n3072 1\n4096 1\n";
    add("explicit table".into(), PoolConfig::for_table(ClassTableSpec::parse(table).unwrap()));
    add("map".into(), PoolConfig { read_mode: ReadMode::Map, ..Default::default() });
    add(
        "contiguous".into(),
        PoolConfig { read_mode: ReadMode::Contiguous, chain_size: 10, ..Default::default() },
    );
    add("memfd".into(), PoolConfig { backing: Backing::Memfd, ..Default::default() });
    add("zblock".into(), PoolConfig { backend: BackendKind::Zblock, ..Default::default() });
    add(
        "zblock 64K".into(),
        PoolConfig { backend: BackendKind::Zblock, page_size: 65536, ..Default::default() },
    );
    out
}

/// The two pools of `cfg`: with bytes and without.
struct Twins {
    full: AnyPool,
    bare: AnyPool,
    /// Handle words, one pair per object (boxed: they must not move while they hold objects,
    /// and the vector reallocates and swap-removes).
    #[allow(clippy::vec_box)]
    words: Vec<Box<[AtomicUsize; 2]>>,
    lens: Vec<usize>,
    buf: Vec<u8>,
    max: usize,
}

impl Twins {
    fn new(cfg: &PoolConfig) -> Twins {
        let full = AnyPool::with_name("full", cfg.clone()).unwrap();
        let bare =
            AnyPool::with_name("bare", PoolConfig { payload: false, ..cfg.clone() }).unwrap();
        assert!(full.keeps_bytes() && !bare.keeps_bytes());
        let max = cfg.max_object_size() as usize;
        let max = if cfg.backend == BackendKind::Zblock { full.huge_class_size() - 1 } else { max };
        Twins { full, bare, words: Vec::new(), lens: Vec::new(), buf: vec![0; max + 8], max }
    }

    fn run(&mut self, op: Op, step: usize, what: &str) {
        let n = self.words.len();
        match op {
            Op::Store(len) | Op::MallocWrite(len) => {
                let len = len.clamp(1, self.max);
                let w = Box::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
                let data = vec![(step % 251) as u8; len];
                // SAFETY: each word is empty and stays in its box until freed.
                let (a, b) = unsafe {
                    match op {
                        Op::Store(_) => {
                            (self.full.store_raw(&w[0], &data), self.bare.store_raw(&w[1], &data))
                        }
                        _ => (
                            self.full
                                .malloc_raw(&w[0], len)
                                .and_then(|_| self.full.write_raw(&w[0], &data)),
                            self.bare
                                .malloc_raw(&w[1], len)
                                .and_then(|_| self.bare.write_raw(&w[1], &data)),
                        ),
                    }
                };
                assert_eq!(a, b, "{what}: store {len} at step {step}");
                if a.is_ok() {
                    self.words.push(w);
                    self.lens.push(len);
                }
            }
            Op::Free(i) if n > 0 => {
                let w = self.words.swap_remove(i % n);
                self.lens.swap_remove(i % n);
                // SAFETY: the words hold objects of these pools.
                unsafe {
                    self.full.free_raw(&w[0]).unwrap();
                    self.bare.free_raw(&w[1]).unwrap();
                }
            }
            Op::Read(i) if n > 0 => {
                let (w, len) = (&self.words[i % n], self.lens[i % n]);
                // SAFETY: the words hold objects of `len` bytes; the buffer holds len + 8; the
                // section is ended at once.
                unsafe {
                    self.full.read_begin_raw(&w[0], len, self.buf.as_mut_ptr()).unwrap();
                    self.full.read_end_raw(&w[0], Some(len)).unwrap();
                    let placed =
                        self.bare.read_placement_raw(&w[1], Some(len), ReadKind::Section).unwrap();
                    assert_eq!(placed.len, len);
                    let refused = self.bare.read_begin_raw(&w[1], len, self.buf.as_mut_ptr());
                    assert_eq!(refused.unwrap_err(), Error::NoPayload);
                }
            }
            Op::ReadSg(i) if n > 0 => {
                let (w, len) = (&self.words[i % n], self.lens[i % n]);
                // SAFETY: the words hold objects of `len` bytes; the section is ended at once.
                unsafe {
                    let (_, segments) = self.full.read_sg_begin_raw(&w[0], len).unwrap();
                    self.full.read_end_raw(&w[0], Some(len)).unwrap();
                    let placed =
                        self.bare.read_placement_raw(&w[1], None, ReadKind::ScatterGather).unwrap();
                    assert_eq!((placed.len, placed.copied), (len, 0));
                    let contiguous = self.full.config().read_mode == ReadMode::Contiguous;
                    assert_eq!(segments == 2, placed.spanning && !contiguous, "{what}: segments");
                }
            }
            Op::Move(i) if n > 0 => {
                let w = Box::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
                let old = &self.words[i % n];
                // SAFETY: `old` holds objects; `w` is empty and boxed (stays put).
                unsafe {
                    self.full.handle_move_raw(&old[0], &w[0]).unwrap();
                    self.bare.handle_move_raw(&old[1], &w[1]).unwrap();
                }
                self.words[i % n] = w;
            }
            Op::Compact => {
                assert_eq!(self.full.compact(), self.bare.compact(), "{what}: compaction");
            }
            _ => {}
        }
        assert_eq!(self.full.total_pages(), self.bare.total_pages(), "{what}: pages, step {step}");
    }

    /// Everything placement decides, compared. The prefetch hints run first, over every
    /// handle and over words that name nothing: they change nothing.
    fn assert_same(&self, what: &str) {
        let garbage =
            [AtomicUsize::new(0), AtomicUsize::new(usize::MAX), AtomicUsize::new(1 << 56)];
        for stage in [PrefetchStage::Word, PrefetchStage::Metadata, PrefetchStage::Header] {
            for w in self.words.iter().flat_map(|w| w.iter()).chain(&garbage) {
                self.full.prefetch_raw(w, stage);
                self.bare.prefetch_raw(w, stage);
            }
        }
        assert_eq!(self.full.stats(), self.bare.stats(), "{what}: pool counters");
        assert_eq!(self.full.class_stats(), self.bare.class_stats(), "{what}: class rows");
        for w in &self.words {
            // SAFETY: the words hold objects of these pools.
            let (a, b) = unsafe { (self.full.location_raw(&w[0]), self.bare.location_raw(&w[1])) };
            match (a, b) {
                (Some(a), Some(b)) => assert_eq!(a.unwrap(), b.unwrap(), "{what}: location"),
                (None, None) => {}
                _ => panic!("{what}: one pool locates, the other does not"),
            }
        }
    }
}

impl Drop for Twins {
    fn drop(&mut self) {
        for w in &self.words {
            // SAFETY: the words hold objects of these pools (or are empty after a failed test).
            unsafe {
                let _ = self.full.free_raw(&w[0]);
                let _ = self.bare.free_raw(&w[1]);
            }
        }
    }
}

/// A random length: small, near a page, anywhere up to the largest object.
fn length(rng: &mut SmallRng, max: usize) -> usize {
    match rng.gen_range(0..6) {
        0 => rng.gen_range(1..=256),
        1 => rng.gen_range(2900..=3300).min(max),
        2 => max - rng.gen_range(0..16).min(max - 1),
        _ => rng.gen_range(1..=max),
    }
}

#[test]
fn churn_with_compaction_places_every_object_the_same() {
    for (name, cfg) in configs() {
        let mut t = Twins::new(&cfg);
        let mut rng = SmallRng::seed_from_u64(0x5eed);
        for step in 0..6000 {
            let max = t.max;
            let op = match rng.gen_range(0..20) {
                0..=7 => Op::Store(length(&mut rng, max)),
                8 => Op::MallocWrite(length(&mut rng, max)),
                9..=14 => Op::Free(rng.gen()),
                15..=16 => Op::Read(rng.gen()),
                17 => Op::ReadSg(rng.gen()),
                18 => Op::Move(rng.gen()),
                _ if step % 500 == 0 => Op::Compact,
                _ => Op::Free(rng.gen()),
            };
            t.run(op, step, &name);
            if step % 1000 == 999 {
                t.assert_same(&format!("{name}, step {step}"));
            }
        }
        t.run(Op::Compact, 6000, &name);
        t.assert_same(&format!("{name}, at the end"));
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1usize..=65536).prop_map(Op::Store),
        1 => (1usize..=65536).prop_map(Op::MallocWrite),
        4 => any::<usize>().prop_map(Op::Free),
        2 => any::<usize>().prop_map(Op::Read),
        1 => any::<usize>().prop_map(Op::ReadSg),
        1 => any::<usize>().prop_map(Op::Move),
        1 => Just(Op::Compact),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_sequences_place_the_same(which in 0usize..64, ops in prop::collection::vec(op(), 1..400)) {
        let all = configs();
        let (name, cfg) = &all[which % all.len()];
        let mut t = Twins::new(cfg);
        for (step, &op) in ops.iter().enumerate() {
            let op = match op {
                // Lengths drawn up to 64K, folded to the pool's longest object.
                Op::Store(l) => Op::Store(1 + (l - 1) % t.max),
                Op::MallocWrite(l) => Op::MallocWrite(1 + (l - 1) % t.max),
                other => other,
            };
            t.run(op, step, name);
        }
        t.assert_same(name);
    }
}

#[test]
fn a_placement_only_pool_refuses_reads_of_bytes_and_malloc_has_none() {
    let bare =
        AnyPool::with_name("bare", PoolConfig { payload: false, ..Default::default() }).unwrap();
    let w = AtomicUsize::new(0);
    let mut out = vec![0u8; 5000];
    // SAFETY: `w` stays put until freed below.
    unsafe {
        bare.store_raw(&w, &[1u8; 3000]).unwrap();
        assert_eq!(bare.read_into_raw(&w, &mut out).unwrap_err(), Error::NoPayload);
        assert_eq!(bare.read_sg_begin_raw(&w, 3000).unwrap_err(), Error::NoPayload);
        assert_eq!(bare.object_len_raw(&w).unwrap(), 3000);
        let wrong = bare.read_placement_raw(&w, Some(2999), ReadKind::Section).unwrap_err();
        assert!(wrong.to_string().contains("differs from the stored length 3000"), "{wrong}");
        bare.free_raw(&w).unwrap();
    }
    assert_eq!(Error::NoPayload.errno(), libc::EOPNOTSUPP);
    let malloc = PoolConfig { backend: BackendKind::Malloc, payload: false, ..Default::default() };
    let e = AnyPool::with_name("m", malloc).err().expect("malloc has no placement-only mode");
    assert!(e.to_string().contains("payload"), "{e}");
    let e = zsmalloc_core::Pool::new(PoolConfig { payload: false, ..Default::default() })
        .expect_err("a pool with bytes refuses a placement-only configuration");
    assert!(e.to_string().contains("AnyPool"), "{e}");
}

/// The point of it: a pool without payload holds a million objects in a small fraction of the
/// memory their bytes take (header words, zspage entries and page tables only).
#[test]
fn memory_per_live_object_is_a_few_dozen_bytes() {
    let bare =
        AnyPool::with_name("bare", PoolConfig { payload: false, ..Default::default() }).unwrap();
    let n = 200_000;
    let words: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
    let data = vec![0u8; 4096];
    let mut rng = SmallRng::seed_from_u64(7);
    for w in &words {
        // SAFETY: `words` is not moved or dropped while it holds objects (freed below).
        unsafe { bare.store_raw(w, &data[..rng.gen_range(200..=3500)]) }.unwrap();
    }
    let (meta, handles) = bare.metadata_bytes();
    let per_object = (meta + handles) as f64 / n as f64;
    assert!(per_object <= 40.0, "{per_object:.1} bytes of metadata per live object");
    assert!(bare.total_pages() > 80_000, "the objects hold {} pages", bare.total_pages());
    eprintln!("{per_object:.1} bytes of metadata per live object, {} pages", bare.total_pages());
    for w in &words {
        // SAFETY: as above.
        unsafe { bare.free_raw(w) }.unwrap();
    }
}
