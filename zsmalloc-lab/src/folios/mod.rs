//! `zsmalloc folios`: large folios compressed whole and stored as one object each, the way the
//! RFC "mTHP-friendly compression in zsmalloc and zram based on multi-pages" (2024) stores them,
//! against the same corpus at 4K: pages (after the fill, at the peak, after churn and
//! compaction), compaction's moves, class padding, and the CPU of swap-out and of the three
//! swap-in paths, per compressor (lz4, lzo, zstd) and folio size.
//!
//! - [`options`]: the run's settings, checks and memory plan;
//! - the compressors are the workspace's ([`zsmalloc_codec`]: liblz4, liblzo2's LZO1X-1, libzstd);
//! - [`fill`]: compress, store, churn, compact, padding;
//! - [`reads`]: the timed swap-in paths and swap-out;
//! - [`row`]: what is reported; [`study`]: the run.

pub mod fill;
pub mod options;
pub mod reads;
pub mod row;
pub mod study;

pub use options::FoliosOptions;
pub use row::{FolioRow, FoliosReport};
pub use study::run;
