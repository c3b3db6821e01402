//! Errors of the lab. Each carries the exit code the `zsmalloc` command uses.

use std::fmt;

/// Why a lab operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabError {
    /// Bad flags, bad configuration, or an unreadable/unwritable input or output (exit code 2).
    Usage(String),
    /// A stored object did not read back as written: an allocator bug (exit code 1).
    Verify(String),
    /// Any other failure while running (exit code 1).
    Runtime(String),
}

impl LabError {
    pub fn usage(msg: impl Into<String>) -> Self {
        LabError::Usage(msg.into())
    }

    pub fn runtime(msg: impl Into<String>) -> Self {
        LabError::Runtime(msg.into())
    }

    /// An I/O error on `path`, worded for users: "cannot read 'x': No such file or directory".
    pub fn io(verb: &str, path: &std::path::Path, err: &std::io::Error) -> Self {
        let kind = match err.kind() {
            std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
            std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
            _ => err.to_string(),
        };
        LabError::Usage(format!("cannot {verb} '{}': {kind}", path.display()))
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            LabError::Usage(_) => 2,
            LabError::Verify(_) | LabError::Runtime(_) => 1,
        }
    }
}

impl fmt::Display for LabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabError::Usage(m) | LabError::Runtime(m) => f.write_str(m),
            LabError::Verify(m) => write!(f, "verification failed: {m}"),
        }
    }
}

impl std::error::Error for LabError {}

impl From<zsmalloc_core::Error> for LabError {
    fn from(e: zsmalloc_core::Error) -> Self {
        match e {
            zsmalloc_core::Error::Config { .. } => LabError::Usage(e.to_string()),
            other => LabError::Runtime(other.to_string()),
        }
    }
}

/// Shorthand for results of the lab.
pub type LabResult<T> = std::result::Result<T, LabError>;
