//! Deterministic object contents: what the workloads write and verify on read.
//!
//! An object's bytes are a window of a seeded random pattern, at an offset chosen by the
//! object's key (its store sequence number, mixed). Because an object's content is a slice of
//! the pattern as it is, a store copies straight from the pattern into the pool, with no
//! staging copy of its own, and a read compares the object with the pattern in place.
//!
//! The pattern is 4,096 offsets plus a page (8 KiB with 4 KiB pages), small enough to stay in
//! the first-level cache while the pool's pages stream through it: every store and every
//! verification reads a window of it. (A 1 MiB pattern, read back from the second-level cache
//! or beyond, made the main run's user time about 15% longer.) Two objects share their bytes only
//! when their keys pick the same offset, one chance in 4,096: a misplaced, stale or
//! overwritten object fails verification 4,095 times in 4,096, so a fault of the pool, which
//! repeats, is caught at its first few objects.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// SplitMix64: a cheap, well-mixed 64-bit hash.
#[inline]
pub fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Offsets an object's window may start at.
const OFFSETS: usize = 1 << 12;

/// The content generator of one run.
pub struct Content {
    pattern: Vec<u8>,
    /// The longest object.
    longest: usize,
    seed: u64,
}

impl Content {
    /// Objects up to `longest` bytes.
    pub fn new(seed: u64, longest: usize) -> Self {
        let mut pattern = vec![0u8; OFFSETS + longest];
        ChaCha8Rng::seed_from_u64(seed ^ 0x7a73_6d61_6c6c_6f63).fill_bytes(&mut pattern);
        Content { pattern, longest, seed }
    }

    /// The content of object `id`, `len <= longest` bytes: a slice of the pattern.
    #[inline]
    pub fn bytes(&self, id: u64, len: usize) -> &[u8] {
        debug_assert!(len <= self.longest);
        let off = (mix64(self.seed ^ mix64(id)) % OFFSETS as u64) as usize;
        &self.pattern[off..off + len]
    }

    /// Writes the content of object `id` into `out`, `len <= longest` bytes.
    pub fn fill(&self, id: u64, len: usize, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(self.bytes(id, len));
    }

    /// Whether `data` is exactly the content of object `id`.
    pub fn verify(&self, id: u64, data: &[u8]) -> bool {
        data.len() <= self.longest && data == self.bytes(id, data.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_round_trips_and_differs() {
        let c = Content::new(7, 4096);
        let mut a = Vec::new();
        c.fill(3, 100, &mut a);
        assert!(c.verify(3, &a));
        assert!(!c.verify(4, &a));
        let mut one = Vec::new();
        c.fill(9, 1, &mut one);
        assert!(c.verify(9, &one));
        let mut full = Vec::new();
        c.fill(1, 4096, &mut full);
        assert!(c.verify(1, &full));
        assert!(!c.verify(1, &full[1..]));
    }
}
