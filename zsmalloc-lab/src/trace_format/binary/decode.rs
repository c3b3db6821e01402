//! Reading the binary trace: streaming through one fixed buffer (no allocation per
//! operation); a cut, corrupt or absurd stream is refused in one line naming the input and
//! the byte offset.

use std::io::{self, BufReader, Read};

use zsmalloc_core::text_input::io_reason;

use super::{code, get_varint, unzigzag, BinaryHeader, VarintError, FLAG_ZSTD, MAGIC};
use super::{MAX_HEADER_STRING, VERSION};
use crate::error::{LabError, LabResult};
use crate::trace_format::TraceOp;

/// The most bytes one operation takes (a move: an op code and two 10-byte varints).
const MAX_OP: usize = 21;

const BUFFER: usize = 1 << 16;

/// A reader that counts the bytes it gave (progress by bytes of the input).
struct Counted<R> {
    inner: R,
    n: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.n += n as u64;
        Ok(n)
    }
}

enum Source<R> {
    Plain(Counted<R>),
    Zstd(Box<zstd::stream::read::Decoder<'static, BufReader<Counted<R>>>>),
}

/// Reads a binary trace from `R` (from its first byte, the magic).
pub struct BinaryReader<R> {
    src: Source<R>,
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    /// The offset in the operations of `buf[0]`.
    base: u64,
    /// The header's length: the file offset of the operations when they are not compressed.
    header_len: u64,
    header: BinaryHeader,
    prev: u64,
    ops: u64,
    ended: bool,
    name: String,
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

impl<R: Read> BinaryReader<R> {
    /// Reads and checks the header of `input`, named `name` in refusals.
    pub fn new(input: R, name: &str) -> LabResult<Self> {
        let mut input = Counted { inner: input, n: 0 };
        let refuse = |at: u64, why: &str| LabError::usage(format!("{name}: byte {at}: {why}"));
        let exact = |input: &mut Counted<R>, n: usize, what: &str| -> LabResult<Vec<u8>> {
            let at = input.n;
            let mut b = vec![0; n];
            let got = read_full(input, &mut b)
                .map_err(|e| LabError::usage(format!("cannot read '{name}': {}", io_reason(&e))))?;
            if got < n {
                return Err(refuse(at + got as u64, &format!("the header ends inside {what}")));
            }
            Ok(b)
        };
        let fixed = exact(&mut input, 16, "its fixed part (16 bytes)")?;
        if fixed[..8] != MAGIC {
            return Err(refuse(0, "not a binary trace (its magic bytes differ)"));
        }
        if fixed[8] != VERSION {
            return Err(refuse(
                8,
                &format!(
                    "binary trace version {} (this zsmalloc reads version {VERSION})",
                    fixed[8]
                ),
            ));
        }
        if fixed[9] & !FLAG_ZSTD != 0 {
            return Err(refuse(9, &format!("unknown flags 0x{:02x}", fixed[9])));
        }
        let page_size = u32::from_le_bytes([fixed[10], fixed[11], fixed[12], fixed[13]]);
        let mut strings = Vec::with_capacity(2);
        let mut len = u16::from_le_bytes([fixed[14], fixed[15]]);
        for what in ["the command line", "the notes"] {
            let at = input.n;
            if usize::from(len) > MAX_HEADER_STRING {
                return Err(refuse(
                    at - 2,
                    &format!("{what} is {len} bytes (at most {MAX_HEADER_STRING})"),
                ));
            }
            let bytes = exact(&mut input, usize::from(len), what)?;
            let s = String::from_utf8(bytes)
                .map_err(|_| refuse(at, &format!("{what} is not UTF-8")))?;
            strings.push(s);
            if strings.len() == 1 {
                let b = exact(&mut input, 2, "the length of the notes")?;
                len = u16::from_le_bytes([b[0], b[1]]);
            }
        }
        let notes = strings.pop().unwrap_or_default();
        let command = strings.pop().unwrap_or_default();
        let zstd = fixed[9] & FLAG_ZSTD != 0;
        let header_len = input.n;
        let src = if zstd {
            let d = zstd::stream::read::Decoder::new(input).map_err(|e| {
                LabError::usage(format!("cannot read '{name}': zstd: {}", io_reason(&e)))
            })?;
            Source::Zstd(Box::new(d))
        } else {
            Source::Plain(input)
        };
        Ok(BinaryReader {
            src,
            buf: vec![0; BUFFER].into_boxed_slice(),
            pos: 0,
            end: 0,
            base: 0,
            header_len,
            header: BinaryHeader { zstd, page_size, command, notes },
            prev: 0,
            ops: 0,
            ended: false,
            name: name.to_string(),
        })
    }

    pub fn header(&self) -> &BinaryHeader {
        &self.header
    }

    /// Operations read so far.
    pub fn ops(&self) -> u64 {
        self.ops
    }

    /// Bytes of the input read so far (compressed bytes for a zstd trace).
    pub fn bytes_read(&self) -> u64 {
        match &self.src {
            Source::Plain(c) => c.n,
            Source::Zstd(d) => d.get_ref().get_ref().n,
        }
    }

