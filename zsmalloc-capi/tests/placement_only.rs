//! `placement_only` (ABI version 7) through the exported functions: a pool that keeps lengths
//! only places every object as a pool with bytes does, refuses reads of bytes, and refuses a
//! value other than 0 or 1; a version-6 caller's 0 keeps every byte.

use zsmalloc::__zsmalloc_c_abi as c;
use zsmalloc::{zs_handle, zs_pool, zs_pool_config, zs_pool_stats, ZS_POOL_CONFIG_SIZE_VER6};

fn config() -> zs_pool_config {
    let mut cfg = std::mem::MaybeUninit::<zs_pool_config>::uninit();
    // SAFETY: `cfg` is writable for its size; the sized init fills every field.
    unsafe {
        assert_eq!(c::zs_pool_config_init_sized(cfg.as_mut_ptr(), size_of::<zs_pool_config>()), 0);
        cfg.assume_init()
    }
}

fn create(cfg: &zs_pool_config) -> *mut zs_pool {
    // SAFETY: a valid name and a whole config.
    unsafe { c::zs_create_pool_with_config_sized(c"p".as_ptr(), cfg, ZS_POOL_CONFIG_SIZE_VER6) }
}

fn stats(pool: *mut zs_pool) -> zs_pool_stats {
    let mut s = zs_pool_stats::default();
    // SAFETY: a live pool and a whole stats struct.
    unsafe { c::zs_pool_stats_sized(pool, &mut s, size_of::<zs_pool_stats>()) };
    s
}

#[test]
fn a_pool_without_bytes_places_as_one_with_bytes_and_refuses_their_reads() {
    let mut cfg = config();
    assert_eq!(cfg.placement_only, 0, "every byte kept by default");
    let full = create(&cfg);
    cfg.placement_only = 1;
    let bare = create(&cfg);
    assert!(!full.is_null() && !bare.is_null());
    let data = vec![7u8; 4096];
    let mut handles: Vec<(Box<zs_handle>, Box<zs_handle>)> = Vec::new();
    let mut local = vec![0u8; 4096 + 8];
    // SAFETY: the handles stay boxed until freed; `local` holds a page and the header; every
    // section begun is ended before the next call.
    unsafe {
        for i in 0..2000usize {
            let len = 1 + (i * 7919) % 4096;
            let (mut a, mut b) = (Box::new(zs_handle { obj: 0 }), Box::new(zs_handle { obj: 0 }));
            assert_eq!(c::zs_store(full, &mut *a, data.as_ptr().cast(), len, 0), 0);
            assert_eq!(c::zs_store(bare, &mut *b, data.as_ptr().cast(), len, 0), 0);
            handles.push((a, b));
        }
        for (i, (a, b)) in handles.iter_mut().enumerate().filter(|(i, _)| i % 3 == 0) {
            let len = 1 + (i * 7919) % 4096;
            let p = c::zs_obj_read_begin(full, &mut **a, len, local.as_mut_ptr().cast());
            assert!(!p.is_null());
            assert_eq!(c::zs_obj_read_end(full, &mut **a, len, p), 0);
            let refused = c::zs_obj_read_begin(bare, &mut **b, len, local.as_mut_ptr().cast());
            assert!(refused.is_null(), "a read of bytes is refused");
            assert_eq!(c::zs_free(full, &mut **a), 0);
            assert_eq!(c::zs_free(bare, &mut **b), 0);
        }
        assert_eq!(c::zs_get_total_pages(full), c::zs_get_total_pages(bare));
        assert_eq!(c::zs_compact(full), c::zs_compact(bare));
        let (f, b) = (stats(full), stats(bare));
        assert_eq!((f.pages_compacted, f.objs_moved), (b.pages_compacted, b.objs_moved));
        for (a, b) in &mut handles {
            c::zs_free(full, &mut **a);
            c::zs_free(bare, &mut **b);
        }
        c::zs_destroy_pool(full);
        c::zs_destroy_pool(bare);
    }
    cfg.placement_only = 2;
    assert!(create(&cfg).is_null(), "0 or 1 only");
}
