//! The bytes of one batch of queued operations: caller-supplied store payloads staged before the
//! batch runs, and the copies made while it runs by the reads whose bytes are looked at after it
//! (a visitor's, or bytes the lab did not generate).
//!
//! The buffer is reused from batch to batch and never cleared: a range handed out by
//! [`BatchArena::reserve`] is written by its operation (the staged payload, or the read's copy)
//! before anything reads it, so zeroing it first would be pure cost — a page-sized `memset` per
//! queued operation. Bytes are zeroed once, when the buffer grows past the largest batch seen so
//! far.

pub struct BatchArena {
    buf: Vec<u8>,
    /// Bytes handed out in the current batch; `buf[used..]` is left over from earlier batches.
    used: usize,
}

impl BatchArena {
    pub fn with_capacity(bytes: usize) -> Self {
        BatchArena { buf: Vec::with_capacity(bytes), used: 0 }
    }

    /// Bytes handed out since the last [`Self::clear`].
    #[inline]
    pub fn len(&self) -> usize {
        self.used
    }

    /// Hands out the next `len` bytes; returns their offset. Their content is unspecified
    /// (bytes of an earlier batch): the caller writes all of them before reading any.
    #[inline]
    pub fn reserve(&mut self, len: usize) -> usize {
        let off = self.used;
        let end = off + len;
        if end > self.buf.len() {
            self.buf.resize(end, 0);
        }
        self.used = end;
        off
    }

    /// Appends `data`; returns its offset.
    #[inline]
    pub fn push(&mut self, data: &[u8]) -> usize {
        let off = self.reserve(data.len());
        self.buf[off..off + data.len()].copy_from_slice(data);
        off
    }

    #[inline]
    pub fn get(&self, off: usize, len: usize) -> &[u8] {
        &self.buf[off..off + len]
    }

    #[inline]
    pub fn get_mut(&mut self, off: usize, len: usize) -> &mut [u8] {
        &mut self.buf[off..off + len]
    }

    /// Starts the next batch; the bytes are kept for reuse.
    #[inline]
    pub fn clear(&mut self) {
        self.used = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::BatchArena;

    #[test]
    fn ranges_follow_each_other_and_clear_restarts() {
        let mut a = BatchArena::with_capacity(16);
        assert_eq!(a.push(b"abc"), 0);
        assert_eq!(a.reserve(5), 3);
        a.get_mut(3, 5).copy_from_slice(b"defgh");
        assert_eq!(a.get(0, 8), b"abcdefgh");
        a.clear();
        assert_eq!(a.len(), 0);
        assert_eq!(a.reserve(2), 0);
        // Reused, not re-zeroed: the previous batch's bytes are still there until written.
        assert_eq!(a.get(0, 2), b"ab");
    }
}
