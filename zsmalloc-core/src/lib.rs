//! zsmalloc in userspace: a faithful, instrumented re-implementation of Linux's zsmalloc.
//!
//! With default settings every object is placed exactly where Linux 6.4+ would place it (same
//! class table, chains, fullness groups, freelists and compaction), so the figures measured here
//! are the kernel's. Every knob the mailing-list threads argue about is a run-time setting.
//!
//! Architecture, one module per concept:
//! - [`config`]: settings and the `ZSMALLOC_*` environment;
//! - [`chain_policy`], [`class_table`]: pages per zspage and the size classes;
//! - `arena`: simulated pages carved from large mappings, each page keeping one role (class and
//!   index within its zspage) for life;
//! - `zspage`, `size_class`: zspages, fullness lists, freelists;
//! - [`header`], [`hazard`], [`pin`], [`handle`]: object headers (counted readers, claims),
//!   announced readers (one slot per thread), zspage pins for huge objects, handles (`header`,
//!   `hazard` and `pin` are public for the loom models, not as an API); `open_section`: what a
//!   counted raw read section's begin proved, kept for its end;
//! - [`pool`]: store, free, read sections, compaction; [`stats`]: counters.
//!
//! Two handle layers: the safe [`Handle`] (pool-owned slot, freed on drop) and the raw layer
//! (`*_raw` methods on [`Pool`]) for C callers that keep the handle word in their own records.

#![deny(clippy::undocumented_unsafe_blocks)]

#[cfg(not(target_pointer_width = "64"))]
compile_error!("zsmalloc-core encodes handles in 64-bit words");

mod arena;
pub mod chain_policy;
mod chunked;
pub mod class_table;
pub mod config;
pub mod error;
pub mod handle;
pub mod hazard;
pub mod header;
mod open_section;
pub mod pin;
pub mod pool;
mod size_class;
pub mod stats;
mod sync;
mod zspage;

pub use chain_policy::{ChainPolicy, Classic, Fixed, FnPolicy, Heuristic, PolicyRef};
pub use class_table::{ClassInfo, ClassTable, HDR};
pub use config::{PoolConfig, ReadMode};
pub use error::{Error, Result};
pub use handle::{Handle, ObjectLocation};
pub use pool::{Pool, ReadSection, SgSection};
pub use stats::{ClassStats, PoolStats};

/// Bytes of the in-object header (`ZS_HANDLE_SIZE`).
pub const HANDLE_SIZE: usize = HDR as usize;
