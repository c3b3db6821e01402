//! The exported functions, called from Rust exactly as C calls them (the C programs in
//! `tests/c/` cover the same ground under sanitizers; this runs with `cargo test`).

use std::ffi::{c_void, CStr};
use std::ptr::{null, null_mut};

use zsmalloc::__zsmalloc_c_abi as c;
use zsmalloc::{zs_handle, zs_pool_config, zs_pool_stats, zs_sg, ZS_HANDLE_SIZE};

const EINVAL: i32 = libc::EINVAL;

fn config() -> zs_pool_config {
    let mut cfg = std::mem::MaybeUninit::<zs_pool_config>::uninit();
    // SAFETY: `cfg` is writable for its size; the sized init fills every field of that size
    // (the size-less symbol fills only a struct of ABI version 1).
    unsafe {
        let size = std::mem::size_of::<zs_pool_config>();
        assert_eq!(c::zs_pool_config_init_sized(cfg.as_mut_ptr(), size), 0);
        cfg.assume_init()
    }
}

fn message() -> String {
    // SAFETY: the message pointer is valid until the next failing call on this thread.
    unsafe { CStr::from_ptr(c::zs_last_error_message()) }.to_string_lossy().into_owned()
}

#[test]
fn store_read_free_through_the_exports() {
    let mut cfg = config();
    cfg.max_pages_per_zspage = 10;
    // SAFETY: valid name and config; every pointer below is live for its call.
    unsafe {
        let pool = c::zs_create_pool_with_config(c"t".as_ptr(), &cfg);
        assert!(!pool.is_null(), "{}", message());
        let mut handles: Vec<zs_handle> = (0..64).map(|_| zs_handle::default()).collect();
        let data: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
        for (i, h) in handles.iter_mut().enumerate() {
            let len = 100 + i * 60;
            assert_eq!(c::zs_store(pool, h, data.as_ptr().cast(), len, 0), 0, "{}", message());
        }
        let mut local = vec![0u8; 4096];
        let mut spanning = 0;
        for (i, h) in handles.iter_mut().enumerate() {
            let len = 100 + i * 60;
            let p = c::zs_obj_read_begin(pool, h, len, local.as_mut_ptr().cast());
            assert!(!p.is_null(), "{}", message());
            if p == local.as_mut_ptr().add(ZS_HANDLE_SIZE as usize).cast() {
                spanning += 1;
            }
            assert_eq!(std::slice::from_raw_parts(p.cast::<u8>(), len), &data[..len]);
            assert_eq!(c::zs_obj_read_end(pool, h, len, p), 0);
            let mut sg = [zs_sg { addr: null_mut(), len: 0 }; 2];
            let n = c::zs_obj_read_sg_begin(pool, h, sg.as_mut_ptr(), len);
            assert!(n == 1 || n == 2);
            assert_eq!(sg[..n as usize].iter().map(|s| s.len).sum::<usize>(), len);
            assert_eq!(c::zs_obj_read_sg_end(pool, h), 0);
        }
        let mut st = zs_pool_stats::default();
        assert_eq!(c::zs_pool_stats(pool, &mut st), 0);
        assert_eq!(st.reads_spanning, 2 * spanning); // copy reads and sg reads
        assert_eq!(st.objs_inuse, 64);
        for h in handles.iter_mut() {
            assert_eq!(c::zs_free(pool, h), 0);
            assert_eq!(h.obj, 0);
        }
        assert_eq!(c::zs_get_total_pages(pool), 0);
        c::zs_destroy_pool(pool);
    }
}

