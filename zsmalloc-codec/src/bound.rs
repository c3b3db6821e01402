//! What each compressor may write for an input: the output buffer a caller provides.

use crate::compressor::Compressor;
use crate::{lz4, lzo, zstd};

impl Compressor {
    /// The largest output of this compressor for a `len`-byte input (0 when the library
    /// takes no input that long).
    pub fn bound(self, len: usize) -> usize {
        match self {
            Compressor::Lz4 => lz4::bound(len),
            Compressor::Lzo => lzo::bound(len),
            Compressor::Zstd => zstd::bound(len),
        }
    }
}

/// The largest output of any compressor for a `len`-byte input: a buffer this long serves
/// every [`Compressor`].
pub fn bound(len: usize) -> usize {
    Compressor::ALL.iter().map(|c| c.bound(len)).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_bound_covers_every_compressor() {
        for len in [0usize, 1, 4096, 65536] {
            let b = bound(len);
            assert!(Compressor::ALL.iter().all(|c| c.bound(len) <= b), "{len}");
            assert!(b > len);
        }
        // liblzo2's documented bound is the largest of the three.
        assert_eq!(bound(4096), 4096 + 4096 / 16 + 64 + 3);
    }
}
