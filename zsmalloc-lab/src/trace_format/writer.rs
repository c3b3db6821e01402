//! Writing a trace: through the shared output sink ([`crate::atomic_file`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use super::TraceOp;
use crate::atomic_file::AtomicFile;
use crate::error::{LabError, LabResult};

/// Writes a trace file (`--record`, `kernel capture`, `kernel import`, `folios --trace-dir`).
/// The lines go to a temporary file beside the trace, renamed to it by [`TraceWriter::finish`]:
/// a command that fails (or is interrupted) leaves no partial trace, and an existing file at
/// the path is kept until the new one is complete.
pub struct TraceWriter {
    out: AtomicFile,
    path: PathBuf,
}

impl TraceWriter {
    /// Creates the temporary file for `path` and writes the header comments.
    pub fn create(path: &Path, header: &[String]) -> LabResult<Self> {
        let out = AtomicFile::create(path)?;
        let mut w = TraceWriter { out, path: path.into() };
        w.raw_line(
            "# zsmalloc trace v1: store <id> <len> | read <id> <len> | free <id> | compact",
        )?;
        for h in header {
            w.raw_line(&format!("# {h}"))?;
        }
        Ok(w)
    }

    fn raw_line(&mut self, line: &str) -> LabResult<()> {
        writeln!(self.out, "{line}").map_err(|e| LabError::io("write", &self.path, &e))
    }

    #[inline]
    pub fn op(&mut self, op: &TraceOp) -> LabResult<()> {
        let r = match *op {
            TraceOp::Store { id, len } => writeln!(self.out, "store {id} {len}"),
            TraceOp::Read { id, len } => writeln!(self.out, "read {id} {len}"),
            TraceOp::Free { id } => writeln!(self.out, "free {id}"),
            _ => writeln!(self.out, "{}", op.to_line()),
        };
        r.map_err(|e| LabError::io("write", &self.path, &e))
    }

    /// Writes what is buffered and puts the trace at its path. A writer dropped without it
    /// leaves nothing.
    pub fn finish(self) -> LabResult<()> {
        self.out.commit()
    }
}
