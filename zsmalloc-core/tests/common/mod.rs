//! Helpers shared by the integration tests (each test file uses a different subset).
#![allow(dead_code)]

pub mod backend_calls;
pub mod counted;
pub mod kept;
pub mod model_ops;
pub mod reference_model;

/// Deterministic bytes for object number `seed` (xorshift; distinct seeds give distinct streams).
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xa076_1d64_78bd_642f;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
