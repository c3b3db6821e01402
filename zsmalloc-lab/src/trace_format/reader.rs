//! Reading a trace, text or binary (told apart by the binary trace's magic bytes). Text is
//! read one operation a line through the bounded reader of every text input
//! ([`zsmalloc_core::text_input`]): a line over its limit, a NUL byte or bytes that are not
//! UTF-8 are refused naming the line, so `/dev/zero` or a foreign binary file costs one
//! line's buffer. A binary trace is read by [`BinaryReader`], refusals naming the byte.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use zsmalloc_core::text_input::{escape, io_reason, Limits, TextError, TextLines};

use super::binary::{BinaryHeader, BinaryReader};
use super::peeked::Peeked;
use super::TraceOp;
use crate::error::{LabError, LabResult};

enum Inner<R> {
    Text(TextLines<Peeked<R>>),
    Binary(BinaryReader<Peeked<R>>),
}

/// Reads a trace without an allocation per operation; errors name the input and the line
/// (text) or the byte (binary).
pub struct TraceReader<R = File> {
    inner: Inner<R>,
}

impl TraceReader<File> {
    /// Opens the file at `path` (regular or not: it is read once, front to back).
    pub fn open(path: &Path) -> LabResult<Self> {
        let file = File::open(path).map_err(|e| LabError::io("read", path, &e))?;
        TraceReader::new(file, &escape(&path.display().to_string()))
    }
}

impl<R: Read> TraceReader<R> {
    /// Reads `input`, named `name` in refusals; its first bytes are read at once.
    pub fn new(input: R, name: &str) -> LabResult<Self> {
        let peeked = Peeked::new(input)
            .map_err(|e| LabError::usage(format!("cannot read '{name}': {}", io_reason(&e))))?;
        let inner = if peeked.is_binary() {
            Inner::Binary(BinaryReader::new(peeked, name)?)
        } else {
            Inner::Text(TextLines::new(peeked, name, Limits::STREAM))
        };
        Ok(TraceReader { inner })
    }

    /// The next operation, `Ok(None)` at the end.
    #[inline]
    pub fn next_op(&mut self) -> LabResult<Option<TraceOp>> {
        let lines = match &mut self.inner {
            Inner::Binary(b) => return b.next_op(),
            Inner::Text(lines) => lines,
        };
        loop {
            let Some((_, line)) = lines.next_line().map_err(refusal)? else {
                return Ok(None);
            };
            match TraceOp::parse(line) {
                Ok(Some(op)) => return Ok(Some(op)),
                Ok(None) => continue,
                Err(m) => return Err(refusal(lines.error(m))),
            }
        }
    }

    /// Where the reader is, for messages: the number of the line last read (text) or of
    /// operations read (binary); [`TraceReader::unit`] says which.
    pub fn line_no(&self) -> u64 {
        match &self.inner {
            Inner::Text(l) => l.line_no(),
            Inner::Binary(b) => b.ops(),
        }
    }

    /// What [`TraceReader::line_no`] counts: "line" or "operation".
    pub fn unit(&self) -> &'static str {
        match &self.inner {
            Inner::Text(_) => "line",
            Inner::Binary(_) => "operation",
        }
    }

    /// Bytes of the input read so far (for progress by bytes).
    pub fn bytes_read(&self) -> u64 {
        match &self.inner {
            Inner::Text(l) => l.bytes_read(),
            Inner::Binary(b) => b.bytes_read(),
        }
    }

    /// The header of a binary trace (`None`: a text trace).
    pub fn binary_header(&self) -> Option<&BinaryHeader> {
        match &self.inner {
            Inner::Text(_) => None,
            Inner::Binary(b) => Some(b.header()),
        }
    }
}

/// A refusal of the input, as `input:line: why` (exit 2).
fn refusal(e: TextError) -> LabError {
    match e.line {
        0 => LabError::usage(format!("cannot read '{}': {}", e.input, e.message)),
        n => LabError::usage(format!("{}:{n}: {}", e.input, e.message)),
    }
}
