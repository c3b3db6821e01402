//! Writing a trace: to a temporary file beside it, renamed at the end.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::TraceOp;
use crate::error::{LabError, LabResult};

/// Writes a trace file (`--record`, `kernel capture`, `kernel import`). The lines go to a
/// temporary file beside the trace, renamed to it by [`TraceWriter::finish`]: a command that
/// fails (or is interrupted) leaves no partial trace, and an existing file at the path is kept
/// until the new one is complete.
pub struct TraceWriter {
    out: BufWriter<File>,
    path: PathBuf,
    temp: PathBuf,
    finished: bool,
}

impl TraceWriter {
    /// Creates the temporary file for `path` and writes the header comments.
    pub fn create(path: &Path, header: &[String]) -> LabResult<Self> {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let temp = path.with_file_name(format!(".{name}.{}.partial", std::process::id()));
        let file = File::create(&temp).map_err(|e| LabError::io("write", path, &e))?;
        let out = BufWriter::with_capacity(1 << 16, file);
        let mut w = TraceWriter { out, path: path.into(), temp, finished: false };
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

    /// Writes what is buffered and puts the trace at its path.
    pub fn finish(mut self) -> LabResult<()> {
        self.out.flush().map_err(|e| LabError::io("write", &self.path, &e))?;
        std::fs::rename(&self.temp, &self.path)
            .map_err(|e| LabError::io("write", &self.path, &e))?;
        self.finished = true;
        Ok(())
    }
}

impl Drop for TraceWriter {
    /// A trace that was not finished is removed.
    fn drop(&mut self) {
        if !self.finished {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}
