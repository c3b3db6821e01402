//! Test pages: a deterministic 4 KiB page that compresses about as program data often does, so
//! the floor's handler and the tests decompress something real and can check every byte.

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
    use zsmalloc_codec::{Codec, Compressor, DEFAULT_ZSTD_LEVEL};

    #[test]
    fn a_pattern_page_round_trips_at_about_half_with_every_compressor() {
        let mut page = vec![0u8; 4096];
        pattern_page(7, &mut page);
        for &c in Compressor::ALL {
            let Ok(mut codec) = Codec::new(c, DEFAULT_ZSTD_LEVEL, page.len()) else {
                continue; // lzo without liblzo2 installed
            };
            let mut packed = vec![0u8; c.bound(page.len())];
            let n = codec.compress(&page, &mut packed).expect("fits the bound");
            assert!(n > 1500 && n < 3000, "{}: compressed to {n}", c.name());
            let mut back = vec![0u8; 4096];
            assert_eq!(codec.decompress(&packed[..n], &mut back), Ok(4096));
            assert_eq!(back, page);
            assert!(codec.decompress(&packed[..n / 2], &mut back).is_err(), "truncated: refused");
        }
        let mut other = vec![0u8; 4096];
        pattern_page(8, &mut other);
        assert_ne!(other, page);
    }
}
