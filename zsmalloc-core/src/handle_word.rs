//! The handle word: one machine word naming an object's place, at the bottom of the crate (it
//! imports nothing else of it).
//!
//! Layout (never 0 for a live object; 0 = empty):
//!
//! ```text
//!  63  61 60  57 56              33 32                            0
//! +------+------+------------------+-------------------------------+
//! | tag  | page |  zspage entry    | header position (arena offset/8)|
//! +------+------+------------------+-------------------------------+
//! ```
//!
//! The header position lets a reader start loading the object's header (and payload) from the
//! word alone, while the zspage's metadata is still on its way: the two cache misses overlap
//! instead of following each other. `page` is the header's page within its zspage; `zspage
//! entry` is the zspage's index in the pool's zspage table; `tag` (1..=7, never 0) is the pool's.
//! A huge object's position is its payload's (its header lives in the zspage's metadata).
//!
//! The word alone proves nothing: `placement.rs` checks that it names an object start of its
//! zspage's class that was handed out, and the object's header must name this very handle
//! word's address as its owner. That one check refuses handles of another pool, garbage, stale
//! copies and double frees.

/// Entries of the zspage table a handle word can name.
pub(crate) const MAX_ZSPAGE_ENTRIES: u32 = 1 << 24;
const POS_BITS: u32 = 33;
const ENTRY_SHIFT: u32 = POS_BITS;
const PAGE_SHIFT: u32 = ENTRY_SHIFT + 24;
const TAG_SHIFT: u32 = PAGE_SHIFT + 4;
/// Pool tags are 1..=7.
pub(crate) const TAG_MAX: u8 = 7;

/// A decoded handle word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Location {
    pub tag: u8,
    /// The zspage's entry in the zspage table.
    pub entry: u32,
    /// Index of the header's page within the zspage.
    pub page: u32,
    /// Arena byte offset of the header (huge objects: of the payload) divided by 8.
    pub pos: u64,
}

impl Location {
    #[inline]
    pub fn encode(self) -> usize {
        debug_assert!((1..=TAG_MAX).contains(&self.tag));
        debug_assert!(
            self.entry < MAX_ZSPAGE_ENTRIES && self.page < 16 && self.pos < 1 << POS_BITS
        );
        ((self.tag as usize) << TAG_SHIFT)
            | ((self.page as usize) << PAGE_SHIFT)
            | ((self.entry as usize) << ENTRY_SHIFT)
            | self.pos as usize
    }

    /// Decodes a word; `None` for 0 or a tag field of 0 (never produced).
    #[inline]
    pub fn decode(word: usize) -> Option<Location> {
        let tag = (word >> TAG_SHIFT) as u8;
        (tag != 0).then_some(Location {
            tag,
            page: ((word >> PAGE_SHIFT) & 0xf) as u32,
            entry: ((word >> ENTRY_SHIFT) & 0xff_ffff) as u32,
            pos: (word & ((1 << POS_BITS) - 1)) as u64,
        })
    }

    /// Arena byte offset of the header (huge: payload).
    #[inline]
    pub fn offset(self) -> usize {
        (self.pos as usize) << 3
    }
}

/// Where an object is, for diagnostics and tests: its zspage (table entry and the generation of
/// that entry's current zspage) and its object index within the zspage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ObjectLocation {
    pub zspage: u32,
    pub generation: u16,
    pub index: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_round_trips() {
        let loc = Location { tag: 5, entry: 0xff_fffe, page: 15, pos: (1 << 33) - 1 };
        assert_eq!(Location::decode(loc.encode()), Some(loc));
        let low = Location { tag: 1, entry: 0, page: 0, pos: 0 };
        assert_ne!(low.encode(), 0);
        assert_eq!(Location::decode(low.encode()), Some(low));
        assert_eq!(Location::decode(0x1234_0000), None);
    }
}
