//! zblock's handle word: which pool, block type, block entry, slot and slot sequence number it names.
//!
//! ```text
//!  63 61 60    56 55      44 43   38 37        18 17    10 9          0
//! +-----+--------+----------+-------+------------+--------+------------+
//! |  0  | marker | pool id  | type  |   block    |  slot  |    seq     |
//! +-----+--------+----------+-------+------------+--------+------------+
//! ```
//!
//! The top three bits are zsmalloc's tag field, which a zsmalloc pool never leaves 0: a zblock
//! word given to zsmalloc is refused there, and a zsmalloc word (tag non-zero) is refused here.
//! The marker tells zblock's words from the malloc backend's. The word alone proves nothing: the
//! pool checks every field against its tables, and the slot's recorded owner must be this very
//! handle word's address, before anything is dereferenced.

/// The marker of zblock words (the malloc backend's is another).
const MARKER: usize = 0x15;
const MARKER_SHIFT: u32 = 56;
const POOL_SHIFT: u32 = 44;
const TYPE_SHIFT: u32 = 38;
const BLOCK_SHIFT: u32 = 18;
const SLOT_SHIFT: u32 = 10;

/// Pool ids are 1..=4095 (wrapping: two pools may share one; the owner check still tells them
/// apart).
pub const POOL_ID_MASK: u16 = 0xfff;
/// Blocks per type a word can name.
pub const MAX_BLOCKS: u32 = 1 << 20;
/// Sequence numbers of a slot (wrapping; see `slots.rs`).
pub const SEQ_MASK: u16 = 0x3ff;

/// A decoded zblock handle word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Word {
    pub pool: u16,
    pub ty: u32,
    pub block: u32,
    pub slot: u32,
    /// The slot's sequence number when the object was stored (or last moved).
    pub seq: u16,
}

impl Word {
    #[inline]
    pub fn encode(self) -> usize {
        debug_assert!(self.pool != 0 && self.pool <= POOL_ID_MASK);
        debug_assert!(self.ty < 64 && self.block < MAX_BLOCKS && self.slot < 256);
        (MARKER << MARKER_SHIFT)
            | ((self.pool as usize) << POOL_SHIFT)
            | ((self.ty as usize) << TYPE_SHIFT)
            | ((self.block as usize) << BLOCK_SHIFT)
            | ((self.slot as usize) << SLOT_SHIFT)
            | (self.seq & SEQ_MASK) as usize
    }

    /// Decodes a word of pool `pool`; the reason otherwise (0 included).
    #[inline]
    pub fn decode(word: usize, pool: u16) -> Result<Word, &'static str> {
        if word == 0 {
            return Err("empty handle");
        }
        if word >> MARKER_SHIFT != MARKER {
            return Err("not a zblock handle (another backend's, or garbage)");
        }
        let w = Word {
            pool: ((word >> POOL_SHIFT) & POOL_ID_MASK as usize) as u16,
            ty: ((word >> TYPE_SHIFT) & 0x3f) as u32,
            block: ((word >> BLOCK_SHIFT) & (MAX_BLOCKS as usize - 1)) as u32,
            slot: ((word >> SLOT_SHIFT) & 0xff) as u32,
            seq: (word & SEQ_MASK as usize) as u16,
        };
        if w.pool != pool {
            return Err("a handle of another zblock pool");
        }
        Ok(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_others() {
        let w = Word { pool: 4095, ty: 60, block: MAX_BLOCKS - 1, slot: 255, seq: 1023 };
        assert_eq!(Word::decode(w.encode(), 4095), Ok(w));
        assert!(Word::decode(w.encode(), 7).is_err());
        assert!(Word::decode(0, 1).is_err());
        assert!(Word::decode(1 << 61 | 5, 1).is_err());
        assert_eq!(w.encode() >> 61, 0, "zsmalloc's tag field stays 0");
    }
}
