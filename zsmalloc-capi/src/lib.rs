//! C ABI over zsmalloc-core: `libzsmalloc.so` / `libzsmalloc.a` and `include/zsmalloc.h`.
//! Translation only: no allocator logic lives here.
//!
//! Modules, each using only those listed before it:
//! - `types`: `size_t`, `gfp_t`, `ZS_ABI_VERSION`, `ZS_HANDLE_SIZE`;
//! - `errors`: the thread-local last error and `zs_strerror`;
//! - `guard`: the panic boundary every exported function runs behind, once;
//! - `sized`: structs that grow, read and written at the caller's `sizeof`;
//! - `slots`: the pool-owned handle words of `zsmalloc_compat.h`'s `unsigned long` handles;
//! - `config`: `struct zs_pool_config`, defaults and the environment (`PoolConfig::from_env`);
//! - [`pool`]: `struct zs_pool`, creation, destruction, pool queries, compaction;
//! - `handle`: `struct zs_handle` and the checks of C pointers and lengths;
//! - `object`: store, malloc + write, free, handle move;
//! - `read`: read sections, copy and scatter-gather (`struct zs_sg`);
//! - `stats`: `struct zs_pool_stats`, `struct zs_class_stats`;
//! - `compat`: `unsigned long` handles for `include/zsmalloc_compat.h`;
//! - `abi`: the entry points, each a module function behind the boundary;
//! - [`exports`]: [`export_c_abi!`], which defines the `#[no_mangle]` functions over `abi` in the
//!   library that invokes it (rust-lang/rust#50007: an rlib's exports are not reliably
//!   re-exported by a dependent cdylib). Their doc comments are the header's.

#![allow(non_camel_case_types)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod types;

mod compat;
mod config;
mod errors;
mod guard;
mod handle;
mod object;
mod read;
mod sized;
mod slots;
mod stats;

pub mod abi;
pub mod exports;
pub mod pool;

pub use config::{
    zs_class_spec, zs_pool_config, ZS_BACKEND_MALLOC, ZS_BACKEND_ZBLOCK, ZS_BACKEND_ZSMALLOC,
    ZS_BACKING_ANONYMOUS, ZS_BACKING_MEMFD, ZS_CHAIN_CLASSIC, ZS_CHAIN_FIXED_BASE,
    ZS_CHAIN_HEURISTIC, ZS_POOL_CONFIG_SIZE_VER1, ZS_POOL_CONFIG_SIZE_VER3,
    ZS_POOL_CONFIG_SIZE_VER4, ZS_POOL_CONFIG_SIZE_VER5, ZS_POOL_CONFIG_SIZE_VER6,
    ZS_READ_CONTIGUOUS, ZS_READ_COPY, ZS_READ_MAP,
};
pub use handle::zs_handle;
pub use pool::zs_pool;
pub use read::zs_sg;
pub use stats::{
    zs_class_stats, zs_pool_stats, ZS_CLASS_STATS_SIZE_VER1, ZS_CLASS_STATS_SIZE_VER3,
    ZS_CLASS_STATS_SIZE_VER6, ZS_POOL_STATS_SIZE_VER1, ZS_POOL_STATS_SIZE_VER6,
};
pub use types::{gfp_t, size_t, ZS_ABI_VERSION, ZS_HANDLE_SIZE};

// libzsmalloc's own exports (feature `export`, on by default). A crate embedding the C ABI in its
// own cdylib depends on this one with `default-features = false` and invokes `export_c_abi!()`.
// scripts/cbindgen.sh pastes the macro's items here to generate include/zsmalloc.h.
#[cfg(feature = "export")]
__zs_c_abi_items!();
