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
use std::io::{BufRead, BufReader, Read};
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

/// The lines of one input, each borrowed from one reused buffer: no allocation per line.
pub struct TextLines<R> {
    inner: R,
    input: String,
    limits: Limits,
    line: Vec<u8>,
    line_no: u64,
    bytes: u64,
}

impl TextLines<BufReader<File>> {
    /// Opens `path` for reading: a regular file, a FIFO, a character device alike (each read
    /// under the same limits). A directory is refused.
    pub fn open(path: &Path, limits: Limits) -> Result<Self, TextError> {
        let input = escape(&path.display().to_string()).into_owned();
        let fail = |message: String| TextError { input: input.clone(), line: 0, message };
        let file = File::open(path).map_err(|e| fail(io_reason(&e)))?;
        if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
            return Err(fail("is a directory, not a file".into()));
        }
        Ok(TextLines::new(BufReader::with_capacity(1 << 16, file), input, limits))
    }
}

impl<R: BufRead> TextLines<R> {
    /// Reads `inner`, named `input` in refusals.
    pub fn new(inner: R, input: impl Into<String>, limits: Limits) -> Self {
        TextLines {
            inner,
            input: input.into(),
            limits,
            line: Vec::with_capacity(256),
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

    /// Bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes
    }

    /// A refusal at the current line.
    pub fn error(&self, message: impl Into<String>) -> TextError {
        TextError { input: self.input.clone(), line: self.line_no, message: message.into() }
    }

    /// The next line without its end (`\n` or `\r\n`), with its number (1-based); `None` at
    /// the end of the input.
    pub fn next_line(&mut self) -> Result<Option<(u64, &str)>, TextError> {
        self.line.clear();
        let mut ended = false;
        let mut any = false;
        while !ended {
            let chunk = match self.inner.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.line_no += 1;
                    return Err(self.error(io_reason(&e)));
                }
            };
            if chunk.is_empty() {
                break;
            }
            any = true;
            let (take, found) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            let content = if found { take - 1 } else { take };
            let over_line = self.line.len() + content > self.limits.max_line;
            let over_bytes = self.bytes.saturating_add(take as u64) > self.limits.max_bytes;
            if over_line || over_bytes {
                self.line_no += 1;
                return Err(if over_line {
                    self.error(format!(
                        "the line is longer than {} (the limit of a line): not a text file?",
                        shown(self.limits.max_line as u64)
                    ))
                } else {
                    self.error(format!(
                        "the input is larger than {} (the limit of this input)",
                        shown(self.limits.max_bytes)
                    ))
                });
            }
            self.line.extend_from_slice(&chunk[..content]);
            self.inner.consume(take);
            self.bytes += take as u64;
            ended = found;
        }
        if !any {
            return Ok(None);
        }
        self.line_no += 1;
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        if let Some(at) = self.line.iter().position(|&b| b == 0) {
            return Err(self.error(format!("a NUL byte at column {}: not a text file", at + 1)));
        }
        match std::str::from_utf8(&self.line) {
            Ok(s) => Ok(Some((self.line_no, s))),
            Err(e) => {
                Err(self.error(format!("not UTF-8 text (at column {})", e.valid_up_to() + 1)))
            }
        }
    }
}

/// Reads all of `r` into a string under `limits`, line ends kept as `\n` (for inputs parsed
/// whole: small files of the kernel, class tables).
pub fn read_all<R: Read>(r: R, input: &str, limits: Limits) -> Result<String, TextError> {
    TextLines::new(BufReader::new(r), input, limits).collect_text()
}

/// The text of the file at `path` under `limits`.
pub fn read_path(path: &Path, limits: Limits) -> Result<String, TextError> {
    TextLines::open(path, limits)?.collect_text()
}

impl<R: BufRead> TextLines<R> {
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
        let mut r = TextLines::new(BufReader::new(zeros), "/dev/zero", Limits::STREAM);
        let e = r.next_line().unwrap_err();
        assert!(e.message.contains("longer than 64 KiB"), "{e}");
        assert!(r.bytes_read() <= MAX_LINE_BYTES as u64);
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
