//! The read loops the benchmarks time, one per layer and baseline (each `#[inline(never)]`, so a
//! profile shows it whole), and the checks that a model reads back what the workload wrote.

use super::*;

/// Reads through `RegisteredModel`: register on the header, copy the payload out, unregister.
#[inline(never)]
pub fn read_registered(
    m: &RegisteredModel,
    order: &[u32],
    at: &mut usize,
    count: u64,
    out: &mut [u8],
) {
    for _ in 0..count {
        let i = next_of(order, at) as usize;
        let (p, len) = (m.blocks[i], m.lens[i] as usize);
        // SAFETY: `p` is a live block of `fill`: an aligned header word, then `len` bytes; the
        // header is only ever accessed atomically after `fill`, and `out` holds `len` bytes.
        unsafe {
            let header = &*p.cast::<std::sync::atomic::AtomicU64>();
            header.fetch_add(REGISTERED_READER, std::sync::atomic::Ordering::Acquire);
            std::ptr::copy_nonoverlapping(p.add(8), out.as_mut_ptr(), len);
            header.fetch_sub(REGISTERED_READER, std::sync::atomic::Ordering::Release);
        }
        std::hint::black_box(&mut *out);
    }
}

/// Whether each object of a safe model is spanning (kernel rule: header + payload cross a page
/// boundary), as the pool reports it.
pub fn spanning_flags(m: &SafeModel<'_>) -> Vec<bool> {
    m.handles
        .iter()
        .map(|h| m.pool.read_sg(h.as_ref().expect("live")).expect("read_sg").spanning())
        .collect()
}

/// Reads `count` objects in `order` (from `*at`, wrapping) through the safe layer: a read
/// section plus copying the bytes out into `out`.
#[inline(never)]
pub fn read_safe(
    m: &SafeModel<'_>,
    order: &[u32],
    at: &mut usize,
    count: u64,
    local: &mut [u8],
    out: &mut [u8],
) {
    for _ in 0..count {
        let i = next_of(order, at) as usize;
        let h = m.handles[i].as_ref().expect("live");
        let s = m.pool.read(h, local).expect("read");
        out[..s.len()].copy_from_slice(&s);
        drop(s);
        std::hint::black_box(&mut *out);
    }
}

/// As `read_safe` with `Pool::read_into` (the safe layer's one-call copy-out).
#[inline(never)]
pub fn read_into(m: &SafeModel<'_>, order: &[u32], at: &mut usize, count: u64, out: &mut [u8]) {
    for _ in 0..count {
        let i = next_of(order, at) as usize;
        let h = m.handles[i].as_ref().expect("live");
        m.pool.read_into(h, out).expect("read_into");
        std::hint::black_box(&mut *out);
    }
}

/// As `read_safe` through the raw layer (`read_begin_raw`, copy, `read_end_raw`), the length
/// known to the caller as a C caller knows it.
#[inline(never)]
pub fn read_raw(
    m: &RawModel<'_>,
    order: &[u32],
    at: &mut usize,
    count: u64,
    local: &mut [u8],
    out: &mut [u8],
) {
    for _ in 0..count {
        let i = next_of(order, at) as usize;
        let (h, len) = (&m.words[i], m.lens[i] as usize);
        // SAFETY: `h` holds a live object of `len` bytes; `local` has room for len + 8 bytes
        // (a page plus a header); the returned pointer is read for `len` bytes before the
        // matching `read_end_raw`, and `out` holds at least `len` bytes.
        unsafe {
            let p = m.pool.read_begin_raw(h, len, local.as_mut_ptr()).expect("read_begin_raw");
            std::ptr::copy_nonoverlapping(p, out.as_mut_ptr(), len);
            m.pool.read_end_raw(h, Some(len)).expect("read_end_raw");
        }
        std::hint::black_box(&mut *out);
    }
}

/// Baseline read: copying the same bytes out of the `malloc`'d block.
#[inline(never)]
pub fn read_malloc(m: &MallocModel, order: &[u32], at: &mut usize, count: u64, out: &mut [u8]) {
    // SAFETY: the model's blocks are live, `lens[i]` bytes each.
    unsafe { copy_blocks(&m.ptrs, &m.lens, order, at, count, out) }
}

/// The baseline's copy out of the pool's own objects, through addresses taken once
/// (`direct_addresses`) instead of read sections: the pool's layout without its protocol.
///
/// # Safety
/// Nothing has freed or moved the objects since the addresses were taken.
#[inline(never)]
pub unsafe fn read_direct(
    addrs: &[*mut u8],
    lens: &[u32],
    order: &[u32],
    at: &mut usize,
    count: u64,
    out: &mut [u8],
) {
    // SAFETY: forwarded contract.
    unsafe { copy_blocks(addrs, lens, order, at, count, out) }
}

