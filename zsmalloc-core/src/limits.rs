//! The allocator's fixed bounds, at the bottom of the crate so that the configuration, the
//! class tables and explicit class specs all check against the same numbers.

/// Smallest configurable page size (bytes).
pub const MIN_PAGE_SIZE: u32 = 4096;
/// Largest configurable page size (bytes).
pub const MAX_PAGE_SIZE: u32 = 65536;
/// Largest configurable chain (pages per zspage).
pub const MAX_CHAIN_SIZE: u32 = 16;
/// Smallest class size (`ZS_MIN_ALLOC_SIZE`).
pub const MIN_ALLOC: u32 = 32;
