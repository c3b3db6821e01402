//! Where the reserve is: its start, length and high-water mark, readable without the heap's lock
//! by the heap (which makes the reserve and hands its pages out) and by the tier (which registers
//! it and walks its pages).

use std::sync::atomic::{AtomicUsize, Ordering};

/// The reserve's start and length (0 before the heap made it).
static BASE: AtomicUsize = AtomicUsize::new(0);
static LEN: AtomicUsize = AtomicUsize::new(0);
/// Pages below this were ever handed out (the tier scans no further).
static HIGH_WATER: AtomicUsize = AtomicUsize::new(0);

pub fn base() -> usize {
    BASE.load(Ordering::Acquire)
}

pub fn reserve_len() -> usize {
    LEN.load(Ordering::Acquire)
}

pub fn high_water_pages() -> usize {
    HIGH_WATER.load(Ordering::Acquire)
}

/// Whether `p` lies in the reserve.
#[inline]
pub fn contains(p: usize) -> bool {
    let b = base();
    b != 0 && p >= b && p - b < reserve_len()
}

/// Publishes the reserve the heap just made (once).
pub fn made(base: usize, len: usize) {
    LEN.store(len, Ordering::Release);
    BASE.store(base, Ordering::Release);
}

/// Pages up to `top` were handed out.
#[inline]
pub fn handed_out(top: usize) {
    HIGH_WATER.fetch_max(top, Ordering::AcqRel);
}
