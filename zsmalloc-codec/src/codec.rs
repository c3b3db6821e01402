//! One compressor with its state, compressing and decompressing between caller buffers; nothing
//! allocates after [`Codec::new`] (the crate's allocation contract).

use crate::compressor::{Compressor, ZSTD_LEVELS};
use crate::error::Error;
use crate::lz4;
use crate::lzo::Lzo;
use crate::zstd::Zstd;

/// What each compressor keeps between calls.
enum State {
    Lz4,
    Lzo(Lzo),
    Zstd(Zstd),
}

/// A compressor ready to run: its library loaded, its contexts made.
pub struct Codec {
    compressor: Compressor,
    max_input: usize,
    state: State,
}

impl Codec {
    /// A codec for inputs up to `max_input` bytes (a page, a folio). `zstd_level` is zstd's
    /// alone, one of [`ZSTD_LEVELS`]; lz4 and lzo take none and ignore it. Loads liblzo2 for
    /// `lzo` (refused when it is missing) and sizes zstd's contexts for `max_input`.
    pub fn new(compressor: Compressor, zstd_level: i32, max_input: usize) -> Result<Codec, Error> {
        let state = match compressor {
            Compressor::Lz4 => State::Lz4,
            Compressor::Lzo => State::Lzo(Lzo::new()?),
            Compressor::Zstd if !ZSTD_LEVELS.contains(&zstd_level) => {
                return Err(Error::ZstdLevel(zstd_level))
            }
            Compressor::Zstd => State::Zstd(Zstd::new(zstd_level, max_input)?),
        };
        Ok(Codec { compressor, max_input, state })
    }

    pub fn compressor(&self) -> Compressor {
        self.compressor
    }

    /// The longest input [`Codec::compress`] takes.
    pub fn max_input(&self) -> usize {
        self.max_input
    }

    /// Compresses `src` into `dst`; the compressed length. A `dst` of
    /// [`Compressor::bound`]`(src.len())` bytes always suffices; a shorter one may be refused
    /// ([`Error::OutputTooSmall`], always for lzo, which takes no output limit).
    #[inline]
    pub fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, Error> {
        if src.len() > self.max_input {
            return Err(Error::InputTooLong {
                compressor: self.compressor,
                len: src.len(),
                max: self.max_input,
            });
        }
        match &mut self.state {
            State::Lz4 => lz4::compress(src, dst),
            State::Lzo(l) => l.compress(src, dst),
            State::Zstd(z) => z.compress(src, dst),
        }
    }

    /// Decompresses `src` into `dst`; the decompressed length. Corrupt input, or an output
    /// longer than `dst`, is refused ([`Error::Corrupt`]), never read or written past.
    #[inline]
    pub fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, Error> {
        match &mut self.state {
            State::Lz4 => lz4::decompress(src, dst),
            State::Lzo(l) => l.decompress(src, dst),
            State::Zstd(z) => z.decompress(src, dst),
        }
    }
}