    /// A refusal at offset `at` of the operations.
    #[cold]
    fn refuse(&self, at: u64, why: &str) -> LabError {
        if self.header.zstd {
            LabError::usage(format!(
                "{}: byte {at} of the decompressed operations: {why}",
                self.name
            ))
        } else {
            LabError::usage(format!("{}: byte {}: {why}", self.name, self.header_len + at))
        }
    }

    fn read_more(&mut self) -> io::Result<usize> {
        let buf = &mut self.buf[self.end..];
        loop {
            let r = match &mut self.src {
                Source::Plain(c) => c.read(buf),
                Source::Zstd(d) => d.read(buf),
            };
            match r {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return r,
            }
        }
    }

    /// Moves what is left to the front and reads until an operation fits or the input ends.
    #[cold]
    fn fill(&mut self) -> LabResult<()> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.base += self.pos as u64;
        self.end -= self.pos;
        self.pos = 0;
        while self.end < MAX_OP {
            match self.read_more() {
                Ok(0) => break,
                Ok(n) => self.end += n,
                Err(e) => {
                    let at = self.base + self.end as u64;
                    let why = if self.header.zstd {
                        format!("zstd: {}", io_reason(&e))
                    } else {
                        io_reason(&e)
                    };
                    return Err(self.refuse(at, &why));
                }
            }
        }
        Ok(())
    }

    /// The varint at `*i` of the buffered operation starting at `self.pos`.
    #[inline]
    fn varint(&self, i: &mut usize, what: &str) -> LabResult<u64> {
        match get_varint(&self.buf[self.pos + *i..self.end]) {
            Ok((v, n)) => {
                *i += n;
                Ok(v)
            }
            Err(e) => {
                let at = self.base + (self.pos + *i) as u64;
                Err(self.refuse(
                    at,
                    &match e {
                        VarintError::Truncated => format!("the input ends inside {what}"),
                        VarintError::TooLong => format!("{what} is not a varint of 64 bits"),
                    },
                ))
            }
        }
    }

    #[inline]
    fn handle(&mut self, i: &mut usize) -> LabResult<u64> {
        let z = self.varint(i, "a handle")?;
        self.prev = self.prev.wrapping_add(unzigzag(z) as u64);
        Ok(self.prev)
    }

    #[inline]
    fn len(&self, i: &mut usize) -> LabResult<usize> {
        let at = self.base + (self.pos + *i) as u64;
        let v = self.varint(i, "a length")?;
        usize::try_from(v).map_err(|_| self.refuse(at, &format!("a length of {v} bytes")))
    }

    /// The next operation, `Ok(None)` after the end record.
    #[inline]
    pub fn next_op(&mut self) -> LabResult<Option<TraceOp>> {
        if self.ended {
            return Ok(None);
        }
        if self.end - self.pos < MAX_OP {
            self.fill()?;
        }
        let at = self.base + self.pos as u64;
        let Some(&c) = self.buf[self.pos..self.end].first() else {
            return Err(self.refuse(at, "the operations end without their end record (cut short)"));
        };
        let mut i = 1;
        let op = match c {
            code::STORE | code::READ | code::MALLOC | code::WRITE | code::READ_SG => {
                let id = self.handle(&mut i)?;
                let len = self.len(&mut i)?;
                match c {
                    code::STORE => TraceOp::Store { id, len },
                    code::READ => TraceOp::Read { id, len },
                    code::MALLOC => TraceOp::Malloc { id, len },
                    code::WRITE => TraceOp::Write { id, len },
                    _ => TraceOp::ReadSg { id, len },
                }
            }
            code::FREE => TraceOp::Free { id: self.handle(&mut i)? },
            code::COMPACT => TraceOp::Compact,
            code::MOVE => {
                let from = self.handle(&mut i)?;
                TraceOp::Move { from, to: self.handle(&mut i)? }
            }
            code::END => {
                let count = self.varint(&mut i, "the count of the end record")?;
                self.pos += i;
                return self.end_record(at, count).map(|()| None);
            }
            other => return Err(self.refuse(at, &format!("unknown op code 0x{other:02x}"))),
        };
        self.pos += i;
        self.ops += 1;
        Ok(Some(op))
    }

    /// Checks the end record (at `at`, counting `count` operations) and that nothing follows.
    #[cold]
    fn end_record(&mut self, at: u64, count: u64) -> LabResult<()> {
        if count != self.ops {
            return Err(self.refuse(
                at,
                &format!("the end record counts {count} operations, {} were read", self.ops),
            ));
        }
        let after = self.base + self.pos as u64;
        if self.pos < self.end {
            return Err(self.refuse(after, "bytes follow the end record"));
        }
        self.pos = 0;
        self.end = 0;
        self.base = after;
        match self.read_more() {
            Ok(0) => {}
            Ok(_) => return Err(self.refuse(after, "bytes follow the end record")),
            Err(e) => return Err(self.refuse(after, &io_reason(&e))),
        }
        self.ended = true;
        Ok(())
    }
}
