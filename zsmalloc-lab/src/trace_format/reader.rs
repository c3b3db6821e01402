//! Reading a trace, one operation a line, through the bounded reader of every text input
//! ([`zsmalloc_core::text_input`]): a line over its limit, a NUL byte or bytes that are not
//! UTF-8 are refused naming the line, so `/dev/zero` or a binary file costs one line's buffer.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use zsmalloc_core::text_input::{Limits, TextError, TextLines};

use super::TraceOp;
use crate::error::{LabError, LabResult};

/// Reads a trace line by line, without an allocation per line; errors name the input and line.
pub struct TraceReader<R = File> {
    lines: TextLines<R>,
}

impl TraceReader<File> {
    /// Opens the file at `path` (regular or not: it is read once, front to back).
    pub fn open(path: &Path) -> LabResult<Self> {
        let lines = TextLines::open(path, Limits::STREAM).map_err(refusal)?;
        Ok(TraceReader { lines })
    }
}

impl<R: Read> TraceReader<R> {
    /// Reads `input`, named `name` in refusals.
    pub fn new(input: R, name: &str) -> Self {
        TraceReader { lines: TextLines::new(input, name, Limits::STREAM) }
    }

    /// The next operation, `Ok(None)` at the end.
    #[inline]
    pub fn next_op(&mut self) -> LabResult<Option<TraceOp>> {
        loop {
            let Some((_, line)) = self.lines.next_line().map_err(refusal)? else {
                return Ok(None);
            };
            match TraceOp::parse(line) {
                Ok(Some(op)) => return Ok(Some(op)),
                Ok(None) => continue,
                Err(m) => return Err(refusal(self.lines.error(m))),
            }
        }
    }

    /// The number of the line last read.
    pub fn line_no(&self) -> u64 {
        self.lines.line_no()
    }

    /// Bytes read so far (for progress by bytes).
    pub fn bytes_read(&self) -> u64 {
        self.lines.bytes_read()
    }
}

/// A refusal of the input, as `input:line: why` (exit 2).
fn refusal(e: TextError) -> LabError {
    match e.line {
        0 => LabError::usage(format!("cannot read '{}': {}", e.input, e.message)),
        n => LabError::usage(format!("{}:{n}: {}", e.input, e.message)),
    }
}
