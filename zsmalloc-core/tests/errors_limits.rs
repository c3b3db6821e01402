//! Error paths of limits and configuration: the memory limit refuses with nothing changed, bad
//! configurations name their setting, policy answers out of range are clamped. The pool is intact
//! after each (`common/kept.rs`).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::kept::{compact_fully, pool, Kept};
use common::pattern;
use zsmalloc_core::config::ReadMode;
use zsmalloc_core::{Error, Fixed, FnPolicy, PolicyRef, Pool, PoolConfig, HANDLE_SIZE};

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
fn a_value_with_a_newline_is_quoted_on_one_line() {
    let vars = ["ZSMALLOC_PAGE_SIZE", "ZSMALLOC_CHAIN_POLICY", "ZSMALLOC_READ_MODE"];
    let more = ["ZSMALLOC_BACKING", "ZSMALLOC_BACKEND", "ZSMALLOC_PLACEMENT_ONLY"];
    for var in vars.into_iter().chain(more) {
        let lookup = |k: &str| (k == var).then(|| "4 K\nmore".to_string());
        let err = PoolConfig::from_lookup(lookup).unwrap_err().to_string();
        assert!(!err.contains('\n') && err.contains("4 K\\nmore"), "{var}: {err}");
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
