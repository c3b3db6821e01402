//! Deterministic object contents: what the workloads write and verify on read.
//!
//! Each object's bytes are a window of a seeded random pattern chosen by (slot, generation),
//! with its first bytes mixed with a tag, so a misplaced or stale object never verifies.

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

/// The content generator of one run.
pub struct Content {
    pattern: Vec<u8>,
    page: usize,
    seed: u64,
}

impl Content {
    pub fn new(seed: u64, page: usize) -> Self {
        let mut pattern = vec![0u8; 2 * page + 8];
        ChaCha8Rng::seed_from_u64(seed ^ 0x7a73_6d61_6c6c_6f63).fill_bytes(&mut pattern);
        Content { pattern, page, seed }
    }

    #[inline]
    fn key(&self, id: u64) -> u64 {
        mix64(self.seed ^ mix64(id))
    }

    /// Writes the content of object `id` (e.g. its store sequence number), `len <= page` bytes.
    pub fn fill(&self, id: u64, len: usize, out: &mut Vec<u8>) {
        let key = self.key(id);
        let off = (key % self.page as u64) as usize;
        out.clear();
        out.extend_from_slice(&self.pattern[off..off + len]);
        for (b, t) in out.iter_mut().zip(key.to_le_bytes()) {
            *b ^= t;
        }
    }

    /// Writes the content of object `id` into `out` (its whole length, `<= page` bytes).
    pub fn fill_into(&self, id: u64, out: &mut [u8]) {
        let key = self.key(id);
        let off = (key % self.page as u64) as usize;
        out.copy_from_slice(&self.pattern[off..off + out.len()]);
        for (b, t) in out.iter_mut().zip(key.to_le_bytes()) {
            *b ^= t;
        }
    }

    /// Whether `data` is exactly the content of object `id`.
    pub fn verify(&self, id: u64, data: &[u8]) -> bool {
        let key = self.key(id);
        let off = (key % self.page as u64) as usize;
        let Some(expect) = self.pattern.get(off..off + data.len()) else {
            return false;
        };
        let head = data.len().min(8);
        let tag = key.to_le_bytes();
        data[..head].iter().zip(&expect[..head]).zip(tag).all(|((d, e), t)| *d == *e ^ t)
            && data[head..] == expect[head..]
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
