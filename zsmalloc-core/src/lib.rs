//! zsmalloc in userspace: a faithful, instrumented re-implementation of Linux's zsmalloc.
//!
//! With default settings every object is placed exactly where Linux 6.4+ would place it (same
//! class table, chains, fullness groups, freelists and compaction), so the figures measured here
//! are the kernel's. Every knob the mailing-list threads argue about is a run-time setting.
//!
//! Modules, one job each, from the bottom up (a module imports only modules above it in this
//! list; `tests/module_graph.rs` checks that there is no cycle):
//! - `sync`, [`error`], [`text_input`] (bounded reading of every text input), `handle_word`
//!   (the handle word's encoding), `chunked` (address-stable tables), `tid` (the thread
//!   registry: a small index per thread);
//! - [`handle_words`] (the public address-stable table of raw handle words), `slot_state` (the
//!   safety state zblock and malloc share: handle-word frame, slot state words, reader counts);
//! - `limits` (page sizes, chain, smallest class); [`class_spec`] (explicit class tables and
//!   their rules), [`config`], [`chain_policy`], [`class_table`]: settings, pages per zspage,
//!   size classes; [`class_table_file`]: the class-table file format, read and written;
//! - `announce` (announced readers: one announce slot per thread), `counters` (sharded read and
//!   write counters), `arena` (simulated pages, each keeping one role for life), `pin`
//!   (zspage pins for huge objects' readers), `header` (object headers: owner, length, counted
//!   readers, claims), `open_section` (what a raw section's begin proved, kept for its end);
//!   `excess` (counted sections beyond a header's reader bits), `fault` (fault injection at the
//!   arena's calls into the system, for tests);
//!   `announce`, `header`, `excess`, `fault` and `pin` are reachable (hidden from the
//!   documentation) for the loom models and the tests only: they are not part of the API;
//! - `zspage`, `size_class`: zspages, fullness lists, freelists; `handle_slots`: the safe layer's
//!   handle words;
//! - [`pool`]: the pool's fields and rules; then its jobs: `layout` (where an object's bytes
//!   lie), `placement` (the one check of a handle word, with a level), `free` (frees, handle
//!   moves, zspage release), `compact`, [`stats`];
//! - [`handle`]: the safe [`Handle`]; `store`: stores and writes; `read`: read sections;
//! - [`backend`]: the interface all three backends implement (zsmalloc's side of it there);
//!   [`zblock`], [`malloc_pool`]: the other backends; [`any_pool`]: a pool of any of them.
//!
//! Two handle layers: the safe [`Handle`] (pool-owned handle slot, freed on drop) and the raw
//! layer (`*_raw` methods on [`Pool`], and [`Backend`] for every backend) for C callers that keep
//! the handle word in their own records, or in a [`HandleWords`] table.

#![deny(clippy::undocumented_unsafe_blocks)]

#[cfg(not(target_pointer_width = "64"))]
compile_error!("zsmalloc-core encodes handles in 64-bit words");

#[doc(hidden)]
pub mod announce;
pub mod any_pool;
mod arena;
pub mod backend;
pub mod band;
pub mod chain_policy;
mod chunked;
pub mod class_spec;
pub mod class_table;
mod class_table_check;
pub mod class_table_file;
mod compact;
pub mod config;
mod counters;
pub mod error;
#[doc(hidden)]
pub mod excess;
#[doc(hidden)]
pub mod fault;
mod free;
pub mod handle;
mod handle_slots;
mod handle_word;
pub mod handle_words;
#[doc(hidden)]
pub mod header;
mod layout;
mod limits;
pub mod malloc_pool;
mod map_window;
mod open_section;
mod payload;
#[doc(hidden)]
pub mod pin;
mod placement;
mod placement_only;
pub mod pool;
mod read;
mod size_class;
mod slot_state;
pub mod stats;
mod store;
mod sync;
pub mod text_input;
mod tid;
pub mod zblock;
mod zspage;

pub use any_pool::AnyPool;
pub use arena::{set_max_pool_reservation, MIN_RESERVE_BYTES};
pub use backend::{Backend, PrefetchStage, ReadKind, ReadPlacement};
pub use chain_policy::{ChainPolicy, Classic, Fixed, FnPolicy, Heuristic, PolicyRef};
pub use class_spec::{ClassSpec, ClassTableSpec};
pub use class_table::{ClassInfo, ClassTable, HDR};
pub use config::{BackendKind, Backing, PoolConfig, ReadMode};
pub use error::{Error, Result};
pub use handle::{Handle, ObjectLocation};
pub use handle_words::HandleWords;
pub use payload::{InPages, Payload, PlacementOnly};
pub use pool::{PlacementPool, Pool};
pub use read::{ReadSection, SgSection, SgSegments};
pub use stats::{ClassStats, PoolStats};

/// Bytes of the in-object header (`ZS_HANDLE_SIZE`).
pub const HANDLE_SIZE: usize = HDR as usize;
