//! The crate's errors. The runtime ones hold no heap data, so a failing call allocates no
//! more than a succeeding one (see the crate's allocation contract).

use std::fmt;

use crate::compressor::{Compressor, ZSTD_LEVELS};

/// Why liblzo2 cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unavailable {
    /// No `liblzo2.so.2` (nor `liblzo2.so`) to load.
    NotInstalled,
    /// The library lacks a function of this name.
    NoSymbol(&'static str),
    /// `lzo_init()` refused the types declared here (its return code).
    InitFailed(i32),
}

/// Why a compressor could not be named, made or run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A name that is none of the `accepted` compressors.
    UnknownName { name: String, accepted: &'static [Compressor] },
    /// `lzo-rle`, which exists only in the kernel.
    KernelOnly { accepted: &'static [Compressor] },
    /// An empty list of names.
    NoName { accepted: &'static [Compressor] },
    /// A zstd level outside [`ZSTD_LEVELS`].
    ZstdLevel(i32),
    /// liblzo2 is missing or unusable.
    Unavailable(Unavailable),
    /// An input longer than the codec was made for (`max`), or than its library takes.
    InputTooLong { compressor: Compressor, len: usize, max: usize },
    /// The output buffer is shorter than the compressed bytes (or, for lzo, than the bound).
    OutputTooSmall(Compressor),
    /// libzstd refused: its error name, while making a context or compressing.
    Zstd { compressing: bool, reason: &'static str },
    /// liblzo2's compressor returned this code.
    Lzo(i32),
    /// A compressed input that is corrupt, or whose output does not fit the buffer.
    Corrupt(Compressor),
}

impl Error {
    /// Whether the caller asked for something unavailable (a name, a level, a library) rather
    /// than a call failing: commands exit 2 for these.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Error::UnknownName { .. }
                | Error::KernelOnly { .. }
                | Error::NoName { .. }
                | Error::ZstdLevel(_)
                | Error::Unavailable(_)
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |a: &[Compressor]| Compressor::names(a);
        match self {
            Error::UnknownName { name, accepted } => {
                write!(f, "invalid compressor '{name}' (accepted: {})", names(accepted))
            }
            Error::KernelOnly { accepted } => write!(
                f,
                "invalid compressor 'lzo-rle': it exists only in the kernel (LZO1X-1 with zero \
                 runs encoded), no userspace library has it (accepted: {})",
                names(accepted)
            ),
            Error::NoName { accepted } => {
                write!(f, "no compressor given (accepted: {})", names(accepted))
            }
            Error::ZstdLevel(l) => write!(
                f,
                "zstd level {l} is outside {}..={}",
                ZSTD_LEVELS.start(),
                ZSTD_LEVELS.end()
            ),
            Error::Unavailable(Unavailable::NotInstalled) => {
                f.write_str("lzo needs liblzo2 (Debian: apt-get install liblzo2-2)")
            }
            Error::Unavailable(Unavailable::NoSymbol(s)) => write!(f, "liblzo2 has no {s}"),
            Error::Unavailable(Unavailable::InitFailed(rc)) => {
                write!(f, "liblzo2: lzo_init failed ({rc})")
            }
            Error::InputTooLong { compressor, len, max } => write!(
                f,
                "{}: an input of {len} bytes is longer than the {max} bytes the codec takes",
                compressor.name()
            ),
            Error::OutputTooSmall(c) => {
                write!(f, "{} compression failed (output buffer too small)", c.name())
            }
            Error::Zstd { compressing: true, reason } => {
                write!(f, "zstd compression failed: {reason}")
            }
            Error::Zstd { compressing: false, reason } => write!(f, "zstd: {reason}"),
            Error::Lzo(rc) => write!(f, "lzo compression failed ({rc})"),
            Error::Corrupt(c) => write!(
                f,
                "{}: corrupt compressed data, or an output longer than the buffer",
                c.name()
            ),
        }
    }
}

impl std::error::Error for Error {}
