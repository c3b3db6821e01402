//! Paths and numbers as NUL-terminated bytes on the stack, for code the signal handler runs: no
//! allocation, no lock, nothing but copying bytes. The normal paths build their paths with the
//! same code, so the handler's paths are the ones the tests check.

use std::ffi::c_char;

/// Room for the longest path built here (`/run/zsmalloc-lab/zram<id>.<pid>-<start>.removing`
/// is under 80 bytes).
const CAP: usize = 128;

/// A path being built; unusable (every call on it fails) once a part did not fit.
#[derive(Clone, Copy)]
pub(super) struct CPath {
    buf: [u8; CAP],
    len: usize,
    overflow: bool,
}

impl CPath {
    pub(super) const fn new() -> CPath {
        CPath { buf: [0; CAP], len: 0, overflow: false }
    }

    /// Appends `bytes` (which hold no NUL).
    pub(super) fn push(mut self, bytes: &[u8]) -> CPath {
        // One byte stays free for the terminating NUL.
        if self.overflow || self.len + bytes.len() >= CAP {
            self.overflow = true;
            return self;
        }
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
        self
    }

    /// Appends `n` in decimal.
    pub(super) fn num(self, n: u64) -> CPath {
        let mut digits = [0u8; 20];
        let len = decimal(n, &mut digits);
        self.push(&digits[..len])
    }

    /// The NUL-terminated path for a libc call, `None` when it did not fit.
    pub(super) fn as_ptr(&self) -> Option<*const c_char> {
        // `push` keeps buf[len] == 0: the buffer starts zeroed and never writes at or past len.
        (!self.overflow).then(|| self.buf.as_ptr().cast())
    }

    /// The path without its NUL (for messages and tests).
    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// Writes `n` in decimal at the start of `out`; returns the digits' length.
pub(super) fn decimal(mut n: u64, out: &mut [u8; 20]) -> usize {
    let mut tmp = [0u8; 20];
    let mut len = 0;
    loop {
        tmp[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        out[i] = tmp[len - 1 - i];
    }
    len
}

/// The number `text` holds (ASCII digits, then optional whitespace), `None` otherwise.
pub(super) fn parse_decimal(text: &[u8]) -> Option<u64> {
    let end = text.iter().position(|b| !b.is_ascii_digit()).unwrap_or(text.len());
    if end == 0 || !text[end..].iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    text[..end].iter().try_fold(0u64, |n, &d| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_paths_are_formatted_without_allocating() {
        let mut d = [0u8; 20];
        let n = decimal(0, &mut d);
        assert_eq!(&d[..n], b"0");
        let n = decimal(u64::MAX, &mut d);
        assert_eq!(&d[..n], u64::MAX.to_string().as_bytes());
        let p = CPath::new().push(b"/run/x/zram").num(17).push(b".new");
        assert_eq!(p.as_bytes(), b"/run/x/zram17.new");
        let ptr = p.as_ptr().unwrap();
        // SAFETY: `ptr` points into `p`, alive here, NUL-terminated by construction.
        let c = unsafe { std::ffi::CStr::from_ptr(ptr) };
        assert_eq!(c.to_bytes(), b"/run/x/zram17.new");
    }

    #[test]
    fn a_path_that_does_not_fit_is_refused() {
        let long = [b'a'; CAP];
        assert!(CPath::new().push(&long[..CAP - 1]).as_ptr().is_some());
        assert!(CPath::new().push(&long).as_ptr().is_none(), "no room for the NUL");
        assert!(CPath::new().push(&long).push(b"").num(1).as_ptr().is_none());
    }

    #[test]
    fn decimals_are_parsed_strictly() {
        assert_eq!(parse_decimal(b"42\n"), Some(42));
        assert_eq!(parse_decimal(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_decimal(b"18446744073709551616"), None);
        assert_eq!(parse_decimal(b""), None);
        assert_eq!(parse_decimal(b"4x"), None);
        assert_eq!(parse_decimal(b"-1"), None);
    }
}
