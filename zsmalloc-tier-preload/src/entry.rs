//! A page's entry in the tier's page table: what holds the page's bytes (the page itself, a
//! pool object, a same-filled value, its folio group's object, or nothing yet), the stored
//! length and the page's arrival number. The table itself, and who may touch it, is `tier.rs`'s.

use std::sync::atomic::AtomicUsize;

// A page's kind, in the low bits of its entry's info word.
pub const EMPTY: u64 = 0;
pub const RESIDENT: u64 = 1;
pub const STORED: u64 = 2;
pub const SAME: u64 = 3;
/// Evicted with its aligned group (`folio.rs`): its bytes are in the group's object.
pub const GROUP: u64 = 4;
/// Stored, with a clean copy in the readahead cache (`readahead.rs`).
pub const CACHED: u64 = 5;

/// A page's entry: the pool's handle word (or a same-filled value), and its kind with the
/// stored length (bits 8..32: a 64K group stored whole is 65536 bytes) and its arrival number
/// (bits 32..64; a cached page's cache slot there).
#[repr(C)]
pub struct Entry {
    pub handle: AtomicUsize,
    pub info: u64,
}

impl Entry {
    pub fn kind(&self) -> u64 {
        self.info & 0xff
    }
    pub fn len(&self) -> usize {
        ((self.info >> 8) & 0xff_ffff) as usize
    }
    pub fn seq(&self) -> u32 {
        (self.info >> 32) as u32
    }
}
