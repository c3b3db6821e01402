//! Errors of the lab. Each carries the exit code the `zsmalloc` command uses.

use std::fmt;

use zsmalloc_core::text_input::{escape, io_reason};

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

    /// An I/O error on `path`, in the one wording of OS errors: "cannot read 'x': no such file
    /// or directory".
    pub fn io(verb: &str, path: &std::path::Path, err: &std::io::Error) -> Self {
        LabError::Usage(format!("cannot {verb} '{}': {}", path.display(), io_reason(err)))
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            LabError::Usage(_) => 2,
            LabError::Verify(_) | LabError::Runtime(_) => 1,
        }
    }
}

/// Every message is one line whatever it quotes: a control character of a flag's value, a
/// file name or an input (`\n`, `\u{1b}`) is shown escaped, never sent to the terminal.
impl fmt::Display for LabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabError::Usage(m) | LabError::Runtime(m) => f.write_str(&escape(m)),
            LabError::Verify(m) => write!(f, "verification failed: {}", escape(m)),
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

/// A compressor that cannot be named or loaded is the user's to fix (exit 2); a call that
/// fails is the run's.
impl From<zsmalloc_codec::Error> for LabError {
    fn from(e: zsmalloc_codec::Error) -> Self {
        if e.is_usage() {
            LabError::Usage(e.to_string())
        } else {
            LabError::Runtime(e.to_string())
        }
    }
}

/// Shorthand for results of the lab.
pub type LabResult<T> = std::result::Result<T, LabError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line_and_os_errors_have_one_wording() {
        let e = LabError::usage("invalid chain-size: '\x1b[2J\n' is not a whole number");
        assert_eq!(e.to_string(), "invalid chain-size: '\\u{1b}[2J\\n' is not a whole number");
        let dir = std::env::temp_dir();
        let err = std::fs::read(&dir).unwrap_err();
        let e = LabError::io("read", &dir, &err);
        assert_eq!(e.to_string(), format!("cannot read '{}': is a directory", dir.display()));
        assert_eq!(e.exit_code(), 2);
    }
}
