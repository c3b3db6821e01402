//! Pages through liblz4 (`lz4-sys`, the reference C library, so compressed lengths are the
//! ones zram's lz4 gives). Nothing here allocates, so a fault handler may call it.

/// The largest compressed length of a `len`-byte input.
pub fn bound(len: usize) -> usize {
    let n = i32::try_from(len).unwrap_or(i32::MAX);
    // SAFETY: LZ4_compressBound is a pure function of its argument.
    unsafe { lz4_sys::LZ4_compressBound(n) }.max(0) as usize
}

/// `LZ4_compress_default` (acceleration 1, zram's default) of `src` into `dst`: the compressed
/// length, or `None` when `dst` is shorter than [`bound`] needs.
pub fn compress(src: &[u8], dst: &mut [u8]) -> Option<usize> {
    let sl = i32::try_from(src.len()).ok()?;
    let dl = i32::try_from(dst.len()).unwrap_or(i32::MAX);
    // SAFETY: the pointers and lengths describe the two live slices; liblz4 reads `sl` bytes
    // of `src` and writes at most `dl` bytes into `dst`.
    let n = unsafe {
        lz4_sys::LZ4_compress_default(src.as_ptr().cast(), dst.as_mut_ptr().cast(), sl, dl)
    };
    usize::try_from(n).ok().filter(|&n| n > 0)
}

/// `LZ4_decompress_safe` of `src` into `dst`: the decompressed length, or `None` when `src` is
/// corrupt or does not fit.
#[inline]
pub fn decompress(src: &[u8], dst: &mut [u8]) -> Option<usize> {
    let sl = i32::try_from(src.len()).ok()?;
    let dl = i32::try_from(dst.len()).ok()?;
    // SAFETY: the pointers and lengths describe the two live slices; the "safe" decoder never
    // reads or writes outside them, whatever `src` holds.
    let n = unsafe {
        lz4_sys::LZ4_decompress_safe(src.as_ptr().cast(), dst.as_mut_ptr().cast(), sl, dl)
    };
    usize::try_from(n).ok()
}

/// A 4 KiB page of `seed`'s pattern, about half compressible as program data often is: in
/// every 64 bytes, 32 of a pseudo-random sequence and 32 of a repeated record. The same seed
/// always gives the same page, so a test can check every byte it reads back.
pub fn pattern_page(seed: u64, page: &mut [u8]) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for (i, chunk) in page.chunks_mut(64).enumerate() {
        for (j, b) in chunk.iter_mut().enumerate() {
            *b = if j < 32 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            } else {
                (seed as u8).wrapping_add(j as u8).wrapping_add((i % 4) as u8)
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_page_round_trips_at_about_half() {
        let mut page = vec![0u8; 4096];
        pattern_page(7, &mut page);
        let mut packed = vec![0u8; bound(page.len())];
        let n = compress(&page, &mut packed).expect("fits the bound");
        assert!(n > 1500 && n < 3000, "compressed to {n}");
        let mut back = vec![0u8; 4096];
        assert_eq!(decompress(&packed[..n], &mut back), Some(4096));
        assert_eq!(back, page);
        assert_eq!(decompress(&packed[..n / 2], &mut back), None, "a truncated input is refused");
        let mut other = vec![0u8; 4096];
        pattern_page(8, &mut other);
        assert_ne!(other, page);
    }
}
