//! Explicit class tables through the exported functions, as C calls them (tests/c/class_tables.c
//! covers the same ground and the environment under sanitizers).

use std::ffi::CStr;
use std::ptr::null;

use zsmalloc::__zsmalloc_c_abi as c;
use zsmalloc::{
    zs_class_spec, zs_class_stats, zs_handle, zs_pool, zs_pool_config, zs_pool_stats,
    ZS_POOL_CONFIG_SIZE_VER4,
};

fn config() -> zs_pool_config {
    let mut cfg = std::mem::MaybeUninit::<zs_pool_config>::uninit();
    // SAFETY: `cfg` is writable for its size; the sized init fills every field.
    unsafe {
        assert_eq!(c::zs_pool_config_init_sized(cfg.as_mut_ptr(), size_of::<zs_pool_config>()), 0);
        cfg.assume_init()
    }
}

fn message() -> String {
    // SAFETY: the message pointer is valid until the next failing call on this thread.
    unsafe { CStr::from_ptr(c::zs_last_error_message()) }.to_string_lossy().into_owned()
}

fn create(cfg: &zs_pool_config) -> *mut zs_pool {
    // SAFETY: a valid name and a config whose table pointer is NULL or live for the call.
    unsafe { c::zs_create_pool_with_config_sized(c"t".as_ptr(), cfg, size_of::<zs_pool_config>()) }
}

fn class_row(pool: *mut zs_pool, index: u32) -> Option<zs_class_stats> {
    let mut row = zs_class_stats::default();
    // SAFETY: a live pool and a struct of this library's size.
    let rc = unsafe { c::zs_class_stats_sized(pool, index, &mut row, size_of::<zs_class_stats>()) };
    (rc == 0).then_some(row)
}

/// The created classes of `pool` (a merged index reports its class's row, whose `index` is
/// the class's own).
fn table_of(pool: *mut zs_pool) -> Vec<zs_class_spec> {
    (0..)
        .map_while(|i| class_row(pool, i).map(|r| (i, r)))
        .filter(|(i, r)| r.index == *i)
        .map(|(_, r)| zs_class_spec { size: r.size, chain: r.pages_per_zspage })
        .collect()
}

fn stats(pool: *mut zs_pool) -> zs_pool_stats {
    let mut st = zs_pool_stats::default();
    // SAFETY: a live pool and a struct of this library's size.
    assert_eq!(unsafe { c::zs_pool_stats_sized(pool, &mut st, size_of::<zs_pool_stats>()) }, 0);
    st
}

#[test]
fn mainline_table_given_explicitly_places_objects_as_mainline() {
    let mut cfg = config();
    cfg.max_pages_per_zspage = 10;
    let mainline = create(&cfg);
    let table = table_of(mainline);
    assert_eq!(table.last(), Some(&zs_class_spec { size: 4096, chain: 1 }));
    let mut explicit = config();
    explicit.class_table = table.as_ptr();
    explicit.class_count = table.len();
    let loaded = create(&explicit);
    assert!(!loaded.is_null(), "{}", message());
    assert_eq!(table_of(loaded), table);
    let data = vec![7u8; 4096];
    let n = 20 * 255;
    let mut ha: Vec<zs_handle> = (0..n).map(|_| zs_handle::default()).collect();
    let mut hb: Vec<zs_handle> = (0..n).map(|_| zs_handle::default()).collect();
    // SAFETY: live pools; handles stay in place while they hold objects.
    unsafe {
        for i in 0..n {
            let len = 32 + (i / 20) * 16;
            assert_eq!(c::zs_store(mainline, &mut ha[i], data.as_ptr().cast(), len, 0), 0);
            assert_eq!(c::zs_store(loaded, &mut hb[i], data.as_ptr().cast(), len, 0), 0);
            assert_eq!(c::zs_get_total_pages(mainline), c::zs_get_total_pages(loaded), "store {i}");
        }
        for i in (0..n).step_by(2) {
            assert_eq!(c::zs_free(mainline, &mut ha[i]), 0);
            assert_eq!(c::zs_free(loaded, &mut hb[i]), 0);
        }
        let freed = c::zs_compact(mainline);
        assert!(freed > 0);
        assert_eq!(c::zs_compact(loaded), freed);
        assert_eq!(stats(mainline), stats(loaded));
        for i in 0..n {
            assert_eq!(c::zs_free(mainline, &mut ha[i]), 0);
            assert_eq!(c::zs_free(loaded, &mut hb[i]), 0);
        }
        c::zs_destroy_pool(mainline);
        c::zs_destroy_pool(loaded);
    }
}

