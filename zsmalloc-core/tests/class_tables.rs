//! Explicit class tables: a computed table exported to the file format and loaded back places
//! every object exactly where the computed table does, step by step, on the RFC's acceptance
//! run and on churn with compaction; and a hand-made table behaves as its rules say.

mod common;

use zsmalloc_core::{
    ClassStats, ClassTableSpec, Handle, Heuristic, PolicyRef, Pool, PoolConfig, HANDLE_SIZE,
};

/// The pool `cfg` describes, and a pool given `cfg`'s table through the file format.
fn computed_and_loaded(cfg: PoolConfig) -> (Pool, Pool) {
    let text = cfg.export_class_table().unwrap();
    let loaded = PoolConfig {
        page_size: cfg.page_size,
        class_table: Some(ClassTableSpec::parse(&text).unwrap()),
        ..Default::default()
    };
    (Pool::new(cfg).unwrap(), Pool::new(loaded).unwrap())
}

/// A class row without its indices (an explicit table numbers its classes by position, a
/// computed one by the largest size index each serves) and merge facts (nothing merges in an
/// explicit table).
fn shape(c: &ClassStats) -> ClassStats {
    ClassStats { index: 0, first_index: 0, last_index: 0, worst_merge_waste: 0, ..c.clone() }
}

fn assert_same_state(a: &Pool, b: &Pool, step: &str) {
    assert_eq!(a.stats(), b.stats(), "pool stats after {step}");
    let rows = |p: &Pool| p.class_stats().iter().map(shape).collect::<Vec<_>>();
    assert_eq!(rows(a), rows(b), "class stats after {step}");
}

fn assert_same_place(a: &Handle<&Pool>, b: &Handle<&Pool>, step: &str) {
    assert_eq!(a.location().unwrap(), b.location().unwrap(), "object placed by {step}");
}

/// The `zsmalloc_test` pattern of the RFC thread: 32..=4080 step 16, 1337 objects each, chain
/// 10; every object is placed in the same zspage at the same index in both pools, and the
/// page counts agree after every store; then every object is read back.
fn acceptance_run(policy: PolicyRef) {
    let cfg = PoolConfig { chain_size: 10, chain_policy: policy, ..Default::default() };
    let (computed, loaded) = computed_and_loaded(cfg);
    assert_eq!(computed.huge_class_size(), loaded.huge_class_size());
    let mut handles = Vec::new();
    for len in (32..=4080).step_by(16) {
        for k in 0..1337 {
            let data = common::pattern((len * 1337 + k) as u64, len);
            let (a, b) = (computed.store(&data).unwrap(), loaded.store(&data).unwrap());
            assert_same_place(&a, &b, &format!("store of {len} bytes #{k}"));
            assert_eq!(computed.total_pages(), loaded.total_pages(), "{len} bytes #{k}");
            handles.push((a, b));
        }
        assert_same_state(&computed, &loaded, &format!("the {len}-byte objects"));
    }
    for (a, b) in &handles {
        assert_eq!(computed.read_to_vec(a).unwrap(), loaded.read_to_vec(b).unwrap());
    }
    assert_same_state(&computed, &loaded, "the reads");
}

#[test]
fn mainline_table_loaded_from_its_export_places_the_acceptance_run_identically() {
    acceptance_run(PolicyRef::new(zsmalloc_core::Classic));
}

#[test]
fn heuristic_table_loaded_from_its_export_places_the_acceptance_run_identically() {
    acceptance_run(PolicyRef::new(Heuristic));
}

