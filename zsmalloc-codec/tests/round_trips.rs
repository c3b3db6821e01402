//! Every compressor through the public API: round trips, the bounds, refused inputs, and zstd's
//! static contexts giving the bytes of an ordinary context.

use zsmalloc_codec::{bound, Codec, Compressor, Error, DEFAULT_ZSTD_LEVEL, ZSTD_LEVELS};

/// `len` bytes: half a pseudo-random sequence, half a repeated record, like program data.
fn mixed(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|i| {
            if i % 64 < 32 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            } else {
                (i % 7) as u8
            }
        })
        .collect()
}

/// `len` bytes no compressor shortens.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn codec(c: Compressor, max_input: usize) -> Codec {
    Codec::new(c, DEFAULT_ZSTD_LEVEL, max_input).unwrap()
}

#[test]
fn every_compressor_round_trips_a_page_and_a_folio() {
    for c in Compressor::ALL.iter().copied() {
        let mut k = codec(c, 65536);
        assert_eq!((k.compressor(), k.max_input()), (c, 65536));
        for len in [4096usize, 65536] {
            let data = mixed(len, 7);
            let mut out = vec![0u8; bound(len)];
            let n = k.compress(&data, &mut out).unwrap();
            assert!(n > 0 && n < len * 3 / 4, "{} {len}: {n}", c.name());
            let mut back = vec![0u8; len];
            assert_eq!(k.decompress(&out[..n], &mut back), Ok(len), "{}", c.name());
            assert_eq!(back, data);
        }
    }
}

#[test]
fn incompressible_input_fits_each_compressors_own_bound() {
    for c in Compressor::ALL.iter().copied() {
        let mut k = codec(c, 65536);
        for len in [0usize, 1, 17, 4096, 65536] {
            let data = noise(len, 3);
            let mut out = vec![0u8; c.bound(len)];
            let n = k.compress(&data, &mut out).unwrap();
            assert!(n <= c.bound(len) && n <= bound(len), "{} {len}: {n}", c.name());
            let mut back = vec![0u8; len];
            assert_eq!(k.decompress(&out[..n], &mut back), Ok(len), "{} {len}", c.name());
            assert_eq!(back, data);
        }
    }
}

#[test]
fn corrupt_input_and_short_outputs_are_refused_not_a_panic() {
    for c in Compressor::ALL.iter().copied() {
        let mut k = codec(c, 16384);
        let data = mixed(16384, 11);
        let mut out = vec![0u8; bound(data.len())];
        let n = k.compress(&data, &mut out).unwrap();
        let mut back = vec![0u8; data.len()];
        let corrupt = Err(Error::Corrupt(c));
        assert_eq!(k.decompress(&out[..n / 2], &mut back), corrupt, "{} truncated", c.name());
        assert_eq!(k.decompress(&out[..n], &mut back[..100]), corrupt, "{} short", c.name());
        for seed in 1..50 {
            // Garbage must be refused or decoded within the buffer, never read past.
            let junk = noise(64 + seed as usize * 13, seed);
            let r = k.decompress(&junk, &mut back);
            assert!(matches!(r, Err(Error::Corrupt(_)) | Ok(_)), "{} {r:?}", c.name());
        }
        // The codec still works after refusing.
        assert_eq!(k.decompress(&out[..n], &mut back), Ok(data.len()));
        let mut tiny = [0u8; 8];
        assert_eq!(k.compress(&data, &mut tiny), Err(Error::OutputTooSmall(c)), "{}", c.name());
        assert_eq!(k.compress(&data, &mut out), Ok(n), "{} after a refusal", c.name());
        let long = vec![0u8; 16385];
        let e = k.compress(&long, &mut out).unwrap_err();
        assert_eq!(e, Error::InputTooLong { compressor: c, len: 16385, max: 16384 });
        assert!(!e.is_usage());
    }
}

#[test]
fn zstd_static_contexts_take_every_level_and_size_and_give_an_ordinary_contexts_bytes() {
    // libzstd's size classes change at 16K, 128K and 256K: both sides of the first, and a
    // sweep of odd sizes up to the longest input.
    let mut sizes = vec![0usize, 1, 100, 4096, 16384, 16385, 65536];
    sizes.extend((1..65536).step_by(6151));
    for level in ZSTD_LEVELS {
        let mut k = Codec::new(Compressor::Zstd, level, 65536).unwrap();
        let mut plain = zstd_safe::CCtx::create();
        plain.set_parameter(zstd_safe::CParameter::CompressionLevel(level)).unwrap();
        for &len in &sizes {
            let data = mixed(len, level as u64);
            let mut out = vec![0u8; bound(len)];
            let n = k.compress(&data, &mut out).unwrap_or_else(|e| panic!("{level} {len}: {e}"));
            let mut expected = vec![0u8; bound(len)];
            let m = plain.compress2(&mut expected[..], &data).unwrap();
            assert_eq!(out[..n], expected[..m], "level {level}, {len} bytes");
        }
    }
    // The larger size classes, on a codec made for longer inputs.
    for level in [1, 3, 19] {
        let mut k = Codec::new(Compressor::Zstd, level, 300_000).unwrap();
        for len in [131_072usize, 131_073, 262_144, 262_145, 300_000] {
            let data = mixed(len, 5);
            let mut out = vec![0u8; bound(len)];
            let n = k.compress(&data, &mut out).unwrap_or_else(|e| panic!("{level} {len}: {e}"));
            let mut back = vec![0u8; len];
            assert_eq!(k.decompress(&out[..n], &mut back), Ok(len));
            assert_eq!(back, data);
        }
    }
    for level in [0, 23, -1] {
        let e = Codec::new(Compressor::Zstd, level, 4096).err().unwrap();
        assert_eq!(e, Error::ZstdLevel(level));
        assert!(e.is_usage());
    }
    // lz4 and lzo take no level, and so refuse none.
    assert!(Codec::new(Compressor::Lz4, 0, 4096).is_ok());
}

#[test]
fn lz4_is_liblz4_at_zram_s_default() {
    // The shortest zero page with one other byte: 26 bytes from liblz4's LZ4_compress_default (lz4_flex,
    // another implementation, gives 27).
    let mut k = codec(Compressor::Lz4, 4096);
    let mut out = vec![0u8; bound(4096)];
    let mut page = vec![0u8; 4096];
    let mut shortest = usize::MAX;
    for at in [0, 1, 7, 64, 2048, 4096 - 13, 4095] {
        page.fill(0);
        page[at] = 0x5a;
        shortest = shortest.min(k.compress(&page, &mut out).unwrap());
    }
    assert_eq!(shortest, 26);
}
