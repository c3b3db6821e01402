//! The arena's address space: one range reserved per pool (PROT_NONE until used), made
//! accessible in steps, backed by anonymous memory or by the arena's memfd (`memfd.rs`), and
//! unmapped, with any read announced in it retracted, when the arena goes.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::memfd::Memfd;

/// Address space reserved per pool (PROT_NONE until used): 64 GiB of simulated pages at most.
const RESERVE_BYTES: usize = 1 << 36;
/// Smallest reservation accepted when the address space is limited (`ulimit -v`).
pub const MIN_RESERVE_BYTES: usize = 1 << 28;
/// The most one pool reserves ([`set_max_pool_reservation`]).
static MAX_RESERVE: AtomicUsize = AtomicUsize::new(RESERVE_BYTES);

/// Sets the most address space each pool created from now on reserves for its pages: `bytes`
/// rounded down to a multiple of 256 MiB, between 256 MiB and 64 GiB (the default). A pool
/// takes the largest range the system grants up to this; under an address-space limit
/// (`ulimit -v`) a program that runs several pools at once gives each its share, so that the
/// first pools do not take the space the others need.
pub fn set_max_pool_reservation(bytes: usize) {
    let steps = bytes.clamp(MIN_RESERVE_BYTES, RESERVE_BYTES) / COMMIT_BYTES;
    MAX_RESERVE.store(steps * COMMIT_BYTES, Ordering::Relaxed);
}

/// Reserved space is made accessible in steps of this many bytes.
pub(super) const COMMIT_BYTES: usize = 1 << 28;
/// The reserved range, unmapped on drop.
pub(super) struct Reservation {
    pub base: NonNull<u8>,
    pub len: usize,
    /// The memfd backing, if any: committed steps are its shared mappings.
    pub memfd: Option<Memfd>,
}

// SAFETY: the range is plain memory owned by the arena; synchronisation of its contents is the
// pool's protocol (atomic header words, owner-only payload copies).
unsafe impl Send for Reservation {}
// SAFETY: as above; `Reservation` itself is immutable after creation.
unsafe impl Sync for Reservation {}

impl Reservation {
    /// Reserves the largest range the system grants from `MAX_RESERVE` down, halving it.
    pub fn new(memfd: Option<Memfd>) -> Option<Reservation> {
        if crate::fault::fails(crate::fault::Point::Reserve) {
            return None;
        }
        let mut len = MAX_RESERVE.load(Ordering::Relaxed);
        while len >= MIN_RESERVE_BYTES {
            // SAFETY: an anonymous private PROT_NONE mapping at an address the kernel picks; the
            // result is checked against MAP_FAILED before use.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_NONE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            if ptr != libc::MAP_FAILED {
                return NonNull::new(ptr.cast()).map(|base| Reservation { base, len, memfd });
            }
            // Whole commit steps, so that every step made accessible lies inside the range.
            len = len / 2 / COMMIT_BYTES * COMMIT_BYTES;
        }
        None
    }

    /// Makes `[offset, offset + len)` readable and writable.
    pub fn commit(&self, offset: usize, len: usize) -> bool {
        if crate::fault::fails(crate::fault::Point::Commit) {
            return false;
        }
        debug_assert!(offset + len <= self.len);
        if let Some(m) = &self.memfd {
            // SAFETY: as below: our own reservation, aligned, not yet in use.
            return unsafe { m.commit(self.base.as_ptr(), offset, len) };
        }
        // SAFETY: the range lies inside our own reservation and is page-aligned (offset and len
        // are multiples of COMMIT_BYTES); nothing else maps it.
        unsafe {
            libc::mprotect(
                self.base.as_ptr().add(offset).cast(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
            ) == 0
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // A section left open on this pool (a broken contract) must not make a header at the
        // same address in a later mapping look read forever.
        let base = self.base.as_ptr() as usize;
        crate::announce::retract_range(base, base + self.len);
        // SAFETY: `base`/`len` are exactly what mmap returned; nothing references the range once
        // the arena (its only owner) is dropped.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}