/// The in-place address of each of a raw model's non-spanning objects (null for the others).
pub fn direct_addresses(m: &RawModel<'_>, local: &mut [u8]) -> Vec<*mut u8> {
    (m.words.iter().zip(&m.lens))
        .map(|(h, &len)| {
            // SAFETY: `h` holds a live object of `len` bytes; `local` has room for it and its
            // header; the section ends at once.
            unsafe {
                let p = m.pool.read_begin_raw(h, len as usize, local.as_mut_ptr()).expect("read");
                m.pool.read_end_raw(h, Some(len as usize)).expect("read end");
                if p == local.as_ptr().add(8) {
                    std::ptr::null_mut()
                } else {
                    p.cast_mut()
                }
            }
        })
        .collect()
}

/// `count` copies of `lens[i]` bytes from `ptrs[i]` into `out`, `i` taken from `order` at `*at`.
///
/// # Safety
/// `ptrs[i]` is readable for `lens[i]` bytes for every `i` in `order`; `out` holds that many.
#[inline(always)]
unsafe fn copy_blocks(
    ptrs: &[*mut u8],
    lens: &[u32],
    order: &[u32],
    at: &mut usize,
    count: u64,
    out: &mut [u8],
) {
    for _ in 0..count {
        let i = next_of(order, at) as usize;
        let len = lens[i] as usize;
        // SAFETY: the caller's promise.
        unsafe { std::ptr::copy_nonoverlapping(ptrs[i], out.as_mut_ptr(), len) };
        std::hint::black_box(&mut *out);
    }
}

/// `read_malloc` with `pad` extra single-cycle instructions per read (register adds in six
/// independent chains, 12 per round; `pad` a multiple of 12), before the copy: how the baseline
/// loop's time grows with the instructions a read adds, whatever they do (scripts/bench-window.sh).
#[inline(never)]
pub fn read_malloc_padded(
    m: &MallocModel,
    order: &[u32],
    at: &mut usize,
    count: u64,
    out: &mut [u8],
    pad: usize,
) {
    assert!(pad.is_multiple_of(12), "OPS_PAD must be a multiple of 12");
    #[cfg(not(target_arch = "x86_64"))]
    assert!(pad == 0, "OPS_PAD needs x86_64");
    for _ in 0..count {
        let i = next_of(order, at) as usize;
        let len = m.lens[i] as usize;
        let mut r = [i, i + 1, i + 2, i + 3, i + 4, i + 5];
        for _ in 0..pad / 12 {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: register arithmetic only (no memory, no stack, no flags anyone reads).
            unsafe {
                std::arch::asm!(
                    "add {0}, 1", "add {1}, 1", "add {2}, 1", "add {3}, 1", "add {4}, 1", "add {5}, 1",
                    "add {0}, 1", "add {1}, 1", "add {2}, 1", "add {3}, 1", "add {4}, 1", "add {5}, 1",
                    inout(reg) r[0], inout(reg) r[1], inout(reg) r[2],
                    inout(reg) r[3], inout(reg) r[4], inout(reg) r[5],
                    options(nomem, nostack),
                );
            }
        }
        std::hint::black_box(r);
        // SAFETY: `ptrs[i]` is a live block of `lens[i]` bytes; `out` holds at least that many.
        unsafe { std::ptr::copy_nonoverlapping(m.ptrs[i], out.as_mut_ptr(), len) };
        std::hint::black_box(&mut *out);
    }
}

/// Buffers for reads: a local copy (page + header) and the destination.
pub fn read_buffers() -> (Vec<u8>, Vec<u8>) {
    (vec![0; MAX_SIZE as usize + 64], vec![0; MAX_SIZE as usize + 64])
}

/// Checks a model's live objects all read back as the workload wrote them (used once per setup
/// so a broken benchmark cannot report a fast wrong answer).
pub fn verify_safe(m: &SafeModel<'_>, w: &Workload, sample: usize) {
    let mut out = vec![0; MAX_SIZE as usize];
    for i in (0..m.handles.len()).step_by((m.handles.len() / sample.max(1)).max(1)) {
        let h = m.handles[i].as_ref().expect("live");
        let n = m.pool.read_into(h, &mut out).expect("read_into");
        assert_eq!(n, m.lens[i] as usize);
        assert_eq!(&out[..n], &w.data[..n], "object {i} corrupted");
    }
}