#[test]
fn bad_input_is_refused_with_its_error() {
    // SAFETY: every pointer is NULL, misaligned on purpose, or live for its call.
    unsafe {
        let cfg = config();
        let pool = c::zs_create_pool_with_config(c"t".as_ptr(), &cfg);
        let mut h = zs_handle::default();
        let data = [1u8; 16];
        assert_eq!(c::zs_store(null_mut(), &mut h, data.as_ptr().cast(), 16, 0), -EINVAL);
        assert_eq!(c::zs_last_error(), -EINVAL);
        assert!(message().contains("pool is NULL"), "{}", message());
        assert_eq!(c::zs_store(pool, null_mut(), data.as_ptr().cast(), 16, 0), -EINVAL);
        let mut words = [0u64; 3];
        let misaligned = words.as_mut_ptr().cast::<u8>().add(4).cast::<zs_handle>();
        assert_eq!(c::zs_store(pool, misaligned, data.as_ptr().cast(), 16, 0), -EINVAL);
        assert!(message().contains("aligned"), "{}", message());
        assert_eq!(words, [0; 3]);
        assert_eq!(c::zs_store(pool, &mut h, null::<c_void>(), 16, 0), -EINVAL);
        assert_eq!(c::zs_store(pool, &mut h, data.as_ptr().cast(), 0, 0), -EINVAL);
        assert_eq!(c::zs_store(pool, &mut h, data.as_ptr().cast(), usize::MAX, 0), -libc::ENOSPC);
        assert_eq!(c::zs_store(pool, &mut h, data.as_ptr().cast(), 16, 0), 0);
        assert_eq!(c::zs_last_error(), 0);
        let mut copy = zs_handle { obj: h.obj };
        assert_eq!(c::zs_free(pool, &mut copy), -EINVAL);
        let mut garbage = zs_handle { obj: 0xdead_beef_0000_0001 };
        assert_eq!(c::zs_free(pool, &mut garbage), -EINVAL);
        assert!(c::zs_obj_read_begin(pool, &mut h, 17, null_mut()).is_null());
        assert_eq!(c::zs_free(pool, &mut h), 0);
        assert_eq!(c::zs_free(pool, &mut h), 0); // empty: no-op
        assert_eq!(c::zs_free(pool, &mut copy), -EINVAL); // stale copy
        let mut bad = cfg;
        bad.max_pages_per_zspage = 17;
        assert!(c::zs_create_pool_with_config(c"bad".as_ptr(), &bad).is_null());
        assert!(message().contains("chain_size"), "{}", message());
        assert_eq!(c::zs_version(), zsmalloc::ZS_ABI_VERSION);
        assert!(!c::zs_strerror(i32::MIN).is_null());
        c::zs_destroy_pool(pool);
        c::zs_destroy_pool(null_mut());
    }
}

#[test]
fn structs_are_read_and_written_at_the_callers_size() {
    use zsmalloc::{
        zs_class_stats, ZS_CLASS_STATS_SIZE_VER1, ZS_POOL_CONFIG_SIZE_VER1, ZS_POOL_STATS_SIZE_VER1,
    };
    // A caller built against a later, longer struct: 64 bytes more than this library knows.
    #[repr(C)]
    struct Longer<T> {
        known: T,
        later: [u8; 64],
    }
    // SAFETY: every pointer is live for its call and writable or readable for the size passed.
    unsafe {
        let mut cfg = Longer { known: config(), later: [0xa5; 64] };
        let size = std::mem::size_of_val(&cfg);
        assert_eq!(c::zs_pool_config_init_sized(&mut cfg.known, size), 0);
        assert_eq!(cfg.known, config());
        assert_eq!(cfg.later, [0; 64], "fields this library does not know are zeroed");
        let pool = c::zs_create_pool_with_config_sized(c"t".as_ptr(), &cfg.known, size);
        assert!(!pool.is_null(), "{}", message());
        c::zs_destroy_pool(pool);
        cfg.later[10] = 1;
        let refused = c::zs_create_pool_with_config_sized(c"t".as_ptr(), &cfg.known, size);
        assert!(refused.is_null());
        assert!(message().contains("beyond"), "{}", message());
        // Shorter than the first version: refused, nothing written.
        let mut short = [0x5au8; 64];
        let p = short.as_mut_ptr().cast::<zs_pool_config>();
        assert_eq!(c::zs_pool_config_init_sized(p, ZS_POOL_CONFIG_SIZE_VER1 - 1), -EINVAL);
        assert_eq!(short, [0x5a; 64]);
        assert_eq!(c::zs_pool_config_from_env_sized(p, 0), -EINVAL);

        let pool = c::zs_create_pool_with_config(c"t".as_ptr(), &config());
        let mut h = zs_handle::default();
        assert_eq!(c::zs_store(pool, &mut h, [7u8; 100].as_ptr().cast(), 100, 0), 0);
        let mut st = Longer { known: zs_pool_stats::default(), later: [0xa5; 64] };
        let size = std::mem::size_of_val(&st);
        assert_eq!(c::zs_pool_stats_sized(pool, &mut st.known, size), 0);
        assert_eq!((st.known.objs_inuse, st.later), (1, [0; 64]));
        assert_eq!(
            c::zs_pool_stats_sized(pool, &mut st.known, ZS_POOL_STATS_SIZE_VER1 - 8),
            -EINVAL
        );
        let mut cs = Longer { known: zs_class_stats::default(), later: [0xa5; 64] };
        let size = std::mem::size_of_val(&cs);
        assert_eq!(c::zs_class_stats_sized(pool, 0, &mut cs.known, size), 0);
        assert_eq!(cs.later, [0; 64]);
        let mut plain = zs_class_stats::default();
        assert_eq!(c::zs_class_stats(pool, 0, &mut plain), 0);
        assert_eq!(plain, cs.known);
        assert_eq!(
            c::zs_class_stats_sized(pool, 0, &mut plain, ZS_CLASS_STATS_SIZE_VER1 - 1),
            -EINVAL
        );
        assert_eq!(c::zs_free(pool, &mut h), 0);
        c::zs_destroy_pool(pool);
    }
}

