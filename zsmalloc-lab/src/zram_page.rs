//! How zram stores a page: the one rule behind `pages`, `cost` and the real-kernel commands.
//!
//! zram (`zram_write_page`) first looks for a same-filled page, which it keeps as one value
//! outside the allocator (`same_pages` in `mm_stat`); otherwise it compresses the page, and a
//! compressed length at or above the allocator's `huge_class_size` is not worth keeping
//! compressed, so the page is stored raw, whole (`huge_pages`). Everything else is stored as
//! its compressed bytes.
//!
//! A page is same-filled when it repeats one machine word, compared as zram compares it
//! ([`zsmalloc_codec::same_filled`], the workspace's one test).

use zsmalloc_codec::same_filled;

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
