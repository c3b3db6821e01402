//! Writing the binary trace: the header, then operations gathered in a buffer and handed to
//! the output (or to zstd) a buffer at a time, so an operation costs a few pushes.

use std::io::{self, Write};

use super::{code, put_varint, zigzag, BinaryHeader, FLAG_ZSTD, MAGIC, MAX_HEADER_STRING, VERSION};
use crate::trace_format::TraceOp;

/// Bytes of operations gathered before they are written.
const BATCH: usize = 1 << 16;

/// The zstd level of `--zstd`: the library's default, fast to write and to read.
const ZSTD_LEVEL: i32 = 3;

enum Sink<W: Write> {
    Plain(W),
    Zstd(zstd::stream::write::Encoder<'static, W>),
}

/// Writes a binary trace to `W`; [`BinaryEncoder::finish`] writes the end record and gives
/// the output back.
pub struct BinaryEncoder<W: Write> {
    sink: Sink<W>,
    batch: Vec<u8>,
    prev: u64,
    ops: u64,
    /// Bytes handed to the output (before zstd, if any).
    written: u64,
}

/// `s` cut to at most [`MAX_HEADER_STRING`] bytes, on a character boundary.
fn bounded(s: &str) -> &str {
    let mut end = s.len().min(MAX_HEADER_STRING);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl<W: Write> BinaryEncoder<W> {
    /// Writes the header to `out` (strings over the bound are cut).
    pub fn new(mut out: W, header: &BinaryHeader) -> io::Result<Self> {
        let mut head = Vec::with_capacity(64);
        head.extend_from_slice(&MAGIC);
        head.push(VERSION);
        head.push(if header.zstd { FLAG_ZSTD } else { 0 });
        head.extend_from_slice(&header.page_size.to_le_bytes());
        for s in [&header.command, &header.notes] {
            let s = bounded(s);
            head.extend_from_slice(&(s.len() as u16).to_le_bytes());
            head.extend_from_slice(s.as_bytes());
        }
        out.write_all(&head)?;
        let sink = if header.zstd {
            Sink::Zstd(zstd::stream::write::Encoder::new(out, ZSTD_LEVEL)?)
        } else {
            Sink::Plain(out)
        };
        let written = head.len() as u64;
        Ok(BinaryEncoder { sink, batch: Vec::with_capacity(BATCH + 32), prev: 0, ops: 0, written })
    }

    #[inline]
    fn handle(&mut self, id: u64) {
        put_varint(&mut self.batch, zigzag(id.wrapping_sub(self.prev) as i64));
        self.prev = id;
    }

    /// Appends one operation.
    #[inline]
    pub fn op(&mut self, op: &TraceOp) -> io::Result<()> {
        let (c, id, len) = match *op {
            TraceOp::Store { id, len } => (code::STORE, id, Some(len)),
            TraceOp::Free { id } => (code::FREE, id, None),
            TraceOp::Read { id, len } => (code::READ, id, Some(len)),
            TraceOp::Malloc { id, len } => (code::MALLOC, id, Some(len)),
            TraceOp::Write { id, len } => (code::WRITE, id, Some(len)),
            TraceOp::ReadSg { id, len } => (code::READ_SG, id, Some(len)),
            TraceOp::Compact => {
                self.batch.push(code::COMPACT);
                return self.counted();
            }
            TraceOp::Move { from, to } => {
                self.batch.push(code::MOVE);
                self.handle(from);
                self.handle(to);
                return self.counted();
            }
        };
        self.batch.push(c);
        self.handle(id);
        if let Some(len) = len {
            put_varint(&mut self.batch, len as u64);
        }
        self.counted()
    }

    #[inline]
    fn counted(&mut self) -> io::Result<()> {
        self.ops += 1;
        if self.batch.len() >= BATCH {
            self.drain()?;
        }
        Ok(())
    }

    /// The trace's length so far, in bytes before any compression.
    pub fn bytes(&self) -> u64 {
        self.written + self.batch.len() as u64
    }

    fn drain(&mut self) -> io::Result<()> {
        self.written += self.batch.len() as u64;
        match &mut self.sink {
            Sink::Plain(w) => w.write_all(&self.batch)?,
            Sink::Zstd(z) => z.write_all(&self.batch)?,
        }
        self.batch.clear();
        Ok(())
    }

    /// Writes the end record (the count of operations) and ends the zstd stream; the output,
    /// flushed.
    pub fn finish(mut self) -> io::Result<W> {
        self.batch.push(code::END);
        put_varint(&mut self.batch, self.ops);
        self.drain()?;
        let mut out = match self.sink {
            Sink::Plain(w) => w,
            Sink::Zstd(z) => z.finish()?,
        };
        out.flush()?;
        Ok(out)
    }
}
