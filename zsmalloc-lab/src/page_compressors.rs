//! The compressors of the 4K-page commands — `pages`, `dist`'s floor and `cost` — out of the
//! workspace's ([`zsmalloc_codec`]): liblz4 and libzstd, the two the cost study reports. lzo
//! (liblzo2's LZO1X-1) is `folios`' third.

use zsmalloc_codec::Compressor;

/// What `pages` and `cost` accept for `--compressor`.
pub const PAGE_COMPRESSORS: &[Compressor] = &[Compressor::Lz4, Compressor::Zstd];

/// Why `--level` is refused with lz4 alone (and ignored for lz4 beside zstd).
pub const LZ4_TAKES_NO_LEVEL: &str =
    "--level is zstd's: lz4 runs at zram's default (acceleration 1) and takes none";
