//! Class tables with the multi-page band (docs/DESIGN.md, Class tables and Objects of several
//! pages): a computed band table given back explicitly places every length the same, exports
//! and loads through the file format, and a table that breaks the order rules is refused with
//! the entry named.

use zsmalloc_core::{
    ClassSpec, ClassTable, ClassTableSpec, Error, Heuristic, PolicyRef, Pool, PoolConfig, HDR,
};

fn band_config(multi: u32, chain: u32, heuristic: bool) -> PoolConfig {
    PoolConfig {
        multi_page_size: multi,
        chain_size: chain,
        chain_policy: if heuristic {
            PolicyRef::new(Heuristic)
        } else {
            PolicyRef::new(zsmalloc_core::Classic)
        },
        ..Default::default()
    }
}

/// The shape of the class serving `size` bytes (header included).
fn shape(t: &ClassTable, size: usize) -> (u32, u32, u32, u32, bool) {
    let c = &t.classes()[t.position(size)];
    (c.size, c.pages_per_zspage, c.order, c.objs_per_zspage, c.huge)
}

#[test]
fn a_computed_band_table_given_back_places_every_length_the_same() {
    for multi in [8192, 16384, 32768, 65536] {
        for chain in [4, 8, 10, 16] {
            for heuristic in [false, true] {
                let cfg = band_config(multi, chain, heuristic);
                let computed = ClassTable::new(&cfg).unwrap();
                let spec = computed.spec();
                assert_eq!(spec.multi_page_size(), multi);
                let given = ClassTable::new(&PoolConfig::for_table(spec.clone())).unwrap();
                let at = format!("multi {multi}, chain {chain}, heuristic {heuristic}");
                for len in 1..=multi as usize {
                    let size = len + HDR as usize;
                    assert_eq!(shape(&computed, size), shape(&given, size), "{at}, length {len}");
                }
                for band in [0, 1] {
                    assert_eq!(
                        computed.huge_class_size_of_band(band),
                        given.huge_class_size_of_band(band),
                        "{at}, band {band}"
                    );
                }
                assert_eq!(given.max_size(), multi);
                // The band's first class (a page at order 0) takes no length: it is left out.
                let unused = computed.classes().iter().filter(|c| !computed.stores_objects(c));
                assert_eq!(unused.count(), 1, "{at}");
                assert_eq!(spec.classes().len() + 1, computed.classes().len(), "{at}");
                // The file format carries the orders.
                let text = cfg.export_class_table().unwrap();
                assert_eq!(ClassTableSpec::parse(&text).unwrap(), spec, "{at}");
                assert_eq!(ClassTableSpec::parse(&spec.to_file_text()).unwrap(), spec, "{at}");
            }
        }
    }
}

#[test]
fn pools_on_the_computed_and_the_given_table_hold_the_same_pages() {
    let cfg = band_config(16384, 8, false);
    let spec = ClassTable::new(&cfg).unwrap().spec();
    let (a, b) = (Pool::new(cfg).unwrap(), Pool::new(PoolConfig::for_table(spec)).unwrap());
    let mut kept = Vec::new();
    let lengths = [100, 700, 2000, 3000, 4100, 6000, 9000, 12000, 14000, 16384];
    for i in 0..3000usize {
        let len = lengths[i % lengths.len()];
        let data = vec![(i % 251) as u8; len];
        kept.push((a.store(&data).unwrap(), b.store(&data).unwrap(), data));
    }
    // Two objects of three are freed (dropped), leaving sparse zspages to compact.
    let mut i = 0;
    kept.retain(|_| {
        i += 1;
        i % 3 == 0
    });
    assert_eq!(a.total_pages(), b.total_pages());
    assert!(a.compact() > 0);
    b.compact();
    assert_eq!(a.total_pages(), b.total_pages());
    assert_eq!(a.stats().bytes_moved, b.stats().bytes_moved);
    for (ha, hb, data) in &kept {
        assert_eq!(&a.read_to_vec(ha).unwrap(), data);
        assert_eq!(&b.read_to_vec(hb).unwrap(), data);
    }
}

