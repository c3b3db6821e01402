//! zram's same-filled pages: a page that repeats one machine word (`unsigned long`, 8 bytes on
//! the 64-bit kernels this project models) is kept as that word outside the allocator
//! (`same_pages` in `mm_stat`), never compressed.
//!
//! The words are compared in native byte order exactly as zram's `page_same_filled` does: the
//! first word against the last, then every word in order. So a page of one repeated byte is
//! same-filled, and so is a page repeating `0x008f008f…` or any 8-byte value; the word is what
//! zram keeps (`zram_fill_page` writes it back on read). Nothing here allocates.

/// Bytes of the word zram compares (`sizeof(unsigned long)` on a 64-bit kernel).
pub const WORD: usize = std::mem::size_of::<u64>();

/// The word a same-filled page repeats, `None` otherwise; also `None` for an empty page or one
/// whose length is not a whole number of words (zram's pages always are).
pub fn same_filled(page: &[u8]) -> Option<u64> {
    if page.is_empty() || !page.len().is_multiple_of(WORD) {
        return None;
    }
    let word = |at: usize| u64::from_ne_bytes(page[at..at + WORD].try_into().unwrap_or_default());
    let first = word(0);
    // The last word first, as zram does: most pages that are not same-filled differ there.
    if word(page.len() - WORD) != first {
        return None;
    }
    page.chunks_exact(WORD)
        .all(|w| u64::from_ne_bytes(w.try_into().unwrap_or_default()) == first)
        .then_some(first)
}

/// Fills `out` with `word` repeated in native byte order, as zram's `zram_fill_page` restores a
/// same-filled page (a tail shorter than a word gets the word's first bytes).
pub fn fill_word(out: &mut [u8], word: u64) {
    let bytes = word.to_ne_bytes();
    for chunk in out.chunks_mut(WORD) {
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

/// Whether `data` is `word` repeated (the inverse of [`fill_word`]).
pub fn is_word_fill(data: &[u8], word: u64) -> bool {
    let bytes = word.to_ne_bytes();
    data.chunks(WORD).all(|chunk| chunk == &bytes[..chunk.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_of_one_byte_is_same_filled_and_odd_lengths_are_not() {
        assert_eq!(same_filled(&[0xabu8; 4096]), Some(0xabab_abab_abab_abab));
        assert_eq!(same_filled(&[0u8; 16]), Some(0));
        assert_eq!(same_filled(&[]), None);
        assert_eq!(same_filled(&[0u8; 12]), None);
    }

    #[test]
    fn a_repeated_word_is_same_filled_as_zram_compares_it() {
        // Word patterns that are not byte patterns: zram keeps them outside its pool too.
        for word in [0x008f_008f_008f_008fu64, 0x0123_4567_89ab_cdef, 1] {
            let mut page = vec![0u8; 4096];
            fill_word(&mut page, word);
            assert_eq!(same_filled(&page), Some(word), "{word:#x}");
            assert!(is_word_fill(&page, word));
            page[4000] ^= 1;
            assert_eq!(same_filled(&page), None);
            assert!(!is_word_fill(&page, word));
        }
        // A 4-byte pattern repeats the same 8-byte word; a 3-byte one does not.
        let page: Vec<u8> = [1u8, 2, 3, 4].iter().copied().cycle().take(4096).collect();
        assert!(same_filled(&page).is_some());
        let page: Vec<u8> = [1u8, 2, 3].iter().copied().cycle().take(4096).collect();
        assert_eq!(same_filled(&page), None);
        // Only the last word differs.
        let mut page = vec![7u8; 4096];
        page[4095] = 8;
        assert_eq!(same_filled(&page), None);
        let mut small = [0u8; 28];
        fill_word(&mut small, 0x0102_0304_0506_0708);
        assert!(is_word_fill(&small, 0x0102_0304_0506_0708));
    }
}
