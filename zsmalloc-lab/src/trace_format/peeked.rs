//! The first bytes of an input read ahead (to tell a binary trace from a text one) and given
//! again in front of the rest, so a pipe is still read only once.

use std::io::{self, Read};

use super::binary::MAGIC;

/// `R` with its first bytes read ahead.
pub struct Peeked<R> {
    head: [u8; MAGIC.len()],
    head_len: usize,
    head_pos: usize,
    inner: R,
}

impl<R: Read> Peeked<R> {
    /// Reads up to the magic's length from `inner` (fewer only at its end).
    pub fn new(mut inner: R) -> io::Result<Self> {
        let mut head = [0; MAGIC.len()];
        let mut head_len = 0;
        while head_len < head.len() {
            match inner.read(&mut head[head_len..]) {
                Ok(0) => break,
                Ok(n) => head_len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Peeked { head, head_len, head_pos: 0, inner })
    }

    /// Whether the input begins with the binary trace's magic.
    pub fn is_binary(&self) -> bool {
        self.head[..self.head_len] == MAGIC
    }
}

impl<R: Read> Read for Peeked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.head_pos < self.head_len {
            let n = (self.head_len - self.head_pos).min(buf.len());
            buf[..n].copy_from_slice(&self.head[self.head_pos..self.head_pos + n]);
            self.head_pos += n;
            return Ok(n);
        }
        self.inner.read(buf)
    }
}
