//! Bounded reading of text inputs: class-table files here, and the lab's traces, snapshots,
//! imports and corpus lists. Whatever a path names — a file, a pipe, a FIFO, `/dev/zero` — it is
//! read through one buffer with three limits, and a refusal names the input, the line and the
//! limit in one line:
//!
//! - a line longer than [`Limits::max_line`] bytes (an endless line of `/dev/zero` is refused
//!   after that many bytes, not collected);
//! - an input longer than [`Limits::max_bytes`] (traces have none: they are streamed);
//! - a NUL byte, or a line that is not UTF-8: the input is not text.
//!
//! Rows are counted by the caller, which knows what a row is (a class table stops at the most
//! classes a table can have). Control characters of the input never reach a message raw: every
//! quoted piece goes through [`escape`].

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// The longest line any text input may have: far above a real one (a trace line is under 50
/// bytes, a comment a few hundred), so only a binary or endless input meets it.
pub const MAX_LINE_BYTES: usize = 64 << 10;

/// The largest class-table file: a table of the most classes there can be, each commented,
/// fits many times over.
pub const MAX_TABLE_FILE_BYTES: u64 = 4 << 20;

/// The largest file read whole (every `/proc` and `/sys` file the lab reads is far smaller).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// The limits of one input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_line: usize,
    /// `u64::MAX`: no limit on the whole (a streamed input).
    pub max_bytes: u64,
}

impl Limits {
    /// A streamed input: lines bounded, the whole not.
    pub const STREAM: Limits = Limits { max_line: MAX_LINE_BYTES, max_bytes: u64::MAX };
    /// A class-table file.
    pub const TABLE: Limits = Limits { max_line: MAX_LINE_BYTES, max_bytes: MAX_TABLE_FILE_BYTES };
    /// A file read whole: a kernel's or the process's own (`/proc`, `/sys`), a record.
    pub const FILE: Limits = Limits { max_line: MAX_LINE_BYTES, max_bytes: MAX_FILE_BYTES };
}

/// Why an input was refused: one line, naming the input and the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextError {
    /// The input as the user named it.
    pub input: String,
    /// 1-based; 0 when the refusal is not about a line (the input cannot be opened).
    pub line: u64,
    pub message: String,
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}: {}", self.input, self.message),
            n => write!(f, "{}: line {n}: {}", self.input, self.message),
        }
    }
}

impl std::error::Error for TextError {}

/// `s` with every control character written as an escape (`\n`, `\t`, `\0`, `\u{1b}`), so
/// that a message quoting an input stays one line and sends nothing to the terminal.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c == '\0' {
            out.push_str("\\0");
        } else if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Bytes as a person reads them: `64 KiB`, `4 MiB`.
fn shown(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// The lines of one input, each borrowed from one buffer the reader owns: no allocation and no
/// copy per line (a line is copied only when the buffer is refilled under it).
pub struct TextLines<R> {
    inner: R,
    input: String,
    limits: Limits,
    /// `buf[start..end]` is read and not yet returned.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    line_no: u64,
    bytes: u64,
}

impl TextLines<File> {
    /// Opens `path` for reading: a regular file, a FIFO, a character device alike (each read
    /// under the same limits). A directory is refused.
    pub fn open(path: &Path, limits: Limits) -> Result<Self, TextError> {
        let input = escape(&path.display().to_string()).into_owned();
        let fail = |message: String| TextError { input: input.clone(), line: 0, message };
        let file = File::open(path).map_err(|e| fail(io_reason(&e)))?;
        if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
            return Err(fail("is a directory, not a file".into()));
        }
        Ok(TextLines::new(file, input, limits))
    }
}

/// Bytes read from the input at a time.
const READ_BYTES: usize = 64 << 10;

impl<R: Read> TextLines<R> {
    /// Reads `inner`, named `input` in refusals.
    pub fn new(inner: R, input: impl Into<String>, limits: Limits) -> Self {
        TextLines {
            inner,
            input: input.into(),
            limits,
            buf: Vec::new(),
            start: 0,
            end: 0,
            eof: false,
            line_no: 0,
            bytes: 0,
        }
    }

    /// The input's name as refusals give it.
    pub fn input(&self) -> &str {
        &self.input
    }

    /// The number of the line last returned (1-based).
    pub fn line_no(&self) -> u64 {
        self.line_no
    }

    /// Bytes of the lines returned so far, their ends included.
    pub fn bytes_read(&self) -> u64 {
        self.bytes
    }

    /// A refusal at the current line.
    pub fn error(&self, message: impl Into<String>) -> TextError {
        TextError { input: self.input.clone(), line: self.line_no, message: message.into() }
    }