/// `(size, chain, order)` entries of a table on 4K pages.
type Entries = [(u32, u32, u32)];

fn refusal(classes: &Entries) -> String {
    let classes =
        classes.iter().map(|&(size, chain, order)| ClassSpec { size, chain, order }).collect();
    ClassTableSpec::new(4096, classes).unwrap_err().to_string()
}

#[test]
fn tables_breaking_the_order_rules_are_refused_with_the_entry_named() {
    let cases: [(&Entries, &str); 8] = [
        (&[(32, 1, 1), (4096, 1, 0)], "class_table[0] (size 32, chain 1): order 1: a class of a page"),
        (&[(4096, 1, 0), (8192, 1, 0)], "class_table[1] (size 8192, chain 1): size 8192 is above the page size, 4096: such a class belongs to the multi-page band"),
        (&[(4096, 1, 0), (8192, 2, 2), (16384, 1, 1)], "class_table[2] (size 16384, chain 1): order 1 differs from the band's, 2"),
        (&[(4096, 1, 0), (20480, 1, 2)], "size 20480 is above the band's multi-page size, 16384"),
        (&[(32, 1, 0), (8192, 1, 2), (16384, 1, 2)], "class_table[0] (size 32, chain 1): the band starts after 32: the table needs `4096 1`"),
        (&[(4096, 1, 0), (8192, 2, 2)], "class_table[1] (size 8192, chain 2): no class stores a whole multi-page object"),
        (&[(4096, 1, 0), (8192, 2, 2), (16384, 2, 2)], "the multi-page-sized class must have chain 1"),
        (&[(4096, 1, 0), (16384, 1, 5)], "needs its order, 1..=4"),
    ];
    for (classes, want) in cases {
        let err = refusal(classes);
        assert!(err.contains(want), "{classes:?}: {err}");
    }
    let ok = ClassTableSpec::new(
        4096,
        vec![
            ClassSpec::new(4096, 1),
            ClassSpec { size: 8192, chain: 3, order: 2 },
            ClassSpec { size: 16384, chain: 1, order: 2 },
        ],
    )
    .unwrap();
    assert_eq!(ok.multi_page_size(), 16384);
}

#[test]
fn the_configuration_and_the_table_agree_on_the_band() {
    let band = ClassTable::new(&band_config(16384, 8, false)).unwrap().spec();
    let mut cfg = PoolConfig::for_table(band.clone());
    cfg.multi_page_size = 0;
    let err = cfg.validate().unwrap_err();
    assert!(matches!(err, Error::Config { setting: "class_table", .. }), "{err}");
    assert!(err.to_string().contains("set multi_page_size to 16384"), "{err}");
    cfg.multi_page_size = 32768;
    assert!(cfg.validate().unwrap_err().to_string().contains("must agree"));
    let plain = ClassTable::new(&PoolConfig::default()).unwrap().spec();
    let cfg = PoolConfig { class_table: Some(plain), multi_page_size: 8192, ..Default::default() };
    assert!(cfg.validate().unwrap_err().to_string().contains("their order is 1"));
}

#[test]
fn the_file_reads_an_order_column_and_names_a_bad_line() {
    let text = "page_size 4K\n32 1\n4096 1 0\n# the band\n8192 3 2\n16384 1 2\n";
    let t = ClassTableSpec::parse(text).unwrap();
    assert_eq!(t.multi_page_size(), 16384);
    assert_eq!(t.classes()[2], ClassSpec { size: 8192, chain: 3, order: 2 });
    let err = ClassTableSpec::parse("page_size 4K\n4096 1\n8192 3\n16384 1 2\n").unwrap_err();
    assert!(err.to_string().contains("line 3 (`8192 3`): size 8192 is above the page"), "{err}");
    let err = ClassTableSpec::parse("page_size 4K\n4096 1\n8192 3 2\n").unwrap_err();
    assert!(err.to_string().contains("(is the file truncated?)"), "{err}");
    let err = ClassTableSpec::parse("page_size 4K\n4096 1 0 9\n").unwrap_err();
    assert!(err.to_string().contains("`size chain order`, this one has 4 fields"), "{err}");
}
