//! The compressors: the kernel's `lz4`, `lzo` and `zstd`, by name, and zstd's levels.

use std::ops::RangeInclusive;

/// A compression algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compressor {
    /// liblz4's `LZ4_compress_default` (acceleration 1, zram's default).
    Lz4,
    /// liblzo2's LZO1X-1, the algorithm of the kernel's `lzo`.
    Lzo,
    /// libzstd at a level ([`DEFAULT_ZSTD_LEVEL`] unless told).
    Zstd,
}

/// zram's default zstd level (`ZSTD_CLEVEL_DEFAULT`).
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;

/// The zstd levels a codec accepts (libzstd's regular ones; zram takes no negative level).
pub const ZSTD_LEVELS: RangeInclusive<i32> = 1..=22;

impl Compressor {
    /// Every compressor, in the order messages name them.
    pub const ALL: &'static [Compressor] = &[Compressor::Lz4, Compressor::Lzo, Compressor::Zstd];

    pub fn name(self) -> &'static str {
        match self {
            Compressor::Lz4 => "lz4",
            Compressor::Lzo => "lzo",
            Compressor::Zstd => "zstd",
        }
    }

    /// `lz4, zstd`: the names of `among`, for messages.
    pub fn names(among: &[Compressor]) -> String {
        among.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ")
    }
}