#[test]
fn bad_tables_are_refused_naming_the_entry() {
    let spec = |pairs: &[(u32, u32)]| -> Vec<zs_class_spec> {
        pairs.iter().map(|&(size, chain)| zs_class_spec { size, chain }).collect()
    };
    let cases: [(Vec<zs_class_spec>, &str); 4] = [
        (
            spec(&[(48, 1), (32, 1), (4096, 1)]),
            "class_table[1] (size 32, chain 1): size 32 is below",
        ),
        (spec(&[(32, 1), (40, 17), (4096, 1)]), "class_table[1] (size 40, chain 17): chain 17"),
        (spec(&[(32, 1), (2048, 1)]), "class_table[1] (size 2048, chain 1): no class stores"),
        (spec(&[(32, 1), (4096, 1), (4104, 1)]), "class_table[2] (size 4104, chain 1): size 4104"),
    ];
    for (table, want) in cases {
        let mut cfg = config();
        cfg.class_table = table.as_ptr();
        cfg.class_count = table.len();
        assert!(create(&cfg).is_null());
        assert_eq!(c::zs_last_error(), -libc::EINVAL);
        assert!(message().contains(want), "{}", message());
    }
    let mut cfg = config();
    cfg.class_table = null();
    cfg.class_count = 2;
    assert!(create(&cfg).is_null());
    assert!(message().contains("class_table is NULL but class_count is 2"), "{}", message());
}

#[test]
fn a_version_4_struct_makes_the_computed_table() {
    let table = [zs_class_spec { size: 32, chain: 1 }, zs_class_spec { size: 4096, chain: 1 }];
    let mut cfg = config();
    cfg.class_table = table.as_ptr();
    cfg.class_count = 2;
    // SAFETY: `cfg` is readable for version 4's 48 bytes; the table fields beyond are unread.
    let pool = unsafe {
        c::zs_create_pool_with_config_sized(c"v4".as_ptr(), &cfg, ZS_POOL_CONFIG_SIZE_VER4)
    };
    assert!(!pool.is_null(), "{}", message());
    assert!(table_of(pool).len() > 2, "mainline's table, not the struct's");
    // SAFETY: a live pool.
    unsafe { c::zs_destroy_pool(pool) };
}

#[test]
fn a_count_above_the_most_classes_is_refused_before_any_entry_is_read() {
    let table = [zs_class_spec { size: 32, chain: 1 }, zs_class_spec { size: 4096, chain: 1 }];
    // The largest table there is: 16 KiB pages with the band up to 64 KiB.
    for (page, multi, count, limit) in
        [(4096, 0, 510, 509), (16384, 65536, 8190, 8189), (4096, 0, usize::MAX, 509)]
    {
        let mut cfg = config();
        cfg.page_size = page;
        cfg.multi_page_size = multi;
        cfg.class_table = table.as_ptr();
        cfg.class_count = count;
        // Reading past the two entries would be out of bounds: only the count may be looked at.
        assert!(create(&cfg).is_null());
        let want = format!("too many classes (class_count {count})");
        assert!(message().contains(&want), "{}", message());
        assert!(message().contains(&format!("at most {limit}")), "{}", message());
    }
}