/// The sizes of `T` accepted by a `_sized` function: those ending on one of `boundaries` (the
/// field boundaries from version 1 to this library's struct), and above it multiples of 8.
fn accepted(size: usize, boundaries: &[usize]) -> bool {
    let ours = *boundaries.last().unwrap();
    boundaries.contains(&size) || (size > ours && size.is_multiple_of(8) && size <= 4096)
}

#[test]
fn a_size_that_ends_inside_a_field_is_refused_and_every_field_boundary_accepted() {
    use zsmalloc::{zs_class_stats, ZS_CLASS_STATS_SIZE_VER6, ZS_POOL_CONFIG_SIZE_VER6};
    let config_ends = [32, 36, 40, 44, 48, 56, 64, 68, 72];
    // SAFETY: every struct is a buffer of 128 bytes (or 256), longer than any size passed, its
    // tail zero; the pool pointers are live or NULL.
    unsafe {
        for size in 0..=ZS_POOL_CONFIG_SIZE_VER6 + 16 {
            let mut buf = [0u8; 128];
            buf.as_mut_ptr().cast::<zs_pool_config>().write_unaligned(config());
            let cfg = buf.as_ptr().cast::<zs_pool_config>();
            let pool = c::zs_create_pool_with_config_sized(c"t".as_ptr(), cfg, size);
            assert_eq!(!pool.is_null(), accepted(size, &config_ends), "size {size}: {}", message());
            if pool.is_null() {
                assert_eq!(c::zs_last_error(), -EINVAL);
                assert!(message().contains(&format!("size {size} ")), "{}", message());
            }
            c::zs_destroy_pool(pool);
            let mut out = [0xa5u8; 128];
            let rc = c::zs_pool_config_init_sized(out.as_mut_ptr().cast(), size);
            assert_eq!(rc == 0, accepted(size, &config_ends), "init, size {size}");
            if rc != 0 {
                assert_eq!(out, [0xa5; 128], "nothing written at a refused size {size}");
            }
        }
        let half = c::zs_create_pool_with_config_sized(c"t".as_ptr(), &config(), 66);
        assert!(half.is_null());
        let want = "struct zs_pool_config size 66 ends inside multi_page_size (bytes 64..68): \
                    the size of a struct of some ABI version ends on a field boundary, one of \
                    32, 36, 40, 44, 48, 56, 64, 68, 72, or is a larger multiple of 8 up to 4096";
        assert!(message().ends_with(want), "{}", message());

        let pool = c::zs_create_pool_with_config(c"t".as_ptr(), &config());
        for size in 90..=ZS_CLASS_STATS_SIZE_VER6 + 16 {
            let mut out = [0xa5u8; 256];
            let rc = c::zs_pool_stats_sized(pool, out.as_mut_ptr().cast(), size);
            assert_eq!(rc == 0, accepted(size, &[96, 104]), "pool stats, size {size}");
            let rc = c::zs_class_stats_sized(pool, 0, out.as_mut_ptr().cast(), size);
            let ends = [176, 184, 192, 200, 204, 208];
            assert_eq!(rc == 0, accepted(size, &ends), "class stats, size {size}");
            if !accepted(size, &[96, 104]) && !accepted(size, &ends) {
                assert_eq!(out, [0xa5; 256], "nothing written at a refused size {size}");
            }
        }
        let mut row = zs_class_stats::default();
        assert_eq!(c::zs_class_stats_sized(pool, 0, &mut row, 180), -EINVAL);
        assert!(message().contains("size 180 ends inside reads (bytes 176..184)"), "{}", message());
        c::zs_destroy_pool(pool);
    }
}