    /// The next line without its end (`\n` or `\r\n`), with its number (1-based); `None` at
    /// the end of the input.
    #[inline]
    pub fn next_line(&mut self) -> Result<Option<(u64, &str)>, TextError> {
        // The line is buf[from..to]: up to a line end, or all that is left at the end of the
        // input, or (refused below) more than a line may hold without an end in sight.
        let (from, to) = loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                break (self.start, self.start + i);
            }
            if self.end - self.start > self.limits.max_line || self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                break (self.start, self.end);
            }
            self.refill()?;
        };
        self.line_no += 1;
        if to - from > self.limits.max_line {
            return Err(self.error(format!(
                "the line is longer than {} (the limit of a line): not a text file?",
                shown(self.limits.max_line as u64)
            )));
        }
        let taken = (to - from + usize::from(to < self.end)) as u64;
        self.start = (to + 1).min(self.end);
        self.bytes += taken;
        if self.bytes > self.limits.max_bytes {
            return Err(self.error(format!(
                "the input is larger than {} (the limit of this input)",
                shown(self.limits.max_bytes)
            )));
        }
        let mut line = &self.buf[from..to];
        if let [rest @ .., b'\r'] = line {
            line = rest;
        }
        if let Some(at) = memchr::memchr(0, line) {
            return Err(TextError {
                input: self.input.clone(),
                line: self.line_no,
                message: format!("a NUL byte at column {}: not a text file", at + 1),
            });
        }
        match std::str::from_utf8(line) {
            Ok(text) => Ok(Some((self.line_no, text))),
            Err(e) => Err(TextError {
                input: self.input.clone(),
                line: self.line_no,
                message: format!("not UTF-8 text (at column {})", e.valid_up_to() + 1),
            }),
        }
    }

    /// Moves what is not yet returned to the front and reads more after it.
    #[cold]
    fn refill(&mut self) -> Result<(), TextError> {
        if self.buf.is_empty() {
            self.buf.resize(self.limits.max_line + 1 + READ_BYTES, 0);
        }
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(TextError {
                        input: self.input.clone(),
                        line: self.line_no + 1,
                        message: io_reason(&e),
                    })
                }
            }
        }
    }
}

/// Reads all of `r` into a string under `limits`, line ends kept as `\n` (for inputs parsed
/// whole: small files of the kernel, class tables).
pub fn read_all<R: Read>(r: R, input: &str, limits: Limits) -> Result<String, TextError> {
    TextLines::new(r, input, limits).collect_text()
}

/// The text of the file at `path` under `limits`.
pub fn read_path(path: &Path, limits: Limits) -> Result<String, TextError> {
    TextLines::open(path, limits)?.collect_text()
}

impl<R: Read> TextLines<R> {
    fn collect_text(mut self) -> Result<String, TextError> {
        let mut out = String::new();
        while let Some((_, l)) = self.next_line()? {
            out.push_str(l);
            out.push('\n');
        }
        Ok(out)
    }
}

/// An I/O error as a person reads it: `permission denied`, not `Permission denied (os error
/// 13)`. The one wording of an OS error in every message.
pub fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    let s = s.split(" (os error").next().unwrap_or(&s).to_string();
    let mut c = s.chars();
    c.next().map_or(s.clone(), |f| f.to_lowercase().collect::<String>() + c.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(bytes: &[u8], limits: Limits) -> Result<Vec<String>, TextError> {
        let mut r = TextLines::new(bytes, "input", limits);
        let mut out = Vec::new();
        while let Some((_, l)) = r.next_line()? {
            out.push(l.to_string());
        }
        Ok(out)
    }

    #[test]
    fn lines_end_with_lf_or_crlf_and_the_last_may_have_none() {
        let got = lines_of(b"a\r\nb\n\nc", Limits::STREAM).unwrap();
        assert_eq!(got, ["a", "b", "", "c"]);
        assert!(lines_of(b"", Limits::STREAM).unwrap().is_empty());
    }

    #[test]
    fn a_long_line_is_refused_at_the_limit_naming_the_line() {
        let limits = Limits { max_line: 8, max_bytes: u64::MAX };
        assert_eq!(lines_of(b"12345678\n", limits).unwrap(), ["12345678"]);
        let e = lines_of(b"ok\n123456789\n", limits).unwrap_err();
        assert_eq!(e.line, 2);
        assert_eq!(e.to_string(), "input: line 2: the line is longer than 8 bytes (the limit of a line): not a text file?");
    }

    #[test]
    fn an_endless_input_is_refused_after_the_line_limit() {
        let zeros = std::io::repeat(b'x').take(u64::MAX);
        let mut r = TextLines::new(zeros, "/dev/zero", Limits::STREAM);
        let e = r.next_line().unwrap_err();
        assert!(e.message.contains("longer than 64 KiB"), "{e}");
        assert_eq!(r.bytes_read(), 0, "nothing of the line is taken");
    }

    #[test]
    fn a_large_input_nul_and_non_utf8_are_refused() {
        let limits = Limits { max_line: 100, max_bytes: 10 };
        let e = lines_of(b"12345\n12345\n", limits).unwrap_err();
        assert_eq!(
            (e.line, e.message.as_str()),
            (2, "the input is larger than 10 bytes (the limit of this input)")
        );
        let e = lines_of(b"ab\0c\n", Limits::STREAM).unwrap_err();
        assert_eq!(e.to_string(), "input: line 1: a NUL byte at column 3: not a text file");
        let e = lines_of(b"ok\n\xff\n", Limits::STREAM).unwrap_err();
        assert_eq!(e.to_string(), "input: line 2: not UTF-8 text (at column 1)");
    }

    #[test]
    fn escape_writes_control_characters_as_escapes() {
        assert!(matches!(escape("plain text"), Cow::Borrowed(_)));
        assert_eq!(escape("a\nb\tc\0d\u{1b}[31m"), "a\\nb\\tc\\0d\\u{1b}[31m");
        assert_eq!(escape("é ü"), "é ü");
    }

    #[test]
    fn a_directory_is_refused_and_a_missing_file_named() {
        let e = TextLines::open(Path::new("/"), Limits::STREAM).err().unwrap();
        assert_eq!(e.to_string(), "/: is a directory, not a file");
        let e = TextLines::open(Path::new("/nonexistent/x"), Limits::STREAM).err().unwrap();
        assert_eq!(e.to_string(), "/nonexistent/x: no such file or directory");
    }
}
