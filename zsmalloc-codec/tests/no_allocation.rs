//! The allocation contract: after `Codec::new`, compressing and decompressing — successes and
//! refusals alike — allocate nothing. Every allocation of this process is counted: Rust's
//! (a counting global allocator) and the C libraries' (`malloc`, `calloc` and `realloc` are
//! this binary's own, forwarding to glibc's), so libzstd growing a context would show.
//! Its own process, without the test harness, so no other thread allocates meanwhile.

use std::alloc::{GlobalAlloc, Layout, System};
use std::os::raw::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use zsmalloc_codec::{bound, Codec, Compressor};

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

struct Counting;

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's layout contract is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as for `alloc`; `ptr` came from this allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

extern "C" {
    fn __libc_malloc(size: usize) -> *mut c_void;
    fn __libc_calloc(n: usize, size: usize) -> *mut c_void;
    fn __libc_realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
}

/// The process's `malloc` (the C libraries linked in call it): glibc's, counted.
#[no_mangle]
pub extern "C" fn malloc(size: usize) -> *mut c_void {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: glibc's allocator under its exported name, with the caller's argument.
    unsafe { __libc_malloc(size) }
}

#[no_mangle]
pub extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: as for `malloc`.
    unsafe { __libc_calloc(n, size) }
}

/// # Safety
/// `ptr` is null or came from this process's `malloc` family (glibc's, as above).
#[no_mangle]
pub unsafe extern "C" fn realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: the caller's pointer came from glibc's allocator (every `malloc` here is).
    unsafe { __libc_realloc(ptr, size) }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| ((i / 3) as u8).wrapping_mul(seed) ^ (i >> 9) as u8).collect()
}

fn main() {
    // The counters must see allocations at all, or a zero below would prove nothing.
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    // SAFETY: a plain C allocation, freed at once.
    unsafe { libc::free(std::hint::black_box(libc::malloc(64))) };
    drop(std::hint::black_box(vec![0u8; 64]));
    assert!(ALLOCATIONS.load(Ordering::Relaxed) >= before + 2, "the counters count nothing");
    // And they see libzstd's own: an ordinary context allocates its workspace when it first
    // compresses (what the codec's static contexts never do).
    let mut ordinary = zstd_safe::CCtx::create();
    let (page, mut packed) = (pattern(4096, 9), vec![0u8; bound(4096)]);
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    ordinary.compress2(&mut packed[..], &page).expect("compress");
    assert!(ALLOCATIONS.load(Ordering::Relaxed) > before, "libzstd's malloc is not counted");

    let inputs: Vec<Vec<u8>> = [1usize, 4096, 16384, 65536]
        .iter()
        .enumerate()
        .map(|(i, &n)| pattern(n, i as u8 * 37 + 5))
        .collect();
    let junk = pattern(300, 201);
    let mut out = vec![0u8; bound(65536)];
    let mut back = vec![0u8; 65536];
    let mut tiny = [0u8; 4];
    let too_long = vec![0u8; 65537];
    for c in Compressor::ALL.iter().copied() {
        for level in [1, 3, 19] {
            let mut k = Codec::new(c, level, 65536).expect("codec");
            let start = ALLOCATIONS.load(Ordering::Relaxed);
            for round in 0..3 {
                // Sizes up and down: a context sized for the first would have to grow.
                for data in inputs.iter().chain(inputs.iter().rev()) {
                    let n = k.compress(data, &mut out).expect("compress");
                    let m = k.decompress(&out[..n], &mut back).expect("decompress");
                    assert_eq!(&back[..m], &data[..]);
                    assert!(k.decompress(&out[..n / 2], &mut back).is_err() || n < 4);
                    assert!(k.decompress(&out[..n], &mut tiny).is_err() || m <= tiny.len());
                }
                let _ = std::hint::black_box(k.decompress(&junk, &mut back));
                assert!(k.compress(&inputs[3], &mut tiny).is_err());
                assert!(k.compress(&too_long, &mut out).is_err(), "round {round}");
            }
            let made = ALLOCATIONS.load(Ordering::Relaxed) - start;
            assert_eq!(made, 0, "{} level {level}: {made} allocations after new", c.name());
        }
    }
    println!("no_allocation: lz4, lzo, zstd compress and decompress allocate nothing after new");
}
