//! Errors of the allocator. Every error maps to a negative errno for the C ABI.

use std::fmt;

/// Why an operation was refused. The pool is unchanged whenever one of these is returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A setting is out of range; `setting` names it and `message` gives the accepted range.
    Config { setting: &'static str, message: String },
    /// A bad argument (zero length, wrong read length, misaligned handle, ...).
    InvalidArgument(String),
    /// The handle does not name a live object of this pool (foreign, garbage, stale or freed).
    InvalidHandle(&'static str),
    /// The handle already holds an object; free it first.
    HandleInUse,
    /// The object is longer than the pool stores (a page; less for zblock).
    TooLarge { len: usize, max: usize },
    /// The memory limit (or the address space reserved for pages) is exhausted.
    OutOfMemory,
    /// The object is being read; try again after the read section ends.
    Busy,
    /// A resource of the calling thread is exhausted for now (`map` mode: every map slot of the
    /// thread's ring holds an open section); try again after ending one.
    Again(String),
    /// Mapping an object's pages failed (`map` mode); the object is unchanged and readable.
    MapFailed { errno: i32 },
    /// 65,535 read sections of the object are open already; end one first.
    TooManyReaders,
    /// The pool keeps no bytes (placement only, docs/DESIGN.md, Placement without payload):
    /// a read or copy of an object's bytes is refused; its placement can be read.
    NoPayload,
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The errno this error maps to (positive; the C ABI returns its negation).
    pub fn errno(&self) -> i32 {
        match self {
            Error::Config { .. } | Error::InvalidArgument(_) | Error::InvalidHandle(_) => {
                libc::EINVAL
            }
            Error::HandleInUse => libc::EEXIST,
            Error::TooLarge { .. } => libc::ENOSPC,
            Error::OutOfMemory => libc::ENOMEM,
            Error::Busy => libc::EBUSY,
            Error::Again(_) => libc::EAGAIN,
            Error::MapFailed { errno } => *errno,
            Error::TooManyReaders => libc::EAGAIN,
            Error::NoPayload => libc::EOPNOTSUPP,
        }
    }

    pub(crate) fn config(setting: &'static str, message: impl Into<String>) -> Self {
        Error::Config { setting, message: message.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config { setting, message } => write!(f, "invalid {setting}: {message}"),
            Error::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            Error::InvalidHandle(why) => write!(f, "invalid handle: {why}"),
            Error::HandleInUse => write!(f, "handle already holds an object; free it first"),
            Error::TooLarge { len, max } => {
                write!(
                    f,
                    "object of {len} bytes is larger than the pool stores (at most {max} bytes)"
                )
            }
            Error::OutOfMemory => write!(f, "out of memory: the pool's page limit is reached"),
            Error::Busy => write!(f, "object is being read; end the read section first"),
            Error::Again(m) => write!(f, "try again: {m}"),
            Error::MapFailed { errno } => write!(
                f,
                "mapping the object's pages failed: {} (the object is unchanged)",
                std::io::Error::from_raw_os_error(*errno)
            ),
            Error::TooManyReaders => {
                write!(f, "65,535 read sections of this object are open; end one first")
            }
            Error::NoPayload => write!(
                f,
                "the pool keeps no object bytes (placement only): reads of bytes are refused; \
                 read the object's placement instead"
            ),
        }
    }
}

impl std::error::Error for Error {}
