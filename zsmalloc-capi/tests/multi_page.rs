//! Objects of several pages through the exported functions (ABI version 6): the
//! `multi_page_size` field read only from a struct of version 6, per-band huge class sizes,
//! class rows with their order, and objects up to the multi-page size stored, read, compacted.

use std::ffi::c_void;

use zsmalloc::__zsmalloc_c_abi as c;
use zsmalloc::{
    zs_class_spec, zs_class_stats, zs_handle, zs_pool, zs_pool_config, zs_pool_stats,
    ZS_POOL_CONFIG_SIZE_VER5, ZS_POOL_CONFIG_SIZE_VER6,
};

fn config() -> zs_pool_config {
    let mut cfg = std::mem::MaybeUninit::<zs_pool_config>::uninit();
    // SAFETY: `cfg` is writable for its size; the sized init fills every field.
    unsafe {
        assert_eq!(c::zs_pool_config_init_sized(cfg.as_mut_ptr(), size_of::<zs_pool_config>()), 0);
        cfg.assume_init()
    }
}

fn create(cfg: &zs_pool_config, size: usize) -> *mut zs_pool {
    // SAFETY: a valid name and a config readable for `size` bytes (at most its own).
    unsafe { c::zs_create_pool_with_config_sized(c"m".as_ptr(), cfg, size) }
}

#[test]
fn the_field_is_read_from_version_6_structs_only() {
    assert_eq!(size_of::<zs_pool_config>(), ZS_POOL_CONFIG_SIZE_VER6);
    let mut cfg = config();
    assert_eq!(cfg.multi_page_size, 0, "off by default");
    cfg.multi_page_size = 16384;
    // SAFETY: pools made here are live until destroyed below.
    unsafe {
        // A version-5 caller's struct ends before the field: mainline's classes.
        let old = create(&cfg, ZS_POOL_CONFIG_SIZE_VER5);
        assert!(!old.is_null());
        assert_eq!(c::zs_huge_class_size_band(old, 0), 3625);
        assert_eq!(c::zs_huge_class_size_band(old, 1), 0, "no multi-page band");
        assert_eq!(c::zs_lookup_class_index(old, 9000), 254);
        c::zs_destroy_pool(old);
        let pool = create(&cfg, ZS_POOL_CONFIG_SIZE_VER6);
        assert!(!pool.is_null());
        assert_eq!(c::zs_huge_class_size(pool), 3625);
        assert_eq!(c::zs_huge_class_size_band(pool, 0), 3625);
        assert_eq!(c::zs_huge_class_size_band(pool, 1), 14521);
        assert_eq!(c::zs_huge_class_size_band(pool, 2), 0);
        let mut row = zs_class_stats::default();
        assert_eq!(c::zs_class_stats_sized(pool, 404, &mut row, size_of::<zs_class_stats>()), 0);
        assert_eq!((row.size, row.first_index, row.order), (13632, 396, 2));
        assert_eq!(c::zs_class_stats_sized(pool, 448, &mut row, size_of::<zs_class_stats>()), -22);
        c::zs_destroy_pool(pool);
        // A bad size, or padding set, is refused.
        cfg.multi_page_size = 12288;
        assert!(create(&cfg, ZS_POOL_CONFIG_SIZE_VER6).is_null());
        cfg.multi_page_size = 16384;
        cfg.placement_only = 2;
        assert!(create(&cfg, ZS_POOL_CONFIG_SIZE_VER6).is_null());
    }
}

