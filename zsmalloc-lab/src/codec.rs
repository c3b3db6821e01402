//! The lab's compressors: the reference C libraries, liblz4 (through `lz4-sys`) and libzstd
//! (through `zstd`), so compressed lengths — and so placement — are the ones zram sees (the
//! kernel carries ports of the same code). One home for `pages`, the `dist` floor
//! ([`crate::workload::pages::shortest_lz4`]) and the cost study. Nothing here allocates after
//! [`Codec::new`], so [`Codec::decompress`] may run inside a timed batch.

use crate::error::{LabError, LabResult};

/// A compression algorithm of the study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algo {
    Lz4,
    Zstd,
}

/// The accepted names, for messages.
pub const ACCEPTED: &str = "lz4, zstd";

impl Algo {
    pub fn parse(s: &str) -> LabResult<Algo> {
        match s.trim() {
            "lz4" => Ok(Algo::Lz4),
            "zstd" => Ok(Algo::Zstd),
            other => {
                Err(LabError::usage(format!("invalid compressor '{other}' (accepted: {ACCEPTED})")))
            }
        }
    }

    /// `lz4,zstd` -> both, in the order given, each once.
    pub fn parse_list(s: &str) -> LabResult<Vec<Algo>> {
        let mut out = Vec::new();
        for part in s.split(',').filter(|p| !p.trim().is_empty()) {
            let a = Algo::parse(part)?;
            if !out.contains(&a) {
                out.push(a);
            }
        }
        if out.is_empty() {
            return Err(LabError::usage(format!("no compressor given (accepted: {ACCEPTED})")));
        }
        Ok(out)
    }

    pub fn name(self) -> &'static str {
        match self {
            Algo::Lz4 => "lz4",
            Algo::Zstd => "zstd",
        }
    }
}

/// zram's default zstd level (`ZSTD_CLEVEL_DEFAULT`).
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;

/// Why `--level` is refused with lz4 alone (and ignored for lz4 beside zstd).
pub const LZ4_TAKES_NO_LEVEL: &str =
    "--level is zstd's: lz4 runs at zram's default (acceleration 1) and takes none";

/// One compressor with its contexts.
pub struct Codec {
    algo: Algo,
    zc: Option<zstd::bulk::Compressor<'static>>,
    zd: Option<zstd::bulk::Decompressor<'static>>,
}

impl Codec {
    pub fn new(algo: Algo, level: i32) -> LabResult<Codec> {
        let err = |e: std::io::Error| LabError::runtime(format!("zstd: {e}"));
        Ok(match algo {
            Algo::Lz4 => Codec { algo, zc: None, zd: None },
            Algo::Zstd => Codec {
                algo,
                zc: Some(zstd::bulk::Compressor::new(level).map_err(err)?),
                zd: Some(zstd::bulk::Decompressor::new().map_err(err)?),
            },
        })
    }

    pub fn algo(&self) -> Algo {
        self.algo
    }

    /// The largest output of a `len`-byte input, either algorithm.
    pub fn bound(len: usize) -> usize {
        let n = i32::try_from(len).unwrap_or(i32::MAX);
        // SAFETY: LZ4_compressBound is a pure function of its argument.
        let lz4 = unsafe { lz4_sys::LZ4_compressBound(n) }.max(0) as usize;
        lz4.max(zstd::zstd_safe::compress_bound(len))
    }

    /// Compresses `src` into `dst` (at least [`Codec::bound`] bytes); the compressed length.
    pub fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> LabResult<usize> {
        match self.algo {
            Algo::Lz4 => lz4_compress(src, dst),
            Algo::Zstd => match self.zc.as_mut() {
                Some(c) => c
                    .compress_to_buffer(src, dst)
                    .map_err(|e| LabError::runtime(format!("zstd compression failed: {e}"))),
                None => Err(LabError::runtime("zstd: no compression context")),
            },
        }
    }

    /// Decompresses `src` into `dst`; the decompressed length, or `None` on corrupt input.
    #[inline]
    pub fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Option<usize> {
        match self.algo {
            Algo::Lz4 => {
                // SAFETY: the pointers and lengths describe the two live slices; liblz4's
                // "safe" decoder never reads or writes outside them.
                let n = unsafe {
                    lz4_sys::LZ4_decompress_safe(
                        src.as_ptr().cast(),
                        dst.as_mut_ptr().cast(),
                        i32::try_from(src.len()).ok()?,
                        i32::try_from(dst.len()).ok()?,
                    )
                };
                usize::try_from(n).ok()
            }
            Algo::Zstd => self.zd.as_mut()?.decompress_to_buffer(src, dst).ok(),
        }
    }
}

/// liblz4's `LZ4_compress_default` (acceleration 1, zram's default).
pub fn lz4_compress(src: &[u8], dst: &mut [u8]) -> LabResult<usize> {
    let too_big = || LabError::runtime("lz4: input too large");
    let (sl, dl) = (
        i32::try_from(src.len()).map_err(|_| too_big())?,
        i32::try_from(dst.len()).unwrap_or(i32::MAX),
    );
    // SAFETY: the pointers and lengths describe the two live slices; liblz4 writes at most
    // `dl` bytes into `dst` and reads `sl` bytes of `src`.
    let n = unsafe {
        lz4_sys::LZ4_compress_default(src.as_ptr().cast(), dst.as_mut_ptr().cast(), sl, dl)
    };
    if n <= 0 {
        return Err(LabError::runtime("lz4 compression failed (output buffer too small)"));
    }
    Ok(n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_names() {
        let page: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8 ^ (i / 97) as u8).collect();
        for algo in [Algo::Lz4, Algo::Zstd] {
            let mut c = Codec::new(algo, 3).unwrap();
            let mut out = vec![0u8; Codec::bound(page.len())];
            let n = c.compress(&page, &mut out).unwrap();
            assert!(n > 0 && n < page.len());
            let mut back = vec![0u8; page.len()];
            assert_eq!(c.decompress(&out[..n], &mut back), Some(page.len()));
            assert_eq!(back, page);
            assert_eq!(c.decompress(&out[..n / 2], &mut back[..10]), None);
        }
        assert_eq!(Algo::parse_list("zstd,lz4,zstd").unwrap(), [Algo::Zstd, Algo::Lz4]);
        let e = Algo::parse("lzo").unwrap_err().to_string();
        assert!(e.contains("lz4, zstd"), "{e}");
    }
}
