//! Writing a trace, text or binary: through the shared output sink ([`crate::atomic_file`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use super::binary::{BinaryEncoder, BinaryHeader};
use super::{TraceFormat, TraceOp};
use crate::atomic_file::AtomicFile;
use crate::error::{LabError, LabResult};

/// How a trace is written: its format, and for a binary one whether zstd frames its
/// operations and the page size it names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceEncoding {
    pub format: TraceFormat,
    pub zstd: bool,
    /// The page size of the pool the operations ran on (0: not known).
    pub page_size: u32,
}

enum Out {
    Text(AtomicFile),
    Binary(BinaryEncoder<AtomicFile>),
}

/// Writes a trace file (`--record`, `trace convert`, `kernel capture`, `kernel import`,
/// `folios --trace-dir`). The bytes go to a temporary file beside the trace, renamed to it by
/// [`TraceWriter::finish`]: a command that fails (or is interrupted) leaves no partial trace,
/// and an existing file at the path is kept until the new one is complete.
pub struct TraceWriter {
    out: Out,
    path: PathBuf,
}

/// The command line of this process, as a binary trace's header names it.
fn command_line() -> String {
    let args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    args.join(" ")
}

impl TraceWriter {
    /// A text trace at `path`, with `header` as its header comments.
    pub fn create(path: &Path, header: &[String]) -> LabResult<Self> {
        TraceWriter::create_as(path, header, TraceEncoding::default())
    }

    /// A trace at `path` written as `encoding` says; `header` is the text trace's header
    /// comments, or the binary trace's notes.
    pub fn create_as(path: &Path, header: &[String], encoding: TraceEncoding) -> LabResult<Self> {
        let file = AtomicFile::create(path)?;
        let failed = |e: std::io::Error| LabError::io("write", path, &e);
        match encoding.format {
            TraceFormat::Text => {
                let mut w = TraceWriter { out: Out::Text(file), path: path.into() };
                w.raw_line(
                    "# zsmalloc trace v1: store <id> <len> | read <id> <len> | free <id> | compact",
                )?;
                for h in header {
                    w.raw_line(&format!("# {h}"))?;
                }
                Ok(w)
            }
            TraceFormat::Binary => {
                let head = BinaryHeader {
                    zstd: encoding.zstd,
                    page_size: encoding.page_size,
                    command: command_line(),
                    notes: header.join("\n"),
                };
                let enc = BinaryEncoder::new(file, &head).map_err(failed)?;
                Ok(TraceWriter { out: Out::Binary(enc), path: path.into() })
            }
        }
    }

    fn raw_line(&mut self, line: &str) -> LabResult<()> {
        let r = match &mut self.out {
            Out::Text(f) => writeln!(f, "{line}"),
            Out::Binary(_) => Ok(()),
        };
        r.map_err(|e| LabError::io("write", &self.path, &e))
    }

    #[inline]
    pub fn op(&mut self, op: &TraceOp) -> LabResult<()> {
        let out = match &mut self.out {
            Out::Binary(b) => {
                return b.op(op).map_err(|e| LabError::io("write", &self.path, &e));
            }
            Out::Text(f) => f,
        };
        let r = match *op {
            TraceOp::Store { id, len } => writeln!(out, "store {id} {len}"),
            TraceOp::Read { id, len } => writeln!(out, "read {id} {len}"),
            TraceOp::Free { id } => writeln!(out, "free {id}"),
            _ => writeln!(out, "{}", op.to_line()),
        };
        r.map_err(|e| LabError::io("write", &self.path, &e))
    }

    /// Writes what is buffered and puts the trace at its path. A writer dropped without it
    /// leaves nothing.
    pub fn finish(self) -> LabResult<()> {
        match self.out {
            Out::Text(f) => f.commit(),
            Out::Binary(b) => {
                b.finish().map_err(|e| LabError::io("write", &self.path, &e))?.commit()
            }
        }
    }
}
