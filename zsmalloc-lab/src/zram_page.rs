//! How zram stores a page: the one rule behind `pages`, `cost` and the real-kernel commands.
//!
//! zram (`zram_write_page`) first looks for a same-filled page, which it keeps as one value
//! outside the allocator (`same_pages` in `mm_stat`); otherwise it compresses the page, and a
//! compressed length at or above the allocator's `huge_class_size` is not worth keeping
//! compressed, so the page is stored raw, whole (`huge_pages`). Everything else is stored as
//! its compressed bytes.
//!
//! A page is same-filled when it repeats one machine word (`unsigned long`, 8 bytes on the
//! 64-bit kernels this project models), compared in native byte order exactly as zram's
//! `page_same_filled` does: the first word against the last, then every word in order. So a
//! page of one repeated byte is same-filled, and so is a page repeating `0x008f008f…` or any
//! 8-byte value; the word is what zram keeps (`zram_fill_page` writes it back on read).

/// What zram stores for one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZramPage {
    /// The page repeats this word (native byte order): nothing goes into the pool.
    Same(u64),
    /// The compressed bytes, this many, go into the pool.
    Compressed(usize),
    /// The page goes into the pool as it is (its compressed length reached the huge size).
    Raw,
}

impl ZramPage {
    /// The store decision for `page`, compressing it with `compress` (which returns the
    /// compressed length) only when it is not same-filled; `huge` is the pool's
    /// `huge_class_size`.
    pub fn of<E>(
        page: &[u8],
        huge: usize,
        compress: impl FnOnce(&[u8]) -> Result<usize, E>,
    ) -> Result<ZramPage, E> {
        if let Some(v) = same_filled(page) {
            return Ok(ZramPage::Same(v));
        }
        Ok(ZramPage::for_length(compress(page)?, huge))
    }

    /// The decision for a page that is not same-filled and compressed to `len` bytes.
    pub fn for_length(len: usize, huge: usize) -> ZramPage {
        if len >= huge {
            ZramPage::Raw
        } else {
            ZramPage::Compressed(len)
        }
    }

    /// Bytes the pool is asked to hold for this page (`page` is the page size).
    pub fn stored_len(self, page: usize) -> usize {
        match self {
            ZramPage::Same(_) => 0,
            ZramPage::Compressed(len) => len,
            ZramPage::Raw => page,
        }
    }
}

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

    fn len_of(n: usize) -> impl FnOnce(&[u8]) -> Result<usize, ()> {
        move |_| Ok(n)
    }

    #[test]
    fn a_same_filled_page_is_kept_outside_the_pool_without_compressing() {
        let page = vec![0xabu8; 4096];
        let r = ZramPage::of(&page, 3264, |_| -> Result<usize, ()> { panic!("compressed") });
        assert_eq!(r, Ok(ZramPage::Same(0xabab_abab_abab_abab)));
        assert_eq!(ZramPage::Same(0).stored_len(4096), 0);
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

    #[test]
    fn one_differing_byte_makes_a_page_compressible() {
        let mut page = vec![0u8; 4096];
        page[4095] = 1;
        assert_eq!(ZramPage::of(&page, 3264, len_of(26)), Ok(ZramPage::Compressed(26)));
        assert_eq!(ZramPage::Compressed(26).stored_len(4096), 26);
    }

    #[test]
    fn a_length_at_or_above_the_huge_size_is_stored_raw_as_a_whole_page() {
        // 3264 is mainline's huge_class_size on 4K pages.
        assert_eq!(ZramPage::for_length(3263, 3264), ZramPage::Compressed(3263));
        assert_eq!(ZramPage::for_length(3264, 3264), ZramPage::Raw);
        assert_eq!(ZramPage::for_length(5000, 3264), ZramPage::Raw);
        assert_eq!(ZramPage::Raw.stored_len(4096), 4096);
        let mut page = vec![7u8; 4096];
        page[0] = 8;
        assert_eq!(ZramPage::of(&page, 3264, len_of(4100)), Ok(ZramPage::Raw));
    }

    #[test]
    fn a_compressor_error_is_passed_on() {
        let page = [1u8, 2, 3];
        assert_eq!(ZramPage::of(&page, 10, |_| Err("broken")), Err("broken"));
    }
}