/// A small deterministic generator (xorshift) for the churn.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Stores, frees and compactions interleaved; both pools see the same sequence and must agree
/// on every placement, every page count and every class row along the way.
fn churn(cfg: PoolConfig, ops: usize, seed: u64) {
    let page = cfg.page_size as u64;
    let (computed, loaded) = computed_and_loaded(cfg);
    let mut rng = Rng(seed);
    let mut live: Vec<(Handle<&Pool>, Handle<&Pool>)> = Vec::new();
    for op in 0..ops {
        let roll = rng.below(100);
        if roll < 55 || live.is_empty() {
            // Mostly compressible-page sizes, some huge ones, a few tiny ones.
            let len = match rng.below(10) {
                0 => 1 + rng.below(64),
                1 => page - rng.below(page / 4),
                _ => 64 + rng.below(page / 2),
            } as usize;
            let data = common::pattern(op as u64, len);
            let (a, b) = (computed.store(&data).unwrap(), loaded.store(&data).unwrap());
            assert_same_place(&a, &b, &format!("op {op} (store of {len} bytes)"));
            live.push((a, b));
        } else if roll < 99 {
            let (a, b) = live.swap_remove(rng.below(live.len() as u64) as usize);
            a.free().unwrap();
            b.free().unwrap();
        } else {
            assert_eq!(computed.compact(), loaded.compact(), "pages compacted at op {op}");
            for (a, b) in &live {
                assert_same_place(a, b, &format!("compaction at op {op}"));
            }
        }
        assert_eq!(computed.total_pages(), loaded.total_pages(), "op {op}");
        if op % 500 == 0 {
            assert_same_state(&computed, &loaded, &format!("op {op}"));
        }
    }
    assert_eq!(computed.compact(), loaded.compact());
    assert_same_state(&computed, &loaded, "the last compaction");
    assert!(computed.stats().pages_compacted > 0, "the churn exercised compaction");
}

#[test]
fn exported_tables_place_churn_with_compaction_identically() {
    churn(PoolConfig::default(), 40_000, 0x5eed);
    churn(PoolConfig { page_size: 16384, class_delta: 16, ..Default::default() }, 20_000, 7);
    let heuristic = PoolConfig {
        chain_size: 10,
        chain_policy: PolicyRef::new(Heuristic),
        ..Default::default()
    };
    churn(heuristic, 20_000, 11);
    churn(PoolConfig { merge_classes: false, chain_size: 4, ..Default::default() }, 20_000, 13);
}

/// A hand-made table: objects go to the smallest class holding them (header included), lengths
/// past the largest class go to the page-sized one, huge classes carry no header, and
/// `huge_class_size` follows mainline's rule on the table's own classes.
#[test]
fn a_hand_made_table_follows_its_rules() {
    let spec =
        ClassTableSpec::parse("page_size 4096\n64 1\n1000 4\n3000 3\n3072 1\n4096 1\n").unwrap();
    let pool = Pool::new(PoolConfig { class_table: Some(spec), ..Default::default() }).unwrap();
    let want = [(1, 0), (56, 0), (57, 1), (992, 1), (993, 2), (2992, 2), (2993, 3), (4096, 4)];
    for (len, class) in want {
        assert_eq!(pool.lookup_class_index(len + HANDLE_SIZE), class, "{len} bytes");
    }
    assert_eq!(pool.lookup_class_index(1 << 20), 4);
    // 3000 x 3 pages: 4 objects, the largest class chaining pages with more than one object.
    assert_eq!(pool.huge_class_size(), 3000 - 7);
    let rows = pool.class_stats();
    let shapes: Vec<_> = rows
        .iter()
        .map(|r| (r.index, r.size, r.pages_per_zspage, r.objs_per_zspage, r.huge))
        .collect();
    assert_eq!(
        shapes,
        [
            (0, 64, 1, 64, false),
            (1, 1000, 4, 16, false),
            (2, 3000, 3, 4, false),
            (3, 3072, 1, 1, true),
            (4, 4096, 1, 1, true)
        ]
    );
    assert!(rows.iter().all(|r| r.first_index == r.index && r.worst_merge_waste == 0));
    let hs: Vec<_> = [100usize, 2000, 3050, 4096]
        .iter()
        .map(|&len| pool.store(&common::pattern(len as u64, len)).unwrap())
        .collect();
    for (h, len) in hs.iter().zip([100usize, 2000, 3050, 4096]) {
        assert_eq!(pool.read_to_vec(h).unwrap(), common::pattern(len as u64, len));
    }
    let used: Vec<u64> = pool.class_stats().iter().map(|r| r.obj_used).collect();
    assert_eq!(used, [0, 1, 1, 1, 1]);
    assert_eq!(pool.total_pages(), 4 + 3 + 1 + 1);
}
