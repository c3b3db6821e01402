//! The mailing-list threads' figures, reproduced to the object: the RFC "zsmalloc: size-classes
//! chain-length tunings" (January 2026) BASE/PATCHED table and its class rows.

use std::sync::atomic::AtomicUsize;
use zsmalloc_core::{ClassTable, Heuristic, PolicyRef, Pool, PoolConfig, HANDLE_SIZE};

/// The figures the kernel's `zsmalloc_test` module prints.
#[derive(Debug, PartialEq, Eq)]
struct KernelTestFigures {
    objects: u64,
    pages: u64,
    bytes: u64,
    utilization_permille: u64,
    spanning: u64,
    memcpy_bytes: u64,
}

/// The `zsmalloc_test` pattern: for each size all `n` objects, then read and verify every object
/// in store order, detecting spanning the kernel way (pointer == local_copy + ZS_HANDLE_SIZE).
fn kernel_test(cfg: PoolConfig, lo: usize, hi: usize, step: usize, n: usize) -> KernelTestFigures {
    let pool = Pool::new(cfg).unwrap();
    let page = pool.config().page_size as u64;
    let count = (lo..=hi).step_by(step).count() * n;
    // Raw handle words in our own (never reallocated) record, as zram keeps them in its table.
    let handles: Vec<AtomicUsize> = (0..count).map(|_| AtomicUsize::new(0)).collect();
    let mut lens = Vec::with_capacity(count);
    let mut bytes = 0u64;
    let fill = |i: usize, len: usize| -> Vec<u8> { (0..len).map(|j| (i * 31 + j) as u8).collect() };
    for size in (lo..=hi).step_by(step) {
        for _ in 0..n {
            let i = lens.len();
            // SAFETY: `handles` is never moved or freed while objects live.
            unsafe { pool.store_raw(&handles[i], &fill(i, size)).unwrap() };
            lens.push(size);
            bytes += size as u64;
        }
    }
    let pages = pool.total_pages();
    let mut local = vec![0u8; page as usize];
    let (mut spanning, mut memcpy) = (0u64, 0u64);
    for (i, &len) in lens.iter().enumerate() {
        // SAFETY: `local` is a page long; the section ends before the next iteration.
        unsafe {
            let p = pool.read_begin_raw(&handles[i], len, local.as_mut_ptr()).unwrap();
            if p == local.as_ptr().add(HANDLE_SIZE) {
                spanning += 1;
                memcpy += len as u64;
            }
            assert_eq!(std::slice::from_raw_parts(p, len), &fill(i, len)[..], "object {i}");
            pool.read_end_raw(&handles[i], Some(len)).unwrap();
        }
    }
    let stats = pool.stats();
    assert_eq!((stats.reads_spanning, stats.read_copy_bytes), (spanning, memcpy));
    assert_eq!(stats.bytes_stored, bytes);
    for h in &handles {
        // SAFETY: every word holds an object of this pool.
        unsafe { pool.free_raw(h).unwrap() };
    }
    assert_eq!(pool.total_pages(), 0);
    KernelTestFigures {
        objects: count as u64,
        pages,
        bytes,
        utilization_permille: 1000 * bytes / (pages * page),
        spanning,
        memcpy_bytes: memcpy,
    }
}

fn chain10(policy: PolicyRef) -> PoolConfig {
    PoolConfig { chain_size: 10, chain_policy: policy, ..Default::default() }
}

#[test]
fn rfc_base_figures_classic() {
    let f = kernel_test(chain10(PolicyRef::new(zsmalloc_core::Classic)), 32, 4080, 16, 1337);
    assert_eq!(
        f,
        KernelTestFigures {
            objects: 339598,
            pages: 175111,
            bytes: 698213488,
            utilization_permille: 973,
            spanning: 110377,
            memcpy_bytes: 278318624,
        }
    );
}

#[test]
fn rfc_patched_figures_heuristic() {
    let f = kernel_test(chain10(PolicyRef::new(Heuristic)), 32, 4080, 16, 1337);
    assert_eq!(
        f,
        KernelTestFigures {
            objects: 339598,
            pages: 175920,
            bytes: 698213488,
            utilization_permille: 968,
            spanning: 103256,
            memcpy_bytes: 265378608,
        }
    );
}

/// RFC 1/2's table: 16K pages, chain 8, rows (logical size, class size, chain, objs, tail).
#[test]
fn rfc_class_table_rows() {
    let rows = |delta: u32| {
        let t = ClassTable::new(&PoolConfig {
            page_size: 16384,
            chain_size: 8,
            class_delta: delta,
            ..Default::default()
        })
        .unwrap();
        t.logical_rows(16)
            .filter(|r| (1072..=1120).contains(&r.logical_size))
            .map(|r| {
                let c = r.class;
                (
                    r.logical_size,
                    c.size,
                    c.pages_per_zspage,
                    c.objs_per_zspage,
                    c.tail_waste(16384),
                    r.merge_waste,
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        rows(64),
        vec![
            (1072, 1120, 8, 117, 32, 5616),
            (1088, 1120, 8, 117, 32, 3744),
            (1104, 1120, 8, 117, 32, 1872),
            (1120, 1120, 8, 117, 32, 0),
        ]
    );
    let delta16 = rows(16);
    assert_eq!(
        delta16,
        vec![
            (1072, 1072, 4, 61, 144, 0),
            (1088, 1088, 1, 15, 64, 0),
            (1104, 1104, 6, 89, 48, 0),
            (1120, 1120, 8, 117, 32, 0),
        ]
    );
}
