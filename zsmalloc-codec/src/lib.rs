//! The workspace's page compressors, one module for the lab's `pages`, `cost` and `folios` and
//! for the tier: the reference C libraries zram's compressors are ports of — liblz4 (`lz4`),
//! liblzo2's LZO1X-1 (`lzo`, loaded at run time) and libzstd (`zstd`) — so compressed lengths,
//! and so placement in a pool, are the ones zram sees.
//!
//! **The allocation contract.** [`Codec::new`] allocates everything a codec will ever need:
//! lz4's state lives on the caller's stack (16 KiB: a handler thread's stack must hold it),
//! LZO1X-1's dictionary and zstd's contexts live in buffers
//! made by `new` (zstd's are *static* contexts, `ZSTD_initStatic*`, sized for the largest
//! input the codec accepts, so libzstd never calls `malloc` for them). After `new`,
//! [`Codec::compress`] and [`Codec::decompress`] allocate nothing, neither on success nor on
//! failure ([`Error`]'s runtime variants hold no heap data), whatever the input; so a
//! userfaultfd fault handler, or code timed in a batch, may call them. `tests/no_allocation.rs`
//! keeps this true: around the calls it counts every Rust allocation and every `malloc`,
//! `calloc` and `realloc` of the process (the C libraries'). A codec may move to another
//! thread (`Send`) but serves one at a time (`&mut self`): one codec per thread.
//!
//! - [`compressor`]: [`Compressor`], the algorithm; its names parse among those a command
//!   offers ([`Compressor::parse`]) and its output is bounded ([`Compressor::bound`], [`bound`]);
//! - [`codec`]: [`Codec`], one compressor with its state;
//! - [`mod@same_filled`]: zram's test for a page that repeats one word, kept outside the pool;
//! - [`error`]: [`Error`], the crate's own (callers map it to theirs).

#![deny(clippy::undocumented_unsafe_blocks)]

mod bound;
pub mod codec;
pub mod compressor;
pub mod error;
mod lz4;
mod lzo;
mod parse;
pub mod same_filled;
mod zstd;

pub use bound::bound;
pub use codec::Codec;
pub use compressor::{Compressor, DEFAULT_ZSTD_LEVEL, ZSTD_LEVELS};
pub use error::{Error, Unavailable};
pub use same_filled::{fill_word, is_word_fill, same_filled, WORD};
