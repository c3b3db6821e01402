//! The multi-page band's class table against a model written from the RFC's rules
//! ("mTHP-friendly compression in zsmalloc and zram based on multi-pages", 2024; docs/DESIGN.md,
//! Objects of several pages), independent of the pool's code: class sizes, orders, chains,
//! objects per zspage, merges, per-band huge class sizes and the lookup of every length, for
//! multi-page sizes 8K..64K on 4K pages and chains 4..=16; plus the reviewers' figures.

use zsmalloc_core::{ClassTable, Error, Pool, PoolConfig};

const H: u32 = 8;

/// One created class of the model.
#[derive(Debug, Clone, PartialEq)]
struct M {
    index: u32,
    first: u32,
    size: u32,
    order: u32,
    chain: u32,
    objs: u32,
}

struct Model {
    n0: u32,
    n: u32,
    d1: u32,
    page: u32,
    classes: Vec<M>,
    huge: [u32; 2],
}

fn chain_of(size: u32, unit: u32, c: u32) -> u32 {
    if size.is_power_of_two() {
        return 1;
    }
    (1..=c).min_by_key(|&i| ((i * unit) % size, i)).unwrap()
}

fn model(page: u32, multi: u32, c: u32) -> Model {
    let n0 = (page - 32).div_ceil(page >> 8) + 1;
    let d1 = multi >> 8;
    let n1 = (multi - page).div_ceil(d1) + 1;
    let k = (multi / page).trailing_zeros();
    let n = n0 + n1;
    let shape = |i: u32| {
        let size = if i < n0 { (32 + i * (page >> 8)).min(page) } else { page + (i - n0) * d1 };
        let order = if size > page { k } else { 0 };
        let chain = chain_of(size, page << order, c);
        (size, order, chain, chain * (page << order) / size)
    };
    let mut classes: Vec<M> = Vec::new();
    for i in (0..n).rev() {
        let (size, order, chain, objs) = shape(i);
        match classes.last_mut() {
            Some(p) if p.chain == chain && p.objs == objs && (p.index < n0) == (i < n0) => {
                p.first = i
            }
            _ => classes.push(M { index: i, first: i, size, order, chain, objs }),
        }
    }
    classes.reverse();
    let huge_of = |band: std::ops::Range<u32>| {
        band.rev()
            .map(shape)
            .find(|&(_, _, chain, objs)| chain != 1 && objs != 1)
            .map_or(0, |(size, ..)| size - (H - 1))
    };
    Model { n0, n, d1, page, huge: [huge_of(0..n0), huge_of(n0..n)], classes }
}

impl Model {
    /// The class index the RFC's `zs_malloc` takes for a length.
    fn index(&self, len: u32) -> u32 {
        let s = len + H;
        if s > self.page + H {
            (self.n0 + (s - self.page).div_ceil(self.d1)).min(self.n - 1)
        } else if s <= 32 {
            0
        } else {
            (s - 32).div_ceil(16).min(self.n0 - 1)
        }
    }

    /// The created class serving index `i`.
    fn serving(&self, i: u32) -> &M {
        self.classes.iter().find(|c| (c.first..=c.index).contains(&i)).unwrap()
    }
}

fn table(multi: u32, chain: u32) -> ClassTable {
    let cfg = PoolConfig { chain_size: chain, multi_page_size: multi, ..Default::default() };
    ClassTable::new(&cfg).unwrap()
}

#[test]
fn the_table_is_the_models_for_every_size_and_chain() {
    for multi in [8192, 16384, 32768, 65536] {
        for chain in 4..=16 {
            let m = model(4096, multi, chain);
            let t = table(multi, chain);
            let got: Vec<M> = t
                .classes()
                .iter()
                .map(|c| M {
                    index: c.index,
                    first: c.first_index,
                    size: c.size,
                    order: c.order,
                    chain: c.pages_per_zspage,
                    objs: c.objs_per_zspage,
                })
                .collect();
            assert_eq!(got, m.classes, "multi {multi} chain {chain}");
            assert_eq!(t.index_count(), m.n, "multi {multi} chain {chain}");
            assert_eq!(t.base_count(), 255);
            assert_eq!(t.huge_class_size_of_band(0), Some(m.huge[0]));
            assert_eq!(t.huge_class_size_of_band(1), Some(m.huge[1]));
            for len in 1..=multi {
                let want = m.serving(m.index(len)).index;
                assert_eq!(t.lookup_class_index((len + H) as usize), want, "len {len}");
                let class = &t.classes()[t.position((len + H) as usize)];
                assert_eq!(class.index, want, "position of len {len}");
            }
        }
    }
}

