//! zblock's fields of a handle word (`slot_state.rs` has the frame: marker and pool id): which
//! block type, block entry, slot and slot sequence number it names.
//!
//! ```text
//!  63 61 60    56 55      44 43   38 37        18 17    10 9          0
//! +-----+--------+----------+-------+------------+--------+------------+
//! |  0  | marker | pool id  | type  |   block    |  slot  |    seq     |
//! +-----+--------+----------+-------+------------+--------+------------+
//! ```

use crate::slot_state::{WordFrame, FIELD_BITS};

const TYPE_SHIFT: u32 = 38;
const BLOCK_SHIFT: u32 = 18;
const SLOT_SHIFT: u32 = 10;
const _: () = assert!(TYPE_SHIFT + 6 == FIELD_BITS);

/// Blocks per type a word can name.
pub const MAX_BLOCKS: u32 = 1 << 20;
/// Bits of a slot's sequence number (wrapping; see `slots.rs`).
pub const SEQ_BITS: u32 = 10;
const SEQ_MASK: usize = (1 << SEQ_BITS) - 1;

/// A decoded zblock handle word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Word {
    pub ty: u32,
    pub block: u32,
    pub slot: u32,
    /// The slot's sequence number when the object was stored (or last moved).
    pub seq: u16,
}

impl Word {
    #[inline]
    pub fn encode(self, frame: WordFrame) -> usize {
        debug_assert!(self.ty < 64 && self.block < MAX_BLOCKS && self.slot < 256);
        frame.encode(
            ((self.ty as usize) << TYPE_SHIFT)
                | ((self.block as usize) << BLOCK_SHIFT)
                | ((self.slot as usize) << SLOT_SHIFT)
                | (self.seq as usize & SEQ_MASK),
        )
    }

    /// Decodes a word of the pool of `frame`; the reason otherwise (0 included).
    #[inline]
    pub fn decode(word: usize, frame: WordFrame) -> Result<Word, &'static str> {
        let fields = frame.decode(word)?;
        Ok(Word {
            ty: ((fields >> TYPE_SHIFT) & 0x3f) as u32,
            block: ((fields >> BLOCK_SHIFT) & (MAX_BLOCKS as usize - 1)) as u32,
            slot: ((fields >> SLOT_SHIFT) & 0xff) as u32,
            seq: (fields & SEQ_MASK) as u16,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slot_state::Marker;

    #[test]
    fn round_trips_and_refuses_others() {
        let frame = WordFrame::of(Marker::Zblock, 4095);
        let w = Word { ty: 60, block: MAX_BLOCKS - 1, slot: 255, seq: 1023 };
        assert_eq!(Word::decode(w.encode(frame), frame), Ok(w));
        assert!(Word::decode(w.encode(frame), WordFrame::of(Marker::Zblock, 7)).is_err());
        assert!(Word::decode(0, frame).is_err());
        assert!(Word::decode(1 << 61 | 5, frame).is_err());
        assert_eq!(w.encode(frame) >> 61, 0, "zsmalloc's tag field stays 0");
    }
}
