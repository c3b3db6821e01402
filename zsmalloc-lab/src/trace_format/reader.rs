//! Reading a trace, one operation a line.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use super::TraceOp;
use crate::error::{LabError, LabResult};

/// Reads a trace file line by line; errors name the file and line.
pub struct TraceReader {
    lines: std::io::Lines<BufReader<File>>,
    path: PathBuf,
    line_no: u64,
}

impl TraceReader {
    pub fn open(path: &Path) -> LabResult<Self> {
        let file = File::open(path).map_err(|e| LabError::io("read", path, &e))?;
        if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
            return Err(LabError::usage(format!(
                "cannot read '{}': is a directory",
                path.display()
            )));
        }
        Ok(TraceReader {
            lines: BufReader::with_capacity(1 << 16, file).lines(),
            path: path.into(),
            line_no: 0,
        })
    }

    /// The next operation, `Ok(None)` at the end.
    pub fn next_op(&mut self) -> LabResult<Option<TraceOp>> {
        loop {
            let Some(line) = self.lines.next() else { return Ok(None) };
            self.line_no += 1;
            let line = line.map_err(|e| {
                LabError::usage(format!(
                    "cannot read '{}' (line {}): {e}",
                    self.path.display(),
                    self.line_no
                ))
            })?;
            match TraceOp::parse(&line) {
                Ok(Some(op)) => return Ok(Some(op)),
                Ok(None) => continue,
                Err(m) => {
                    return Err(LabError::usage(format!(
                        "{}:{}: {m}",
                        self.path.display(),
                        self.line_no
                    )))
                }
            }
        }
    }

    /// Counts the operations of a trace (for the progress bar), validating every line.
    pub fn count_ops(path: &Path) -> LabResult<u64> {
        let mut r = TraceReader::open(path)?;
        let mut n = 0;
        while r.next_op()?.is_some() {
            n += 1;
        }
        Ok(n)
    }
}