#[test]
fn the_rfcs_and_the_reviewers_figures() {
    let t8 = table(16384, 8);
    assert_eq!(t8.index_count(), 448, "n0 255 + n1 193 at 16K");
    assert_eq!(t8.huge_class_size_of_band(0), Some(3625));
    assert_eq!(t8.huge_class_size_of_band(1), Some(14521));
    let t10 = table(16384, 10);
    assert_eq!(t10.huge_class_size_of_band(0), Some(3705));
    assert_eq!(t10.huge_class_size_of_band(1), Some(14841));
    // At chain 8, indices 396..=403 merge into 404, of size 13632 (13056 is followed by it).
    let c404 = &t8.classes()[t8.position_of_index(404).unwrap()];
    assert_eq!((c404.index, c404.first_index, c404.size), (404, 396, 13632));
    for i in 396..=404 {
        assert_eq!(t8.position_of_index(i), t8.position_of_index(404), "index {i}");
    }
    let prev = &t8.classes()[t8.position_of_index(395).unwrap()];
    assert_eq!(prev.size, 13056);
    // At chain 10, the class of size 10880 is followed by 11328.
    let sizes: Vec<u32> = t10.classes().iter().map(|c| c.size).collect();
    let at = sizes.iter().position(|&s| s == 10880).expect("a class of 10880");
    assert_eq!(sizes[at + 1], 11328);
    // Orders: K above a page, 0 up to it; the band's first index repeats the page at order 0.
    for c in t8.classes() {
        assert_eq!(c.order, if c.size > 4096 { 2 } else { 0 }, "size {}", c.size);
    }
    let pages: Vec<u32> = t8.classes().iter().filter(|c| c.size == 4096).map(|c| c.index).collect();
    assert_eq!(pages, [254, 255], "no merge across the bands");
}

#[test]
fn the_default_keeps_mainline_and_bad_sizes_are_refused() {
    let off = ClassTable::new(&PoolConfig::default()).unwrap();
    assert_eq!((off.index_count(), off.band(), off.max_size()), (255, None, 4096));
    assert_eq!(off.huge_class_size_of_band(1), None);
    for (page, multi) in
        [(4096, 4096), (4096, 12288), (4096, 131072), (16384, 131072), (65536, 131072)]
    {
        let cfg = PoolConfig { page_size: page, multi_page_size: multi, ..Default::default() };
        let err = cfg.validate().unwrap_err();
        assert!(matches!(err, Error::Config { setting: "multi_page_size", .. }), "{err}");
    }
    use zsmalloc_core::{BackendKind, ClassSpec, ClassTableSpec};
    for backend in [BackendKind::Zblock, BackendKind::Malloc] {
        let cfg = PoolConfig { backend, multi_page_size: 16384, ..Default::default() };
        assert!(cfg.validate().unwrap_err().to_string().contains("multi"), "{backend:?}");
    }
    let spec = ClassTableSpec::new(4096, vec![ClassSpec::new(4096, 1)]).unwrap();
    let cfg = PoolConfig { class_table: Some(spec), multi_page_size: 16384, ..Default::default() };
    assert!(cfg.validate().unwrap_err().to_string().contains("no class above the page"));
    let cfg = PoolConfig { page_size: 16384, multi_page_size: 65536, ..Default::default() };
    assert_eq!(ClassTable::new(&cfg).unwrap().max_size(), 65536);
}

#[test]
fn pools_store_into_the_models_classes() {
    let pool =
        Pool::new(PoolConfig { multi_page_size: 16384, chain_size: 8, ..Default::default() })
            .unwrap();
    assert_eq!(pool.max_object_size(), 16384);
    let m = model(4096, 16384, 8);
    for len in [1, 100, 4088, 4089, 4096, 4097, 4104, 4105, 9000, 14520, 14521, 16377, 16384] {
        let h = pool.store(&vec![7u8; len as usize]).unwrap();
        let want = m.serving(m.index(len));
        let row = pool.class_stats().into_iter().find(|r| r.obj_used == 1).unwrap();
        assert_eq!((row.index, row.size, row.order), (want.index, want.size, want.order), "{len}");
        drop(h);
    }
    assert!(matches!(pool.store(&vec![0; 16385]), Err(Error::TooLarge { max: 16384, .. })));
    assert!(pool.store(&[]).is_err());
}
