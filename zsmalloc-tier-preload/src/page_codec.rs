//! The tier's one compressor, behind one pair of functions so that it can be swapped for
//! another (lz4 today, zram's default, through the crate's liblz4 binding).

/// The room [`compress`] needs for one page.
pub fn bound(len: usize) -> usize {
    zsmalloc_tier::lz4::bound(len)
}

/// `src` compressed into `dst`: its length, `None` when it does not fit.
pub fn compress(src: &[u8], dst: &mut [u8]) -> Option<usize> {
    zsmalloc_tier::lz4::compress(src, dst)
}

/// `src` decompressed into `dst`: the length written, `None` when `src` is corrupt.
pub fn decompress(src: &[u8], dst: &mut [u8]) -> Option<usize> {
    zsmalloc_tier::lz4::decompress(src, dst)
}

/// The value every word of `page` holds, when they all hold one (zram's same-filled page).
pub fn same_filled(page: &[u8]) -> Option<u64> {
    let mut words = page.chunks_exact(8).map(|w| u64::from_ne_bytes(w.try_into().expect("8")));
    let first = words.next()?;
    words.all(|w| w == first).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_filled_pages_are_one_word_repeated() {
        let mut page = vec![0u8; 4096];
        assert_eq!(same_filled(&page), Some(0));
        for w in page.chunks_exact_mut(8) {
            w.copy_from_slice(&0x0102_0304_0506_0708u64.to_ne_bytes());
        }
        assert_eq!(same_filled(&page), Some(0x0102_0304_0506_0708));
        page[4095] ^= 1;
        assert_eq!(same_filled(&page), None);
    }
}