#[test]
fn objects_up_to_the_multi_page_size_round_trip() {
    let mut cfg = config();
    cfg.multi_page_size = 16384;
    let pool = create(&cfg, size_of::<zs_pool_config>());
    assert!(!pool.is_null());
    let lens: Vec<usize> = (0..300).map(|i| 1 + (i * 7919) % 16384).chain([16384]).collect();
    let data = |i: usize, len: usize| -> Vec<u8> { (0..len).map(|k| (i * 31 + k) as u8).collect() };
    let mut handles: Vec<Box<zs_handle>> = Vec::new();
    let mut local = vec![0u8; 16384 + 8];
    // SAFETY: the handles stay boxed (in place) until freed; `local` holds the largest object
    // plus its header; sections are ended before the next call.
    unsafe {
        for (i, &len) in lens.iter().enumerate() {
            let mut h: Box<zs_handle> = Box::new(std::mem::zeroed());
            let d = data(i, len);
            assert_eq!(c::zs_store(pool, &mut *h, d.as_ptr().cast::<c_void>(), len, 0), 0, "{len}");
            handles.push(h);
        }
        let too_long = vec![0u8; 16385];
        let mut h: Box<zs_handle> = Box::new(std::mem::zeroed());
        assert_eq!(c::zs_store(pool, &mut *h, too_long.as_ptr().cast(), 16385, 0), -28);
        let check = |handles: &mut Vec<Box<zs_handle>>, local: &mut Vec<u8>| {
            for (i, h) in handles.iter_mut().enumerate() {
                let len = lens[i];
                let p = c::zs_obj_read_begin(pool, &mut **h, len, local.as_mut_ptr().cast());
                assert!(!p.is_null(), "{len}");
                assert_eq!(std::slice::from_raw_parts(p.cast::<u8>(), len), &data(i, len)[..]);
                assert_eq!(c::zs_obj_read_end(pool, &mut **h, len, p), 0);
            }
        };
        check(&mut handles, &mut local);
        for (i, h) in handles.iter_mut().enumerate() {
            if i % 2 == 1 {
                assert_eq!(c::zs_free(pool, &mut **h), 0);
            }
        }
        c::zs_compact(pool);
        let mut st = zs_pool_stats::default();
        assert_eq!(c::zs_pool_stats_sized(pool, &mut st, size_of::<zs_pool_stats>()), 0);
        assert!(st.objs_moved > 0 && st.bytes_moved > 0);
        for (i, h) in handles.iter_mut().enumerate().filter(|(i, _)| i % 2 == 0) {
            let len = lens[i];
            let p = c::zs_obj_read_begin(pool, &mut **h, len, local.as_mut_ptr().cast());
            assert_eq!(std::slice::from_raw_parts(p.cast::<u8>(), len), &data(i, len)[..]);
            assert_eq!(c::zs_obj_read_end(pool, &mut **h, len, p), 0);
            assert_eq!(c::zs_free(pool, &mut **h), 0);
        }
        assert_eq!(c::zs_get_total_pages(pool), 0);
        c::zs_destroy_pool(pool);
    }
}

/// The last error's message on this thread.
fn last_error() -> String {
    // SAFETY: the library returns NULL or a NUL-terminated string valid until the next call.
    unsafe {
        let p = c::zs_last_error_message();
        assert!(!p.is_null());
        std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

#[test]
fn an_explicit_table_holds_the_band_when_multi_page_size_is_set() {
    let table = [
        zs_class_spec { size: 32, chain: 1 },
        zs_class_spec { size: 4096, chain: 1 },
        zs_class_spec { size: 6144, chain: 3 },
        zs_class_spec { size: 16384, chain: 1 },
    ];
    let mut cfg = config();
    cfg.class_table = table.as_ptr();
    cfg.class_count = table.len();
    // Without the multi-page size the classes above the page have no order.
    assert!(create(&cfg, size_of::<zs_pool_config>()).is_null());
    assert!(last_error().contains("class_table[2] (size 6144, chain 3)"), "{}", last_error());
    cfg.multi_page_size = 16384;
    let pool = create(&cfg, size_of::<zs_pool_config>());
    assert!(!pool.is_null(), "{}", last_error());
    // SAFETY: the pool is live until destroyed; the handle stays boxed; `local` holds the
    // largest object plus its header.
    unsafe {
        assert_eq!(c::zs_lookup_class_index(pool, 5000), 2);
        assert_eq!(c::zs_huge_class_size_band(pool, 1), 6144 - 7);
        let mut row = zs_class_stats::default();
        assert_eq!(c::zs_class_stats_sized(pool, 2, &mut row, size_of::<zs_class_stats>()), 0);
        assert_eq!(
            (row.size, row.pages_per_zspage, row.order, row.objs_per_zspage),
            (6144, 3, 2, 8)
        );
        let data: Vec<u8> = (0..6000u32).map(|k| k as u8).collect();
        let mut h: Box<zs_handle> = Box::new(std::mem::zeroed());
        assert_eq!(c::zs_store(pool, &mut *h, data.as_ptr().cast(), data.len(), 0), 0);
        assert_eq!(c::zs_get_total_pages(pool), 12, "three order-2 units");
        let mut local = vec![0u8; 16384 + 8];
        let p = c::zs_obj_read_begin(pool, &mut *h, data.len(), local.as_mut_ptr().cast());
        assert_eq!(std::slice::from_raw_parts(p.cast::<u8>(), data.len()), &data[..]);
        assert_eq!(c::zs_obj_read_end(pool, &mut *h, data.len(), p), 0);
        assert_eq!(c::zs_free(pool, &mut *h), 0);
        c::zs_destroy_pool(pool);
    }
}
