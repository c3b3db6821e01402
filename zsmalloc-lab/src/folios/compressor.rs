//! The compressors of `zsmalloc folios`: the lab's liblz4 and libzstd ([`crate::codec`]) and
//! liblzo2's LZO1X-1 ([`super::lzo`]), the kernel's `lz4`, `zstd` and `lzo`.

use super::lzo::Lzo;
use crate::codec::{Algo, Codec};
use crate::error::{LabError, LabResult};

/// A compressor of the study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compressor {
    Lz4,
    Lzo,
    Zstd,
}

/// The accepted names, for messages.
pub const ACCEPTED: &str = "lz4, lzo, zstd";

impl Compressor {
    pub fn parse(s: &str) -> LabResult<Compressor> {
        match s.trim() {
            "lz4" => Ok(Compressor::Lz4),
            "lzo" => Ok(Compressor::Lzo),
            "zstd" => Ok(Compressor::Zstd),
            "lzo-rle" => Err(LabError::usage(
                "invalid compressor 'lzo-rle': it exists only in the kernel, which compresses \
                 4K pages with it, never a large folio (accepted: lz4, lzo, zstd)",
            )),
            other => {
                Err(LabError::usage(format!("invalid compressor '{other}' (accepted: {ACCEPTED})")))
            }
        }
    }

    /// `lz4,lzo` -> both, in the order given, each once.
    pub fn parse_list(s: &str) -> LabResult<Vec<Compressor>> {
        let mut out = Vec::new();
        for part in s.split(',').filter(|p| !p.trim().is_empty()) {
            let c = Compressor::parse(part)?;
            if !out.contains(&c) {
                out.push(c);
            }
        }
        if out.is_empty() {
            return Err(LabError::usage(format!("no compressor given (accepted: {ACCEPTED})")));
        }
        Ok(out)
    }

    pub fn name(self) -> &'static str {
        match self {
            Compressor::Lz4 => "lz4",
            Compressor::Lzo => "lzo",
            Compressor::Zstd => "zstd",
        }
    }
}

/// One compressor with its contexts; nothing allocates after [`Engine::new`].
pub enum Engine {
    Lab(Codec),
    Lzo(Lzo),
}

impl Engine {
    /// `level` is zstd's.
    pub fn new(c: Compressor, level: i32) -> LabResult<Engine> {
        Ok(match c {
            Compressor::Lz4 => Engine::Lab(Codec::new(Algo::Lz4, level)?),
            Compressor::Zstd => Engine::Lab(Codec::new(Algo::Zstd, level)?),
            Compressor::Lzo => Engine::Lzo(Lzo::new()?),
        })
    }

    /// The largest output of a `len`-byte input, any compressor.
    pub fn bound(len: usize) -> usize {
        Codec::bound(len).max(Lzo::bound(len))
    }

    /// Compresses `src` into `dst` (at least [`Engine::bound`] bytes); the compressed length.
    #[inline]
    pub fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> LabResult<usize> {
        match self {
            Engine::Lab(c) => c.compress(src, dst),
            Engine::Lzo(l) => l.compress(src, dst),
        }
    }

    /// Decompresses `src` into `dst`; the decompressed length, `None` on corrupt input.
    #[inline]
    pub fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Option<usize> {
        match self {
            Engine::Lab(c) => c.decompress(src, dst),
            Engine::Lzo(_) => Lzo::decompress(src, dst),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_round_trips() {
        assert_eq!(
            Compressor::parse_list("zstd,lzo,lz4,lzo").unwrap(),
            [Compressor::Zstd, Compressor::Lzo, Compressor::Lz4]
        );
        let e = Compressor::parse("lzo-rle").unwrap_err();
        assert!(e.to_string().contains("only in the kernel"), "{e}");
        assert_eq!(e.exit_code(), 2);
        let folio: Vec<u8> = (0..65536u32).map(|i| (i % 13) as u8 ^ (i >> 9) as u8).collect();
        for c in [Compressor::Lz4, Compressor::Lzo, Compressor::Zstd] {
            let mut e = Engine::new(c, 3).unwrap();
            let mut out = vec![0u8; Engine::bound(folio.len())];
            let n = e.compress(&folio, &mut out).unwrap();
            let mut back = vec![0u8; folio.len()];
            assert_eq!(e.decompress(&out[..n], &mut back), Some(folio.len()), "{}", c.name());
            assert_eq!(back, folio);
        }
    }
}
